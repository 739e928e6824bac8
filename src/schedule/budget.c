/*
 * budget.c — the scheduler driver (bp_schedule_ex) and the memory budget.
 *
 * Budget (the executability check): an order whose peak is over the
 * budget is repaired by running the step model again with the order as the
 * priority list: at each step, among ready ops whose step would fit (memory
 * live + what the op allocates <= budget), ops that free memory (allocate
 * less than they free) go first, then the one earliest in the order; an op
 * whose outputs cannot be placed waits.  If no ready op fits, that order
 * breaks there.  The driver tries the chosen scheduler's order, then the
 * other fast orders; if none can be repaired, it fails with BP_ERR_BUDGET,
 * the smallest peak it found (the smallest budget that works), and the op at
 * which the chosen scheduler's order breaks.  Scanning the ready ops makes
 * the repair O(V * ready + E); it only runs when the budget is too small for
 * the order.
 */
#include "schedule/schedule_internal.h"

#include <string.h>

typedef struct budget_break {
    int32_t op, step;
    uint64_t need;
} budget_break;

/* Repairs order in place; returns 1 on success, 0 with *bk filled. */
static int budget_repair(const bp__sgraph *sg, uint64_t budget, int32_t *order, int32_t *rank, int32_t *ready,
                         int32_t *out, bp__sim *s, budget_break *bk)
{
    int32_t n = sg->n, nr = 0;
    for (int32_t i = 0; i < n; i++) rank[order[i]] = i;
    bp__sim_reset(s);
    for (int32_t v = 0; v < n; v++)
        if (!s->npred[v]) ready[nr++] = v;
    for (int32_t k = 0; k < n; k++) {
        int32_t pick = -1, pick_i = -1, worst = -1;
        bool pick_frees = false;
        uint64_t worst_need = UINT64_MAX;
        for (int32_t i = 0; i < nr; i++) {
            int32_t v = ready[i];
            uint64_t al, fr;
            bp__sim_delta(s, v, &al, &fr);
            uint64_t need = s->mem + al;
            if (need > budget) {
                if (need < worst_need) { worst_need = need; worst = v; }
                continue;
            }
            bool frees = fr > al;
            if (pick < 0 || (frees && !pick_frees) || (frees == pick_frees && rank[v] < rank[pick])) {
                pick = v; pick_i = i; pick_frees = frees;
            }
        }
        if (pick < 0) {
            bk->op = worst;
            bk->step = k;
            bk->need = worst_need;
            return 0;
        }
        ready[pick_i] = ready[--nr];
        out[k] = pick;
        bp__sim_run(s, pick);
        for (int32_t i = sg->su_off[pick]; i < sg->su_off[pick + 1]; i++)
            if (!s->npred[sg->su[i]]) ready[nr++] = sg->su[i];
    }
    memcpy(order, out, (size_t)n * sizeof *order);
    return 1;
}

bp_status bp__sched_budget(const bp__sgraph *sg, uint64_t budget, int32_t *order, uint64_t best_peak,
                           const char *best_name, bp_error *err)
{
    const bp_allocator *a = &sg->g->alloc;
    size_t n1 = (size_t)sg->n + 1;
    int32_t *rank = bp__alloc(a, n1 * sizeof *rank), *ready = bp__alloc(a, n1 * sizeof *ready);
    int32_t *out = bp__alloc(a, n1 * sizeof *out);
    bp__sim s;
    bp_status st = BP_OK;
    memset(&s, 0, sizeof s);
    if (!rank || !ready || !out) st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", sg->g->name);
    if (!st) st = bp__sim_init(&s, sg, err);
    if (!st) {
        budget_break bk = {-1, 0, 0};
        if (!budget_repair(sg, budget, order, rank, ready, out, &s, &bk)) {
            const bp_graph *g = sg->g;
            st = bp__err(err, BP_ERR_BUDGET,
                         "%s: no schedule found that fits the budget of %llu bytes; the smallest peak found is %llu bytes (%s); "
                         "with the budget, op \"%s\" cannot run at step %d: it needs %llu bytes live",
                         g->name, (unsigned long long)budget, (unsigned long long)best_peak, best_name ? best_name : "?",
                         bk.op >= 0 ? bp__names_get(&g->onames, bk.op) : "?", bk.step, (unsigned long long)bk.need);
        }
    }
    bp__sim_free(&s);
    bp__free(a, rank, n1 * sizeof *rank);
    bp__free(a, ready, n1 * sizeof *ready);
    bp__free(a, out, n1 * sizeof *out);
    return st;
}

/* ---------------------------------------------------------------- driver */

/* One fast scheduler by kind, over sg. */
static bp_status run_fast(const bp_graph *g, const bp__sgraph *sg, const bp_plan_options *o, bp_sched_kind k,
                          const double *cost, int32_t *order, bp_error *err)
{
    switch (k) {
    case BP_SCHED_GIVEN: return bp__sched_given(g, order, err);
    case BP_SCHED_KAHN: return bp__sched_kahn(g, order, err);
    case BP_SCHED_DFS: return bp__sched_dfs(sg, 0, order, err);
    case BP_SCHED_LIST: return bp__sched_list(sg, 0, order, err);
    case BP_SCHED_LPMF: return bp__sched_lpmf(sg, 0, order, err);
    case BP_SCHED_SEED: return bp__sched_seed(sg, cost, o->alpha, o->beta, 0, order, err);
    default: return bp__err(err, BP_ERR_USAGE, "%s: unknown scheduler %d", g->name, (int)k);
    }
}

