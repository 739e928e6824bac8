/* In-place writes at the final step: a graph's last op may write its output
 * over a dying input, as at any other step.
 *
 * 1. A final bias Add over the MatMul output it reads: the output takes the
 *    input's storage (alias_of), the arena is one buffer, the plan verifies,
 *    for `given`, `best` and `optimal`.  A final op whose input holds a
 *    graph output must not: that storage is pinned.
 * 2. Property, against brute force: on random graphs of up to 8 ops, every
 *    topological order is planned (bp_plan_graph_order) and verified; its
 *    lower bound equals the schedulers' evaluator; the lowest over all
 *    orders is the brute-force oracle's optimum, and `optimal` reaches it
 *    where its step model is exact.  Some orders must merge at the final
 *    step, or the property says nothing. */
#include "sched_testutil.h"
#include "plan/plan_internal.h"
#include "schedule/schedule_internal.h"
#include "sched_bruteforce.h"

/* x -> MatMul(w) -> h -> Add(bias) -> y; with pin_h, h is a graph output too. */
static bp_graph *bias_graph(int pin_h, int32_t *h, int32_t *y)
{
    bp_error e;
    bp_graph *g = bp_graph_new("bias", NULL);
    REQUIRE(g);
    int32_t x, w, b;
    CHECK_OK(bp_graph_add_tensor(g, "x", 4096, &x, &e), e);
    CHECK_OK(bp_graph_add_tensor(g, "w", 4096, &w, &e), e);
    CHECK_OK(bp_graph_add_tensor(g, "bias", 4096, &b, &e), e);
    CHECK_OK(bp_graph_add_tensor(g, "h", 4096, h, &e), e);
    CHECK_OK(bp_graph_add_tensor(g, "y", 4096, y, &e), e);
    CHECK_OK(bp_graph_mark(g, x, BP_TENSOR_INPUT, &e), e);
    CHECK_OK(bp_graph_mark(g, w, BP_TENSOR_WEIGHT, &e), e);
    CHECK_OK(bp_graph_mark(g, b, BP_TENSOR_WEIGHT, &e), e);
    int32_t in1[2] = {x, w}, in2[2] = {*h, b};
    CHECK_OK(bp_graph_add_op(g, "matmul", "MatMul", 2, in1, 1, h, 1, NULL, &e), e);
    CHECK_OK(bp_graph_add_op(g, "bias_add", "Add", 2, in2, 1, y, 1, NULL, &e), e);
    CHECK_OK(bp_graph_mark(g, *y, BP_TENSOR_OUTPUT, &e), e);
    if (pin_h) CHECK_OK(bp_graph_mark(g, *h, BP_TENSOR_OUTPUT, &e), e);
    CHECK_OK(bp_graph_finalize(g, &e), e);
    return g;
}

static void test_final_bias_add(void)
{
    static const bp_sched_kind kinds[] = {BP_SCHED_GIVEN, BP_SCHED_BEST, BP_SCHED_OPTIMAL};
    for (int pin = 0; pin < 2; pin++) {
        int32_t h, y;
        bp_graph *g = bias_graph(pin, &h, &y);
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            bp_plan_options o;
            bp_plan_options_init(&o);
            o.sched = kinds[k];
            bp_plan *p = NULL;
            bp_error e;
            CHECK_OK(bp_plan_graph(g, &o, &p, &e), e);
            REQUIRE(p);
            CHECK_OK(bp_verify(g, p, &e), e);
            const bp_plan_stats *st = bp_plan_get_stats(p);
            if (!pin) {
                CHECK_MSG(bp_plan_tensor(p, y)->alias_of == h, "scheduler %d: the final Add is not in place (alias_of %d)",
                          (int)kinds[k], (int)bp_plan_tensor(p, y)->alias_of);
                CHECK_MSG(st->arena_bytes == 4096, "scheduler %d: arena %llu, not one buffer", (int)kinds[k],
                          (unsigned long long)st->arena_bytes);
            } else {
                CHECK(bp_plan_tensor(p, y)->alias_of < 0); /* h holds a graph output */
                CHECK(st->arena_bytes == 8192);
            }
            bp_plan_free(p);
        }
        bp_graph_free(g);
    }
}

/* What the property sees over the orders of one graph. */
typedef struct prop_ctx {
    const bp_graph *g;
    bp__eval *ev;
    const bp_plan_options *po;
    uint64_t best;
    long final_merges;
    int it;
} prop_ctx;

