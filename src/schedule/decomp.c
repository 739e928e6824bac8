/*
 * decomp.c — the decomposition candidate of `best`.
 *
 * A piece (a set of ops, listed in a topological order) is scheduled by the
 * first rule that applies:
 *  1. Small (<= DC_EXACT ops): the exact search over ready sets
 *     (bp__sched_dp), from the step model's state when the piece starts.
 *  2. Cut points: an op with every other op of the piece as an ancestor or a
 *     descendant runs at the same step in every order.  The piece splits
 *     there into segments; what is live when a segment starts is the same
 *     in every order (the set of ops before it is fixed), so the peak is the
 *     max of the segments' peaks and each segment is solved alone, in turn.
 *     Found in O(V + E) from one topological order (bp__decomp_cuts).
 *  3. Weakly connected components (>= 2): each is solved alone from the
 *     piece's start state (then undone), becoming a macro-op that runs as
 *     a block; the blocks are ordered by the exact search over macro-ops
 *     (bp__sched_dp_groups), else by their (peak, net) profiles.
 *  4. Otherwise (a "core": connected, no cut point): dominator and
 *     post-dominator trees of the piece (virtual source and sink); for each
 *     entry a, its exit is the highest post-dominator b of a that a
 *     dominates (a binary search on the jump pointers).  R(a, b) = the ops
 *     between them is single-entry/single-exit: only a has predecessors
 *     outside, only b successors outside.  Taking these regions in
 *     topological order of a gives maximal, disjoint regions (chains
 *     included); each is solved as a piece (innermost first, by the
 *     recursion) and contracted to a macro-op; the contracted core is
 *     ordered by the exact search over macro-ops (a beam past its state
 *     cap).
 * Rules 3 and 4 forbid interleaving, so they are heuristics: their order is
 * kept only when the step model says its peak is lower than the input
 * order's on the same piece (a trial run, undone by a log).  Pieces too big
 * for the searches, too deep, or left when the work is spent keep the input
 * order.  Only rules 1 and 2 with proven searches make the result optimal
 * (info->proven).  Each level is O((V + E) log V) and the depth is capped,
 * so the whole is near-linear outside the searches (bounded by the work).
 */
#include "schedule/schedule_internal.h"

#include <stdlib.h>
#include <string.h>

#define DC_EXACT 40           /* exact search over the ops of a piece up to this */
#define DC_MAXG 128           /* search over macro-ops: at most this many macro-ops */
#define DC_MAXOPS 4096        /* ... of at most this many ops (the state bitmask) */
#define DC_DEPTH 40           /* deeper pieces keep the input order */
#define DC_CAP_EXACT ((size_t)1 << 14)
#define DC_CAP_MACRO ((size_t)2048)

/* ----------------------------------------------------------- the trees */

static inline void dc_set_parent(int32_t *par, int32_t *dep, int32_t *jmp, int32_t v, int32_t p)
{
    par[v] = p;
    dep[v] = dep[p] + 1;
    int32_t j = jmp[p];
    jmp[v] = dep[p] - dep[j] == dep[j] - dep[jmp[j]] ? jmp[j] : p;
}

/* Lowest common ancestor with skew-binary jump pointers: O(log n). */
static int32_t dc_lca(const int32_t *par, const int32_t *dep, const int32_t *jmp, int32_t u, int32_t v)
{
    if (dep[u] < dep[v]) { int32_t t = u; u = v; v = t; }
    while (dep[u] > dep[v]) u = dep[jmp[u]] >= dep[v] ? jmp[u] : par[u];
    while (u != v) {
        if (jmp[u] != jmp[v]) { u = jmp[u]; v = jmp[v]; }
        else { u = par[u]; v = par[v]; }
    }
    return u;
}

/* In a DAG taken in topological order, the immediate dominator of v is the
 * nearest common ancestor, in the tree built so far, of its predecessors. */
void bp__decomp_idom(int32_t n, const int32_t *off, const int32_t *adj, int rev, int32_t *idom, int32_t *dep,
                     int32_t *jmp)
{
    idom[n] = n;
    dep[n] = 0;
    jmp[n] = n;
    for (int32_t i = 0; i < n; i++) {
        int32_t v = rev ? n - 1 - i : i, x = -1;
        for (int32_t j = off[v]; j < off[v + 1]; j++) x = x < 0 ? adj[j] : dc_lca(idom, dep, jmp, x, adj[j]);
        dc_set_parent(idom, dep, jmp, v, x < 0 ? n : x);
    }
}

/* v at position v is a cut point iff every op before it has a successor at
 * or before v (then v is the only sink of the prefix: all are ancestors)
 * and every op after it has a predecessor at or after v.  fs: each
 * vertex's first successor (n if none), lp: its last predecessor (-1 if
 * none).  Vertices with ign[v] set (sources only) are left out: the cut
 * points of the others. */
