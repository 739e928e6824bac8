/*
 * fallback_out.c — writes a fallback model into its plan (plan/fallback.h):
 * each storage's first copy becomes its members' placement, the others the
 * plan's copies (sorted by tensor, then step); the arena, the live peak,
 * the events (PREFETCH and RECOMPUTE before the step's ALLOCs, OFFLOAD and
 * the FREE of an evicted copy after the step's FREEs; recomputes of one
 * step in the order of their ops' steps, so a recompute reads what another
 * made before it) and the stats.  The transfer time not hidden behind
 * compute is simulated: each offload-prefetch pair must run on one copy
 * engine within its gap (from the step after the offload to the step of the
 * prefetch), earliest deadline first, at the ops' compute time per step;
 * what misses its deadline stalls the compute.
 */
#include "plan/fallback.h"
#include "schedule/schedule_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct fb_xev {
    int32_t step, phase, sub, seq;   /* phase 0: before the step's ops, 1: after */
    bp_event e;
} fb_xev;

static int cmp_xev(const void *x, const void *y)
{
    const fb_xev *a = x, *b = y;
    if (a->step != b->step) return a->step < b->step ? -1 : 1;
    if (a->phase != b->phase) return a->phase < b->phase ? -1 : 1;
    if (a->sub != b->sub) return a->sub < b->sub ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The copies of every storage into p (and its first copy's offset, seg0). */
static bp_status write_copies(const fb_model *m, bp_plan *p, const uint64_t *seg_off, uint64_t *seg0, bp_error *err)
{
    size_t n = 0, mx = 1, j = 0;
    for (size_t k = 0; k < m->ns; k++) {
        size_t c = (size_t)bp__fb_segments(&m->st[k], NULL, NULL, NULL);
        n += c - 1;
        if (c > mx) mx = c;
    }
    p->copies = bp__alloc(&p->alloc, (n ? n : 1) * sizeof *p->copies);
    int32_t *f = bp__alloc(m->a, mx * sizeof *f), *l = bp__alloc(m->a, mx * sizeof *l);
    uint8_t *md = bp__alloc(m->a, mx);
    bp_status st = BP_OK;
    if (!p->copies || !f || !l || !md) st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory writing copies", m->g->name);
    p->n_copies = 0;
    for (size_t k = 0; k < m->ns && !st; k++) {
        const fb_store *x = &m->st[k];
        int32_t c = bp__fb_segments(x, f, l, md);
        seg0[k] = seg_off[j];
        bp_tensor_plan *tp = &p->tp[x->root];
        if (l[c - 1] > tp->last) tp->last = l[c - 1];
        for (int32_t q = 1; q < c; q++) {
            bool rc = md[q] == FB_RECOMP;
            p->copies[p->n_copies++] = (bp_copy){x->root, rc ? BP_COPY_RECOMPUTE : BP_COPY_PREFETCH, rc ? x->op : -1, l[q - 1], f[q], l[q],
                                                 seg_off[j + (size_t)q]};
        }
        j += (size_t)c;
    }
    if (st) {   /* the plan frees n_copies entries: none */
        bp__free(&p->alloc, p->copies, (n ? n : 1) * sizeof *p->copies);
        p->copies = NULL;
        p->n_copies = 0;
    }
    bp__free(m->a, f, mx * sizeof *f);
    bp__free(m->a, l, mx * sizeof *l);
    bp__free(m->a, md, mx);
    return st;
}

/* The extra events of the copies, sorted as they interleave with the plain
 * ones (see the opening comment). */
static fb_xev *extra_events(const fb_model *m, const bp_plan *p, const int32_t *last_copy, size_t *n_out)
{
    size_t n = 2 * (size_t)p->n_copies;
    fb_xev *x = bp__alloc(m->a, (n ? n : 1) * sizeof *x);
    if (!x) return NULL;
    size_t k = 0;
    for (int32_t i = 0; i < p->n_copies; i++) {
        const bp_copy *c = &p->copies[i];
        int32_t sid = m->sid[c->tensor], prev = i > 0 && p->copies[i - 1].tensor == c->tensor ? i - 1 : -1;
        uint64_t prev_off = prev >= 0 ? p->copies[prev].offset : p->tp[c->tensor].offset;
        int32_t buf = p->tp[c->tensor].buffer;
        bool rc = c->kind == BP_COPY_RECOMPUTE;
        x[k] = (fb_xev){c->evict, 1, rc ? 0 : 1, (int32_t)k,
                        {rc ? BP_EV_FREE : BP_EV_OFFLOAD, c->tensor, p->order[c->evict], buf, prev_off}};
        k++;
        x[k] = (fb_xev){c->first, 0, rc ? 1 + m->step[c->op] : 0, (int32_t)k,
                        {rc ? BP_EV_RECOMPUTE : BP_EV_PREFETCH, c->tensor, rc ? c->op : p->order[c->first], buf, c->offset}};
        k++;
        (void)sid;
    }
    (void)last_copy;
    qsort(x, k, sizeof *x, cmp_xev);
    *n_out = k;
    return x;
}

/* Merges the extra events into p's plain ones; the FREE at a storage's end
 * names its last copy's offset. */
static bp_status merge_events(const fb_model *m, bp_plan *p, bp_error *err)
{
    const bp_allocator *a = m->a;
    int32_t *last = bp__alloc(a, (m->ns ? m->ns : 1) * sizeof *last);
    size_t nx = 0;
    fb_xev *x = last ? extra_events(m, p, last, &nx) : NULL;
    bp_event *out = bp__alloc(&p->alloc, (p->n_ev + nx + 1) * sizeof *out);
    if (!last || !x || !out) {
        bp__free(a, last, (m->ns ? m->ns : 1) * sizeof *last);
        if (x) bp__free(a, x, (p->n_copies ? 2 * (size_t)p->n_copies : 1) * sizeof *x);
        bp__free(&p->alloc, out, (p->n_ev + nx + 1) * sizeof *out);
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory building events", m->g->name);
    }
    for (size_t k = 0; k < m->ns; k++) last[k] = -1;
    for (int32_t i = 0; i < p->n_copies; i++) last[m->sid[p->copies[i].tensor]] = i;
    size_t k = 0, xi = 0;
    int32_t s = 0;
    bool before_done = false;
    for (size_t i = 0; i < p->n_ev; i++) {
        bp_event e = p->ev[i];
        if (!(e.type == BP_EV_FREE && s > 0 && !before_done) && !before_done) {
            while (xi < nx && (x[xi].step < s || (x[xi].step == s && x[xi].phase == 0))) out[k++] = x[xi++].e;
            before_done = true;
        }
        if (e.type == BP_EV_FREE && e.tensor >= 0 && m->sid[e.tensor] >= 0 && last[m->sid[e.tensor]] >= 0)
            e.offset = p->copies[last[m->sid[e.tensor]]].offset;
        out[k++] = e;
        if (e.type == BP_EV_EXEC) { s++; before_done = false; }
    }
    while (xi < nx) out[k++] = x[xi++].e;
    bp__free(&p->alloc, p->ev, p->cap_ev * sizeof *p->ev);
    p->cap_ev = p->n_ev + nx + 1;   /* what out holds */
    p->ev = out;
    p->n_ev = k;
    bp__free(a, last, (m->ns ? m->ns : 1) * sizeof *last);
    bp__free(a, x, (p->n_copies ? 2 * (size_t)p->n_copies : 1) * sizeof *x);
    return BP_OK;
}

/* ------------------------------------------------------------ transfers */

typedef struct fb_xfer {
    int32_t release, deadline;   /* may run in steps [release, deadline) */
    double work;
} fb_xfer;

static int cmp_release(const void *x, const void *y)
{
    const fb_xfer *a = x, *b = y;
    if (a->release != b->release) return a->release < b->release ? -1 : 1;
    return a->deadline < b->deadline ? -1 : a->deadline > b->deadline;
}

static void xheap_push(fb_xfer *h, size_t *n, fb_xfer v)
{
    size_t i = (*n)++;
    while (i && h[(i - 1) / 2].deadline > v.deadline) { h[i] = h[(i - 1) / 2]; i = (i - 1) / 2; }
    h[i] = v;
}

static void xheap_pop(fb_xfer *h, size_t *n)
{
    fb_xfer v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, c = i;
        int32_t best = v.deadline;
        if (l < *n && h[l].deadline < best) { c = l; best = h[l].deadline; }
        if (r < *n && h[r].deadline < best) c = r;
        if (c == i) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = v;
}

/* The stall time of the plan's transfers (earliest deadline first). */
static bool transfer_stall(const fb_model *m, const bp_plan *p, double *stall)
{
    size_t n = 0;
    for (int32_t i = 0; i < p->n_copies; i++) n += p->copies[i].kind == BP_COPY_PREFETCH;
    fb_xfer *t = bp__alloc(m->a, (n ? n : 1) * sizeof *t), *h = bp__alloc(m->a, (n ? n : 1) * sizeof *h);
    if (!t || !h) { bp__free(m->a, t, (n ? n : 1) * sizeof *t); bp__free(m->a, h, (n ? n : 1) * sizeof *h); return false; }
    size_t k = 0, hn = 0, ti = 0;
    for (int32_t i = 0; i < p->n_copies; i++) {
        const bp_copy *c = &p->copies[i];
        if (c->kind == BP_COPY_PREFETCH) t[k++] = (fb_xfer){c->evict + 1, c->first, 2.0 * (double)p->tp[c->tensor].bytes / m->bw};
    }
    qsort(t, n, sizeof *t, cmp_release);
    double late = 0;
    for (int32_t s = 0; s <= m->no; s++) {
        while (hn && h[0].deadline <= s) { late += h[0].work; xheap_pop(h, &hn); }
        while (ti < n && t[ti].release <= s) {
            if (t[ti].deadline <= s) late += t[ti].work;
            else xheap_push(h, &hn, t[ti]);
            ti++;
        }
        double cap = s < m->no ? m->ccum[s + 1] - m->ccum[s] : 0;
        while (hn && cap > 0) {
            double use = h[0].work < cap ? h[0].work : cap;
            h[0].work -= use;
            cap -= use;
            if (h[0].work <= 0) xheap_pop(h, &hn);
        }
    }
    bp__free(m->a, t, (n ? n : 1) * sizeof *t);
    bp__free(m->a, h, (n ? n : 1) * sizeof *h);
    *stall = late;
    return true;
}

static bp_status write_stats(const fb_model *m, bp_plan *p, uint64_t arena, bp_error *err)
{
    bp_plan_stats *st = &p->stats;
    int32_t at;
    st->arena_bytes = arena;
    st->optimal = 0;   /* bestfit over the copies proves nothing */
    st->lower_bound_bytes = (uint64_t)bp__fb_live_max(m, &at);
    st->peak_step = at;
    st->recompute_cost = 0;
    st->offload_bytes = 0;
    st->n_recomputes = st->n_offloads = 0;
    for (int32_t i = 0; i < p->n_copies; i++) {
        const bp_copy *c = &p->copies[i];
        if (c->kind == BP_COPY_RECOMPUTE) { st->n_recomputes++; st->recompute_cost += bp__op_cost(m->g, c->op); }
        else { st->n_offloads++; st->offload_bytes += p->tp[c->tensor].bytes; }
    }
    if (!transfer_stall(m, p, &st->transfer_cost)) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", m->g->name);
    double total = m->ccum[m->no];
    st->overhead_percent = total > 0 ? 100.0 * (st->recompute_cost + st->transfer_cost) / total : 0;
    return BP_OK;
}

bp_status bp__fb_write_plan(const fb_model *m, bp_plan *p, const uint64_t *seg_off, uint64_t arena, bp_error *err)
{
    uint64_t *seg0 = bp__alloc(m->a, (m->ns ? m->ns : 1) * sizeof *seg0);
    if (!seg0) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", m->g->name);
    bp_status st = write_copies(m, p, seg_off, seg0, err);
    if (!st)
        for (size_t t = 0; t < m->g->n_t; t++)
            if (m->sid[t] >= 0) p->tp[t].offset = seg0[m->sid[t]];
    bp__free(m->a, seg0, (m->ns ? m->ns : 1) * sizeof *seg0);
    p->assign = BP_ASSIGN_BESTFIT;
    if (!st) st = write_stats(m, p, arena, err);
    if (!st) st = bp__plan_build_events(p, m->g, err);
    if (!st) st = merge_events(m, p, err);
    return st;
}
