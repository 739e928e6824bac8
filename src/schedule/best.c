/*
 * best.c — `best`: the lowest peak bufplan can find in its time.
 *
 * 1. Portfolio: every fast order (given, kahn, dfs, list, lpmf, seed with a
 *    few alpha/beta pairs), each scored with the exact evaluator; keep the
 *    lowest.  `best` is therefore never worse than any baseline.
 * 2. Restarts: list, lpmf, seed and dfs again with randomised tie-breaks
 *    (and a random alpha for seed), seeded from opts->seed.
 * 3. Exact search for small graphs: dynamic programming over the sets of
 *    scheduled ops (the state is the set: what is live after it does not
 *    depend on the order inside it), layer by layer, each set kept once with
 *    its lowest peak, pruned by the best peak known.  A cap on the states per
 *    layer turns it into beam search (then it proves nothing).
 * 4. Window search: around each step where the peak is reached, the ops of
 *    a window of the current order are re-ordered by the same exact search,
 *    started from the state the prefix leaves (ops outside the window keep
 *    their steps, so any order of the window is topological).  A new order
 *    is kept when the exact evaluator says it is better: lower peak, or the
 *    same peak reached at fewer steps.
 * 5. Local search (local.c): ops near the peak step slide across it
 *    within their dependency windows, the profile kept in a segment tree.
 * 6. Decomposition (decomp.c), one more candidate: cut points,
 *    components and single-entry/single-exit regions as macro-ops, the
 *    exact search on the pieces (up to half the work left), every piece
 *    falling back to the best order so far.  It runs after 5, so 1-5 are
 *    as without it; when it beats them, 4 and 5 run again from its order.
 *    Exact pieces joined at cut points prove the order optimal.
 * 7. Anytime phase, only under a time limit the caller set (not the
 *    default): beam searches over the sets of executed ops (the exact
 *    search with a cap on the states per layer, which keeps the lowest peak
 *    so far, then the fewest live bytes), the cap 16, 64, 256, ... up to
 *    `optimal`'s own cap, each bounded by the best peak so far, until the
 *    work count reaches 3/4 of the limit (slack for the clock).  A rung that is not truncated is
 *    exhaustive and proves the order optimal.  Only a lower peak replaces
 *    the order, so the result is never worse than steps 1-6 give.
 * Lower bound: the static one of the sgraph, or, for graphs of up to 4,096
 * ops, the bytes that must be live at some op's step in every order (see
 * best_forced_lb); the search stops when the peak reaches it (optimal).
 * The portfolio stops as soon as an order reaches the bound at a single
 * step (nothing can replace it), and best with it: its answer is proven.
 * The search is bounded by a work count derived from opts->time_limit
 * (calibrated at about 2e8 units per second; a greedy run over V ops with E
 * touches costs 60 (V + E)); with the default limit, also by a budget
 * that grows with the graph (0.5 s plus 1,024 greedy runs' worth), and
 * without the anytime phase.  So on
 * a machine at least that fast the result is the same for the same seed
 * and limit.  On a slower or busy one the
 * clock stops it at the limit (checked inside every search stage), and
 * the order found so far is returned, not proven.  The portfolio always
 * runs (it is what makes best never worse than a baseline).
 */
#include "schedule/schedule_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BP_WORK_PER_SECOND 2e8
/* With the default time limit (bp_plan_options_init's 10 s) best's budget is
 * also at most twice the decomposition's floor (DECOMP_MIN_WORK) plus this
 * many greedy runs' worth of work: it grows with the graph.  Large enough
 * that no stage on the benchmark and golden graphs gets less than it did
 * under the plain 10 s (their searches end by themselves within about 1,900
 * runs, mostly the floor; docs/BENCHMARKS.md). */
#define BP_DEFAULT_TIME_LIMIT 10.0
#define BP_DEFAULT_RUNS 1024

/* ------------------------------------------------------------- portfolio */

