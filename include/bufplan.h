/*
 * bufplan — static buffer planning for computation graphs.
 *
 * One header for the whole library.  The pipeline is
 *
 *     graph (builder API, JSON, ONNX)  ->  schedule (a topological order)
 *       ->  lifetimes  ->  assignment (offsets in one arena)  ->  plan
 *       ->  verify / save / run (pool + executor)
 *
 * Every function that can fail returns a bp_status and fills the caller's
 * bp_error (which may be NULL) with a message that names the file, the op or
 * the tensor, and what is wrong.  Nothing here aborts on bad input.
 *
 * Objects are opaque and freed by their matching _free call.  The caller may
 * supply an allocator (bp_allocator) to bp_graph_new(); everything derived from
 * that graph (plans, schedules) uses the same allocator.  There is no global
 * mutable state.
 */
#ifndef BUFPLAN_H
#define BUFPLAN_H

#include "bufplan_api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BP_VERSION_MAJOR 0
#define BP_VERSION_MINOR 1
#define BP_VERSION_PATCH 0
#define BP_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------ errors */

typedef enum bp_status {
    BP_OK = 0,
    BP_ERR_NOMEM,        /* an allocation failed */
    BP_ERR_INVALID,      /* bad input: malformed file, inconsistent graph */
    BP_ERR_IO,           /* a file could not be read or written */
    BP_ERR_USAGE,        /* bad argument to an API call */
    BP_ERR_BUDGET,       /* no plan fits the memory budget */
    BP_ERR_VERIFY,       /* a plan failed verification */
    BP_ERR_UNSUPPORTED,  /* an operator or feature bufplan does not know */
    BP_ERR_LIMIT,        /* a resource limit (tensors, ops, rank...) was hit */
    BP_ERR_EXHAUSTED,    /* a pool ran out of memory */
    BP_ERR_KERNEL,       /* a caller's kernel reported an error */
    BP_ERR_TIMEOUT       /* a search hit its time limit without a result */
} bp_status;

typedef struct bp_error {
    bp_status status;
    char msg[1024];
} bp_error;

/* A short name for a status ("invalid input", "out of memory", ...). */
BP_API const char *bp_status_str(bp_status s);
/* The library version, "MAJOR.MINOR.PATCH". */
BP_API const char *bp_version(void);
/* Parses a byte count: "123" (exact), "4K", "1.5M", "2GiB" (powers of 1024),
 * at most 2^63 - 1.  Returns false when s is not one.  Used by the config
 * file and the command line alike. */
BP_API bool bp_parse_bytes(const char *s, uint64_t *out);

/* --------------------------------------------------------------- allocator */

/* Caller-supplied allocator.  alloc/realloc return NULL on failure; free
 * accepts NULL.  `size` arguments are the sizes previously requested. */
typedef struct bp_allocator {
    void *(*alloc)(void *ctx, size_t size);
    void *(*realloc)(void *ctx, void *ptr, size_t old_size, size_t new_size);
    void (*free)(void *ctx, void *ptr, size_t size);
    void *ctx;
} bp_allocator;

/* The allocator used where NULL is passed: malloc / realloc / free, asking
 * for transparent huge pages on blocks of 4 MiB and more (Linux).  A
 * caller's allocator may forward to it (e.g. to count bytes). */
BP_API const bp_allocator *bp_allocator_default(void);

/* ------------------------------------------------------------------- graph */

typedef struct bp_graph bp_graph;

typedef enum bp_dtype {
    BP_DT_UNKNOWN = 0,
    BP_DT_F64, BP_DT_F32, BP_DT_F16, BP_DT_BF16,
    BP_DT_I64, BP_DT_I32, BP_DT_I16, BP_DT_I8,
    BP_DT_U64, BP_DT_U32, BP_DT_U16, BP_DT_U8,
    BP_DT_BOOL, BP_DT_C64, BP_DT_C128, BP_DT_F8,
    BP_DT_COUNT
} bp_dtype;

/* Element size in bytes (0 for BP_DT_UNKNOWN). */
BP_API size_t bp_dtype_size(bp_dtype dt);
/* "f32", "i64", ... */
BP_API const char *bp_dtype_name(bp_dtype dt);
/* Parses "f32", "float32", "float", "int64", ...; BP_DT_UNKNOWN if unknown. */
BP_API bp_dtype bp_dtype_parse(const char *s);

/* Tensor roles.  A tensor is planned (in the arena) unless it is an input or a
 * weight (external) or has a symbolic size (dynamic).  Outputs are planned and
 * live to the end of the schedule. */
enum {
    BP_TENSOR_INPUT  = 1u << 0,
    BP_TENSOR_WEIGHT = 1u << 1,
    BP_TENSOR_OUTPUT = 1u << 2,
    /* A constant made by an op (ONNX Constant / ConstantOfShape of constant
     * inputs): kept out of the arena like a weight unless plan_constants. */
    BP_TENSOR_CONST  = 1u << 3
};

