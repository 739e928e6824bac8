/*
 * eval.c — the objective every scheduler optimises: the peak of an
 * order in the allocator's model, plus the same model stepped op by op.
 *
 * Model (lifetime.c's, which the verifier checks): a storage (planned alias
 * group) is live from its first event — the producer of any member, or step
 * 0 for a read graph input — to its last event (a read or write of any
 * member), or to the final step when a member is a graph output.  An op's
 * inputs and outputs are live together at its step.  Then, in order, an op
 * writes its output over an input whose storage ends at this step (an
 * in-place hint, or an element-wise op trying its inputs in order) when the
 * sizes allow it: the two storages become one, of the input's size.  The
 * input's storage must hold no graph output (pinned), which is what makes
 * this sound at the final step too, where a pinned storage also ends.
 *
 * bp__sgraph precomputes, once, which storages each op touches (CSR), so the
 * evaluator is one pass over the touches, one pass over the in-place
 * candidates with a union-find, and a difference array: O(V + E).
 *
 * bp__sim runs ops one at a time: a storage is allocated at its first touch,
 * freed when its last toucher has run (unless pinned), and an in-place write
 * hands the input's bytes to the output.  For graphs whose views are made by
 * ops that read their source (always the case for view op types) the step
 * model gives exactly the evaluator's peak; sg->exact says so.  It also
 * keeps, per storage, the XOR of its touchers that have not run, so the
 * last one left is found in O(1).
 *
 * At 10^6 ops, first touches of fresh pages dominate: arrays filled before
 * they are read are not zero-filled, and each CSR is built in one pass.
 */
#include "graph/engine.h"
#include "schedule/schedule_internal.h"

#include <string.h>

/* ------------------------------------------------------------ the sgraph */

/* An array of the sgraph.  Zero-filled only when asked: at 10^6 ops the
 * build is dominated by first touches of fresh pages, so arrays that are
 * written in full anyway are not written twice. */
static void *sg_alloc(bp__sgraph *sg, size_t n, size_t elem, bool zero)
{
    if (sg->nblk >= (int)(sizeof sg->blk / sizeof sg->blk[0])) return NULL;
    if (!n) n = 1;
    size_t total;
    if (__builtin_mul_overflow(n, elem, &total)) return NULL;
    void *p = bp__alloc(&sg->g->alloc, total);
    if (!p) return NULL;
    if (zero) memset(p, 0, total);
    sg->blk[sg->nblk] = p;
    sg->blksz[sg->nblk++] = n * elem;
    return p;
}

void bp__sgraph_free(bp__sgraph *sg)
{
    if (!sg->g) return;
    for (int i = 0; i < sg->nblk; i++) bp__free(&sg->g->alloc, sg->blk[i], sg->blksz[i]);
    memset(sg, 0, sizeof *sg);
}

static void *sg_get(bp__sgraph *sg, size_t n, size_t elem) { return sg_alloc(sg, n, elem, false); }
static void *sg_zero(bp__sgraph *sg, size_t n, size_t elem) { return sg_alloc(sg, n, elem, true); }

/* Builds a CSR from (key, value) pairs already counted in off[key+1]. */
static void sg_prefix(int32_t *off, int32_t n)
{
    for (int32_t i = 0; i < n; i++) off[i + 1] += off[i];
}

