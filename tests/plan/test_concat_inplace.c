/*
 * test_concat_inplace.c — Concat in place (concat_inplace) on random
 * graphs: chains of conv-like ops and element-wise ops over [1, C, 2, 2]
 * f32 feature maps, Concats of earlier maps (DenseNet-like nested prefixes
 * among them), Splits along the channels, views, maps read by other ops
 * after their Concat, graph outputs and graph inputs among the Concat
 * inputs.  For each graph:
 *  - the plan with concat_inplace passes the verifier, and its arena is
 *    never above the plan without it (bp_plan_graph keeps the smaller);
 *  - mutations are rejected: a slice moved off its place, a slice moved
 *    onto another slice (two writers of the same live bytes), a slice
 *    claimed by another storage, a view_offset past the storage's end;
 *  - on a share of the graphs, the executor with digest kernels matches
 *    safe mode on 1, 2 and 4 threads;
 *  - the floor of bp_concat_bound for the order is at or below the arena of
 *    the merged and the unmerged plan for that order, and at or above the
 *    largest tensor in a storage of its own; an order that is no permutation is refused;
 *    on a DenseNet-like block it is the floor worked out by hand.
 */
#include "bufplan.h"
#include "check.h"
#include "plan/plan_internal.h"

#include <stdio.h>
#include <string.h>

#define N_GRAPHS 2000
#define MAXT 96

typedef struct rg {
    bp_graph *g;
    int32_t maps[MAXT];   /* activations made so far */
    int64_t ch[MAXT];
    int n;
    int k;                /* name counter */
    int32_t cat_in[MAXT]; /* the last Concat's inputs (for nested prefixes) */
    int n_cat;
    bp_error err;
} rg;

static int32_t rg_map(rg *r, int64_t c)
{
    char name[32];
    snprintf(name, sizeof name, "t%d", r->k++);
    int64_t d[4] = {1, c, 2, 2};
    int32_t t = -1;
    REQUIRE(bp_graph_add_tensor_shape(r->g, name, BP_DT_F32, 4, d, NULL, &t, &r->err) == BP_OK);
    return t;
}

static void rg_op(rg *r, const char *type, int nin, const int32_t *in, int nout, const int32_t *out)
{
    char name[32];
    snprintf(name, sizeof name, "op%d", r->k++);
    REQUIRE(bp_graph_add_op(r->g, name, type, nin, in, nout, out, 0, NULL, &r->err) == BP_OK);
}

static void rg_push(rg *r, int32_t t, int64_t c)
{
    if (r->n < MAXT) { r->maps[r->n] = t; r->ch[r->n] = c; r->n++; }
}

static int32_t rg_pick(rg *r, unsigned long long *s, int64_t *c)
{
    int i = r->n - 1 - (int)(test_rand(s) % (unsigned long long)(r->n < 4 ? r->n : 4));
    if (test_rand(s) % 4 == 0) i = (int)(test_rand(s) % (unsigned long long)r->n);
    *c = r->ch[i];
    return r->maps[i];
}

/* One random op appended. */
static void rg_step(rg *r, unsigned long long *s)
{
    int kind = (int)(test_rand(s) % 10);
    int64_t c;
    int32_t x = rg_pick(r, s, &c);
    if (kind <= 2) {                                   /* conv-like: a new map */
        int64_t oc = 1 + (int64_t)(test_rand(s) % 4);
        int32_t y = rg_map(r, oc);
        rg_op(r, "Conv", 1, &x, 1, &y);
        rg_push(r, y, oc);
    } else if (kind == 3) {                            /* element-wise: may write in place */
        int32_t y = rg_map(r, c);
        rg_op(r, "Relu", 1, &x, 1, &y);
        rg_push(r, y, c);
    } else if (kind == 4) {                            /* a view */
        int32_t y = rg_map(r, c);
        rg_op(r, "Identity", 1, &x, 1, &y);
        rg_push(r, y, c);
    } else if (kind == 5 && c >= 2) {                  /* Split along the channels */
        int64_t a = 1 + (int64_t)(test_rand(s) % (unsigned long long)(c - 1));
        int32_t o[2] = {rg_map(r, a), rg_map(r, c - a)};
        rg_op(r, "Split", 1, &x, 2, o);
        rg_push(r, o[0], a);
        rg_push(r, o[1], c - a);
    } else if (kind == 6 && r->n_cat > 0 && r->n_cat < 12) {   /* DenseNet: the last Concat's inputs + a new map */
        int64_t oc = 1 + (int64_t)(test_rand(s) % 3), sum = 0;
        int32_t y = rg_map(r, oc);
        rg_op(r, "Conv", 1, &x, 1, &y);
        r->cat_in[r->n_cat++] = y;
        for (int i = 0; i < r->n_cat; i++) sum += (int64_t)bp_graph_tensor_bytes(r->g, r->cat_in[i]) / 16;   /* 16 bytes a channel */
        int32_t z = rg_map(r, sum);
        rg_op(r, "Concat", r->n_cat, r->cat_in, 1, &z);
        rg_push(r, z, sum);
    } else {                                           /* Concat of 1..4 maps */
        int n = 1 + (int)(test_rand(s) % 4);
        int32_t in[4];
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            int64_t ci;
            in[i] = i == 0 ? x : rg_pick(r, s, &ci);
            if (i == 0) ci = c;
            sum += ci;
        }
        int32_t z = rg_map(r, sum);
        rg_op(r, "Concat", n, in, 1, &z);
        memcpy(r->cat_in, in, (size_t)n * sizeof *in);
        r->n_cat = n;
        rg_push(r, z, sum);
    }
}