/* Dimension value for a symbolic dimension in bp_graph_add_tensor_shape(). */
#define BP_DIM_SYMBOLIC INT64_MIN

/* name: used in messages and written back to JSON; may be NULL. */
BP_API bp_graph *bp_graph_new(const char *name, const bp_allocator *alloc);
BP_API void bp_graph_free(bp_graph *g);

/* Adds a tensor of a known byte size.  Names are unique among tensors. */
BP_API bp_status bp_graph_add_tensor(bp_graph *g, const char *name, uint64_t bytes,
                                     int32_t *id_out, bp_error *err);
/* Adds a tensor from a shape and dtype.  dims[i] == BP_DIM_SYMBOLIC marks a
 * symbolic dimension whose name is syms[i] (syms may be NULL otherwise).
 * A tensor with a symbolic dimension is dynamic until the symbol is bound. */
BP_API bp_status bp_graph_add_tensor_shape(bp_graph *g, const char *name, bp_dtype dt,
                                           int rank, const int64_t *dims,
                                           const char *const *syms, int32_t *id_out,
                                           bp_error *err);
/* Views and in-place writes by default.  Output 0 of an op of a view type
 * shares the storage of its input 0 (ONNX Reshape, Flatten, Squeeze,
 * Unsqueeze, Identity, Dropout; aten.view, _unsafe_view, _reshape_alias,
 * as_strided, reshape, t, transpose, permute, expand, squeeze, unsqueeze,
 * slice, select, alias, detach).  The output of an element-wise op may be
 * written over an input of the same size that dies at that op: ONNX Add,
 * Sub, Mul, Div, Pow, Relu, LeakyRelu, PRelu, Sigmoid, HardSigmoid,
 * HardSwish, Tanh, Clip, Erf, Sqrt, Exp, Log, Neg, Abs, Reciprocal,
 * BatchNormalization, Sum, Min, Max, Mean, Elu, Selu, Softplus, Gelu, Silu,
 * Cast, Not, Sin, Cos, Floor, Ceil, Round, Sign, Mish; aten.relu, add, mul,
 * sub, div, sigmoid, tanh, gelu, silu, hardswish, hardsigmoid, clamp, neg,
 * exp, threshold_backward.  bp_graph_set_view and
 * bp_graph_set_inplace add more; bp_plan_options.no_alias (--no-alias)
 * turns all of it off, every tensor then its own storage.  These lists are
 * the built-in "default" engine profile; bp_plan_options.engine
 * (bufplan_engine.h) plans for another engine's kernels instead. */
/* Declares that `tensor` shares the storage of `source` (a view). */
BP_API bp_status bp_graph_set_view(bp_graph *g, int32_t tensor, int32_t source, bp_error *err);
/* Adds an op.  Each output must not already have a producer; an op may not
 * read its own output.  cost <= 0 means "unknown" (the cost model decides). */
BP_API bp_status bp_graph_add_op(bp_graph *g, const char *name, const char *type,
                                 int n_inputs, const int32_t *inputs,
                                 int n_outputs, const int32_t *outputs,
                                 double cost, int32_t *id_out, bp_error *err);
/* Output `out` of `op` may be written over input `in` when `in` dies at `op`. */
BP_API bp_status bp_graph_set_inplace(bp_graph *g, int32_t op, int32_t out, int32_t in, bp_error *err);
/* Gives op n kernel workspaces of bytes[0..n) (1 <= n <= 64): storages live
 * only at the op's step, placed in the arena like any tensor; the executor
 * hands them to the op's kernel (bp_exec_call.ws).  Each is a tensor
 * "OP#wsK" appended to the op's outputs (bp_graph_op_n_outputs counts it;
 * bp_graph_op_n_workspaces says how many of the last outputs are
 * workspaces).  An op gets its workspaces once.  Un-finalizes g. */
BP_API bp_status bp_graph_set_workspace(bp_graph *g, int32_t op, int n, const uint64_t *bytes, bp_error *err);
BP_API int bp_graph_op_n_workspaces(const bp_graph *g, int32_t op);
/* 1 when t is a workspace of its producer. */
BP_API int bp_graph_tensor_is_workspace(const bp_graph *g, int32_t t);
/* Sets role flags (BP_TENSOR_INPUT / WEIGHT / OUTPUT) on a tensor; they add up. */
BP_API bp_status bp_graph_mark(bp_graph *g, int32_t tensor, unsigned flags, bp_error *err);
/* Appends a backward pass (training): for each forward op, in reverse, a
 * gradient op that reads the op's saved inputs and the gradient of its
 * outputs and writes gradients of its inputs (and of the weights it reads).
 * Forward activations thus live until their gradient op.  Gradients of
 * weights become graph outputs.  The graph is finalized afterwards. */
