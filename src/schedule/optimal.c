/*
 * optimal.c — `optimal`: the exact search alone, for small graphs.
 *
 * The upper bound comes from the fast orders (the portfolio of `best`); then
 * the dynamic program over sets of scheduled ops (best.c) looks for
 * an order with a lower peak, keeping only states below the bound.  When it
 * finishes without hitting its state cap or the work limit (opts->time_limit),
 * the result is proven optimal: either it found the best order below the
 * bound, or none exists and the portfolio's order is optimal.  The proof also
 * needs the step model to be exact for the graph (sg->dp_exact: views made
 * by ops that read their source, in-place writes that keep sizes).  A peak
 * equal to the portfolio's lower bound (the largest op's working set, the
 * pinned outputs, the forced-live bound) is optimal without any search.
 * The search stops at opts->time_limit by its work count or, where that
 * runs slow, by the clock; then the result is the portfolio's order (or a
 * better one the search found), not proven.  It is never worse than the
 * portfolio: only a lower peak replaces its order.
 */
#include "schedule/schedule_internal.h"

#include <string.h>

bp_status bp__sched_optimal(bp__sched_env *env, const bp_plan_options *o, int32_t *order, bp_schedule_info *info,
                            bp_error *err)
{
    const bp_graph *g = env->sg.g;
    const bp_allocator *a = &g->alloc;
    size_t n1 = g->n_o + 1;
    int32_t n = (int32_t)g->n_o;
    bp_status st = BP_OK;
    int32_t *all = bp__alloc(a, n1 * sizeof *all), *out = bp__alloc(a, n1 * sizeof *out);
    if (!all || !out) { st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory scheduling", g->name); goto done; }
    uint64_t work = 0;
    const char *nm = NULL;
    double tl = o->time_limit > 0 ? o->time_limit : 10.0, deadline = bp__now() + tl;
    uint64_t lb = 0, ub = bp__sched_portfolio(&env->sg, &env->ev, o, env->cost, order, &nm, &work, &lb, err);
    if (ub == UINT64_MAX) { st = err ? err->status : BP_ERR_INVALID; goto done; }
    int proven = ub <= lb;
    uint64_t states = 0;
    if (!proven) {
        uint64_t limit = (uint64_t)(tl * 2e8) + 1; /* never 0: that would be no limit */
        size_t cap = bp__sched_optimal_cap(n);
        for (int32_t i = 0; i < n; i++) all[i] = i;
        bp__dp_result r;
        int ok = bp__sched_dp(&env->sg, &env->sim, all, n, ub, cap, &work, limit, deadline, out, &r);
        states = r.states;
        if (ok < 0) { st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory in the exact search", g->name); goto done; }
        if (ok == 1) {
            uint64_t p = bp__eval_peak(&env->ev, out, NULL);
            if (p < ub) { memcpy(order, out, (size_t)n * sizeof *order); ub = p; nm = "dp"; }
        }
        proven = r.proven && env->sg.dp_exact;
    }
    if (info) {
        info->optimal = proven;
        info->lower_bound = proven ? ub : lb;
        info->states = states;
        info->picked = nm;
    }
done:
    bp__free(a, all, n1 * sizeof *all);
    bp__free(a, out, n1 * sizeof *out);
    return st;
}