bp_status bp__sgraph_build(const bp_graph *g, const bp_plan_options *o, bp__sgraph *sg, bp_error *err)
{
    memset(sg, 0, sizeof *sg);
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized", g->name);
    if (g->n_o > (size_t)INT32_MAX / 2 || g->n_t > (size_t)INT32_MAX / 2)
        return bp__err(err, BP_ERR_LIMIT, "%s: too many ops to schedule", g->name);
    bp_plan_options defaults;
    if (!o) { bp_plan_options_init(&defaults); o = &defaults; }
    sg->g = g;
    sg->n = (int32_t)g->n_o;
    sg->align = o->alignment ? o->alignment : 1;
    int32_t n = sg->n, nt = (int32_t)g->n_t;
    bp__storage st = {0};
    bp_status s = bp__storage_build(g, o, &st, err);
    if (s) { sg->g = NULL; return s; }
    int32_t *mark = NULL;
    size_t mark_n = 0;

    sg->tstore = sg_get(sg, (size_t)nt, sizeof *sg->tstore);
    if (!sg->tstore) goto oom;
    int32_t ns = 0;
    for (int32_t t = 0; t < nt; t++) sg->tstore[t] = -1;
    for (int32_t t = 0; t < nt; t++)
        if (st.root[t] == t && st.planned[t]) sg->tstore[t] = ns++;
    for (int32_t t = 0; t < nt; t++)
        if (st.root[t] != t) sg->tstore[t] = st.planned[st.root[t]] ? sg->tstore[st.root[t]] : -1;
    sg->ns = ns;
    sg->sroot = sg_get(sg, (size_t)ns, sizeof *sg->sroot);
    sg->ssize = sg_get(sg, (size_t)ns, sizeof *sg->ssize);
    sg->sbytes = sg_get(sg, (size_t)ns, sizeof *sg->sbytes);
    sg->sflags = sg_zero(sg, (size_t)ns, sizeof *sg->sflags);
    mark_n = (size_t)(ns > n ? ns : n) + 1;
    mark = bp__alloc(&g->alloc, mark_n * sizeof *mark);
    if (!sg->sroot || !sg->ssize || !sg->sbytes || !sg->sflags || !mark) goto oom;
    sg->exact = 1;
    for (int32_t t = 0; t < nt; t++) {
        int32_t y = sg->tstore[t];
        if (y < 0) continue;
        const bp__tensor *x = &g->t[t];
        if (st.root[t] == t) {
            uint64_t sz = bp__align_up(x->bytes, sg->align);
            if (sz > (uint64_t)INT64_MAX / 4) sz = (uint64_t)INT64_MAX / 4; /* as lifetime.c */
            sg->sroot[y] = t;
            sg->ssize[y] = sz;
            sg->sbytes[y] = x->bytes;
        }
        if (x->flags & BP_TENSOR_OUTPUT) sg->sflags[y] |= BP__SF_PINNED;
        if (x->producer < 0 && ((x->flags & BP_TENSOR_OUTPUT) || g->cons_off[t + 1] > g->cons_off[t]))
            sg->sflags[y] |= BP__SF_EXTLIVE;
    }
    /* Exactness of the step model: every view member is made by an op that
     * reads its storage, or is external with an external root. */
    for (int32_t t = 0; t < nt && sg->exact; t++) {
        int32_t y = sg->tstore[t];
        if (y < 0 || st.root[t] == t) continue;
        int32_t p = g->t[t].producer;
        if (p < 0) { if (g->t[st.root[t]].producer >= 0) sg->exact = 0; continue; }
        bool reads = false;
        for (int i = 0; i < g->o[p].n_in; i++) reads |= sg->tstore[bp__op_in(g, p)[i]] == y;
        if (!reads) sg->exact = 0;
    }

    /* Each CSR is filled in one pass over the ops into an array sized for
     * the worst case (the graph's io slots); the unused tail is never
     * touched.  One pass, because the lookups of tensors are cache misses.
     * Touches: op -> distinct storages. */
    size_t n_io = g->n_io ? g->n_io : 1;
    sg->to_off = sg_get(sg, (size_t)n + 1, sizeof *sg->to_off);
    sg->to = sg_get(sg, n_io, sizeof *sg->to);
    if (!sg->to_off || !sg->to) goto oom;
    for (size_t i = 0; i < mark_n; i++) mark[i] = -1;
    sg->to_off[0] = 0;
    for (int32_t v = 0, k = 0; v < n; v++) {
        const bp__op *x = &g->o[v];
        const int32_t *io = g->io + x->io_off;
        for (int i = 0; i < x->n_in + x->n_out; i++) {
            int32_t y = sg->tstore[io[i]];
            if (y < 0 || mark[y] == v) continue;
            mark[y] = v;
            sg->to[k++] = y;
        }
        sg->to_off[v + 1] = k;
    }
    /* storage -> ops */
    sg->so_off = sg_zero(sg, (size_t)ns + 1, sizeof *sg->so_off);
    sg->so = sg_get(sg, (size_t)sg->to_off[n], sizeof *sg->so);
    if (!sg->so_off || !sg->so) goto oom;
    for (int32_t i = 0; i < sg->to_off[n]; i++) sg->so_off[sg->to[i] + 1]++;
    sg_prefix(sg->so_off, ns);
    for (int32_t y = 0; y < ns; y++) mark[y] = sg->so_off[y];
    for (int32_t v = 0; v < n; v++)
        for (int32_t i = sg->to_off[v]; i < sg->to_off[v + 1]; i++) sg->so[mark[sg->to[i]]++] = v;

    /* Predecessors (distinct), then successors from them. */
    sg->pr_off = sg_get(sg, (size_t)n + 1, sizeof *sg->pr_off);
    sg->su_off = sg_zero(sg, (size_t)n + 1, sizeof *sg->su_off);
    sg->pr = sg_get(sg, n_io, sizeof *sg->pr);
    if (!sg->pr_off || !sg->su_off || !sg->pr) goto oom;
    for (size_t i = 0; i < mark_n; i++) mark[i] = -1;
    sg->pr_off[0] = 0;
    for (int32_t v = 0, k = 0; v < n; v++) {
        const int32_t *in = bp__op_in(g, v);
        for (int i = 0; i < g->o[v].n_in; i++) {
            int32_t p = g->t[in[i]].producer;
            if (p < 0 || mark[p] == v) continue;
            mark[p] = v;
            sg->pr[k++] = p;
            sg->su_off[p + 1]++;
        }
        sg->pr_off[v + 1] = k;
    }
    sg_prefix(sg->su_off, n);
    sg->su = sg_get(sg, (size_t)sg->pr_off[n], sizeof *sg->su);
    if (!sg->su) goto oom;
    for (int32_t v = 0; v < n; v++) mark[v] = sg->su_off[v];
    for (int32_t v = 0; v < n; v++)
        for (int32_t i = sg->pr_off[v]; i < sg->pr_off[v + 1]; i++) sg->su[mark[sg->pr[i]]++] = v;

    /* In-place candidates, in lifetime.c's order; the ones that can never
     * pass (static conditions) are left out.  At most one per io slot. */
    sg->ip_off = sg_get(sg, (size_t)n + 1, sizeof *sg->ip_off);
    sg->ip = sg_get(sg, o->no_alias ? 1 : n_io, sizeof *sg->ip);
    if (!sg->ip_off || !sg->ip) goto oom;
    {
        int32_t *hint = mark; /* op -> index of its last hint, or -1 */
        for (int32_t v = 0; v < n; v++) hint[v] = -1;
        if (!o->no_alias && bp__etab_hints(&st.et))
            for (size_t i = 0; i < g->n_inpl; i++) hint[g->inpl[i].op] = (int32_t)i;
        sg->ip_off[0] = 0;
        for (int32_t v = 0, k = 0; v < n; v++) {
            int32_t outs[BP__IP_CAP], ins[BP__IP_CAP];
            int nin = 0;
            if (o->no_alias) {
                nin = 0;
            } else if (hint[v] >= 0) {
                outs[0] = g->inpl[hint[v]].out;
                ins[0] = g->inpl[hint[v]].in;
                nin = 1;
            } else if (g->o[v].n_in > 0) {
                nin = bp__etab_inplace(g, &st.et, v, outs, ins, BP__IP_CAP);
            }
            for (int i = 0; i < nin; i++) {
                int32_t out = outs[i], in = ins[i];
                int32_t so = sg->tstore[out], si = sg->tstore[in];
                if (so < 0 || si < 0 || st.root[out] != out) continue;
                if ((st.cat && st.cat[out]) || (st.off && st.off[in])) continue;   /* as lifetime.c */
                if (g->t[in].flags & BP_TENSOR_OUTPUT) continue;
                if (g->t[out].bytes != g->t[in].bytes) continue;
                sg->ip[k++] = (bp__ipc){out, in, so, si};
            }
            sg->ip_off[v + 1] = k;
        }
    }

    /* Static allocation per op, base, lower bound, dp exactness. */
    sg->alloc_full = sg_get(sg, (size_t)n, sizeof *sg->alloc_full);
    sg->alloc_ip = sg_get(sg, (size_t)n, sizeof *sg->alloc_ip);
    if (!sg->alloc_full || !sg->alloc_ip) goto oom;
    sg->dp_exact = sg->exact;
    uint64_t pinned = 0;
    for (int32_t y = 0; y < ns; y++) {
        if (sg->sflags[y] & BP__SF_EXTLIVE) sg->base += sg->ssize[y];
        if (sg->sflags[y] & BP__SF_PINNED) pinned += sg->ssize[y];
    }
    sg->lb = sg->base > pinned ? sg->base : pinned;
    for (int32_t v = 0; v < n; v++) {
        uint64_t full = 0, touch = 0;
        for (int i = 0; i < g->o[v].n_out; i++) {
            int32_t t = bp__op_out(g, v)[i], y = sg->tstore[t];
            if (y >= 0 && sg->sroot[y] == t && !(sg->sflags[y] & BP__SF_EXTLIVE)) full += sg->ssize[y];
        }
        for (int32_t i = sg->to_off[v]; i < sg->to_off[v + 1]; i++) touch += sg->ssize[sg->to[i]];
        sg->alloc_full[v] = full;
        sg->alloc_ip[v] = full;
        if (sg->ip_off[v + 1] > sg->ip_off[v]) {
            uint64_t so_sz = sg->ssize[sg->ip[sg->ip_off[v]].so];
            sg->alloc_ip[v] = full >= so_sz ? full - so_sz : 0;
            touch -= so_sz;
        }
        for (int32_t i = sg->ip_off[v]; i < sg->ip_off[v + 1]; i++) {
            const bp__ipc *c = &sg->ip[i];
            if (sg->ssize[c->si] != sg->ssize[c->so] || sg->sbytes[c->si] != sg->sbytes[c->so]) sg->dp_exact = 0;
        }
        if (touch > sg->lb) sg->lb = touch;
    }
    bp__free(&g->alloc, mark, mark_n * sizeof *mark);
    bp__storage_free(g, &st);
    return BP_OK;
oom:
    bp__free(&g->alloc, mark, mark_n * sizeof *mark);
    bp__storage_free(g, &st);
    bp__sgraph_free(sg);
    return bp__err(err, BP_ERR_NOMEM, "%s: out of memory preparing the scheduler", g->name);
}