static bp_graph *rg_build(unsigned long long seed)
{
    rg r;
    memset(&r, 0, sizeof r);
    unsigned long long s = seed;
    r.g = bp_graph_new("rand", NULL);
    int64_t c0 = 1 + (int64_t)(test_rand(&s) % 3);
    int32_t in = rg_map(&r, c0);
    bp_graph_mark(r.g, in, BP_TENSOR_INPUT, &r.err);
    rg_push(&r, in, c0);
    int n_ops = 4 + (int)(test_rand(&s) % 24);
    for (int i = 0; i < n_ops; i++) rg_step(&r, &s);
    bp_graph_mark(r.g, r.maps[r.n - 1], BP_TENSOR_OUTPUT, &r.err);
    if (test_rand(&s) % 3 == 0) bp_graph_mark(r.g, r.maps[(int)(test_rand(&s) % (unsigned long long)r.n)], BP_TENSOR_OUTPUT, &r.err);
    REQUIRE(bp_graph_finalize(r.g, &r.err) == BP_OK);
    return r.g;
}

/* A tensor placed at an offset by a Concat slice (not a view, not a Split). */
static int32_t find_slice(const bp_graph *g, const bp_plan *p, unsigned long long *s, bool nonzero)
{
    int32_t n = bp_plan_n_tensors(p), start = (int32_t)(test_rand(s) % (unsigned long long)n);
    for (int32_t k = 0; k < n; k++) {
        int32_t t = (start + k) % n;
        const bp_tensor_plan *tp = bp_plan_tensor(p, t);
        int32_t pr = bp_graph_tensor_producer(g, t);
        if (tp->alias_of < 0 || pr < 0 || bp_graph_tensor_view_of(g, t) >= 0) continue;
        if (!strcmp(bp_graph_op_type(g, pr), "Split") || !strcmp(bp_graph_op_type(g, pr), "Identity")) continue;
        if (nonzero && !tp->view_offset) continue;
        const int32_t *cons;
        int32_t nc = bp_graph_tensor_consumers(g, t, &cons);
        for (int32_t i = 0; i < nc; i++)
            if (!strcmp(bp_graph_op_type(g, cons[i]), "Concat")) return t;
    }
    return -1;
}

/* Applies mutation m to a copy of p's tensor t, checks the verifier says
 * no, restores it. */
static int mutate_rejected(const bp_graph *g, bp_plan *p, int32_t t, int m, int32_t other)
{
    bp_tensor_plan keep = p->tp[t];
    bp_tensor_plan *tp = &p->tp[t];
    const uint64_t root_bytes = bp_graph_tensor_bytes(g, tp->alias_of);
    if (m == 0) tp->view_offset += 16;                         /* off its place by one channel */
    if (m == 1) tp->view_offset = p->tp[other].view_offset;    /* onto another slice of the storage */
    if (m == 2) tp->view_offset = root_bytes;                  /* past the end */
    if (m == 3) tp->alias_of = other;                          /* another storage */
    bp_error e;
    bp_status s = bp_verify(g, p, &e);
    p->tp[t] = keep;
    return s == BP_ERR_VERIFY;
}

/* A DenseNet-like block whose floor is worked out by hand: x -> a -> b,
 * c = [a, b], r = Relu(c), d = Conv(r), e = [a, b, d] (the output); 16
 * bytes a channel.  During d's step a and b (read by e), r and d are live:
 * 64 + 64 + 128 + 64 = 320 bytes, and no merge lets them share. */