BP_API bp_status bp_graph_append_backward(bp_graph *g, bp_error *err);
/* Binds a symbolic dimension to a value; tensors whose dims are all bound
 * become static (their bytes are recomputed). */
BP_API bp_status bp_graph_bind_dim(bp_graph *g, const char *sym, int64_t value, bp_error *err);
/* Checks the graph (producers, undefined tensors, cycles, views) and builds
 * the consumer index.  Required before planning; adding to a finalized graph
 * un-finalizes it. */
BP_API bp_status bp_graph_finalize(bp_graph *g, bp_error *err);

/* Queries.  Ids are dense: tensors 0..n_tensors-1, ops 0..n_ops-1. */
BP_API const char *bp_graph_name(const bp_graph *g);
BP_API int32_t bp_graph_n_tensors(const bp_graph *g);
BP_API int32_t bp_graph_n_ops(const bp_graph *g);
BP_API int32_t bp_graph_find_tensor(const bp_graph *g, const char *name); /* -1 if none */
BP_API int32_t bp_graph_find_op(const bp_graph *g, const char *name);     /* -1 if none */
BP_API const char *bp_graph_tensor_name(const bp_graph *g, int32_t t);
BP_API uint64_t bp_graph_tensor_bytes(const bp_graph *g, int32_t t);
BP_API unsigned bp_graph_tensor_flags(const bp_graph *g, int32_t t);
BP_API int bp_graph_tensor_is_dynamic(const bp_graph *g, int32_t t);
BP_API bp_dtype bp_graph_tensor_dtype(const bp_graph *g, int32_t t);
BP_API int bp_graph_tensor_rank(const bp_graph *g, int32_t t);
/* dims[i] is BP_DIM_SYMBOLIC for an unbound symbol; returns the rank or -1. */
BP_API int bp_graph_tensor_dims(const bp_graph *g, int32_t t, int64_t *dims, int max_rank);
/* The symbol name of dimension i when it is symbolic (bound or not), else NULL. */
BP_API const char *bp_graph_tensor_dim_symbol(const bp_graph *g, int32_t t, int i);
BP_API int32_t bp_graph_tensor_view_of(const bp_graph *g, int32_t t);     /* -1 if none */
BP_API int32_t bp_graph_tensor_producer(const bp_graph *g, int32_t t);    /* -1 if none */
BP_API const char *bp_graph_op_name(const bp_graph *g, int32_t op);
BP_API const char *bp_graph_op_type(const bp_graph *g, int32_t op);
BP_API double bp_graph_op_cost(const bp_graph *g, int32_t op);
BP_API int bp_graph_op_n_inputs(const bp_graph *g, int32_t op);
BP_API int bp_graph_op_n_outputs(const bp_graph *g, int32_t op);
BP_API int32_t bp_graph_op_input(const bp_graph *g, int32_t op, int i);
BP_API int32_t bp_graph_op_output(const bp_graph *g, int32_t op, int i);
/* Consumers of a tensor (after finalize): returns the count, *ops points into
 * the graph's own index. */
BP_API int32_t bp_graph_tensor_consumers(const bp_graph *g, int32_t t, const int32_t **ops);

/* Op attributes: typed name/value pairs that kernels read at run time (the
 * ONNX node's attributes; "attrs" of an op in graph JSON).  The planner
 * ignores them.  Pointers returned point into the graph and stay valid until
 * the graph is freed or gets another attribute. */
typedef enum bp_attr_type {
    BP_ATTR_NONE = 0, BP_ATTR_INT, BP_ATTR_FLOAT, BP_ATTR_STRING, BP_ATTR_INTS, BP_ATTR_FLOATS
} bp_attr_type;
typedef struct bp_attr {
    const char *name;
    bp_attr_type type;
    int64_t i;               /* INT */
    float f;                 /* FLOAT */
    const char *s;           /* STRING: n bytes, NUL-terminated (n = 0 on input: strlen) */
    int n;                   /* INTS / FLOATS: number of values; STRING: bytes */
    const int64_t *ints;     /* INTS (INT: &i's copy) */
    const float *floats;     /* FLOATS (FLOAT: &f's copy) */
} bp_attr;
/* Adds an attribute to an op (the values are copied); a name given twice
 * for the same op is BP_ERR_INVALID. */
