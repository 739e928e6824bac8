/*
 * makespan.c — what op costs mean for an order.
 *
 * Makespan: list scheduling of an order on N workers — ops are dispatched in
 * the order, each to the worker that is free first, starting when that worker
 * is free and every producer has finished.  A min-heap of worker free times
 * makes it O(V log N + E).
 *
 * The alpha sweep runs the `seed` scheduler for evenly spaced alpha (beta =
 * 1 - alpha) and reports peak and makespan of each order: the memory/latency
 * trade-off the two weights control.
 */
#include "schedule/schedule_internal.h"

#include <string.h>

/* ---------------------------------------------------------------- makespan */

bp_status bp_schedule_makespan(const bp_graph *g, const int32_t *order, int workers, double *makespan, bp_error *err)
{
    if (!g || !order || !makespan) return bp__err(err, BP_ERR_USAGE, "bp_schedule_makespan: NULL argument");
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized", g->name);
    if (workers < 1) return bp__err(err, BP_ERR_USAGE, "%s: makespan needs at least one worker (got %d)", g->name, workers);
    bp_status s = bp__sched_check_order(g, order, err);
    if (s) return s;
    size_t n = g->n_o, w = (size_t)workers < n ? (size_t)workers : (n ? n : 1);
    double *fin = bp__alloc(&g->alloc, (n ? n : 1) * sizeof *fin);
    double *free_at = bp__calloc(&g->alloc, w, sizeof *free_at); /* min-heap */
    if (!fin || !free_at) {
        bp__free(&g->alloc, fin, (n ? n : 1) * sizeof *fin);
        bp__free(&g->alloc, free_at, w * sizeof *free_at);
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory computing the makespan", g->name);
    }
    double end = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t v = order[k];
        double ready = 0;
        for (int i = 0; i < g->o[v].n_in; i++) {
            int32_t p = g->t[bp__op_in(g, v)[i]].producer;
            if (p >= 0 && fin[p] > ready) ready = fin[p];
        }
        double start = free_at[0] > ready ? free_at[0] : ready;
        fin[v] = start + bp__op_cost(g, v);
        if (fin[v] > end) end = fin[v];
        /* replace the heap's top with the new free time and sift down */
        double x = fin[v];
        size_t i = 0;
        for (;;) {
            size_t l = 2 * i + 1, m = l;
            if (l >= w) break;
            if (l + 1 < w && free_at[l + 1] < free_at[l]) m = l + 1;
            if (free_at[m] >= x) break;
            free_at[i] = free_at[m];
            i = m;
        }
        free_at[i] = x;
    }
    bp__free(&g->alloc, fin, (n ? n : 1) * sizeof *fin);
    bp__free(&g->alloc, free_at, w * sizeof *free_at);
    *makespan = end;
    return BP_OK;
}

/* ------------------------------------------------------------ peak, sweep */

bp_status bp_schedule_peak(const bp_graph *g, const bp_plan_options *opts, const int32_t *order, uint64_t *peak,
                           int32_t *peak_step, bp_error *err)
{
    if (!g || !order || !peak) return bp__err(err, BP_ERR_USAGE, "bp_schedule_peak: NULL argument");
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized", g->name);
    bp_status s = bp__sched_check_order(g, order, err);
    if (s) return s;
    bp__sgraph sg;
    bp__eval ev;
    s = bp__sgraph_build(g, opts, &sg, err);
    if (s) return s;
    s = bp__eval_init(&ev, &sg, err);
    if (!s) {
        *peak = bp__eval_peak(&ev, order, peak_step);
        bp__eval_free(&ev);
    }
    bp__sgraph_free(&sg);
    return s;
}

bp_status bp_schedule_sweep_alpha(const bp_graph *g, const bp_plan_options *opts, int n_points, bp_sweep_point *points,
                                  bp_error *err)
{
    if (!g || !points) return bp__err(err, BP_ERR_USAGE, "bp_schedule_sweep_alpha: NULL argument");
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized", g->name);
    if (n_points < 1) return bp__err(err, BP_ERR_USAGE, "%s: the alpha sweep needs at least one point (got %d)", g->name, n_points);
    bp_plan_options defaults;
    if (!opts) { bp_plan_options_init(&defaults); opts = &defaults; }
    size_t n = g->n_o;
    bp__sgraph sg;
    bp__eval ev;
    bp_status s = bp__sgraph_build(g, opts, &sg, err);
    if (s) return s;
    int32_t *order = bp__alloc(&g->alloc, (n ? n : 1) * sizeof *order);
    double *cost = bp__alloc(&g->alloc, (n ? n : 1) * sizeof *cost);
    s = bp__eval_init(&ev, &sg, err);
    if (!s && (!order || !cost)) s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory in the alpha sweep", g->name);
    if (!s) bp__op_costs(g, cost);
    for (int i = 0; i < n_points && !s; i++) {
        double alpha = n_points == 1 ? opts->alpha : (double)i / (n_points - 1);
        points[i].alpha = alpha;
        points[i].beta = 1.0 - alpha;
        s = bp__sched_seed(&sg, cost, alpha, 1.0 - alpha, 0, order, err);
        if (s) break;
        points[i].peak_bytes = bp__eval_peak(&ev, order, NULL);
        s = bp_schedule_makespan(g, order, opts->threads > 0 ? opts->threads : 1, &points[i].makespan, err);
    }
    bp__eval_free(&ev);
    bp__free(&g->alloc, order, (n ? n : 1) * sizeof *order);
    bp__free(&g->alloc, cost, (n ? n : 1) * sizeof *cost);
    bp__sgraph_free(&sg);
    return s;
}
