/*
 * fallback.c — recompute and offload when the best order's packed arena is
 * over the budget (bp__plan_fallback; the model is fallback_model.c, the
 * plan it writes fallback_out.c; design: docs/design/fallback.md).
 *
 * Deterministic greedy over the plan's fixed order.  Repeat: take the step
 * where the live bytes peak; every storage resident there but not used there
 * is a candidate, evicted over the gap between its uses around the peak, by
 * recompute (cost: its op's, plus recursively what its inputs need to be
 * valid again at the next use) or by offload (the transfer time not hidden
 * behind the compute of the gap, given the transfers already queued there);
 * apply the lowest cost per byte (ties: the longer gap, the lower tensor id,
 * recompute first), lazily re-scored, until the peak is at the target.  Then
 * pack every copy with bestfit; while the arena is over the budget, lower
 * the target by the excess and go on.  With offload allowed, two last
 * resorts: split every gap of the storages placed above the budget, and
 * finally offload every storage between every two uses, which fits any
 * budget at or above the largest working set (each step then holds only the
 * storages it uses).  Infeasible: a certificate, the op whose working set
 * (or, for recompute only, its working set plus the storages that cannot be
 * recomputed) exceeds the budget, and the smallest budget bufplan fits.
 */
#include "plan/fallback.h"
#include "schedule/schedule_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef struct fb_cand {
    double score;     /* cost per byte */
    int32_t gap;      /* steps freed */
    int32_t k, i;     /* storage, use index */
    uint8_t mode;
} fb_cand;

typedef struct fb_heap {
    fb_cand *c;
    size_t n, cap;
} fb_heap;

static bool cand_less(const fb_cand *a, const fb_cand *b)
{
    if (a->score != b->score) return a->score < b->score;
    if (a->gap != b->gap) return a->gap > b->gap;
    if (a->k != b->k) return a->k < b->k;
    return a->mode < b->mode;
}

static bool heap_push(const bp_allocator *al, fb_heap *h, fb_cand c)
{
    if (!bp__grow(al, (void **)&h->c, &h->cap, h->n + 1, sizeof *h->c)) return false;
    size_t i = h->n++;
    while (i && cand_less(&c, &h->c[(i - 1) / 2])) { h->c[i] = h->c[(i - 1) / 2]; i = (i - 1) / 2; }
    h->c[i] = c;
    return true;
}

static fb_cand heap_pop(fb_heap *h)
{
    fb_cand top = h->c[0], last = h->c[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const fb_cand *best = &last;
        if (l < h->n && cand_less(&h->c[l], best)) { m = l; best = &h->c[l]; }
        if (r < h->n && cand_less(&h->c[r], best)) m = r;
        if (m == i) break;
        h->c[i] = h->c[m];
        i = m;
    }
    if (h->n) h->c[i] = last;
    return top;
}

/* Scores candidate (k, i, mode) now; false when it is no longer one.  The
 * score is cost per byte; the other variants of the small-graph search
 * (m->variant) weigh the gap freed or the bytes more. */
static bool cand_score(const fb_model *m, fb_cand *c)
{
    const fb_store *x = &m->st[c->k];
    double cost = c->mode == FB_RECOMP ? bp__fb_recomp_cost(m, c->k, x->use[c->i], 0) : bp__fb_offload_cost(m, c->k, c->i);
    if (cost < 0) return false;
    double b = (double)(x->size ? x->size : 1);
    c->gap = x->use[c->i] - x->use[c->i - 1];
    switch (m->variant) {
    case 1: c->score = cost / (b * (double)c->gap); break;
    case 2: c->score = cost / (b * b); break;
    case 3: c->score = cost; break;
    default: c->score = cost / b; break;
    }
    return true;
}

/* The evictions applied, in order, so that a plan can be replayed without
 * one of them (the removal pass of the small-graph search). */
typedef struct fb_ev {
    int32_t k, step;
    uint8_t mode;
} fb_ev;

typedef struct fb_log {
    fb_ev *e;
    size_t n, cap;
} fb_log;

