/*
 * limits.c — a graph's resource limits (include/bufplan_limits.h): set and
 * read them, and the total-bytes check that keeps the planners' sums from
 * overflowing.
 */
#include "graph/graph_internal.h"
#include "bufplan_limits.h"

bp_status bp_graph_set_limits(bp_graph *g, const bp_limits *l, bp_error *err)
{
    if (!g || !l) return bp__err(err, BP_ERR_USAGE, "bp_graph_set_limits: NULL argument");
    if (l->max_rank > 255)
        return bp__err(err, BP_ERR_USAGE, "%s: max_rank %u is over 255, the most a tensor can hold", g->name, l->max_rank);
    g->lim = *l;
    return BP_OK;
}

void bp_graph_get_limits(const bp_graph *g, bp_limits *out)
{
    if (out) *out = g ? g->lim : *bp__limits(NULL);
}

bp_status bp__limits_check_total(const bp_graph *g, bp_error *err)
{
    uint64_t total = 0;
    for (size_t t = 0; t < g->n_t; t++)
        if (!bp__add_u64(total, g->t[t].bytes, &total) || total > g->lim.max_total_bytes)
            return bp__err(err, BP_ERR_LIMIT, "%s: the tensors declare more than %llu bytes in all (bp_limits.max_total_bytes)",
                           g->name, (unsigned long long)g->lim.max_total_bytes);
    return BP_OK;
}
