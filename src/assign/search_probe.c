/*
 * search_probe.c — the capacities search decides (search.c) from an incumbent:
 * bestfit's and improve's short decision probes (bp__assign_search_probe), and
 * the minimisation (bp__assign_search_core) that probes between the proven
 * lower bound and the incumbent until they meet or the budget runs out.
 * The incumbent comes from search_driver.c (bestfit); above 200,000
 * intervals it is the whole answer.
 *
 * Minimisation probes capacities between the proven lower bound and the
 * incumbent (the lower bound itself, the midpoint, three quarters of the way
 * up, just below the incumbent).  A found packing lowers the incumbent; an
 * exhausted tree raises the bound (to C + g, g = gcd of sizes and
 * alignments: every canonical height is a multiple of g).  Decisions depend on node counts only, so results are
 * deterministic; the wall clock only stops the search.  With a node budget
 * (bp__assign_search_ex) the incumbent phase runs on its work budgets
 * alone, so the whole result is a function of the input and the budget.
 */
#define _POSIX_C_SOURCE 200809L
#include "assign/search_ctx.h"

#include <string.h>
#include <unistd.h>

static uint64_t sr_global_best(const sr_ctx *c)
{
    uint64_t m = c->ftop;
    for (uint32_t i = 0; i < c->n_parts; i++) if (c->parts[i].best > m) m = c->parts[i].best;
    return m;
}

static uint64_t sr_global_lo(const sr_ctx *c)
{
    uint64_t m = 0;
    for (uint32_t i = 0; i < c->n_parts; i++) if (c->parts[i].lo > m) m = c->parts[i].lo;
    return m;
}

/* Decision probes for bestfit (declared in assign_internal.h).  No incumbent
 * phase and no call to bestfit: the parts start from the packing in
 * offsets[] and their max-live bounds, then each step decides its capacity
 * (if below the current arena and not ruled out) with its static order and
 * node limit per part; an exhausted tree rules out that capacity and every
 * lower one.  max_nodes bounds the nodes of all steps together. */
int bp__assign_search_probe(const bp_allocator *a, const bp_interval *iv, size_t n, const bp__probe *steps,
                            int n_steps, uint64_t max_nodes, uint64_t *offsets, uint64_t *arena, uint64_t *nodes)
{
    if (nodes) *nodes = 0;
    uint32_t k0, nf0;
    bp__assign_count(iv, n, &k0, &nf0);
    if (!k0) return 0;   /* nothing to place */
    sr_ctx c;
    memset(&c, 0, sizeof c);
    c.a = a;
    if (!bp__assign_search_build(&c, iv, n) || !bp__assign_search_presize(&c)) { bp__assign_search_free(&c); return -1; }
    c.max_nodes = max_nodes ? max_nodes : UINT64_MAX;
    bp__assign_search_start_parts(&c, offsets);
    uint64_t UB = sr_global_best(&c), LB = sr_global_lo(&c);
    if (LB < c.ftop) LB = c.ftop;
    for (int i = 0; i < n_steps && !c.timed_out && !c.oom && LB < UB; i++) {
        uint64_t cap = steps[i].cap / c.g * c.g;   /* canonical heights are multiples of g */
        if (cap < LB || cap >= UB || steps[i].order < 0 || steps[i].order >= c.n_heur) continue;
        int r = bp__assign_search_decide(&c, cap, steps[i].order, steps[i].limit);
        if (r == SR_FOUND) UB = sr_global_best(&c);
        else if (r == SR_INFEASIBLE) LB = cap + c.g;
    }
    int ret = c.oom ? -1 : 0;
    if (!c.oom && UB < *arena) {
        for (uint32_t b = 0; b < c.k; b++) offsets[c.orig[b]] = c.best[b];
        *arena = UB;
    }
    if (nodes) *nodes = c.nodes;
    bp__assign_search_free(&c);
    return ret;
}