static void floor_by_hand(void)
{
    rg r;
    memset(&r, 0, sizeof r);
    r.g = bp_graph_new("block", NULL);
    int32_t x = rg_map(&r, 4), a = rg_map(&r, 4), b = rg_map(&r, 4), c = rg_map(&r, 8), rl = rg_map(&r, 8), d = rg_map(&r, 4),
            e = rg_map(&r, 12);
    bp_graph_mark(r.g, x, BP_TENSOR_INPUT, &r.err);
    rg_op(&r, "Conv", 1, &x, 1, &a);
    rg_op(&r, "Conv", 1, &a, 1, &b);
    int32_t ab[3] = {a, b, d};
    rg_op(&r, "Concat", 2, ab, 1, &c);
    rg_op(&r, "Relu", 1, &c, 1, &rl);
    rg_op(&r, "Conv", 1, &rl, 1, &d);
    rg_op(&r, "Concat", 3, ab, 1, &e);
    bp_graph_mark(r.g, e, BP_TENSOR_OUTPUT, &r.err);
    REQUIRE(bp_graph_finalize(r.g, &r.err) == BP_OK);
    int32_t order[6] = {0, 1, 2, 3, 4, 5};
    bp_concat_bound_info fl;
    CHECK_OK(bp_concat_bound(r.g, NULL, order, &fl, &r.err), r.err);
    CHECK_MSG(fl.bytes == 320 && fl.step == 4 && fl.during == 1 && fl.op == 4 && fl.n_live == 4,
              "block: floor %llu at step %d (during %d, %d live), expected 320 during step 4 with 4 live", (unsigned long long)fl.bytes,
              fl.step, fl.during, fl.n_live);
    bp_graph_free(r.g);
}