void bp__decomp_cuts(int32_t n, const int32_t *fs, const int32_t *lp, const uint8_t *ign, uint8_t *cut)
{
    int32_t pre = -1;
    for (int32_t v = 0; v < n; v++) {
        cut[v] = pre <= v && !(ign && ign[v]);
        if (!(ign && ign[v]) && fs[v] > pre) pre = fs[v];
    }
    int32_t suf = n;
    for (int32_t v = n - 1; v >= 0; v--) {
        if (suf < v) cut[v] = 0;
        if (!(ign && ign[v]) && lp[v] < suf) suf = lp[v];
    }
}

/* ------------------------------------------------- step model with undo */

typedef struct dc_hdr { int32_t v, step; size_t rec; uint64_t mem, peak; } dc_hdr;
typedef struct dc_rec { int32_t y, rem; uint64_t cur, cbytes; uint8_t live; } dc_rec;

typedef struct dc {
    const bp__sgraph *sg;
    const bp_allocator *a;
    bp__sim *sim;
    int32_t *loc;             /* n: op -> local id in the piece being built, else -1 */
    dc_hdr *h; size_t nh, hcap;
    dc_rec *r; size_t nr, rcap;
    int logging;
    uint64_t *work, limit, bound;
    double deadline;          /* bp__now() seconds, 0 = none */
    int32_t exact_max;        /* pieces up to this many ops: exact search */
    uint64_t target;          /* peak of the input order (of this pass) */
    uint64_t *instep;         /* n: memory at each op's step in that order */
    int32_t *pend, npend;     /* kept ops not run yet (see dc_keep) */
    uint64_t pend_peak;
    uint64_t lb;              /* proven: no order is below it */
    bp__decomp_info *info;
    bool oom;
} dc;

/* True when the work is spent or the clock is past the deadline: the
 * pieces left keep the input's order. */
static bool dc_out(const dc *d) { return *d->work >= d->limit || bp__sched_late(d->deadline); }

static void dc_flush(dc *d);

static uint64_t dc_run(dc *d, int32_t v)
{
    if (d->npend) dc_flush(d);
    const bp__sgraph *sg = d->sg;
    bp__sim *s = d->sim;
    int32_t t0 = sg->to_off[v], t1 = sg->to_off[v + 1];
    if (d->logging && !d->oom) {
        if (!bp__grow(d->a, (void **)&d->h, &d->hcap, d->nh + 1, sizeof *d->h) ||
            !bp__grow(d->a, (void **)&d->r, &d->rcap, d->nr + (size_t)(t1 - t0), sizeof *d->r)) {
            d->oom = true;
            return 0;
        }
        d->h[d->nh++] = (dc_hdr){v, s->step, d->nr, s->mem, s->peak};
        for (int32_t i = t0; i < t1; i++) {
            int32_t y = sg->to[i];
            d->r[d->nr++] = (dc_rec){y, s->rem[y], s->cur[y], s->cbytes[y], s->live[y]};
        }
    }
    uint64_t at = bp__sim_run(s, v);
    *d->work += (uint64_t)(t1 - t0) * 4 + 8;
    return at;
}

/* Runs the ops dc_keep put off.  Called before anything reads the step
 * model or takes an undo mark (deferring happens only with no mark). */
static void dc_flush(dc *d)
{
    int32_t np = d->npend;
    d->npend = 0;
    for (int32_t i = 0; i < np && !d->oom; i++) dc_run(d, d->pend[i]);
}

/* Undoes the runs logged after mark.  (The simulator's XOR of remaining
 * touchers is not restored: nothing here asks for the last toucher.) */
static void dc_undo(dc *d, size_t mark)
{
    const bp__sgraph *sg = d->sg;
    bp__sim *s = d->sim;
    while (d->nh > mark) {
        const dc_hdr *x = &d->h[--d->nh];
        while (d->nr > x->rec) {
            const dc_rec *q = &d->r[--d->nr];
            s->rem[q->y] = q->rem;
            s->cur[q->y] = q->cur;
            s->cbytes[q->y] = q->cbytes;
            s->live[q->y] = q->live;
        }
        s->done[x->v] = 0;
        for (int32_t i = sg->su_off[x->v]; i < sg->su_off[x->v + 1]; i++) s->npred[sg->su[i]]++;
        s->mem = x->mem;
        s->peak = x->peak;
        s->step = x->step;
        *d->work += (uint64_t)(sg->to_off[x->v + 1] - sg->to_off[x->v]) * 4 + 8;
    }
    s->n_last1 = 0;
}

/* Peak of running ord (k ops) from the current state; the state is kept. */
static uint64_t dc_trial(dc *d, const int32_t *ord, int32_t k, int64_t *net)
{
    dc_flush(d);
    bp__sim *s = d->sim;
    size_t mark = d->nh;
    uint64_t p0 = s->peak, m0 = s->mem;
    d->logging++;
    s->peak = 0;
    for (int32_t i = 0; i < k; i++) dc_run(d, ord[i]);
    uint64_t pk = s->peak;
    if (net) *net = (int64_t)(s->mem - m0);
    dc_undo(d, mark);
    d->logging--;
    s->peak = p0;
    return pk;
}