/* Evicts the gap before use i of storage k and logs it (log may be NULL). */
static bp_status evict_logged(fb_model *m, fb_log *log, int32_t k, int32_t i, uint8_t mode, bp_error *err)
{
    if (log) {
        if (!bp__grow(m->a, (void **)&log->e, &log->cap, log->n + 1, sizeof *log->e))
            return bp__err(err, BP_ERR_NOMEM, "%s: out of memory planning recomputes", m->g->name);
        log->e[log->n++] = (fb_ev){k, m->st[k].use[i], mode};
    }
    return bp__fb_evict(m, k, i, mode, err);
}

/* The gap of storage k around step P: use index i with use[i-1] < P < use[i]
 * and the bytes kept across it; -1 when there is none. */
static int32_t gap_at(const fb_store *x, int32_t P)
{
    if (x->n < 2 || P <= x->use[0] || P >= x->use[x->n - 1]) return -1;
    int32_t i = bp__fb_use_at(x, P);
    return x->use[i] != P && x->mode[i] == FB_KEEP ? i : -1;
}

static bp_status gather(fb_model *m, int32_t P, fb_heap *h)
{
    h->n = 0;
    for (size_t k = 0; k < m->ns; k++) {
        const fb_store *x = &m->st[k];
        int32_t i = gap_at(x, P);
        if (i < 0 || !x->size) continue;
        for (uint8_t mode = FB_RECOMP; mode <= FB_PREF; mode++) {
            if (mode == FB_RECOMP && !((m->allow & BP_FALLBACK_RECOMPUTE) && x->can_recomp)) continue;
            if (mode == FB_PREF && !((m->allow & BP_FALLBACK_OFFLOAD) && x->can_pref)) continue;
            fb_cand c = {0, 0, (int32_t)k, i, mode};
            if (cand_score(m, &c) && !heap_push(m->a, h, c))
                return bp__err(NULL, BP_ERR_NOMEM, "out of memory");
        }
    }
    return BP_OK;
}

/* Lowers the live peak to target; *stuck when a peak has no candidate left. */
static bp_status reduce(fb_model *m, int64_t target, double deadline, fb_heap *h, fb_log *log, bool *stuck, bp_error *err)
{
    *stuck = false;
    size_t cap = 1024;   /* evictions: a bound against recompute reads re-raising a peak forever */
    for (size_t k = 0; k < m->ns; k++) cap += 4 * (size_t)m->st[k].n_base;
    for (size_t done = 0;; done++) {
        if (done > cap) { *stuck = true; return BP_OK; }
        int32_t P;
        if (bp__fb_live_max(m, &P) <= target) return BP_OK;
        if (deadline > 0 && bp__now() > deadline) { *stuck = true; return BP_OK; }
        if (gather(m, P, h)) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory planning recomputes", m->g->name);
        if (!h->n) { *stuck = true; return BP_OK; }
        while (h->n && bp__fb_live_at(m, P) > target) {
            fb_cand c = heap_pop(h);
            double old = c.score;
            c.i = gap_at(&m->st[c.k], P);
            if (c.i < 0 || !cand_score(m, &c)) continue;
            if (c.score > old && h->n && cand_less(&h->c[0], &c)) {
                if (!heap_push(m->a, h, c)) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", m->g->name);
                continue;
            }
            bp_status s = evict_logged(m, log, c.k, c.i, c.mode, err);
            if (s) return s;
            if (++done > cap) { *stuck = true; return BP_OK; }
        }
    }
}

/* ------------------------------------------------------------- packing */

typedef struct fb_pack {
    bp_interval *iv;
    uint64_t *off;
    size_t n, cap;
    uint64_t arena;
} fb_pack;

static void pack_free(const bp_allocator *a, fb_pack *k)
{
    bp__free(a, k->iv, k->cap * sizeof *k->iv);
    bp__free(a, k->off, k->cap * sizeof *k->off);
    memset(k, 0, sizeof *k);
}