int main(void)
{
    bp_error err;
    unsigned long long s = 20261202;
    floor_by_hand();
    int n_merged = 0, n_nested = 0, n_mut = 0, n_exec = 0, n_lower = 0, n_floor_tight = 0;
    for (int gi = 0; gi < N_GRAPHS; gi++) {
        bp_graph *g = rg_build(test_rand(&s));
        bp_plan_options on, off;
        bp_plan_options_init(&on);
        on.concat_inplace = 1;
        on.sched = gi % 2 ? BP_SCHED_KAHN : BP_SCHED_DFS;
        on.alignment = gi % 3 ? 16 : 64;
        off = on;
        off.concat_inplace = 0;
        int32_t *order = malloc(sizeof *order * (size_t)(bp_graph_n_ops(g) + 1));
        REQUIRE(order);
        CHECK_OK(bp_schedule(g, &on, order, &err), err);
        bp_plan *p = NULL, *best = NULL, *base = NULL;
        CHECK_OK(bp_plan_graph_order(g, &on, order, &p, &err), err);
        CHECK_OK(bp_plan_graph(g, &on, &best, &err), err);
        CHECK_OK(bp_plan_graph(g, &off, &base, &err), err);
        REQUIRE(p && best && base);
        {   /* the floor, against both plans for this order */
            bp_plan *po = NULL;
            bp_concat_bound_info fl;
            CHECK_OK(bp_plan_graph_order(g, &off, order, &po, &err), err);
            CHECK_OK(bp_concat_bound(g, &on, order, &fl, &err), err);
            uint64_t big = 0;
            for (int32_t u = 0; u < bp_graph_n_tensors(g); u++) {   /* its own storage, read later: one atom, live after its step */
                int32_t pr = bp_graph_tensor_producer(g, u);
                const int32_t *cs;
                if (pr < 0 || bp_plan_tensor(po, u)->offset == BP_NO_OFFSET || bp_plan_tensor(po, u)->alias_of >= 0 ||
                    !strcmp(bp_graph_op_type(g, pr), "Split") || !strcmp(bp_graph_op_type(g, pr), "Concat") || !bp_graph_tensor_consumers(g, u, &cs))
                    continue;
                if (bp_graph_tensor_bytes(g, u) > big) big = bp_graph_tensor_bytes(g, u);
            }
            CHECK_MSG(fl.bytes <= p->stats.arena_bytes && fl.bytes <= po->stats.arena_bytes, "graph %d: floor %llu above an arena (%llu merged, %llu not)",
                      gi, (unsigned long long)fl.bytes, (unsigned long long)p->stats.arena_bytes, (unsigned long long)po->stats.arena_bytes);
            CHECK_MSG(fl.bytes >= big && fl.op == order[fl.step], "graph %d: floor %llu below the largest tensor %llu", gi,
                      (unsigned long long)fl.bytes, (unsigned long long)big);
            n_floor_tight += fl.bytes == po->stats.arena_bytes;
            bp_plan_free(po);
            if (gi == 0 && bp_graph_n_ops(g) > 1) {
                int32_t keep = order[1];
                order[1] = order[0];
                CHECK(bp_concat_bound(g, &on, order, &fl, &err) == BP_ERR_USAGE && strstr(err.msg, "no permutation"));
                order[1] = keep;
            }
        }
        bp_status vs = bp_verify(g, p, &err);
        if (getenv("BP_TEST_DUMP") && atoi(getenv("BP_TEST_DUMP")) == gi) {   /* debugging aid: the graph and its plan */
            bp_graph_write_json(g, "concat_graph.json", NULL);
            bp_plan_write_json(p, g, "concat_plan.json", NULL);
        }
        CHECK_MSG(vs == BP_OK, "graph %d: %s", gi, err.msg);
        CHECK_OK(bp_verify(g, best, &err), err);
        CHECK_MSG(best->stats.arena_bytes <= base->stats.arena_bytes, "graph %d: %llu > %llu", gi,
                  (unsigned long long)best->stats.arena_bytes, (unsigned long long)base->stats.arena_bytes);
        n_lower += best->stats.arena_bytes < base->stats.arena_bytes;
        int32_t t = find_slice(g, p, &s, false);
        if (t >= 0) {
            n_merged++;
            /* another slice of the same storage, for "onto another slice" */
            int32_t other = -1, far = -1;
            for (int32_t u = 0; u < bp_plan_n_tensors(p); u++) {
                const bp_tensor_plan *up = bp_plan_tensor(p, u);
                if (u != t && up->alias_of == p->tp[t].alias_of && up->view_offset != p->tp[t].view_offset &&
                    bp_graph_tensor_producer(g, u) >= 0 && strcmp(bp_graph_op_type(g, bp_graph_tensor_producer(g, u)), "Concat") &&
                    strcmp(bp_graph_op_type(g, bp_graph_tensor_producer(g, u)), "Split") && bp_graph_tensor_view_of(g, u) < 0)
                    other = u;
                if (up->alias_of < 0 && up->offset != BP_NO_OFFSET && u != p->tp[t].alias_of && far < 0) far = u;
            }
            CHECK_MSG(mutate_rejected(g, p, t, 0, -1), "graph %d: slice \"%s\" moved by one channel was accepted", gi, bp_graph_tensor_name(g, t));
            CHECK_MSG(mutate_rejected(g, p, t, 2, -1), "graph %d: slice \"%s\" past its storage was accepted", gi, bp_graph_tensor_name(g, t));
            n_mut += 2;
            if (other >= 0) {
                CHECK_MSG(mutate_rejected(g, p, t, 1, other), "graph %d: slice \"%s\" onto \"%s\" was accepted", gi,
                          bp_graph_tensor_name(g, t), bp_graph_tensor_name(g, other));
                n_mut++;
            }
            if (far >= 0) {
                CHECK_MSG(mutate_rejected(g, p, t, 3, far), "graph %d: slice \"%s\" claimed by \"%s\" was accepted", gi,
                          bp_graph_tensor_name(g, t), bp_graph_tensor_name(g, far));
                n_mut++;
            }
            /* nested: a Concat output that is itself a slice */
            for (int32_t u = 0; u < bp_plan_n_tensors(p); u++) {
                int32_t pr = bp_graph_tensor_producer(g, u);
                if (pr >= 0 && !strcmp(bp_graph_op_type(g, pr), "Concat") && bp_plan_tensor(p, u)->alias_of >= 0) { n_nested++; break; }
            }
        }
        if (gi % 8 == 0) {
            for (int th = 1; th <= 4; th *= 2) {
                bp_exec_options eo;
                bp_exec_options_init(&eo);
                eo.threads = th;
                bp_status es = bp_exec_verify(g, p, &eo, (uint64_t)gi, NULL, &err);
                CHECK_MSG(es == BP_OK, "graph %d, %d threads: %s", gi, th, err.msg);
            }
            n_exec++;
        }
        bp_plan_free(p);
        bp_plan_free(best);
        bp_plan_free(base);
        free(order);
        bp_graph_free(g);
    }
    printf("concat in place: %d graphs, %d with slices (%d nested), %d mutations rejected, %d run on 1/2/4 threads, %d with a smaller arena, %d floors equal to the unmerged arena\n",
           N_GRAPHS, n_merged, n_nested, n_mut, n_exec, n_lower, n_floor_tight);
    CHECK(n_merged > N_GRAPHS / 4);
    CHECK(n_nested > 10);
    CHECK(n_lower > 10);
    return check_status();
}
