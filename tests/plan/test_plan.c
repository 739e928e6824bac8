/*
 * Core planner tests: builder errors, the reference lifetime cases, and property
 * tests over random DAGs — every plan verifies, lifetimes and the lower bound
 * equal brute-force recomputations, color/bestfit never below the bound,
 * bestfit never above naive — plus broken plans the verifier must reject.
 */
#include "check.h"
#include "plan/plan_internal.h"

#include <bufplan.h>

static bp_graph *chain_graph(int n, uint64_t bytes)
{
    bp_error e;
    bp_graph *g = bp_graph_new("chain", NULL);
    int32_t prev, t;
    char name[32];
    REQUIRE(bp_graph_add_tensor(g, "x", bytes, &prev, &e) == BP_OK);
    bp_graph_mark(g, prev, BP_TENSOR_INPUT, &e);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "t%d", i);
        REQUIRE(bp_graph_add_tensor(g, name, bytes, &t, &e) == BP_OK);
        snprintf(name, sizeof name, "op%d", i);
        REQUIRE(bp_graph_add_op(g, name, "Conv", 1, &prev, 1, &t, 1.0, NULL, &e) == BP_OK);
        prev = t;
    }
    bp_graph_mark(g, prev, BP_TENSOR_OUTPUT, &e);
    REQUIRE(bp_graph_finalize(g, &e) == BP_OK);
    return g;
}

static void test_builder_errors(void)
{
    bp_error e;
    bp_graph *g = bp_graph_new("bad", NULL);
    int32_t a, b, c;
    CHECK(bp_graph_add_tensor(g, "a", 4, &a, &e) == BP_OK);
    CHECK(bp_graph_add_tensor(g, "a", 4, &b, &e) == BP_ERR_INVALID && strstr(e.msg, "\"a\"") && strstr(e.msg, "twice"));
    CHECK(bp_graph_add_tensor(g, "b", 4, &b, &e) == BP_OK);
    CHECK(bp_graph_add_tensor(g, "c", 4, &c, &e) == BP_OK);
    CHECK(bp_graph_add_op(g, "p1", "Relu", 1, &a, 1, &b, 0, NULL, &e) == BP_OK);
    CHECK(bp_graph_add_op(g, "p2", "Relu", 1, &a, 1, &b, 0, NULL, &e) == BP_ERR_INVALID && strstr(e.msg, "two producers") && strstr(e.msg, "p1") && strstr(e.msg, "p2"));
    CHECK(bp_graph_add_op(g, "self", "Relu", 1, &c, 1, &c, 0, NULL, &e) == BP_ERR_INVALID && strstr(e.msg, "own output") && strstr(e.msg, "self"));
    CHECK(bp_graph_add_op(g, "p1", "Relu", 1, &b, 1, &c, 0, NULL, &e) == BP_ERR_INVALID && strstr(e.msg, "p1"));
    /* a is consumed but is neither produced nor an input */
    CHECK(bp_graph_finalize(g, &e) == BP_ERR_INVALID && strstr(e.msg, "\"a\"") && strstr(e.msg, "p1") && strstr(e.msg, "not defined"));
    bp_graph_free(g);

    g = bp_graph_new("empty", NULL);
    CHECK(bp_graph_finalize(g, &e) == BP_ERR_INVALID && strstr(e.msg, "no ops"));
    bp_graph_free(g);

    /* cycle a -> b -> c -> a, the message lists the ops */
    g = bp_graph_new("cyc", NULL);
    bp_graph_add_tensor(g, "a", 4, &a, &e);
    bp_graph_add_tensor(g, "b", 4, &b, &e);
    bp_graph_add_tensor(g, "c", 4, &c, &e);
    bp_graph_add_op(g, "A", "Relu", 1, &c, 1, &a, 0, NULL, &e);
    bp_graph_add_op(g, "B", "Relu", 1, &a, 1, &b, 0, NULL, &e);
    bp_graph_add_op(g, "C", "Relu", 1, &b, 1, &c, 0, NULL, &e);
    CHECK(bp_graph_finalize(g, &e) == BP_ERR_INVALID && strstr(e.msg, "cycle") && strstr(e.msg, "\"A\"") && strstr(e.msg, "\"B\"") && strstr(e.msg, "\"C\""));
    bp_graph_free(g);

    /* shapes: negative dim, overflow, unknown dtype */
    g = bp_graph_new("shapes", NULL);
    int64_t neg[2] = {3, -1}, big[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 8};
    CHECK(bp_graph_add_tensor_shape(g, "n", BP_DT_F32, 2, neg, NULL, &a, &e) == BP_ERR_INVALID && strstr(e.msg, "negative"));
    CHECK(bp_graph_add_tensor_shape(g, "o", BP_DT_F32, 3, big, NULL, &a, &e) == BP_ERR_INVALID && strstr(e.msg, "overflow") && strstr(e.msg, "\"o\""));
    CHECK(bp_graph_add_tensor_shape(g, "u", BP_DT_UNKNOWN, 2, neg, NULL, &a, &e) == BP_ERR_INVALID && strstr(e.msg, "dtype"));
    const char *syms[2] = {"N", NULL};
    int64_t sd[2] = {BP_DIM_SYMBOLIC, 8};
    CHECK(bp_graph_add_tensor_shape(g, "s", BP_DT_F16, 2, sd, syms, &a, &e) == BP_OK);
    CHECK(bp_graph_tensor_is_dynamic(g, a) && bp_graph_tensor_bytes(g, a) == 0);
    CHECK(bp_graph_bind_dim(g, "N", 4, &e) == BP_OK);
    CHECK(!bp_graph_tensor_is_dynamic(g, a) && bp_graph_tensor_bytes(g, a) == 64);
    CHECK(bp_graph_bind_dim(g, "M", 4, &e) == BP_ERR_USAGE && strstr(e.msg, "\"M\""));
    bp_graph_free(g);
}

