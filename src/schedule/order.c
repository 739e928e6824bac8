/*
 * order.c — the two baseline orders.
 *
 * given: the graph's op order, checked to be topological (every input made by
 *        an earlier op or external).
 * kahn:  FIFO topological order: ops become ready when their last producer
 *        runs, and run in the order they became ready (ties by op id).
 */
#include "graph/graph_internal.h"
#include "schedule/schedule_internal.h"

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
