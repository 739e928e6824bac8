/* Fuzzes the plan reader and the verifier.  Input: GRAPH.json NUL PLAN.json
 * (seeds are made that way by fuzz/run.sh), or, without a NUL, a plan for a
 * fixed generated graph.  Whatever plan loads goes through bp_verify; a plan
 * the verifier accepts must also pass a second, brute-force check here
 * (no two planned tensors live at one step overlap in bytes, all inside the
 * arena), so a verifier that accepts a wrong plan is caught. */
#define _GNU_SOURCE
#include "fuzz_common.h"

static void fz_brute_check(const bp_graph *g, const bp_plan *p)
{
    int32_t nt = bp_graph_n_tensors(g);
    if (nt > 3000) return;
    uint64_t arena = bp_plan_get_stats(p)->arena_bytes;
    for (int32_t a = 0; a < nt; a++) {
        const bp_tensor_plan *x = bp_plan_tensor(p, a);
        if (x->offset == BP_NO_OFFSET || x->first < 0) continue;
        FZ_ASSERT(x->offset <= arena && x->bytes <= arena - x->offset, "verifier accepted a tensor outside the arena");
        for (int32_t b = a + 1; b < nt; b++) {
            const bp_tensor_plan *y = bp_plan_tensor(p, b);
            if (y->offset == BP_NO_OFFSET || y->first < 0) continue;
            if (x->last < y->first || y->last < x->first) continue;          /* not live together */
            if (!x->bytes || !y->bytes) continue;
            if (x->offset + x->bytes <= y->offset || y->offset + y->bytes <= x->offset) continue;
            /* overlapping bytes at a common step: only members of one alias group may */
            int32_t ra = a, rb = b;
            for (int k = 0; k < nt && bp_plan_tensor(p, ra)->alias_of >= 0; k++) ra = bp_plan_tensor(p, ra)->alias_of;
            for (int k = 0; k < nt && bp_plan_tensor(p, rb)->alias_of >= 0; k++) rb = bp_plan_tensor(p, rb)->alias_of;
            FZ_ASSERT(ra == rb, "verifier accepted two live tensors that overlap");
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bp_limits lim;
    fz_limits(&lim);
    bp_error err = {0};
    bp_graph *g = NULL;
    const uint8_t *nul = memchr(data, 0, size);
    const char *plan = (const char *)data;
    size_t plan_len = size;
    if (nul) {
        if (bp_graph_parse_json_lim((const char *)data, (size_t)(nul - data), "fuzz.json", &lim, NULL, &g, &err)) return 0;
        plan = (const char *)nul + 1;
        plan_len = size - (size_t)(nul - data) - 1;
    } else {
        bp_gen_options go;
        bp_gen_options_init(&go);
        go.seed = 1;
        go.nodes = 12;
        if (bp_gen("diamond", &go, NULL, &g, &err)) abort();
    }
    bp_plan *p = NULL;
    if (bp_plan_parse_json(g, plan, plan_len, "fuzz-plan.json", &p, &err) == BP_OK) {
        if (bp_verify(g, p, &err) == BP_OK) fz_brute_check(g, p);
        else FZ_ASSERT(err.msg[0] != 0, "verification failed without a reason");
        bp_plan_free(p);
    } else {
        FZ_ASSERT(p == NULL, "a failed read returned a plan");
    }
    bp_graph_free(g);
    return 0;
}