BP_API bp_status bp_graph_add_op_attr(bp_graph *g, int32_t op, const bp_attr *a, bp_error *err);
/* By index (0 .. count-1, in the order they were added): */
BP_API int bp_graph_op_attr_count(const bp_graph *g, int32_t op);
BP_API const char *bp_graph_op_attr_name(const bp_graph *g, int32_t op, int i);     /* NULL: no such index */
BP_API bp_attr_type bp_graph_op_attr_type(const bp_graph *g, int32_t op, int i);    /* NONE: no such index */
BP_API int bp_graph_op_attr_get(const bp_graph *g, int32_t op, int i, bp_attr *out); /* 1 found, 0 not */
/* By name: the index (and *out when not NULL), or -1 when the op has none. */
BP_API int bp_graph_op_attr_find(const bp_graph *g, int32_t op, const char *name, bp_attr *out);
/* Typed by name; the default (or NULL, or -1 values) when absent or of another type. */
BP_API int64_t bp_graph_op_attr_int(const bp_graph *g, int32_t op, const char *name, int64_t dflt);
BP_API float bp_graph_op_attr_float(const bp_graph *g, int32_t op, const char *name, float dflt);
BP_API const char *bp_graph_op_attr_string(const bp_graph *g, int32_t op, const char *name);
BP_API int bp_graph_op_attr_ints(const bp_graph *g, int32_t op, const char *name, const int64_t **vals);
BP_API int bp_graph_op_attr_floats(const bp_graph *g, int32_t op, const char *name, const float **vals);

/* ----------------------------------------------------------- control flow */

/* A control-flow op (ONNX If, Loop, Scan) runs other graphs, its bodies.
 * Each body is a finalized graph of its own, owned by the parent once
 * attached.  The parent op has one extra output, its reservation: a tensor
 * live only at the op's step that holds everything the bodies need (a Loop's
 * carried values, then the body's own arena).  The plan places the
 * reservation in the parent's arena like any tensor and plans each body
 * inside it (docs/ARCHITECTURE.md, "Control flow").
 *
 * How a body's tensors meet the parent's: */
typedef enum bp_body_kind {
    BP_BODY_THEN = 0,   /* If: runs when the condition (the op's input 0) is true */
    BP_BODY_ELSE,       /* If: runs otherwise */
    BP_BODY_LOOP,       /* Loop: runs once per iteration */
    BP_BODY_SCAN,       /* Scan: runs once per slice of the scanned inputs */
    BP_BODY_KIND_COUNT
} bp_body_kind;

typedef enum bp_body_io_kind {
    /* inputs of the body (tensors flagged BP_TENSOR_INPUT in it) */
    BP_BODY_OUTER = 0,  /* the parent tensor `parent` itself, read in place (an
                           input of the op, so it lives until the op's step) */
    BP_BODY_ITER,       /* Loop: the iteration number (an i64 scalar) */
    BP_BODY_COND,       /* Loop: the condition going in; the first from `parent`
                           (-1: true), then from body output `link` */
    BP_BODY_CARRIED,    /* a loop-carried value: the first from `parent`, then
                           from body output `link` of the previous iteration */
    BP_BODY_SLICE,      /* Scan: slice i (along axis 0) of the parent tensor */
    /* outputs of the body (tensors flagged BP_TENSOR_OUTPUT in it) */
    BP_BODY_RESULT,     /* copied into the parent tensor `parent` (If: after the
                           branch; Loop/Scan: after the last iteration), or only
                           feeding a carried input when parent is -1 */
    BP_BODY_STACK,      /* copied into slice i of the parent tensor after iteration i */
    BP_BODY_IO_COUNT
} bp_body_io_kind;

typedef struct bp_body_io {
    int32_t body_tensor;     /* tensor id in the body */
    bp_body_io_kind kind;
    int32_t parent;          /* tensor id in the parent, -1 where the kind allows */
    int32_t link;            /* COND / CARRIED: index into the io array of the body
                                output (RESULT) that feeds it next time; else -1 */
} bp_body_io;

/* Attaches `body` (finalized) to control-flow op `op` of g.  `reserve` is an
 * output of op that no op reads: the bodies' reservation (its byte size is
 * set by bp_graph_reserve_bodies).  io lists every input and output of the
 * body (n_io entries, copied).  g owns body from now on, also on failure.
 * Adding a body un-finalizes g. */
BP_API bp_status bp_graph_add_body(bp_graph *g, int32_t op, bp_body_kind kind, bp_graph *body, int32_t reserve,
                                   int n_io, const bp_body_io *io, bp_error *err);

typedef struct bp_body_info {
    int32_t op;
    bp_body_kind kind;
    const bp_graph *graph;
    int32_t reserve;
    int n_io;
    const bp_body_io *io;
} bp_body_info;

/* Bodies are numbered 0..n-1 in the order they were added. */
BP_API int32_t bp_graph_n_bodies(const bp_graph *g);
BP_API bp_status bp_graph_body(const bp_graph *g, int32_t i, bp_body_info *out, bp_error *err);
BP_API const char *bp_body_kind_name(bp_body_kind k);
/* Ops with at least one body. */
BP_API int32_t bp_graph_n_control_flow(const bp_graph *g);

/* JSON graph files (format "bufplan-graph", docs/FORMATS.md). */
BP_API bp_status bp_graph_read_json(const char *path, const bp_allocator *alloc,
                                    bp_graph **out, bp_error *err);
