/*
 * lifetime.c — live intervals for an order, over the storages (alias groups)
 * of graph/storage.c.
 *
 * 2. Intervals for an order (bp__lifetimes_compute): a tensor lives from its
 *    producer's step to its last consumer's step, inclusive; graph outputs to
 *    the final step; unread tensors only at their producer's step.  A storage
 *    lives over the union of its members.  Then, walking the order, an op may
 *    write an output over an input (explicit inplace hint, or a pair the
 *    engine profile allows: graph/engine.c; by default an element-wise op) when the input's storage is planned, holds no graph output (it is
 *    pinned), is read by no later op, and the sizes match: the output joins
 *    that storage.  The output may itself be a graph output, also at the
 *    final step: there "read by no later op" proves nothing (a pinned
 *    storage ends there too), so the pinned flag is what makes it sound.
 *    The schedulers' evaluator (schedule/eval.c) merges by the same rule,
 *    so both give the same peak.
 *    With concat_inplace, a merged Concat's output is never written over an
 *    input, nor is an input that starts inside its storage (an offset).
 * 3. The lower bound (bp__lifetimes_peak): a difference array over steps of
 *    the aligned storage sizes, O(T + N).
 */
#include "graph/engine.h"
#include "plan/plan_internal.h"

#include <string.h>

void bp__lifetimes_free(const bp_graph *g, bp__lifetimes *lt)
{
    const bp_allocator *a = &g->alloc;
    bp__free(a, lt->step, g->n_o * sizeof *lt->step);
    bp__free(a, lt->first, g->n_t * sizeof *lt->first);
    bp__free(a, lt->last, g->n_t * sizeof *lt->last);
    bp__free(a, lt->root, g->n_t * sizeof *lt->root);
    bp__free(a, lt->sfirst, g->n_t * sizeof *lt->sfirst);
    bp__free(a, lt->slast, g->n_t * sizeof *lt->slast);
    bp__free(a, lt->ssize, g->n_t * sizeof *lt->ssize);
    bp__free(a, lt->planned, g->n_t);
    memset(lt, 0, sizeof *lt);
}

/* Every op runs after the producers of its inputs (step[] complete). */
static bp_status order_topological(const bp_graph *g, const int32_t *step, bp_error *err)
{
    for (size_t o = 0; o < g->n_o; o++) {
        const int32_t *in = bp__op_in(g, (int32_t)o);
        for (int i = 0; i < g->o[o].n_in; i++) {
            int32_t pr = g->t[in[i]].producer;
            if (pr >= 0 && step[pr] >= step[o])
                return bp__err(err, BP_ERR_USAGE, "%s: the order is not topological: op \"%s\" at step %d reads \"%s\", made by op \"%s\" at step %d",
                               g->name, bp__names_get(&g->onames, (int32_t)o), step[o], bp__names_get(&g->tnames, in[i]),
                               bp__names_get(&g->onames, pr), step[pr]);
        }
    }
    return BP_OK;
}

/* Fills step[] from order and checks it is a permutation of the ops that
 * runs every op after the producers of its inputs. */
static bp_status order_steps(const bp_graph *g, const int32_t *order, int32_t *step, bp_error *err)
{
    size_t no = g->n_o;
    for (size_t i = 0; i < no; i++) step[i] = -1;
    for (size_t s = 0; s < no; s++) {
        int32_t op = order[s];
        if (op < 0 || (size_t)op >= no)
            return bp__err(err, BP_ERR_USAGE, "%s: order[%zu] = %d is not an op id", g->name, s, op);
        if (step[op] >= 0)
            return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\" appears twice in the order", g->name, bp__names_get(&g->onames, op));
        step[op] = (int32_t)s;
    }
    return order_topological(g, step, err);
}

/* Own intervals of every tensor (the definition in docs/ARCHITECTURE.md). */
static void tensor_intervals(const bp_graph *g, const int32_t *step, int32_t *first, int32_t *last)
{
    int32_t final_step = (int32_t)g->n_o - 1;
    for (size_t t = 0; t < g->n_t; t++) {
        const bp__tensor *x = &g->t[t];
        int32_t f = x->producer >= 0 ? step[x->producer] : -1, l = f;
        for (int32_t c = g->cons_off[t]; c < g->cons_off[t + 1]; c++) {
            int32_t s = step[g->cons[c]];
            if (f < 0) f = 0; /* external tensors are there from the start */
            if (s > l) l = s;
        }
        if ((x->flags & BP_TENSOR_OUTPUT) && f >= 0) l = final_step;
        if ((x->flags & BP_TENSOR_OUTPUT) && f < 0 && x->producer < 0) { f = 0; l = final_step; }
        first[t] = f;
        last[t] = l;
    }
}

