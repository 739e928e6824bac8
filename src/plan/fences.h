/*
 * fences.h — what parallel replay needs from a plan (fences.c): bounded
 * reachability over the op dependency graph (bp__reach), who last wrote each
 * byte range (bp__segmap), and the extra dependencies between ops that reuse
 * bytes (bp__fences), plus the fence-aware assigner the planner uses.
 */
#ifndef BP_PLAN_FENCES_H
#define BP_PLAN_FENCES_H

#include "plan/plan_internal.h"

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
bp_status bp__op_preds(const bp_graph *g, const bp_allocator *a, int32_t **pred_off, int32_t **pred,
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

/* Fence-aware assignment (plan/fences.c): like bestfit, but prefers placing a
 * storage over bytes whose previous tenants' readers all precede the new
 * producer in the dependency order.  iv[i] belongs to storage root roots[i]. */
bp_status bp__assign_fence_aware(const bp_graph *g, const bp__lifetimes *lt, const bp_interval *iv,
                                 const int32_t *roots, size_t n, uint64_t *offsets, bp_assign_result *res,
                                 bp_error *err);

#endif /* BP_PLAN_FENCES_H */