/* The reference case: made at op 5, read by ops 9, 12 and 15 -> lives to 15, even
 * when the ops are listed in another order. */
static void test_seed_lifetime(void)
{
    bp_error e;
    for (int variant = 0; variant < 2; variant++) {
        bp_graph *g = bp_graph_new("seed", NULL);
        int32_t x, t[20], ts;
        bp_graph_add_tensor(g, "x", 16, &x, &e);
        bp_graph_mark(g, x, BP_TENSOR_INPUT, &e);
        bp_graph_add_tensor(g, "shared", 100, &ts, &e);
        char name[32];
        for (int i = 0; i < 20; i++) {
            snprintf(name, sizeof name, "t%d", i);
            bp_graph_add_tensor(g, name, 16, &t[i], &e);
        }
        /* ops in a chain 0..19; op 5 also makes "shared"; ops 9, 12, 15 read it.
         * variant 1 adds the readers of "shared" in reverse file order. */
        int order_ops[20];
        for (int i = 0; i < 20; i++) order_ops[i] = i;
        for (int k = 0; k < 20; k++) {
            int i = order_ops[k];
            int32_t in[2] = {i ? t[i - 1] : x, ts};
            int32_t out[2] = {t[i], ts};
            snprintf(name, sizeof name, "op%d", i);
            int nin = (i == 9 || i == 12 || i == 15) ? 2 : 1;
            int nout = i == 5 ? 2 : 1;
            CHECK_OK(bp_graph_add_op(g, name, "Conv", nin, in, nout, out, 1, NULL, &e), e);
        }
        bp_graph_mark(g, t[19], BP_TENSOR_OUTPUT, &e);
        CHECK_OK(bp_graph_finalize(g, &e), e);
        int32_t order[20], first[22], last[22];
        if (variant == 0) for (int i = 0; i < 20; i++) order[i] = i;
        else { bp_plan_options o; bp_plan_options_init(&o); o.sched = BP_SCHED_KAHN; CHECK_OK(bp_schedule(g, &o, order, &e), e); }
        CHECK_OK(bp_lifetimes(g, order, first, last, &e), e);
        int32_t step5 = -1, step15 = -1;
        for (int s = 0; s < 20; s++) {
            if (!strcmp(bp_graph_op_name(g, order[s]), "op5")) step5 = s;
            if (!strcmp(bp_graph_op_name(g, order[s]), "op15")) step15 = s;
        }
        CHECK(first[ts] == step5 && last[ts] == step15);
        CHECK(first[t[19]] == 19 - 0 * step5 && last[t[19]] == 19); /* output lives to the end */
        CHECK(first[x] == 0 && last[x] == 0);
        bp_graph_free(g);
    }
}

/* The reference diamond: A -> B, C; B, C -> D; D -> E, F. */
static void test_diamond(void)
{
    bp_error e;
    bp_graph *g = bp_graph_new("diamond", NULL);
    int32_t in, a, b, c, d, ee, f;
    bp_graph_add_tensor(g, "in", 64, &in, &e);
    bp_graph_add_tensor(g, "a", 1000, &a, &e);
    bp_graph_add_tensor(g, "b", 1000, &b, &e);
    bp_graph_add_tensor(g, "c", 1000, &c, &e);
    bp_graph_add_tensor(g, "d", 1000, &d, &e);
    bp_graph_add_tensor(g, "e", 1000, &ee, &e);
    bp_graph_add_tensor(g, "f", 1000, &f, &e);
    bp_graph_mark(g, in, BP_TENSOR_INPUT, &e);
    bp_graph_add_op(g, "A", "Conv", 1, &in, 1, &a, 1, NULL, &e);
    bp_graph_add_op(g, "B", "Conv", 1, &a, 1, &b, 1, NULL, &e);
    bp_graph_add_op(g, "C", "Conv", 1, &a, 1, &c, 1, NULL, &e);
    int32_t bc[2] = {b, c};
    bp_graph_add_op(g, "D", "Concat", 2, bc, 1, &d, 1, NULL, &e);
    bp_graph_add_op(g, "E", "Conv", 1, &d, 1, &ee, 1, NULL, &e);
    bp_graph_add_op(g, "F", "Conv", 1, &d, 1, &f, 1, NULL, &e);
    bp_graph_mark(g, ee, BP_TENSOR_OUTPUT, &e);
    bp_graph_mark(g, f, BP_TENSOR_OUTPUT, &e);
    CHECK_OK(bp_graph_finalize(g, &e), e);
    bp_plan_options o;
    bp_plan_options_init(&o);
    o.sched = BP_SCHED_GIVEN;
    o.alignment = 1;
    for (int k = 0; k < BP_ASSIGN_SEARCH; k++) {
        o.assign = (bp_assign_kind)k;
        bp_plan *p = NULL;
        CHECK_OK(bp_plan_graph(g, &o, &p, &e), e);
        if (!p) continue;
        CHECK_OK(bp_verify(g, p, &e), e);
        const bp_tensor_plan *ta = bp_plan_tensor(p, a);
        CHECK(ta->first == 0 && ta->last == 2);           /* both branches count */
        CHECK(bp_plan_tensor(p, d)->last == 5);           /* read by E and F */
        CHECK(bp_plan_tensor(p, ee)->last == 5 && bp_plan_tensor(p, ee)->kind == BP_KIND_OUTPUT);
        CHECK(bp_plan_tensor(p, in)->offset == BP_NO_OFFSET && bp_plan_tensor(p, in)->kind == BP_KIND_INPUT);
        const bp_plan_stats *st = bp_plan_get_stats(p);
        CHECK(st->naive_bytes == 6000);
        /* step 2 (C): a, b, c live -> 3000; step 4 (E): d, e live... e,f pinned: step 5: d, e, f */
        CHECK(st->lower_bound_bytes == 3000);
        if (k == BP_ASSIGN_NAIVE) CHECK(st->arena_bytes == 6000);
        else CHECK(st->arena_bytes >= 3000 && st->arena_bytes <= 4000);
        bp_plan_free(p);
    }
    bp_graph_free(g);
}