bp_status bp_schedule_ex(const bp_graph *g, const bp_plan_options *opts, int32_t *order, bp_schedule_info *info,
                         bp_error *err)
{
    if (!g || !order) return bp__err(err, BP_ERR_USAGE, "bp_schedule: NULL argument");
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized", g->name);
    bp_plan_options defaults;
    if (!opts) { bp_plan_options_init(&defaults); opts = &defaults; }
    if ((unsigned)opts->sched >= BP_SCHED_COUNT)
        return bp__err(err, BP_ERR_USAGE, "%s: unknown scheduler %d", g->name, (int)opts->sched);
    if (!(opts->alpha >= 0 && opts->beta >= 0) || opts->alpha + opts->beta <= 0)
        return bp__err(err, BP_ERR_USAGE, "%s: alpha and beta must be >= 0 and not both 0 (got %g and %g)", g->name, opts->alpha, opts->beta);
    double t0 = bp__now();
    bp_schedule_info inf;
    memset(&inf, 0, sizeof inf);
    inf.picked = bp_sched_name(opts->sched);
    const bp_allocator *a = &g->alloc;
    size_t n1 = g->n_o + 1;
    bp__sched_env env;
    bool exact = opts->sched == BP_SCHED_BEST || opts->sched == BP_SCHED_OPTIMAL;
    bp_status s = bp__sched_env_init(&env, g, opts, exact, err);   /* best and optimal simulate steps */
    if (s) return s;
    int32_t *alt = bp__alloc(a, n1 * sizeof *alt);
    if (!alt) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory scheduling", g->name); goto out; }
    if (opts->sched == BP_SCHED_BEST) s = bp__sched_best(&env, opts, order, &inf, err);
    else if (opts->sched == BP_SCHED_OPTIMAL) s = bp__sched_optimal(&env, opts, order, &inf, err);
    else s = run_fast(g, &env.sg, opts, opts->sched, env.cost, order, err);
    if (s) goto out;
    inf.peak_bytes = bp__eval_peak(&env.ev, order, NULL);
    if (!inf.lower_bound) inf.lower_bound = env.sg.lb;
    if (opts->budget && inf.peak_bytes > opts->budget) {
        /* The smallest peak among the fast orders and this one. */
        uint64_t best = inf.peak_bytes;
        const char *best_name = bp_sched_name(opts->sched);
        bp_status rs = BP_ERR_BUDGET;
        bp_error first;
        memset(&first, 0, sizeof first);
        memcpy(alt, order, g->n_o * sizeof *alt);
        rs = bp__sched_budget(&env.sg, opts->budget, alt, best, best_name, &first);
        if (rs == BP_OK) { memcpy(order, alt, g->n_o * sizeof *alt); goto fits; }
        if (rs != BP_ERR_BUDGET) { s = rs; if (err) *err = first; goto out; }
        for (int k = BP_SCHED_GIVEN; k <= BP_SCHED_SEED; k++) {
            bp_error e2;
            if (run_fast(g, &env.sg, opts, (bp_sched_kind)k, env.cost, alt, &e2)) continue;
            uint64_t p = bp__eval_peak(&env.ev, alt, NULL);
            if (p < best) { best = p; best_name = bp_sched_name((bp_sched_kind)k); }
            if (p <= opts->budget || bp__sched_budget(&env.sg, opts->budget, alt, best, best_name, &e2) == BP_OK) {
                memcpy(order, alt, g->n_o * sizeof *alt);
                inf.picked = bp_sched_name((bp_sched_kind)k);
                goto fits;
            }
        }
        /* Report with the smallest peak found. */
        memcpy(alt, order, g->n_o * sizeof *alt);
        s = bp__sched_budget(&env.sg, opts->budget, alt, best, best_name, err);
        if (!s) s = bp__err(err, BP_ERR_BUDGET, "%s: no schedule found that fits the budget of %llu bytes", g->name,
                            (unsigned long long)opts->budget);
        goto out;
    fits:
        inf.peak_bytes = bp__eval_peak(&env.ev, order, NULL);
        inf.optimal = 0;
        if (inf.peak_bytes > opts->budget) /* only for views the step model cannot follow */
            s = bp__err(err, BP_ERR_BUDGET, "%s: no schedule found that fits the budget of %llu bytes; the smallest peak found is %llu bytes",
                        g->name, (unsigned long long)opts->budget, (unsigned long long)inf.peak_bytes);
    }
out:
    inf.seconds = bp__now() - t0;
    if (info) *info = inf;
    bp__free(a, alt, n1 * sizeof *alt);
    bp__sched_env_free(&env);
    return s;
}
