/*
 * custom.c — the node walk's hook for nodes the default-domain rules do not
 * cover (graph_walk.c calls it for every node of another domain, and for a
 * default-domain op type that infer.c does not know).  It asks, in order,
 * the caller's shape callback, the --op-shapes formulas (op_shapes.c) and
 * the built-in com.microsoft rules (infer_ms.c); the first that answers sets
 * the outputs.  What the first two give is checked before it is used: ranks
 * in 0..64, sizes up to 2^62, symbol codes of this import, BP_ONNX_DIM_FRESH
 * turned into a fresh symbol, element types bufplan knows.
 */
#include "onnx/custom.h"

#ifdef BP_HAVE_ONNX

#include <string.h>

/* Sets the node's outputs from out[] after checking them. */
static bp_status cu_set_outputs(bp__ox_op *x, bp_onnx_out *out, const char *who)
{
    for (int j = 0; j < x->nd->n_out; j++) {
        bp_onnx_out *o = &out[j];
        if (bp__ox_out(x, j) < 0) continue;
        if (o->rank < -1 || o->rank > BP_ONNX_MAX_RANK)
            return bp__ox_bad(x, "%s: output %d has rank %d (-1..%d)", who, j, o->rank, BP_ONNX_MAX_RANK);
        if ((int)o->dtype < 0 || o->dtype >= BP_DT_COUNT) return bp__ox_bad(x, "%s: output %d has no valid dtype (%d)", who, j, (int)o->dtype);
        for (int d = 0; d < o->rank; d++) {
            int64_t v = o->dims[d];
            if (v == BP_ONNX_DIM_FRESH) BP__OX_FRESH(o->dims[d], j, d);
            else if (v < 0 && v < -(int64_t)x->c->syms.n)
                return bp__ox_bad(x, "%s: output %d, dimension %d: %lld is neither a size nor a symbol of an input", who, j, d, (long long)v);
        }
        bp_status s = bp__ox_set_out(x, j, o->dtype, o->rank, o->rank >= 0 ? o->dims : NULL);
        if (s) return s;
    }
    return BP_OK;
}

/* The callback and the formulas, on the node's public view: BP_OK when one
 * shaped it, BP_ERR_UNSUPPORTED when neither knows it. */
static bp_status cu_user_sources(bp__ox_op *x, const bp_onnx_options *o)
{
    const bp_allocator *a = x->c->a;
    size_t ni = (size_t)x->nd->n_in, no = (size_t)x->nd->n_out;
    bp_onnx_value *vals = bp__calloc(a, ni ? ni : 1, sizeof *vals);
    const char **onames = bp__calloc(a, no ? no : 1, sizeof *onames);
    bp_onnx_out *out = bp__calloc(a, no ? no : 1, sizeof *out);
    bp_status s = BP_ERR_UNSUPPORTED;
    if (!vals || !onames || !out) { s = bp__ox_oom(x->c, x->err); goto done; }
    struct bp_onnx_node h = {*x};
    bp_onnx_node_info info;
    bp__ox_node_view(&h, vals, onames, &info);
    for (int src = 0; src < 2 && s == BP_ERR_UNSUPPORTED; src++) {
        if (src == 0 ? !o->shape_fn : !o->op_shapes) continue;
        bp_dtype dt0 = ni && vals[0].dtype != BP_DT_UNKNOWN ? vals[0].dtype : BP_DT_F32;
        for (size_t j = 0; j < no; j++) { out[j].dtype = dt0; out[j].rank = -1; }
        char msg[512] = "";
        bp_onnx_shape_rc rc = src == 0 ? o->shape_fn(o->shape_user, &info, out, msg, sizeof msg)
                                       : bp__ox_op_shapes_apply(o->op_shapes, &info, out, msg, sizeof msg);
        msg[sizeof msg - 1] = 0;
        const char *who = src == 0 ? "the shape callback" : "--op-shapes";
        if (rc == BP_ONNX_SHAPED) s = cu_set_outputs(x, out, who);
        else if (rc == BP_ONNX_SHAPE_ERROR) s = bp__ox_bad(x, "%s", msg[0] ? msg : "the shape callback failed (no message)");
        else if (rc != BP_ONNX_NOT_MINE) s = bp__ox_bad(x, "%s returned %d (not a bp_onnx_shape_rc)", who, (int)rc);
    }
done:
    bp__free(a, vals, (ni ? ni : 1) * sizeof *vals);
    bp__free(a, onames, (no ? no : 1) * sizeof *onames);
    bp__free(a, out, (no ? no : 1) * sizeof *out);
    return s;
}

/* The default cost: the outputs' elements (as infer.c gives known ops). */
static void cu_default_cost(bp__ox_op *x)
{
    if (x->nd->cost > 0) return;
    double e = 0;
    for (int i = 0; i < x->nd->n_out; i++) {
        int32_t t = bp__ox_out(x, i);
        int64_t n = t >= 0 ? bp__ox_t_numel(x, t) : -1;
        if (n > 0) e += (double)n;
    }
    x->nd->cost = e;
}

bp_status bp__ox_custom_infer(bp__ox *c, int32_t k, bp_error *err)
{
    bp__ox_node *nd = &c->nodes[k];
    bp__ox_op x = {c, k, nd, nd->np, nd->np->op_type, c->opset, err};
    bool ms = bp__ox_ms_knows(&x);
    if (!c->opts->shape_fn && !c->opts->op_shapes && !ms) return BP_ERR_UNSUPPORTED;
    nd->cost = 0;
    bp_status s = c->opts->shape_fn || c->opts->op_shapes ? cu_user_sources(&x, c->opts) : BP_ERR_UNSUPPORTED;
    if (s == BP_ERR_UNSUPPORTED && ms) s = bp__ox_ms_infer(&x);
    if (!s) cu_default_cost(&x);
    return s;
}

#endif /* BP_HAVE_ONNX */