bp_status bp_lifetimes(const bp_graph *g, const int32_t *order, int32_t *first, int32_t *last, bp_error *err)
{
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized", g->name);
    int32_t *step = bp__alloc(&g->alloc, (g->n_o ? g->n_o : 1) * sizeof *step);
    if (!step) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    bp_status s = order_steps(g, order, step, err);
    if (!s) tensor_intervals(g, step, first, last);
    bp__free(&g->alloc, step, g->n_o * sizeof *step);
    return s;
}

/* May op write output `out` over input `in` (storage root r) at step s?
 * pinned[r]: the storage holds a graph output (so it is never freed). */
static bool inplace_ok(const bp_graph *g, const bp__lifetimes *lt, const uint8_t *pinned, int32_t s, int32_t out,
                       int32_t in, int32_t r)
{
    if (!lt->planned[r] || !lt->planned[out] || lt->root[out] != out) return false;
    if ((lt->cat && lt->cat[out]) || (lt->voff && lt->voff[in])) return false;   /* as the evaluator: slices stay put */
    if (r == out || lt->slast[r] != s || pinned[r]) return false;
    if (g->t[in].flags & BP_TENSOR_OUTPUT) return false;
    if (g->t[out].bytes != g->t[in].bytes || g->t[out].bytes > lt->ssize[r]) return false;
    return true;
}

/* Merges out's storage into r's. */
static void inplace_merge(bp__lifetimes *lt, uint8_t *pinned, int32_t out, int32_t r)
{
    lt->root[out] = r;
    pinned[r] |= pinned[out];
    if (lt->sfirst[out] < lt->sfirst[r]) lt->sfirst[r] = lt->sfirst[out];
    if (lt->slast[out] > lt->slast[r]) lt->slast[r] = lt->slast[out];
}

/* The in-place walk over the order (explicit hints first, then element-wise
 * ops), merging storages in lt->root; every root path is compressed at the
 * end.  Returns BP_ERR_NOMEM before any merge when its arrays cannot be
 * allocated. */
static bp_status inplace_pass(const bp_graph *g, const bp__etab *et, const int32_t *order, bp__lifetimes *lt)
{
    const bp_allocator *a = &g->alloc;
    size_t nt = g->n_t, no = g->n_o;
    bool hints = g->n_inpl && bp__etab_hints(et);
    int32_t *hint_out = hints ? bp__alloc(a, no * sizeof *hint_out) : NULL;
    int32_t *hint_in = hints ? bp__alloc(a, no * sizeof *hint_in) : NULL;
    uint8_t *pinned = bp__calloc(a, nt ? nt : 1, 1);
    bp_status s = BP_OK;
    if (!pinned || (hints && (!hint_out || !hint_in))) { s = BP_ERR_NOMEM; goto done; }
    for (size_t t = 0; t < nt; t++)
        if (g->t[t].flags & BP_TENSOR_OUTPUT) pinned[bp__storage_find(lt->root, (int32_t)t)] = 1;
    if (hint_out) {
        for (size_t i = 0; i < no; i++) hint_out[i] = -1;
        for (size_t i = 0; i < g->n_inpl; i++) {
            hint_out[g->inpl[i].op] = g->inpl[i].out;
            hint_in[g->inpl[i].op] = g->inpl[i].in;
        }
    }
    for (size_t si = 0; si < no; si++) {
        int32_t op = order[si], step = (int32_t)si;
        const bp__op *x = &g->o[op];
        if (hint_out && hint_out[op] >= 0) {
            int32_t out = hint_out[op], in = hint_in[op], r = bp__storage_find(lt->root, in);
            if (inplace_ok(g, lt, pinned, step, out, in, r)) inplace_merge(lt, pinned, out, r);
            continue;
        }
        int32_t outs[BP__IP_CAP], ins[BP__IP_CAP];
        int n = x->n_in ? bp__etab_inplace(g, et, op, outs, ins, BP__IP_CAP) : 0;
        for (int i = 0; i < n; i++) {   /* all of one output (engine.c): one write per op */
            int32_t r = bp__storage_find(lt->root, ins[i]);
            if (inplace_ok(g, lt, pinned, step, outs[i], ins[i], r)) { inplace_merge(lt, pinned, outs[i], r); break; }
        }
    }
    for (size_t t = 0; t < nt; t++) bp__storage_find(lt->root, (int32_t)t);
done:
    bp__free(a, hint_out, no * sizeof *hint_out);
    bp__free(a, hint_in, no * sizeof *hint_in);
    bp__free(a, pinned, nt ? nt : 1);
    return s;
}

