/*
 * search_driver.c — `search`, the exact anytime assigner, from the outside:
 * an incumbent first (bestfit, then bestfit's greedy passes for a tenth of
 * the time limit, never worse than bestfit), then the branch-and-bound of
 * search.c started from it (bp__assign_search_core).  It sits above bestfit
 * so that search.c, which bestfit's probes call, never calls back up.
 */
#include "assign/assign_internal.h"

#include <string.h>

bp_status bp__assign_search(const bp_interval *iv, size_t n, const bp_assign_options *o,
                            uint64_t *offsets, bp_assign_result *res, bp_error *err)
{
    return bp__assign_search_ex(iv, n, o, 0, offsets, res, err);
}

bp_status bp__assign_search_ex(const bp_interval *iv, size_t n, const bp_assign_options *o, uint64_t max_nodes,
                               uint64_t *offsets, bp_assign_result *res, bp_error *err)
{
    double t0 = bp__now();
    double limit_s = o && o->time_limit > 0 ? o->time_limit : 0;
    /* incumbent phase: bestfit's every order, then greedy passes for up to
     * a tenth of the time limit (half a second without one); with a node
     * budget, on the greedy's work budget alone */
    double inc_deadline = max_nodes ? 0 : t0 + (limit_s > 0 ? limit_s * 0.1 : 0.5);
    bp_status st = bp__assign_bestfit(iv, n, o, offsets, res, err);
    if (st != BP_OK) return st;
    if (res->arena_bytes > res->lower_bound) {
        /* never worse than bestfit: its answer stays unless beaten */
        uint64_t *alt = bp__alloc(bp__assign_alloc(o), (n ? n : 1) * sizeof *alt);
        bp_assign_result r2 = *res;
        if (!alt) return bp__err(err, BP_ERR_NOMEM, "search: out of memory for %zu intervals", n);
        st = bp__assign_bestfit_ex(iv, n, o, 1, inc_deadline, alt, &r2, err);
        if (st == BP_OK && r2.arena_bytes < res->arena_bytes) {
            memcpy(offsets, alt, n * sizeof *offsets);
            res->arena_bytes = r2.arena_bytes;
        }
        bp__free(bp__assign_alloc(o), alt, (n ? n : 1) * sizeof *alt);
        if (st != BP_OK) return st;
    }
    return bp__assign_search_core(iv, n, o, max_nodes, t0, offsets, res, err);
}
