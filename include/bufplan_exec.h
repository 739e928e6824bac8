/* bufplan — executor; included by bufplan.h, not meant to be included alone.
 * Design and rationale: docs/EXECUTOR.md.
 *
 * The executor replays a plan: it binds every tensor to memory (the plan's
 * arena through a plan-backed bp_pool, the pool at run time for dynamic
 * tensors) and calls the caller's kernel for each op, on one thread in the
 * plan's order or on N threads as ops become ready.  Modes:
 *   - BP_EXEC_PLANNED: tensors at their planned offsets in one arena of
 *     exactly the plan's arena bytes; no allocation while running (dynamic
 *     tensors excepted: they go to the pool at run time).
 *   - BP_EXEC_DYNAMIC: no offsets; every ALLOC / FREE goes to the pool (or to
 *     malloc with dynamic_malloc) at run time, the way engines without a
 *     planner work.
 *   - BP_EXEC_SAFE: every tensor its own buffer, nothing reused (a view still
 *     gets its own bytes: view kernels copy); the reference for --verify.
 * With threads > 1, ops run when their inputs are ready; where the plan reuses
 * bytes, fences (extra dependencies) make the producer of a new tenant wait
 * for every reader of the previous one.  Only fences that the data
 * dependencies do not already imply are added. */
/* bufplan.h first (outside the guard): it declares the core types and
 * includes every part of the API in order, this one included. */
#include "bufplan.h"
#ifndef BUFPLAN_EXEC_H
#define BUFPLAN_EXEC_H

#include "bufplan_api.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct bp_exec bp_exec;

/* One input or output of an op, as a kernel sees it. */
typedef struct bp_exec_buf {
    void *data;              /* the tensor's bytes; NULL only when bytes == 0 */
    uint64_t bytes;          /* the tensor's size */
    int32_t tensor;          /* tensor id */
    int32_t view_of_input;   /* outputs: index of the input this output is a view of
                                (the graph says so), -1 otherwise.  The view may share
                                that input's bytes (data equal) or not (safe mode,
                                --no-alias): a view kernel copies the first `bytes`
                                bytes of the input when the pointers differ. */
} bp_exec_buf;

/* The concrete shape of an input or output: what the kernel computes on. */
typedef struct bp_exec_shape {
    bp_dtype dtype;
    int rank;                /* -1: the graph gives the tensor in bytes, without a shape */
    const int64_t *dims;     /* rank values (NULL when rank is -1); BP_DIM_SYMBOLIC where a
                                symbol is unbound until bp_exec_set_shapes binds it */
} bp_exec_shape;

/* What a kernel is called with.  in/out point into the executor's own
 * arrays; they are valid for the duration of the call.  The op's attributes
 * are bp_graph_op_attr_*(graph, op, ...). */
typedef struct bp_exec_call {
    const bp_graph *graph;
    int32_t op;              /* op id */
    const char *op_name, *op_type;
    int n_in, n_out;
    const bp_exec_buf *in;
    const bp_exec_buf *out;
    int thread;              /* worker index, 0 .. threads-1 */
    /* the dims and dtype of in[i] and out[i] at this run's shapes (bytes stays the
       room the plan gives, which a bucket plan sizes for the bucket's bound) */
    const bp_exec_shape *in_shape;
    const bp_exec_shape *out_shape;
    int n_ws;                /* the op's kernel workspaces (bp_graph_set_workspace): scratch */
    const bp_exec_buf *ws;   /* bytes of its own for this call, contents undefined; not in out[] */
} bp_exec_call;

/* A kernel returns 0 on success; anything else stops the run (after the ops
 * already running finish) and bp_exec_run() returns BP_ERR_KERNEL naming the
 * op.  The kernel may write a reason into err->msg (it starts empty).
 * Inputs and outputs may share bytes (in-place writes, views): read every
 * input before writing an output. */
typedef int (*bp_kernel_fn)(void *user, const bp_exec_call *call, bp_error *err);

typedef enum bp_exec_mode { BP_EXEC_PLANNED = 0, BP_EXEC_DYNAMIC, BP_EXEC_SAFE } bp_exec_mode;
BP_API const char *bp_exec_mode_name(bp_exec_mode m);

