/*
 * greedy.c — the fast orders: dfs, list (XLA), lpmf (Inductor) and
 * seed, all over the step model of eval.c.
 *
 * dfs:  post-order DFS from the producers of the graph outputs (then the
 *       other sinks), visiting an op's producers in input order: each branch
 *       is finished before the next starts.
 * list: XLA's list scheduler: among ready ops, the one with the largest
 *       bytes freed minus bytes defined.  An op's priority changes when a
 *       storage it touches drops to one remaining toucher (it now frees it,
 *       or may write in place), so that op is re-queued then.  A max-heap
 *       with lazy entries (an entry whose key is stale when popped is
 *       pushed again with its current key; ops already run are skipped)
 *       keeps it O((V + E) log V).
 * lpmf: Inductor's "least peak memory first": with mem1 = memory during the
 *       op and mem2 = memory after it, if some ready op keeps mem1 under the
 *       high-water mark so far, run the one with the lowest mem2; otherwise
 *       the one with the lowest mem1.  Both are prefix queries over the ops'
 *       keys sorted by bytes allocated (an op has two keys when its in-place
 *       write allocates less): keys radix-sorted once, blocks of 64 keys with
 *       an active mask, a small segment tree over the blocks (lp_set).
 * seed: the weighted greedy bufplan started from: priority alpha * freed/cost + beta * distance to the
 *       end of the critical path (cost-weighted longest path to a sink), each
 *       term divided by its maximum over the graph so both lie in [0, 1].
 * Ties go to the lower op id, or to a per-op hash of tie_seed (restarts).
 */
#include "schedule/schedule_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NOMEM(sg) bp__err(err, BP_ERR_NOMEM, "%s: out of memory scheduling", (sg)->g->name)

/* ------------------------------------------------------------------- dfs */

bp_status bp__sched_dfs(const bp__sgraph *sg, uint64_t tie_seed, int32_t *order, bp_error *err)
{
    const bp_graph *g = sg->g;
    int32_t n = sg->n, k = 0;
    const bp_allocator *a = &g->alloc;
    uint8_t *state = bp__calloc(a, (size_t)n + 1, 1);
    int32_t *stk = bp__alloc(a, ((size_t)n + 1) * sizeof *stk);
    int32_t *it = bp__alloc(a, ((size_t)n + 1) * sizeof *it);
    if (!state || !stk || !it) {
        bp__free(a, state, (size_t)n + 1);
        bp__free(a, stk, ((size_t)n + 1) * sizeof *stk);
        bp__free(a, it, ((size_t)n + 1) * sizeof *it);
        return NOMEM(sg);
    }
    /* Roots: producers of outputs (tensor order), then sinks, then the rest. */
    for (int phase = 0; phase < 3; phase++) {
        int32_t lim = phase == 0 ? (int32_t)g->n_t : n;
        for (int32_t i = 0; i < lim; i++) {
            int32_t root;
            if (phase == 0) {
                if (!(g->t[i].flags & BP_TENSOR_OUTPUT) || g->t[i].producer < 0) continue;
                root = g->t[i].producer;
            } else {
                root = i;
                if (phase == 1 && sg->su_off[i + 1] > sg->su_off[i]) continue;
            }
            if (state[root]) continue;
            int32_t sp = 0;
            stk[sp] = root;
            it[sp++] = 0;
            state[root] = 1;
            while (sp) {
                int32_t v = stk[sp - 1], np = sg->pr_off[v + 1] - sg->pr_off[v];
                if (it[sp - 1] < np) {
                    int32_t j = it[sp - 1]++;
                    if (tie_seed && np > 1) j = (int32_t)((j + bp__sched_tie(tie_seed, v)) % (uint64_t)np);
                    int32_t p = sg->pr[sg->pr_off[v] + j];
                    if (!state[p]) { state[p] = 1; stk[sp] = p; it[sp++] = 0; }
                } else {
                    state[v] = 2;
                    order[k++] = v;
                    sp--;
                }
            }
        }
    }
    bp__free(a, state, (size_t)n + 1);
    bp__free(a, stk, ((size_t)n + 1) * sizeof *stk);
    bp__free(a, it, ((size_t)n + 1) * sizeof *it);
    return BP_OK;
}

/* ------------------------------------------------ heap-driven list shapes */

typedef double (*prio_fn)(const bp__sim *s, int32_t op, const void *ctx);

/* Runs the step model, always taking the ready op with the highest
 * priority; entries are lazy (priorities are recomputed when popped). */
