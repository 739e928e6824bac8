/* Builds a random DAG from the fuzz bytes with the builder API (sizes,
 * fan-in, views, in-place hints, roles, symbolic dims, now and then a
 * budget) and checks that every scheduler x assigner pair either plans it
 * with a plan bp_verify accepts or fails cleanly (budget / limit / timeout).
 * Exact searches run only on small graphs, with a tiny time limit. */
#define _GNU_SOURCE
#include "fuzz_common.h"
#include <stdbool.h>

#define FZ_MAX_OPS 48

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_bytes b = {data, size};
    bp_error err = {0};
    bp_graph *g = bp_graph_new("fuzz", NULL);
    if (!g) return 0;
    int n_in = 1 + (int)(fz_u8(&b) % 3);
    int n_ops = 1 + (int)(fz_u8(&b) % FZ_MAX_OPS);
    int32_t ids[FZ_MAX_OPS * 3 + 8];
    int nt = 0;
    char name[32];
    for (int i = 0; i < n_in; i++) {
        snprintf(name, sizeof name, "in%d", i);
        if (bp_graph_add_tensor(g, name, 1 + fz_u16(&b), &ids[nt], &err)) abort();
        bp_graph_mark(g, ids[nt], (fz_u8(&b) & 1) ? BP_TENSOR_WEIGHT : BP_TENSOR_INPUT, &err);
        nt++;
    }
    static const char *const types[] = {"Conv", "Relu", "Add", "Reshape", "MatMul", "Concat", "Identity", "Mul"};
    for (int o = 0; o < n_ops; o++) {
        unsigned c = fz_u8(&b);
        int n_i = 1 + (int)(c & 3), n_o = 1 + (int)((c >> 2) & 1);
        int32_t in[4], out[2];
        for (int i = 0; i < n_i; i++) in[i] = ids[fz_u8(&b) % (unsigned)nt];
        for (int i = 0; i < n_o; i++) {
            snprintf(name, sizeof name, "t%d", nt);
            unsigned kind = fz_u8(&b);
            if (kind % 11 == 0) {           /* a shaped tensor, maybe symbolic */
                /* views may be symbolic too: a symbolic view of a planned
                 * tensor shares its root's bytes (tests/regress/fuzz_random_graph/dynamic-view.bin) */
                bool sym = (kind & 0x10) != 0;
                int64_t dims[2] = {1 + fz_u8(&b), sym ? BP_DIM_SYMBOLIC : 1 + fz_u8(&b)};
                const char *syms[2] = {NULL, "S"};
                if (bp_graph_add_tensor_shape(g, name, BP_DT_F32, 2, dims, syms, &out[i], &err)) abort();
            } else {
                uint64_t bytes = (kind % 7 == 0) ? 0 : (uint64_t)fz_u16(&b) * (1u + (kind & 3));
                if (bp_graph_add_tensor(g, name, bytes, &out[i], &err)) abort();
            }
            ids[nt++] = out[i];
        }
        snprintf(name, sizeof name, "op%d", o);
        int32_t op;
        if (bp_graph_add_op(g, name, types[c >> 5], n_i, in, n_o, out, (double)(fz_u8(&b) % 5), &op, &err)) {
            /* duplicate input lists are allowed; anything else is a harness bug */
            abort();
        }
        unsigned h = fz_u8(&b);
        if (h % 9 == 0) bp_graph_set_inplace(g, op, out[0], in[0], &err);
        if (h % 13 == 1 && bp_graph_tensor_view_of(g, in[0]) < 0)
            bp_graph_set_view(g, out[0], in[0], &err);
        if (h % 5 == 2) bp_graph_mark(g, out[n_o - 1], BP_TENSOR_OUTPUT, &err);
    }
    if (fz_u8(&b) & 1) bp_graph_bind_dim(g, "S", fz_u8(&b), &err);
    if (bp_graph_finalize(g, &err) != BP_OK) { bp_graph_free(g); return 0; }

    unsigned flags = fz_u8(&b);
    for (int sk = 0; sk < BP_SCHED_COUNT; sk++) {
        if ((sk == BP_SCHED_OPTIMAL || sk == BP_SCHED_BEST) && n_ops > 16) continue;
        for (int ak = 0; ak < BP_ASSIGN_COUNT; ak++) {
            bp_plan_options o;
            bp_plan_options_init(&o);
            o.sched = (bp_sched_kind)sk;
            o.assign = (bp_assign_kind)ak;
            o.time_limit = 0.01;
            o.no_alias = flags & 1;
            o.plan_inputs = (flags >> 1) & 1;
            o.fence_aware = (flags >> 2) & 1;
            o.alignment = (flags & 8) ? 1 : (flags & 16) ? 64 : 256;
            if ((flags & 0xe0) == 0xe0) o.budget = 1 + fz_u16(&b) * 64ull;
            bp_plan *p = NULL;
            bp_status s = bp_plan_graph(g, &o, &p, &err);
            if (s == BP_ERR_BUDGET || s == BP_ERR_TIMEOUT || s == BP_ERR_LIMIT) continue;
            char what[1200];
            snprintf(what, sizeof what, "%s/%s: %s", bp_sched_name(o.sched), bp_assign_name(o.assign), err.msg);
            FZ_ASSERT(s == BP_OK, what);
            s = bp_verify(g, p, &err);
            snprintf(what, sizeof what, "%s/%s: %s", bp_sched_name(o.sched), bp_assign_name(o.assign), err.msg);
            FZ_ASSERT(s == BP_OK, what);
            if (o.budget) FZ_ASSERT(bp_plan_get_stats(p)->arena_bytes <= o.budget, "a plan over its budget");
            bp_plan_free(p);
        }
    }
    bp_graph_free(g);
    return 0;
}
