/*
 * verify_copies.c — the verifier's checks of a plan with copies (recompute
 * and offload; called by verify.c, which has checked the schedule, the
 * tensors, the views and the in-place claims).  It trusts neither the copies
 * table nor the events: it replays the events with a state per storage
 * (which bytes of the arena hold it, if any; whether a host copy holds its
 * current content; whether an external input was released) and checks that
 *   - every op, and every recompute, finds each storage it reads or writes
 *     in the arena (or a weight, or an input not yet released), so every
 *     read sees a valid copy whose own inputs were valid when it was made;
 *   - a PREFETCH has a host copy of the current content (an OFFLOAD after
 *     the last write), a RECOMPUTE runs the storage's producer, which has one
 *     output and the storage no other member;
 *   - each PREFETCH / RECOMPUTE matches a copy of the table (its step, kind,
 *     op and offset) and each copy was made: the copy's evict step is where
 *     the previous one left, its last step where it leaves;
 * then, over the residencies the replay found (a storage from the event that
 * puts it in the arena to the one that takes it out), that no two residencies
 * live at a common step overlap in bytes, all lie inside the arena, and the
 * plan's lower bound is their peak.  Sweep with an active list: O(n x live).
 */
#include "plan/plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vres { int32_t root, first, last; uint64_t off, size; } vres;   /* a residency */

typedef struct vcx {
    const bp_graph *g;
    const bp_plan *p;
    const int32_t *rep;
    const uint64_t *soff, *ssize;
    void (*why)(void *, const char *);
    void *ctx;
    int n;
    uint64_t *at;        /* per root: resident offset or BP_NO_OFFSET */
    int32_t *since;      /* per root: step it came into the arena */
    int32_t *by;         /* per root: the copy that put it there, -1 first placement */
    int32_t *left;       /* per root: step after which it last left, -1 */
    uint8_t *host, *released;
    vres *res; size_t n_res, cap_res;
} vcx;

/* One problem: formatted by bp__err, passed on to verify.c's list. */
#define bad(v, ...) do { bp_error e_; bp__err(&e_, BP_ERR_VERIFY, __VA_ARGS__); (v)->n++; (v)->why((v)->ctx, e_.msg); } while (0)

#define TN(t) bp__names_get(&v->g->tnames, (t))
#define ON(o) bp__names_get(&v->g->onames, (o))

/* The copy of root r made at step s (binary search: sorted by tensor, first). */
static int32_t find_copy(const bp_plan *p, int32_t r, int32_t s)
{
    int32_t lo = 0, hi = p->n_copies;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        const bp_copy *c = &p->copies[mid];
        if (c->tensor < r || (c->tensor == r && c->first < s)) lo = mid + 1; else hi = mid;
    }
    return lo < p->n_copies && p->copies[lo].tensor == r && p->copies[lo].first == s ? lo : -1;
}

/* The copies table on its own: ranges, order, kinds. */
static void check_table(vcx *v)
{
    const bp_plan *p = v->p;
    for (int32_t i = 0; i < p->n_copies; i++) {
        const bp_copy *c = &p->copies[i];
        if (c->tensor < 0 || c->tensor >= p->n_t || v->rep[c->tensor] != c->tensor || v->soff[c->tensor] == BP_NO_OFFSET) {
            bad(v, "copy %d: tensor %d is not a storage in the arena", i + 1, c->tensor);
            continue;
        }
        if (c->evict < 0 || c->evict >= c->first || c->first > c->last || c->last >= p->n_o)
            bad(v, "copy %d of \"%s\": steps evict %d, first %d, last %d are not 0 <= evict < first <= last < %d", i + 1, TN(c->tensor),
                c->evict, c->first, c->last, p->n_o);
        if (i && (p->copies[i - 1].tensor > c->tensor || (p->copies[i - 1].tensor == c->tensor && p->copies[i - 1].first >= c->first)))
            bad(v, "copy %d of \"%s\": the copies are not sorted by tensor, then step", i + 1, TN(c->tensor));
        if ((unsigned)c->kind > BP_COPY_PREFETCH) bad(v, "copy %d of \"%s\": unknown kind %d", i + 1, TN(c->tensor), (int)c->kind);
        if (p->alignment > 1 && c->offset % p->alignment)
            bad(v, "copy %d of \"%s\": offset %llu is not aligned to %llu", i + 1, TN(c->tensor), (unsigned long long)c->offset,
                (unsigned long long)p->alignment);
        if (c->kind == BP_COPY_RECOMPUTE) {
            int32_t pr = v->g->t[c->tensor].producer;
            if (c->op != pr || pr < 0 || v->g->o[pr].n_out != 1)
                bad(v, "copy %d of \"%s\": a recompute must run the tensor's producer, an op with one output", i + 1, TN(c->tensor));
        }
    }
    /* a recomputed storage has one member */
    for (int32_t t = 0; t < p->n_t; t++) {
        int32_t r = v->rep[t];
        if (r == t || r < 0 || p->tp[t].offset == BP_NO_OFFSET) continue;
        for (int32_t i = 0; i < p->n_copies; i++)
            if (p->copies[i].tensor == r && p->copies[i].kind == BP_COPY_RECOMPUTE) {
                bad(v, "copy %d of \"%s\": a recompute, but \"%s\" shares the storage", i + 1, TN(r), TN(t));
                break;
            }
    }
}

