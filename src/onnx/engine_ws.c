/*
 * engine_ws.c — workspaces from an engine profile's formulas
 * (bp_engine_apply_workspaces): for every op whose type has a workspace
 * formula and that has no workspace yet, the formula (the --op-shapes
 * language of formula.c, plus outK[D] for the op's outputs) is evaluated over
 * the op's input and output dims; a positive count of elements times the
 * element size of output 0 becomes its workspace.  Attributes are not kept in
 * a graph, so attr.NAME reads only fail (the op gets none).  One pass over
 * the ops; each formula is compiled once per op type.
 */
#include "graph/engine.h"
#include "onnx/custom.h"

#include <string.h>

/* The value of tensor t as the formula evaluator reads it (dims into d). */
static bp_onnx_value ews_value(const bp_graph *g, int32_t t, int64_t *d)
{
    bp_onnx_value v = {bp_graph_tensor_name(g, t), bp_graph_tensor_dtype(g, t), -1, d};
    int r = g->t[t].has_shape ? bp_graph_tensor_dims(g, t, d, BP_ONNX_MAX_RANK) : -1;
    if (r < 0 || r > BP_ONNX_MAX_RANK) return v;
    for (int i = 0; i < r; i++)
        if (d[i] == BP_DIM_SYMBOLIC) d[i] = -1;   /* a symbol: the result is unknown */
    v.rank = r;
    return v;
}

/* Bytes of op's workspace under formula f, or 0 when it has none. */
static uint64_t ews_eval(const bp_graph *g, int32_t op, const bp__fx *f)
{
    int n_in = g->o[op].n_in, n_out = bp__op_n_out(g, op), n = n_in + n_out;
    if (n > 64 || n_out < 1) return 0;
    bp_onnx_value vals[64];
    int64_t dims[64][BP_ONNX_MAX_RANK];
    for (int i = 0; i < n; i++) {
        int32_t t = i < n_in ? bp__op_in(g, op)[i] : bp__op_out(g, op)[i - n_in];
        vals[i] = ews_value(g, t, dims[i]);
    }
    bp_onnx_node_info info = {"", bp_graph_op_type(g, op), bp_graph_op_name(g, op), n_in, vals, n_out, NULL, NULL};
    int64_t v = 0;
    char msg[256];
    if (bp__fx_eval(f, &info, NULL, &v, msg, sizeof msg) || v <= 0) return 0;
    uint64_t es = bp_dtype_size(bp_graph_tensor_dtype(g, bp__op_out(g, op)[0])), b;
    if (!es || !bp__mul_u64((uint64_t)v, es, &b)) return 0;
    return b;
}

/* Compiles r's formula into *f; BP_ERR_INVALID naming the type. */
static bp_status ews_compile(const bp_graph *g, const bp_engine *e, const bp__eng_op *r, bp__fx *f, bp_error *err)
{
    int col;
    char why[200];
    bp_status s = bp__fx_parse_ex(&g->alloc, r->workspace, strlen(r->workspace), true, f, &col, why, sizeof why);
    if (s == BP_ERR_INVALID)
        return bp__err(err, s, "engine profile \"%s\": op type \"%s\": \"workspace\" formula \"%s\", column %d: %s", e->name, r->type,
                       r->workspace, col, why);
    if (s) return bp__err(err, s, "%s: out of memory compiling workspace formulas", g->name);
    return BP_OK;
}

bp_status bp_engine_apply_workspaces(const bp_engine *e, bp_graph *g, bp_error *err)
{
    if (!e || !g) return bp__err(err, BP_ERR_USAGE, "bp_engine_apply_workspaces: NULL argument");
    bp_status s = g->finalized ? BP_OK : bp_graph_finalize(g, err);
    if (s) return s;
    size_t nty = g->types.n ? g->types.n : 1;
    bp__fx *fx = bp__calloc(&g->alloc, nty, sizeof *fx);
    uint8_t *state = bp__calloc(&g->alloc, nty, 1);   /* 0 not looked at, 1 no formula, 2 compiled */
    if (!fx || !state) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); goto done; }
    bool changed = false;
    for (size_t op = 0; op < g->n_o && !s; op++) {
        int32_t ty = g->o[op].type;
        if (!state[ty]) {
            const bp__eng_op *r = bp__engine_find(e, bp__names_get(&g->types, ty));
            state[ty] = 1;
            if (r && r->workspace) {
                s = ews_compile(g, e, r, &fx[ty], err);
                if (!s) state[ty] = 2;
            }
        }
        if (s || state[ty] != 2 || g->o[op].n_ws) continue;
        uint64_t b = ews_eval(g, (int32_t)op, &fx[ty]);
        if (!b) continue;
        s = bp_graph_set_workspace(g, (int32_t)op, 1, &b, err);
        changed = true;
    }
    if (!s && changed) s = bp_graph_finalize(g, err);
done:
    if (fx)
        for (size_t k = 0; k < nty; k++) if (state && state[k] == 2) bp__fx_free(&g->alloc, &fx[k]);
    bp__free(&g->alloc, fx, nty * sizeof *fx);
    bp__free(&g->alloc, state, nty);
    return s;
}
