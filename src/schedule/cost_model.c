/*
 * cost_model.c — how long an op takes, and what that means for an order.
 *
 * Cost: the graph's `cost` when it is > 0; otherwise a roofline estimate,
 * max(FLOPs / 1e12 per s, bytes moved / 1e11 per s), in microseconds.  FLOPs
 * by op type: convolutions 2 * output elements * (weight elements / output
 * channels); matrix products 2 * output elements * the reduced dimension (the
 * last dimension of the first input); everything else one per output
 * element.  Bytes: all inputs and outputs.
 *
 * Makespan: list scheduling of an order on N workers — ops are dispatched in
 * the order, each to the worker that is free first, starting when that worker
 * is free and every producer has finished.  A min-heap of worker free times
 * makes it O(V log N + E).
 *
 * The alpha sweep runs the seed scheduler for evenly spaced alpha (beta =
 * 1 - alpha) and reports peak and makespan of each order: the memory/latency
 * trade-off the two weights control.
 */
#include "schedule/schedule_internal.h"

#include <string.h>

static double elems_of(const bp_graph *g, int32_t t)
{
    const bp__tensor *x = &g->t[t];
    if (x->has_shape && !x->dynamic) {
        double e = 1;
        for (int i = 0; i < x->rank; i++) {
            int64_t d = g->dims[x->dims_off + i];
            if (d > 0) e *= (double)d;
        }
        return e;
    }
    size_t es = bp_dtype_size((bp_dtype)x->dtype);
    return (double)x->bytes / (double)(es ? es : 4);
}

static bool type_is(const char *type, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(type, *names) == 0) return true;
    return false;
}

double bp__op_cost(const bp_graph *g, int32_t op)
{
    const bp__op *x = &g->o[op];
    if (x->cost > 0) return x->cost;
    static const char *const convs[] = {"Conv", "ConvTranspose", "aten.convolution", "aten.convolution_backward",
                                        "aten.conv2d", "aten._convolution", NULL};
    static const char *const mms[] = {"MatMul", "Gemm", "aten.mm", "aten.addmm", "aten.bmm", "aten.matmul",
                                      "aten.linear", "aten.baddbmm", "MatMulInteger", "Einsum", NULL};
    const char *type = bp__names_get(&g->types, x->type);
    double out_e = 0, bytes = 0;
    for (int i = 0; i < x->n_out; i++) {
        int32_t t = bp__op_out(g, op)[i];
        out_e += elems_of(g, t);
        bytes += (double)g->t[t].bytes;
    }
    for (int i = 0; i < x->n_in; i++) bytes += (double)g->t[bp__op_in(g, op)[i]].bytes;
    double flops = out_e;
    if (type_is(type, convs) && x->n_in >= 2) {
        const bp__tensor *w = &g->t[bp__op_in(g, op)[1]];
        if (w->has_shape && w->rank >= 1 && g->dims[w->dims_off] > 0)
            flops = 2.0 * out_e * elems_of(g, bp__op_in(g, op)[1]) / (double)g->dims[w->dims_off];
    } else if (type_is(type, mms) && x->n_in >= 1) {
        const bp__tensor *a = &g->t[bp__op_in(g, op)[0]];
        if (a->has_shape && a->rank >= 1) {
            int64_t k = g->dims[a->dims_off + a->rank - 1];
            if (k > 0) flops = 2.0 * out_e * (double)k;
        }
    }
    double c = flops / 1e6, m = bytes / 1e5;
    c = c > m ? c : m;
    return c > 1e-3 ? c : 1e-3;
}

void bp__op_costs(const bp_graph *g, double *cost)
{
    for (size_t v = 0; v < g->n_o; v++) cost[v] = bp__op_cost(g, (int32_t)v);
}

double bp_op_cost(const bp_graph *g, int32_t op)
{
    if (!g || op < 0 || (size_t)op >= g->n_o) return 0;
    return bp__op_cost(g, op);
}

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