static bp_status greedy_heap(const bp__sgraph *sg, prio_fn prio, const void *ctx, uint64_t tie_seed,
                             int32_t *order, bp_error *err)
{
    bp__sim s;
    bp__heap h;
    bp_status st = bp__sim_init(&s, sg, err);
    if (st) return st;
    if (!bp__heap_init(&h, &sg->g->alloc, (size_t)sg->n + 16)) { bp__sim_free(&s); return NOMEM(sg); }
    for (int32_t v = 0; v < sg->n; v++)
        if (!s.npred[v]) bp__heap_push(&h, prio(&s, v, ctx), bp__sched_tie(tie_seed, v), v);
    int32_t k = 0;
    while (k < sg->n && !h.oom) {
        double key;
        int32_t v = bp__heap_pop(&h, &key);
        if (v < 0) break;
        if (s.done[v]) continue;
        double now = prio(&s, v, ctx);
        if (now != key) { /* stale: queue it again at its current priority */
            bp__heap_push(&h, now, bp__sched_tie(tie_seed, v), v);
            continue;
        }
        order[k++] = v;
        bp__sim_run(&s, v);
        for (int32_t i = sg->su_off[v]; i < sg->su_off[v + 1]; i++) {
            int32_t u = sg->su[i];
            if (!s.npred[u]) bp__heap_push(&h, prio(&s, u, ctx), bp__sched_tie(tie_seed, u), u);
        }
        for (int32_t i = 0; i < s.n_last1; i++) {
            int32_t u = bp__sim_last_toucher(&s, s.last1[i]);
            if (u >= 0 && !s.npred[u]) bp__heap_push(&h, prio(&s, u, ctx), bp__sched_tie(tie_seed, u), u);
        }
    }
    bool oom = h.oom;
    bp__heap_free(&h);
    bp__sim_free(&s);
    if (oom) return NOMEM(sg);
    if (k != sg->n) return bp__err(err, BP_ERR_INVALID, "%s: the graph has a cycle", sg->g->name);
    return BP_OK;
}

static double prio_list(const bp__sim *s, int32_t op, const void *ctx)
{
    (void)ctx;
    uint64_t al, fr;
    bp__sim_delta(s, op, &al, &fr);
    return (double)fr - (double)al;
}

bp_status bp__sched_list(const bp__sgraph *sg, uint64_t tie_seed, int32_t *order, bp_error *err)
{
    return greedy_heap(sg, prio_list, NULL, tie_seed, order, err);
}

/* ------------------------------------------------------------------ seed */

typedef struct seed_ctx {
    const bp__sgraph *sg;
    const double *cost, *bl;
    double alpha, beta, n1, n2;
} seed_ctx;

static double prio_seed(const bp__sim *s, int32_t op, const void *vctx)
{
    const seed_ctx *c = vctx;
    uint64_t al, fr;
    bp__sim_delta(s, op, &al, &fr);
    double freed = (double)fr;
    if (c->sg->alloc_full[op] > al) freed += (double)(c->sg->alloc_full[op] - al); /* in-place saves */
    double t1 = c->n1 > 0 ? freed / c->cost[op] / c->n1 : 0, t2 = c->n2 > 0 ? c->bl[op] / c->n2 : 0;
    return c->alpha * t1 + c->beta * t2;
}

bp_status bp__sched_seed(const bp__sgraph *sg, const double *cost, double alpha, double beta, uint64_t tie_seed,
                         int32_t *order, bp_error *err)
{
    const bp_allocator *a = &sg->g->alloc;
    int32_t n = sg->n;
    /* The Kahn order lives in `order` and the in-degrees in `bl` until the
     * bottom levels overwrite them: no other array of n entries. */
    double *bl = bp__alloc(a, ((size_t)n + 1) * sizeof *bl);
    int32_t *topo = order, *indeg = (int32_t *)bl;
    bp_status st = BP_OK;
    if (!bl) return NOMEM(sg);
    /* Kahn order, then bottom levels in reverse. */
    int32_t qh = 0, qt = 0;
    for (int32_t v = 0; v < n; v++) {
        indeg[v] = sg->pr_off[v + 1] - sg->pr_off[v];
        if (!indeg[v]) topo[qt++] = v;
    }
    while (qh < qt) {
        int32_t v = topo[qh++];
        for (int32_t i = sg->su_off[v]; i < sg->su_off[v + 1]; i++)
            if (--indeg[sg->su[i]] == 0) topo[qt++] = sg->su[i];
    }
    if (qt != n) { st = bp__err(err, BP_ERR_INVALID, "%s: the graph has a cycle", sg->g->name); goto out; }
    seed_ctx c = {sg, cost, bl, alpha, beta, 0, 0};
    /* bl[v] is written after every successor's (reverse topological order);
     * the int32 in-degrees it overlays are no longer read. */
    for (int32_t k = n - 1; k >= 0; k--) {
        int32_t v = topo[k];
        double m = 0;
        for (int32_t i = sg->su_off[v]; i < sg->su_off[v + 1]; i++)
            if (bl[sg->su[i]] > m) m = bl[sg->su[i]];
        bl[v] = cost[v] + m;
        if (bl[v] > c.n2) c.n2 = bl[v];
        double mf = 0;
        for (int32_t i = sg->to_off[v]; i < sg->to_off[v + 1]; i++) mf += (double)sg->ssize[sg->to[i]];
        if (mf / cost[v] > c.n1) c.n1 = mf / cost[v];
    }
    st = greedy_heap(sg, prio_seed, &c, tie_seed, order, err);
out:
    bp__free(a, bl, ((size_t)n + 1) * sizeof *bl);
    return st;
}

