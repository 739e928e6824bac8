/* best's anytime phase (beam searches of growing width until the work
 * limit), run through bp__sched_best_run with a work limit and no clock, so
 * that nothing here depends on the machine's speed:
 * - determinism: the same graph, options and limit give the same order, twice;
 * - never worse than best without the phase (today's default result), nor
 *   than the portfolio it starts from; topological, the peak as scored by the
 *   evaluator;
 * - against the exact search (an uncapped, unlimited dynamic program over
 *   the sets of ops) on graphs of up to 18 ops where the step model is exact:
 *   never below the optimum, equal to it and proven with enough work, and a
 *   proof only where the peak is the optimum;
 * - on random layered DAGs (the graphs where the phase pays) it finds a lower
 *   peak than best without it on some, and every improvement is credited to
 *   the beam. */
#include "sched_testutil.h"
#include "schedule/schedule_internal.h"

/* A random layered DAG: L layers of w ops, each reading 1-3 outputs of the
 * layer before, sometimes one of an earlier layer; the last layer pinned. */
static bp_graph *layered(unsigned long long *rs, int L, int w)
{
    bp_error err;
    bp_graph *g = bp_graph_new("layered", NULL);
    REQUIRE(g);
    int32_t t[512], in;
    REQUIRE(L * w <= 512);
    CHECK_OK(bp_graph_add_tensor(g, "x", 4096, &in, &err), err);
    CHECK_OK(bp_graph_mark(g, in, BP_TENSOR_INPUT, &err), err);
    for (int l = 0; l < L; l++)
        for (int j = 0; j < w; j++) {
            char tn[32], on[32];
            snprintf(tn, sizeof tn, "t%d_%d", l, j);
            snprintf(on, sizeof on, "op%d_%d", l, j);
            int32_t ins[4], nin = 0, out;
            if (l == 0) ins[nin++] = in;
            else {
                int k = 1 + (int)(test_rand(rs) % 3);
                for (int q = 0; q < k; q++) {
                    int32_t c = t[(l - 1) * w + (int)(test_rand(rs) % (unsigned)w)];
                    int dup = 0;
                    for (int r = 0; r < nin; r++) dup |= ins[r] == c;
                    if (!dup) ins[nin++] = c;
                }
                if (l >= 2 && test_rand(rs) % 10 < 3) ins[nin++] = t[(l - 2) * w + (int)(test_rand(rs) % (unsigned)w)];
            }
            CHECK_OK(bp_graph_add_tensor(g, tn, (1 + test_rand(rs) % 64) * 256, &out, &err), err);
            CHECK_OK(bp_graph_add_op(g, on, "op", nin, ins, 1, &out, 0, NULL, &err), err);
            if (l == L - 1) CHECK_OK(bp_graph_mark(g, out, BP_TENSOR_OUTPUT, &err), err);
            t[l * w + j] = out;
        }
    CHECK_OK(bp_graph_finalize(g, &err), err);
    return g;
}

/* best_run into order; returns its peak (the evaluator's). */
static uint64_t run(bp__sched_env *env, const bp_plan_options *po, uint64_t limit, int anytime, int32_t *order,
                    bp_schedule_info *info)
{
    bp_error err;
    memset(info, 0, sizeof *info);
    CHECK_OK(bp__sched_best_run(env, po, limit, 0, anytime, order, info, &err), err);
    REQUIRE(rg_is_topological(env->sg.g, order));
    return bp__eval_peak(&env->ev, order, NULL);
}

typedef struct tally { int graphs, exact, proven, better, beam; } tally;