/* ------------------------------------------------------------ random DAGs */

typedef struct rgraph {
    bp_graph *g;
    int n_ops;
} rgraph;

/* Random DAG: ops in file order, each reads 1-3 earlier tensors (or inputs),
 * makes 1-2 outputs; some ops are views, some element-wise; random outputs. */
static bp_graph *random_graph(unsigned long long *seed, int n_ops, int with_alias)
{
    bp_error e;
    bp_graph *g = bp_graph_new("rand", NULL);
    int32_t *ts = malloc(sizeof(int32_t) * (size_t)(n_ops * 2 + 4));
    int nts = 0;
    char name[32];
    int n_in = 1 + (int)(test_rand(seed) % 2);
    for (int i = 0; i < n_in; i++) {
        snprintf(name, sizeof name, "in%d", i);
        bp_graph_add_tensor(g, name, 1 + test_rand(seed) % 5000, &ts[nts], &e);
        bp_graph_mark(g, ts[nts], BP_TENSOR_INPUT, &e);
        nts++;
    }
    int32_t w;
    bp_graph_add_tensor(g, "w", 300, &w, &e);
    bp_graph_mark(g, w, BP_TENSOR_WEIGHT, &e);
    for (int op = 0; op < n_ops; op++) {
        int kind = (int)(test_rand(seed) % 10);
        const char *type = "Conv";
        int nin = 1 + (int)(test_rand(seed) % 3), nout = 1 + (test_rand(seed) % 4 == 0);
        if (with_alias && kind < 2) { type = "Reshape"; nin = 1; nout = 1; }
        else if (with_alias && kind < 4) { type = "Add"; nout = 1; }
        int32_t in[4], out[2];
        for (int i = 0; i < nin; i++) {
            /* prefer recent tensors to make long chains with some skips */
            int back = (int)(test_rand(seed) % 6);
            int idx = nts - 1 - back;
            if (idx < 0 || test_rand(seed) % 8 == 0) idx = (int)(test_rand(seed) % (uint64_t)nts);
            in[i] = ts[idx];
        }
        if (!strcmp(type, "Conv") && test_rand(seed) % 4 == 0 && nin < 4) in[nin++] = w;
        uint64_t sz = 1 + test_rand(seed) % 5000;
        if (!strcmp(type, "Reshape") || !strcmp(type, "Add")) sz = bp_graph_tensor_bytes(g, in[0]);
        for (int o = 0; o < nout; o++) {
            snprintf(name, sizeof name, "t%d_%d", op, o);
            bp_graph_add_tensor(g, name, o ? 1 + test_rand(seed) % 3000 : sz, &out[o], &e);
            ts[nts++] = out[o];
        }
        snprintf(name, sizeof name, "op%d", op);
        bp_status s = bp_graph_add_op(g, name, type, nin, in, nout, out, 1.0, NULL, &e);
        REQUIRE(s == BP_OK);
    }
    /* the last tensor and maybe a few random ones are outputs */
    bp_graph_mark(g, ts[nts - 1], BP_TENSOR_OUTPUT, &e);
    if (test_rand(seed) % 3 == 0) bp_graph_mark(g, ts[n_in + (int)(test_rand(seed) % (uint64_t)(nts - n_in))], BP_TENSOR_OUTPUT, &e);
    free(ts);
    REQUIRE(bp_graph_finalize(g, &e) == BP_OK);
    return g;
}

/* Brute force: own lifetimes by scanning every op for every tensor. */
static void brute_lifetimes(const bp_graph *g, const int32_t *order, int32_t *first, int32_t *last)
{
    int nt = bp_graph_n_tensors(g), no = bp_graph_n_ops(g);
    for (int t = 0; t < nt; t++) {
        first[t] = last[t] = -1;
        for (int s = 0; s < no; s++) {
            int op = order[s];
            for (int i = 0; i < bp_graph_op_n_outputs(g, op); i++)
                if (bp_graph_op_output(g, op, i) == t) first[t] = last[t] = s;
        }
        for (int s = 0; s < no; s++) {
            int op = order[s];
            for (int i = 0; i < bp_graph_op_n_inputs(g, op); i++)
                if (bp_graph_op_input(g, op, i) == t) { if (first[t] < 0) first[t] = 0; if (s > last[t]) last[t] = s; }
        }
        if (bp_graph_tensor_flags(g, t) & BP_TENSOR_OUTPUT) last[t] = no - 1;
    }
}

