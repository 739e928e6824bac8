/* Private to the assigners (src/assign/): the canonical greedy shared by
 * bestfit and search, the allocator they all work with, the numbering of
 * end points and overlap lists that the greedy, the improvement phase and
 * search build the same way (sweep.c), and the pieces of search that its
 * files share. */
#ifndef BP_ASSIGN_INTERNAL_H
#define BP_ASSIGN_INTERNAL_H

#include "graph/graph_internal.h"

/* bestfit with options: quality != 0 skips the fast time-order path, tries
 * every order, and gives the greedy a larger work budget; the deadline
 * (seconds on bp__now(), 0 = none) only cuts it short. */
bp_status bp__assign_bestfit_ex(const bp_interval *iv, size_t n, const bp_assign_options *o, int quality,
                                double deadline, uint64_t *offsets, bp_assign_result *res, bp_error *err);

/* Canonical greedy with squeaky-wheel reordering (greedy.c) over the
 * intervals with size > 0 (fixed offsets are obstacles).  Runs greedy passes
 * until `work` (overlap visits, a deterministic budget) is spent, the lower
 * bound `lb` is reached, or the clock passes `deadline` (0 = none).  On entry
 * offsets[] holds a packing of height *arena (the squeaky wheel starts from
 * its blame when no static order beats it); when a pass beats *arena,
 * offsets[] (all n, zero-size ones untouched) and *arena are updated.
 * Returns 0, 1 when the instance has too many overlaps for it (nothing
 * done), or -1 out of memory. */
int bp__assign_greedy(const bp_allocator *a, const bp_interval *iv, size_t n, uint64_t lb, uint64_t work,
                      double deadline, uint64_t *offsets, uint64_t *arena);

/* The allocator for an assigner's working memory: the caller's
 * (bp_assign_options.alloc), else libc. */
static inline const bp_allocator *bp__assign_alloc(const bp_assign_options *o)
{
    return o && o->alloc ? o->alloc : &bp__libc_allocator;
}

/* bp_intervals_check (check.c) with its scratch memory from `a`. */
bp_status bp__intervals_check_alloc(const bp_allocator *a, const bp_interval *iv, size_t n,
                                    const uint64_t *offsets, uint64_t arena, bp_error *err);

/* A buffer's key under a static priority order (the greedy's and search's
 * orders): k1, k2, k3 descending, then the buffer ascending, so that every
 * sort of them is deterministic. */
typedef struct bp__prio_key { uint64_t k1, k2, k3; uint32_t b; } bp__prio_key;

static inline int bp__prio_key_cmp(const void *x, const void *y)
{
    const bp__prio_key *a = x, *b = y;
    if (a->k1 != b->k1) return a->k1 < b->k1 ? 1 : -1;
    if (a->k2 != b->k2) return a->k2 < b->k2 ? 1 : -1;
    if (a->k3 != b->k3) return a->k3 < b->k3 ? 1 : -1;
    return (a->b > b->b) - (a->b < b->b);
}

/* An end point of a sized interval, as the greedy, the improvement phase
 * and search number them: free intervals 0..k-1, pre-placed ones k.., each
 * in input order; end = 1 for the upper end. */
typedef struct bp__tp { int64_t t; uint32_t b, end; } bp__tp;

/* Counts the sized intervals: *k free ones, *nf pre-placed. */
void bp__assign_count(const bp_interval *iv, size_t n, uint32_t *k, uint32_t *nf);

/* Writes the 2 (k + nf) end points of the sized intervals into tp, sorted
 * by time, ends before starts at the same time (lifetimes are half-open),
 * then by id; ids[id] = the input index of each id (k + nf of them).
 * Returns the number of pairs of intervals that overlap in time. */
uint64_t bp__assign_endpoints(const bp_interval *iv, size_t n, uint32_t k, uint32_t nf, bp__tp *tp, uint32_t *ids);

/* Sorts idx[0..m) (stable) by key ascending; key[k] belongs to idx[k] (both
 * are permuted).  tk/ti are scratch of m entries. */
void bp__assign_radix(uint64_t *key, uint32_t *idx, uint64_t *tk, uint32_t *ti, size_t m);

