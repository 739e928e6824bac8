/* Schedulers: the evaluator against lifetime.c's lower bound on thousands of
 * random graphs and orders; the step model against the evaluator; every
 * scheduler's order is a topological permutation with the peak it reports;
 * best <= every baseline; budgets (fit and the documented failure message);
 * makespan against hand-computed values; the alpha sweep; bad input. */
#include "sched_testutil.h"
#include "plan/plan_internal.h"
#include "schedule/schedule_internal.h"

/* Evaluator == bp__lifetimes_peak; step model == evaluator where exact. */
static void test_evaluator(void)
{
    unsigned long long rs = 42;
    int graphs = 0, orders = 0, exact = 0;
    for (int it = 0; it < 3000; it++) {
        rg_opts ro = {1 + (int)(test_rand(&rs) % 40), it % 3 == 0, 0};
        bp_graph *g = rg_make(&rs, &ro);
        if (!g) continue;
        graphs++;
        bp_plan_options po;
        sched_random_opts(&rs, &po);
        bp_error err;
        bp__sgraph sg;
        bp__eval ev;
        bp__sim sim;
        bp__storage st;
        CHECK_OK(bp__sgraph_build(g, &po, &sg, &err), err);
        CHECK_OK(bp__eval_init(&ev, &sg, &err), err);
        CHECK_OK(bp__sim_init(&sim, &sg, &err), err);
        CHECK_OK(bp__storage_build(g, &po, &st, &err), err);
        int32_t n = bp_graph_n_ops(g);
        int32_t *order = malloc(((size_t)n + 1) * sizeof *order);
        REQUIRE(order);
        for (int r = 0; r < 4; r++) {
            rg_random_order(g, &rs, order);
            bp__lifetimes lt;
            CHECK_OK(bp__lifetimes_compute(g, &po, &st, order, &lt, &err), err);
            int32_t ps1, ps2;
            uint64_t want = bp__lifetimes_peak(g, &lt, po.alignment, &ps1);
            uint64_t got = bp__eval_peak(&ev, order, &ps2);
            CHECK_MSG(got == want, "graph %d order %d: evaluator %llu, lifetime.c %llu", it, r,
                      (unsigned long long)got, (unsigned long long)want);
            CHECK(ps1 == ps2 || want == 0);
            bp__lifetimes_free(g, &lt);
            orders++;
            if (sg.exact) {
                bp__sim_reset(&sim);
                uint64_t pk = 0;
                for (int32_t i = 0; i < n; i++) {
                    uint64_t al, fr, before = sim.mem;
                    bp__sim_delta(&sim, order[i], &al, &fr);
                    uint64_t at = bp__sim_run(&sim, order[i]);
                    CHECK(at == before + al);
                    CHECK(sim.mem == at - fr);
                    if (at > pk) pk = at;
                }
                CHECK_MSG(pk == want, "graph %d order %d: step model %llu, lifetime.c %llu", it, r,
                          (unsigned long long)pk, (unsigned long long)want);
                exact++;
            }
        }
        free(order);
        bp__storage_free(g, &st);
        bp__sim_free(&sim);
        bp__eval_free(&ev);
        bp__sgraph_free(&sg);
        bp_graph_free(g);
    }
    fprintf(stderr, "evaluator: %d graphs, %d orders (%d through the step model)\n", graphs, orders, exact);
    CHECK(graphs > 2500);
}

/* Every scheduler: a topological permutation; the peak it reports is the
 * plan's lower bound; best <= every baseline; the plan verifies. */