/* Every copy of every storage as an interval, placed by bestfit. */
static bp_status pack(fb_model *m, fb_pack *k, bp_error *err)
{
    const bp_allocator *a = m->a;
    size_t n = 0, mx = 1;
    for (size_t s = 0; s < m->ns; s++) {
        size_t c = (size_t)bp__fb_segments(&m->st[s], NULL, NULL, NULL);
        n += c;
        if (c > mx) mx = c;
    }
    pack_free(a, k);
    k->cap = n ? n : 1;
    k->iv = bp__alloc(a, k->cap * sizeof *k->iv);
    k->off = bp__alloc(a, k->cap * sizeof *k->off);
    int32_t *f = bp__alloc(a, mx * sizeof *f), *l = bp__alloc(a, mx * sizeof *l);
    uint8_t *md = bp__alloc(a, mx);
    bp_status st = BP_OK;
    if (!k->iv || !k->off || !f || !l || !md) st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory packing copies", m->g->name);
    for (size_t s = 0; s < m->ns && !st; s++) {
        int32_t c = bp__fb_segments(&m->st[s], f, l, md);
        for (int32_t j = 0; j < c; j++)
            k->iv[k->n++] = (bp_interval){f[j], (int64_t)l[j] + 1, m->st[s].size, m->p->alignment, BP_NO_OFFSET};
    }
    if (!st) {
        bp_assign_options ao;
        bp_assign_options_init(&ao);
        ao.alloc = a;
        bp_assign_result ar;
        st = bp_assign_intervals(k->iv, k->n, BP_ASSIGN_BESTFIT, &ao, k->off, &ar, err);
        k->arena = ar.arena_bytes;
    }
    bp__free(a, f, mx * sizeof *f);
    bp__free(a, l, mx * sizeof *l);
    bp__free(a, md, mx);
    return st;
}

/* Offloads every kept gap of the storages with a copy above the budget (all
 * of them when all is set), so the packer may move their pieces. */
static bp_status split_high(fb_model *m, const fb_pack *k, uint64_t budget, bool all, fb_log *log, bp_error *err)
{
    size_t j = 0;
    for (size_t s = 0; s < m->ns; s++) {
        fb_store *x = &m->st[s];
        int32_t c = bp__fb_segments(x, NULL, NULL, NULL);
        bool high = all;
        for (int32_t q = 0; q < c; q++, j++) if (k->off[j] + x->size > budget) high = true;
        if (!high || !x->can_pref) continue;
        for (int32_t i = 1; i < x->n; i++) {
            if (x->mode[i] != FB_KEEP) continue;
            bp_status st = evict_logged(m, log, (int32_t)s, i, FB_PREF, err);
            if (st) return st;
        }
    }
    return BP_OK;
}

/* The greedy from the model's current state: lower the live peak to the
 * budget, pack, and while the arena is over it lower the target and go on.
 * *fits tells whether k holds a plan within the budget. */
static bp_status rounds(fb_model *m, uint64_t budget, uint64_t floor, double deadline, fb_pack *k, fb_log *log, bool *fits, bp_error *err)
{
    fb_heap h = {0};
    bp_status st = BP_OK;
    int64_t target = (int64_t)budget;
    *fits = false;
    for (int round = 0; !st && round < 64; round++) {
        bool stuck = false;
        st = reduce(m, target, deadline, &h, log, &stuck, err);
        if (!st) st = pack(m, k, err);
        if (st || k->arena <= budget) { *fits = !st; break; }
        /* below the live peak reached, by twice the excess: each round costs a packing */
        int64_t excess = (int64_t)(k->arena - budget), step = 2 * (excess > (int64_t)m->p->alignment ? excess : (int64_t)m->p->alignment);
        int64_t live = bp__fb_live_max(m, NULL);
        if (live < target) target = live;
        if (stuck || target - step < (int64_t)floor) break;
        target -= step;
    }
    bp__free(m->a, h.c, h.cap * sizeof *h.c);
    return st;
}

/* One attempt at a budget: the greedy from the plan's own residency and its
 * packing, then (offload allowed) the last resorts.  *fits tells whether k
 * holds a plan within it; log (may be NULL) gets the evictions applied. */
static bp_status attempt(fb_model *m, uint64_t budget, uint64_t floor, double deadline, fb_pack *k, fb_log *log, bool *fits, bp_error *err)
{
    bp_status st = bp__fb_model_reset(m, err);
    if (log) log->n = 0;
    *fits = false;
    if (!st) st = rounds(m, budget, floor, deadline, k, log, fits, err);
    if (st || *fits || !(m->allow & BP_FALLBACK_OFFLOAD)) return st;
    /* the last resorts */
    for (int r = 0; r < 3 && !st && !*fits; r++) {
        if (r == 2) { st = bp__fb_model_reset(m, err); if (log) log->n = 0; }
        if (!st) st = split_high(m, k, budget, r == 2, log, err);
        if (!st) st = pack(m, k, err);
        if (!st) *fits = k->arena <= budget;
    }
    return st;
}