static void dc_run_all(dc *d, const int32_t *ord, int32_t k)
{
    for (int32_t i = 0; i < k && !d->oom; i++) dc_run(d, ord[i]);
}

/* Keeps cand for the piece if its peak is below the input order's. */
static void dc_pick(dc *d, const int32_t *S, int32_t k, int32_t *cand)
{
    if (memcmp(cand, S, (size_t)k * sizeof *S) != 0 && dc_trial(d, cand, k, NULL) >= dc_trial(d, S, k, NULL))
        memcpy(cand, S, (size_t)k * sizeof *S);
    dc_run_all(d, cand, k);
}

/* The input order.  In an exact context with no undo mark, running it is
 * put off until something reads the step model: its step memories are the
 * input's (instep), and at 10^6 ops most of the graph is kept. */
static void dc_keep(dc *d, const int32_t *S, int32_t k, bool exact_ctx, int32_t *res)
{
    memcpy(res, S, (size_t)k * sizeof *S);
    if (exact_ctx && !d->logging && d->pend) {
        const bp__sgraph *sg = d->sg;
        for (int32_t i = 0; i < k; i++) {
            d->pend[d->npend++] = S[i];
            if (sg->to_off[S[i]] < sg->to_off[S[i] + 1] && d->instep[S[i]] > d->pend_peak) d->pend_peak = d->instep[S[i]];
        }
        *d->work += (uint64_t)k;
        return;
    }
    dc_run_all(d, S, k);
}

/* Rule 1, searching for an order below `bound` (the input's peak on the
 * piece, or the best known).  A proven search in an exact context (the
 * piece's start state is the same in every order) bounds the optimum. */
static void dc_exact(dc *d, const int32_t *S, int32_t k, uint64_t bound, bool exact_ctx, int32_t *res)
{
    if (dc_out(d)) { dc_keep(d, S, k, exact_ctx, res); return; }
    dc_flush(d);
    bp__dp_result r;
    int ok = bp__sched_dp(d->sg, d->sim, S, k, bound, DC_CAP_EXACT, d->work, d->limit, d->deadline, res, &r);
    d->info->states += r.states;
    d->info->dps++;
    if (ok < 0) { d->oom = true; memcpy(res, S, (size_t)k * sizeof *S); return; }
    bool exact = r.proven && d->sg->dp_exact;
    if (exact && exact_ctx) {
        uint64_t opt = ok == 1 ? r.peak : bound; /* none below the bound: the input's peak */
        if (opt > d->lb) d->lb = opt;
    }
    if (ok == 0) { dc_keep(d, S, k, exact_ctx, res); return; }
    if (exact) dc_run_all(d, res, k);
    else dc_pick(d, S, k, res);
}

/* Orders macro-ops (blocks tmp[goff[g] .. goff[g+1]-1], already internally
 * ordered, in a topological order of blocks) into res. */
static int dc_macros(dc *d, const int32_t *tmp, int32_t k, const int32_t *goff, int32_t ng, uint64_t bound,
                     int32_t *res)
{
    int ok = 0;
    if (ng <= DC_MAXG && k <= DC_MAXOPS && !dc_out(d)) {
        dc_flush(d);
        bp__dp_result r;
        ok = bp__sched_dp_groups(d->sg, d->sim, tmp, k, goff, ng, bound, DC_CAP_MACRO, d->work, d->limit, d->deadline,
                                 res, &r);
        d->info->states += r.states;
        d->info->dps++;
        if (ok < 0) { d->oom = true; ok = 0; }
    }
    if (!ok) memcpy(res, tmp, (size_t)k * sizeof *tmp);
    return ok;
}

/* ------------------------------------------------------------ the pieces */

typedef struct dc_prof { int64_t net; uint64_t peak; int32_t c; } dc_prof;

/* Independent blocks: those that give memory back first, the lowest peak
 * first; then the others, the highest peak above their net first. */
static int dc_prof_cmp(const void *x, const void *y)
{
    const dc_prof *a = x, *b = y;
    int ga = a->net > 0, gb = b->net > 0;
    if (ga != gb) return ga - gb;
    if (!ga) {
        if (a->peak != b->peak) return a->peak < b->peak ? -1 : 1;
    } else {
        int64_t ka = (int64_t)a->peak - a->net, kb = (int64_t)b->peak - b->net;
        if (ka != kb) return ka > kb ? -1 : 1;
    }
    return (a->c > b->c) - (a->c < b->c);
}

static int32_t dc_find(int32_t *uf, int32_t x)
{
    while (uf[x] != x) { uf[x] = uf[uf[x]]; x = uf[x]; }
    return x;
}

static void dc_solve(dc *d, const int32_t *S, int32_t k, int depth, bool exact_ctx, int32_t *res);

/* Local graph of a piece: ids are positions in S (a topological order). */
typedef struct dc_local {
    int32_t k, *poff, *p, *soff, *s;
    size_t ne;
} dc_local;