/* Overlap lists of the sized intervals from their end points tp (as
 * bp__assign_endpoints writes them: free 0..k-1, pre-placed k..k+nf-1), by
 * a sweep that keeps the live set: O(n + overlaps), one pass to count and
 * one to fill.  ov_off/ov: CSR over the free buffers, for each the free
 * buffers overlapping it in time (both directions); fx_off/fx: the
 * pre-placed ones overlapping it, numbered 0..nf-1.  Two pre-placed
 * buffers make no entry.  Each list is in sweep order (the order the
 * callers' results were made with: improve draws swap partners by index).
 * The caller passes ov_off and fx_off zeroed (k + 1 entries).  With bits
 * set (k rows of W words, zeroed) the free-free overlaps go into the bit
 * rows instead of ov: ov_off still gets their counts, ov stays NULL.  ov,
 * fx come from `a` with n_ov, n_fx entries (at least 1 each).  Returns 0, or
 * -1 out of memory (then ov, fx NULL: nothing held). */
typedef struct bp__overlaps {
    uint32_t *ov_off, *ov;   /* in: k + 1 zeroed; out: ov from a */
    uint32_t *fx_off, *fx;
    size_t n_ov, n_fx;
    uint64_t *bits;          /* NULL, or k rows of W words */
    uint32_t W;
} bp__overlaps;

int bp__assign_overlaps(const bp_allocator *a, const bp__tp *tp, uint32_t k, uint32_t nf, bp__overlaps *o);

/* Iterated greedy over placement orders (improve.c), from the
 * solution in offsets[] (all n; *arena its arena).  Gives up (returns 1,
 * nothing done) above `max_pairs` pairs of free buffers overlapping in time;
 * otherwise runs until `work` overlap visits are spent, the lower bound
 * `lb` is reached, or the clock passes `deadline` (0 = none).  Updates
 * offsets[] and *arena only when it found a smaller arena.  Returns 0, 1,
 * or -1 out of memory. */
int bp__assign_improve(const bp_allocator *a, const bp_interval *iv, size_t n, uint64_t lb, uint64_t max_pairs,
                       uint64_t work, double deadline, uint64_t *offsets, uint64_t *arena);

/* ... with the share of the skyline's budget (per mille; no pre-placed
 * buffers) that goes to fresh constructions, the rest to ruin and recreate
 * from the best packing so far: 0 = ruin and recreate only, from the
 * packing in offsets[]; bp__assign_improve passes 700. */
int bp__assign_improve_ex(const bp_allocator *a, const bp_interval *iv, size_t n, uint64_t lb, uint64_t max_pairs,
                          uint64_t work, double deadline, unsigned build_share, uint64_t *offsets, uint64_t *arena);

/* search (search_driver.c) with a budget of max_nodes search nodes over
 * all its probes (0 = none).  With a budget the incumbent phase runs on its
 * work budgets alone (no deadline), so the result is a function of the
 * input and the budget; the time limit can only cut it shorter.  Reads
 * res->lower_bound (max-live) as bp__assign_search does. */
bp_status bp__assign_search_ex(const bp_interval *iv, size_t n, const bp_assign_options *o, uint64_t max_nodes,
                               uint64_t *offsets, bp_assign_result *res, bp_error *err);

/* Decision probes of search's depth-first search, for bestfit
 * (search_probe.c).  A step decides "does everything fit under cap?" with
 * one of search's static orders (0 WAT, 1 TAW, 2 TWA, 3 TCA: MiniMalloc's
 * tie-break keys) and at most `limit` nodes per independent part. */
typedef struct bp__probe { uint64_t cap; int order; int64_t limit; } bp__probe;

/* From the packing in offsets[] (all n; *arena its arena; no pre-placed
 * buffers needed but allowed), runs the steps in order, skipping those whose
 * capacity is not below the current arena or is ruled out (an exhausted
 * tree rules out its capacity and every lower one); at most max_nodes nodes
 * in all (0 = no cap).  A packing found replaces offsets[] and *arena.
 * Deterministic (no clock).  *nodes (if not NULL) gets the nodes spent.
 * Returns 0, or -1 out of memory. */
int bp__assign_search_probe(const bp_allocator *a, const bp_interval *iv, size_t n, const bp__probe *steps,
                            int n_steps, uint64_t max_nodes, uint64_t *offsets, uint64_t *arena, uint64_t *nodes);