static bool res_close(vcx *v, int32_t r, int32_t s)
{
    if (!bp__grow(&v->g->alloc, (void **)&v->res, &v->cap_res, v->n_res + 1, sizeof *v->res)) return false;
    v->res[v->n_res++] = (vres){r, v->since[r], s, v->at[r], bp__align_up(v->ssize[r], v->p->alignment)};
    if (v->by[r] >= 0 && v->p->copies[v->by[r]].last != s)
        bad(v, "copy %d of \"%s\" says it stays until step %d, but the events take it out after step %d", v->by[r] + 1, TN(r),
            v->p->copies[v->by[r]].last, s);
    v->at[r] = BP_NO_OFFSET;
    v->left[r] = s;
    return true;
}

/* Tensor t is valid for an access at step s (what: "op X" or "the recompute of X"). */
static void need(vcx *v, int32_t t, int32_t s, const char *what, int32_t op)
{
    const bp_tensor_plan *tp = &v->p->tp[t];
    int32_t r = v->rep[t];
    if (r >= 0 && v->soff[r] != BP_NO_OFFSET) {
        if (v->at[r] == BP_NO_OFFSET) bad(v, "step %d: %s \"%s\" accesses \"%s\", whose storage \"%s\" is not in the arena then", s, what, ON(op), TN(t), TN(r));
        return;
    }
    if (tp->kind == BP_KIND_DYNAMIC && strcmp(what, "op")) bad(v, "step %d: %s \"%s\" reads the dynamic tensor \"%s\"", s, what, ON(op), TN(t));
    if (tp->kind == BP_KIND_INPUT && r >= 0 && v->released[r]) bad(v, "step %d: %s \"%s\" reads the input \"%s\" after it was released", s, what, ON(op), TN(t));
}

static void ev_copy(vcx *v, const bp_event *e, int32_t s, size_t i)
{
    int32_t t = e->tensor, r = v->rep[t];
    int32_t c = find_copy(v->p, t, s);
    bool rc = e->type == BP_EV_RECOMPUTE;
    if (r != t || c < 0 || v->p->copies[c].kind != (rc ? BP_COPY_RECOMPUTE : BP_COPY_PREFETCH) || v->p->copies[c].offset != e->offset ||
        (rc && v->p->copies[c].op != e->op)) {
        bad(v, "event %zu: %s of \"%s\" at step %d matches no copy of the plan", i + 1, rc ? "RECOMPUTE" : "PREFETCH", TN(t), s);
        return;
    }
    if (v->at[r] != BP_NO_OFFSET) { bad(v, "event %zu: \"%s\" is brought back at step %d but is still in the arena", i + 1, TN(t), s); return; }
    if (v->left[r] != v->p->copies[c].evict)
        bad(v, "copy %d of \"%s\": evict step %d, but the storage left after step %d", c + 1, TN(t), v->p->copies[c].evict, v->left[r]);
    if (rc) {
        const int32_t *in = bp__op_in(v->g, e->op);
        for (int k = 0; k < v->g->o[e->op].n_in; k++) need(v, in[k], s, "the recompute of", e->op);
    } else if (!v->host[r]) {
        bad(v, "event %zu: PREFETCH of \"%s\" at step %d, but no host copy holds its current content", i + 1, TN(t), s);
    }
    v->at[r] = e->offset;
    v->since[r] = s;
    v->by[r] = c;
}