/* --------------------------------------------------------- order checks */

bp_status bp__sched_check_order(const bp_graph *g, const int32_t *order, bp_error *err)
{
    size_t n = g->n_o;
    int32_t *pos = bp__alloc(&g->alloc, (n ? n : 1) * sizeof *pos);
    if (!pos) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    bp_status s = BP_OK;
    for (size_t i = 0; i < n; i++) pos[i] = -1;
    for (size_t i = 0; i < n && !s; i++) {
        int32_t v = order[i];
        if (v < 0 || (size_t)v >= n) s = bp__err(err, BP_ERR_USAGE, "%s: order[%zu] = %d is not an op id", g->name, i, v);
        else if (pos[v] >= 0) s = bp__err(err, BP_ERR_USAGE, "%s: op \"%s\" appears twice in the order", g->name, bp__names_get(&g->onames, v));
        else pos[v] = (int32_t)i;
    }
    for (size_t v = 0; v < n && !s; v++)
        for (int i = 0; i < g->o[v].n_in && !s; i++) {
            int32_t t = bp__op_in(g, (int32_t)v)[i], p = g->t[t].producer;
            if (p >= 0 && pos[p] > pos[v])
                s = bp__err(err, BP_ERR_USAGE, "%s: the order is not topological: op \"%s\" reads \"%s\" before op \"%s\" makes it",
                            g->name, bp__names_get(&g->onames, (int32_t)v), bp__names_get(&g->tnames, t), bp__names_get(&g->onames, p));
        }
    bp__free(&g->alloc, pos, (n ? n : 1) * sizeof *pos);
    return s;
}