/* Parses a JSON text; `filename` is only used in messages (may be NULL). */
BP_API bp_status bp_graph_parse_json(const char *text, size_t len, const char *filename,
                                     const bp_allocator *alloc, bp_graph **out, bp_error *err);
/* Writes the graph as JSON (atomically: temp file + rename). path "-" = stdout. */
BP_API bp_status bp_graph_write_json(const bp_graph *g, const char *path, bp_error *err);
BP_API bp_status bp_graph_write_json_file(const bp_graph *g, FILE *f, bp_error *err);

/* Reads a graph from a file, choosing the reader by content (.onnx models
 * start with protobuf bytes, JSON with '{').  Returns BP_ERR_UNSUPPORTED for
 * ONNX when bufplan was built without ONNX support. */
BP_API bp_status bp_graph_read(const char *path, const bp_allocator *alloc,
                               bp_graph **out, bp_error *err);

/* ------------------------------------------------------------- generators */

typedef struct bp_gen_options {
    uint64_t seed;      /* deterministic for a given seed */
    int layers;         /* 0 = the generator's default */
    int width;          /* channels / hidden size scale, 0 = default */
    int nodes;          /* randwire nodes per stage, chain length, 0 = default */
    int seq;            /* transformer sequence length, 0 = default */
    int batch;          /* batch size, 0 = default (1) */
    int training;       /* append a backward pass */
    int symbolic_seq;   /* transformer: make the sequence length a symbol "S" */
} bp_gen_options;

BP_API void bp_gen_options_init(bp_gen_options *o);
/* kind: chain, diamond, resnet50, unet, transformer, randwire.  The graph is
 * finalized. */
BP_API bp_status bp_gen(const char *kind, const bp_gen_options *o, const bp_allocator *alloc,
                        bp_graph **out, bp_error *err);
/* NULL-terminated list of generator names. */
BP_API const char *const *bp_gen_kinds(void);

/* --------------------------------------------------------------- planning */

typedef enum bp_sched_kind {
    BP_SCHED_GIVEN = 0, /* the graph's op order (must be topological) */
    BP_SCHED_KAHN,      /* FIFO topological order */
    BP_SCHED_DFS,       /* post-order DFS from the outputs */
    BP_SCHED_LIST,      /* XLA-style list scheduler */
    BP_SCHED_LPMF,      /* Inductor-style: stay under the high-water mark */
    BP_SCHED_SEED,      /* alpha*freed/cost + beta*critical-path priority */
    BP_SCHED_BEST,      /* portfolio + exact DP + local search */
    BP_SCHED_OPTIMAL,   /* exact search, small graphs */
    BP_SCHED_COUNT
} bp_sched_kind;

typedef enum bp_assign_kind {
    BP_ASSIGN_NAIVE = 0, /* every storage its own bytes, never reused */
    BP_ASSIGN_COLOR,     /* interval-graph coloring, one buffer per color */
    BP_ASSIGN_BESTFIT,   /* offsets in one arena, best-fitting gap */
    BP_ASSIGN_SEARCH,    /* exact/anytime search for the smallest arena */
    BP_ASSIGN_COUNT
} bp_assign_kind;

BP_API const char *bp_sched_name(bp_sched_kind k);
BP_API const char *bp_assign_name(bp_assign_kind k);
/* An engine profile (bufplan_engine.h). */
typedef struct bp_engine bp_engine;
/* Returns 0 and sets *out, or -1 if the name is unknown. */
BP_API int bp_sched_parse(const char *s, bp_sched_kind *out);
BP_API int bp_assign_parse(const char *s, bp_assign_kind *out);

typedef struct bp_plan_options {
    bp_sched_kind sched;     /* default BP_SCHED_BEST */
    bp_assign_kind assign;   /* default BP_ASSIGN_BESTFIT */
    double alpha, beta;      /* seed scheduler weights, default 0.7 / 0.3 */
    uint64_t budget;         /* 0 = no budget */
    uint64_t alignment;      /* offsets and sizes rounded to this; default 256 */
    double time_limit;       /* seconds for searches, default 10 */
    uint64_t seed;           /* randomised searches, default 1 */
    int no_alias;            /* turn views and in-place off */
    int plan_inputs;         /* plan graph inputs in the arena too */
    int plan_constants;      /* plan Constant outputs (weights) like activations */
    int threads;             /* workers for makespan estimates, default 1 */
    int progress;            /* progress line on stderr (when it is a terminal) */
    int fence_aware;         /* assignment that prefers reuse between ops already
                                ordered by data dependencies (fewer fences for
                                parallel execution, possibly more memory) */
    unsigned fallback;       /* with a budget the best order's arena exceeds: the
                                BP_FALLBACK_* bits the planner may use (default
                                recompute | offload; 0 = fail with BP_ERR_BUDGET) */
    double host_bandwidth;   /* bytes per second of an offload or a prefetch,
                                default BP_HOST_BANDWIDTH_DEFAULT */
    const bp_engine *engine; /* the target engine's kernels; NULL = the built-in "default"
                                (not copied: it must outlive the call; a plan keeps a copy) */
    int concat_inplace;      /* Concat inputs written straight into their slice of the output (the engine profile's concat_inplace) */
} bp_plan_options;