/* Replays the events; false when out of memory. */
static bool replay(vcx *v)
{
    const bp_plan *p = v->p;
    const bp_graph *g = v->g;
    int32_t s = 0, made = 0;
    for (size_t i = 0; i < p->n_ev && v->n < 20; i++) {
        const bp_event *e = &p->ev[i];
        if (e->type == BP_EV_EXEC) {
            const int32_t *io = bp__op_in(g, e->op);
            for (int k = 0; k < g->o[e->op].n_in + g->o[e->op].n_out; k++) {
                need(v, io[k], s, "op", e->op);
                if (k >= g->o[e->op].n_in && v->rep[io[k]] >= 0) v->host[v->rep[io[k]]] = 0;   /* written: a host copy is stale */
            }
            s++;
            continue;
        }
        if (e->tensor < 0 || e->tensor >= p->n_t) { bad(v, "event %zu names no tensor", i + 1); return true; }
        int32_t t = e->tensor, r = v->rep[t];
        bool arena = r >= 0 && v->soff[r] != BP_NO_OFFSET;
        if (e->type == BP_EV_RECOMPUTE || e->type == BP_EV_PREFETCH) {
            made++;
            if (!arena) bad(v, "event %zu: \"%s\" is not in the arena", i + 1, TN(t));
            else ev_copy(v, e, s, i);
        } else if (e->type == BP_EV_ALLOC && arena) {
            if (v->at[r] != BP_NO_OFFSET || e->offset != v->soff[r])
                bad(v, "event %zu: ALLOC of \"%s\" at offset %llu: the storage is already in the arena or sits elsewhere", i + 1, TN(t),
                    (unsigned long long)e->offset);
            v->at[r] = v->soff[r];
            v->since[r] = s;
            v->by[r] = -1;
        } else if ((e->type == BP_EV_FREE || e->type == BP_EV_OFFLOAD) && arena) {
            int32_t st = e->type == BP_EV_OFFLOAD ? s - 1 : s - 1;
            if (v->at[r] == BP_NO_OFFSET || v->at[r] != e->offset) {
                bad(v, "event %zu: %s of \"%s\" after step %d, which is not in the arena at offset %llu", i + 1,
                    e->type == BP_EV_FREE ? "FREE" : "OFFLOAD", TN(t), st, (unsigned long long)e->offset);
                continue;
            }
            if (e->type == BP_EV_OFFLOAD) v->host[r] = 1;
            if (!res_close(v, r, st)) return false;
        } else if (e->type == BP_EV_FREE && r >= 0) {
            v->released[r] = 1;
        } else if (e->type == BP_EV_OFFLOAD) {
            bad(v, "event %zu: OFFLOAD of \"%s\", which is not in the arena", i + 1, TN(t));
        }
    }
    if (made != p->n_copies && !v->n) bad(v, "the plan lists %d copies, its events make %d", p->n_copies, made);
    for (int32_t r = 0; r < p->n_t; r++)
        if (v->rep[r] == r && v->at[r] != BP_NO_OFFSET && !res_close(v, r, p->n_o - 1)) return false;
    return true;
}

static int cmp_res_first(const void *x, const void *y)
{
    const vres *a = x, *b = y;
    return a->first != b->first ? (a->first < b->first ? -1 : 1) : (a->root < b->root ? -1 : a->root > b->root);
}

/* No two residencies at a common step share bytes; all inside the arena;
 * the lower bound is their peak. */
