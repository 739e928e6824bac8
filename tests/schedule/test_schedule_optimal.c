/* The exact search against brute force: every topological order of random
 * graphs up to 9 ops, scored by the evaluator (itself checked against
 * lifetime.c in test_schedule).  `optimal` must find the minimum and prove
 * it where the step model is exact; `best` must find it too; where the
 * model is not exact, neither may claim a proof it does not have.
 * The portfolio's early stop at its lower bound must give the order the
 * whole portfolio gives, its bound must never be above the optimum, and
 * `optimal` must never return a peak above the portfolio's, even when its
 * time runs out at once.  On generated graphs whose given order reaches
 * the bound, `best` stops after that one order and says it is proven. */
#include "sched_testutil.h"
#include "plan/plan_internal.h"
#include "schedule/schedule_internal.h"
#include "sched_bruteforce.h"

/* The portfolio with and without its early stop: the same order; the
 * bound is at most the optimum (brute force), and an order at it is optimal. */
static void check_portfolio(bp__sgraph *sg, bp__eval *ev, const bp_plan_options *po, uint64_t optimum, int it)
{
    int32_t full[16], early[16];
    double cost[17];
    bp__op_costs(sg->g, cost);
    const char *n1 = NULL, *n2 = NULL;
    bp_error err;
    uint64_t lb = 0, w1 = 0, w2 = 0;
    uint64_t p1 = bp__sched_portfolio(sg, ev, po, cost, full, &n1, &w1, NULL, &err);
    uint64_t p2 = bp__sched_portfolio(sg, ev, po, cost, early, &n2, &w2, &lb, &err);
    CHECK(p1 != UINT64_MAX && p1 == p2);
    CHECK_MSG(memcmp(full, early, (size_t)sg->n * sizeof *full) == 0 && n1 && n2 && strcmp(n1, n2) == 0,
              "graph %d: the early stop gave another order (%s, not %s)", it, n2 ? n2 : "-", n1 ? n1 : "-");
    CHECK_MSG(lb <= optimum, "graph %d: lower bound %llu above the optimum %llu", it, (unsigned long long)lb,
              (unsigned long long)optimum);
    if (p2 <= lb) CHECK(p2 == optimum);
}

/* optimal with no time at all: the portfolio's order (or better), not
 * proven unless the portfolio reached its bound. */
static void check_optimal_no_time(const bp_graph *g, bp_plan_options po, bp__sgraph *sg, bp__eval *ev, int it)
{
    int32_t got[16], port[16];
    double cost[17];
    bp__op_costs(g, cost);
    bp_error err;
    uint64_t lb = 0, pp = bp__sched_portfolio(sg, ev, &po, cost, port, NULL, NULL, &lb, &err);
    bp_schedule_info info;
    po.sched = BP_SCHED_OPTIMAL;
    po.time_limit = 1e-9;
    CHECK_OK(bp_schedule_ex(g, &po, got, &info, &err), err);
    CHECK_MSG(info.peak_bytes <= pp, "graph %d: optimal %llu, worse than the portfolio's %llu", it,
              (unsigned long long)info.peak_bytes, (unsigned long long)pp);
    if (info.optimal) CHECK(info.peak_bytes <= lb || info.states > 0);
}

/* A generated graph with its sgraph, evaluator, op costs and an order
 * buffer, for the portfolio called directly. */
typedef struct gen_fx {
    bp_graph *g;
    bp_plan_options po;
    bp__sgraph sg;
    bp__eval ev;
    int32_t *order;
    double *cost;
    uint64_t *prof;
} gen_fx;