/* bp_plan_options.fallback (docs/FALLBACK.md) */
#define BP_FALLBACK_NONE      0u
#define BP_FALLBACK_RECOMPUTE 1u   /* run an op again later instead of keeping its output */
#define BP_FALLBACK_OFFLOAD   2u   /* copy a storage to host memory and back */
#define BP_HOST_BANDWIDTH_DEFAULT 16e9   /* bytes/s: a PCIe 4.0 x16 link in practice */

BP_API void bp_plan_options_init(bp_plan_options *o);

typedef struct bp_plan bp_plan;

/* Plans the graph (which must be finalized): schedule, lifetimes, assignment,
 * events.  BP_ERR_BUDGET when opts->budget is set and no plan fits. */
BP_API bp_status bp_plan_graph(const bp_graph *g, const bp_plan_options *opts,
                               bp_plan **out, bp_error *err);
/* Plans with a caller-given order (op ids, a permutation of 0..n_ops-1). */
BP_API bp_status bp_plan_graph_order(const bp_graph *g, const bp_plan_options *opts,
                                     const int32_t *order, bp_plan **out, bp_error *err);
BP_API void bp_plan_free(bp_plan *p);

typedef enum bp_tensor_kind {
    BP_KIND_PLANNED = 0, BP_KIND_INPUT, BP_KIND_WEIGHT, BP_KIND_OUTPUT, BP_KIND_DYNAMIC,
    BP_KIND_WORKSPACE    /* a kernel workspace: in the arena at its op's step only */
} bp_tensor_kind;
BP_API const char *bp_tensor_kind_name(bp_tensor_kind k);

#define BP_NO_OFFSET UINT64_MAX

typedef struct bp_tensor_plan {
    int32_t first, last;   /* inclusive steps; -1 when the tensor is unused */
    uint64_t offset;       /* arena offset, BP_NO_OFFSET when not in the arena */
    uint64_t bytes;        /* the tensor's own size */
    int32_t buffer;        /* buffer / storage index, -1 when not in the arena */
    bp_tensor_kind kind;
    int32_t alias_of;      /* tensor whose bytes this one reuses, -1 if none */
    uint64_t view_offset;  /* where its bytes start in alias_of's (a Concat slice, a Split
                              output under concat_inplace); 0 otherwise.  Its address is
                              offset + view_offset. */
} bp_tensor_plan;

typedef enum bp_event_type {
    BP_EV_ALLOC = 0, BP_EV_EXEC, BP_EV_FREE,
    /* recompute and offload (docs/FALLBACK.md); only plans with copies have them */
    BP_EV_RECOMPUTE,   /* before the step's op: run `op` again, its output `tensor` at `offset` */
    BP_EV_OFFLOAD,     /* after the step's op: copy storage `tensor` to host memory, free its bytes */
    BP_EV_PREFETCH     /* before the step's op: copy it back into the arena at `offset` */
} bp_event_type;

typedef struct bp_event {
    bp_event_type type;
    int32_t tensor;    /* -1 for EXEC */
    int32_t op;        /* the op the event belongs to */
    int32_t buffer;    /* -1 when not in the arena */
    uint64_t offset;   /* BP_NO_OFFSET when not in the arena */
} bp_event;

typedef struct bp_plan_stats {
    uint64_t arena_bytes;        /* size of the one arena (sum of colors for color) */
    uint64_t lower_bound_bytes;  /* max bytes live at any step for this order */
    uint64_t naive_bytes;        /* no reuse: the aligned bytes of every view root in the
                                    arena (a planned tensor that is no view), each its own buffer */
    uint64_t alias_saved_bytes;  /* the aligned bytes of the planned tensors that share another's
                                    storage (views of planned tensors, in-place outputs) */
    uint64_t dynamic_bytes;      /* bytes of dynamic tensors (at their bound size, or 0) */
    int32_t peak_step;           /* a step where the lower bound is reached */
    int32_t n_planned;           /* tensors in the arena */
    int32_t n_storages;          /* distinct storages (alias groups) in the arena */
    int32_t n_dynamic;           /* tensors kept out of the arena for an unbound symbolic size */
    double plan_seconds;         /* wall time of bp_plan_graph */
    double schedule_seconds, assign_seconds;
    int optimal;                 /* 1 if the assigner proved the arena optimal for the order */
    int sched_optimal;           /* 1 if the scheduler proved the order's peak optimal */
    double makespan;             /* estimated makespan of the order on opts->threads workers (cost units) */
    int32_t n_control_flow;      /* ops with bodies, at every depth */
    int32_t n_body_planned;      /* tensors planned inside bodies, at every depth */
    int32_t n_views;             /* tensors that share their view source's bytes (of any kind) */
    int32_t n_inputs, n_weights; /* external tensors: kind input, kind weight (views included) */
    /* recompute and offload (all 0 in a plan without copies) */
    double recompute_cost;       /* the costs of the ops run again (cost units) */
    double transfer_cost;        /* transfer time not hidden behind compute (cost units) */
    uint64_t offload_bytes;      /* bytes copied to host memory */
    double overhead_percent;     /* (recompute_cost + transfer_cost) / the graph's compute cost, in % */
    int32_t n_recomputes, n_offloads; /* copies made by recomputing, by prefetching */
} bp_plan_stats;