bp_status bp__lifetimes_compute(const bp_graph *g, const bp_plan_options *o, const bp__storage *st,
                                const int32_t *order, bp__lifetimes *lt, bp_error *err)
{
    const bp_allocator *a = &g->alloc;
    size_t nt = g->n_t, no = g->n_o, nt1 = nt ? nt : 1;
    memset(lt, 0, sizeof *lt);
    lt->step = bp__alloc(a, no * sizeof *lt->step);
    lt->first = bp__alloc(a, nt1 * sizeof *lt->first);
    lt->last = bp__alloc(a, nt1 * sizeof *lt->last);
    lt->root = bp__alloc(a, nt1 * sizeof *lt->root);
    lt->sfirst = bp__alloc(a, nt1 * sizeof *lt->sfirst);
    lt->slast = bp__alloc(a, nt1 * sizeof *lt->slast);
    lt->ssize = bp__alloc(a, nt1 * sizeof *lt->ssize);
    lt->planned = bp__alloc(a, nt1);
    if (!lt->step || !lt->first || !lt->last || !lt->root || !lt->sfirst || !lt->slast || !lt->ssize || !lt->planned) {
        bp__lifetimes_free(g, lt);
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory computing lifetimes", g->name);
    }
    bp_status s = order_steps(g, order, lt->step, err);
    if (s) { bp__lifetimes_free(g, lt); return s; }
    tensor_intervals(g, lt->step, lt->first, lt->last);

    memcpy(lt->root, st->root, nt * sizeof *lt->root);
    lt->voff = st->off;
    lt->cat = st->cat;
    for (size_t t = 0; t < nt; t++) {
        lt->sfirst[t] = INT32_MAX;
        lt->slast[t] = -1;
        lt->ssize[t] = g->t[t].bytes;
        lt->planned[t] = st->planned[t];
    }
    for (size_t t = 0; t < nt; t++) {
        int32_t r = lt->root[t];
        if (lt->first[t] < 0) continue;
        if (lt->first[t] < lt->sfirst[r]) lt->sfirst[r] = lt->first[t];
        if (lt->last[t] > lt->slast[r]) lt->slast[r] = lt->last[t];
    }
    for (size_t t = 0; t < nt; t++)
        if (lt->sfirst[t] == INT32_MAX) lt->sfirst[t] = lt->slast[t] = -1;

    if (!o->no_alias && inplace_pass(g, &st->et, order, lt)) {
        bp__lifetimes_free(g, lt);
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory computing lifetimes", g->name);
    }
    return BP_OK;
}

uint64_t bp__lifetimes_peak(const bp_graph *g, const bp__lifetimes *lt, uint64_t alignment, int32_t *peak_step)
{
    size_t no = g->n_o;
    /* Difference array of signed deltas; sizes fit in int64 after the
     * overflow-checked graph construction for any realistic graph, and the
     * running sum is clamped to saturate instead of wrapping. */
    int64_t *delta = bp__calloc(&g->alloc, no + 1, sizeof *delta);
    if (!delta) { if (peak_step) *peak_step = -1; return UINT64_MAX; }
    for (size_t t = 0; t < g->n_t; t++) {
        if (lt->root[t] != (int32_t)t || !lt->planned[t] || lt->sfirst[t] < 0) continue;
        uint64_t sz = bp__align_up(lt->ssize[t], alignment);
        if (sz > (uint64_t)INT64_MAX / 4) sz = (uint64_t)INT64_MAX / 4;
        delta[lt->sfirst[t]] += (int64_t)sz;
        delta[lt->slast[t] + 1] -= (int64_t)sz;
    }
    int64_t cur = 0, best = 0;
    int32_t best_s = 0;
    for (size_t s = 0; s < no; s++) {
        cur += delta[s];
        if (cur > best) { best = cur; best_s = (int32_t)s; }
    }
    bp__free(&g->alloc, delta, (no + 1) * sizeof *delta);
    if (peak_step) *peak_step = best_s;
    return (uint64_t)best;
}