/* ------------------------------------------------------------------ lpmf */

/* Stable LSD radix sort of items by key(ctx, item), 8-bit digits; a digit
 * that every key shares is skipped.  tmp holds n items. */
typedef uint64_t (*lp_keyfn)(const void *ctx, int32_t item);

static void lp_radix(int32_t *a, int32_t *tmp, int32_t n, lp_keyfn key, const void *ctx)
{
    int32_t cnt[8][256];
    memset(cnt, 0, sizeof cnt);
    for (int32_t i = 0; i < n; i++) {
        uint64_t k = key(ctx, a[i]);
        for (int d = 0; d < 8; d++) cnt[d][(k >> (8 * d)) & 255]++;
    }
    int32_t *src = a, *dst = tmp;
    for (int d = 0; d < 8; d++) {
        int32_t off = 0;
        bool trivial = false;
        for (int x = 0; x < 256; x++) {
            int32_t c = cnt[d][x];
            if (c == n) trivial = true;
            cnt[d][x] = off;
            off += c;
        }
        if (trivial) continue;
        for (int32_t i = 0; i < n; i++) dst[cnt[d][(key(ctx, src[i]) >> (8 * d)) & 255]++] = src[i];
        int32_t *x = src; src = dst; dst = x;
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
}

typedef struct lp_tie_ctx { uint64_t seed; } lp_tie_ctx;
static uint64_t lp_key_tie(const void *ctx, int32_t op) { return bp__sched_tie(((const lp_tie_ctx *)ctx)->seed, op); }
/* A leaf code is op * 2 + k: k = 0 the op's allocation with its in-place
 * write, k = 1 without it. */
static uint64_t lp_key_alloc(const void *ctx, int32_t code)
{
    const bp__sgraph *sg = ctx;
    return (code & 1) ? sg->alloc_full[code >> 1] : sg->alloc_ip[code >> 1];
}

/* lpmf's ready set.  Leaves are the ops' allocation keys sorted by
 * (allocation, tie, op); an op has one leaf, or two when its in-place write
 * allocates less, and at most one of them is active.  Blocks of 64 leaves
 * keep a mask of their active leaves; a segment tree over the blocks keeps,
 * per node, the active leaf with the min (net, leaf) and the smallest active
 * leaf.  An update rescans one block (at most 64 leaves, usually one or two)
 * and walks log(L / 64) nodes, all in a few hundred KiB. */
typedef struct lp_node { double net; int32_t arg, first; } lp_node;

typedef struct lp_set {
    int32_t L, nb, P, nd;
    int32_t *code;       /* L: leaf -> code */
    int32_t *leaf;       /* 2n: code -> leaf (both codes of an op share a leaf when its keys are equal) */
    double *net;         /* n: the op's net (mem2 - mem), valid while it is active */
    uint64_t *mask;      /* nb: active leaves of each block */
    lp_node *t;          /* 2P */
    uint64_t *dv;        /* nd: the distinct keys, ascending */
    int32_t *dc;         /* nd: leaves with a key <= dv[i] */
} lp_set;

static inline bool lp_less(double na, int32_t la, double nb, int32_t lb) { return na < nb || (na == nb && la < lb); }

static void lp_block(lp_set *p, int32_t b)
{
    lp_node x = {INFINITY, INT32_MAX, INT32_MAX};
    uint64_t m = p->mask[b];
    if (m) x.first = b * 64 + __builtin_ctzll(m);
    while (m) {
        int32_t i = b * 64 + __builtin_ctzll(m);
        m &= m - 1;
        double nt = p->net[p->code[i] >> 1];
        if (lp_less(nt, i, x.net, x.arg)) { x.net = nt; x.arg = i; }
    }
    int32_t k = b + p->P;
    p->t[k] = x;
    for (k /= 2; k >= 1; k /= 2) {
        const lp_node *l = &p->t[2 * k], *r = l + 1;
        lp_node y = lp_less(r->net, r->arg, l->net, l->arg) ? *r : *l;
        y.first = l->first < r->first ? l->first : r->first;
        lp_node *o = &p->t[k];
        if (o->net == y.net && o->arg == y.arg && o->first == y.first) break; /* the rest is unchanged */
        *o = y;
    }
}

/* The active leaf with the min (net, leaf) among leaves [0, lo); -1 if none. */
static int32_t lp_query(const lp_set *p, int32_t lo)
{
    double bn = INFINITY;
    int32_t ba = INT32_MAX, fb = lo >> 6;
    for (int32_t l = p->P, r = p->P + fb; l < r; l /= 2, r /= 2) {
        if (l & 1) { if (lp_less(p->t[l].net, p->t[l].arg, bn, ba)) { bn = p->t[l].net; ba = p->t[l].arg; } l++; }
        if (r & 1) { --r; if (lp_less(p->t[r].net, p->t[r].arg, bn, ba)) { bn = p->t[r].net; ba = p->t[r].arg; } }
    }
    if (lo & 63) {
        uint64_t m = p->mask[fb] & ((1ull << (lo & 63)) - 1);
        while (m) {
            int32_t i = fb * 64 + __builtin_ctzll(m);
            m &= m - 1;
            double nt = p->net[p->code[i] >> 1];
            if (lp_less(nt, i, bn, ba)) { bn = nt; ba = i; }
        }
    }
    return ba == INT32_MAX ? -1 : ba;
}

static void lp_set_free(const bp_allocator *a, lp_set *p, int32_t n)
{
    size_t L = (size_t)2 * n + 1;
    bp__free(a, p->code, L * sizeof *p->code);
    bp__free(a, p->leaf, L * sizeof *p->leaf);
    bp__free(a, p->net, ((size_t)n + 1) * sizeof *p->net);
    bp__free(a, p->mask, ((size_t)p->nb + 1) * sizeof *p->mask);
    bp__free(a, p->t, 2 * (size_t)p->P * sizeof *p->t);
    bp__free(a, p->dv, L * sizeof *p->dv);
    bp__free(a, p->dc, L * sizeof *p->dc);
}

static bool lp_set_init(const bp_allocator *a, lp_set *p, const bp__sgraph *sg, uint64_t tie_seed)
{
    int32_t n = sg->n;
    size_t L2 = (size_t)2 * n + 1;
    memset(p, 0, sizeof *p);
    /* Only what is written is touched: no zero fill of the big arrays. */
    p->code = bp__alloc(a, L2 * sizeof *p->code);
    p->leaf = bp__alloc(a, L2 * sizeof *p->leaf);
    p->net = bp__alloc(a, ((size_t)n + 1) * sizeof *p->net);
    p->dv = bp__alloc(a, L2 * sizeof *p->dv);
    p->dc = bp__alloc(a, L2 * sizeof *p->dc);
    if (!p->code || !p->leaf || !p->net || !p->dv || !p->dc) return false;
    int32_t *tmp = (int32_t *)p->net; /* 2n + 2 int32s of scratch until the search starts */
    /* Ops in (tie, op) order, then their keys, sorted stably by allocation. */
    int32_t *ops = tmp;
    for (int32_t v = 0; v < n; v++) ops[v] = v;
    if (tie_seed) {
        lp_tie_ctx tc = {tie_seed};
        lp_radix(ops, p->code, n, lp_key_tie, &tc);
    }
    int32_t L = 0;
    for (int32_t r = 0; r < n; r++) {
        int32_t v = ops[r];
        p->code[L++] = 2 * v;
        if (sg->alloc_full[v] != sg->alloc_ip[v]) p->code[L++] = 2 * v + 1;
    }
    lp_radix(p->code, tmp, L, lp_key_alloc, sg);
    p->L = L;
    for (int32_t v = 0; v < n; v++) p->leaf[2 * v + 1] = -1;
    int32_t nd = 0;
    for (int32_t i = 0; i < L; i++) {
        int32_t c = p->code[i];
        p->leaf[c] = i;
        uint64_t k = lp_key_alloc(sg, c);
        if (!nd || p->dv[nd - 1] != k) p->dv[nd++] = k;
        p->dc[nd - 1] = i + 1;
    }
    for (int32_t v = 0; v < n; v++)
        if (p->leaf[2 * v + 1] < 0) p->leaf[2 * v + 1] = p->leaf[2 * v];
    p->nd = nd;
    p->nb = (L + 63) / 64;
    p->P = 1;
    while (p->P < p->nb) p->P *= 2;
    p->mask = bp__calloc(a, (size_t)p->nb + 1, sizeof *p->mask);
    p->t = bp__alloc(a, 2 * (size_t)p->P * sizeof *p->t);
    if (!p->mask || !p->t) return false;
    for (int32_t i = 0; i < 2 * p->P; i++) p->t[i] = (lp_node){INFINITY, INT32_MAX, INT32_MAX};
    return true;
}

bp_status bp__sched_lpmf(const bp__sgraph *sg, uint64_t tie_seed, int32_t *order, bp_error *err)
{
    const bp_allocator *a = &sg->g->alloc;
    int32_t n = sg->n;
    lp_set p;
    uint8_t *act = bp__calloc(a, (size_t)n + 1, 1); /* 0, or 1 + k of the active code */
    bp__sim s;
    memset(&s, 0, sizeof s);
    bp_status st = BP_OK;
    if (!lp_set_init(a, &p, sg, tie_seed) || !act) { st = NOMEM(sg); goto out; }
    st = bp__sim_init(&s, sg, err);
    if (st) goto out;

    /* Re-keys a ready op: the leaf of the allocation it makes now. */
#define LP_UPDATE(v) do { \
        uint64_t al_, fr_; \
        bp__sim_delta(&s, (v), &al_, &fr_); \
        int k_ = al_ <= sg->alloc_ip[v] ? 0 : 1; \
        int32_t lf_ = p.leaf[2 * (v) + k_]; \
        if (act[v] && p.leaf[2 * (v) + act[v] - 1] != lf_) { \
            int32_t of_ = p.leaf[2 * (v) + act[v] - 1]; \
            p.mask[of_ >> 6] &= ~(1ull << (of_ & 63)); \
            lp_block(&p, of_ >> 6); \
        } \
        act[v] = (uint8_t)(1 + k_); \
        p.net[v] = (double)al_ - (double)fr_; \
        p.mask[lf_ >> 6] |= 1ull << (lf_ & 63); \
        lp_block(&p, lf_ >> 6); \
    } while (0)

    for (int32_t v = 0; v < n; v++)
        if (!s.npred[v]) LP_UPDATE(v);
    uint64_t hw = 0;
    for (int32_t k = 0; k < n; k++) {
        /* leaves with a key <= hw - mem: a binary search over the distinct keys */
        int32_t lo = 0;
        if (hw >= s.mem) {
            uint64_t room = hw - s.mem;
            int32_t l = 0, h = p.nd;
            while (l < h) { int32_t mid = l + (h - l) / 2; if (p.dv[mid] <= room) l = mid + 1; else h = mid; }
            lo = l ? p.dc[l - 1] : 0;
        }
        int32_t leaf = lp_query(&p, lo);
        if (leaf < 0) leaf = p.t[1].first;
        if (leaf == INT32_MAX || leaf < 0) { st = bp__err(err, BP_ERR_INVALID, "%s: the graph has a cycle", sg->g->name); goto out; }
        int32_t v = p.code[leaf] >> 1;
        p.mask[leaf >> 6] &= ~(1ull << (leaf & 63));
        lp_block(&p, leaf >> 6);
        act[v] = 0;
        order[k] = v;
        uint64_t at = bp__sim_run(&s, v);
        if (at > hw) hw = at;
        for (int32_t i = sg->su_off[v]; i < sg->su_off[v + 1]; i++)
            if (!s.npred[sg->su[i]]) LP_UPDATE(sg->su[i]);
        for (int32_t i = 0; i < s.n_last1; i++) {
            int32_t u = bp__sim_last_toucher(&s, s.last1[i]);
            if (u >= 0 && !s.npred[u]) LP_UPDATE(u);
        }
    }
#undef LP_UPDATE
out:
    bp__sim_free(&s);
    lp_set_free(a, &p, n);
    bp__free(a, act, (size_t)n + 1);
    return st;
}
