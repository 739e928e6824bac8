/*
 * cost_model.c — how long an op takes.
 *
 * Cost: the graph's `cost` when it is > 0; otherwise a roofline estimate,
 * max(FLOPs / 1e12 per s, bytes moved / 1e11 per s), in microseconds.  FLOPs
 * by op type: convolutions 2 * output elements * (weight elements / output
 * channels); matrix products 2 * output elements * the reduced dimension (the
 * last dimension of the first input); everything else one per output
 * element.  Bytes: all inputs and outputs.
 *
 * What the costs mean for an order (makespan, the alpha sweep) is in
 * makespan.c.
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