static bool overlaps(vcx *v)
{
    const bp_plan *p = v->p;
    qsort(v->res, v->n_res, sizeof *v->res, cmp_res_first);
    size_t *act = bp__alloc(&v->g->alloc, (v->n_res ? v->n_res : 1) * sizeof *act), na = 0;
    int64_t *live = bp__calloc(&v->g->alloc, (size_t)p->n_o + 1, sizeof *live);
    if (!act || !live) {
        bp__free(&v->g->alloc, act, (v->n_res ? v->n_res : 1) * sizeof *act);
        bp__free(&v->g->alloc, live, ((size_t)p->n_o + 1) * sizeof *live);
        return false;
    }
    for (size_t i = 0; i < v->n_res && v->n < 20; i++) {
        const vres *x = &v->res[i];
        if (x->off + x->size > p->stats.arena_bytes || x->off + x->size < x->off)
            bad(v, "\"%s\" [%llu, +%llu) at steps [%d, %d] lies outside the arena of %llu bytes", TN(x->root), (unsigned long long)x->off,
                (unsigned long long)x->size, x->first, x->last, (unsigned long long)p->stats.arena_bytes);
        live[x->first] += (int64_t)x->size;
        live[x->last + 1] -= (int64_t)x->size;
        size_t k = 0;
        for (size_t j = 0; j < na; j++) {
            const vres *y = &v->res[act[j]];
            if (y->last < x->first) continue;
            act[k++] = act[j];
            if (x->size && y->size && x->off < y->off + y->size && y->off < x->off + x->size)
                bad(v, "\"%s\" [%llu, +%llu) in the arena at steps [%d, %d] and \"%s\" [%llu, +%llu) at steps [%d, %d] overlap in bytes",
                    TN(x->root), (unsigned long long)x->off, (unsigned long long)x->size, x->first, x->last, TN(y->root),
                    (unsigned long long)y->off, (unsigned long long)y->size, y->first, y->last);
        }
        na = k;
        act[na++] = i;
    }
    int64_t run = 0, best = 0, at_peak = -1;
    for (int32_t s = 0; s < p->n_o; s++) {
        run += live[s];
        if (run > best) best = run;
        if (s == p->stats.peak_step) at_peak = run;
    }
    if (!v->n && p->stats.lower_bound_bytes != (uint64_t)best)
        bad(v, "the plan's lower bound %llu differs from the peak of its copies' live bytes, %lld", (unsigned long long)p->stats.lower_bound_bytes,
            (long long)best);
    if (!v->n && at_peak != best) bad(v, "peak_step %d is not a step where the live bytes reach their maximum %lld", p->stats.peak_step, (long long)best);
    bp__free(&v->g->alloc, act, (v->n_res ? v->n_res : 1) * sizeof *act);
    bp__free(&v->g->alloc, live, ((size_t)p->n_o + 1) * sizeof *live);
    return true;
}

bool bp__verify_copies(const bp_graph *g, const bp_plan *p, const int32_t *rep, const uint64_t *soff, const uint64_t *ssize,
                       void (*why)(void *ctx, const char *msg), void *ctx)
{
    const bp_allocator *a = &g->alloc;
    size_t nt1 = g->n_t ? g->n_t : 1;
    vcx v = {g, p, rep, soff, ssize, why, ctx, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0};
    v.at = bp__alloc(a, nt1 * sizeof *v.at);
    v.since = bp__alloc(a, nt1 * sizeof *v.since);
    v.by = bp__alloc(a, nt1 * sizeof *v.by);
    v.left = bp__alloc(a, nt1 * sizeof *v.left);
    v.host = bp__calloc(a, nt1, 1);
    v.released = bp__calloc(a, nt1, 1);
    bool ok = v.at && v.since && v.by && v.left && v.host && v.released;
    if (ok) {
        for (size_t t = 0; t < g->n_t; t++) { v.at[t] = BP_NO_OFFSET; v.since[t] = v.by[t] = v.left[t] = -1; }
        check_table(&v);
        if (!v.n) ok = replay(&v);
        if (ok && !v.n) ok = overlaps(&v);
    }
    bp__free(a, v.at, nt1 * sizeof *v.at);
    bp__free(a, v.since, nt1 * sizeof *v.since);
    bp__free(a, v.by, nt1 * sizeof *v.by);
    bp__free(a, v.left, nt1 * sizeof *v.left);
    bp__free(a, v.host, nt1);
    bp__free(a, v.released, nt1);
    bp__free(a, v.res, v.cap_res * sizeof *v.res);
    return ok;
}