BP_API const bp_plan_stats *bp_plan_get_stats(const bp_plan *p);
BP_API int32_t bp_plan_n_steps(const bp_plan *p);
BP_API const int32_t *bp_plan_schedule(const bp_plan *p);      /* op ids in order */
BP_API const bp_tensor_plan *bp_plan_tensor(const bp_plan *p, int32_t t);
BP_API int32_t bp_plan_n_tensors(const bp_plan *p);
BP_API uint64_t bp_plan_alignment(const bp_plan *p);
BP_API size_t bp_plan_n_events(const bp_plan *p);
BP_API const bp_event *bp_plan_events(const bp_plan *p);
BP_API bp_sched_kind bp_plan_sched(const bp_plan *p);
BP_API bp_assign_kind bp_plan_assign(const bp_plan *p);

/* Control flow: the plan of body i of the graph (bp_graph_body's numbering),
 * whose offsets count from bp_plan_body_base(p, i) in this plan's arena.
 * NULL / BP_NO_OFFSET when there is no such body. */
BP_API int32_t bp_plan_n_bodies(const bp_plan *p);
BP_API const bp_plan *bp_plan_body(const bp_plan *p, int32_t i);
BP_API uint64_t bp_plan_body_base(const bp_plan *p, int32_t i);
/* Sizes the reservation of every control-flow op of g (recursively) to hold
 * its bodies as bp_plan_graph will plan them with opts: for an If the larger
 * branch, for a Loop or Scan its slots (carried values, the iteration number,
 * the condition, slices; each aligned) plus the body's arena.  Call it before
 * bp_plan_graph on a graph with bodies, with the same options; it plans each
 * body once.  g is finalized again afterwards. */
BP_API bp_status bp_graph_reserve_bodies(bp_graph *g, const bp_plan_options *opts, bp_error *err);

/* Plan files (format "bufplan-plan", docs/FORMATS.md).  path "-" = stdout.
 * Writes are atomic (temp file + rename). */
BP_API bp_status bp_plan_write_json(const bp_plan *p, const bp_graph *g, const char *path, bp_error *err);
BP_API bp_status bp_plan_write_json_file(const bp_plan *p, const bp_graph *g, FILE *f, bp_error *err);
BP_API bp_status bp_plan_write_events_csv(const bp_plan *p, const bp_graph *g, const char *path, bp_error *err);
BP_API bp_status bp_plan_write_events_csv_file(const bp_plan *p, const bp_graph *g, FILE *f, bp_error *err);
/* Reads a plan for graph g; names are resolved against g. */
BP_API bp_status bp_plan_read_json(const bp_graph *g, const char *path, bp_plan **out, bp_error *err);
BP_API bp_status bp_plan_parse_json(const bp_graph *g, const char *text, size_t len,
                                    const char *filename, bp_plan **out, bp_error *err);

/* Recompute and offload (docs/FALLBACK.md).  Besides each storage's first
 * placement (bp_plan_tensor of its root), a plan made under a budget may
 * hold copies: the storage leaves the arena after step `evict` (freed, or
 * copied to host memory) and comes back before the op of step `first` runs,
 * at `offset`, by running its producer again (recompute) or by copying it
 * back (prefetch).  A copy stays until the next copy's evict step, or the
 * storage's last use.  Copies are sorted by (tensor, first). */
typedef enum bp_copy_kind { BP_COPY_RECOMPUTE = 0, BP_COPY_PREFETCH } bp_copy_kind;

typedef struct bp_copy {
    int32_t tensor;        /* the storage root */
    bp_copy_kind kind;
    int32_t op;            /* recompute: the op run again; prefetch: -1 */
    int32_t evict;         /* the previous copy leaves after this step's op */
    int32_t first, last;   /* steps this copy is in the arena, inclusive */
    uint64_t offset;
} bp_copy;

BP_API int32_t bp_plan_n_copies(const bp_plan *p);
BP_API const bp_copy *bp_plan_copy(const bp_plan *p, int32_t i);   /* NULL when out of range */
BP_API const char *bp_copy_kind_name(bp_copy_kind k);
/* Parses a --fallback value: "none", "recompute", "offload" or a comma list
 * of the last two.  Returns false when s is not one. */
BP_API bool bp_fallback_parse(const char *s, unsigned *out);