/* ------------------------------------------------- small-graph search */

#define FB_SEARCH_OPS 400        /* the search runs on graphs up to this many ops */
#define FB_SEARCH_REPLAYS 3000   /* its deterministic work budget: rebuilds (replay and repair), */
#define FB_SEARCH_WORK 100000    /* and at most this many over the ops (a rebuild is O(n log n)) */
#define FB_VARIANTS 4            /* scoring variants of the greedy (cand_score) */

/* The added cost of the model's copies: each recompute's op, each offload's
 * full transfer (an upper bound of what is not hidden). */
static double model_cost(const fb_model *m)
{
    double c = 0;
    for (size_t k = 0; k < m->ns; k++) {
        const fb_store *x = &m->st[k];
        for (int32_t i = 1; i < x->n; i++)
            c += x->mode[i] == FB_RECOMP ? bp__op_cost(m->g, x->op) : x->mode[i] == FB_PREF ? bp__fb_xfer(m, (int32_t)k) : 0;
    }
    return c;
}

/* Rebuilds the model from the plan's residency with the evictions of src but
 * entry skip (SIZE_MAX: none); those still applicable go to dst. */
static bp_status replay(fb_model *m, const fb_log *src, size_t skip, fb_log *dst, bp_error *err)
{
    bp_status st = bp__fb_model_reset(m, err);
    dst->n = 0;
    for (size_t j = 0; j < src->n && !st; j++) {
        if (j == skip) continue;
        const fb_ev *e = &src->e[j];
        const fb_store *x = &m->st[e->k];
        int32_t i = bp__fb_use_at(x, e->step);
        if (i <= 0 || i >= x->n || x->use[i] != e->step || x->mode[i] != FB_KEEP) continue;
        if (e->mode == FB_RECOMP && bp__fb_recomp_cost(m, e->k, e->step, 0) < 0) continue;
        st = evict_logged(m, dst, e->k, i, e->mode, err);
    }
    return st;
}

static bool log_copy(const bp_allocator *a, fb_log *dst, const fb_log *src)
{
    if (!bp__grow(a, (void **)&dst->e, &dst->cap, src->n ? src->n : 1, sizeof *dst->e)) return false;
    if (src->n) memcpy(dst->e, src->e, src->n * sizeof *dst->e);
    dst->n = src->n;
    return true;
}

/* Local improvement of the plan in cur (the model holds it, cost *c): for
 * each eviction, latest first, rebuild without it and repair with the greedy;
 * keep the result when it fits and costs less (or the same with fewer
 * evictions).  Stops at the work budget *left. */
static bp_status improve(fb_model *m, uint64_t budget, uint64_t floor, double deadline, fb_pack *k, fb_log *cur, fb_log *tmp,
                         double *c, int *left, bp_error *err)
{
    bp_status st = BP_OK;
    bool better = true;
    while (better && !st) {
        better = false;
        for (size_t j = cur->n; j-- > 0 && !st && *left > 0;) {
            --*left;
            bool fits = false;
            st = replay(m, cur, j, tmp, err);
            if (!st) st = rounds(m, budget, floor, deadline, k, tmp, &fits, err);
            if (st || !fits) continue;
            double c2 = model_cost(m);
            if (c2 < *c - 1e-9 || (c2 <= *c && tmp->n < cur->n)) {
                fb_log t = *cur; *cur = *tmp; *tmp = t;
                *c = c2;
                better = true;
                if (j > cur->n) j = cur->n;
            }
        }
    }
    return st;
}

/* The plan at a budget.  Large graphs: one attempt.  Small ones (up to
 * FB_SEARCH_OPS ops): every scoring variant of the greedy, each improved
 * by improve(), and the cheapest that fits, rebuilt into the model and k.
 * Deterministic: the work budget counts replays, not time. */