static void dc_local_free(dc *d, dc_local *L)
{
    bp__free(d->a, L->poff, ((size_t)L->k + 1) * sizeof *L->poff);
    bp__free(d->a, L->soff, ((size_t)L->k + 2) * sizeof *L->soff);
    bp__free(d->a, L->p, (L->ne + 1) * sizeof *L->p);
    bp__free(d->a, L->s, (L->ne + 1) * sizeof *L->s);
    memset(L, 0, sizeof *L);
}

static bool dc_local_build(dc *d, const int32_t *S, int32_t k, dc_local *L)
{
    const bp__sgraph *sg = d->sg;
    memset(L, 0, sizeof *L);
    L->k = k;
    for (int32_t i = 0; i < k; i++) d->loc[S[i]] = i;
    size_t ne = 0;
    for (int32_t i = 0; i < k; i++)
        for (int32_t j = sg->pr_off[S[i]]; j < sg->pr_off[S[i] + 1]; j++) ne += d->loc[sg->pr[j]] >= 0;
    L->ne = ne;
    L->poff = bp__alloc(d->a, ((size_t)k + 1) * sizeof *L->poff);
    L->soff = bp__calloc(d->a, (size_t)k + 2, sizeof *L->soff);
    L->p = bp__alloc(d->a, (ne + 1) * sizeof *L->p);
    L->s = bp__alloc(d->a, (ne + 1) * sizeof *L->s);
    bool ok = L->poff && L->soff && L->p && L->s;
    if (ok) {
        size_t e = 0;
        L->poff[0] = 0;
        for (int32_t i = 0; i < k; i++) {
            for (int32_t j = sg->pr_off[S[i]]; j < sg->pr_off[S[i] + 1]; j++) {
                int32_t u = d->loc[sg->pr[j]];
                if (u >= 0) { L->p[e++] = u; L->soff[u + 2]++; }
            }
            L->poff[i + 1] = (int32_t)e;
        }
        for (int32_t i = 0; i < k; i++) L->soff[i + 2] += L->soff[i + 1];
        for (int32_t i = 0; i < k; i++)
            for (int32_t j = L->poff[i]; j < L->poff[i + 1]; j++) L->s[L->soff[L->p[j] + 1]++] = i;
    }
    for (int32_t i = 0; i < k; i++) d->loc[S[i]] = -1;
    *d->work += ((uint64_t)k + ne) * 12;
    if (!ok) { dc_local_free(d, L); d->oom = true; }
    return ok;
}

/* Rule 2: segments between cut points, in turn.  A cut op's step is the
 * same in every order of an exact context: its memory bounds the optimum.
 * Free ops (ign: no predecessor in the piece, no storage touched) do not
 * count for the cut points; each joins the segment of its first successor,
 * or runs just before it when that is a cut op.  Such an op changes no
 * step's memory, so the segments stay independent. */
static void dc_cuts_solve(dc *d, const int32_t *S, int32_t k, const int32_t *fs, const uint8_t *ign,
                          const uint8_t *cut, int depth, bool exact_ctx, int32_t *res)
{
    const bp_allocator *a = d->a;
    size_t np = 2 * (size_t)k + 2;
    int32_t *pid = bp__alloc(a, (size_t)k * sizeof *pid), *ord = bp__alloc(a, (size_t)k * sizeof *ord);
    int32_t *poff = bp__calloc(a, np + 1, sizeof *poff);
    uint8_t *pcut = bp__calloc(a, np, 1);
    if (!pid || !ord || !poff || !pcut) { d->oom = true; goto out; }
    /* pieces: per cut op, one for the free ops before it, then itself */
    int32_t npc = 0;
    bool in_seg = false;
    for (int32_t i = 0; i < k; i++) {
        if (ign[i]) continue;
        if (cut[i]) { pid[i] = npc + 1; pcut[npc + 1] = 1; npc += 2; in_seg = false; }
        else {
            if (!in_seg) { npc++; in_seg = true; }
            pid[i] = npc - 1;
        }
    }
    for (int32_t i = 0; i < k; i++) {
        if (!ign[i]) continue;
        int32_t y = fs[i];
        pid[i] = cut[y] ? pid[y] - 1 : pid[y];
    }
    for (int32_t i = 0; i < k; i++) poff[pid[i] + 1]++;
    for (int32_t c = 0; c < npc; c++) poff[c + 1] += poff[c];
    for (int32_t i = 0; i < k; i++) ord[poff[pid[i]]++] = S[i];
    for (int32_t c = npc; c > 0; c--) poff[c] = poff[c - 1];
    poff[0] = 0;
    for (int32_t c = 0; c < npc && !d->oom; c++) {
        int32_t o = poff[c], sz = poff[c + 1] - o;
        if (!sz) continue;
        if (pcut[c]) {
            /* its step memory is the input's (exact context) */
            if (exact_ctx && d->instep[ord[o]] > d->lb) d->lb = d->instep[ord[o]];
            dc_keep(d, ord + o, 1, exact_ctx, res + o);
            d->info->cuts++;
        } else {
            dc_solve(d, ord + o, sz, depth + 1, exact_ctx, res + o);
        }
    }
out:
    bp__free(a, pid, (size_t)k * sizeof *pid);
    bp__free(a, ord, (size_t)k * sizeof *ord);
    bp__free(a, poff, (np + 1) * sizeof *poff);
    bp__free(a, pcut, np);
    if (d->oom) memcpy(res, S, (size_t)k * sizeof *S);
}

