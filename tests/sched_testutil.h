/* Random graphs for the scheduler tests: ops with 1-3 inputs and 1-2
 * outputs, sizes from a small set (so ties happen), view op types, explicit
 * views (well-formed or not), in-place hints, element-wise ops, outputs,
 * inputs and weights. */
#ifndef BP_SCHED_TESTUTIL_H
#define BP_SCHED_TESTUTIL_H
#include "check.h"
#include <bufplan.h>
#include "bufplan_sched.h"

typedef struct rg_opts {
    int n_ops;
    int wild_views;   /* explicit views between unrelated tensors */
    int same_sizes;   /* views and in-place keep sizes (no slices) */
} rg_opts;

/* Random planner options that change the step model: alignment, aliasing
 * off, planned graph inputs and constants. */
static inline void sched_random_opts(unsigned long long *rs, bp_plan_options *po)
{
    bp_plan_options_init(po);
    po->alignment = (test_rand(rs) % 2) ? 256 : 1;
    po->no_alias = test_rand(rs) % 5 == 0;
    po->plan_inputs = test_rand(rs) % 3 == 0;
    po->plan_constants = test_rand(rs) % 4 == 0;
}

static inline bp_graph *rg_make(unsigned long long *rs, const rg_opts *ro)
{
    static const uint64_t sizes[] = {0, 64, 256, 300, 1000, 1024, 4096, 5000};
    static const char *const types[] = {"Conv", "Add", "Relu", "Reshape", "Concat", "Mul", "aten.slice", "MatMul", "Sigmoid"};
    bp_error err;
    bp_graph *g = bp_graph_new("rand", NULL);
    REQUIRE(g);
    int32_t tens[256];
    int nt = 0;
    char name[32];
    int n_ext = 1 + (int)(test_rand(rs) % 3);
    for (int i = 0; i < n_ext; i++) {
        int32_t id;
        snprintf(name, sizeof name, "x%d", i);
        CHECK_OK(bp_graph_add_tensor(g, name, sizes[1 + test_rand(rs) % 7], &id, &err), err);
        CHECK_OK(bp_graph_mark(g, id, (test_rand(rs) % 3) ? BP_TENSOR_INPUT : BP_TENSOR_WEIGHT, &err), err);
        tens[nt++] = id;
    }
    for (int k = 0; k < ro->n_ops && nt < 250; k++) {
        const char *type = types[test_rand(rs) % (sizeof types / sizeof types[0])];
        int nin = 1 + (int)(test_rand(rs) % 3), nout = 1 + (test_rand(rs) % 4 == 0);
        int32_t ins[3], outs[2];
        for (int i = 0; i < nin; i++) {
            /* prefer recent tensors: chains and branches */
            int back = (int)(test_rand(rs) % (nt < 6 ? nt : 6));
            ins[i] = (test_rand(rs) % 3) ? tens[nt - 1 - back] : tens[test_rand(rs) % nt];
        }
        uint64_t in_bytes = bp_graph_tensor_bytes(g, ins[0]);
        for (int i = 0; i < nout; i++) {
            int32_t id;
            uint64_t b = sizes[test_rand(rs) % 8];
            if (i == 0 && (test_rand(rs) % 2)) b = in_bytes; /* same size as input 0: in-place candidates */
            if (i == 0 && ro->same_sizes && !strcmp(type, "Reshape")) b = in_bytes;
            if (i == 0 && !ro->same_sizes && !strcmp(type, "aten.slice") && in_bytes) b = in_bytes / 2;
            if (i == 0 && (!strcmp(type, "Reshape") || !strcmp(type, "aten.slice")) && b > in_bytes) b = in_bytes; /* a view fits its root */
            snprintf(name, sizeof name, "t%d_%d", k, i);
            CHECK_OK(bp_graph_add_tensor(g, name, b, &id, &err), err);
            outs[i] = id;
        }
        int32_t op;
        snprintf(name, sizeof name, "op%d", k);
        double cost = (test_rand(rs) % 2) ? (double)(1 + test_rand(rs) % 5) : 0;
        CHECK_OK(bp_graph_add_op(g, name, type, nin, ins, nout, outs, cost, &op, &err), err);
        if (test_rand(rs) % 8 == 0) {
            /* explicit view: of an input of this op (well-formed) or of anything */
            int32_t src = ro->wild_views ? tens[test_rand(rs) % nt] : ins[test_rand(rs) % nin];
            if (ro->same_sizes && bp_graph_tensor_bytes(g, src) != bp_graph_tensor_bytes(g, outs[0])) src = -1;
            if (src >= 0 && bp_graph_tensor_bytes(g, src) < bp_graph_tensor_bytes(g, outs[0])) src = -1; /* no view larger than its root */
            if (src >= 0) CHECK_OK(bp_graph_set_view(g, outs[0], src, &err), err);
        }
        if (test_rand(rs) % 6 == 0) {
            int32_t in = ins[test_rand(rs) % nin];
            if (!ro->same_sizes || bp_graph_tensor_bytes(g, in) == bp_graph_tensor_bytes(g, outs[0]))
                CHECK_OK(bp_graph_set_inplace(g, op, outs[0], in, &err), err);
        }
        for (int i = 0; i < nout; i++) tens[nt++] = outs[i];
    }
    /* outputs: the last tensor and a few random ones */
    CHECK_OK(bp_graph_mark(g, tens[nt - 1], BP_TENSOR_OUTPUT, &err), err);
    for (int i = 0; i < nt / 8; i++)
        if (test_rand(rs) % 2) CHECK_OK(bp_graph_mark(g, tens[n_ext + test_rand(rs) % (nt - n_ext)], BP_TENSOR_OUTPUT, &err), err);
    bp_status s = bp_graph_finalize(g, &err);
    if (s) { bp_graph_free(g); return NULL; }
    return g;
}

