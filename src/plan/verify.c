/*
 * verify.c — the independent plan verifier.  It trusts nothing the planner
 * computed; it recomputes from the graph and the plan's claims:
 *
 * 1. the schedule is a permutation of the ops and topological;
 * 2. true lifetimes (own code, not lifetime.c) are covered by the plan's
 *    [first, last]; sizes and kinds agree with the graph;
 * 3. storages: view groups come from the graph (view_of, view op types),
 *    no view larger than its root unless it is a broadcast view; tensors at
 *    an offset in another's storage (Concat slices, Split outputs) are
 *    checked by verify_slices.c;
 *    every other alias_of claim is an in-place write, accepted only when the
 *    op producing the claimant reads the storage, nothing reads that storage
 *    at a later step, it holds no graph output, it is in the arena, and
 *    offsets agree (the claimant may be a graph output, at the final step
 *    too).  Claims are
 *    checked in step order with a union-find;
 * 4. every storage lies inside the arena, aligned; no two storages that are
 *    live at a common step (as the plan declares its intervals, which cover
 *    the true ones) overlap in bytes: a sweep over steps with the live
 *    storages kept in a treap ordered by offset, so each insertion checks only
 *    its neighbours — O(n log n);
 * 5. the lower bound in the plan's stats equals max live bytes; events do not
 *    allocate after first use or free before last use;
 * 6. control flow: every body's plan passes this verifier against the body's
 *    graph, and the op's reservation (its size the plan's claim, checked
 *    here) holds the body's slots and arena at the base the plan gives.
 */
#include "plan/plan_internal.h"
#include "plan/verify_slices.h"

#include <stdlib.h>
#include <string.h>

typedef struct vctx {
    const bp_graph *g;
    const bp_plan *p;
    bp_error *err;
    int n_reasons;
    size_t len;
} vctx;

#define VERIFY_MAX_REASONS 10

static void reason(vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reason(vctx *v, const char *fmt, ...)
{
    v->n_reasons++;
    if (!v->err || v->n_reasons > VERIFY_MAX_REASONS) return;
    char *m = v->err->msg;
    size_t cap = sizeof v->err->msg;
    if (v->len >= cap - 1) return;
    if (v->len) m[v->len++] = '\n';
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(m + v->len, cap - v->len, fmt, ap);
    va_end(ap);
    if (w > 0) v->len += (size_t)w;
    if (v->len >= cap) v->len = cap - 1;
    m[v->len] = 0;
}

/* A tensor's true size: the graph's, except for a control-flow reservation,
 * whose size is the plan's claim (vf_bodies checks that it holds the bodies). */
static uint64_t vf_bytes(const vctx *v, int32_t t)
{
    return v->g->t[t].is_reserve ? v->p->tp[t].bytes : v->g->t[t].bytes;
}

/* reason() for verify_slices.c. */
static void vf_reason_cb(void *ctx, const char *msg) { reason(ctx, "%s", msg); }

#define TN(t) bp__names_get(&v->g->tnames, (t))
#define ON(o) bp__names_get(&v->g->onames, (o))

/* ------------------------------------------------------------------ treap */

/* Nodes are the swept storages renumbered in order of their first step, so
 * storages live together sit close in memory, and each node keeps its key,
 * links and priority in one 32-byte record: the sweep over 10^7 storages
 * is bound by cache misses, not comparisons. */
typedef struct tnode {
    uint64_t off, size;    /* key: (off, index) */
    int32_t l, r;
    uint32_t prio;
    int32_t id;            /* the storage (tensor) it stands for */
} tnode;

typedef struct treap {
    tnode *n;
    int32_t root;
} treap;

static inline int key_less(const treap *t, int32_t a, int32_t b)
{
    return t->n[a].off < t->n[b].off || (t->n[a].off == t->n[b].off && a < b);
}

/* Splits tree n into < k and >= k. */
static void tp_split(treap *t, int32_t n, int32_t k, int32_t *a, int32_t *b)
{
    /* iterative split: build left spine and right spine */
    int32_t *la = a, *rb = b;
    while (n >= 0) {
        if (key_less(t, n, k)) { *la = n; la = &t->n[n].r; n = t->n[n].r; }
        else { *rb = n; rb = &t->n[n].l; n = t->n[n].l; }
    }
    *la = -1;
    *rb = -1;
}

static int32_t tp_merge(treap *t, int32_t a, int32_t b)
{
    int32_t root = -1, *slot = &root;
    while (a >= 0 && b >= 0) {
        if (t->n[a].prio > t->n[b].prio) { *slot = a; slot = &t->n[a].r; a = t->n[a].r; }
        else { *slot = b; slot = &t->n[b].l; b = t->n[b].l; }
    }
    *slot = a >= 0 ? a : b;
    return root;
}

static void tp_insert(treap *t, int32_t n)
{
    int32_t a, b;
    t->n[n].l = t->n[n].r = -1;
    tp_split(t, t->root, n, &a, &b);
    t->root = tp_merge(t, tp_merge(t, a, n), b);
}

static void tp_erase(treap *t, int32_t n)
{
    int32_t *slot = &t->root;
    while (*slot != n) slot = key_less(t, n, *slot) ? &t->n[*slot].l : &t->n[*slot].r;
    *slot = tp_merge(t, t->n[n].l, t->n[n].r);
}

/* Largest node < n and smallest node > n in key order. */
static void tp_neighbours(const treap *t, int32_t n, int32_t *pred, int32_t *succ)
{
    *pred = *succ = -1;
    for (int32_t m = t->root; m >= 0;)
        if (key_less(t, m, n)) { *pred = m; m = t->n[m].r; } else m = t->n[m].l;
    for (int32_t m = t->root; m >= 0;)
        if (key_less(t, n, m)) { *succ = m; m = t->n[m].l; } else m = t->n[m].r;
}

/* -------------------------------------------------------------- union-find */

static int32_t uf_find(int32_t *par, int32_t x)
{
    int32_t r = x;
    while (par[r] != r) r = par[r];
    while (par[x] != r) { int32_t n = par[x]; par[x] = r; x = n; }
    return r;
}

/* ------------------------------------------------------------------ verify */

typedef struct vdata {
    bp__etab et;        /* the plan's engine profile bound to the graph */
    int32_t *step;      /* n_o */
    int32_t *first, *last;  /* n_t true intervals */
    int32_t *vroot;     /* n_t view root */
    int32_t *par;       /* n_t union-find over view roots (storages) */
    int32_t *sfirst, *slast; /* per storage rep: true (from the graph) */
    int32_t *dfirst, *dlast; /* per storage rep: as the plan declares it */
    uint64_t *ssize;    /* per storage rep (max member group size) */
    uint64_t *soff;     /* per storage rep */
    uint8_t *sout;      /* storage holds a graph output */
    int32_t *byfirst;   /* storage reps sorted by first */
    int32_t *bylast;
    int64_t *dlive;     /* n_o + 1: difference array of live bytes (true intervals) */
    int32_t *tmp;       /* n_t: sort scratch */
    treap tr;           /* the offset-ordered sweep tree */
    size_t nt, no, nt1;
} vdata;

static void sort_by_key(const bp_allocator *al, int32_t *ids, size_t n, const int32_t *key, int32_t *tmp)
{
    if (n >= (1u << 16)) {
        /* large: LSD radix on key + 1 (keys are steps, -1 or INT32_MAX at the
         * edges), two 16-bit passes, stable */
        uint32_t *cnt = bp__alloc(al, 65536 * sizeof *cnt);
        if (cnt) {
            for (int shift = 0; shift < 32; shift += 16) {
                memset(cnt, 0, 65536 * sizeof *cnt);
                for (size_t i = 0; i < n; i++) cnt[((uint32_t)key[ids[i]] + 1u) >> shift & 0xffffu]++;
                uint32_t sum = 0;
                for (size_t b = 0; b < 65536; b++) { uint32_t c = cnt[b]; cnt[b] = sum; sum += c; }
                for (size_t i = 0; i < n; i++) tmp[cnt[((uint32_t)key[ids[i]] + 1u) >> shift & 0xffffu]++] = ids[i];
                memcpy(ids, tmp, n * sizeof *ids);
            }
            bp__free(al, cnt, 65536 * sizeof *cnt);
            return;
        }
    }
    /* bottom-up merge sort, stable */
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t i = 0; i < n; i += 2 * w) {
            size_t m = i + w < n ? i + w : n, e = i + 2 * w < n ? i + 2 * w : n, a = i, b = m, k = i;
            while (a < m && b < e) tmp[k++] = key[ids[b]] < key[ids[a]] ? ids[b++] : ids[a++];
            while (a < m) tmp[k++] = ids[a++];
            while (b < e) tmp[k++] = ids[b++];
        }
        memcpy(ids, tmp, n * sizeof *ids);
    }
}