/* Brute force lower bound from the plan's own storages: for every step, sum
 * the aligned sizes of distinct storages (alias roots) with a member live. */
static uint64_t brute_lower_bound(const bp_graph *g, const bp_plan *p)
{
    int nt = bp_graph_n_tensors(g), no = bp_graph_n_ops(g);
    uint64_t best = 0, al = bp_plan_alignment(p);
    for (int s = 0; s < no; s++) {
        uint64_t live = 0;
        for (int r = 0; r < nt; r++) {
            const bp_tensor_plan *rp = bp_plan_tensor(p, r);
            if (rp->alias_of >= 0 || rp->offset == BP_NO_OFFSET) continue;
            int alive = 0;
            for (int t = 0; t < nt && !alive; t++) {
                const bp_tensor_plan *tp = bp_plan_tensor(p, t);
                int root = tp->alias_of >= 0 ? tp->alias_of : t;
                if (root == r && tp->first <= s && s <= tp->last) alive = 1;
            }
            if (alive) live += (bp_graph_tensor_bytes(g, r) + al - 1) / al * al;
        }
        if (live > best) best = live;
    }
    return best;
}

static void test_random_dags(void)
{
    unsigned long long seed = 12345;
    int n_graphs = 1200, plans = 0;
    bp_error e;
    for (int gi = 0; gi < n_graphs; gi++) {
        int n_ops = 2 + (int)(test_rand(&seed) % 40);
        int with_alias = gi % 2;
        bp_graph *g = random_graph(&seed, n_ops, with_alias);
        int nt = bp_graph_n_tensors(g);
        int32_t *first = malloc(sizeof(int32_t) * (size_t)nt), *last = malloc(sizeof(int32_t) * (size_t)nt);
        int32_t *bf = malloc(sizeof(int32_t) * (size_t)nt), *bl = malloc(sizeof(int32_t) * (size_t)nt);
        for (int sk = BP_SCHED_GIVEN; sk <= BP_SCHED_KAHN; sk++) {
            bp_plan_options o;
            bp_plan_options_init(&o);
            o.sched = (bp_sched_kind)sk;
            o.no_alias = !with_alias;
            o.alignment = gi % 3 == 0 ? 1 : (gi % 3 == 1 ? 64 : 256);
            int32_t order[64];
            CHECK_OK(bp_schedule(g, &o, order, &e), e);
            CHECK_OK(bp_lifetimes(g, order, first, last, &e), e);
            brute_lifetimes(g, order, bf, bl);
            for (int t = 0; t < nt; t++) {
                if (bp_graph_tensor_producer(g, t) < 0 && bf[t] < 0) continue;
                CHECK_MSG(first[t] == bf[t] && last[t] == bl[t], "graph %d tensor %s [%d,%d] vs brute [%d,%d]", gi,
                          bp_graph_tensor_name(g, t), first[t], last[t], bf[t], bl[t]);
            }
            uint64_t naive_arena = 0, lb = 0;
            for (int ak = BP_ASSIGN_NAIVE; ak <= BP_ASSIGN_BESTFIT; ak++) {
                o.assign = (bp_assign_kind)ak;
                bp_plan *p = NULL;
                bp_status s = bp_plan_graph(g, &o, &p, &e);
                CHECK_MSG(s == BP_OK, "graph %d: %s", gi, e.msg);
                if (!p) continue;
                plans++;
                s = bp_verify(g, p, &e);
                CHECK_MSG(s == BP_OK, "graph %d sched %d assign %d: %s", gi, sk, ak, e.msg);
                const bp_plan_stats *st = bp_plan_get_stats(p);
                if (ak == BP_ASSIGN_NAIVE) {
                    naive_arena = st->arena_bytes;
                    lb = brute_lower_bound(g, p);
                    CHECK_MSG(st->lower_bound_bytes == lb, "graph %d: lower bound %llu, brute force %llu", gi,
                              (unsigned long long)st->lower_bound_bytes, (unsigned long long)lb);
                }
                CHECK(st->lower_bound_bytes == lb);
                CHECK(st->arena_bytes >= st->lower_bound_bytes);
                if (ak == BP_ASSIGN_BESTFIT) CHECK(st->arena_bytes <= naive_arena);
                /* naive is like for like with the arena: the naive assigner lays the
                 * aligned storages end to end, which is naive less the in-place
                 * outputs; with no aliasing every planned tensor is its own storage */
                CHECK_MSG(st->arena_bytes <= st->naive_bytes, "graph %d assign %d: arena %llu above naive %llu", gi, ak,
                          (unsigned long long)st->arena_bytes, (unsigned long long)st->naive_bytes);
                if (ak == BP_ASSIGN_NAIVE && !with_alias) CHECK(st->arena_bytes == st->naive_bytes && st->alias_saved_bytes == 0);
                bp_plan_free(p);
            }
        }
        free(first); free(last); free(bf); free(bl);
        bp_graph_free(g);
    }
    CHECK(plans == n_graphs * 2 * 3);
    fprintf(stderr, "random DAGs: %d graphs, %d plans verified\n", n_graphs, plans);
}