/* A random topological order (random choice among ready ops). */
static inline void rg_random_order(const bp_graph *g, unsigned long long *rs, int32_t *order)
{
    int32_t n = bp_graph_n_ops(g);
    int32_t *indeg = calloc((size_t)n + 1, sizeof *indeg), *ready = calloc((size_t)n + 1, sizeof *ready);
    REQUIRE(indeg && ready);
    for (int32_t v = 0; v < n; v++)
        for (int i = 0; i < bp_graph_op_n_inputs(g, v); i++)
            if (bp_graph_tensor_producer(g, bp_graph_op_input(g, v, i)) >= 0) indeg[v]++;
    int32_t nr = 0, k = 0;
    for (int32_t v = 0; v < n; v++) if (!indeg[v]) ready[nr++] = v;
    while (nr) {
        int32_t j = (int32_t)(test_rand(rs) % (unsigned long long)nr), v = ready[j];
        ready[j] = ready[--nr];
        order[k++] = v;
        for (int o = 0; o < bp_graph_op_n_outputs(g, v); o++) {
            const int32_t *cons;
            int32_t nc = bp_graph_tensor_consumers(g, bp_graph_op_output(g, v, o), &cons);
            for (int32_t c = 0; c < nc; c++)
                if (--indeg[cons[c]] == 0) ready[nr++] = cons[c];
        }
    }
    REQUIRE(k == n);
    free(indeg);
    free(ready);
}

static inline int rg_is_topological(const bp_graph *g, const int32_t *order)
{
    int32_t n = bp_graph_n_ops(g);
    int32_t *pos = malloc(((size_t)n + 1) * sizeof *pos);
    REQUIRE(pos);
    for (int32_t i = 0; i < n; i++) pos[i] = -1;
    int ok = 1;
    for (int32_t i = 0; i < n && ok; i++) {
        if (order[i] < 0 || order[i] >= n || pos[order[i]] >= 0) ok = 0;
        else pos[order[i]] = i;
    }
    for (int32_t v = 0; v < n && ok; v++)
        for (int i = 0; i < bp_graph_op_n_inputs(g, v); i++) {
            int32_t p = bp_graph_tensor_producer(g, bp_graph_op_input(g, v, i));
            if (p >= 0 && pos[p] > pos[v]) ok = 0;
        }
    free(pos);
    return ok;
}
#endif