/* 1. The schedule is a permutation of the ops, and topological. */
static void vf_schedule(vctx *v, vdata *d)
{
    const bp_graph *g = v->g;
    const bp_plan *p = v->p;
    size_t no = d->no;
    for (size_t i = 0; i < no; i++) d->step[i] = -1;
    for (size_t s = 0; s < no; s++) {
        int32_t op = p->order[s];
        if (op < 0 || (size_t)op >= no) { reason(v, "schedule[%zu] is not an op", s); return; }
        if (d->step[op] >= 0) { reason(v, "op \"%s\" is scheduled twice (steps %d and %zu)", ON(op), d->step[op], s); return; }
        d->step[op] = (int32_t)s;
    }
    for (size_t op = 0; op < no; op++) {
        for (int i = 0; i < g->o[op].n_in; i++) {
            int32_t t = bp__op_in(g, (int32_t)op)[i], pr = g->t[t].producer;
            if (pr >= 0 && d->step[pr] >= d->step[op])
                reason(v, "schedule is not topological: op \"%s\" (step %d) reads \"%s\" made by op \"%s\" at step %d",
                       ON((int32_t)op), d->step[op], TN(t), ON(pr), d->step[pr]);
        }
    }
}

/* The kind the planner gives tensor t: in the arena, output or planned;
 * otherwise dynamic, weight (a weight, a constant or an unplanned constant
 * activation at its storage's root) or input.  A tensor that is never live
 * may also be planned with no offset (it needs no bytes). */
static bp_tensor_kind vf_kind(const bp_graph *g, const bp_tensor_plan *tp, int32_t t)
{
    const bp__tensor *x = &g->t[t], *r = &g->t[tp->alias_of >= 0 ? tp->alias_of : t];
    if (tp->offset != BP_NO_OFFSET && x->is_workspace) return BP_KIND_WORKSPACE;
    if (tp->offset != BP_NO_OFFSET) return (x->flags & BP_TENSOR_OUTPUT) ? BP_KIND_OUTPUT : BP_KIND_PLANNED;
    if (r->dynamic || x->dynamic) return BP_KIND_DYNAMIC;
    if (r->flags & (BP_TENSOR_WEIGHT | BP_TENSOR_CONST)) return BP_KIND_WEIGHT;
    return r->producer >= 0 ? BP_KIND_WEIGHT : BP_KIND_INPUT;
}