/* A plan of g in the given order at this alignment, checked by the verifier
 * (NULL after a failed check). */
static bp_plan *plan_given_verified(const bp_graph *g, uint64_t alignment)
{
    bp_error e;
    bp_plan_options o;
    bp_plan_options_init(&o);
    o.sched = BP_SCHED_GIVEN;
    o.alignment = alignment;
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph(g, &o, &p, &e), e);
    if (p && bp_verify(g, p, &e) != BP_OK) {
        CHECK_MSG(0, "%s", e.msg);
        bp_plan_free(p);
        return NULL;
    }
    return p;
}

/* Break plans on purpose: the verifier must name the right tensors. */
static void test_verifier_rejects(void)
{
    bp_error e;
    bp_graph *g = chain_graph(6, 1000);
    bp_plan *p = plan_given_verified(g, 1);
    REQUIRE(p);
    int32_t t1 = bp_graph_find_tensor(g, "t1"), t2 = bp_graph_find_tensor(g, "t2"), t3 = bp_graph_find_tensor(g, "t3");

    /* a lifetime cut short: t1 is read at step 2 */
    p->tp[t1].last = 1;
    CHECK(bp_verify(g, p, &e) == BP_ERR_VERIFY && strstr(e.msg, "\"t1\"") && strstr(e.msg, "cover"));
    p->tp[t1].last = 2;
    /* t1 and t2 are live together at step 2: put them at the same offset */
    uint64_t save = p->tp[t2].offset;
    p->tp[t2].offset = p->tp[t1].offset;
    CHECK(bp_verify(g, p, &e) == BP_ERR_VERIFY && strstr(e.msg, "overlap") && strstr(e.msg, "\"t1\"") && strstr(e.msg, "\"t2\""));
    p->tp[t2].offset = save;
    /* outside the arena */
    save = p->tp[t3].offset;
    p->tp[t3].offset = p->stats.arena_bytes;
    CHECK(bp_verify(g, p, &e) == BP_ERR_VERIFY && strstr(e.msg, "outside the arena") && strstr(e.msg, "\"t3\""));
    p->tp[t3].offset = save;
    /* wrong size */
    p->tp[t3].bytes = 999;
    CHECK(bp_verify(g, p, &e) == BP_ERR_VERIFY && strstr(e.msg, "\"t3\"") && strstr(e.msg, "999"));
    p->tp[t3].bytes = 1000;
    /* a false in-place claim: t3 over t1 (t1 is dead, but op2 does not read it) */
    p->tp[t3].alias_of = t1;
    CHECK(bp_verify(g, p, &e) == BP_ERR_VERIFY && strstr(e.msg, "\"t3\""));
    p->tp[t3].alias_of = -1;
    /* not topological */
    p->order[1] = 2; p->order[2] = 1;
    CHECK(bp_verify(g, p, &e) == BP_ERR_VERIFY && strstr(e.msg, "topological"));
    p->order[1] = 1; p->order[2] = 1;
    CHECK(bp_verify(g, p, &e) == BP_ERR_VERIFY && strstr(e.msg, "twice"));
    p->order[2] = 2;
    CHECK_OK(bp_verify(g, p, &e), e);
    /* t1 [1,2] and t3 [3,4] share bytes (the chain ping-pongs); a plan that
     * declares t3 from step 2 contradicts itself and is refused, although
     * the true lifetimes never meet (found by fuzz_plan) */
    CHECK(p->tp[t1].offset == p->tp[t3].offset);
    p->tp[t3].first = 2;
    CHECK(bp_verify(g, p, &e) == BP_ERR_VERIFY && strstr(e.msg, "overlap") && strstr(e.msg, "\"t1\"") && strstr(e.msg, "\"t3\""));
    p->tp[t3].first = 3;
    CHECK_OK(bp_verify(g, p, &e), e);
    /* a FREE moved before its last use */
    for (size_t i = 0; i < p->n_ev; i++)
        if (p->ev[i].type == BP_EV_FREE && p->ev[i].tensor == t2) {
            bp_event ev = p->ev[i];
            /* swap with the previous EXEC */
            size_t j = i;
            while (j > 0 && p->ev[j - 1].type != BP_EV_EXEC) j--;
            if (j > 0) { p->ev[i] = p->ev[j - 1]; p->ev[j - 1] = ev; }
            CHECK(bp_verify(g, p, &e) == BP_ERR_VERIFY && strstr(e.msg, "FREE") && strstr(e.msg, "\"t2\""));
            p->ev[j - 1] = p->ev[i]; p->ev[i] = ev;
            break;
        }
    CHECK_OK(bp_verify(g, p, &e), e);
    bp_plan_free(p);
    bp_graph_free(g);
}

/* The transformer case: exporters pass weights and inputs through Identity
 * views, which are never allocated.  Naive counts only the view roots in the
 * arena, at the arena's alignment; aliasing saved only planned tensors.  By
 * hand, alignment 256:
 *   x (input, 300 B) -> xv = Identity(x); W1 (weight, 1000 B) -> W1v =
 *   Identity(W1); W2 (weight, 500 B) -> W2v = Identity(W2);
 *   h = MatMul(xv, W1v) 1000 B; hv = Reshape(h) (view of h); r = Relu(hv)
 *   1000 B, written in place over h; y = MatMul(r, W2v) 100 B, the output.
 *   naive = align(h) + align(r) + align(y) = 1024 + 1024 + 256 = 2304
 *   (the old sum of raw op outputs, views of weights and inputs included, was
 *   300 + 1000 + 500 + 1000 + 1000 + 1000 + 100 = 4900);
 *   aliasing saved = align(hv) + align(r) = 2048; arena: h's storage and y
 *   live together at the last step = 1280. */