/* Makes kind with layers/nodes/seq (0 = default); 0 on success. */
static int fx_open(gen_fx *f, const char *kind, int layers, int nodes, int seq)
{
    memset(f, 0, sizeof *f);
    bp_error err;
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.layers = layers, go.nodes = nodes, go.seq = seq;
    CHECK_OK(bp_gen(kind, &go, NULL, &f->g, &err), err);
    if (!f->g) return -1;
    bp_plan_options_init(&f->po);
    CHECK_OK(bp__sgraph_build(f->g, &f->po, &f->sg, &err), err);
    CHECK_OK(bp__eval_init(&f->ev, &f->sg, &err), err);
    size_t n1 = (size_t)f->sg.n + 1;
    f->order = malloc(n1 * sizeof *f->order);
    f->cost = malloc(n1 * sizeof *f->cost);
    f->prof = malloc(n1 * sizeof *f->prof);
    CHECK(f->order && f->cost && f->prof);
    if (!f->order || !f->cost || !f->prof) return -1;
    bp__op_costs(f->g, f->cost);
    return 0;
}

static void fx_close(gen_fx *f)
{
    free(f->order);
    free(f->cost);
    free(f->prof);
    bp__eval_free(&f->ev);
    bp__sgraph_free(&f->sg);
    bp_graph_free(f->g);
}

/* Generated graphs whose given order reaches the bound at one step: best
 * and optimal stop after it (one order's work) and say proven; the peak
 * equals the bound. */
static void test_early_stop(void)
{
    static const struct { const char *kind; int layers, nodes; } gens[] = {
        {"transformer", 2, 0}, {"transformer", 4, 1}, {"unet", 0, 0}};
    int stopped = 0;
    for (size_t i = 0; i < sizeof gens / sizeof gens[0]; i++) {
        gen_fx f;
        bp_error err;
        if (fx_open(&f, gens[i].kind, gens[i].layers, gens[i].nodes, 64)) { fx_close(&f); continue; }
        int32_t n = f.sg.n, npk = 0;
        CHECK_OK(bp__sched_given(f.g, f.order, &err), err);
        uint64_t gp = bp__eval_profile(&f.ev, f.order, f.prof);
        for (int32_t s = 0; s < n; s++) npk += f.prof[s] == gp;
        uint64_t lb = 0, work = 0, one = ((uint64_t)n + (uint64_t)f.sg.to_off[n]) * 60 + 64;
        uint64_t pk = bp__sched_portfolio(&f.sg, &f.ev, &f.po, f.cost, f.order, NULL, &work, &lb, &err);
        CHECK_MSG(gp == f.sg.lb && npk == 1, "%s: the given order is not at the static bound at one step (%llu, %llu, %d)",
                  bp_graph_name(f.g), (unsigned long long)gp, (unsigned long long)f.sg.lb, npk);
        CHECK_MSG(pk == lb && work == one, "%s: the portfolio did not stop at the bound (peak %llu, bound %llu, work %llu of one order's %llu)",
                  bp_graph_name(f.g), (unsigned long long)pk, (unsigned long long)lb, (unsigned long long)work,
                  (unsigned long long)one);
        for (int k = 0; k < 2; k++) {
            bp_schedule_info info;
            f.po.sched = k ? BP_SCHED_OPTIMAL : BP_SCHED_BEST;
            CHECK_OK(bp_schedule_ex(f.g, &f.po, f.order, &info, &err), err);
            CHECK_MSG(info.optimal == 1 && info.peak_bytes == lb && info.lower_bound == lb && info.states == 0 &&
                          info.picked && !strcmp(info.picked, "given"),
                      "%s, %s: not the early stop (optimal %d, peak %llu, bound %llu, picked %s)", bp_graph_name(f.g),
                      k ? "optimal" : "best", info.optimal, (unsigned long long)info.peak_bytes,
                      (unsigned long long)info.lower_bound, info.picked ? info.picked : "-");
        }
        stopped += gp == f.sg.lb && npk == 1 && pk == lb;
        fx_close(&f);
    }
    CHECK(stopped == (int)(sizeof gens / sizeof gens[0]));
}

/* A graph too big for the exact search within its time: optimal stops at
 * once, returns the portfolio's order and does not claim a proof. */