static bp_status search(fb_model *m, uint64_t budget, uint64_t floor, double deadline, fb_pack *k, bool *fits, bp_error *err)
{
    if (m->no > FB_SEARCH_OPS) return attempt(m, budget, floor, deadline, k, NULL, fits, err);
    fb_log cur = {0}, tmp = {0}, best = {0};
    double best_cost = 0;
    bool any = false;
    int left = FB_SEARCH_WORK / (m->no ? m->no : 1);
    if (left > FB_SEARCH_REPLAYS) left = FB_SEARCH_REPLAYS;
    bp_status st = BP_OK;
    for (int v = 0; v < FB_VARIANTS && !st; v++) {
        bool f = false;
        m->variant = v;
        st = attempt(m, budget, floor, deadline, k, &cur, &f, err);
        if (st || !f) continue;
        double c = model_cost(m);
        st = improve(m, budget, floor, deadline, k, &cur, &tmp, &c, &left, err);
        if (st) break;
        if (!any || c < best_cost - 1e-9) {
            if (!log_copy(m->a, &best, &cur)) st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory planning recomputes", m->g->name);
            best_cost = c;
            any = true;
        }
    }
    m->variant = 0;
    *fits = false;
    if (!st && any) {
        st = replay(m, &best, SIZE_MAX, &tmp, err);
        if (!st) st = pack(m, k, err);
        if (!st) *fits = k->arena <= budget;
        assert(st || *fits);   /* the replayed best fitted when it was found */
    }
    bp__free(m->a, cur.e, cur.cap * sizeof *cur.e);
    bp__free(m->a, tmp.e, tmp.cap * sizeof *tmp.e);
    bp__free(m->a, best.e, best.cap * sizeof *best.e);
    return st;
}

/* ---------------------------------------------------------- certificate */

/* Up to three names of the storages that cannot be recomputed, resident
 * across step s without a use there. */
static void fixed_names(const fb_model *m, int32_t s, char *names, size_t cap)
{
    size_t len = 0;
    int listed = 0;
    names[0] = 0;
    for (size_t k = 0; k < m->ns && listed < 3; k++) {
        const fb_store *x = &m->st[k];
        if (x->can_recomp || !x->n_base || s <= x->base[0] || s >= x->base[x->n_base - 1]) continue;
        int32_t lo = 0, hi = x->n_base;
        while (lo < hi) { int32_t mid = lo + (hi - lo) / 2; if (x->base[mid] < s) lo = mid + 1; else hi = mid; }
        if (x->base[lo] == s || len + 64 >= cap) continue;
        int w = snprintf(names + len, cap - len, "%s\"%.40s\"", listed ? ", " : "", bp__names_get(&m->g->tnames, x->root));
        if (w > 0) len += (size_t)w;
        listed++;
    }
}

/* fixed[s] for every step: the bytes of the storages that cannot be
 * recomputed, resident across s without a use there (a difference array). */
static bool fixed_all(const fb_model *m, int64_t *fixed)
{
    int64_t *d = bp__calloc(m->a, (size_t)m->no + 1, sizeof *d);
    if (!d) return false;
    for (size_t k = 0; k < m->ns; k++) {
        const fb_store *x = &m->st[k];
        if (x->can_recomp || x->n_base < 2) continue;
        d[x->base[0] + 1] += (int64_t)x->size;
        d[x->base[x->n_base - 1]] -= (int64_t)x->size;
        for (int32_t i = 1; i + 1 < x->n_base; i++) { d[x->base[i]] -= (int64_t)x->size; d[x->base[i] + 1] += (int64_t)x->size; }
    }
    int64_t run = 0;
    for (int32_t s = 0; s < m->no; s++) { run += d[s]; fixed[s] = run; }
    bp__free(m->a, d, ((size_t)m->no + 1) * sizeof *d);
    return true;
}

/* The step of the largest working set (plus fixed[s] when given); returns
 * its bytes. */
static uint64_t floor_of(const fb_model *m, const uint64_t *ws, const int64_t *fixed, int32_t *at)
{
    uint64_t best = 0;
    *at = 0;
    for (int32_t s = 0; s < m->no; s++) {
        uint64_t b = ws[s] + (fixed ? (uint64_t)fixed[s] : 0);
        if (b > best) { best = b; *at = s; }
    }
    return best;
}