/* Rule 3: components (comp[i] in order of first appearance, nc of them). */
static void dc_comps_solve(dc *d, const int32_t *S, int32_t k, const int32_t *comp, int32_t nc, int depth,
                           uint64_t bound, int32_t *res)
{
    const bp_allocator *a = d->a;
    int32_t *perm = bp__alloc(a, (size_t)k * sizeof *perm), *tmp = bp__alloc(a, (size_t)k * sizeof *tmp);
    int32_t *goff = bp__calloc(a, (size_t)nc + 2, sizeof *goff);
    dc_prof *pf = bp__alloc(a, (size_t)nc * sizeof *pf);
    if (!perm || !tmp || !goff || !pf) { d->oom = true; goto out; }
    for (int32_t i = 0; i < k; i++) goff[comp[i] + 2]++;
    for (int32_t c = 0; c < nc; c++) goff[c + 2] += goff[c + 1];
    for (int32_t i = 0; i < k; i++) perm[goff[comp[i] + 1]++] = S[i];
    d->info->comps += nc;
    /* each alone from the piece's start state */
    dc_flush(d);
    bp__sim *s = d->sim;
    uint64_t p0 = s->peak, m0 = s->mem;
    size_t mark = d->nh;
    d->logging++;
    for (int32_t c = 0; c < nc && !d->oom; c++) {
        s->peak = 0;
        dc_solve(d, perm + goff[c], goff[c + 1] - goff[c], depth + 1, false, tmp + goff[c]);
        pf[c] = (dc_prof){(int64_t)(s->mem - m0), s->peak, c};
        dc_undo(d, mark);
    }
    d->logging--;
    s->peak = p0;
    if (d->oom) goto out;
    if (!dc_macros(d, tmp, k, goff, nc, bound, res)) {
        /* no search result: blocks by their profiles */
        qsort(pf, (size_t)nc, sizeof *pf, dc_prof_cmp);
        int32_t at = 0;
        for (int32_t c = 0; c < nc; c++) {
            int32_t g = pf[c].c, sz = goff[g + 1] - goff[g];
            memcpy(res + at, tmp + goff[g], (size_t)sz * sizeof *tmp);
            at += sz;
        }
    }
    dc_pick(d, S, k, res);
out:
    bp__free(a, perm, (size_t)k * sizeof *perm);
    bp__free(a, tmp, (size_t)k * sizeof *tmp);
    bp__free(a, goff, ((size_t)nc + 2) * sizeof *goff);
    bp__free(a, pf, (size_t)nc * sizeof *pf);
}

