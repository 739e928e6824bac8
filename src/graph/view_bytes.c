/*
 * view_bytes.c — views within their roots.  A view shares its root's bytes
 * (the root: the end of its view chain), so it may not claim more bytes
 * than the root holds, with one exception: a broadcast view, the output of
 * an expand-like op (aten.expand, aten.as_strided: elements repeat, strides
 * of 0) or any view whose chain passes through one.  Its logical size may
 * exceed its root's, but it never reads past the root, and the executor
 * gives it only the root's bytes.
 *
 * Algorithm: roots and broadcast flags memoised in one pass: each tensor's
 * chain is walked up to the first tensor already resolved (or a tensor that
 * is no view), pushing the tensors met, then resolved on the way back.
 * Every tensor is pushed once: O(T).  Finalize has checked that explicit
 * view_of chains end; op views follow data edges, which finalize has
 * checked acyclic before this runs, so every walk ends.
 */
#include "graph/graph_internal.h"

/* Whether t's own link to its source is a broadcast (its producer is an
 * expand-like op and t is its view output). */
static bool link_is_broadcast(const bp_graph *g, int32_t t)
{
    int32_t pr = g->t[t].producer;
    return pr >= 0 && bp__op_is_broadcast(g, pr);
}

bp_status bp__view_roots(const bp_graph *g, int32_t *root, uint8_t *bcast, bp_error *err)
{
    size_t nt = g->n_t;
    int32_t *stack = bp__alloc(&g->alloc, (nt ? nt : 1) * sizeof *stack);
    if (!stack) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory walking views", g->name);
    for (size_t t = 0; t < nt; t++) root[t] = -1;
    for (size_t t = 0; t < nt; t++) {
        size_t n = 0;
        int32_t v = (int32_t)t;
        while (root[v] < 0) {
            int32_t src = bp__tensor_view_source(g, v);
            if (src < 0) { root[v] = v; bcast[v] = 0; break; }
            if (n == nt) {   /* unreachable: chains end (see above) */
                bp__free(&g->alloc, stack, (nt ? nt : 1) * sizeof *stack);
                return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\": its view chain is a cycle", g->name, bp__names_get(&g->tnames, (int32_t)t));
            }
            stack[n++] = v;
            v = src;
        }
        while (n > 0) {
            int32_t u = stack[--n], src = bp__tensor_view_source(g, u);
            root[u] = root[src];
            bcast[u] = (uint8_t)(bcast[src] || link_is_broadcast(g, u));
        }
    }
    bp__free(&g->alloc, stack, (nt ? nt : 1) * sizeof *stack);
    return BP_OK;
}

bp_status bp__view_info_build(const bp_graph *g, bp__view_info *vi, bp_error *err)
{
    size_t n1 = g->n_t ? g->n_t : 1;
    vi->root = bp__alloc(&g->alloc, n1 * sizeof *vi->root);
    vi->bcast = bp__alloc(&g->alloc, n1);
    bp_status s = vi->root && vi->bcast ? bp__view_roots(g, vi->root, vi->bcast, err)
                                        : bp__err(err, BP_ERR_NOMEM, "%s: out of memory walking views", g->name);
    if (s) bp__view_info_free(g, vi);
    return s;
}

void bp__view_info_free(const bp_graph *g, bp__view_info *vi)
{
    size_t n1 = g->n_t ? g->n_t : 1;
    bp__free(&g->alloc, vi->root, n1 * sizeof *vi->root);
    bp__free(&g->alloc, vi->bcast, n1);
    vi->root = NULL;
    vi->bcast = NULL;
}

bp_status bp__check_view_bytes(const bp_graph *g, bp_error *err)
{
    bp__view_info vi;
    bp_status s = bp__view_info_build(g, &vi, err);
    for (size_t t = 0; t < g->n_t && !s; t++) {
        int32_t r = vi.root[t];
        const bp__tensor *x = &g->t[t], *y = &g->t[r];
        if (r == (int32_t)t || vi.bcast[t] || x->dynamic || y->dynamic || x->bytes <= y->bytes) continue;
        s = bp__err(err, BP_ERR_INVALID,
                    "%s: tensor \"%s\" (%llu bytes) is a view of \"%s\" (%llu bytes) and larger than it; only a broadcast "
                    "view (aten.expand, aten.as_strided) may claim more bytes than its root",
                    g->name, bp__names_get(&g->tnames, (int32_t)t), (unsigned long long)x->bytes,
                    bp__names_get(&g->tnames, r), (unsigned long long)y->bytes);
    }
    if (vi.root) bp__view_info_free(g, &vi);
    return s;
}