static void test_naive_external_views(void)
{
    bp_error e;
    bp_graph *g = bp_graph_new("encoder", NULL);
    static const struct { const char *name; uint64_t bytes; unsigned flags; } tensors[] = {
        {"x", 300, BP_TENSOR_INPUT}, {"W1", 1000, BP_TENSOR_WEIGHT}, {"W2", 500, BP_TENSOR_WEIGHT}, {"xv", 300, 0},
        {"W1v", 1000, 0}, {"W2v", 500, 0}, {"h", 1000, 0}, {"hv", 1000, 0}, {"r", 1000, 0}, {"y", 100, BP_TENSOR_OUTPUT}};
    int32_t id[10];
    for (int i = 0; i < 10; i++) {
        bp_graph_add_tensor(g, tensors[i].name, tensors[i].bytes, &id[i], &e);
        if (tensors[i].flags) bp_graph_mark(g, id[i], tensors[i].flags, &e);
    }
    int32_t x = id[0], w1 = id[1], w2 = id[2], xv = id[3], w1v = id[4], w2v = id[5], h = id[6], hv = id[7], r = id[8], y = id[9];
    int32_t mm1[2] = {xv, w1v}, mm2[2] = {r, w2v};
    bp_graph_add_op(g, "id_x", "Identity", 1, &x, 1, &xv, 1, NULL, &e);
    bp_graph_add_op(g, "id_w1", "Identity", 1, &w1, 1, &w1v, 1, NULL, &e);
    bp_graph_add_op(g, "id_w2", "Identity", 1, &w2, 1, &w2v, 1, NULL, &e);
    bp_graph_add_op(g, "mm1", "MatMul", 2, mm1, 1, &h, 1, NULL, &e);
    bp_graph_add_op(g, "reshape", "Reshape", 1, &h, 1, &hv, 1, NULL, &e);
    bp_graph_add_op(g, "relu", "Relu", 1, &hv, 1, &r, 1, NULL, &e);
    bp_graph_add_op(g, "mm2", "MatMul", 2, mm2, 1, &y, 1, NULL, &e);
    CHECK_OK(bp_graph_finalize(g, &e), e);
    bp_plan *p = plan_given_verified(g, 256);
    REQUIRE(p);
    const bp_plan_stats *st = bp_plan_get_stats(p);
    CHECK(bp_plan_tensor(p, w1v)->kind == BP_KIND_WEIGHT && bp_plan_tensor(p, xv)->kind == BP_KIND_INPUT);
    CHECK(bp_plan_tensor(p, r)->alias_of == h);
    CHECK_MSG(st->naive_bytes == 2304, "naive %llu", (unsigned long long)st->naive_bytes);
    CHECK_MSG(st->alias_saved_bytes == 2048, "aliasing saved %llu", (unsigned long long)st->alias_saved_bytes);
    CHECK_MSG(st->arena_bytes == 1280, "arena %llu", (unsigned long long)st->arena_bytes);
    CHECK(st->n_planned == 4 && st->n_storages == 2 && st->n_views == 4 && st->n_dynamic == 0);
    CHECK(st->n_inputs == 2 && st->n_weights == 4);
    /* the verifier re-derives both figures: the old definitions are refused */
    p->stats.naive_bytes = 4900;
    CHECK(bp_verify(g, p, &e) == BP_ERR_VERIFY && strstr(e.msg, "naive_bytes 4900") && strstr(e.msg, "2304"));
    p->stats.naive_bytes = 2304;
    p->stats.alias_saved_bytes = 4900 - 2048;   /* old: naive less the storages' raw bytes */
    CHECK(bp_verify(g, p, &e) == BP_ERR_VERIFY && strstr(e.msg, "alias_saved_bytes 2852") && strstr(e.msg, "2048"));
    p->stats.alias_saved_bytes = 2048;
    p->stats.n_views = 1;
    CHECK(bp_verify(g, p, &e) == BP_ERR_VERIFY && strstr(e.msg, "1 views") && strstr(e.msg, "say 4"));
    p->stats.n_views = 4;
    CHECK_OK(bp_verify(g, p, &e), e);
    bp_plan_free(p);
    bp_plan_options o;
    bp_plan_options_init(&o);
    o.sched = BP_SCHED_GIVEN;
    o.alignment = 256;
    /* no aliasing: every op output is its own planned storage (the Identity
     * outputs too: xv 512, W1v 1024, W2v 512, then h, hv, r 1024 each and y
     * 256), and naive is the naive assigner's arena exactly */
    o.no_alias = 1;
    o.assign = BP_ASSIGN_NAIVE;
    CHECK_OK(bp_plan_graph(g, &o, &p, &e), e);
    REQUIRE(p);
    CHECK_OK(bp_verify(g, p, &e), e);
    st = bp_plan_get_stats(p);
    CHECK(st->n_planned == 7 && st->n_views == 0 && st->alias_saved_bytes == 0);
    CHECK_MSG(st->naive_bytes == 512 + 1024 + 512 + 3 * 1024 + 256 && st->arena_bytes == st->naive_bytes, "naive %llu arena %llu",
              (unsigned long long)st->naive_bytes, (unsigned long long)st->arena_bytes);
    bp_plan_free(p);
    bp_graph_free(g);
}