/* The smallest budget in (lo, hi] that attempt() fits, by bisection (a few
 * probes); hi fits by assumption. */
static uint64_t smallest_fit(fb_model *m, uint64_t lo, uint64_t hi, uint64_t floor, double deadline, fb_pack *k)
{
    uint64_t al = m->p->alignment ? m->p->alignment : 1;
    for (int probe = 0; probe < 10 && hi - lo > al; probe++) {
        uint64_t mid = lo + (hi - lo) / 2;
        bool fits = false;
        bp_error e;
        if (attempt(m, mid, floor, deadline, k, NULL, &fits, &e)) break;
        if (fits) hi = mid; else lo = mid;
    }
    return hi;
}

static const char *fallback_words(unsigned allow)
{
    return allow == BP_FALLBACK_RECOMPUTE ? "recompute" : allow == BP_FALLBACK_OFFLOAD ? "offload" : "recompute and offload";
}

static bp_status certificate(fb_model *m, const bp_plan_options *o, const uint64_t *ws, uint64_t floor, int32_t at, double deadline,
                             fb_pack *k, bp_error *err)
{
    const bp_graph *g = m->g;
    int32_t op = m->p->order[at];
    unsigned long long B = (unsigned long long)o->budget;
    if (o->budget < floor)
        return bp__err(err, BP_ERR_BUDGET,
                       "%s: no plan fits the budget of %llu bytes, even with %s: op \"%s\" (step %d) needs %llu bytes in the arena at once "
                       "(its inputs and outputs%s%s), which no recompute or offload can shrink; the smallest budget bufplan can fit is %llu bytes",
                       g->name, B, fallback_words(m->allow), bp__names_get(&g->onames, op), at, (unsigned long long)ws[at],
                       g->o[op].n_ws ? ", its kernel workspaces included" : "", at == m->no - 1 ? ", and the graph outputs, which stay in the arena to the end" : "", (unsigned long long)floor);
    if (m->allow & BP_FALLBACK_OFFLOAD)   /* only out of time: the last resort fits any budget >= floor */
        return bp__err(err, BP_ERR_BUDGET, "%s: no plan found within the time limit that fits the budget of %llu bytes (the smallest budget a plan "
                       "with offload fits is %llu bytes; raise --time-limit)", g->name, B, (unsigned long long)floor);
    int64_t *fixed = bp__alloc(m->a, ((size_t)m->no + 1) * sizeof *fixed);
    if (!fixed || !fixed_all(m, fixed)) {
        bp__free(m->a, fixed, ((size_t)m->no + 1) * sizeof *fixed);
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    }
    int32_t fat;
    uint64_t lb = floor_of(m, ws, fixed, &fat), fx = (uint64_t)fixed[fat];
    bp__free(m->a, fixed, ((size_t)m->no + 1) * sizeof *fixed);
    char names[200];
    fixed_names(m, fat, names, sizeof names);
    uint64_t small = smallest_fit(m, o->budget, m->p->stats.arena_bytes, floor, deadline, k);
    if (o->budget < lb)
        return bp__err(err, BP_ERR_BUDGET,
                       "%s: no plan fits the budget of %llu bytes with recompute only: at step %d op \"%s\" needs %llu bytes (its inputs and outputs) "
                       "while %llu bytes of storages that cannot be recomputed (views, in-place outputs, outputs of multi-output ops: %s) stay "
                       "in the arena, %llu in all; the smallest budget bufplan can fit is %llu bytes (with offload: %llu)",
                       g->name, B, fat, bp__names_get(&g->onames, m->p->order[fat]), (unsigned long long)ws[fat], (unsigned long long)fx,
                       names[0] ? names : "none", (unsigned long long)lb, (unsigned long long)small, (unsigned long long)floor);
    return bp__err(err, BP_ERR_BUDGET,
                   "%s: no recompute set found that fits the budget of %llu bytes (a lower bound for recompute only is %llu bytes, at step %d, op \"%s\"); "
                   "the smallest budget bufplan can fit is %llu bytes (with offload: %llu)",
                   g->name, B, (unsigned long long)lb, fat, bp__names_get(&g->onames, m->p->order[fat]), (unsigned long long)small,
                   (unsigned long long)floor);
}