static void test_optimal_gives_up(void)
{
    gen_fx f;
    bp_error err;
    if (!fx_open(&f, "randwire", 0, 0, 0)) {
        uint64_t lb = 0, pk = bp__sched_portfolio(&f.sg, &f.ev, &f.po, f.cost, f.order, NULL, NULL, &lb, &err);
        CHECK(pk > lb);
        bp_schedule_info info;
        f.po.sched = BP_SCHED_OPTIMAL;
        f.po.time_limit = 1e-6;
        CHECK_OK(bp_schedule_ex(f.g, &f.po, f.order, &info, &err), err);
        CHECK_MSG(info.peak_bytes <= pk && !info.optimal && info.lower_bound == lb,
                  "randwire: optimal with no time: peak %llu (portfolio %llu), optimal %d, bound %llu (%llu)",
                  (unsigned long long)info.peak_bytes, (unsigned long long)pk, info.optimal,
                  (unsigned long long)info.lower_bound, (unsigned long long)lb);
    }
    fx_close(&f);
}

int main(void)
{
    test_early_stop();
    test_optimal_gives_up();
    unsigned long long rs = 2024;
    int graphs = 0, proven = 0, dp_better = 0;
    long orders = 0;
    for (int it = 0; it < 1500; it++) {
        rg_opts ro = {1 + (int)(test_rand(&rs) % 9), it % 5 == 0, it % 2 == 0};
        bp_graph *g = rg_make(&rs, &ro);
        if (!g) continue;
        int32_t n = bp_graph_n_ops(g);
        if (n > 9) { bp_graph_free(g); continue; }
        graphs++;
        bp_plan_options po;
        bp_plan_options_init(&po);
        po.alignment = (test_rand(&rs) % 2) ? 256 : 1;
        po.plan_inputs = test_rand(&rs) % 3 == 0;
        po.no_alias = test_rand(&rs) % 6 == 0;
        po.time_limit = 5;
        bp_error err;
        bp__sgraph sg;
        bp__eval ev;
        CHECK_OK(bp__sgraph_build(g, &po, &sg, &err), err);
        CHECK_OK(bp__eval_init(&ev, &sg, &err), err);
        sched_bf b;
        sched_bf_run(&b, &sg, &ev);
        orders += b.count;
        check_portfolio(&sg, &ev, &po, b.best, it);
        check_optimal_no_time(g, po, &sg, &ev, it);

        int32_t got[16];
        bp_schedule_info info;
        po.sched = BP_SCHED_OPTIMAL;
        CHECK_OK(bp_schedule_ex(g, &po, got, &info, &err), err);
        CHECK(rg_is_topological(g, got));
        CHECK(bp__eval_peak(&ev, got, NULL) == info.peak_bytes);
        CHECK(info.peak_bytes >= b.best);
        if (sg.dp_exact) {
            CHECK_MSG(info.peak_bytes == b.best, "graph %d (%d ops): optimal %llu, brute force %llu", it, n,
                      (unsigned long long)info.peak_bytes, (unsigned long long)b.best);
            CHECK_MSG(info.optimal == 1, "graph %d: optimality not proven", it);
            proven++;
        }
        if (info.optimal) CHECK(info.peak_bytes == b.best && info.lower_bound == b.best);
        CHECK(info.lower_bound <= b.best);
        dp_better += info.picked && strcmp(info.picked, "dp") == 0;

        po.sched = BP_SCHED_BEST;
        CHECK_OK(bp_schedule_ex(g, &po, got, &info, &err), err);
        CHECK(rg_is_topological(g, got));
        if (sg.dp_exact) CHECK_MSG(info.peak_bytes == b.best, "graph %d: best %llu, brute force %llu", it,
                                   (unsigned long long)info.peak_bytes, (unsigned long long)b.best);
        if (info.optimal) CHECK(info.peak_bytes == b.best);
        bp__eval_free(&ev);
        bp__sgraph_free(&sg);
        bp_graph_free(g);
    }
    fprintf(stderr, "optimal: %d graphs, %ld orders enumerated, %d proven, dp beat the portfolio on %d\n", graphs, orders,
            proven, dp_better);
    CHECK(graphs > 1000 && proven > 500);
    return check_status();
}