static void test_schedulers(void)
{
    unsigned long long rs = 7;
    int graphs = 0, best_better = 0;
    for (int it = 0; it < 300; it++) {
        rg_opts ro = {1 + (int)(test_rand(&rs) % 60), it % 4 == 0, 0};
        bp_graph *g = rg_make(&rs, &ro);
        if (!g) continue;
        graphs++;
        int32_t n = bp_graph_n_ops(g);
        int32_t *order = malloc(((size_t)n + 1) * sizeof *order);
        REQUIRE(order);
        uint64_t base_min = UINT64_MAX, best = 0;
        bp_plan_options po;
        sched_random_opts(&rs, &po);
        for (int k = 0; k < BP_SCHED_COUNT; k++) {
            po.sched = (bp_sched_kind)k;
            po.time_limit = 0.002;
            bp_error err;
            bp_schedule_info info;
            bp_status s = bp_schedule_ex(g, &po, order, &info, &err);
            CHECK_MSG(s == BP_OK, "graph %d %s: %s", it, bp_sched_name((bp_sched_kind)k), err.msg);
            if (s) continue;
            CHECK_MSG(rg_is_topological(g, order), "graph %d: %s gave a non-topological order", it, bp_sched_name((bp_sched_kind)k));
            bp_plan *p = NULL;
            CHECK_OK(bp_plan_graph_order(g, &po, order, &p, &err), err);
            if (p) {
                CHECK_MSG(bp_plan_get_stats(p)->lower_bound_bytes == info.peak_bytes, "graph %d %s: plan %llu, info %llu", it,
                          bp_sched_name((bp_sched_kind)k), (unsigned long long)bp_plan_get_stats(p)->lower_bound_bytes,
                          (unsigned long long)info.peak_bytes);
                CHECK_OK(bp_verify(g, p, &err), err);
                bp_plan_free(p);
            }
            CHECK(info.lower_bound <= info.peak_bytes);
            if (k <= BP_SCHED_SEED && info.peak_bytes < base_min) base_min = info.peak_bytes;
            if (k == BP_SCHED_BEST) best = info.peak_bytes;
        }
        CHECK_MSG(best <= base_min, "graph %d: best %llu > min baseline %llu", it, (unsigned long long)best,
                  (unsigned long long)base_min);
        best_better += best < base_min;
        free(order);
        bp_graph_free(g);
    }
    fprintf(stderr, "schedulers: %d graphs, best strictly better than every baseline on %d\n", graphs, best_better);
    CHECK(best_better > 0);
}

/* Through bp_plan_graph (the dispatcher) too. */
static void test_plan_dispatch(void)
{
    unsigned long long rs = 99;
    rg_opts ro = {30, 0, 0};
    bp_graph *g = rg_make(&rs, &ro);
    REQUIRE(g);
    for (int k = 0; k < BP_SCHED_COUNT; k++) {
        bp_plan_options po;
        bp_plan_options_init(&po);
        po.sched = (bp_sched_kind)k;
        po.time_limit = 0.05;
        bp_plan *p = NULL;
        bp_error err;
        CHECK_OK(bp_plan_graph(g, &po, &p, &err), err);
        if (p) {
            CHECK_OK(bp_verify(g, p, &err), err);
            CHECK(rg_is_topological(g, bp_plan_schedule(p)));
            bp_plan_free(p);
        }
    }
    bp_graph_free(g);
}

/* A hand-made graph: x -> a (big) and b (small) branches, each a chain of
 * two ops, joined at the end. */
static bp_graph *diamond(void)
{
    bp_error err;
    bp_graph *g = bp_graph_new("diamond", NULL);
    int32_t x, a1, a2, b1, b2, y, op;
    CHECK_OK(bp_graph_add_tensor(g, "x", 100, &x, &err), err);
    CHECK_OK(bp_graph_mark(g, x, BP_TENSOR_INPUT, &err), err);
    CHECK_OK(bp_graph_add_tensor(g, "a1", 1000, &a1, &err), err);
    CHECK_OK(bp_graph_add_tensor(g, "a2", 10, &a2, &err), err);
    CHECK_OK(bp_graph_add_tensor(g, "b1", 1000, &b1, &err), err);
    CHECK_OK(bp_graph_add_tensor(g, "b2", 10, &b2, &err), err);
    CHECK_OK(bp_graph_add_tensor(g, "y", 10, &y, &err), err);
    CHECK_OK(bp_graph_add_op(g, "A1", "Conv", 1, &x, 1, &a1, 2.0, &op, &err), err);
    CHECK_OK(bp_graph_add_op(g, "B1", "Conv", 1, &x, 1, &b1, 3.0, &op, &err), err);
    CHECK_OK(bp_graph_add_op(g, "A2", "Conv", 1, &a1, 1, &a2, 4.0, &op, &err), err);
    CHECK_OK(bp_graph_add_op(g, "B2", "Conv", 1, &b1, 1, &b2, 5.0, &op, &err), err);
    int32_t ins[2] = {a2, b2};
    CHECK_OK(bp_graph_add_op(g, "J", "Concat", 2, ins, 1, &y, 1.0, &op, &err), err);
    CHECK_OK(bp_graph_mark(g, y, BP_TENSOR_OUTPUT, &err), err);
    CHECK_OK(bp_graph_finalize(g, &err), err);
    return g;
}

