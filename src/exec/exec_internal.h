/*
 * exec_internal.h — shared by the executor's modules (exec.c, exec_fences.c,
 * exec_digest.c, history.c).  Prefixes: bp__reach (bounded reachability over
 * the op dependency graph), bp__segmap (who last wrote each byte range),
 * bp__fences (the extra dependencies for parallel replay).
 */
#ifndef BP_EXEC_INTERNAL_H
#define BP_EXEC_INTERNAL_H

#include "core/internal.h"

/* ------------------------------------------------------------ reachability */

/* Does op `from` reach op `to` through data dependencies and the fences added
 * so far?  Every edge goes from a lower step to a higher one (the order is
 * topological), and level[] is the longest path from a source counting fence
 * edges, so a backward search from `to` prunes every op whose step is below
 * from's or whose level is not above from's.  The search gives up after
 * `budget` visited ops and answers "no" (a fence too many, never one too few).
 * Levels must be finished (bp__reach_finish) in step order: an op's level is
 * final once all its fences are in. */
typedef struct bp__reach {
    const bp_allocator *a;
    int32_t n;
    const int32_t *step;          /* n: step of each op */
    const int32_t *pred_off, *pred; /* data predecessors, CSR (distinct) */
    int32_t *level;               /* n */
    int32_t *fhead;               /* n: first fence into the op, -1 */
    int32_t *fnext, *ffrom;       /* per fence: next fence into the same op, source op */
    size_t nf, capf_next, capf_from;
    int32_t *mark; int32_t cur;   /* visited stamps */
    int32_t *stack; size_t cap_stack;
    int32_t budget;
    uint64_t gave_up;             /* queries that hit the budget */
} bp__reach;

bp_status bp__reach_init(bp__reach *R, const bp_allocator *a, int32_t n, const int32_t *step,
                         const int32_t *pred_off, const int32_t *pred, bp_error *err);
void bp__reach_free(bp__reach *R);
bool bp__reach_add_fence(bp__reach *R, int32_t from, int32_t to);
void bp__reach_finish(bp__reach *R, int32_t op);
bool bp__reach_query(bp__reach *R, int32_t from, int32_t to);

/* Data predecessors of every op (distinct producers of its inputs), CSR. */
bp_status bp__exec_preds(const bp_graph *g, const bp_allocator *a, int32_t **pred_off, int32_t **pred,
                         size_t *n_edges, bp_error *err);

/* ---------------------------------------------------------- segment map */

/* Disjoint byte ranges, sorted, each with the tenant that wrote it last. */
typedef struct bp__seg { uint64_t lo, hi; int32_t owner; } bp__seg;
typedef struct bp__segmap { const bp_allocator *a; bp__seg *s; size_t n, cap; } bp__segmap;

/* Makes `owner` the owner of [lo, hi) (hi > lo) and appends the distinct
 * previous owners of any part of it to *prev (growable: *n_prev entries, capacity *cap_prev).
 * Returns false on OOM. */
bool bp__segmap_set(bp__segmap *m, uint64_t lo, uint64_t hi, int32_t owner,
                    int32_t **prev, size_t *n_prev, size_t *cap_prev);
void bp__segmap_free(bp__segmap *m);

/* ------------------------------------------------------------------ fences */

/* A tenant: a tensor that is written (not a view) and the bytes it occupies
 * ([lo, hi) in a common address space), produced by `producer` (-1: written
 * before the run, a planned graph input). */
typedef struct bp__tenant { int32_t producer; uint64_t lo, hi; } bp__tenant;

/* For tenants that reuse bytes, the fences: pairs (from, to) such that `to`
 * (the producer of a later tenant) waits for `from` (an op that accesses an
 * earlier tenant of the same bytes), only where the dependencies and the
 * fences already added do not imply it.  acc_off/acc: the ops that access
 * each tenant (producer, readers, readers of its views), CSR.  *fences is
 * allocated with a (2 * *n_fences entries, capacity *cap entries). */
bp_status bp__fences_build(const bp_allocator *a, int32_t n_ops, const int32_t *order,
                           const int32_t *pred_off, const int32_t *pred,
                           int32_t n_ten, const bp__tenant *ten, const int32_t *acc_off, const int32_t *acc,
                           int32_t **fences, size_t *n_fences, size_t *cap, uint64_t *gave_up,
                           bp_error *err);