/* Rule 4: a connected piece without cut points. */
static void dc_core_solve(dc *d, const int32_t *S, int32_t k, dc_local *L, int depth, bool exact_ctx, uint64_t bound,
                          int32_t *res)
{
    const bp_allocator *a = d->a;
    size_t k1 = (size_t)k + 1;
    int32_t *didom = bp__alloc(a, k1 * sizeof(int32_t)), *ddep = bp__alloc(a, k1 * sizeof(int32_t));
    int32_t *djmp = bp__alloc(a, k1 * sizeof(int32_t)), *pidom = bp__alloc(a, k1 * sizeof(int32_t));
    int32_t *pdep = bp__alloc(a, k1 * sizeof(int32_t)), *pjmp = bp__alloc(a, k1 * sizeof(int32_t));
    int32_t *tin = bp__alloc(a, k1 * sizeof(int32_t)), *tout = bp__alloc(a, k1 * sizeof(int32_t));
    int32_t *coff = bp__calloc(a, k1 + 1, sizeof(int32_t)), *ch = bp__alloc(a, k1 * sizeof(int32_t));
    int32_t *rid = bp__alloc(a, k1 * sizeof(int32_t)), *q = bp__alloc(a, k1 * sizeof(int32_t));
    int32_t *perm = NULL, *tmp = NULL, *goff = NULL;
    int32_t ng = 0, nreg = 0;
    if (!didom || !ddep || !djmp || !pidom || !pdep || !pjmp || !tin || !tout || !coff || !ch || !rid || !q) {
        d->oom = true;
        goto out;
    }
    bp__decomp_idom(k, L->poff, L->p, 0, didom, ddep, djmp);
    bp__decomp_idom(k, L->soff, L->s, 1, pidom, pdep, pjmp);
    *d->work += ((uint64_t)k + L->ne) * 40;
    /* pre/post numbers of the dominator tree (iterative DFS from the root k) */
    for (int32_t v = 0; v < k; v++) coff[didom[v] + 1]++;
    for (int32_t v = 0; v <= k; v++) coff[v + 1] += coff[v];
    for (int32_t v = 0; v <= k; v++) rid[v] = coff[v];
    for (int32_t v = 0; v < k; v++) ch[rid[didom[v]]++] = v;
    {
        int32_t sp = 0, t = 0;
        q[sp++] = k;
        tin[k] = t++;
        for (int32_t v = 0; v <= k; v++) rid[v] = coff[v]; /* next child to visit */
        while (sp) {
            int32_t v = q[sp - 1];
            if (rid[v] < coff[v + 1]) {
                int32_t c = ch[rid[v]++];
                tin[c] = t++;
                q[sp++] = c;
            } else {
                tout[v] = t++;
                sp--;
            }
        }
    }
#define DOM(x, y) (tin[x] <= tin[y] && tout[y] <= tout[x])
    /* maximal single-entry/single-exit regions, by entry in topological order */
    for (int32_t v = 0; v < k; v++) rid[v] = -1;
    for (int32_t e = 0; e < k; e++) {
        if (rid[e] >= 0) continue;
        int32_t u = e;
        for (;;) { /* highest post-dominator of e that e dominates */
            int32_t j = pjmp[u], p = pidom[u];
            if (j != k && DOM(e, j)) u = j;
            else if (p != k && DOM(e, p)) u = p;
            else break;
        }
        if (u == e) continue;
        /* R(e, u): forward from e, not past u */
        int32_t h = 0, t = 0;
        bool clash = false;
        q[t++] = e;
        rid[e] = nreg;
        while (h < t && !clash) {
            int32_t x = q[h++];
            if (x == u) continue;
            for (int32_t j = L->soff[x]; j < L->soff[x + 1]; j++) {
                int32_t y = L->s[j];
                if (rid[y] == nreg) continue;
                if (rid[y] >= 0) { clash = true; break; } /* cannot happen: regions nest or are apart */
                rid[y] = nreg;
                q[t++] = y;
            }
        }
        *d->work += (uint64_t)t * 8;
        if (clash) { for (int32_t i = 0; i < t; i++) rid[q[i]] = -1; continue; }
        nreg++;
    }
#undef DOM
    d->info->regions += nreg;
    /* macro-ops: regions and single ops, by their first op */
    perm = bp__alloc(a, (size_t)k * sizeof *perm);
    tmp = bp__alloc(a, (size_t)k * sizeof *tmp);
    goff = bp__alloc(a, k1 * sizeof *goff);
    if (!perm || !tmp || !goff) { d->oom = true; goto out; }
    {
        /* mac (in ch): op -> macro-op, numbered by first op; q: region -> macro-op */
        int32_t *mac = ch, *gsz = coff; /* reused: k + 1 and k + 2 entries */
        for (int32_t r = 0; r < nreg; r++) q[r] = -1;
        for (int32_t v = 0; v < k; v++) {
            if (rid[v] < 0) { mac[v] = ng; gsz[ng++] = 0; }
            else {
                if (q[rid[v]] < 0) { q[rid[v]] = ng; gsz[ng++] = 0; }
                mac[v] = q[rid[v]];
            }
            gsz[mac[v]]++;
        }
        goff[0] = 0;
        for (int32_t g = 0; g < ng; g++) goff[g + 1] = goff[g] + gsz[g];
        for (int32_t g = 0; g < ng; g++) gsz[g] = goff[g];
        for (int32_t v = 0; v < k; v++) perm[gsz[mac[v]]++] = S[v];
    }
    /* the regions, each alone from the piece's start state */
    dc_flush(d);
    {
        bp__sim *s = d->sim;
        size_t mark = d->nh;
        uint64_t p0 = s->peak;
        d->logging++;
        for (int32_t g = 0; g < ng && !d->oom; g++) {
            int32_t sz = goff[g + 1] - goff[g];
            if (sz == 1) { tmp[goff[g]] = perm[goff[g]]; continue; }
            dc_solve(d, perm + goff[g], sz, depth + 1, false, tmp + goff[g]);
            dc_undo(d, mark);
        }
        d->logging--;
        s->peak = p0;
    }
    if (d->oom) goto out;
    if (ng == k && k > DC_MAXG) { dc_keep(d, S, k, exact_ctx, res); goto out; } /* nothing contracted, too big */
    dc_macros(d, tmp, k, goff, ng, bound, res);
    dc_pick(d, S, k, res);
out:
    bp__free(a, didom, k1 * sizeof(int32_t));
    bp__free(a, ddep, k1 * sizeof(int32_t));
    bp__free(a, djmp, k1 * sizeof(int32_t));
    bp__free(a, pidom, k1 * sizeof(int32_t));
    bp__free(a, pdep, k1 * sizeof(int32_t));
    bp__free(a, pjmp, k1 * sizeof(int32_t));
    bp__free(a, tin, k1 * sizeof(int32_t));
    bp__free(a, tout, k1 * sizeof(int32_t));
    bp__free(a, coff, (k1 + 1) * sizeof(int32_t));
    bp__free(a, ch, k1 * sizeof(int32_t));
    bp__free(a, rid, k1 * sizeof(int32_t));
    bp__free(a, q, k1 * sizeof(int32_t));
    bp__free(a, perm, (size_t)k * sizeof *perm);
    bp__free(a, tmp, (size_t)k * sizeof *tmp);
    bp__free(a, goff, k1 * sizeof *goff);
    if (d->oom) memcpy(res, S, (size_t)k * sizeof *S);
}

