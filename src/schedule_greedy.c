/*
 * schedule_greedy.c — the fast orders: dfs, list (XLA), lpmf (Inductor) and
 * seed, all over the step model of schedule_eval.c.
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
 *       the one with the lowest mem1.  Both are prefix queries on a segment
 *       tree whose leaves are the ready ops sorted by bytes allocated (each op
 *       has two possible values: with and without its in-place write).
 * seed: the seed design: priority alpha * freed/cost + beta * distance to the
 *       end of the critical path (cost-weighted longest path to a sink), each
 *       term divided by its maximum over the graph so both lie in [0, 1].
 * Ties go to the lower op id, or to a per-op hash of tie_seed (restarts).
 */
#include "schedule_internal.h"

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
    double *bl = bp__alloc(a, ((size_t)n + 1) * sizeof *bl);
    int32_t *topo = bp__alloc(a, ((size_t)n + 1) * sizeof *topo);
    int32_t *indeg = bp__alloc(a, ((size_t)n + 1) * sizeof *indeg);
    bp_status st = BP_OK;
    if (!bl || !topo || !indeg) { st = NOMEM(sg); goto out; }
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
    bp__free(a, topo, ((size_t)n + 1) * sizeof *topo);
    bp__free(a, indeg, ((size_t)n + 1) * sizeof *indeg);
    return st;
}

/* ------------------------------------------------------------------ lpmf */

typedef struct lp_leaf { uint64_t alloc, tie; int32_t op; } lp_leaf;

static int lp_cmp(const void *x, const void *y)
{
    const lp_leaf *a = x, *b = y;
    if (a->alloc != b->alloc) return a->alloc < b->alloc ? -1 : 1;
    if (a->tie != b->tie) return a->tie < b->tie ? -1 : 1;
    return (a->op > b->op) - (a->op < b->op);
}

typedef struct lp_tree {
    int32_t P;          /* leaves, a power of two */
    double *net;        /* per node: min net (mem2 - mem) over active leaves */
    int32_t *arg;       /* per node: the leaf with that min (smallest index on ties) */
    int32_t *first;     /* per node: smallest active leaf index, INT32_MAX if none */
} lp_tree;

static void lp_pull(lp_tree *t, int32_t i)
{
    int32_t l = 2 * i, r = l + 1;
    bool left = t->net[l] <= t->net[r];
    t->net[i] = left ? t->net[l] : t->net[r];
    t->arg[i] = left ? t->arg[l] : t->arg[r];
    t->first[i] = t->first[l] < t->first[r] ? t->first[l] : t->first[r];
}

static void lp_set(lp_tree *t, int32_t leaf, bool on, double net)
{
    int32_t i = leaf + t->P;
    t->net[i] = on ? net : INFINITY;
    t->arg[i] = leaf;
    t->first[i] = on ? leaf : INT32_MAX;
    for (i /= 2; i >= 1; i /= 2) lp_pull(t, i);
}

/* Leaf with the min net among leaves [0, k); -1 if none active. */
static int32_t lp_prefix_min(const lp_tree *t, int32_t k)
{
    double best = INFINITY;
    int32_t arg = -1;
    for (int32_t l = t->P, r = t->P + k; l < r; l /= 2, r /= 2) {
        if (l & 1) { if (t->net[l] < best || (t->net[l] == best && t->arg[l] < arg)) { best = t->net[l]; arg = t->arg[l]; } l++; }
        if (r & 1) { --r; if (t->net[r] < best || (t->net[r] == best && t->arg[r] < arg)) { best = t->net[r]; arg = t->arg[r]; } }
    }
    return best < INFINITY ? arg : -1;
}