/* ------------------------------------------------------------- evaluator */

/* A workspace array, not zero-filled: every user fills what it reads. */
static void *ws_get_raw(const bp_allocator *a, void **blk, size_t *blksz, int *nblk, size_t n, size_t elem)
{
    if (!n) n = 1;
    size_t total;
    if (__builtin_mul_overflow(n, elem, &total)) return NULL;
    void *p = bp__alloc(a, total);
    if (!p) return NULL;
    blk[*nblk] = p;
    blksz[(*nblk)++] = total;
    return p;
}

bp_status bp__eval_init(bp__eval *ev, const bp__sgraph *sg, bp_error *err)
{
    memset(ev, 0, sizeof *ev);
    ev->sg = sg;
    const bp_allocator *a = &sg->g->alloc;
    /* Each evaluation fills what it reads: no zero fill.  pos (the step of
     * each op) is filled by the evaluation only if a caller needs it: none
     * does now, so it is left untouched. */
    ev->pos = ws_get_raw(a, ev->blk, ev->blksz, &ev->nblk, (size_t)sg->n, sizeof *ev->pos);
    ev->sf = ws_get_raw(a, ev->blk, ev->blksz, &ev->nblk, (size_t)sg->ns, sizeof *ev->sf);
    ev->sl = ws_get_raw(a, ev->blk, ev->blksz, &ev->nblk, (size_t)sg->ns, sizeof *ev->sl);
    ev->par = ws_get_raw(a, ev->blk, ev->blksz, &ev->nblk, (size_t)sg->ns, sizeof *ev->par);
    ev->delta = ws_get_raw(a, ev->blk, ev->blksz, &ev->nblk, (size_t)sg->n + 1, sizeof *ev->delta);
    ev->pin = ws_get_raw(a, ev->blk, ev->blksz, &ev->nblk, (size_t)sg->ns, sizeof *ev->pin);
    if (!ev->pos || !ev->sf || !ev->sl || !ev->par || !ev->delta || !ev->pin) {
        bp__eval_free(ev);
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory evaluating an order", sg->g->name);
    }
    return BP_OK;
}