/* 2. Each tensor's plan interval covers its true lifetime; sizes, alignment
 * and kinds agree with the graph. */
static void vf_tensors(vctx *v, vdata *d)
{
    const bp_graph *g = v->g;
    const bp_plan *p = v->p;
    size_t nt = d->nt, no = d->no;
    for (size_t t = 0; t < nt; t++) {
        const bp__tensor *x = &g->t[t];
        int32_t f = x->producer >= 0 ? d->step[x->producer] : -1, l = f;
        d->first[t] = f;
        d->last[t] = l;
    }
    for (size_t op = 0; op < no; op++)
        for (int i = 0; i < g->o[op].n_in; i++) {
            int32_t t = bp__op_in(g, (int32_t)op)[i];
            if (d->first[t] < 0) d->first[t] = 0;
            if (d->step[op] > d->last[t]) d->last[t] = d->step[op];
        }
    for (size_t t = 0; t < nt; t++)
        if (g->t[t].flags & BP_TENSOR_OUTPUT) { if (d->first[t] < 0) d->first[t] = 0; d->last[t] = (int32_t)no - 1; }

    for (size_t t = 0; t < nt; t++) {
        const bp_tensor_plan *tp = &p->tp[t];
        const bp__tensor *x = &g->t[t];
        bool in_arena = tp->offset != BP_NO_OFFSET;
        if (d->first[t] >= 0 && (tp->first > d->first[t] || tp->last < d->last[t]))
            reason(v, "tensor \"%s\": the plan's interval [%d, %d] does not cover its lifetime [%d, %d]",
                   TN((int32_t)t), tp->first, tp->last, d->first[t], d->last[t]);
        if (in_arena && tp->bytes != vf_bytes(v, (int32_t)t))
            reason(v, "tensor \"%s\": the plan says %llu bytes, the graph %llu", TN((int32_t)t),
                   (unsigned long long)tp->bytes, (unsigned long long)x->bytes);
        if (in_arena && p->alignment > 1 && tp->offset % p->alignment)
            reason(v, "tensor \"%s\": offset %llu is not aligned to %llu", TN((int32_t)t),
                   (unsigned long long)tp->offset, (unsigned long long)p->alignment);
        if (in_arena && x->dynamic && tp->alias_of < 0) /* a view of a planned storage may be symbolic */
            reason(v, "tensor \"%s\" has a symbolic size but the plan puts it in the arena", TN((int32_t)t));
        if (!in_arena && x->producer >= 0 && d->first[t] >= 0 && !x->dynamic &&
            tp->kind != BP_KIND_WEIGHT && tp->kind != BP_KIND_DYNAMIC && tp->kind != BP_KIND_INPUT)
            reason(v, "tensor \"%s\" (%s) is made by op \"%s\" but has no place in the arena", TN((int32_t)t),
                   bp_tensor_kind_name(tp->kind), ON(x->producer));
        if (tp->kind == BP_KIND_WEIGHT && x->producer >= 0 && !(x->flags & BP_TENSOR_CONST) && tp->alias_of < 0)
            reason(v, "tensor \"%s\" is marked weight but is an activation made by op \"%s\"", TN((int32_t)t), ON(x->producer));
        if (in_arena && (x->flags & BP_TENSOR_OUTPUT) && tp->kind != BP_KIND_OUTPUT)
            reason(v, "tensor \"%s\" is a graph output but the plan marks it %s", TN((int32_t)t), bp_tensor_kind_name(tp->kind));
        if (tp->alias_of >= 0 && (size_t)tp->alias_of >= nt)
            reason(v, "tensor \"%s\": alias_of is out of range", TN((int32_t)t));
        else if (tp->kind != vf_kind(g, tp, (int32_t)t) &&
                 !(d->first[t] < 0 && (tp->kind == BP_KIND_PLANNED || tp->kind == BP_KIND_OUTPUT))) /* never live */
            reason(v, "tensor \"%s\": the plan says kind %s, the graph makes it %s", TN((int32_t)t),
                   bp_tensor_kind_name(tp->kind), bp_tensor_kind_name(vf_kind(g, tp, (int32_t)t)));
    }
}

/* 3a. Storages: view groups from the graph; members share the root's
 * offset. */