typedef struct bp_exec_options {
    bp_exec_mode mode;       /* default BP_EXEC_PLANNED */
    int threads;             /* 1 (default): replay in the plan's order; N > 1: N workers
                                (the calling thread is one of them) */
    int dynamic_malloc;      /* BP_EXEC_DYNAMIC: malloc/free instead of the pool (baseline) */
    int history;             /* record per-op times and threads for bp_exec_write_history */
    int check_hashes;        /* hash every input as it is read and every output as it
                                is written (what bp_exec_verify compares) */
    int time_allocs;         /* measure the time spent in ALLOC / FREE (run stats) */
    const bp_pool_options *pool;   /* options of the pool; NULL = defaults.  Its max_bytes
                                      also caps the inputs' and weights' pool and, with
                                      dynamic_malloc, the bytes malloc'd at once */
    const bp_plan_options *plan;   /* DYNAMIC / SAFE without a plan: how to order the ops
                                      (NULL = defaults) */
    int64_t max_loop_trips;        /* control flow: at most this many iterations of a Loop
                                      (0 = 65536); docs/EXECUTOR.md */
} bp_exec_options;

BP_API void bp_exec_options_init(bp_exec_options *o);

/* Prepares an executor: memory (arena, external tensors), kernel table,
 * dependency counts and fences, worker threads.  The graph must be finalized
 * and outlive the executor; so must the plan, which must belong to the graph
 * (same tensor and op counts).  plan may be NULL for DYNAMIC and SAFE (then
 * the executor plans the order itself with o->plan); PLANNED needs one.
 * Inputs, weights and other tensors outside the arena get buffers owned by
 * the executor (filled with zeros; see bp_exec_set_input). */
BP_API bp_status bp_exec_new(const bp_graph *g, const bp_plan *plan, const bp_exec_options *o,
                             bp_exec **out, bp_error *err);
BP_API void bp_exec_free(bp_exec *ex);

/* Kernels: one for every op, and optionally one per op type (which wins).
 * An op left with neither makes bp_exec_run fail, naming the op and its type
 * (control-flow ops excepted: the executor runs their bodies).  To run ops
 * without computing anything, set bp_exec_noop_kernel as the default. */
BP_API void bp_exec_set_kernel(bp_exec *ex, bp_kernel_fn fn, void *user);
BP_API bp_status bp_exec_set_type_kernel(bp_exec *ex, const char *op_type, bp_kernel_fn fn, void *user,
                                         bp_error *err);
/* A kernel that does nothing (returns 0): for runs that only exercise memory. */
BP_API int bp_exec_noop_kernel(void *user, const bp_exec_call *call, bp_error *err);

/* Copies bytes into an external tensor (an input, a weight): at most its
 * size; the rest is zero.  Graph inputs planned in the arena (plan_inputs)
 * are copied into the arena at the start of every run. */
BP_API bp_status bp_exec_set_input(bp_exec *ex, int32_t tensor, const void *data, uint64_t bytes,
                                   bp_error *err);
/* Run-time size of a dynamic tensor (its symbolic size bound now).  Default:
 * the graph's size. */
BP_API bp_status bp_exec_set_dynamic_bytes(bp_exec *ex, int32_t tensor, uint64_t bytes, bp_error *err);
/* The shapes kernels see (bp_exec_call.in_shape / out_shape) from `shapes`: a
 * graph with the same tensor names and ranks, bound to this run's shapes
 * (bp_dyn_result.actual from the warm-up planner; NULL = the executor's own
 * graph, as after bp_exec_new).  The run-time sizes of the executor graph's
 * dynamic tensors follow (bp_exec_set_dynamic_bytes with the bytes they have
 * in `shapes`).  A missing tensor or another rank is BP_ERR_INVALID naming
 * it, and changes nothing. */
BP_API bp_status bp_exec_set_shapes(bp_exec *ex, const bp_graph *shapes, bp_error *err);

typedef struct bp_exec_run_stats {
    double seconds;          /* wall time of the run */
    double alloc_seconds;    /* time in ALLOC / FREE handling (with time_allocs) */
    uint64_t n_ops;          /* ops run */
    uint64_t n_allocs, n_frees;   /* run-time allocations (pool or malloc) */
    uint64_t peak_bytes;     /* activation memory: arena + peak of run-time blocks
                                (rounded sizes; malloc: requested sizes); SAFE: the
                                safe buffers (safe_bytes), all held for the whole run */
    uint64_t n_recomputes;   /* a plan's copies replayed (planned mode): ops run again, */
    uint64_t n_offloads;     /* storages copied to host memory (and back) */
} bp_exec_run_stats;

