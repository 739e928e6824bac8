/*
 * storage.c — storages (alias groups), independent of the order
 * (bp__storage_build): a tensor's root is the end of its view chain — an
 * explicit view_of, or an output the engine profile makes a view of an input
 * (graph/engine.c; by default output 0 of Reshape, aten.view, ...) — or
 * itself.  A root is planned (in the arena)
 * when an op produces it and it is not dynamic, not a weight/constant, not a
 * graph input (unless plan_inputs).  With concat_inplace, Concat inputs and
 * Split outputs then join their storages at an offset (concat.c).  The
 * schedulers and the lifetimes (plan/lifetime.c) both start from it.
 */
#include "graph/engine.h"
#include "graph/graph_internal.h"

#include <string.h>

void bp__storage_free(const bp_graph *g, bp__storage *st)
{
    bp__free(&g->alloc, st->root, g->n_t * sizeof *st->root);
    bp__free(&g->alloc, st->planned, g->n_t * sizeof *st->planned);
    bp__free(&g->alloc, st->off, (g->n_t ? g->n_t : 1) * sizeof *st->off);
    bp__free(&g->alloc, st->cat, g->n_t ? g->n_t : 1);
    bp__etab_free(g, &st->et);
    st->root = NULL;
    st->planned = NULL;
    st->off = NULL;
    st->cat = NULL;
}

bp_status bp__storage_build(const bp_graph *g, const bp_plan_options *o, bp__storage *st, bp_error *err)
{
    size_t nt = g->n_t;
    st->root = NULL;
    st->planned = NULL;
    st->off = NULL;
    st->cat = NULL;
    memset(&st->et, 0, sizeof st->et);
    bp_status ls = bp__limits_check_total(g, err);   /* sums below cannot overflow */
    if (ls) return ls;
    ls = bp__etab_build(g, o->engine, &st->et, err);
    if (ls) return ls;
    st->root = bp__alloc(&g->alloc, (nt ? nt : 1) * sizeof *st->root);
    st->planned = bp__alloc(&g->alloc, nt ? nt : 1);
    if (!st->root || !st->planned) {
        bp__storage_free(g, st);
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory building storages", g->name);
    }
    for (size_t t = 0; t < nt; t++) {
        int32_t src = o->no_alias ? -1 : bp__etab_view_source(g, &st->et, (int32_t)t);
        st->root[t] = src >= 0 ? src : (int32_t)t;
    }
    /* Chains are acyclic for explicit views (finalize checked) and follow data
     * edges for op views, so find() terminates. */
    for (size_t t = 0; t < nt; t++) bp__storage_find(st->root, (int32_t)t);
    for (size_t t = 0; t < nt; t++) {
        const bp__tensor *x = &g->t[t];
        bool planned;
        if (x->producer >= 0)
            planned = !x->dynamic && (!(x->flags & BP_TENSOR_CONST) || o->plan_constants);
        else
            planned = o->plan_inputs && (x->flags & BP_TENSOR_INPUT) && !x->dynamic;
        st->planned[t] = planned;
    }
    /* A storage is planned when its root is; members follow the root. */
    if (o->concat_inplace && !o->no_alias) {
        bp_status cs = bp__concat_merge(g, st, err);
        if (cs) { bp__storage_free(g, st); return cs; }
    }
    return BP_OK;
}