typedef struct best_ctx {
    const bp__sgraph *sg;
    bp__eval *ev;
    uint64_t *prof;          /* n: memory per step */
    int32_t *best;           /* n: best order so far */
    uint64_t peak;
    int32_t npk;             /* steps at the peak */
    const char *name;
} best_ctx;

/* Keeps order if it beats the best: lower peak, or fewer steps at it. */
static bool best_consider(best_ctx *b, const int32_t *order, const char *name)
{
    uint64_t p = bp__eval_profile(b->ev, order, b->prof);
    int32_t npk = 0;
    for (int32_t s = 0; s < b->sg->n; s++) npk += b->prof[s] == p;
    if (b->name && (p > b->peak || (p == b->peak && npk >= b->npk))) return false;
    b->peak = p;
    b->npk = npk;
    b->name = name;
    if (order != b->best) memcpy(b->best, order, (size_t)b->sg->n * sizeof *order);
    return true;
}

/* Work units of one greedy run (calibrated: ~2e8 units per second). */
static uint64_t run_cost(const bp__sgraph *sg) { return ((uint64_t)sg->n + (uint64_t)sg->to_off[sg->n]) * 60 + 64; }

static uint64_t best_forced_lb(const bp__sgraph *sg, uint64_t *work);

/* Candidate k (0..8) of the portfolio into cand; *nm gets its name. */
static bp_status portfolio_run(const bp__sgraph *sg, const bp_plan_options *o, const double *cost, int k, int32_t *cand,
                               const char **nm, bp_error *e)
{
    static const double weights[][2] = {{0, 0}, {1.0, 0.0}, {0.5, 0.5}, {0.9, 0.1}};
    switch (k) {
    case 0: *nm = "given"; return bp__sched_given(sg->g, cand, e);
    case 1: *nm = "kahn"; return bp__sched_kahn(sg->g, cand, e);
    case 2: *nm = "dfs"; return bp__sched_dfs(sg, 0, cand, e);
    case 3: *nm = "list"; return bp__sched_list(sg, 0, cand, e);
    case 4: *nm = "lpmf"; return bp__sched_lpmf(sg, 0, cand, e);
    default: {
        double al = k == 5 ? o->alpha : weights[k - 5][0], be = k == 5 ? o->beta : weights[k - 5][1];
        *nm = "seed";
        return bp__sched_seed(sg, cost, al, be, 0, cand, e);
    }
    }
}

uint64_t bp__sched_portfolio(const bp__sgraph *sg, bp__eval *ev, const bp_plan_options *o, const double *cost,
                             int32_t *order, const char **name, uint64_t *work, uint64_t *bound, bp_error *err)
{
    const bp_allocator *a = &sg->g->alloc;
    size_t n1 = (size_t)sg->n + 1;
    int32_t *cand = bp__alloc(a, n1 * sizeof *cand);
    uint64_t *prof = bp__alloc(a, n1 * sizeof *prof);
    if (!cand || !prof) {
        bp__free(a, cand, n1 * sizeof *cand);
        bp__free(a, prof, n1 * sizeof *prof);
        bp__err(err, BP_ERR_NOMEM, "%s: out of memory scheduling", sg->g->name);
        return UINT64_MAX;
    }
    best_ctx b = {sg, ev, prof, order, 0, 0, NULL};
    uint64_t lb = sg->lb, w0 = 0;
    if (!work) work = &w0;
    bp_status st = BP_OK;
    for (int k = 0; k < 9 && st != BP_ERR_NOMEM; k++) {
        bp_error e;
        const char *nm = NULL;
        st = portfolio_run(sg, o, cost, k, cand, &nm, &e);
        *work += run_cost(sg);
        if (st == BP_ERR_NOMEM && err) *err = e;
        if (!st) best_consider(&b, cand, nm);
        if (!bound) continue;
        /* at the bound at one step: no later order can replace it */
        if (b.name && b.peak <= lb && b.npk == 1) break;
        if (k == 0) {
            uint64_t f = best_forced_lb(sg, work);
            if (f > lb) lb = f;
            if (b.name && b.peak <= lb && b.npk == 1) break;
        }
    }
    bp__free(a, cand, n1 * sizeof *cand);
    bp__free(a, prof, n1 * sizeof *prof);
    if (bound) *bound = lb;
    if (!b.name) {
        if (st != BP_ERR_NOMEM) bp__err(err, BP_ERR_INVALID, "%s: the graph has a cycle", sg->g->name);
        return UINT64_MAX;
    }
    if (name) *name = b.name;
    return b.peak;
}