/* ---------------------------------------------------------------- executor */

#include <pthread.h>
#include <stdatomic.h>

enum { BP__SK_NONE = 0, BP__SK_ARENA, BP__SK_POOL, BP__SK_FIXED };

/* Per-worker accumulators, summed at the end of a run. */
typedef struct bp__exec_local {
    double alloc_seconds;
    uint64_t n_allocs, n_frees, n_ops;
    bp_pool_local *pl;             /* the worker's pool handle (ex->ploc), NULL: the plain pool API */
} bp__exec_local;

typedef struct bp__exec_block { void *p; size_t n; } bp__exec_block;

struct bp_exec {
    const bp_graph *g;
    const bp_plan *plan;           /* the caller's, or own_plan */
    bp_plan *own_plan;
    bp_allocator a;
    bp_exec_options o;
    int32_t nt, no;
    const int32_t *order;
    int32_t *step;                 /* no */
    /* tensors */
    int32_t *root;                 /* nt: storage root */
    uint64_t *tbytes;              /* nt: size a kernel sees */
    void **tptr;                   /* nt: where the tensor's bytes are now */
    int32_t *view_src;             /* nt: the tensor it is a view of (graph), -1 */
    /* storages, indexed by root tensor */
    uint8_t *sk;                   /* nt: BP__SK_* (valid for roots) */
    uint8_t *keep;                 /* nt: holds a graph output: not freed during a run */
    uint8_t *external;             /* nt: input / weight buffer (xpool) */
    int32_t *mem_off, *mem;        /* members of each root, CSR */
    void **sptr;                   /* nt: the block of a pool / fixed storage */
    uint64_t *scap;                /* nt: its size */
    int32_t *refc0; atomic_int *refc;
    int32_t *pin; int32_t n_pin;   /* graph inputs planned in the arena (copied in per run) */
    /* ops */
    uint32_t *io_off;              /* no + 1: into bufs */
    bp_exec_buf *bufs;
    bp_kernel_fn *kfn; void **kuser;
    int32_t *al_off, *al;          /* roots allocated right before the op */
    int32_t *fr_off, *fr;          /* sequential: roots freed right after the op */
    int32_t *tc_off, *tc;          /* parallel: roots whose use count the op drops */
    /* dependencies */
    int32_t *succ_off, *succ, *pend0;
    atomic_int *pend;
    int32_t *fences; size_t n_fences, cap_fences;
    size_t n_data_edges;
    uint64_t fence_gave_up;
    /* workers */
    int threads;
    int32_t *queue; int32_t qh, qt;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_idle;
    pthread_t *tid; int n_tid;
    bool sync_ok;
    uint64_t gen;
    int shutdown, n_sleep, running, workers_out;
    atomic_int n_done, stop;
    bp_status run_status;
    bp_error run_err;
    bp__exec_local tot;
    /* kernels */
    bp_kernel_fn def_fn; void *def_user;
    bp_kernel_fn *type_fn; void **type_user; size_t n_types;
    bool kdirty;
    /* memory */
    bp_pool *pool, *xpool;
    bp_pool_local **ploc;          /* threads: worker i's handle on pool for POOL storages (NULL: none, or
                                      dynamic_malloc) */
    int n_ploc;
    uint64_t arena_bytes, external_bytes, safe_bytes;
    atomic_uint_fast64_t cur_bytes, peak_bytes;
    /* history and hashes */
    atomic_uint_fast64_t tick;
    uint64_t *op_t0, *op_t1; int32_t *op_thr;
    uint64_t *s_alloc, *s_free; int32_t *s_alloc_thr, *s_free_thr; uintptr_t *s_addr;
    uint64_t *io_hash;             /* n_io: inputs as read, outputs as written */
    int ran;                       /* a run completed */
    /* every metadata block, freed together */
    bp__exec_block *blocks; size_t n_blocks, cap_blocks;
};

/* True when t is a tenant of its own bytes (written, not a view sharing them). */
static inline bool bp__exec_is_tenant(const bp_exec *ex, int32_t t)
{
    int32_t v = ex->view_src[t];
    return v < 0 || ex->root[v] != ex->root[t];
}

#endif /* BP_EXEC_INTERNAL_H */