bp_status bp__sched_lpmf(const bp__sgraph *sg, uint64_t tie_seed, int32_t *order, bp_error *err)
{
    const bp_allocator *a = &sg->g->alloc;
    int32_t n = sg->n, L = 2 * n, P = 1;
    while (P < L) P *= 2;
    lp_leaf *lv = bp__alloc(a, ((size_t)L + 1) * sizeof *lv);
    int32_t *leaf_full = bp__alloc(a, ((size_t)n + 1) * sizeof *leaf_full);
    int32_t *leaf_ip = bp__alloc(a, ((size_t)n + 1) * sizeof *leaf_ip);
    int32_t *active = bp__alloc(a, ((size_t)n + 1) * sizeof *active);
    lp_tree t = {P, bp__alloc(a, 2 * (size_t)P * sizeof(double)), bp__alloc(a, 2 * (size_t)P * sizeof(int32_t)),
                 bp__alloc(a, 2 * (size_t)P * sizeof(int32_t))};
    bp__sim s;
    memset(&s, 0, sizeof s);
    bp_status st = BP_OK;
    if (!lv || !leaf_full || !leaf_ip || !active || !t.net || !t.arg || !t.first) { st = NOMEM(sg); goto out; }
    st = bp__sim_init(&s, sg, err);
    if (st) goto out;
    for (int32_t v = 0; v < n; v++) {
        uint64_t tie = bp__sched_tie(tie_seed, v);
        lv[2 * v] = (lp_leaf){sg->alloc_full[v], tie, v};
        lv[2 * v + 1] = (lp_leaf){sg->alloc_ip[v], tie, v};
    }
    qsort(lv, (size_t)L, sizeof *lv, lp_cmp);
    /* Both leaves of an op share its tie, so the first one met in sorted
     * order is the one with the smaller allocation: the in-place leaf. */
    for (int32_t v = 0; v < n; v++) { leaf_full[v] = leaf_ip[v] = -1; active[v] = -1; }
    for (int32_t i = 0; i < L; i++) {
        int32_t v = lv[i].op;
        if (leaf_ip[v] < 0) leaf_ip[v] = i; else leaf_full[v] = i;
    }
    for (int32_t i = 0; i < 2 * P; i++) { t.net[i] = INFINITY; t.arg[i] = INT32_MAX; t.first[i] = INT32_MAX; }
    for (int32_t i = P - 1; i >= 1; i--) lp_pull(&t, i);

#define LP_UPDATE(v) do { \
        uint64_t al_, fr_; \
        bp__sim_delta(&s, (v), &al_, &fr_); \
        int32_t lf_ = al_ <= lv[leaf_ip[v]].alloc ? leaf_ip[v] : leaf_full[v]; \
        if (active[v] >= 0 && active[v] != lf_) lp_set(&t, active[v], false, 0); \
        active[v] = lf_; \
        lp_set(&t, lf_, true, (double)al_ - (double)fr_); \
    } while (0)

    for (int32_t v = 0; v < n; v++)
        if (!s.npred[v]) LP_UPDATE(v);
    uint64_t hw = 0;
    for (int32_t k = 0; k < n; k++) {
        /* leaves with alloc <= hw - mem: a binary search over the sorted keys */
        int32_t lo = 0, hi = L;
        if (hw >= s.mem) {
            uint64_t room = hw - s.mem;
            while (lo < hi) { int32_t mid = lo + (hi - lo) / 2; if (lv[mid].alloc <= room) lo = mid + 1; else hi = mid; }
        }
        int32_t leaf = lp_prefix_min(&t, lo);
        if (leaf < 0) leaf = t.first[1];
        if (leaf == INT32_MAX || leaf < 0) { st = bp__err(err, BP_ERR_INVALID, "%s: the graph has a cycle", sg->g->name); goto out; }
        int32_t v = lv[leaf].op;
        lp_set(&t, leaf, false, 0);
        active[v] = -1;
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
    bp__free(a, lv, ((size_t)L + 1) * sizeof *lv);
    bp__free(a, leaf_full, ((size_t)n + 1) * sizeof *leaf_full);
    bp__free(a, leaf_ip, ((size_t)n + 1) * sizeof *leaf_ip);
    bp__free(a, active, ((size_t)n + 1) * sizeof *active);
    bp__free(a, t.net, 2 * (size_t)P * sizeof(double));
    bp__free(a, t.arg, 2 * (size_t)P * sizeof(int32_t));
    bp__free(a, t.first, 2 * (size_t)P * sizeof(int32_t));
    return st;
}