/* Schedules the piece S (k ops in a topological order) into res and runs
 * it on the step model. */
static void dc_solve(dc *d, const int32_t *S, int32_t k, int depth, bool exact_ctx, int32_t *res)
{
    if (k <= 0) return;
    if (d->oom) { memcpy(res, S, (size_t)k * sizeof *S); return; }
    if (k == 1) {
        /* forced in an exact context, unless it is a free op (moved) */
        const bp__sgraph *sg = d->sg;
        if (exact_ctx && sg->to_off[S[0]] < sg->to_off[S[0] + 1] && d->instep[S[0]] > d->lb) d->lb = d->instep[S[0]];
        dc_keep(d, S, 1, exact_ctx, res);
        return;
    }
    if (depth >= DC_DEPTH || dc_out(d)) { dc_keep(d, S, k, exact_ctx, res); return; }
    /* Only an order below the input's peak on the piece is worth having;
     * in an exact context, a piece below the whole order's peak cannot
     * lower it.  There the piece starts from the state it has in the input
     * order, so its peak there is the max of the input's step memories
     * (of the ops that touch storage: the others never exceed them). */
    uint64_t bound = 0;
    if (exact_ctx) {
        const bp__sgraph *sg = d->sg;
        for (int32_t i = 0; i < k; i++)
            if (sg->to_off[S[i]] < sg->to_off[S[i] + 1] && d->instep[S[i]] > bound) bound = d->instep[S[i]];
        *d->work += (uint64_t)k;
        if (bound < d->target) { dc_keep(d, S, k, exact_ctx, res); return; }
    } else {
        bound = dc_trial(d, S, k, NULL);
    }
    if (bound > d->bound) bound = d->bound;
    if (k <= d->exact_max) { dc_exact(d, S, k, bound, exact_ctx, res); return; }
    /* first successor and last predecessor of each op inside the piece */
    const bp__sgraph *sg = d->sg;
    int32_t *fs = bp__alloc(d->a, (size_t)k * sizeof *fs), *lp = bp__alloc(d->a, (size_t)k * sizeof *lp);
    uint8_t *cut = bp__alloc(d->a, 2 * (size_t)k), *ign = NULL;
    int32_t *comp = bp__alloc(d->a, (size_t)k * sizeof *comp);
    if (!fs || !lp || !cut || !comp) { d->oom = true; goto out; }
    ign = cut + k;
    uint64_t ne = 0;
    for (int32_t i = 0; i < k; i++) d->loc[S[i]] = i;
    for (int32_t i = 0; i < k; i++) {
        int32_t v = S[i], f = k, l = -1;
        ne += (uint64_t)(sg->su_off[v + 1] - sg->su_off[v] + sg->pr_off[v + 1] - sg->pr_off[v]);
        for (int32_t j = sg->su_off[v]; j < sg->su_off[v + 1]; j++) {
            int32_t x = d->loc[sg->su[j]];
            if (x >= 0 && x < f) f = x;
        }
        for (int32_t j = sg->pr_off[v]; j < sg->pr_off[v + 1]; j++) {
            int32_t x = d->loc[sg->pr[j]];
            if (x > l) l = x;
        }
        fs[i] = f;
        /* a free op: no predecessor here, no storage touched */
        ign[i] = l < 0 && f < k && sg->to_off[v] == sg->to_off[v + 1];
    }
    for (int32_t i = 0; i < k; i++) { /* last predecessor, free ops left out */
        int32_t v = S[i], l = -1;
        for (int32_t j = sg->pr_off[v]; j < sg->pr_off[v + 1]; j++) {
            int32_t x = d->loc[sg->pr[j]];
            if (x > l && !ign[x]) l = x;
        }
        lp[i] = l;
    }
    bp__decomp_cuts(k, fs, lp, ign, cut);
    int32_t nc = 0, nf = 0;
    for (int32_t i = 0; i < k; i++) { nc += cut[i]; nf += ign[i]; }
    *d->work += ((uint64_t)k + ne) * 6;
    if (nc) {
        for (int32_t i = 0; i < k; i++) d->loc[S[i]] = -1;
        d->info->free_ops += nf;
        dc_cuts_solve(d, S, k, fs, ign, cut, depth, exact_ctx, res);
        goto out;
    }
    /* components: union-find over the edges inside the piece */
    for (int32_t i = 0; i < k; i++) comp[i] = i;
    for (int32_t i = 0; i < k; i++)
        for (int32_t j = sg->pr_off[S[i]]; j < sg->pr_off[S[i] + 1]; j++) {
            int32_t u = d->loc[sg->pr[j]];
            if (u < 0) continue;
            int32_t x = dc_find(comp, i), y = dc_find(comp, u);
            if (x != y) comp[x > y ? x : y] = x < y ? x : y; /* the root is the first op */
        }
    for (int32_t i = 0; i < k; i++) d->loc[S[i]] = -1;
    int32_t ncomp = 0;
    for (int32_t i = 0; i < k; i++) comp[i] = dc_find(comp, i);
    for (int32_t i = 0; i < k; i++) comp[i] = comp[i] == i ? ncomp++ : comp[comp[i]]; /* roots come first */
    *d->work += ((uint64_t)k + ne) * 4;
    if (ncomp > 1) {
        dc_comps_solve(d, S, k, comp, ncomp, depth, bound, res);
        goto out;
    }
    if (k > DC_MAXOPS) { dc_keep(d, S, k, exact_ctx, res); goto out; }
    {
        dc_local L;
        if (dc_local_build(d, S, k, &L)) {
            dc_core_solve(d, S, k, &L, depth, exact_ctx, bound, res);
            dc_local_free(d, &L);
        }
    }
out:
    if (d->oom) memcpy(res, S, (size_t)k * sizeof *S);
    bp__free(d->a, fs, (size_t)k * sizeof *fs);
    bp__free(d->a, lp, (size_t)k * sizeof *lp);
    bp__free(d->a, cut, 2 * (size_t)k);
    bp__free(d->a, comp, (size_t)k * sizeof *comp);
}