/* ----------------------------------------------------- forced lower bound */

/* A lower bound of the peak over all orders, from what must be live
 * together.  At the step of op v, a storage with a toucher among v's
 * ancestors (v included) and one among its descendants (v included) is
 * live in every order: its hull spans v's step.  So is one live from the
 * start (a read input) with a toucher among the descendants, or a pinned
 * output with a toucher among the ancestors.  An in-place write could make
 * such a storage share bytes with its input: outputs that may be merged in
 * some order (an in-place candidate whose input is not pinned and has no
 * toucher among the writer's descendants) are left out, so the bound holds
 * for every order.  Per storage,
 * the ops v where it is forced are (union of the touchers' descendants) and
 * (union of their ancestors), as bitsets: O(V (V + E) / 64) time, V^2 / 32
 * bytes, so only for graphs of up to 4,096 ops.  Returns 0 when skipped. */
static uint64_t best_forced_lb(const bp__sgraph *sg, uint64_t *work)
{
    const bp_allocator *a = &sg->g->alloc;
    int32_t n = sg->n, W = (n + 63) / 64;
    if (n < 2 || n > 4096 || !sg->ns) return 0;
    size_t nw = (size_t)n * W;
    uint64_t *anc = bp__calloc(a, nw, sizeof *anc), *des = bp__calloc(a, nw, sizeof *des);
    uint64_t *x = bp__alloc(a, 2 * (size_t)W * sizeof *x), *sum = bp__calloc(a, (size_t)n, sizeof *sum);
    int32_t *ord = bp__alloc(a, (size_t)n * sizeof *ord), *indeg = bp__alloc(a, (size_t)n * sizeof *indeg);
    uint8_t *merge = bp__calloc(a, (size_t)sg->ns, 1);
    uint64_t lb = 0;
    if (!anc || !des || !x || !sum || !ord || !indeg || !merge) goto out;
    /* a topological order (Kahn) */
    int32_t k = 0, h = 0;
    for (int32_t v = 0; v < n; v++) if (!(indeg[v] = sg->pr_off[v + 1] - sg->pr_off[v])) ord[k++] = v;
    while (h < k) {
        int32_t v = ord[h++];
        for (int32_t j = sg->su_off[v]; j < sg->su_off[v + 1]; j++)
            if (--indeg[sg->su[j]] == 0) ord[k++] = sg->su[j];
    }
    if (k != n) goto out; /* a cycle: the caller fails on it anyway */
    for (int32_t i = 0; i < n; i++) {
        int32_t v = ord[i];
        uint64_t *av = anc + (size_t)v * W;
        av[v / 64] |= 1ull << (v % 64);
        for (int32_t j = sg->pr_off[v]; j < sg->pr_off[v + 1]; j++)
            for (int32_t w = 0; w < W; w++) av[w] |= anc[(size_t)sg->pr[j] * W + w];
    }
    for (int32_t i = n - 1; i >= 0; i--) {
        int32_t v = ord[i];
        uint64_t *dv = des + (size_t)v * W;
        dv[v / 64] |= 1ull << (v % 64);
        for (int32_t j = sg->su_off[v]; j < sg->su_off[v + 1]; j++)
            for (int32_t w = 0; w < W; w++) dv[w] |= des[(size_t)sg->su[j] * W + w];
    }
    *work += (uint64_t)(sg->pr_off[n] + n) * (uint64_t)W * 4;
    for (int32_t v = 0; v < n; v++)
        for (int32_t c = sg->ip_off[v]; c < sg->ip_off[v + 1]; c++) {
            int32_t si = sg->ip[c].si;
            bool may = !(sg->sflags[si] & BP__SF_PINNED); /* a pinned input never ends */
            for (int32_t j = sg->so_off[si]; j < sg->so_off[si + 1] && may; j++) {
                int32_t u = sg->so[j];
                may = u == v || !(des[(size_t)v * W + u / 64] >> (u % 64) & 1);
            }
            if (may) merge[sg->ip[c].so] = 1;
        }
    for (int32_t y = 0; y < sg->ns; y++) {
        if (merge[y] || sg->so_off[y + 1] == sg->so_off[y]) continue;
        /* xd: ops with a toucher among their ancestors (or live from the
         * start); xa: ops with one among their descendants (or pinned) */
        uint64_t *xd = x, *xa = x + W;
        uint64_t fd = (sg->sflags[y] & BP__SF_EXTLIVE) ? ~0ull : 0, fa = (sg->sflags[y] & BP__SF_PINNED) ? ~0ull : 0;
        for (int32_t w = 0; w < W; w++) { xd[w] = fd; xa[w] = fa; }
        for (int32_t j = sg->so_off[y]; j < sg->so_off[y + 1]; j++) {
            int32_t u = sg->so[j];
            for (int32_t w = 0; w < W; w++) {
                xd[w] |= des[(size_t)u * W + w];
                xa[w] |= anc[(size_t)u * W + w];
            }
        }
        for (int32_t w = 0; w < W; w++) {
            uint64_t m = xd[w] & xa[w];
            while (m) {
                int32_t v = w * 64 + __builtin_ctzll(m);
                m &= m - 1;
                if (v < n) sum[v] += sg->ssize[y];
            }
        }
        *work += (uint64_t)(sg->so_off[y + 1] - sg->so_off[y] + 2) * (uint64_t)W * 2;
    }
    for (int32_t v = 0; v < n; v++) if (sum[v] > lb) lb = sum[v];
out:
    bp__free(a, anc, nw * sizeof *anc);
    bp__free(a, des, nw * sizeof *des);
    bp__free(a, x, 2 * (size_t)W * sizeof *x);
    bp__free(a, sum, (size_t)n * sizeof *sum);
    bp__free(a, ord, (size_t)n * sizeof *ord);
    bp__free(a, indeg, (size_t)n * sizeof *indeg);
    bp__free(a, merge, (size_t)sg->ns);
    return lb;
}

