/*
 * exec_internal.h — shared by the executor's modules (exec.c, digest.c,
 * digest_hash.c, history.c): the executor's state.  Fences and the segment
 * map come from plan/fences.h.
 */
#ifndef BP_EXEC_INTERNAL_H
#define BP_EXEC_INTERNAL_H

#include "plan/plan_internal.h"
#include "plan/fences.h"

/* splitmix64's finaliser: a bijective 64-bit mixer. */
static inline uint64_t bp__dg_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}


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
    uint64_t *voff;                /* nt: where its bytes start in its root's (the plan's view_offset; 0 in safe mode) */
    int32_t *inside;               /* nt: a Split output at its offset: its source; a Concat output
                                      whose inputs all sit in it: -2; else -1 (slices.c) */
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
    /* control flow (control.c) */
    void *arena_base;              /* planned mode: where the arena starts (a body's: inside its parent's) */
    bool pool_is_parents;          /* a body's executor: arena_base is the parent's memory */
    uint8_t *is_cf;                /* no: the op has bodies */
    bp_exec **child;               /* per body of the graph: its executor */
    uint64_t **slot_off;           /* per body: each io's slot offset in the reservation, or BP_NO_OFFSET */
    int32_t n_child;
    const struct bp__exec_cf_vt *cf_vt;
    /* the shapes kernels see (shapes.c) */
    int64_t *tdims;                /* laid out like g->dims, symbols replaced by their values */
    bp_exec_shape *ioshape;        /* n_io: per op input/output slot, like bufs */
    /* recompute and offload (copies.c; planned mode, a plan with copies) */
    const bp_copy *cp; int32_t n_cp;
    int32_t *c_beg;                /* nt + 1: each root's copies in cp (sorted by tensor, first) */
    uint64_t *c_size;              /* nt: a root's bytes, as a copy holds them */
    void **c_ptr, **c_prev;        /* n_cp: the copy's address, the previous residency's */
    void **c_host;                 /* n_cp: a prefetch's host buffer, between offload and prefetch */
    bp_exec_buf **c_rbuf;          /* n_cp: a recompute's kernel buffers (NULL data: tptr at run time) */
    void **cptr;                   /* n_io: a slot's address in its storage's current copy, NULL: tptr */
    int32_t *pre_off, *pre;        /* per op: the copies made before it runs */
    int32_t *post_off, *post;      /* per op: the prefetch copies it offloads for, after it runs */
    bp_pool *hpool;                /* host buffers of offloads */
    atomic_uint_fast64_t n_recomputed, n_offloaded;
    /* every metadata block, freed together */
    bp__exec_block *blocks; size_t n_blocks, cap_blocks;
};

/* control.c: the executors of bodies, made and run through exec.c's entry
 * points (passed in, so that control.c does not call up into exec.c). */
#define BP__EXEC_MAX_BODIES 2
typedef struct bp__exec_cf_vt {
    bp_status (*new_in)(const bp_graph *g, const bp_plan *plan, const bp_exec_options *o, void *arena_at, bp_exec **out, bp_error *err);
    bp_status (*run)(bp_exec *ex, bp_exec_run_stats *st, bp_error *err);
    void (*free)(bp_exec *ex);
} bp__exec_cf_vt;
bp_status bp__exec_cf_setup(bp_exec *ex, const bp__exec_cf_vt *vt, bp_error *err);
bp_status bp__exec_cf_run(bp_exec *ex, int32_t op, bp_error *err);
void bp__exec_cf_free(bp_exec *ex);

/* shapes.c: fills tdims and ioshape from src (NULL = ex->g), a graph with
 * the same tensor names and ranks; checks every tensor before changing any. */
bp_status bp__exec_shapes_fill(bp_exec *ex, const bp_graph *src, bp_error *err);

/* True when t is a tenant of its own bytes (written, not a view sharing them). */
static inline bool bp__exec_is_tenant(const bp_exec *ex, int32_t t)
{
    if (ex->inside && ex->inside[t] != -1) return false;   /* made of its sources' or inputs' bytes */
    int32_t v = ex->view_src[t];
    return v < 0 || ex->root[v] != ex->root[t];
}

/* slices.c: fills ex->voff and ex->inside (both allocated, nt entries)
 * from the plan, after ex->root. */
void bp__exec_slices_fill(bp_exec *ex);
/* views.c: caps each broadcast view's tbytes[] at its root's bytes (it
 * never reads past them); BP_ERR_NOMEM on allocation failure. */
bp_status bp__exec_clamp_views(const bp_graph *g, uint64_t *tbytes, bp_error *err);

/* n zeroed bytes, freed with the executor (NULL on OOM); inline, so that
 * every file of the folder allocates alike without calling into exec.c. */
static inline void *bp__exec_alloc(bp_exec *ex, size_t n)
{
    if (!n) n = 1;
    if (!bp__grow(&ex->a, (void **)&ex->blocks, &ex->cap_blocks, ex->n_blocks + 1, sizeof *ex->blocks)) return NULL;
    void *p = bp__calloc(&ex->a, 1, n);
    if (!p) return NULL;
    ex->blocks[ex->n_blocks++] = (bp__exec_block){p, n};
    return p;
}

/* copies.c: the replay of a plan's copies (planned mode).  setup resolves
 * every address and the per-op lists after ex_setup_ops; pre runs the copies
 * made before op (prefetches, recomputes with the op's kernel), post the
 * offloads after it; release returns host buffers left by a failed run. */
#define BP__EXEC_RBUF_MAX 16
bp_status bp__exec_copies_setup(bp_exec *ex, bp_error *err);
bp_status bp__exec_copies_pre(bp_exec *ex, int32_t op, int thr, bp_error *err);
bp_status bp__exec_copies_post(bp_exec *ex, int32_t op, bp_error *err);
void bp__exec_copies_release(bp_exec *ex);
/* The copy of root r current at step s, -1: its first placement. */
int32_t bp__exec_copy_at(const bp_exec *ex, int32_t r, int32_t s);
/* Where member t of its root lies in residency c (-1: the first placement). */
void *bp__exec_copy_addr(const bp_exec *ex, int32_t t, int32_t c);
/* Parallel replay: the copies as tenants ten[first ..] (returns how many),
 * and the accesses the copies make (add(ctx, tensor, residency, op)). */
int32_t bp__exec_copies_tenants(const bp_exec *ex, int32_t first, bp__tenant *ten);
void bp__exec_copies_accesses(const bp_exec *ex, void (*add)(void *ctx, int32_t t, int32_t c, int32_t op), void *ctx);

#endif /* BP_EXEC_INTERNAL_H */
