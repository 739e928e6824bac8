/* Fuzzes the JSON graph reader (bp_graph_parse_json_lim); a graph that
 * loads is written back, read again (same counts) and planned + verified. */
#define _GNU_SOURCE
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bp_limits lim;
    fz_limits(&lim);
    bp_graph *g = NULL;
    bp_error err = {0};
    if (bp_graph_parse_json_lim((const char *)data, size, "fuzz.json", &lim, NULL, &g, &err) != BP_OK) {
        FZ_ASSERT(g == NULL, "a failed read returned a graph");
        FZ_ASSERT(err.msg[0] != 0, "an error without a message");
        return 0;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f) {
        bp_status s = bp_graph_write_json_file(g, f, &err);
        fclose(f);
        FZ_ASSERT(s == BP_OK, err.msg);
        bp_graph *h = NULL;
        s = bp_graph_parse_json_lim(buf, len, "roundtrip.json", &lim, NULL, &h, &err);
        FZ_ASSERT(s == BP_OK, err.msg);
        FZ_ASSERT(bp_graph_n_ops(h) == bp_graph_n_ops(g) && bp_graph_n_tensors(h) == bp_graph_n_tensors(g), "round trip changed the graph");
        bp_graph_free(h);
        free(buf);
    }
    fz_plan_verify(g, BP_SCHED_KAHN, BP_ASSIGN_BESTFIT);
    bp_graph_free(g);
    return 0;
}
