/*
 * Recompute and offload under a budget: over random graphs (forward, and
 * with a backward pass) and random budgets, every plan bp_plan_graph returns
 * verifies and its arena is within the budget; every refusal is a
 * certificate this test confirms by brute force (the named op's working set,
 * recomputed here from the plan of the same order, is over the budget and
 * the stated smallest budget is the largest working set); with offload on,
 * every budget at or above the largest working set gets a plan.  Plus:
 * determinism, the plan JSON round trip, the verifier rejecting broken
 * copies, bad options, and bp_fallback_parse.
 */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "sched_testutil.h"
#include "plan/plan_internal.h"

#include <bufplan.h>
#include <stdio.h>

/* The largest working set of p's order, computed from scratch: at each step,
 * the aligned bytes of the arena storages a member of which is made, read,
 * starts or ends there, or is a graph output at the final step. */
static uint64_t brute_floor(const bp_graph *g, const bp_plan *p)
{
    int32_t nt = bp_graph_n_tensors(g), no = bp_plan_n_steps(p);
    int32_t *step = calloc((size_t)no + 1, sizeof *step);
    uint64_t best = 0;
    REQUIRE(step);
    for (int32_t s = 0; s < no; s++) step[bp_plan_schedule(p)[s]] = s;
    uint8_t *mark = calloc((size_t)nt + 1, 1);
    REQUIRE(mark);
    for (int32_t s = 0; s < no; s++) {
        uint64_t ws = 0;
        memset(mark, 0, (size_t)nt + 1);
        for (int32_t t = 0; t < nt; t++) {
            const bp_tensor_plan *tp = bp_plan_tensor(p, t);
            if (tp->offset == BP_NO_OFFSET || tp->first < 0) continue;
            int32_t r = tp->alias_of >= 0 ? tp->alias_of : t, pr = bp_graph_tensor_producer(g, t);
            int used = tp->first == s || tp->last == s || (pr >= 0 && step[pr] == s) ||
                       ((bp_graph_tensor_flags(g, t) & BP_TENSOR_OUTPUT) && s == no - 1);
            const int32_t *cons;
            int32_t nc = bp_graph_tensor_consumers(g, t, &cons);
            for (int32_t c = 0; c < nc && !used; c++) used = step[cons[c]] == s;
            if (used && !mark[r]) {
                mark[r] = 1;
                uint64_t al = bp_plan_alignment(p);
                ws += (bp_plan_tensor(p, r)->bytes + al - 1) / al * al;
            }
        }
        if (ws > best) best = ws;
    }
    free(mark);
    free(step);
    return best;
}

static unsigned long long msg_number_after(const char *msg, const char *key)
{
    const char *q = strstr(msg, key);
    return q ? strtoull(q + strlen(key), NULL, 10) : 0;
}

static bp_graph *random_training(unsigned long long *rs)
{
    if (test_rand(rs) % 3 == 0) {
        static const char *const kinds[] = {"chain", "diamond", "transformer", "randwire", "resnet50", "unet"};
        bp_gen_options go;
        bp_gen_options_init(&go);
        go.seed = test_rand(rs);
        go.layers = 1 + (int)(test_rand(rs) % 3);
        go.nodes = 4 + (int)(test_rand(rs) % 8);
        go.training = (int)(test_rand(rs) % 4 != 0);
        bp_graph *g = NULL;
        bp_error e;
        if (bp_gen(kinds[test_rand(rs) % 6], &go, NULL, &g, &e)) return NULL;
        if (bp_graph_n_ops(g) > 400) { bp_graph_free(g); return NULL; }
        return g;
    }
    rg_opts ro = {4 + (int)(test_rand(rs) % 30), 0, (int)(test_rand(rs) % 2)};
    bp_graph *g = rg_make(rs, &ro);
    if (g && test_rand(rs) % 2) {
        bp_error e;
        if (bp_graph_append_backward(g, &e)) { bp_graph_free(g); return NULL; }
    }
    return g;
}

/* One graph, one budget, one fallback setting: the plan verifies and fits,
 * or the refusal is confirmed. */
