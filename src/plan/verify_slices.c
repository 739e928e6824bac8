/*
 * verify_slices.c — the verifier's own check of offset placements
 * (docs/ARCHITECTURE.md, "Concat in place"); it shares only the geometry of
 * graph/concat.c (where a piece of a Concat or Split lies) with the planner.
 *
 * A tensor t that the plan places at (alias_of R, view_offset v) with no
 * graph view behind it is accepted when one of these holds, each a claim
 * about its neighbours' placements:
 *   - t is output k of a contiguous Split and sits where piece k of the
 *     Split's input sits (a view at an offset: nothing is written);
 *   - t is the output of a contiguous Concat and every input sits where its
 *     piece of t is (the Concat writes nothing);
 *   - t is input i of a contiguous Concat, made by an op, not a graph
 *     output, and sits where piece i of that Concat's output sits (its
 *     producer writes into the slice).
 * t must lie inside R's bytes.  Placements of other kinds at offset 0 are
 * left to the in-place check.  Then, per storage, the tensors written into
 * their own bytes (slices, and the root unless it is a Concat made of its
 * inputs in place) must not overlap: two writers of the same bytes would
 * clobber each other.  O(T log T) (a sort of the writers).
 */
#include "plan/verify_slices.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct vs_w {
    int32_t s;            /* storage */
    int32_t t;            /* the writer */
    uint64_t lo, hi;
} vs_w;

