/* Local search (local.c): on thousands of random graphs, from
 * random topological orders and from the list scheduler's order, the result
 * is a topological permutation whose exact peak is never worse than the
 * input's (lower, or equal at no more steps at the peak); the same input
 * gives the same output; a work limit of 0 leaves the order as it is; on
 * random orders it finds improvements (it is not a no-op).  And `best`'s
 * lower bound (the forced-live bound of best.c) is never above the
 * peak of any order: checked against random orders of random graphs, and
 * an order `best` calls optimal is never beaten by one of them. */
#include "sched_testutil.h"
#include "plan/plan_internal.h"
#include "schedule/schedule_internal.h"

static void peak_count(bp__eval *ev, const int32_t *order, int32_t n, uint64_t *prof, uint64_t *pk, int32_t *cnt)
{
    *pk = bp__eval_profile(ev, order, prof);
    *cnt = 0;
    for (int32_t i = 0; i < n; i++) *cnt += prof[i] == *pk;
}

static void test_lower_bound(void)
{
    unsigned long long rs = 4242;
    int graphs = 0, above_static = 0, proven = 0;
    for (int it = 0; it < 400; it++) {
        rg_opts ro = {2 + (int)(test_rand(&rs) % 60), it % 3 == 0, it % 5 == 0};
        bp_graph *g = rg_make(&rs, &ro);
        if (!g) continue;
        graphs++;
        bp_plan_options po;
        sched_random_opts(&rs, &po);
        po.sched = BP_SCHED_BEST;
        po.time_limit = 0.01;
        bp_error err;
        bp__sgraph sg;
        bp__eval ev;
        CHECK_OK(bp__sgraph_build(g, &po, &sg, &err), err);
        CHECK_OK(bp__eval_init(&ev, &sg, &err), err);
        int32_t n = sg.n;
        int32_t *order = malloc(((size_t)n + 1) * sizeof *order);
        REQUIRE(order);
        bp_schedule_info info;
        CHECK_OK(bp_schedule_ex(g, &po, order, &info, &err), err);
        CHECK(rg_is_topological(g, order));
        CHECK(info.lower_bound <= info.peak_bytes);
        above_static += info.lower_bound > sg.lb;
        proven += info.optimal;
        for (int r = 0; r < 40; r++) {
            rg_random_order(g, &rs, order);
            uint64_t pk = bp__eval_peak(&ev, order, NULL);
            CHECK_MSG(info.lower_bound <= pk, "graph %d: lower bound %llu above the peak %llu of a random order", it,
                      (unsigned long long)info.lower_bound, (unsigned long long)pk);
            if (info.optimal) CHECK(info.peak_bytes <= pk);
        }
        free(order);
        bp__eval_free(&ev);
        bp__sgraph_free(&sg);
        bp_graph_free(g);
    }
    fprintf(stderr, "lower bound: %d graphs, above the static bound on %d, proven optimal %d\n", graphs, above_static, proven);
    CHECK(graphs > 350 && above_static > 0);
}

int main(void)
{
    test_lower_bound();
    unsigned long long rs = 20261129;
    int graphs = 0, runs = 0, lower = 0, fewer = 0;
    for (int it = 0; it < 3000; it++) {
        rg_opts ro = {2 + (int)(test_rand(&rs) % 80), it % 3 == 0, it % 5 == 0};
        bp_graph *g = rg_make(&rs, &ro);
        if (!g) continue;
        graphs++;
        bp_plan_options po;
        sched_random_opts(&rs, &po);
        bp_error err;
        bp__sgraph sg;
        bp__eval ev;
        CHECK_OK(bp__sgraph_build(g, &po, &sg, &err), err);
        CHECK_OK(bp__eval_init(&ev, &sg, &err), err);
        int32_t n = sg.n;
        int32_t *in = malloc(((size_t)n + 1) * sizeof *in), *out = malloc(((size_t)n + 1) * sizeof *out);
        int32_t *again = malloc(((size_t)n + 1) * sizeof *again);
        uint64_t *prof = malloc(((size_t)n + 1) * sizeof *prof);
        REQUIRE(in && out && again && prof);
        for (int r = 0; r < 3; r++) {
            if (r == 2) CHECK_OK(bp__sched_list(&sg, 0, in, &err), err);
            else rg_random_order(g, &rs, in);
            uint64_t p0, p1;
            int32_t c0, c1;
            peak_count(&ev, in, n, prof, &p0, &c0);
            memcpy(out, in, (size_t)n * sizeof *in);
            uint64_t work = 0;
            int ret = bp__sched_local(&sg, &ev, out, &work, (uint64_t)1 << 40, 0);
            CHECK(ret >= 0);
            CHECK_MSG(rg_is_topological(g, out), "graph %d run %d: not a topological permutation", it, r);
            peak_count(&ev, out, n, prof, &p1, &c1);
            CHECK_MSG(p1 < p0 || (p1 == p0 && c1 <= c0), "graph %d run %d: peak %llu x%d -> %llu x%d", it, r,
                      (unsigned long long)p0, c0, (unsigned long long)p1, c1);
            CHECK(ret == (p1 < p0 || (p1 == p0 && c1 < c0)));
            lower += p1 < p0;
            fewer += p1 == p0 && c1 < c0;
            /* deterministic */
            memcpy(again, in, (size_t)n * sizeof *in);
            uint64_t w2 = 0;
            CHECK(bp__sched_local(&sg, &ev, again, &w2, (uint64_t)1 << 40, 0) == ret);
            CHECK(memcmp(again, out, (size_t)n * sizeof *out) == 0 && w2 == work);
            /* no work allowed: unchanged */
            memcpy(again, in, (size_t)n * sizeof *in);
            w2 = 0;
            CHECK(bp__sched_local(&sg, &ev, again, &w2, 0, 0) == 0);
            CHECK(memcmp(again, in, (size_t)n * sizeof *in) == 0);
            runs++;
        }
        free(in);
        free(out);
        free(again);
        free(prof);
        bp__eval_free(&ev);
        bp__sgraph_free(&sg);
        bp_graph_free(g);
    }
    fprintf(stderr, "local search: %d graphs, %d runs, lower peak %d, fewer peak steps %d\n", graphs, runs, lower, fewer);
    CHECK(graphs > 2500);
    CHECK(lower > runs / 20);
    return check_status();
}