void bp__eval_free(bp__eval *ev)
{
    if (!ev->sg) return;
    for (int i = 0; i < ev->nblk; i++) bp__free(&ev->sg->g->alloc, ev->blk[i], ev->blksz[i]);
    memset(ev, 0, sizeof *ev);
}

static int32_t ev_find(int32_t *par, int32_t y)
{
    int32_t r = y;
    while (par[r] != r) r = par[r];
    while (par[y] != r) { int32_t nx = par[y]; par[y] = r; y = nx; }
    return r;
}

/* Fills the storage hulls after in-place merging; returns nothing. */
static void ev_hulls(bp__eval *ev, const int32_t *order)
{
    const bp__sgraph *sg = ev->sg;
    int32_t n = sg->n, ns = sg->ns;
    for (int32_t y = 0; y < ns; y++) {
        ev->sf[y] = (sg->sflags[y] & BP__SF_EXTLIVE) ? 0 : INT32_MAX;
        ev->sl[y] = (sg->sflags[y] & BP__SF_PINNED) ? n - 1 : -1;
        ev->par[y] = y;
        ev->pin[y] = (sg->sflags[y] & BP__SF_PINNED) ? 1 : 0;
    }
    for (int32_t s = 0; s < n; s++) {
        int32_t v = order[s];
        for (int32_t i = sg->to_off[v]; i < sg->to_off[v + 1]; i++) {
            int32_t y = sg->to[i];
            if (s < ev->sf[y]) ev->sf[y] = s;
            if (s > ev->sl[y]) ev->sl[y] = s;
        }
    }
    if (!sg->ip_off[n]) return;
    const bp_graph *g = sg->g;
    for (int32_t s = 0; s < n; s++) {
        int32_t v = order[s];
        for (int32_t i = sg->ip_off[v]; i < sg->ip_off[v + 1]; i++) {
            const bp__ipc *c = &sg->ip[i];
            int32_t r = ev_find(ev->par, c->si);
            /* pin: at the final step a storage holding a graph output ends
             * there too, so "ends at this step" alone proves nothing */
            if (r == c->so || ev->par[c->so] != c->so || ev->sl[r] != s || ev->pin[r]) continue;
            if (g->t[c->out].bytes > sg->sbytes[r]) continue;
            ev->par[c->so] = r;
            ev->pin[r] |= ev->pin[c->so];
            if (ev->sf[c->so] < ev->sf[r]) ev->sf[r] = ev->sf[c->so];
            if (ev->sl[c->so] > ev->sl[r]) ev->sl[r] = ev->sl[c->so];
            break;
        }
    }
}