static void vf_views(vctx *v, vdata *d)
{
    const bp_graph *g = v->g;
    const bp_plan *p = v->p;
    size_t nt = d->nt;
    for (size_t t = 0; t < nt; t++) {
        int32_t src = bp__etab_view_source(g, &d->et, (int32_t)t);
        d->vroot[t] = src >= 0 ? src : (int32_t)t;
    }
    for (size_t t = 0; t < nt; t++) { int32_t r = uf_find(d->vroot, (int32_t)t); d->vroot[t] = r; }
    /* A view group is planned iff its root's plan entry has an offset; all
     * members that share it must have the same offset.  A plan may also
     * leave a view in its own storage (--no-alias): then it is its own root. */
    for (size_t t = 0; t < nt; t++) {
        const bp_tensor_plan *tp = &p->tp[t];
        int32_t r = d->vroot[t];
        if (tp->alias_of < 0 && r != (int32_t)t) d->vroot[t] = (int32_t)t; /* not aliased in this plan */
    }
    for (size_t t = 0; t < nt; t++) {
        d->par[t] = (int32_t)t;
        d->sfirst[t] = INT32_MAX;
        d->slast[t] = -1;
        d->ssize[t] = 0;
        d->soff[t] = BP_NO_OFFSET;
    }
    for (size_t t = 0; t < nt; t++) {
        int32_t r = d->vroot[t];
        if (d->first[t] < 0) continue;
        if (d->first[t] < d->sfirst[r]) d->sfirst[r] = d->first[t];
        if (d->last[t] > d->slast[r]) d->slast[r] = d->last[t];
        if (g->t[t].flags & BP_TENSOR_OUTPUT) d->sout[r] = 1;
    }
    for (size_t t = 0; t < nt; t++) {
        if (d->vroot[t] != (int32_t)t) continue;
        d->ssize[t] = vf_bytes(v, (int32_t)t);
        d->soff[t] = p->tp[t].offset;
    }
    /* Members of a view group share the root's offset. */
    for (size_t t = 0; t < nt; t++) {
        int32_t r = d->vroot[t];
        if (r == (int32_t)t) continue;
        if (p->tp[t].offset != p->tp[r].offset)
            reason(v, "tensor \"%s\" is a view of \"%s\" but sits at offset %lld, not %lld", TN((int32_t)t), TN(r),
                   p->tp[t].offset == BP_NO_OFFSET ? -1LL : (long long)p->tp[t].offset,
                   p->tp[r].offset == BP_NO_OFFSET ? -1LL : (long long)p->tp[r].offset);
    }
}

/* 3a'. A view in the arena holds no more bytes than its root, unless it is
 * a broadcast view (graph/view_bytes.c: aten.expand, aten.as_strided and
 * views of them). */
static bp_status vf_view_bytes(vctx *v, vdata *d)
{
    bp__view_info vi;
    bp_status s = bp__view_info_build(v->g, &vi, v->err);
    if (s) return s;
    for (size_t t = 0; t < d->nt; t++) {
        int32_t r = d->vroot[t];
        if (r == (int32_t)t || vi.bcast[t] || v->p->tp[t].offset == BP_NO_OFFSET || vf_bytes(v, (int32_t)t) <= d->ssize[r]) continue;
        reason(v, "tensor \"%s\" (%llu bytes) is a view of \"%s\" (%llu bytes) and larger than it", TN((int32_t)t),
               (unsigned long long)vf_bytes(v, (int32_t)t), TN(r), (unsigned long long)d->ssize[r]);
    }
    bp__view_info_free(v->g, &vi);
    return BP_OK;
}

/* 3b. In-place claims, in step order of the claimant's producer: the op
 * reads the storage, it dies there, it holds no graph output, it is in the
 * arena, same offset. */
static void vf_inplace(vctx *v, vdata *d)
{
    const bp_allocator *a = &v->g->alloc;
    const bp_graph *g = v->g;
    const bp_plan *p = v->p;
    size_t nt = d->nt;
    /* In-place claims: a view-group root whose alias_of names another
     * storage.  Process in step order of the claimant's producer. */
    {
        size_t nc = 0;
        for (size_t t = 0; t < nt; t++)   /* slices joined their storage already (verify_slices.c) */
            if (d->vroot[t] == (int32_t)t && p->tp[t].alias_of >= 0 && d->par[t] == (int32_t)t) d->byfirst[nc++] = (int32_t)t;
        sort_by_key(a, d->byfirst, nc, d->first, d->tmp);
        for (size_t i = 0; i < nc; i++) {
            int32_t t = d->byfirst[i], claim = p->tp[t].alias_of;
            int32_t pr = g->t[t].producer;
            if (pr < 0) { reason(v, "tensor \"%s\" claims the bytes of \"%s\" but no op makes it", TN(t), TN(claim)); continue; }
            int32_t S = uf_find(d->par, d->vroot[claim]), s = d->step[pr];
            bool reads = false, allowed = false;
            for (int k = 0; k < g->o[pr].n_in; k++) {
                int32_t in = bp__op_in(g, pr)[k];
                if (uf_find(d->par, d->vroot[in]) != S) continue;
                reads = true;
                allowed = allowed || bp__etab_inplace_allowed(g, &d->et, pr, t, in);
            }
            if (!reads)
                reason(v, "tensor \"%s\" reuses the bytes of \"%s\", but its op \"%s\" does not read that storage", TN(t), TN(claim), ON(pr));
            else if (!allowed)
                reason(v, "tensor \"%s\" is written in place over \"%s\", but engine profile \"%s\" does not let op \"%s\" (%s) do that",
                       TN(t), TN(claim), bp_engine_name(p->engine), ON(pr), bp__names_get(&g->types, g->o[pr].type));
            else if (d->slast[S] != s)
                reason(v, "tensor \"%s\" is written in place over \"%s\" at step %d, but that storage is still read at step %d", TN(t), TN(claim), s, d->slast[S]);
            else if (d->sout[S])
                reason(v, "tensor \"%s\" is written in place over \"%s\", a graph output", TN(t), TN(claim));
            else if (d->soff[S] == BP_NO_OFFSET)
                reason(v, "tensor \"%s\" is written in place over \"%s\", which is not in the arena (an external tensor)", TN(t), TN(claim));
            else if (p->tp[t].offset != d->soff[S] || p->tp[t].view_offset)
                reason(v, "tensor \"%s\" is written in place over \"%s\" but sits at another offset", TN(t), TN(claim));
            else {
                d->par[t] = S;
                if (d->sfirst[t] < d->sfirst[S]) d->sfirst[S] = d->sfirst[t];
                if (d->slast[t] > d->slast[S]) d->slast[S] = d->slast[t];
                if (d->ssize[t] > d->ssize[S]) d->ssize[S] = d->ssize[t];
                d->sout[S] |= d->sout[t];
            }
        }
    }
}