/* Runs the graph once.  Returns BP_ERR_KERNEL (op named) when a kernel fails,
 * BP_ERR_EXHAUSTED when the pool cannot serve a dynamic tensor.  After a
 * successful run the graph outputs stay readable until the next run.
 * stats may be NULL. */
BP_API bp_status bp_exec_run(bp_exec *ex, bp_exec_run_stats *stats, bp_error *err);

/* The bytes of a tensor after a run: outputs and external tensors; other
 * tensors only while they are live (from a kernel).  NULL when not bound. */
BP_API void *bp_exec_tensor_data(const bp_exec *ex, int32_t tensor, uint64_t *bytes);

typedef struct bp_exec_info {
    bp_exec_mode mode;
    int threads;
    int32_t n_ops;
    uint64_t n_fences;       /* extra dependencies added for reused bytes */
    uint64_t n_data_edges;   /* distinct producer -> consumer dependencies */
    uint64_t arena_bytes;
    uint64_t external_bytes; /* inputs, weights and constants (outside the arena) */
    uint64_t safe_bytes;     /* SAFE: the bytes of every tensor's own buffer */
} bp_exec_info;
BP_API void bp_exec_get_info(const bp_exec *ex, bp_exec_info *out);
/* The fences as (from_op, to_op) pairs: to_op waits for from_op.  *n = pairs. */
BP_API const int32_t *bp_exec_fences(const bp_exec *ex, size_t *n);
/* The pool that holds the arena and dynamic blocks (for statistics). */
BP_API bp_pool *bp_exec_pool(const bp_exec *ex);

/* ------------------------------------------------------- digest kernels */

/* Reference kernel for testing: reads every input byte, then writes every
 * output byte as a deterministic function of the op id, the output index
 * and the contents of all inputs, so any corruption of a live tensor changes
 * every output downstream of it.  A view output copies its input.  user may
 * be NULL; with a non-NULL user it is a bp_digest_options. */
BP_API int bp_digest_kernel(void *user, const bp_exec_call *call, bp_error *err);
typedef struct bp_digest_options {
    double spin_us;          /* busy-wait this long before computing (benchmarks) */
    int32_t fail_op;         /* op id that returns an error (tests), -1 = none */
} bp_digest_options;
/* Fills every external tensor (inputs, weights) with bytes derived from the
 * tensor's name and seed, the same in every mode. */
BP_API bp_status bp_digest_fill_inputs(bp_exec *ex, uint64_t seed, bp_error *err);
/* 64-bit hash of a byte range (the one the digest kernels use). */
BP_API uint64_t bp_digest_hash(const void *data, uint64_t bytes, uint64_t seed);

/* Runs the plan (mode PLANNED, o->threads threads) and a SAFE run of the
 * same graph with digest kernels, and compares every graph output byte for
 * byte and every tensor as its readers saw it.  BP_OK when all agree;
 * BP_ERR_VERIFY otherwise, naming the first tensor (in the plan's order)
 * whose contents differ, and the tensors that shared its bytes while it was
 * live.  report (may be NULL) gets a summary line. */
BP_API bp_status bp_exec_verify(const bp_graph *g, const bp_plan *plan, const bp_exec_options *o,
                                uint64_t seed, FILE *report, bp_error *err);

/* ----------------------------------------------------------------- history */

/* Writes the history of the last run (needs o->history): for every buffer
 * (arena range or pool block), every tenant in order with its ALLOC, first
 * write, reads (the last marked) and FREE, each with a tick (a global event
 * counter) and the thread.  Format in docs/EXECUTOR.md.  path "-" = stdout. */
BP_API bp_status bp_exec_write_history(const bp_exec *ex, const char *path, bp_error *err);
/* Reads a history file and flags every two tenants of the same bytes whose
 * accesses interleave (the later tenant is written before the earlier one's
 * last access ends).  Writes one line per conflict to report (may be NULL);
 * *n_conflicts gets their number.  BP_OK when clean, BP_ERR_VERIFY with the
 * first conflict in err when not, BP_ERR_INVALID/IO for a bad file. */
BP_API bp_status bp_history_check(const char *path, FILE *report, uint64_t *n_conflicts, bp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* BUFPLAN_EXEC_H */