/* Live bytes per step of `order` (into mem when not NULL); returns the peak
 * and its first step (into *peak_step when not NULL). */
static uint64_t ev_sweep(bp__eval *ev, const int32_t *order, uint64_t *mem, int32_t *peak_step)
{
    const bp__sgraph *sg = ev->sg;
    int32_t n = sg->n;
    ev_hulls(ev, order);
    for (int32_t s = 0; s <= n; s++) ev->delta[s] = 0;
    for (int32_t y = 0; y < sg->ns; y++) {
        if (ev->par[y] != y || ev->sl[y] < 0) continue;
        ev->delta[ev->sf[y]] += (int64_t)sg->ssize[y];
        ev->delta[ev->sl[y] + 1] -= (int64_t)sg->ssize[y];
    }
    int64_t cur = 0, best = 0;
    int32_t best_s = 0;
    for (int32_t s = 0; s < n; s++) {
        cur += ev->delta[s];
        if (mem) mem[s] = (uint64_t)cur;
        if (cur > best) { best = cur; best_s = s; }
    }
    if (peak_step) *peak_step = best_s;
    return (uint64_t)best;
}

uint64_t bp__eval_profile(bp__eval *ev, const int32_t *order, uint64_t *mem)
{
    return ev_sweep(ev, order, mem, NULL);
}

uint64_t bp__eval_peak(bp__eval *ev, const int32_t *order, int32_t *peak_step)
{
    return ev_sweep(ev, order, NULL, peak_step);
}

/* ------------------------------------------------------------ driver env */

bp_status bp__sched_env_init(bp__sched_env *e, const bp_graph *g, const bp_plan_options *o, bool with_sim,
                             bp_error *err)
{
    memset(e, 0, sizeof *e);
    bp_status st = bp__sgraph_build(g, o, &e->sg, err);
    if (st) return st;
    e->cost = bp__alloc(&g->alloc, (g->n_o + 1) * sizeof *e->cost);
    if (!e->cost) st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory scheduling", g->name);
    if (!st) st = bp__eval_init(&e->ev, &e->sg, err);
    if (!st && with_sim) st = bp__sim_init(&e->sim, &e->sg, err);
    if (st) { bp__sched_env_free(e); return st; }
    bp__op_costs(g, e->cost);
    return BP_OK;
}

void bp__sched_env_free(bp__sched_env *e)
{
    const bp_graph *g = e->sg.g;
    bp__sim_free(&e->sim);
    bp__eval_free(&e->ev);
    if (g) bp__free(&g->alloc, e->cost, (g->n_o + 1) * sizeof *e->cost);
    bp__sgraph_free(&e->sg);
    memset(e, 0, sizeof *e);
}

/* ------------------------------------------------------------ step model */

bp_status bp__sim_init(bp__sim *s, const bp__sgraph *sg, bp_error *err)
{
    memset(s, 0, sizeof *s);
    s->sg = sg;
    const bp_allocator *a = &sg->g->alloc;
    size_t ns = (size_t)sg->ns, n = (size_t)sg->n;
    /* bp__sim_reset fills every array: no zero fill first. */
    s->rem = ws_get_raw(a, s->blk, s->blksz, &s->nblk, ns, sizeof *s->rem);
    s->cur = ws_get_raw(a, s->blk, s->blksz, &s->nblk, ns, sizeof *s->cur);
    s->cbytes = ws_get_raw(a, s->blk, s->blksz, &s->nblk, ns, sizeof *s->cbytes);
    s->live = ws_get_raw(a, s->blk, s->blksz, &s->nblk, ns, sizeof *s->live);
    s->done = ws_get_raw(a, s->blk, s->blksz, &s->nblk, n, sizeof *s->done);
    s->npred = ws_get_raw(a, s->blk, s->blksz, &s->nblk, n, sizeof *s->npred);
    /* last1 holds at most the storages one op touches.  The same block
     * starts with the XOR of each storage's touchers not yet run (sim_lastx):
     * when one is left, that is the op. */
    size_t maxdeg = 0;
    for (int32_t v = 0; v < sg->n; v++)
        if ((size_t)(sg->to_off[v + 1] - sg->to_off[v]) > maxdeg) maxdeg = (size_t)(sg->to_off[v + 1] - sg->to_off[v]);
    s->last1 = ws_get_raw(a, s->blk, s->blksz, &s->nblk, ns + maxdeg + 1, sizeof *s->last1);
    if (s->last1) s->last1 += ns;
    if (!s->rem || !s->cur || !s->cbytes || !s->live || !s->done || !s->npred || !s->last1) {
        bp__sim_free(s);
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory in the scheduler", sg->g->name);
    }
    bp__sim_reset(s);
    return BP_OK;
}