/* 1 when the final op's output took an input's storage by an in-place write. */
static int final_merged(const bp_graph *g, const bp_plan *p, int32_t op)
{
    for (int i = 0; i < bp_graph_op_n_outputs(g, op); i++) {
        const bp_tensor_plan *tp = bp_plan_tensor(p, bp_graph_op_output(g, op, i));
        if (tp->alias_of < 0 || bp_graph_tensor_view_of(g, bp_graph_op_output(g, op, i)) >= 0) continue;
        for (int j = 0; j < bp_graph_op_n_inputs(g, op); j++) {
            const bp_tensor_plan *ip = bp_plan_tensor(p, bp_graph_op_input(g, op, j));
            int32_t root = ip->alias_of >= 0 ? ip->alias_of : bp_graph_op_input(g, op, j);
            if (root == tp->alias_of && !bp__op_is_view(g, op)) return 1;
        }
    }
    return 0;
}

/* One order: planned, verified, its lower bound the evaluator's peak. */
static void prop_visit(void *ctx, const int32_t *order)
{
    prop_ctx *c = ctx;
    bp_error e;
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph_order(c->g, c->po, order, &p, &e), e);
    if (!p) return;
    CHECK_MSG(bp_verify(c->g, p, &e) == BP_OK, "graph %d: %s", c->it, e.msg);
    uint64_t lb = bp_plan_get_stats(p)->lower_bound_bytes, pk = bp__eval_peak(c->ev, order, NULL);
    CHECK_MSG(lb == pk, "graph %d: plan lower bound %llu, evaluator %llu", c->it, (unsigned long long)lb,
              (unsigned long long)pk);
    if (lb < c->best) c->best = lb;
    c->final_merges += final_merged(c->g, p, order[bp_graph_n_ops(c->g) - 1]);
    bp_plan_free(p);
}

/* The property on one graph with few enough orders; returns the number of
 * orders that merged at the final step, or -1 when it has too many orders. */
static long prop_graph(const bp_graph *g, bp_plan_options *po, int it)
{
    bp_error err;
    bp__sgraph sg;
    bp__eval ev;
    CHECK_OK(bp__sgraph_build(g, po, &sg, &err), err);
    CHECK_OK(bp__eval_init(&ev, &sg, &err), err);
    sched_bf b;
    sched_bf_run(&b, &sg, &ev);
    long merges = -1;
    if (b.count <= 500) {
        prop_ctx c = {g, &ev, po, UINT64_MAX, 0, it};
        sched_bf_run_visit(&b, &sg, &ev, prop_visit, &c);
        CHECK_MSG(c.best == b.best, "graph %d: lowest planned %llu, brute force %llu", it, (unsigned long long)c.best,
                  (unsigned long long)b.best);
        po->sched = BP_SCHED_OPTIMAL;
        po->time_limit = 5;
        int32_t got[SCHED_BF_MAX];
        bp_schedule_info info;
        CHECK_OK(bp_schedule_ex(g, po, got, &info, &err), err);
        if (sg.dp_exact)
            CHECK_MSG(info.peak_bytes == b.best, "graph %d: optimal %llu, brute force %llu", it,
                      (unsigned long long)info.peak_bytes, (unsigned long long)b.best);
        merges = c.final_merges;
    }
    bp__eval_free(&ev);
    bp__sgraph_free(&sg);
    return merges;
}

static void test_property(void)
{
    unsigned long long rs = 606;
    int graphs = 0;
    long merges = 0;
    for (int it = 0; it < 1500; it++) {
        rg_opts ro = {1 + (int)(test_rand(&rs) % 8), it % 4 == 0, it % 2 == 0};
        bp_graph *g = rg_make(&rs, &ro);
        if (!g) continue;
        bp_plan_options po;
        sched_random_opts(&rs, &po);
        long m = bp_graph_n_ops(g) <= 8 ? prop_graph(g, &po, it) : -1;
        bp_graph_free(g);
        if (m < 0) continue;
        graphs++;
        merges += m;
    }
    fprintf(stderr, "final in place: %d graphs (every order planned), %ld orders merge at the final step\n", graphs,
            merges);
    CHECK(graphs > 1000 && merges > 100);
}

int main(void)
{
    test_final_bias_add();
    test_property();
    return check_status();
}