static void test_budget(void)
{
    bp_graph *g = diamond();
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.alignment = 1;
    int32_t order[5];
    bp_error err;
    bp_schedule_info info;
    /* given order A1 B1 A2 B2 J holds both 1000-byte tensors: peak 2010 */
    po.sched = BP_SCHED_GIVEN;
    CHECK_OK(bp_schedule_ex(g, &po, order, &info, &err), err);
    CHECK(info.peak_bytes == 2010);
    po.sched = BP_SCHED_BEST;
    CHECK_OK(bp_schedule_ex(g, &po, order, &info, &err), err);
    CHECK(info.peak_bytes == 1020);
    CHECK(info.optimal == 1);
    /* A budget makes given wait: it must fit 1100 */
    po.sched = BP_SCHED_GIVEN;
    po.budget = 1100;
    CHECK_OK(bp_schedule_ex(g, &po, order, &info, &err), err);
    CHECK(info.peak_bytes <= 1100);
    CHECK(rg_is_topological(g, order));
    /* Nothing fits 1009: A1 alone needs 1000 + x's... no, x is external: 1000, then A2 needs 1010 */
    po.budget = 1009;
    for (int k = 0; k < BP_SCHED_COUNT; k++) {
        po.sched = (bp_sched_kind)k;
        bp_status s = bp_schedule_ex(g, &po, order, &info, &err);
        CHECK(s == BP_ERR_BUDGET);
        CHECK_MSG(strstr(err.msg, "diamond: no schedule found that fits the budget of 1009 bytes; the smallest peak found is 1020 bytes") != NULL,
                  "%s", err.msg);
        CHECK_MSG(strstr(err.msg, "cannot run at step") && strstr(err.msg, "it needs 1010 bytes live"), "%s", err.msg);
    }
    /* bp_plan_graph reports the budget failure too */
    po.sched = BP_SCHED_LIST;
    bp_plan *p = NULL;
    CHECK(bp_plan_graph(g, &po, &p, &err) == BP_ERR_BUDGET);
    CHECK(p == NULL);
    bp_graph_free(g);
}

static void test_makespan(void)
{
    bp_graph *g = diamond();
    bp_error err;
    int32_t order[5] = {0, 1, 2, 3, 4}; /* A1 B1 A2 B2 J, costs 2 3 4 5 1 */
    double ms;
    CHECK_OK(bp_schedule_makespan(g, order, 1, &ms, &err), err);
    CHECK(ms == 15.0);
    /* two workers: A1 [0,2] B1 [0,3] A2 [2,6] B2 [3,8] J [8,9] */
    CHECK_OK(bp_schedule_makespan(g, order, 2, &ms, &err), err);
    CHECK(ms == 9.0);
    CHECK_OK(bp_schedule_makespan(g, order, 8, &ms, &err), err);
    CHECK(ms == 9.0);
    /* A1 A2 B1 B2 J on two workers, dispatched in order: A1 [0,2] on w0,
     * A2 [2,6] on w1, B1 [2,5] on w0, B2 [5,10], J [10,11] */
    int32_t o2[5] = {0, 2, 1, 3, 4};
    CHECK_OK(bp_schedule_makespan(g, o2, 2, &ms, &err), err);
    CHECK(ms == 11.0);
    CHECK(bp_schedule_makespan(g, order, 0, &ms, &err) == BP_ERR_USAGE);
    int32_t bad[5] = {2, 0, 1, 3, 4};
    CHECK(bp_schedule_makespan(g, bad, 1, &ms, &err) == BP_ERR_USAGE);
    CHECK(strstr(err.msg, "op \"A2\" reads \"a1\" before op \"A1\" makes it") != NULL);
    int32_t dup[5] = {0, 0, 1, 3, 4};
    CHECK(bp_schedule_peak(g, NULL, dup, &(uint64_t){0}, NULL, &err) == BP_ERR_USAGE);
    CHECK(strstr(err.msg, "appears twice") != NULL);
    /* costs: the graph's when given, else the model's (> 0) */
    CHECK(bp_op_cost(g, 0) == 2.0);
    CHECK(bp_op_cost(g, 99) == 0);
    bp_graph_free(g);
}