/* Per storage: the XOR of the ids of its touchers that have not run. */
static inline int32_t *sim_lastx(const bp__sim *s) { return s->last1 - s->sg->ns; }

void bp__sim_reset(bp__sim *s)
{
    const bp__sgraph *sg = s->sg;
    int32_t *lx = sim_lastx(s);
    for (int32_t y = 0; y < sg->ns; y++) {
        int32_t x = 0;
        for (int32_t i = sg->so_off[y]; i < sg->so_off[y + 1]; i++) x ^= sg->so[i];
        lx[y] = x;
        s->rem[y] = sg->so_off[y + 1] - sg->so_off[y];
        s->cur[y] = sg->ssize[y];
        s->cbytes[y] = sg->sbytes[y];
        s->live[y] = (sg->sflags[y] & BP__SF_EXTLIVE) ? 1 : 0;
    }
    for (int32_t v = 0; v < sg->n; v++) {
        s->done[v] = 0;
        s->npred[v] = sg->pr_off[v + 1] - sg->pr_off[v];
    }
    s->mem = sg->base;
    s->peak = 0;
    s->step = 0;
    s->n_last1 = 0;
}

void bp__sim_copy(bp__sim *d, const bp__sim *s)
{
    const bp__sgraph *sg = s->sg;
    size_t ns = (size_t)sg->ns, n = (size_t)sg->n;
    if (ns) {
        memcpy(d->rem, s->rem, ns * sizeof *d->rem);
        memcpy(d->cur, s->cur, ns * sizeof *d->cur);
        memcpy(d->cbytes, s->cbytes, ns * sizeof *d->cbytes);
        memcpy(d->live, s->live, ns);
        memcpy(sim_lastx(d), sim_lastx(s), ns * sizeof(int32_t));
    }
    if (n) {
        memcpy(d->done, s->done, n);
        memcpy(d->npred, s->npred, n * sizeof *d->npred);
    }
    d->mem = s->mem;
    d->peak = s->peak;
    d->step = s->step;
    d->n_last1 = 0;
}

void bp__sim_free(bp__sim *s)
{
    if (!s->sg) return;
    for (int i = 0; i < s->nblk; i++) bp__free(&s->sg->g->alloc, s->blk[i], s->blksz[i]);
    memset(s, 0, sizeof *s);
}

/* The in-place candidate that would merge if op ran now, or NULL. */
static const bp__ipc *sim_merge(const bp__sim *s, int32_t op)
{
    const bp__sgraph *sg = s->sg;
    for (int32_t i = sg->ip_off[op]; i < sg->ip_off[op + 1]; i++) {
        const bp__ipc *c = &sg->ip[i];
        int32_t x = c->si;
        if (x == c->so || s->rem[x] != 1 || (sg->sflags[x] & BP__SF_PINNED) || s->live[x] != 1 || s->live[c->so]) continue;
        if (sg->sbytes[c->so] > s->cbytes[x]) continue; /* out is so's root */
        return c;
    }
    return NULL;
}