int bp__decomp_schedule(const bp__sgraph *sg, bp__sim *sim, bp__eval *ev, const int32_t *in, uint64_t bound,
                        int32_t exact_max, int32_t *out, uint64_t *work, uint64_t work_limit, double deadline,
                        bp__decomp_info *info)
{
    memset(info, 0, sizeof *info);
    int32_t n = sg->n;
    dc d;
    memset(&d, 0, sizeof d);
    d.sg = sg;
    d.a = &sg->g->alloc;
    d.sim = sim;
    d.work = work;
    d.limit = work_limit;
    d.deadline = deadline;
    d.bound = bound;
    d.exact_max = exact_max > 0 ? exact_max : DC_EXACT;
    d.info = info;
    d.loc = bp__alloc(d.a, ((size_t)n + 1) * sizeof *d.loc);
    d.instep = bp__alloc(d.a, ((size_t)n + 1) * sizeof *d.instep);
    d.pend = bp__alloc(d.a, ((size_t)n + 1) * sizeof *d.pend);
    int32_t *cur = bp__alloc(d.a, ((size_t)n + 1) * sizeof *cur);
    uint64_t *prof = ev && sg->exact ? bp__alloc(d.a, ((size_t)n + 1) * sizeof *prof) : NULL;
    if (!d.loc || !d.instep || !d.pend || !cur || (ev && sg->exact && !prof)) d.oom = true;
    else {
        for (int32_t v = 0; v < n; v++) d.loc[v] = -1;
        memcpy(cur, in, (size_t)n * sizeof *in);
    }
    /* Passes: each searches the pieces at the peak of the previous order,
     * until the order is proven or stops improving. */
    for (int pass = 0; pass < 4 && !d.oom; pass++) {
        /* the input's memory at each step: the evaluator's profile where the
         * step model is exact, else the step model */
        d.npend = 0;
        d.pend_peak = 0;
        d.target = 0;
        if (prof) {
            d.target = bp__eval_profile(ev, cur, prof);
            for (int32_t i = 0; i < n; i++) d.instep[cur[i]] = prof[i];
            *work += ((uint64_t)n + (uint64_t)sg->to_off[n]) * 8;
        } else {
            bp__sim_reset(sim);
            for (int32_t i = 0; i < n; i++) {
                uint64_t at = dc_run(&d, cur[i]);
                d.instep[cur[i]] = at;
                if (at > d.target) d.target = at;
            }
        }
        bp__sim_reset(sim);
        *work += (uint64_t)n + (uint64_t)sg->ns;
        d.lb = 0;
        dc_solve(&d, cur, n, 0, true, out);
        info->peak = sim->peak > d.pend_peak ? sim->peak : d.pend_peak;
        info->proven = sg->dp_exact && !d.oom && info->peak <= d.lb;
        if (info->proven || info->peak >= d.target || dc_out(&d)) break;
        memcpy(cur, out, (size_t)n * sizeof *out);
    }
    bp__free(d.a, d.loc, ((size_t)n + 1) * sizeof *d.loc);
    bp__free(d.a, d.instep, ((size_t)n + 1) * sizeof *d.instep);
    bp__free(d.a, d.pend, ((size_t)n + 1) * sizeof *d.pend);
    if (prof) bp__free(d.a, prof, ((size_t)n + 1) * sizeof *prof);
    bp__free(d.a, cur, ((size_t)n + 1) * sizeof *cur);
    bp__free(d.a, d.h, d.hcap * sizeof *d.h);
    bp__free(d.a, d.r, d.rcap * sizeof *d.r);
    if (d.oom) { info->proven = 0; return -1; }
    return 1;
}