static void test_sweep(void)
{
    unsigned long long rs = 5;
    rg_opts ro = {40, 0, 0};
    bp_graph *g = rg_make(&rs, &ro);
    REQUIRE(g);
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.threads = 4;
    bp_sweep_point pts[5];
    bp_error err;
    CHECK_OK(bp_schedule_sweep_alpha(g, &po, 5, pts, &err), err);
    int32_t n = bp_graph_n_ops(g), *order = malloc((size_t)n * sizeof *order);
    for (int i = 0; i < 5; i++) {
        CHECK(pts[i].alpha == i / 4.0 && pts[i].beta == 1.0 - i / 4.0);
        CHECK(pts[i].makespan > 0);
        /* each point is the `seed` scheduler at those weights */
        bp_plan_options p2 = po;
        p2.sched = BP_SCHED_SEED;
        p2.alpha = pts[i].alpha;
        p2.beta = pts[i].beta;
        bp_schedule_info info;
        if (p2.alpha + p2.beta > 0) {
            CHECK_OK(bp_schedule_ex(g, &p2, order, &info, &err), err);
            CHECK(info.peak_bytes == pts[i].peak_bytes);
        }
    }
    CHECK(bp_schedule_sweep_alpha(g, &po, 0, pts, &err) == BP_ERR_USAGE);
    po.alpha = -1;
    po.sched = BP_SCHED_SEED;
    CHECK(bp_schedule_ex(g, &po, order, NULL, &err) == BP_ERR_USAGE);
    free(order);
    bp_graph_free(g);
}

/* best is deterministic for a seed and limit */
static void test_deterministic(void)
{
    unsigned long long rs = 11;
    rg_opts ro = {120, 0, 0};
    bp_graph *g = rg_make(&rs, &ro);
    REQUIRE(g);
    int32_t n = bp_graph_n_ops(g);
    int32_t *o1 = malloc((size_t)n * sizeof *o1), *o2 = malloc((size_t)n * sizeof *o2);
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.sched = BP_SCHED_BEST;
    po.time_limit = 0.2;
    po.seed = 3;
    bp_error err;
    CHECK_OK(bp_schedule(g, &po, o1, &err), err);
    CHECK_OK(bp_schedule(g, &po, o2, &err), err);
    CHECK(memcmp(o1, o2, (size_t)n * sizeof *o1) == 0);
    free(o1);
    free(o2);
    bp_graph_free(g);
}

/* Real graphs, when the shared data is there: every scheduler topological,
 * best <= the baselines. */
static void test_real(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/graphs/training/resnet18.json", test_data_dir());
    bp_graph *g = NULL;
    bp_error err;
    if (bp_graph_read_json(path, NULL, &g, &err) != BP_OK) { fprintf(stderr, "skipping %s: %s\n", path, err.msg); return; }
    if (bp_graph_finalize(g, &err) != BP_OK) { bp_graph_free(g); return; }
    int32_t n = bp_graph_n_ops(g), *order = malloc((size_t)n * sizeof *order);
    uint64_t base = UINT64_MAX, best = 0;
    for (int k = 0; k < BP_SCHED_OPTIMAL; k++) {
        bp_plan_options po;
        bp_plan_options_init(&po);
        po.sched = (bp_sched_kind)k;
        po.time_limit = 0.5;
        bp_schedule_info info;
        CHECK_OK(bp_schedule_ex(g, &po, order, &info, &err), err);
        CHECK(rg_is_topological(g, order));
        if (k < BP_SCHED_BEST && info.peak_bytes < base) base = info.peak_bytes;
        if (k == BP_SCHED_BEST) best = info.peak_bytes;
    }
    CHECK(best <= base);
    free(order);
    bp_graph_free(g);
}

int main(void)
{
    void (*const tests[])(void) = {test_evaluator, test_schedulers, test_plan_dispatch, test_budget,
                                   test_makespan, test_sweep, test_deterministic, test_real};
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        double t0 = bp__now();
        tests[i]();
        fprintf(stderr, "  (part %zu: %.1f s)\n", i, bp__now() - t0);
    }
    return check_status();
}