static void one_case(const bp_graph *g, bp_plan_options *po, unsigned long long *rs, int *plans, int *certs, int *with_copies)
{
    bp_error e;
    bp_plan *base = NULL;
    uint64_t budget = po->budget;
    po->budget = 0;
    bp_status s = bp_plan_graph(g, po, &base, &e);
    po->budget = budget;
    if (s) return;
    uint64_t arena = bp_plan_get_stats(base)->arena_bytes, floor = brute_floor(g, base);
    if (!arena) { bp_plan_free(base); return; }
    po->budget = floor / 2 + test_rand(rs) % (arena - floor / 2 + 1);
    if (!po->budget) po->budget = 1;
    bp_plan *p = NULL;
    s = bp_plan_graph_order(g, po, bp_plan_schedule(base), &p, &e);
    if (s == BP_OK) {
        const bp_plan_stats *st = bp_plan_get_stats(p);
        (*plans)++;
        *with_copies += bp_plan_n_copies(p) > 0;
        CHECK_MSG(st->arena_bytes <= po->budget, "%s: arena %llu over the budget %llu", bp_graph_name(g),
                  (unsigned long long)st->arena_bytes, (unsigned long long)po->budget);
        bp_error ve;
        CHECK_MSG(bp_verify(g, p, &ve) == BP_OK, "%s (budget %llu, fallback %u): %s", bp_graph_name(g), (unsigned long long)po->budget,
                  po->fallback, ve.msg);
        CHECK(st->overhead_percent >= 0 && st->recompute_cost >= 0 && st->transfer_cost >= 0);
        if (!(po->fallback & BP_FALLBACK_OFFLOAD)) CHECK(st->n_offloads == 0);
        if (!(po->fallback & BP_FALLBACK_RECOMPUTE)) CHECK(st->n_recomputes == 0);
        bp_plan_free(p);
    } else {
        CHECK_MSG(s == BP_ERR_BUDGET, "%s: status %d: %s", bp_graph_name(g), (int)s, e.msg);
        (*certs)++;
        if (po->fallback & BP_FALLBACK_OFFLOAD) {
            /* with offload a refusal is only below the largest working set, and says so */
            CHECK_MSG(po->budget < floor, "%s: budget %llu >= the largest working set %llu, refused: %s", bp_graph_name(g),
                      (unsigned long long)po->budget, (unsigned long long)floor, e.msg);
            CHECK_MSG(msg_number_after(e.msg, "the smallest budget bufplan can fit is ") == floor, "%s: floor %llu: %s", bp_graph_name(g),
                      (unsigned long long)floor, e.msg);
            CHECK_MSG(strstr(e.msg, "which no recompute or offload can shrink") != NULL, "%s", e.msg);
        } else {
            CHECK_MSG(strstr(e.msg, "recompute") != NULL && strstr(e.msg, "smallest budget bufplan can fit is ") != NULL, "%s", e.msg);
        }
    }
    bp_plan_free(base);
}

/* Random graphs to try: BP_FALLBACK_ITERS, default 2000. */
static int test_iters(void)
{
    const char *v = getenv("BP_FALLBACK_ITERS");
    return v && *v ? atoi(v) : 2000;
}

static void test_random(void)
{
    unsigned long long rs = 23;
    int plans = 0, certs = 0, copies = 0, graphs = 0;
    static const unsigned modes[3] = {BP_FALLBACK_RECOMPUTE | BP_FALLBACK_OFFLOAD, BP_FALLBACK_RECOMPUTE, BP_FALLBACK_OFFLOAD};
    for (int it = 0; it < test_iters(); it++) {
        bp_graph *g = random_training(&rs);
        if (!g) continue;
        graphs++;
        for (int k = 0; k < 3; k++) {
            bp_plan_options po;
            sched_random_opts(&rs, &po);
            po.sched = test_rand(&rs) % 4 ? BP_SCHED_GIVEN : BP_SCHED_LIST;
            po.time_limit = 2;
            po.fallback = modes[test_rand(&rs) % 3];
            po.budget = 1;
            one_case(g, &po, &rs, &plans, &certs, &copies);
        }
        bp_graph_free(g);
    }
    fprintf(stderr, "fallback: %d graphs, %d plans (%d with copies) verified, %d refusals confirmed\n", graphs, plans, copies, certs);
    CHECK(copies > 100);
}

/* A chain with a backward pass, planned at half its arena. */
static bp_graph *training_chain(int n)
{
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.nodes = n;
    go.training = 1;
    bp_graph *g = NULL;
    bp_error e;
    REQUIRE(bp_gen("chain", &go, NULL, &g, &e) == BP_OK);
    return g;
}