/* ------------------------------------------------------------------ best */

/* the decomposition's least work allowance (about 0.25 s) */
#define DECOMP_MIN_WORK ((uint64_t)(BP_WORK_PER_SECOND / 4))

/* The default budget: 2 DECOMP_MIN_WORK + BP_DEFAULT_RUNS greedy runs, at
 * most the time limit's work. */
static uint64_t best_default_budget(const bp__sgraph *sg, uint64_t limit)
{
    uint64_t rc = run_cost(sg);
    if (limit <= 2 * DECOMP_MIN_WORK || rc > (limit - 2 * DECOMP_MIN_WORK) / BP_DEFAULT_RUNS) return limit;
    return 2 * DECOMP_MIN_WORK + rc * BP_DEFAULT_RUNS;
}

/* 4 and 5: window search, then local search, from the best order so far
 * (b->best); b, *work, *optimal and *states are updated. */
static bp_status best_refine(bp__sched_env *env, best_ctx *b, int32_t *cand, int32_t *win, uint64_t *bprof,
                             uint64_t *workp, uint64_t limit, double deadline, uint64_t flb, int *optimalp,
                             uint64_t *statesp, bp_error *err)
{
    const bp_graph *g = env->sg.g;
    int32_t n = env->sg.n;
    bp_status st = BP_OK;
    uint64_t work = *workp, states = *statesp;
    int optimal = *optimalp;
    /* 4. window search around the peak */
    static const int32_t wsize[] = {10, 16, 24, 36};
    static const size_t wcap[] = {1024, 1024, 2048, 2048};
    while (!optimal && work < limit && n > 2 && bp__now() < deadline) {
        bool improved = false;
        int32_t tried = 0;
        bp__eval_profile(&env->ev, b->best, bprof);
        for (int32_t p = 0; p < n && !improved && tried < 16 && work < limit; p++) {
            if (bprof[p] != b->peak) continue;
            tried++;
            for (size_t wi = 0; wi < sizeof wsize / sizeof wsize[0] && !improved && work < limit && bp__now() < deadline; wi++) {
                int32_t w = wsize[wi] < n ? wsize[wi] : n;
                int32_t lo = p - w / 2;
                if (lo < 0) lo = 0;
                if (lo + w > n) lo = n - w;
                bp__sim_reset(&env->sim);
                for (int32_t i = 0; i < lo; i++) bp__sim_run(&env->sim, b->best[i]);
                work += (uint64_t)lo * 40 + (uint64_t)(n + env->sg.ns) * 4;
                bp__dp_result r;
                int ok = bp__sched_dp(&env->sg, &env->sim, b->best + lo, w, b->peak + 1, wcap[wi], &work, 0, deadline, win, &r);
                states += r.states;
                if (ok < 0) { st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory in the window search", g->name); return st; }
                if (ok != 1) continue;
                memcpy(cand, b->best, (size_t)n * sizeof *cand);
                memcpy(cand + lo, win, (size_t)w * sizeof *cand);
                work += run_cost(&env->sg) / 4;
                const char *wn = b->name;
                if (strncmp(wn, "window", 6) != 0) wn = "window";
                if (best_consider(b, cand, wn)) improved = true;
            }
        }
        if (!improved) break;
        if (b->peak <= flb) optimal = 1;
    }
    /* 5. local search on the whole order around the peak (after the window
     * search: it only ever improves on what the windows left) */
    if (!optimal && work < limit && bp__now() < deadline) {
        memcpy(cand, b->best, (size_t)n * sizeof *cand);
        uint64_t lim = work + (limit - work) / 2;
        int lr = bp__sched_local(&env->sg, &env->ev, cand, &work, lim, deadline);
        if (lr < 0) { st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory in the local search", g->name); return st; }
        if (lr > 0) {
            char const *ln = b->name;
            best_consider(b, cand, strstr(ln, "+local") || !strcmp(ln, "local") ? ln : "local");
        }
        if (b->peak <= flb) optimal = 1;
    }

    *workp = work;
    *statesp = states;
    *optimalp = optimal;
    return st;
}

/* The first rung of the anytime phase: states per layer of its first beam. */
#define ANYTIME_CAP0 ((size_t)16)

/* 7. Anytime phase: beam searches over the sets of executed ops (the exact
 * search of dp.c with a cap on the states per layer, ranked by peak so far,
 * then live bytes), the cap growing 4x per rung from ANYTIME_CAP0 up to
 * `optimal`'s own cap, each bounded by the best peak so far (only a lower
 * peak is taken).  A rung that is not truncated is exhaustive: then the best
 * order is proven optimal and the phase stops.  It stops too when the work
 * count reaches limit (the rungs after one that ran out would too) or the
 * clock the deadline.  b, *work, *optimal and *states are updated. */
static bp_status best_anytime(bp__sched_env *env, best_ctx *b, int32_t *cand, int32_t *win, uint64_t *workp,
                              uint64_t limit, double deadline, uint64_t flb, int *optimalp, uint64_t *statesp,
                              bp_error *err)
{
    int32_t n = env->sg.n;
    size_t top = bp__sched_optimal_cap(n);
    for (int32_t i = 0; i < n; i++) cand[i] = i;
    for (size_t cap = ANYTIME_CAP0; !*optimalp && *workp < limit && bp__now() < deadline; cap *= 4) {
        if (cap > top) cap = top;
        bp__dp_result r;
        bp__sim_reset(&env->sim);
        int ok = bp__sched_dp(&env->sg, &env->sim, cand, n, b->peak, cap, workp, limit, deadline, win, &r);
        *statesp += r.states;
        if (ok < 0) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory in the beam search", env->sg.g->name);
        if (ok == 1) best_consider(b, win, "beam");
        /* exhaustive below the bound it had: nothing is lower than b->peak */
        if (r.proven && env->sg.dp_exact) *optimalp = 1;
        if (b->peak <= flb) *optimalp = 1;
        if (cap == top || *workp >= limit) break;
    }
    return BP_OK;
}

bp_status bp__sched_best_run(bp__sched_env *env, const bp_plan_options *o, uint64_t limit, double deadline,
                             int anytime, int32_t *order, bp_schedule_info *info, bp_error *err)
{
    const bp_graph *g = env->sg.g;
    const bp_allocator *a = &g->alloc;
    size_t n1 = g->n_o + 1;
    int32_t n = (int32_t)g->n_o;
    bp_status st = BP_OK;
    int32_t *cand = bp__alloc(a, n1 * sizeof *cand), *win = bp__alloc(a, n1 * sizeof *win);
    uint64_t *prof = bp__alloc(a, n1 * sizeof *prof), *bprof = bp__alloc(a, n1 * sizeof *bprof);
    if (!cand || !win || !prof || !bprof) { st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory scheduling", g->name); goto out; }
    uint64_t work = 0;
    if (!limit) limit = 1; /* 0 would be no limit to the searches */
    if (deadline <= 0) deadline = HUGE_VAL;
    uint64_t seed = o->seed ? o->seed : 1;

    /* 1. portfolio, which stops at the lower bound */
    const char *nm = NULL;
    uint64_t flb = 0;
    if (bp__sched_portfolio(&env->sg, &env->ev, o, env->cost, order, &nm, &work, &flb, err) == UINT64_MAX) { st = err ? err->status : BP_ERR_INVALID; goto out; }
    best_ctx b = {&env->sg, &env->ev, prof, order, 0, 0, NULL};
    best_consider(&b, order, nm);
    int optimal = b.peak <= flb;
    uint64_t states = 0;

    /* 2. exact search on small graphs */
    if (!optimal && n <= 64) {
        bp__dp_result r;
        bp__sim_reset(&env->sim);
        for (int32_t i = 0; i < n; i++) cand[i] = i;
        int ok = bp__sched_dp(&env->sg, &env->sim, cand, n, b.peak, (size_t)1 << 14, &work, limit / 2, deadline, win, &r);
        states += r.states;
        if (ok < 0) { st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory in the exact search", g->name); goto out; }
        if (ok == 1) best_consider(&b, win, "dp");
        if (r.proven && env->sg.dp_exact) optimal = 1;
    }

    /* 3. restarts with random tie-breaks */
    for (uint32_t r = 1; !optimal && r <= 64 && work + run_cost(&env->sg) <= limit / 3 && bp__now() < deadline; r++) {
        uint64_t ts = bp__sched_tie(seed, (int32_t)r) | 1;
        bp_error e;
        bp_status rs;
        const char *rn;
        switch (r % 4) {
        case 0: rs = bp__sched_list(&env->sg, ts, cand, &e); rn = "list+restarts"; break;
        case 1: rs = bp__sched_lpmf(&env->sg, ts, cand, &e); rn = "lpmf+restarts"; break;
        case 2: {
            double al = (double)(ts >> 11) / 9007199254740992.0;
            rs = bp__sched_seed(&env->sg, env->cost, al, 1.0 - al, ts, cand, &e);
            rn = "seed+restarts";
            break;
        }
        default: rs = bp__sched_dfs(&env->sg, ts, cand, &e); rn = "dfs+restarts"; break;
        }
        work += run_cost(&env->sg);
        if (rs == BP_ERR_NOMEM) { st = rs; if (err) *err = e; goto out; }
        if (!rs) best_consider(&b, cand, rn);
        if (b.peak <= flb) optimal = 1;
    }

    /* 4, 5. window search and local search */
    st = best_refine(env, &b, cand, win, bprof, &work, limit, deadline, flb, &optimal, &states, err);
    if (st) goto out;

    /* 6. decomposition (decomp.c): cut points, components,
     * single-entry/single-exit regions as macro-ops, exact search on the
     * pieces, with the best order so far as the fallback of every piece.
     * After the refinement, so that it only ever adds a candidate; when it
     * is better, the refinement runs again from it. */
    if (!optimal && work < limit && n > 2 && bp__now() < deadline) {
        bp__decomp_info di;
        /* at most half of what is left, and no more than half what steps 1-5 spent
         * (a floor for small graphs): it rarely wins on large ones, and
         * planning time should not be dominated by a long shot */
        uint64_t share = (limit - work) / 2, cap = work / 2 > DECOMP_MIN_WORK ? work / 2 : DECOMP_MIN_WORK;
        uint64_t lim = work + (share < cap ? share : cap);
        int dr = bp__decomp_schedule(&env->sg, &env->sim, &env->ev, b.best, b.peak + 1, 0, cand, &work, lim, deadline, &di);
        if (dr < 0) { st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory in the decomposition", g->name); goto out; }
        states += di.states;
        bool better = best_consider(&b, cand, "decomp");
        /* optimal pieces joined at cut points: no order is below it */
        if (di.proven && bp__eval_peak(&env->ev, cand, NULL) <= b.peak) optimal = 1;
        if (b.peak <= flb) optimal = 1;
        if (better && !optimal) {
            st = best_refine(env, &b, cand, win, bprof, &work, limit, deadline, flb, &optimal, &states, err);
            if (st) goto out;
        }
    }

    /* 7. anytime: beam searches of growing width until the limit, when the
     * caller asks for it */
    if (!optimal && work < limit && n > 2 && anytime) {
        /* three quarters of the limit: the work count, not the clock, ends
         * it on a machine at least 3/4 as fast as the calibration */
        st = best_anytime(env, &b, cand, win, &work, limit - limit / 4, deadline, flb, &optimal, &states, err);
        if (st) goto out;
    }

    if (info) {
        info->optimal = optimal;
        info->lower_bound = optimal ? b.peak : flb;
        info->states = states;
        info->picked = b.name;
    }
out:
    bp__free(a, cand, n1 * sizeof *cand);
    bp__free(a, win, n1 * sizeof *win);
    bp__free(a, prof, n1 * sizeof *prof);
    bp__free(a, bprof, n1 * sizeof *bprof);
    return st;
}

bp_status bp__sched_best(bp__sched_env *env, const bp_plan_options *o, int32_t *order, bp_schedule_info *info,
                         bp_error *err)
{
    double tl = o->time_limit > 0 ? o->time_limit : BP_DEFAULT_TIME_LIMIT;
    uint64_t limit = (uint64_t)(tl * BP_WORK_PER_SECOND);
    /* the default limit: a budget that grows with the graph, no anytime
     * phase (default planning stays fast); a limit the caller set: the
     * anytime phase searches until it */
    int dflt = o->time_limit == BP_DEFAULT_TIME_LIMIT;
    if (dflt) limit = best_default_budget(&env->sg, limit);
    /* the clock stops it where the work count runs slow */
    return bp__sched_best_run(env, o, limit, bp__now() + tl, !dflt, order, info, err);
}
