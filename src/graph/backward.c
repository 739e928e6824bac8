/*
 * backward.c — bp_graph_append_backward(): append a training backward pass
 * to a finalized forward graph, the way reverse-mode autodiff lays it out,
 * so that planning sees forward activations living until their gradient op.
 *
 * 1. A topological order of the forward ops (Kahn over the consumer index).
 * 2. requires-grad, forward: a float weight (not a constant) requires a
 *    gradient; an op's float outputs require one when any input does.  Graph
 *    inputs, constants and integer/bool tensors never do.
 * 3. Counting pass, in reverse order: a graph output that requires a gradient
 *    gets one contribution (its seed, a new graph input NAME.grad_seed).  An
 *    op gets a gradient op when one of its outputs has a contribution and
 *    one of its inputs requires a gradient; that op contributes once to each
 *    distinct input requiring a gradient.  All consumers of a tensor come
 *    after its producer, so counts are final when the producer is reached.
 * 4. Building pass, same order: op NAME.grad of type TYPE.backward reads the
 *    gradients of its outputs, then the op's forward inputs (the saved
 *    activations, weights too), and writes one contribution per input that
 *    requires a gradient.  Contributions to one tensor are summed with Add
 *    ops in the order they arrive; the final sum (or the only contribution)
 *    is T.grad.  A weight's final gradient is a graph output.
 * Gradients have the forward tensor's shape, dtype and bytes and are never
 * views.  Names that already exist get "#2", "#3", ... appended.  Costs: a
 * gradient op is twice its forward op's cost (unknown stays unknown), an Add
 * one FLOP per element.  O(tensors + op inputs); on error the graph keeps
 * what was appended so far and should be freed.
 */
#include "graph/graph_internal.h"

#include <string.h>

typedef struct bw {
    bp_graph *g;
    bp_error *err;
    const bp_allocator *a;
    char *buf; size_t cap;       /* name scratch */
    int32_t *cnt, *got, *cur;    /* per forward tensor */
} bw;

static bool bw_float(bp_dtype dt)
{
    return dt == BP_DT_UNKNOWN || dt == BP_DT_F64 || dt == BP_DT_F32 || dt == BP_DT_F16 ||
           dt == BP_DT_BF16 || dt == BP_DT_F8;
}

/* buf = BASE SUFFIX [#k], unique in the tensor (ops = false) or op names. */
static bp_status bw_name(bw *b, const char *base, const char *suffix, bool ops)
{
    size_t need = strlen(base) + strlen(suffix) + 32;
    if (!bp__grow(b->a, (void **)&b->buf, &b->cap, need, 1))
        return bp__err(b->err, BP_ERR_NOMEM, "%s: out of memory naming the gradient of \"%s\"", b->g->name, base);
    size_t len = (size_t)snprintf(b->buf, b->cap, "%s%s", base, suffix);
    for (long k = 2; ops ? bp_graph_find_op(b->g, b->buf) >= 0 : bp_graph_find_tensor(b->g, b->buf) >= 0; k++)
        snprintf(b->buf + len, b->cap - len, "#%ld", k);
    return BP_OK;
}

/* A new tensor called buf with the shape, dtype and bytes of forward tensor t. */
static bp_status bw_tensor_like(bw *b, int32_t t, int32_t *id)
{
    bp_graph *g = b->g;
    const bp__tensor x = g->t[t];
    if (!x.has_shape) return bp_graph_add_tensor(g, b->buf, x.bytes, id, b->err);
    int64_t dims[256];
    const char *syms[256];
    for (int i = 0; i < x.rank; i++) {
        int64_t d = g->dims[x.dims_off + i];
        syms[i] = NULL;
        if (bp__dim_is_sym(d)) {
            syms[i] = bp__names_get(&g->syms, bp__dim_sym(d));  /* existing names: the pool does not move */
            d = BP_DIM_SYMBOLIC;
        }
        dims[i] = d;
    }
    return bp_graph_add_tensor_shape(g, b->buf, (bp_dtype)x.dtype, x.rank, dims, syms, id, b->err);
}

static double bw_elems(const bp_graph *g, int32_t t)
{
    size_t es = bp_dtype_size((bp_dtype)g->t[t].dtype);
    return (double)g->t[t].bytes / (double)(es ? es : 4);
}