/* The checks of the header on g with work limit `limit`. */
static void check_graph(const bp_graph *g, uint64_t limit, int it, tally *t)
{
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.alignment = it % 3 ? 256 : 1;
    bp__sched_env env;
    bp_error err;
    CHECK_OK(bp__sched_env_init(&env, g, &po, true, &err), err);
    int32_t n = env.sg.n;
    int32_t *a = malloc(((size_t)n + 1) * sizeof *a), *b1 = malloc(((size_t)n + 1) * sizeof *b1);
    int32_t *b2 = malloc(((size_t)n + 1) * sizeof *b2), *port = malloc(((size_t)n + 1) * sizeof *port);
    REQUIRE(a && b1 && b2 && port);
    bp_schedule_info ia, ib1, ib2;
    uint64_t pa = run(&env, &po, limit, 0, a, &ia);
    uint64_t pb = run(&env, &po, limit, 1, b1, &ib1);
    uint64_t pb2 = run(&env, &po, limit, 1, b2, &ib2);
    CHECK_MSG(pb == pb2 && memcmp(b1, b2, (size_t)n * sizeof *b1) == 0 && ib1.optimal == ib2.optimal &&
              ib1.picked && ib2.picked && !strcmp(ib1.picked, ib2.picked),
              "graph %d (%d ops): two runs with one limit gave different orders (%llu, %llu)", it, n,
              (unsigned long long)pb, (unsigned long long)pb2);
    CHECK_MSG(pb <= pa, "graph %d (%d ops): the anytime phase made it worse: %llu, without it %llu", it, n,
              (unsigned long long)pb, (unsigned long long)pa);
    uint64_t lb = 0, pp = bp__sched_portfolio(&env.sg, &env.ev, &po, env.cost, port, NULL, NULL, &lb, &err);
    CHECK_MSG(pb <= pp, "graph %d: best %llu above its portfolio's %llu", it, (unsigned long long)pb,
              (unsigned long long)pp);
    CHECK(ib1.lower_bound <= pb);
    if (ia.optimal) CHECK_MSG(pb == pa, "graph %d: a proven order %llu, then %llu", it, (unsigned long long)pa,
                              (unsigned long long)pb);
    if (pb < pa) {
        t->better++;
        t->beam += !strcmp(ib1.picked, "beam");
        CHECK_MSG(!strcmp(ib1.picked, "beam"), "graph %d: improved by %s, not the beam", it, ib1.picked);
    }
    if (n <= 18 && env.sg.dp_exact) {
        int32_t *all = malloc(((size_t)n + 1) * sizeof *all), *opt = malloc(((size_t)n + 1) * sizeof *opt);
        REQUIRE(all && opt);
        for (int32_t i = 0; i < n; i++) all[i] = i;
        bp__dp_result r;
        uint64_t w = 0;
        bp__sim_reset(&env.sim);
        int ok = bp__sched_dp(&env.sg, &env.sim, all, n, UINT64_MAX, (size_t)1 << 20, &w, 0, 0, opt, &r);
        REQUIRE(ok == 1 && r.proven);
        uint64_t best = bp__eval_peak(&env.ev, opt, NULL);
        t->exact++;
        CHECK_MSG(pb >= best, "graph %d: best %llu below the optimum %llu", it, (unsigned long long)pb,
                  (unsigned long long)best);
        CHECK_MSG(pb == best && ib1.optimal, "graph %d (%d ops): best %llu (proven %d), optimum %llu", it, n,
                  (unsigned long long)pb, ib1.optimal, (unsigned long long)best);
        t->proven += ib1.optimal;
        free(all);
        free(opt);
    }
    if (ib1.optimal) CHECK(ib1.lower_bound == pb);
    t->graphs++;
    free(a);
    free(b1);
    free(b2);
    free(port);
    bp__sched_env_free(&env);
}

int main(void)
{
    unsigned long long rs = 77;
    tally t = {0, 0, 0, 0, 0};
    for (int it = 0; it < 300; it++) {
        rg_opts ro = {4 + (int)(test_rand(&rs) % (it % 3 ? 15 : 90)), 0, it % 2 == 0};
        bp_graph *g = rg_make(&rs, &ro);
        if (!g) continue;
        check_graph(g, 40000000, it, &t);
        bp_graph_free(g);
    }
    tally lt = {0, 0, 0, 0, 0};
    for (int it = 0; it < 12; it++) {
        bp_graph *g = layered(&rs, 8 + it % 5, 8 + it % 4);
        check_graph(g, 40000000, 1000 + it, &lt);
        bp_graph_free(g);
    }
    fprintf(stderr, "anytime: %d random graphs (%d against the exact search, %d proven), improved on %d; "
                    "%d layered DAGs, improved on %d\n", t.graphs, t.exact, t.proven, t.better, lt.graphs, lt.better);
    CHECK(t.graphs > 250 && t.exact > 100);
    CHECK_MSG(lt.better > 0, "the anytime phase improved none of %d layered DAGs", lt.graphs);
    return check_status();
}
