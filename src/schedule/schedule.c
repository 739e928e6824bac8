/*
 * schedule.c — the scheduler dispatch and the two baseline orders.
 *
 * given: the graph's op order, checked to be topological (every input made by
 *        an earlier op or external).
 * kahn:  FIFO topological order: ops become ready when their last producer
 *        runs, and run in the order they became ready (ties by op id).
 * The memory-aware schedulers live in schedule_*.c.
 */
#include "core/internal.h"
#include "schedule/schedule_internal.h"

#include <string.h>

bp_status bp__sched_given(const bp_graph *g, int32_t *order, bp_error *err)
{
    /* Op ids are in file order; an op's input must come from an earlier op. */
    for (size_t op = 0; op < g->n_o; op++) {
        for (int i = 0; i < g->o[op].n_in; i++) {
            int32_t p = g->t[bp__op_in(g, (int32_t)op)[i]].producer;
            if (p >= (int32_t)op)
                return bp__err(err, BP_ERR_INVALID,
                               "%s: the given op order is not topological: op \"%s\" reads \"%s\", which op \"%s\" makes later (use -s kahn or another scheduler)",
                               g->name, bp__names_get(&g->onames, (int32_t)op),
                               bp__names_get(&g->tnames, bp__op_in(g, (int32_t)op)[i]), bp__names_get(&g->onames, p));
        }
        order[op] = (int32_t)op;
    }
    return BP_OK;
}

bp_status bp__sched_kahn(const bp_graph *g, int32_t *order, bp_error *err)
{
    size_t no = g->n_o;
    int32_t *indeg = bp__calloc(&g->alloc, no, sizeof *indeg);
    if (!indeg) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory scheduling", g->name);
    for (size_t op = 0; op < no; op++)
        for (int i = 0; i < g->o[op].n_in; i++)
            if (g->t[bp__op_in(g, (int32_t)op)[i]].producer >= 0) indeg[op]++;
    size_t qh = 0, qt = 0;
    for (size_t op = 0; op < no; op++) if (!indeg[op]) order[qt++] = (int32_t)op;
    while (qh < qt) {
        int32_t op = order[qh++];
        for (int i = 0; i < g->o[op].n_out; i++) {
            int32_t t = bp__op_out(g, op)[i];
            for (int32_t c = g->cons_off[t]; c < g->cons_off[t + 1]; c++)
                if (--indeg[g->cons[c]] == 0) order[qt++] = g->cons[c];
        }
    }
    bp__free(&g->alloc, indeg, no * sizeof *indeg);
    if (qt != no) return bp__err(err, BP_ERR_INVALID, "%s: the graph has a cycle", g->name);
    return BP_OK;
}

static const char *const sched_names[BP_SCHED_COUNT] = {
    "given", "kahn", "dfs", "list", "lpmf", "seed", "best", "optimal",
};

const char *bp_sched_name(bp_sched_kind k) { return (unsigned)k < BP_SCHED_COUNT ? sched_names[k] : "?"; }

int bp_sched_parse(const char *s, bp_sched_kind *out)
{
    for (int i = 0; i < BP_SCHED_COUNT; i++)
        if (strcmp(s, sched_names[i]) == 0) { *out = (bp_sched_kind)i; return 0; }
    return -1;
}

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