static int vs_cmp(const void *x, const void *y)
{
    const vs_w *a = x, *b = y;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static int32_t vs_find(int32_t *par, int32_t x)
{
    int32_t r = x;
    while (par[r] != r) r = par[r];
    while (par[x] != r) { int32_t n = par[x]; par[x] = r; x = n; }
    return r;
}

static int32_t vs_root(const bp_plan *p, int32_t t) { return p->tp[t].alias_of >= 0 ? p->tp[t].alias_of : t; }

#define VS_NAME(t) bp__names_get(&v->g->tnames, (t))

static void vs_say(const bp__vslices *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vs_say(const bp__vslices *v, const char *fmt, ...)
{
    char m[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    v->reason(v->ctx, m);
}

/* Is op's output a Concat made of its inputs in place (at root R, offset vo)? */
static bool vs_composite(const bp__vslices *v, int32_t op, int32_t R, uint64_t vo, uint64_t *offs)
{
    const bp_graph *g = v->g;
    if (op < 0 || !bp__concat_layout(g, op, offs)) return false;
    for (int i = 0; i < g->o[op].n_in; i++) {
        int32_t x = bp__op_in(g, op)[i];
        if (vs_root(v->p, x) != R || v->p->tp[x].view_offset != vo + offs[i]) return false;
    }
    return true;
}

static void vs_union(const bp__vslices *v, int32_t a, int32_t b, uint64_t span);

/* How t's placement (root R, offset vo) is justified: 1 a view or composite
 * (writes nothing), 2 a Concat slice (its producer writes it), 0 not.  With
 * span > 0, t's storage is joined to that of every tensor that justifies it
 * (the Split's input, the Concat's inputs, every Concat output it is a slice
 * of), so a Concat's pieces meet its output's storage whatever the order. */
static int vs_justify(const bp__vslices *v, int32_t t, int32_t R, uint64_t vo, uint64_t *offs, uint64_t span)
{
    const bp_graph *g = v->g;
    const bp_plan *p = v->p;
    int32_t pr = g->t[t].producer;
    int how = 0;
    if (pr >= 0 && bp__split_layout(g, pr, offs)) {
        int32_t src = bp__op_in(g, pr)[0];
        for (int k = 0; k < g->o[pr].n_out; k++)
            if (bp__op_out(g, pr)[k] == t && vs_root(p, src) == R && p->tp[src].view_offset + offs[k] == vo) {
                if (span) vs_union(v, t, src, span);
                return 1;
            }
    }
    if (vs_composite(v, pr, R, vo, offs)) {
        if (span) for (int i = 0; i < g->o[pr].n_in; i++) vs_union(v, t, bp__op_in(g, pr)[i], span);
        how = 1;
    }
    if (pr < 0 || (g->t[t].flags & (BP_TENSOR_OUTPUT | BP_TENSOR_INPUT | BP_TENSOR_WEIGHT | BP_TENSOR_CONST))) return how;
    for (int32_t c = g->cons_off[t]; c < g->cons_off[t + 1]; c++) {
        int32_t op = g->cons[c];
        if (!bp__concat_layout(g, op, offs)) continue;
        int32_t y = bp__op_out(g, op)[0];
        for (int i = 0; i < g->o[op].n_in; i++)
            if (bp__op_in(g, op)[i] == t && vs_root(p, y) == R && p->tp[y].view_offset + offs[i] == vo) {
                if (!span) return how ? how : 2;
                vs_union(v, t, y, span);
                if (!how) how = 2;
            }
    }
    return how;
}

/* Joins the storages of a and b (spanning `span` bytes at least); a plan
 * root stays the representative. */
static void vs_union(const bp__vslices *v, int32_t a, int32_t b, uint64_t span)
{
    int32_t ra = vs_find(v->par, v->vroot[a]), rb = vs_find(v->par, v->vroot[b]);
    if (ra != rb) {
        if (v->p->tp[ra].alias_of < 0 && v->p->tp[rb].alias_of >= 0) { int32_t x = ra; ra = rb; rb = x; }
        v->par[ra] = rb;   /* rb represents both */
        if (v->sfirst[ra] < v->sfirst[rb]) v->sfirst[rb] = v->sfirst[ra];
        if (v->slast[ra] > v->slast[rb]) v->slast[rb] = v->slast[ra];
        v->sout[rb] |= v->sout[ra];
        if (v->ssize[ra] > v->ssize[rb]) v->ssize[rb] = v->ssize[ra];
    }
    if (span > v->ssize[rb]) v->ssize[rb] = span;
}

/* Writers of one storage that overlap: reported. */
static void vs_overlaps(const bp__vslices *v, vs_w *w, size_t n)
{
    qsort(w, n, sizeof *w, vs_cmp);
    for (size_t i = 1, top = 0; i < n; i++) {
        if (w[i].s != w[top].s) { top = i; continue; }
        if (w[i].lo < w[top].hi)
            vs_say(v, "tensors \"%s\" [+%llu, +%llu) and \"%s\" [+%llu, +%llu) are both written into the storage of \"%s\" and overlap",
                   VS_NAME(w[top].t), (unsigned long long)w[top].lo, (unsigned long long)w[top].hi, VS_NAME(w[i].t),
                   (unsigned long long)w[i].lo, (unsigned long long)w[i].hi, VS_NAME(w[i].s));
        if (w[i].hi > w[top].hi) top = i;
    }
}

bp_status bp__verify_slices(const bp__vslices *v)
{
    const bp_graph *g = v->g;
    const bp_plan *p = v->p;
    size_t nt = g->n_t, nio = g->n_io ? g->n_io : 1;
    uint64_t *offs = bp__alloc(&g->alloc, nio * sizeof *offs);
    vs_w *w = bp__alloc(&g->alloc, (2 * nt + 1) * sizeof *w);
    uint8_t *has = bp__calloc(&g->alloc, nt ? nt : 1, 1);
    if (!offs || !w || !has) {
        bp__free(&g->alloc, offs, nio * sizeof *offs);
        bp__free(&g->alloc, w, (2 * nt + 1) * sizeof *w);
        bp__free(&g->alloc, has, nt ? nt : 1);
        return bp__err(NULL, BP_ERR_NOMEM, "out of memory");
    }
    size_t nw = 0;
    for (size_t i = 0; i < nt; i++) {
        int32_t t = (int32_t)i, R = p->tp[t].alias_of;
        uint64_t vo = p->tp[t].view_offset;
        if (vo && R < 0) { vs_say(v, "tensor \"%s\" has view_offset %llu but shares no storage (alias_of is null)", VS_NAME(t), (unsigned long long)vo); continue; }
        if (v->vroot[t] != t) {
            if (vo != p->tp[v->vroot[t]].view_offset)
                vs_say(v, "tensor \"%s\" is a view of \"%s\" but starts %llu bytes into its storage, not %llu", VS_NAME(t),
                       VS_NAME(v->vroot[t]), (unsigned long long)vo, (unsigned long long)p->tp[v->vroot[t]].view_offset);
            continue;
        }
        if (R < 0 || (size_t)R >= nt) continue;
        int how = vs_justify(v, t, R, vo, offs, 0);
        if (!how) {
            if (vo)
                vs_say(v, "tensor \"%s\" sits %llu bytes into the storage of \"%s\", but it is no Concat input, Concat output or Split output at that place",
                       VS_NAME(t), (unsigned long long)vo, VS_NAME(R));
            continue;
        }
        uint64_t end = vo + g->t[t].bytes;
        if (end < vo || end > g->t[R].bytes) {
            vs_say(v, "tensor \"%s\" [+%llu, +%llu) does not fit the storage of \"%s\" (%llu bytes)", VS_NAME(t), (unsigned long long)vo,
                   (unsigned long long)end, VS_NAME(R), (unsigned long long)g->t[R].bytes);
            continue;
        }
        if (p->tp[t].offset != p->tp[R].offset) {
            vs_say(v, "tensor \"%s\" is a slice of \"%s\" but its storage offset differs", VS_NAME(t), VS_NAME(R));
            continue;
        }
        vs_justify(v, t, R, vo, offs, end ? end : 1);
        has[R] = 1;
        if (how == 2 && g->t[t].bytes) w[nw++] = (vs_w){R, t, vo, end};
    }
    /* a root with slices writes its own bytes unless it is a Concat made of them */
    for (size_t i = 0; i < nt; i++)
        if (has[i] && g->t[i].bytes && !vs_composite(v, g->t[i].producer, (int32_t)i, 0, offs))
            w[nw++] = (vs_w){(int32_t)i, (int32_t)i, 0, g->t[i].bytes};
    vs_overlaps(v, w, nw);
    bp__free(&g->alloc, offs, nio * sizeof *offs);
    bp__free(&g->alloc, w, (2 * nt + 1) * sizeof *w);
    bp__free(&g->alloc, has, nt ? nt : 1);
    return BP_OK;
}