bp_status bp__assign_search_core(const bp_interval *iv, size_t n, const bp_assign_options *o, uint64_t max_nodes,
                                 double t0, uint64_t *offsets, bp_assign_result *res, bp_error *err)
{
    uint64_t lb0 = res->lower_bound;
    uint64_t ub0 = res->arena_bytes;
    uint64_t capacity = o ? o->capacity : 0;
    if (capacity && ub0 <= capacity) { res->fits = 1; return BP_OK; }
    if (capacity && lb0 > capacity) { res->fits = 0; return BP_OK; }
    if (ub0 <= lb0) { res->optimal = 1; return BP_OK; }
    if (n > 200000) return BP_OK; /* the search state is O(n + overlaps) per node:
                                     the incumbent phase is all there is */

    sr_ctx c;
    memset(&c, 0, sizeof c);
    c.a = bp__assign_alloc(o);
    if (!bp__assign_search_build(&c, iv, n)) { bp__assign_search_free(&c); return bp__err(err, BP_ERR_NOMEM, "search: out of memory for %zu intervals", n); }
    c.t0 = t0;
    c.deadline = o && o->time_limit > 0 ? t0 + o->time_limit : 0;
    c.max_nodes = max_nodes ? max_nodes : UINT64_MAX;
    c.progress = o && o->progress && isatty(2);
    c.last_print = t0;

    /* per-part incumbents (from bestfit's offsets) and bounds */
    bp__assign_search_start_parts(&c, offsets);
    uint64_t LB = sr_global_lo(&c), UB = sr_global_best(&c);
    if (LB < lb0) LB = lb0;
    /* no arena ends below a pre-placed buffer (max-live can: without this
     * a probe under it "fits" every part but never lowers the incumbent,
     * and the probes repeated until the time limit) */
    if (LB < c.ftop) LB = c.ftop;
    c.show_lb = LB; c.show_ub = UB;
    int64_t limit = (int64_t)(c.k > 64 ? c.k : 64);
    int fits = -1;
    bool done = false;
    if (capacity && LB > capacity) { fits = 0; done = true; }
    while (!done && !c.timed_out && !c.oom) {
        limit = limit > INT64_MAX / 2 ? INT64_MAX : limit * 2;
        if (capacity) {
            for (int h = 0; h < c.n_heur && !done; h++) {
                int r = bp__assign_search_decide(&c, capacity, h, limit);
                if (r == SR_FOUND) { fits = 1; done = true; }
                else if (r == SR_INFEASIBLE) { fits = 0; done = true; }
                else if (r == SR_TIMEOUT || c.oom) break;
            }
            continue;
        }
        /* the bound can meet the incumbent before any probe (a part's grid
         * rounding, a pre-placed buffer on top): then there is nothing to
         * probe, and the loop would spin without spending a node */
        if (LB >= UB) break;
        /* probes: the bound, the middle, three quarters of the way up, just
         * below the incumbent (without the three-quarter step, a better
         * incumbent on J put the middle where every probe ate its budget
         * and the last one walked down one grid step per round: J ended at
         * 1,044,480 instead of 1,035,264) */
        uint64_t probes[4];
        int np = 0;
        uint64_t mid = LB + (UB - LB) / 2 / c.g * c.g;
        uint64_t q3 = LB + (UB - LB) / 4 * 3 / c.g * c.g;
        probes[np++] = LB;
        if (mid > LB && mid < UB - c.g) probes[np++] = mid;
        if (q3 > mid && q3 < UB - c.g) probes[np++] = q3;
        if (UB - c.g > LB) probes[np++] = UB - c.g;
        for (int pi = 0; pi < np && !done; pi++) {
            uint64_t cap = probes[pi];
            if (cap < LB || cap >= UB) continue;
            for (int h = 0; h < c.n_heur; h++) {
                int r = bp__assign_search_decide(&c, cap, h, limit);
                if (r == SR_FOUND) { UB = sr_global_best(&c); break; }
                if (r == SR_INFEASIBLE) { LB = cap + c.g; if (sr_global_lo(&c) > LB) LB = sr_global_lo(&c); break; }
                if (r == SR_TIMEOUT || c.oom) break;
            }
            if (LB > UB) LB = UB;
            c.show_lb = LB; c.show_ub = UB;
            if (LB >= UB) done = true;
            if (c.timed_out || c.oom) break;
        }
    }
    if (c.oom) { bp__assign_search_free(&c); return bp__err(err, BP_ERR_NOMEM, "search: out of memory"); }
    if (c.printed) fprintf(stderr, "\r%70s\r", "");
    /* the best packing of every part */
    for (uint32_t b = 0; b < c.k; b++) offsets[c.orig[b]] = c.best[b];
    res->nodes = c.nodes;
    if (capacity) {
        res->fits = fits;
        if (fits == 0 && LB <= capacity) LB = capacity + c.g;
    }
    uint64_t arena = sr_global_best(&c);
    res->arena_bytes = arena;
    if (LB > arena) LB = arena;
    if (LB > res->lower_bound) res->lower_bound = LB;
    res->optimal = res->lower_bound >= arena;
    bp__assign_search_free(&c);
    return BP_OK;
}