static void test_events(void)
{
    bp_error e;
    bp_graph *g = chain_graph(3, 512);
    bp_plan_options o;
    bp_plan_options_init(&o);
    o.sched = BP_SCHED_GIVEN;
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph(g, &o, &p, &e), e);
    REQUIRE(p);
    /* x (input) t0 t1 t2(output): ALLOC t0, EXEC op0, FREE x, ALLOC t1, EXEC op1, FREE t0, ALLOC t2, EXEC op2, FREE t1 */
    const char *want[] = {"ALLOC t0", "EXEC op0", "FREE x", "ALLOC t1", "EXEC op1", "FREE t0", "ALLOC t2", "EXEC op2", "FREE t1"};
    size_t n = bp_plan_n_events(p);
    CHECK(n == 9);
    const bp_event *ev = bp_plan_events(p);
    for (size_t i = 0; i < n && i < 9; i++) {
        char got[64];
        snprintf(got, sizeof got, "%s %s", ev[i].type == BP_EV_ALLOC ? "ALLOC" : ev[i].type == BP_EV_EXEC ? "EXEC" : "FREE",
                 ev[i].type == BP_EV_EXEC ? bp_graph_op_name(g, ev[i].op) : bp_graph_tensor_name(g, ev[i].tensor));
        CHECK_MSG(!strcmp(got, want[i]), "event %zu: %s, want %s", i, got, want[i]);
    }
    /* the chain needs two buffers of 512 */
    CHECK(bp_plan_get_stats(p)->arena_bytes == 1024);
    CHECK(bp_plan_get_stats(p)->lower_bound_bytes == 1024);
    bp_plan_free(p);
    bp_graph_free(g);
}

/* Views and in-place: a Reshape shares its input; an Add writes over a dying input. */
static void test_alias(void)
{
    bp_error e;
    bp_graph *g = bp_graph_new("alias", NULL);
    int32_t x, a, v, b, c;
    bp_graph_add_tensor(g, "x", 1024, &x, &e);
    bp_graph_mark(g, x, BP_TENSOR_INPUT, &e);
    bp_graph_add_tensor(g, "a", 1024, &a, &e);
    bp_graph_add_tensor(g, "v", 1024, &v, &e);
    bp_graph_add_tensor(g, "b", 1024, &b, &e);
    bp_graph_add_tensor(g, "c", 1024, &c, &e);
    bp_graph_add_op(g, "conv", "Conv", 1, &x, 1, &a, 1, NULL, &e);
    bp_graph_add_op(g, "reshape", "Reshape", 1, &a, 1, &v, 1, NULL, &e);
    bp_graph_add_op(g, "relu", "Relu", 1, &v, 1, &b, 1, NULL, &e);
    bp_graph_add_op(g, "conv2", "Conv", 1, &b, 1, &c, 1, NULL, &e);
    bp_graph_mark(g, c, BP_TENSOR_OUTPUT, &e);
    CHECK_OK(bp_graph_finalize(g, &e), e);
    bp_plan_options o;
    bp_plan_options_init(&o);
    o.sched = BP_SCHED_GIVEN;
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph(g, &o, &p, &e), e);
    REQUIRE(p);
    CHECK_OK(bp_verify(g, p, &e), e);
    CHECK(bp_plan_tensor(p, v)->alias_of == a);           /* view */
    CHECK(bp_plan_tensor(p, b)->alias_of == a);           /* relu in place over v's storage */
    CHECK(bp_plan_tensor(p, c)->alias_of < 0);
    CHECK(bp_plan_get_stats(p)->alias_saved_bytes == 2048);   /* v (a view) and b (in place) */
    CHECK(bp_plan_get_stats(p)->naive_bytes == 3072);         /* a, b, c: v shares a's bytes */
    CHECK(bp_plan_get_stats(p)->n_views == 1);
    CHECK(bp_plan_get_stats(p)->arena_bytes == 2048);
    bp_plan_free(p);
    o.no_alias = 1;
    CHECK_OK(bp_plan_graph(g, &o, &p, &e), e);
    REQUIRE(p);
    CHECK_OK(bp_verify(g, p, &e), e);
    CHECK(bp_plan_tensor(p, v)->alias_of < 0 && bp_plan_tensor(p, b)->alias_of < 0);
    CHECK(bp_plan_get_stats(p)->alias_saved_bytes == 0);
    bp_plan_free(p);
    bp_graph_free(g);
}

/* A custom allocator: counts bytes, must end at zero. */
typedef struct counting { long long live; long calls; } counting;
static void *c_alloc(void *ctx, size_t n) { counting *c = ctx; c->live += (long long)n; c->calls++; return malloc(n ? n : 1); }
static void *c_realloc(void *ctx, void *p, size_t o, size_t n) { counting *c = ctx; c->live += (long long)n - (long long)o; return realloc(p, n ? n : 1); }
static void c_free(void *ctx, void *p, size_t n) { counting *c = ctx; c->live -= (long long)n; free(p); }

