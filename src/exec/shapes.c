/*
 * shapes.c — the concrete dims and dtype of every input and output a kernel
 * is called with (bp_exec_call.in_shape / out_shape).  The executor keeps
 * one dims array laid out like the graph's own (each tensor's dims at the
 * same offset), with every symbol replaced by its value, and one
 * bp_exec_shape per op input/output slot pointing into it.  At bp_exec_new
 * the values come from the executor's graph (symbols it leaves unbound stay
 * BP_DIM_SYMBOLIC); bp_exec_set_shapes takes them from another graph with
 * the same tensor names, bound to this run's shapes (the warm-up planner's
 * bp_dyn_result.actual), so a kernel sees the shapes it computes on with a
 * bucket plan (sized for the bucket) and in the conservative branch (a
 * plan of the symbolic graph).  Every tensor is checked first, so a
 * mismatch changes nothing.
 */
#include "exec/exec_internal.h"

#include <string.h>

/* The tensor of src that gives t's shape (t itself when src is the
 * executor's graph), or an error naming the tensor. */
static bp_status sh_match(const bp_exec *ex, const bp_graph *src, int32_t t, int32_t *out, bp_error *err)
{
    const bp_graph *g = ex->g;
    const char *name = bp__names_get(&g->tnames, t);
    int32_t s = src == g ? t : bp_graph_find_tensor(src, name);
    if (s < 0)
        return bp__err(err, BP_ERR_INVALID, "%s: shapes from \"%s\": it has no tensor \"%s\"", g->name, src->name, name);
    int r = g->t[t].has_shape ? g->t[t].rank : -1, rs = bp_graph_tensor_rank(src, s);
    if (r != rs)
        return bp__err(err, BP_ERR_INVALID, "%s: shapes from \"%s\": tensor \"%s\" has rank %d there and %d here", g->name,
                       src->name, name, rs, r);
    *out = s;
    return BP_OK;
}

bp_status bp__exec_shapes_fill(bp_exec *ex, const bp_graph *src, bp_error *err)
{
    const bp_graph *g = ex->g;
    if (!src) src = g;
    for (int32_t t = 0; t < ex->nt; t++) {
        int32_t s;
        bp_status st = sh_match(ex, src, t, &s, err);
        if (st) return st;
    }
    for (int32_t t = 0; t < ex->nt; t++) {
        int32_t s = t;
        sh_match(ex, src, t, &s, NULL);
        const bp__tensor *x = &g->t[t];
        if (x->has_shape) bp_graph_tensor_dims(src, s, ex->tdims + x->dims_off, x->rank);
    }
    for (int32_t op = 0; op < ex->no; op++) {
        const bp__op *x = &g->o[op];
        const int32_t *io = g->io + x->io_off;
        bp_exec_shape *sh = ex->ioshape + ex->io_off[op];
        for (int k = 0; k < x->n_in + x->n_out; k++) {
            const bp__tensor *y = &g->t[io[k]];
            int32_t s = io[k];
            sh_match(ex, src, io[k], &s, NULL);
            sh[k].dtype = bp_graph_tensor_dtype(src, s);
            sh[k].rank = y->has_shape ? y->rank : -1;
            sh[k].dims = y->has_shape ? ex->tdims + y->dims_off : NULL;
        }
    }
    return BP_OK;
}