void bp__sim_delta(const bp__sim *s, int32_t op, uint64_t *alloc, uint64_t *freed)
{
    const bp__sgraph *sg = s->sg;
    const bp__ipc *m = sim_merge(s, op);
    uint64_t al = 0, fr = 0;
    for (int32_t i = sg->to_off[op]; i < sg->to_off[op + 1]; i++) {
        int32_t y = sg->to[i];
        uint64_t sz = s->cur[y];
        if (m && y == m->si) continue;        /* its bytes move to the output */
        if (m && y == m->so) sz = s->cur[m->si];
        else if (!s->live[y]) al += sz;
        if (s->rem[y] == 1 && !(sg->sflags[y] & BP__SF_PINNED) && s->live[y] != 2) fr += sz;
    }
    *alloc = al;
    *freed = fr;
}

uint64_t bp__sim_run(bp__sim *s, int32_t op)
{
    const bp__sgraph *sg = s->sg;
    const bp__ipc *m = sim_merge(s, op);
    s->n_last1 = 0;
    if (m) {
        s->cur[m->so] = s->cur[m->si];
        s->cbytes[m->so] = s->cbytes[m->si];
        s->live[m->so] = 1;
        s->cur[m->si] = 0;
        s->live[m->si] = 2;
    }
    for (int32_t i = sg->to_off[op]; i < sg->to_off[op + 1]; i++) {
        int32_t y = sg->to[i];
        if (!s->live[y]) { s->live[y] = 1; s->mem += s->cur[y]; }
    }
    uint64_t at = s->mem;
    if (at > s->peak) s->peak = at;
    int32_t *lx = sim_lastx(s);
    for (int32_t i = sg->to_off[op]; i < sg->to_off[op + 1]; i++) {
        int32_t y = sg->to[i];
        lx[y] ^= op;
        if (--s->rem[y] == 1) s->last1[s->n_last1++] = y;
        else if (s->rem[y] == 0 && !(sg->sflags[y] & BP__SF_PINNED) && s->live[y] == 1) {
            s->mem -= s->cur[y];
            s->live[y] = 2;
        }
    }
    s->done[op] = 1;
    for (int32_t i = sg->su_off[op]; i < sg->su_off[op + 1]; i++) s->npred[sg->su[i]]--;
    s->step++;
    return at;
}

int32_t bp__sim_last_toucher(const bp__sim *s, int32_t st)
{
    return s->rem[st] == 1 ? sim_lastx(s)[st] : -1;
}

/* ------------------------------------------------------------------ heap */

bool bp__heap_init(bp__heap *h, const bp_allocator *a, size_t cap)
{
    memset(h, 0, sizeof *h);
    h->a = a;
    return bp__grow(a, (void **)&h->e, &h->cap, cap ? cap : 1, sizeof *h->e);
}

void bp__heap_free(bp__heap *h)
{
    if (h->a) bp__free(h->a, h->e, h->cap * sizeof *h->e);
    memset(h, 0, sizeof *h);
}

static bool heap_before(const bp__hent *x, const bp__hent *y)
{
    if (x->key != y->key) return x->key > y->key;
    return x->tie < y->tie;
}

void bp__heap_push(bp__heap *h, double key, uint64_t tie, int32_t op)
{
    if (h->n == h->cap && !bp__grow(h->a, (void **)&h->e, &h->cap, h->n + 1, sizeof *h->e)) { h->oom = true; return; }
    size_t i = h->n++;
    bp__hent x = {key, tie, op};
    while (i && heap_before(&x, &h->e[(i - 1) / 2])) { h->e[i] = h->e[(i - 1) / 2]; i = (i - 1) / 2; }
    h->e[i] = x;
}

int32_t bp__heap_pop(bp__heap *h, double *key)
{
    if (!h->n) return -1;
    bp__hent top = h->e[0], x = h->e[--h->n];
    size_t i = 0, n = h->n;
    for (;;) {
        size_t l = 2 * i + 1, m = l;
        if (l >= n) break;
        if (l + 1 < n && heap_before(&h->e[l + 1], &h->e[l])) m = l + 1;
        if (!heap_before(&h->e[m], &x)) break;
        h->e[i] = h->e[m];
        i = m;
    }
    if (n) h->e[i] = x;
    if (key) *key = top.key;
    return top.op;
}