static void vf_why(void *ctx, const char *msg) { reason((vctx *)ctx, "%s", msg); }

/* 4'. A plan with copies: verify_copies.c replays its events over the
 * storages found here. */
static bp_status vf_copies(vctx *v, vdata *d)
{
    const bp_allocator *a = &v->g->alloc;
    int32_t *rep = bp__alloc(a, d->nt1 * sizeof *rep);
    if (!rep) return bp__err(v->err, BP_ERR_NOMEM, "%s: out of memory verifying", v->g->name);
    for (size_t t = 0; t < d->nt; t++) rep[t] = uf_find(d->par, d->vroot[t]);
    bool ok = bp__verify_copies(v->g, v->p, rep, d->soff, d->ssize, vf_why, v);
    bp__free(a, rep, d->nt1 * sizeof *rep);
    return ok ? BP_OK : bp__err(v->err, BP_ERR_NOMEM, "%s: out of memory verifying", v->g->name);
}

/* 4. Every storage inside the arena, no two live ones sharing bytes (a sweep
 * over the declared intervals with a treap ordered by offset), the lower
 * bound and the arena against the true live bytes. */
static bp_status vf_arena(vctx *v, vdata *d)
{
    const bp_allocator *a = &v->g->alloc;
    bp_status st = BP_OK;
    bp_error *err = v->err;
    size_t nt1 = d->nt1;
    const bp_graph *g = v->g;
    const bp_plan *p = v->p;
    size_t nt = d->nt, no = d->no;
    /* 4. arena bounds and the sweep.  Storages: reps with an offset.  The
     * overlap sweep runs over the intervals the plan declares (they cover
     * the true ones, checked above), so a plan whose own records show two
     * live tensors sharing bytes is rejected even where the true lifetimes
     * would let it pass; the lower bound is over the true ones. */
    {
        uint64_t arena = p->stats.arena_bytes, align = p->alignment ? p->alignment : 1;
        size_t ns = 0;
        for (size_t t = 0; t < nt; t++) { d->dfirst[t] = INT32_MAX; d->dlast[t] = -1; }
        for (size_t t = 0; t < nt; t++) {
            if (d->first[t] < 0) continue;
            int32_t r = uf_find(d->par, d->vroot[t]);
            const bp_tensor_plan *tp = &p->tp[t];
            int32_t f = tp->first < 0 ? 0 : tp->first, l = tp->last >= (int32_t)no ? (int32_t)no - 1 : tp->last;
            if (f < d->dfirst[r]) d->dfirst[r] = f;
            if (l > d->dlast[r]) d->dlast[r] = l;
        }
        for (size_t t = 0; t < nt; t++) {
            if (d->vroot[t] != (int32_t)t || uf_find(d->par, (int32_t)t) != (int32_t)t) continue;
            if (d->soff[t] == BP_NO_OFFSET || d->sfirst[t] == INT32_MAX) continue;
            uint64_t end;
            if (!bp__add_u64(d->soff[t], d->ssize[t], &end) || end > arena)
                reason(v, "tensor \"%s\" [%llu, +%llu) lies outside the arena of %llu bytes", TN((int32_t)t),
                       (unsigned long long)d->soff[t], (unsigned long long)d->ssize[t], (unsigned long long)arena);
            d->byfirst[ns] = (int32_t)t;
            d->bylast[ns] = (int32_t)t;
            ns++;
            d->dlive[d->sfirst[t]] += (int64_t)bp__align_up(d->ssize[t], align);
            d->dlive[d->slast[t] + 1] -= (int64_t)bp__align_up(d->ssize[t], align);
        }
        if (v->n_reasons) return BP_OK;
        if (p->n_copies) return vf_copies(v, d);   /* recompute and offload: residencies, not whole intervals */
        sort_by_key(a, d->byfirst, ns, d->dfirst, d->tmp);
        /* nodes k = rank by first; bylast holds node numbers by last */
        for (size_t k = 0; k < ns; k++) {
            int32_t x = d->byfirst[k];
            d->tr.n[k] = (tnode){d->soff[x], d->ssize[x], -1, -1, (uint32_t)bp__hash_bytes(&x, sizeof x, 7), x};
            d->bylast[k] = (int32_t)k;
            d->sfirst[k] = d->dlast[x];   /* sfirst is spent (the LB is counted): reuse it for the node's last step */
        }
        sort_by_key(a, d->bylast, ns, d->sfirst, d->tmp);
        size_t ia = 0, ie = 0;
        uint8_t *in_tree = bp__calloc(a, nt1, 1);
        if (!in_tree) { st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory verifying", g->name); return st; }
        for (int32_t s = 0; s < (int32_t)no; s++) {
            while (ie < ns && d->sfirst[d->bylast[ie]] < s) {
                int32_t k = d->bylast[ie++];
                if (in_tree[k]) { tp_erase(&d->tr, k); in_tree[k] = 0; }
            }
            while (ia < ns && d->dfirst[d->tr.n[ia].id] == s) {
                int32_t k = (int32_t)ia++;
                const tnode *x = &d->tr.n[k];
                if (x->size == 0) continue;
                int32_t pred, succ;
                tp_insert(&d->tr, k);
                tp_neighbours(&d->tr, k, &pred, &succ);
                int32_t bad = -1;
                if (pred >= 0 && d->tr.n[pred].off + d->tr.n[pred].size > x->off) bad = pred;
                else if (succ >= 0 && d->tr.n[succ].off < x->off + x->size) bad = succ;
                if (bad >= 0) {
                    const tnode *y = &d->tr.n[bad];
                    reason(v, "tensors \"%s\" [%llu, +%llu) live [%d, %d] and \"%s\" [%llu, +%llu) live [%d, %d] overlap in bytes at step %d",
                           TN(x->id), (unsigned long long)x->off, (unsigned long long)x->size, d->dfirst[x->id], d->dlast[x->id],
                           TN(y->id), (unsigned long long)y->off, (unsigned long long)y->size, d->dfirst[y->id], d->dlast[y->id], s);
                    tp_erase(&d->tr, k);
                } else {
                    in_tree[k] = 1;
                }
            }
        }
        bp__free(a, in_tree, nt1);
        /* live bytes for the lower bound, over the true intervals */
        int64_t live = 0, best = 0, at_peak = -1;
        for (size_t s = 0; s < no; s++) {
            live += d->dlive[s];
            if (live > best) best = live;
            if ((int32_t)s == p->stats.peak_step) at_peak = live;
        }
        if (!v->n_reasons && p->stats.lower_bound_bytes && at_peak != best)
            reason(v, "peak_step %d is not a step where the live bytes reach their maximum %lld", p->stats.peak_step,
                   (long long)best);
        if (!v->n_reasons && p->stats.lower_bound_bytes && (uint64_t)best != p->stats.lower_bound_bytes)
            reason(v, "the plan's lower bound %llu differs from the live bytes the verifier measures, %lld",
                   (unsigned long long)p->stats.lower_bound_bytes, (long long)best);
        if (!v->n_reasons && p->stats.arena_bytes < (uint64_t)best)
            reason(v, "the arena of %llu bytes is below the live bytes %lld", (unsigned long long)p->stats.arena_bytes, (long long)best);
    }
    return st;
}

/* 6. The plan's figures, re-derived: the arena is the highest placed byte
 * rounded up to the alignment, and the counts and byte sums of the stats are
 * what the tensors say.  Naive: the aligned bytes of the view roots in the
 * arena; aliasing saved: those of the placed tensors that share a storage
 * rooted elsewhere (views, in-place outputs), symbolic ones not counted. */
typedef struct vcounts {
    uint64_t top, naive, saved, dyn;
    int32_t planned, storages, dynamic, views, inputs, weights;
} vcounts;

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

static void vf_count(vctx *v, vdata *d, vcounts *c)
{
    const bp_graph *g = v->g;
    const bp_plan *p = v->p;
    uint64_t align = p->alignment ? p->alignment : 1;
    memset(c, 0, sizeof *c);
    for (size_t t = 0; t < d->nt; t++) {
        const bp_tensor_plan *tp = &p->tp[t];
        uint64_t b = bp__align_up(vf_bytes(v, (int32_t)t), align);
        if (tp->offset != BP_NO_OFFSET) {
            c->planned++;
            if (d->vroot[t] == (int32_t)t) c->naive = sat_add(c->naive, b);
            if (uf_find(d->par, d->vroot[t]) != (int32_t)t && !g->t[t].dynamic) c->saved = sat_add(c->saved, b);
        } else if (tp->kind == BP_KIND_DYNAMIC) {
            c->dynamic++;
            c->dyn += g->t[t].bytes;
        }
        if (d->vroot[t] != (int32_t)t) c->views++;
        c->inputs += tp->kind == BP_KIND_INPUT;
        c->weights += tp->kind == BP_KIND_WEIGHT;
        if (d->vroot[t] != (int32_t)t || uf_find(d->par, (int32_t)t) != (int32_t)t || d->soff[t] == BP_NO_OFFSET) continue;
        c->storages++;
        uint64_t end = d->soff[t] + bp__align_up(d->ssize[t], align);   /* in the arena: checked */
        if (end > c->top) c->top = end;
    }
    for (int32_t i = 0; i < p->n_copies; i++) {   /* in the arena: checked by vf_copies */
        uint64_t end = p->copies[i].offset + bp__align_up(d->ssize[p->copies[i].tensor], align);
        if (end > c->top) c->top = end;
    }
}

static void vf_stats(vctx *v, vdata *d)
{
    const bp_plan_stats *ps = &v->p->stats;
    vcounts c;
    vf_count(v, d, &c);
    if (ps->peak_step < -1 || ps->peak_step >= (int32_t)d->no)
        reason(v, "peak_step %d is not a step of the schedule (0..%zu)", ps->peak_step, d->no - 1);
    if (ps->arena_bytes != c.top)
        reason(v, "arena_bytes %llu is not the end of the highest placed tensor, %llu", (unsigned long long)ps->arena_bytes,
               (unsigned long long)c.top);
    if (ps->n_planned != c.planned || ps->n_storages != c.storages || ps->n_dynamic != c.dynamic)
        reason(v, "the stats count %d planned tensors, %d storages and %d dynamic tensors; the tensors say %d, %d and %d",
               ps->n_planned, ps->n_storages, ps->n_dynamic, c.planned, c.storages, c.dynamic);
    if (ps->n_views != c.views || ps->n_inputs != c.inputs || ps->n_weights != c.weights)
        reason(v, "the stats count %d views, %d inputs and %d weights; the tensors say %d, %d and %d", ps->n_views, ps->n_inputs,
               ps->n_weights, c.views, c.inputs, c.weights);
    if (ps->dynamic_bytes != c.dyn)
        reason(v, "dynamic_bytes %llu differs from the dynamic tensors' %llu bytes", (unsigned long long)ps->dynamic_bytes,
               (unsigned long long)c.dyn);
    if (ps->naive_bytes != c.naive)
        reason(v, "naive_bytes %llu differs from the aligned bytes of the view roots in the arena, %llu",
               (unsigned long long)ps->naive_bytes, (unsigned long long)c.naive);
    if (ps->alias_saved_bytes != c.saved)
        reason(v, "alias_saved_bytes %llu differs from the aligned bytes of the planned views and in-place outputs, %llu",
               (unsigned long long)ps->alias_saved_bytes, (unsigned long long)c.saved);
}

/* 5. Events: no ALLOC after the first use, no FREE before the last use. */
static void vf_events(vctx *v, vdata *d)
{
    const bp_plan *p = v->p;
    size_t nt = d->nt, no = d->no;
    if (p->n_copies) return;   /* replayed by vf_copies */
    if (!v->n_reasons && p->n_ev) {
        /* the true first step of each storage (tmp is free by now): its
         * ALLOC may not come after any member's first use */
        for (size_t t = 0; t < nt; t++) d->tmp[t] = INT32_MAX;
        for (size_t t = 0; t < nt; t++) {
            int32_t S = uf_find(d->par, d->vroot[t]);
            if (d->first[t] >= 0 && d->first[t] < d->tmp[S]) d->tmp[S] = d->first[t];
        }
        int32_t s = -1;
        for (size_t i = 0; i < p->n_ev; i++) {
            const bp_event *e = &p->ev[i];
            if (e->type == BP_EV_EXEC) {
                s++;
                if (s >= (int32_t)no || p->order[s] != e->op) {
                    reason(v, "event %zu: EXEC of op \"%s\" is out of schedule order", i + 1,
                           e->op >= 0 && (size_t)e->op < no ? ON(e->op) : "?");
                    break;
                }
                continue;
            }
            if (e->tensor < 0 || (size_t)e->tensor >= nt) { reason(v, "event %zu names no tensor", i + 1); break; }
            int32_t t = e->tensor, r = d->vroot[t];
            int32_t S = uf_find(d->par, r);
            if (e->type == BP_EV_ALLOC && d->first[t] >= 0 && s + 1 > d->first[t])
                reason(v, "event %zu: ALLOC of \"%s\" comes after its first use at step %d", i + 1, TN(t), d->first[t]);
            else if (e->type == BP_EV_ALLOC && S >= 0 && d->tmp[S] != INT32_MAX && s + 1 > d->tmp[S])
                reason(v, "event %zu: ALLOC of \"%s\" comes after its storage's first use at step %d", i + 1, TN(t), d->tmp[S]);
            if (e->type == BP_EV_FREE && S >= 0 && d->slast[S] > s)
                reason(v, "event %zu: FREE of \"%s\" at step %d, but its storage is used until step %d", i + 1, TN(t), s, d->slast[S]);
        }
    }
}

/* 6. Control flow. */
static bp_status vf_bodies(vctx *v)
{
    const bp_graph *g = v->g;
    const bp_plan *p = v->p;
    if ((size_t)p->n_bodies != g->n_bodies) {
        reason(v, "the plan has %d body plans, the graph %zu bodies", (int)p->n_bodies, g->n_bodies);
        return BP_OK;
    }
    for (size_t i = 0; i < g->n_bodies; i++) {
        const bp__body *b = &g->bodies[i];
        const bp_plan *c = p->bodies[i];
        const bp_tensor_plan *r = &p->tp[b->reserve];
        const char *kind = bp_body_kind_name(b->kind);
        bp_error ce = {0};
        uint64_t slots = 0;
        bp_status s = c ? bp_verify(b->g, c, &ce) : BP_ERR_VERIFY;
        if (s && s != BP_ERR_VERIFY) { if (v->err) *v->err = ce; return s; }
        if (s) { reason(v, "op \"%s\", %s body: %s", ON(b->op), kind, c ? ce.msg : "no plan"); continue; }
        if ((s = bp__body_slots(g, b, p->alignment, NULL, &slots, &ce))) { reason(v, "%s", ce.msg); continue; }
        if (r->offset == BP_NO_OFFSET) { reason(v, "op \"%s\": its reservation \"%s\" is not in the arena", ON(b->op), TN(b->reserve)); continue; }
        if (p->body_base[i] != r->offset + slots)
            reason(v, "op \"%s\", %s body: base %llu, expected %llu (the reservation's offset + %llu bytes of slots)", ON(b->op), kind,
                   (unsigned long long)p->body_base[i], (unsigned long long)(r->offset + slots), (unsigned long long)slots);
        if (slots + c->stats.arena_bytes > r->bytes)
            reason(v, "op \"%s\", %s body: needs %llu bytes (%llu of slots, an arena of %llu), its reservation \"%s\" holds %llu", ON(b->op),
                   kind, (unsigned long long)(slots + c->stats.arena_bytes), (unsigned long long)slots,
                   (unsigned long long)c->stats.arena_bytes, TN(b->reserve), (unsigned long long)r->bytes);
    }
    return BP_OK;
}

bp_status bp_verify(const bp_graph *g, const bp_plan *p, bp_error *err)
{
    vctx vc = {g, p, err, 0, 0}, *v = &vc;
    if (err) { err->msg[0] = 0; err->status = BP_OK; }
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized", g->name);
    if ((size_t)p->n_t != g->n_t || (size_t)p->n_o != g->n_o)
        return bp__err(err, BP_ERR_VERIFY, "%s: the plan is for another graph (%d tensors, %d ops; the graph has %zu and %zu)",
                       g->name, p->n_t, p->n_o, g->n_t, g->n_o);
    const bp_allocator *a = &g->alloc;
    size_t nt = g->n_t, no = g->n_o, nt1 = nt ? nt : 1;
    vdata d;
    memset(&d, 0, sizeof d);
    d.step = bp__alloc(a, no * sizeof *d.step);
    d.first = bp__alloc(a, nt1 * sizeof *d.first);
    d.last = bp__alloc(a, nt1 * sizeof *d.last);
    d.vroot = bp__alloc(a, nt1 * sizeof *d.vroot);
    d.par = bp__alloc(a, nt1 * sizeof *d.par);
    d.sfirst = bp__alloc(a, nt1 * sizeof *d.sfirst);
    d.slast = bp__alloc(a, nt1 * sizeof *d.slast);
    d.dfirst = bp__alloc(a, nt1 * sizeof *d.dfirst);
    d.dlast = bp__alloc(a, nt1 * sizeof *d.dlast);
    d.dlive = bp__calloc(a, no + 1, sizeof *d.dlive);
    d.ssize = bp__alloc(a, nt1 * sizeof *d.ssize);
    d.soff = bp__alloc(a, nt1 * sizeof *d.soff);
    d.sout = bp__calloc(a, nt1, 1);
    d.byfirst = bp__alloc(a, nt1 * sizeof *d.byfirst);
    d.bylast = bp__alloc(a, nt1 * sizeof *d.bylast);
    d.tmp = bp__alloc(a, nt1 * sizeof *d.tmp);
    d.tr = (treap){bp__alloc(a, nt1 * sizeof(tnode)), -1};
    d.nt = nt; d.no = no; d.nt1 = nt1;
    bp_status st = bp__etab_build(g, p->engine, &d.et, err);
    if (st) goto out;
    if (!d.step || !d.first || !d.last || !d.vroot || !d.par || !d.sfirst || !d.slast || !d.dfirst || !d.dlast || !d.dlive || !d.ssize || !d.soff ||
        !d.sout || !d.byfirst || !d.bylast || !d.tmp || !d.tr.n) {
        st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory verifying", g->name);
        goto out;
    }

    vf_schedule(v, &d);
    if (!v->n_reasons) vf_tensors(v, &d);
    if (!v->n_reasons) vf_views(v, &d);
    if (!v->n_reasons && (st = vf_view_bytes(v, &d)) != BP_OK) goto out;
    if (!v->n_reasons) {
        bp__vslices vs = {g, p, d.vroot, d.par, d.sfirst, d.slast, d.sout, d.ssize, vf_reason_cb, v};
        if ((st = bp__verify_slices(&vs)) != BP_OK) { st = bp__err(err, st, "%s: out of memory verifying", g->name); goto out; }
    }
    if (!v->n_reasons) vf_inplace(v, &d);
    if (!v->n_reasons && (st = vf_arena(v, &d)) != BP_OK) goto out;
    if (!v->n_reasons) vf_events(v, &d);
    if (!v->n_reasons) vf_stats(v, &d);
    if (!v->n_reasons && (g->n_bodies || p->n_bodies) && (st = vf_bodies(v)) != BP_OK) goto out;

    if (v->n_reasons) {
        if (v->n_reasons > VERIFY_MAX_REASONS && err) {
            size_t L = strlen(err->msg);
            snprintf(err->msg + L, sizeof err->msg - L, "\n... and %d more", v->n_reasons - VERIFY_MAX_REASONS);
        }
        if (err) err->status = BP_ERR_VERIFY;
        st = BP_ERR_VERIFY;
    }
out:
    bp__etab_free(g, &d.et);
    bp__free(a, d.step, no * sizeof *d.step);
    bp__free(a, d.first, nt1 * sizeof *d.first);
    bp__free(a, d.last, nt1 * sizeof *d.last);
    bp__free(a, d.vroot, nt1 * sizeof *d.vroot);
    bp__free(a, d.par, nt1 * sizeof *d.par);
    bp__free(a, d.sfirst, nt1 * sizeof *d.sfirst);
    bp__free(a, d.slast, nt1 * sizeof *d.slast);
    bp__free(a, d.dfirst, nt1 * sizeof *d.dfirst);
    bp__free(a, d.dlast, nt1 * sizeof *d.dlast);
    bp__free(a, d.dlive, (no + 1) * sizeof *d.dlive);
    bp__free(a, d.ssize, nt1 * sizeof *d.ssize);
    bp__free(a, d.soff, nt1 * sizeof *d.soff);
    bp__free(a, d.sout, nt1);
    bp__free(a, d.byfirst, nt1 * sizeof *d.byfirst);
    bp__free(a, d.bylast, nt1 * sizeof *d.bylast);
    bp__free(a, d.tmp, nt1 * sizeof *d.tmp);
    bp__free(a, d.tr.n, nt1 * sizeof(tnode));
    return st;
}