static void test_custom_allocator(void)
{
    counting cnt = {0, 0};
    bp_allocator al = {c_alloc, c_realloc, c_free, &cnt};
    bp_error e;
    bp_graph *g = bp_graph_new("counted", &al);
    int32_t x, y;
    bp_graph_add_tensor(g, "x", 10, &x, &e);
    bp_graph_add_tensor(g, "y", 10, &y, &e);
    bp_graph_mark(g, x, BP_TENSOR_INPUT, &e);
    bp_graph_add_op(g, "op", "Relu", 1, &x, 1, &y, 1, NULL, &e);
    bp_graph_mark(g, y, BP_TENSOR_OUTPUT, &e);
    CHECK_OK(bp_graph_finalize(g, &e), e);
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph(g, NULL, &p, &e), e);
    CHECK(cnt.calls > 0);
    bp_plan_free(p);
    bp_graph_free(g);
    CHECK_MSG(cnt.live == 0, "allocator balance %lld", cnt.live);
}

/* Views within their roots: finalize and a later bind refuse a view larger
 * than its root; the verifier refuses a plan whose graph grew one behind
 * finalize's back (a size poked in here), and accepts a broadcast view
 * (aten.expand) larger than its root. */
static void test_view_bytes(void)
{
    bp_error e;
    for (int bcast = 0; bcast < 2; bcast++) {
        bp_graph *g = bp_graph_new("views", NULL);
        int32_t x, a, v, y;
        REQUIRE(bp_graph_add_tensor(g, "x", 64, &x, &e) == BP_OK);
        REQUIRE(bp_graph_add_tensor(g, "a", 64, &a, &e) == BP_OK);
        REQUIRE(bp_graph_add_tensor(g, "v", bcast ? (uint64_t)1 << 40 : 64, &v, &e) == BP_OK);
        REQUIRE(bp_graph_add_tensor(g, "y", 64, &y, &e) == BP_OK);
        bp_graph_mark(g, x, BP_TENSOR_INPUT, &e);
        bp_graph_mark(g, y, BP_TENSOR_OUTPUT, &e);
        REQUIRE(bp_graph_add_op(g, "op0", "Relu", 1, &x, 1, &a, 1, NULL, &e) == BP_OK);
        REQUIRE(bp_graph_add_op(g, "op1", bcast ? "aten.expand" : "aten.view", 1, &a, 1, &v, 1, NULL, &e) == BP_OK);
        REQUIRE(bp_graph_add_op(g, "op2", "Relu", 1, &v, 1, &y, 1, NULL, &e) == BP_OK);
        CHECK_OK(bp_graph_finalize(g, &e), e);
        bp_plan *p = plan_given_verified(g, 1);   /* a broadcast view of 2^40 bytes verifies */
        REQUIRE(p);
        if (!bcast) {
            g->t[v].bytes = (uint64_t)1 << 40;   /* behind finalize's back */
            p->tp[v].bytes = (uint64_t)1 << 40;
            CHECK(bp_verify(g, p, &e) == BP_ERR_VERIFY && strstr(e.msg, "\"v\" (1099511627776 bytes) is a view of \"a\" (64 bytes)"));
            bp__graph_unfinalize(g);
            CHECK(bp_graph_finalize(g, &e) == BP_ERR_INVALID &&
                  strstr(e.msg, "\"v\" (1099511627776 bytes) is a view of \"a\" (64 bytes) and larger"));
        }
        bp_plan_free(p);
        bp_graph_free(g);
    }
    /* a symbolic view bound past its root after finalize */
    bp_graph *g = bp_graph_new("bind", NULL);
    int32_t x, a, v, y;
    int64_t d16 = 16, dn = BP_DIM_SYMBOLIC;
    const char *sn[1] = {"N"};
    REQUIRE(bp_graph_add_tensor_shape(g, "x", BP_DT_F32, 1, &d16, NULL, &x, &e) == BP_OK);
    REQUIRE(bp_graph_add_tensor_shape(g, "a", BP_DT_F32, 1, &d16, NULL, &a, &e) == BP_OK);
    REQUIRE(bp_graph_add_tensor_shape(g, "v", BP_DT_F32, 1, &dn, sn, &v, &e) == BP_OK);
    REQUIRE(bp_graph_add_tensor_shape(g, "y", BP_DT_F32, 1, &d16, NULL, &y, &e) == BP_OK);
    bp_graph_mark(g, x, BP_TENSOR_INPUT, &e);
    bp_graph_mark(g, y, BP_TENSOR_OUTPUT, &e);
    REQUIRE(bp_graph_add_op(g, "op0", "Relu", 1, &x, 1, &a, 1, NULL, &e) == BP_OK);
    REQUIRE(bp_graph_add_op(g, "op1", "Reshape", 1, &a, 1, &v, 1, NULL, &e) == BP_OK);
    REQUIRE(bp_graph_add_op(g, "op2", "Relu", 1, &v, 1, &y, 1, NULL, &e) == BP_OK);
    CHECK_OK(bp_graph_finalize(g, &e), e);
    CHECK_OK(bp_graph_bind_dim(g, "N", 16, &e), e);
    CHECK(bp_graph_bind_dim(g, "N", 17, &e) == BP_ERR_INVALID && strstr(e.msg, "\"v\" (68 bytes) is a view of \"a\" (64 bytes)"));
    bp_graph_free(g);
}

int main(void)
{
    test_view_bytes();
    test_builder_errors();
    test_seed_lifetime();
    test_diamond();
    test_events();
    test_alias();
    test_custom_allocator();
    test_verifier_rejects();
    test_naive_external_views();
    test_random_dags();
    return check_status();
}