/* ---------------------------------------------------------------- verifier */

/* Independent check of a plan against its graph: the schedule is a
 * topological permutation of the ops, every interval covers the tensor's true
 * lifetime, sizes are right, every aliasing is justified, nothing lies outside
 * the arena, and no two simultaneously live storages overlap in bytes.
 * O(n log n).  Returns BP_OK or BP_ERR_VERIFY with the first problems in
 * err->msg (up to 10 of them, separated by newlines, then "... and N more"). */
BP_API bp_status bp_verify(const bp_graph *g, const bp_plan *p, bp_error *err);

/* A floor on the arena of every Concat-in-place choice (whole, partial or
 * none) for one order: the largest sum, over the boundaries between steps,
 * and over the steps themselves (an output that may be written in place
 * over a dying input of its size not counted), of the bytes that must be
 * live there, a Concat's output and its slices counted once
 * (docs/design/concat_bound.md).  The certificate is step `step` (op `op`),
 * during it (during = 1) or after it, where `n_live` storages are live, the
 * largest of them the storage of tensor `largest`.  opts: the profile
 * and plan_inputs (NULL: the defaults); control flow is refused. */
typedef struct bp_concat_bound_info {
    uint64_t bytes;          /* the floor */
    int32_t step, op;        /* the step, and its op */
    int32_t during;          /* 1: during the step; 0: after it */
    int32_t n_live;          /* storages live across it */
    int32_t largest;         /* the root tensor of the largest of them */
} bp_concat_bound_info;
BP_API bp_status bp_concat_bound(const bp_graph *g, const bp_plan_options *opts, const int32_t *order,
                                 bp_concat_bound_info *out, bp_error *err);

/* ------------------------------------------------------------- lifetimes */

/* Live intervals for an order (op ids, a permutation), as docs/ARCHITECTURE.md defines them:
 * first = producer's step, last = the largest consumer step (the final step
 * for graph outputs, first for unread tensors).  Tensors with no producer
 * (inputs, weights) start at step 0 when read, and are -1/-1 if never read.
 * first/last are arrays of n_tensors entries. */
BP_API bp_status bp_lifetimes(const bp_graph *g, const int32_t *order,
                              int32_t *first, int32_t *last, bp_error *err);

/* Computes an order with the given scheduler (no assignment).  order has
 * n_ops entries. */
BP_API bp_status bp_schedule(const bp_graph *g, const bp_plan_options *opts,
                             int32_t *order, bp_error *err);

/* -------------------------------------------------- interval assignment */

/* The assigner as a pure function over half-open intervals [lower, upper)
 * (MiniMalloc's model).  fixed_offset == BP_NO_OFFSET means "free to place". */
typedef struct bp_interval {
    int64_t lower, upper;     /* half-open lifetime */
    uint64_t size;            /* bytes; 0 is allowed */
    uint64_t alignment;       /* power of two; 0 or 1 = none */
    uint64_t fixed_offset;    /* BP_NO_OFFSET unless pre-placed */
} bp_interval;

typedef struct bp_assign_options {
    double time_limit;        /* seconds, for search; <= 0 = no limit */
    uint64_t capacity;        /* 0 = minimise; else decision: fit under capacity */
    uint64_t seed;
    int progress;             /* progress line on stderr when a terminal */
    const bp_allocator *alloc; /* the assigner's working memory; NULL = libc */
} bp_assign_options;

typedef struct bp_assign_result {
    uint64_t arena_bytes;     /* max(offset + size) */
    uint64_t lower_bound;     /* best lower bound known (max-live or stronger) */
    int optimal;              /* 1 when arena_bytes == a proven optimum */
    int fits;                 /* capacity mode: 1 fits, 0 proven not to, -1 unknown */
    uint64_t nodes;           /* search nodes explored */
    double seconds;
} bp_assign_result;

BP_API void bp_assign_options_init(bp_assign_options *o);
/* offsets: n entries out.  For BP_ASSIGN_COLOR each distinct offset is one
 * color's buffer, laid out one after another. */
BP_API bp_status bp_assign_intervals(const bp_interval *iv, size_t n, bp_assign_kind kind,
                                     const bp_assign_options *opts, uint64_t *offsets,
                                     bp_assign_result *res, bp_error *err);
/* Max over time of the sizes live at once (frees before allocs at equal t). */
BP_API uint64_t bp_intervals_max_live(const bp_interval *iv, size_t n);

#ifdef __cplusplus
}
#endif

/* The other parts of the API, one file each. */
#include "bufplan_assign.h"
#include "bufplan_limits.h"
#include "bufplan_sched.h"
#include "bufplan_viz.h"
#include "bufplan_onnx.h"
#include "bufplan_pool.h"
#include "bufplan_exec.h"
#include "bufplan_dyn.h"
#include "bufplan_engine.h"

#endif /* BUFPLAN_H */
