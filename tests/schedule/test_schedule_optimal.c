/* The exact search against brute force: every topological order of random
 * graphs up to 9 ops, scored by the evaluator (itself checked against
 * lifetime.c in test_schedule).  `optimal` must find the minimum and prove
 * it where the step model is exact; `best` must find it too; where the
 * model is not exact, neither may claim a proof it does not have. */
#include "sched_testutil.h"
#include "plan/plan_internal.h"
#include "schedule/schedule_internal.h"
#include "sched_bruteforce.h"


int main(void)
{
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