bp_status bp__plan_fallback(const bp_graph *g, const bp_plan_options *o, bp_plan *p, bp_error *err)
{
    fb_model m;
    double bw = (o->host_bandwidth > 0 ? o->host_bandwidth : BP_HOST_BANDWIDTH_DEFAULT) / 1e6;
    bp_status st = bp__fb_model_init(&m, g, p, o->fallback & (BP_FALLBACK_RECOMPUTE | BP_FALLBACK_OFFLOAD), bw, err);
    if (st) return st;
    double deadline = o->time_limit > 0 ? bp__now() + o->time_limit : 0;
    uint64_t *ws = bp__alloc(m.a, ((size_t)m.no + 1) * sizeof *ws);
    fb_pack k = {0};
    if (!ws) { bp__fb_model_free(&m); return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); }
    bp__fb_working_sets(&m, ws);
    int32_t at;
    uint64_t floor = floor_of(&m, ws, NULL, &at);
    bool fits = false;
    if (o->budget >= floor) st = search(&m, o->budget, floor, deadline, &k, &fits, err);
    if (!st && fits) st = bp__fb_write_plan(&m, p, k.off, k.arena, err);
    else if (!st) st = certificate(&m, o, ws, floor, at, deadline, &k, err);
    pack_free(m.a, &k);
    bp__free(m.a, ws, ((size_t)m.no + 1) * sizeof *ws);
    bp__fb_model_free(&m);
    return st;
}

/* ----------------------------------------------------------- references */

/* The storages resident across step F without a use there (saved across the
 * forward / backward turn), by first use; returns how many. */
static size_t saved_across(const fb_model *m, int32_t F, int32_t *ids)
{
    size_t n = 0;
    for (size_t k = 0; k < m->ns; k++)
        if (gap_at(&m->st[k], F) >= 0 && m->st[k].size) ids[n++] = (int32_t)k;
    for (size_t i = 1; i < n; i++) {   /* insertion sort by first use: stable, deterministic */
        int32_t v = ids[i];
        size_t j = i;
        while (j && m->st[ids[j - 1]].use[0] > m->st[v].use[0]) { ids[j] = ids[j - 1]; j--; }
        ids[j] = v;
    }
    return n;
}

bp_status bp__plan_fallback_reference(const bp_graph *g, const bp_plan_options *o, bp_plan *p, int policy, bp_error *err)
{
    fb_model m;
    double bw = (o->host_bandwidth > 0 ? o->host_bandwidth : BP_HOST_BANDWIDTH_DEFAULT) / 1e6;
    bp_status st = bp__fb_model_init(&m, g, p, BP_FALLBACK_RECOMPUTE | BP_FALLBACK_OFFLOAD, bw, err);
    if (st) return st;
    int32_t F = p->stats.peak_step >= 0 ? p->stats.peak_step : 0;
    int32_t *ids = bp__alloc(m.a, (m.ns ? m.ns : 1) * sizeof *ids);
    fb_pack k = {0};
    if (!ids) st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    size_t n = st ? 0 : saved_across(&m, F, ids), seg = 1;
    while (seg * seg < n) seg++;
    for (size_t j = 0; j < n && !st; j++) {
        const fb_store *x = &m.st[ids[j]];
        int32_t i = gap_at(x, F);
        if (i < 0) continue;
        if (policy == 2) st = x->can_pref ? bp__fb_evict(&m, ids[j], i, FB_PREF, err) : BP_OK;
        else if (j % seg != seg - 1 && x->can_recomp && bp__fb_recomp_cost(&m, ids[j], x->use[i], 0) >= 0)
            st = bp__fb_evict(&m, ids[j], i, FB_RECOMP, err);   /* Chen: keep every seg-th as a checkpoint */
    }
    if (!st) st = pack(&m, &k, err);
    if (!st) st = bp__fb_write_plan(&m, p, k.off, k.arena, err);
    pack_free(m.a, &k);
    bp__free(m.a, ids, (m.ns ? m.ns : 1) * sizeof *ids);
    bp__fb_model_free(&m);
    return st;
}