/* Chains of same-size, same-alignment free buffers where one starts when
 * the previous ends, each merged into one interval (chain.c): a
 * packing of iv[0..n) is a packing of the input with every part at its
 * chain's offset.  of[i] = the chain of input interval i (UINT32_MAX for
 * size 0); pre-placed intervals are chains of one.  n < the sized input
 * intervals when anything was merged. */
typedef struct bp__chains {
    bp_interval *iv; /* n chains */
    size_t n;
    uint32_t *of;    /* n_in */
    size_t n_in;
} bp__chains;

/* Returns 0, or -1 out of memory (*out then holds nothing). */
int bp__assign_chains(const bp_allocator *a, const bp_interval *iv, size_t n, bp__chains *out);
void bp__assign_chains_free(const bp_allocator *a, bp__chains *c);

/* bestfit's improvement phase at scale (window.c): from the packing in
 * offsets[] (all n, no pre-placed buffers; *arena its arena), repacks
 * windows of time around the buffer that ends highest, the buffers crossing
 * a window's edges kept where they are; offsets[] and *arena improve only.
 * Deterministic.  Returns 0, or -1 out of memory. */
/* The sub-solver window.c calls (bestfit's, passed in so that window.c
 * calls no assigner itself): packs iv[0..n) into off, its arena into *arena;
 * with `thorough`, the canonical greedy on search's larger work budget
 * (deterministic: no deadline). */
typedef bp_status (*bp__pack_fn)(const bp_allocator *a, const bp_interval *iv, size_t n, int thorough,
                                 uint64_t *off, uint64_t *arena);
int bp__assign_windows(const bp_allocator *a, bp__pack_fn pack, const bp_interval *iv, size_t n, uint64_t lb,
                       uint64_t *offsets, uint64_t *arena);

/* ------------------------------------------------------------ assigners */

/* assign.c dispatches bp_assign_intervals(); each strategy fills offsets[]
 * and res->arena_bytes.  Inputs were validated by the dispatcher. */
bp_status bp__assign_naive(const bp_interval *iv, size_t n, uint64_t *offsets, bp_assign_result *res, bp_error *err);
bp_status bp__assign_bestfit(const bp_interval *iv, size_t n, const bp_assign_options *o,
                             uint64_t *offsets, bp_assign_result *res, bp_error *err);
bp_status bp__assign_search(const bp_interval *iv, size_t n, const bp_assign_options *o,
                            uint64_t *offsets, bp_assign_result *res, bp_error *err);

/* sweep.c: max-live of the intervals (0 when n is 0); false on OOM. */
bool bp__assign_max_live(const bp_allocator *a, const bp_interval *iv, size_t n, uint64_t *out);
/* sweep.c: the highest byte used by pre-placed intervals (validated: no overflow). */
uint64_t bp__assign_fixed_top(const bp_interval *iv, size_t n);

/* search_probe.c: the branch-and-bound from the incumbent in offsets/res
 * (which it only ever improves), started at t0 (bp__now()); the rest as
 * bp__assign_search_ex. */
bp_status bp__assign_search_core(const bp_interval *iv, size_t n, const bp_assign_options *o, uint64_t max_nodes,
                                 double t0, uint64_t *offsets, bp_assign_result *res, bp_error *err);

/* search's context: its layout is search_ctx.h, private to search_build.c
 * (which makes and frees it), search.c and search_probe.c. */
typedef struct bp__search bp__search;

/* search_build.c: fills a zeroed context (c->a set) for iv: sections,
 * overlaps, obstacles, parts; false on OOM (bp__assign_search_free then). */
bool bp__assign_search_build(bp__search *c, const bp_interval *iv, size_t n);
/* search_build.c: frees what a build, complete or not, and the search allocated. */
void bp__assign_search_free(bp__search *c);
/* search_build.c: sizes the candidate and frame stacks for one dive (a hint); false on OOM. */
bool bp__assign_search_presize(bp__search *c);
/* search_build.c: each part's incumbent from offsets[] (all n), its bound max-live on the grid. */
void bp__assign_search_start_parts(bp__search *c, const uint64_t *offsets);
/* search.c: decides every part at capacity cap with static order h (0..3), at
 * most limit nodes a part: SR_FOUND, SR_INFEASIBLE, SR_ABORTED or SR_TIMEOUT. */
int bp__assign_search_decide(bp__search *c, uint64_t cap, int h, int64_t limit);

#endif