static void test_roundtrip_and_broken(void)
{
    bp_graph *g = training_chain(24);
    bp_plan_options po;
    bp_plan_options_init(&po);
    bp_error e;
    bp_plan *p0 = NULL, *p = NULL, *q = NULL;
    CHECK_OK(bp_plan_graph(g, &po, &p0, &e), e);
    uint64_t fl = brute_floor(g, p0);
    po.budget = fl + (bp_plan_get_stats(p0)->arena_bytes - fl) / 2;
    CHECK_OK(bp_plan_graph(g, &po, &p, &e), e);
    REQUIRE(p && bp_plan_n_copies(p) > 0);
    CHECK_OK(bp_verify(g, p, &e), e);
    /* deterministic */
    CHECK_OK(bp_plan_graph(g, &po, &q, &e), e);
    REQUIRE(q);
    CHECK(bp_plan_n_copies(q) == bp_plan_n_copies(p) && !memcmp(p->copies, q->copies, (size_t)p->n_copies * sizeof *p->copies));
    bp_plan_free(q);
    q = NULL;
    /* JSON round trip */
    char path[] = "/tmp/bp_fallback_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    FILE *f = fdopen(fd, "w");
    CHECK_OK(bp_plan_write_json_file(p, g, f, &e), e);
    fclose(f);
    CHECK_OK(bp_plan_read_json(g, path, &q, &e), e);
    remove(path);
    if (q) {
        CHECK(q->n_copies == p->n_copies && !memcmp(p->copies, q->copies, (size_t)p->n_copies * sizeof *p->copies));
        CHECK(q->n_ev == p->n_ev && !memcmp(p->ev, q->ev, p->n_ev * sizeof *p->ev));
        CHECK(q->stats.offload_bytes == p->stats.offload_bytes && q->stats.n_recomputes == p->stats.n_recomputes);
        CHECK_OK(bp_verify(g, q, &e), e);
        /* broken: a copy moved onto another live storage, an event dropped */
        q->copies[0].offset = q->copies[0].offset ? 0 : bp_plan_alignment(q);
        CHECK(bp_verify(g, q, &e) == BP_ERR_VERIFY && (strstr(e.msg, "matches no copy") || strstr(e.msg, "overlap")));
        q->copies[0] = p->copies[0];
        size_t k = 0;
        while (k < q->n_ev && q->ev[k].type != BP_EV_PREFETCH && q->ev[k].type != BP_EV_RECOMPUTE) k++;
        REQUIRE(k < q->n_ev);
        bp_event keep = q->ev[k];
        q->ev[k].type = BP_EV_ALLOC;
        CHECK(bp_verify(g, q, &e) == BP_ERR_VERIFY);
        q->ev[k] = keep;
        for (k = 0; k < q->n_ev && q->ev[k].type != BP_EV_OFFLOAD; k++) {}
        if (k < q->n_ev) {
            q->ev[k].type = BP_EV_FREE;   /* no host copy: the prefetch has nothing to copy back */
            CHECK(bp_verify(g, q, &e) == BP_ERR_VERIFY && strstr(e.msg, "no host copy"));
        }
        bp_plan_free(q);
    }
    bp_plan_free(p);
    bp_plan_free(p0);
    bp_graph_free(g);
}

static void test_bad_options(void)
{
    bp_graph *g = training_chain(6);
    bp_plan_options po;
    bp_plan_options_init(&po);
    bp_error e;
    bp_plan *p = NULL;
    po.budget = 1 << 20;
    po.host_bandwidth = -1;
    CHECK(bp_plan_graph(g, &po, &p, &e) == BP_ERR_USAGE && strstr(e.msg, "host_bandwidth") && !p);
    po.host_bandwidth = 0;
    po.fallback = 8;
    CHECK(bp_plan_graph(g, &po, &p, &e) == BP_ERR_USAGE && strstr(e.msg, "fallback") && !p);
    /* none: today's refusal */
    po.fallback = BP_FALLBACK_NONE;
    po.budget = 1;
    CHECK(bp_plan_graph(g, &po, &p, &e) == BP_ERR_BUDGET && !p);
    bp_graph_free(g);
    unsigned v = 99;
    CHECK(bp_fallback_parse("none", &v) && v == 0);
    CHECK(bp_fallback_parse("recompute,offload", &v) && v == 3);
    CHECK(bp_fallback_parse("offload,recompute", &v) && v == 3);
    CHECK(bp_fallback_parse("offload", &v) && v == 2);
    CHECK(!bp_fallback_parse("recompute,", &v) && !bp_fallback_parse("swap", &v) && !bp_fallback_parse("", &v) &&
          !bp_fallback_parse("none,offload", &v));
}

int main(void)
{
    test_bad_options();
    test_roundtrip_and_broken();
    test_random();
    return check_status();
}
