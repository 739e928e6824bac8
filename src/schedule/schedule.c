/*
 * schedule.c — the scheduler dispatch: given and kahn without a budget run
 * directly (order.c); every other scheduler, and any with a budget, goes
 * through the budget search (budget.c), which calls the memory-aware
 * schedulers (greedy.c, best.c, optimal.c).
 */
#include "graph/graph_internal.h"
#include "schedule/schedule_internal.h"

bp_status bp_schedule(const bp_graph *g, const bp_plan_options *opts, int32_t *order, bp_error *err)
{
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized", g->name);
    /* given and kahn without a budget run here; everything else (and any
     * scheduler with a budget) goes through bp_schedule_ex (budget.c). */
    switch (opts->sched) {
    case BP_SCHED_GIVEN: if (!opts->budget) return bp__sched_given(g, order, err); break;
    case BP_SCHED_KAHN: if (!opts->budget) return bp__sched_kahn(g, order, err); break;
    default: break;
    }
    return bp_schedule_ex(g, opts, order, NULL, err);
}
