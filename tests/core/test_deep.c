/* No recursion depth that the input controls: a long chain of ops (1M under
 * sanitizers, 10M otherwise, or $BP_CHAIN_OPS) built with the builder API,
 * finalized, scheduled by the schedulers whose natural form is recursive
 * (dfs) and the others that scale, planned and verified; a view_of chain as
 * long (storage roots); and a deep JSON/ONNX nesting is covered by
 * test_limits.  Fails by crashing (stack overflow) or by a wrong plan. */
#include <bufplan.h>
#include <bufplan_limits.h>
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DEEP_DEFAULT 1000000
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DEEP_DEFAULT 1000000
#endif
#endif
#ifndef DEEP_DEFAULT
#define DEEP_DEFAULT 10000000
#endif

/* x -> op0 -> t0 -> op1 -> t1 ...; with views=1 every other op is a
 * Reshape, so the storages form view chains as long as the graph. */
static bp_graph *chain(long n, int views)
{
    bp_graph *g = bp_graph_new("chain", NULL);
    REQUIRE(g);
    bp_limits l;
    bp_limits_init(&l);
    l.max_ops = l.max_tensors = (uint64_t)n + 2;
    bp_error err;
    REQUIRE(bp_graph_set_limits(g, &l, &err) == BP_OK);
    int32_t prev, t;
    REQUIRE(bp_graph_add_tensor(g, "x", 256, &prev, &err) == BP_OK);
    REQUIRE(bp_graph_mark(g, prev, BP_TENSOR_INPUT, &err) == BP_OK);
    char name[32];
    for (long i = 0; i < n; i++) {
        snprintf(name, sizeof name, "t%ld", i);
        const char *type = views ? (i % 2 ? "Reshape" : "Relu") : "Relu";
        uint64_t bytes = 256 + (uint64_t)(i % 3) * 256;
        if (!strcmp(type, "Reshape") && bytes > bp_graph_tensor_bytes(g, prev)) bytes = bp_graph_tensor_bytes(g, prev); /* a view fits its root */
        REQUIRE(bp_graph_add_tensor(g, name, bytes, &t, &err) == BP_OK);
        snprintf(name, sizeof name, "op%ld", i);
        REQUIRE(bp_graph_add_op(g, name, type, 1, &prev, 1, &t, 1.0, NULL, &err) == BP_OK);
        prev = t;
    }
    REQUIRE(bp_graph_mark(g, prev, BP_TENSOR_OUTPUT, &err) == BP_OK);
    CHECK_OK(bp_graph_finalize(g, &err), err);
    return g;
}

static void plan_check(const bp_graph *g, bp_sched_kind sk, bp_assign_kind ak)
{
    bp_plan_options o;
    bp_plan_options_init(&o);
    o.sched = sk;
    o.assign = ak;
    o.time_limit = 1;
    bp_plan *p = NULL;
    bp_error err;
    CHECK_OK(bp_plan_graph(g, &o, &p, &err), err);
    if (!p) return;
    CHECK_OK(bp_verify(g, p, &err), err);
    /* a chain needs two neighbours live at once, never more */
    const bp_plan_stats *st = bp_plan_get_stats(p);
    CHECK_MSG(st->lower_bound_bytes <= 2 * 768, "%s/%s: lower bound %llu", bp_sched_name(sk), bp_assign_name(ak),
              (unsigned long long)st->lower_bound_bytes);
    CHECK(bp_plan_n_steps(p) == bp_graph_n_ops(g));
    bp_plan_free(p);
}

int main(void)
{
    const char *e = getenv("BP_CHAIN_OPS");
    long n = e && *e ? atol(e) : DEEP_DEFAULT;
    fprintf(stderr, "test_deep: chain of %ld ops\n", n);
    bp_graph *g = chain(n, 0);
    plan_check(g, BP_SCHED_GIVEN, BP_ASSIGN_BESTFIT);
    plan_check(g, BP_SCHED_DFS, BP_ASSIGN_COLOR);
    plan_check(g, BP_SCHED_KAHN, BP_ASSIGN_NAIVE);
    bp_graph_free(g);
    g = chain(n / 4, 1);
    plan_check(g, BP_SCHED_DFS, BP_ASSIGN_BESTFIT);
    bp_graph_free(g);
    return check_status();
}