/* Adds contribution c to forward tensor t's gradient. */
static bp_status bw_contribute(bw *b, int32_t t, int32_t c)
{
    int32_t k = ++b->got[t];
    if (k == 1) { b->cur[t] = c; return BP_OK; }
    bp_graph *g = b->g;
    char suffix[48];
    if (k == b->cnt[t]) snprintf(suffix, sizeof suffix, ".grad");
    else snprintf(suffix, sizeof suffix, ".grad.sum%d", k);
    bp_status s = bw_name(b, bp__names_get(&g->tnames, t), suffix, false);
    int32_t sum = -1, op, in[2] = {b->cur[t], c};
    if (!s) s = bw_tensor_like(b, t, &sum);
    snprintf(suffix, sizeof suffix, ".grad.add%d", k);
    if (!s) s = bw_name(b, bp__names_get(&g->tnames, t), suffix, true);
    if (!s) s = bp_graph_add_op(g, b->buf, "Add", 2, in, 1, &sum, bw_elems(g, t) * 1e-9 + 1e-9, &op, b->err);
    if (!s) b->cur[t] = sum;
    return s;
}

bp_status bp_graph_append_backward(bp_graph *g, bp_error *err)
{
    if (!g) return bp__err(err, BP_ERR_USAGE, "append_backward: graph is NULL");
    if (g->n_bodies)
        return bp__err(err, BP_ERR_UNSUPPORTED, "%s: the graph has control flow; a backward pass through If, Loop or Scan bodies is not supported",
                       g->name);
    bp_status s = bp_graph_finalize(g, err);
    if (s) return s;
    const bp_allocator *a = &g->alloc;
    size_t nt = g->n_t, no = g->n_o, max_io = 0;
    for (size_t o = 0; o < no; o++)
        if ((size_t)g->o[o].n_in + g->o[o].n_out > max_io) max_io = (size_t)g->o[o].n_in + g->o[o].n_out;

    bw b = {.g = g, .err = err, .a = a};
    int32_t *order = bp__alloc(a, no * sizeof *order);
    int32_t *indeg = bp__calloc(a, no, sizeof *indeg);
    uint8_t *req = bp__calloc(a, nt, 1);
    uint8_t *gop = bp__calloc(a, no, 1);
    int32_t *stamp = bp__alloc(a, nt * sizeof *stamp);
    int32_t *ins = bp__alloc(a, (max_io + 1) * sizeof *ins);
    int32_t *outs = bp__alloc(a, (max_io + 1) * sizeof *outs);
    int32_t *gin = bp__alloc(a, (max_io + 1) * sizeof *gin);  /* forward inputs needing a gradient */
    b.cnt = bp__calloc(a, nt, sizeof *b.cnt);
    b.got = bp__calloc(a, nt, sizeof *b.got);
    b.cur = bp__alloc(a, nt * sizeof *b.cur);
    if (!order || !indeg || !req || !gop || !stamp || !ins || !outs || !gin || !b.cnt || !b.got || !b.cur) {
        s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory appending the backward pass", g->name);
        goto done;
    }

    /* 1. Topological order (the graph is acyclic: finalize checked). */
    size_t qh = 0, qt = 0;
    for (size_t o = 0; o < no; o++)
        for (int i = 0; i < g->o[o].n_in; i++)
            if (g->t[bp__op_in(g, (int32_t)o)[i]].producer >= 0) indeg[o]++;
    for (size_t o = 0; o < no; o++) if (!indeg[o]) order[qt++] = (int32_t)o;
    while (qh < qt) {
        int32_t o = order[qh++];
        for (int i = 0; i < g->o[o].n_out; i++) {
            int32_t t = bp__op_out(g, o)[i];
            for (int32_t c = g->cons_off[t]; c < g->cons_off[t + 1]; c++)
                if (--indeg[g->cons[c]] == 0) order[qt++] = g->cons[c];
        }
    }

    /* 2. requires-grad. */
    for (size_t t = 0; t < nt; t++) {
        const bp__tensor *x = &g->t[t];
        b.cur[t] = -1;
        stamp[t] = -1;
        req[t] = x->producer < 0 && (x->flags & BP_TENSOR_WEIGHT) && !(x->flags & (BP_TENSOR_CONST | BP_TENSOR_INPUT)) &&
                 !x->is_const && bw_float((bp_dtype)x->dtype);
    }
    for (size_t k = 0; k < no; k++) {
        int32_t o = order[k];
        bool any = false;
        for (int i = 0; i < g->o[o].n_in; i++) any |= req[bp__op_in(g, o)[i]] != 0;
        if (!any) continue;
        for (int i = 0; i < g->o[o].n_out; i++) {
            const bp__tensor *x = &g->t[bp__op_out(g, o)[i]];
            req[bp__op_out(g, o)[i]] = !(x->flags & BP_TENSOR_CONST) && !x->is_const && bw_float((bp_dtype)x->dtype);
        }
    }

    /* 3. Counting pass. */
    for (size_t t = 0; t < nt; t++)
        if (req[t] && (g->t[t].flags & BP_TENSOR_OUTPUT) && g->t[t].producer >= 0) b.cnt[t] = 1;
    for (size_t k = no; k-- > 0;) {
        int32_t o = order[k];
        bool out_g = false, in_r = false;
        for (int i = 0; i < g->o[o].n_out; i++) out_g |= b.cnt[bp__op_out(g, o)[i]] > 0;
        for (int i = 0; i < g->o[o].n_in; i++) in_r |= req[bp__op_in(g, o)[i]] != 0;
        if (!out_g || !in_r) continue;
        gop[o] = 1;
        for (int i = 0; i < g->o[o].n_in; i++) {
            int32_t t = bp__op_in(g, o)[i];
            if (req[t] && stamp[t] != o) { stamp[t] = o; b.cnt[t]++; }
        }
    }
    for (size_t t = 0; t < nt; t++) stamp[t] = -1;

    /* 4a. Seeds for graph outputs, first in arrival order. */
    for (size_t t = 0; t < nt && !s; t++) {
        if (!(req[t] && (g->t[t].flags & BP_TENSOR_OUTPUT) && g->t[t].producer >= 0)) continue;
        int32_t id = -1;
        s = bw_name(&b, bp__names_get(&g->tnames, (int32_t)t), ".grad_seed", false);
        if (!s) s = bw_tensor_like(&b, (int32_t)t, &id);
        if (!s) s = bp_graph_mark(g, id, BP_TENSOR_INPUT, err);
        if (!s) s = bw_contribute(&b, (int32_t)t, id);
    }

    /* 4b. Gradient ops, reverse topological order. */
    for (size_t k = no; k-- > 0 && !s;) {
        int32_t o = order[k];
        if (!gop[o]) continue;
        int n_in = 0, n_out = 0, n_gin = 0;
        for (int i = 0; i < g->o[o].n_out; i++) {
            int32_t t = bp__op_out(g, o)[i];
            if (b.cnt[t] > 0) ins[n_in++] = b.cur[t];
        }
        for (int i = 0; i < g->o[o].n_in; i++) {
            int32_t t = bp__op_in(g, o)[i];
            if (stamp[t] == o) continue;
            stamp[t] = o;
            ins[n_in++] = t;
            if (req[t]) gin[n_gin++] = t;
        }
        if (n_in > 65535) {
            s = bp__err(err, BP_ERR_LIMIT, "%s: op \"%s\": its gradient op would have %d inputs (at most 65535)",
                        g->name, bp__names_get(&g->onames, o), n_in);
            break;
        }
        for (int i = 0; i < n_gin && !s; i++) {
            int32_t t = gin[i];
            char suffix[32];
            if (b.cnt[t] == 1) snprintf(suffix, sizeof suffix, ".grad");
            else snprintf(suffix, sizeof suffix, ".grad.%d", b.got[t] + 1);
            s = bw_name(&b, bp__names_get(&g->tnames, t), suffix, false);
            if (!s) s = bw_tensor_like(&b, t, &outs[n_out++]);
        }
        if (s) break;
        /* The type string lives in the graph's pool: copy it before naming. */
        const char *type = bp__names_get(&g->types, g->o[o].type);
        size_t tl = strlen(type);
        s = bw_name(&b, bp__names_get(&g->onames, o), ".grad", true);
        if (s) break;
        size_t nl = strlen(b.buf);
        if (!bp__grow(a, (void **)&b.buf, &b.cap, nl + tl + 16, 1)) {
            s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory appending the backward pass", g->name);
            break;
        }
        char *tbuf = b.buf + nl + 1;
        memcpy(tbuf, bp__names_get(&g->types, g->o[o].type), tl);
        memcpy(tbuf + tl, ".backward", 10);
        double cost = g->o[o].cost > 0 ? 2.0 * g->o[o].cost : 0.0;
        s = bp_graph_add_op(g, b.buf, tbuf, n_in, ins, n_out, outs, cost, NULL, err);
        for (int i = 0; i < n_gin && !s; i++) s = bw_contribute(&b, gin[i], outs[i]);
    }

    /* Weight gradients are graph outputs. */
    for (size_t t = 0; t < nt && !s; t++)
        if (g->t[t].producer < 0 && req[t] && b.cnt[t] > 0) s = bp_graph_mark(g, b.cur[t], BP_TENSOR_OUTPUT, err);
    if (!s) s = bp_graph_finalize(g, err);

done:
    bp__free(a, order, no * sizeof *order);
    bp__free(a, indeg, no * sizeof *indeg);
    bp__free(a, req, nt);
    bp__free(a, gop, no);
    bp__free(a, stamp, nt * sizeof *stamp);
    bp__free(a, ins, (max_io + 1) * sizeof *ins);
    bp__free(a, outs, (max_io + 1) * sizeof *outs);
    bp__free(a, gin, (max_io + 1) * sizeof *gin);
    bp__free(a, b.cnt, nt * sizeof *b.cnt);
    bp__free(a, b.got, nt * sizeof *b.got);
    bp__free(a, b.cur, nt * sizeof *b.cur);
    bp__free(a, b.buf, b.cap);
    return s;
}
