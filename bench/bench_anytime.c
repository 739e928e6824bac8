#define _POSIX_C_SOURCE 200809L
/*
 * bench_anytime — `best` as an anytime search against `optimal` at the same
 * time limits.
 *   Graphs: random layered DAGs (--layered N of them, 500 ops each: 25 layers
 *   of 20 ops, each op reading 1-3 outputs of the layer before and sometimes
 *   one of the 2-4 layers before that, outputs of 4 KiB to 256 KiB, the last
 *   layer's outputs pinned), every bufplan-graph JSON given with --graphs, and
 *   every ONNX model in --onnx DIR (the symbol N bound to 1).  For each graph
 *   and each limit of --limits (seconds, comma-separated; 10 is the default
 *   limit, so best gets its default budget there), bp_schedule_ex with
 *   --sched best, optimal or both (default): one CSV row with the order's
 *   peak, whether it is proven optimal, the wall seconds and the method
 *   `best` picked.  Uses only the public API, so the same source built
 *   against an earlier library measures that library's `best`
 *   (bench/suites/anytime.sh does so).
 * usage: bench_anytime [--layered N] [--graphs F...] [--onnx DIR] [--limits 1,10] [--sched best|optimal|both]
 *                      [--only NAME]
 */
#include <bufplan.h>
#include "onnxdir.h"
#include <bufplan_sched.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double limits[8] = {1, 10};
static int nlimits = 2, want_best = 1, want_opt = 1;

/* Schedules g with k at limit tl and prints one row. */
static void row_one(const char *name, const bp_graph *g, bp_sched_kind k, double tl)
{
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.sched = k;
    po.time_limit = tl;
    int32_t n = bp_graph_n_ops(g);
    int32_t *order = malloc(((size_t)n + 1) * sizeof *order);
    bp_schedule_info info;
    bp_error err;
    if (!order || bp_schedule_ex(g, &po, order, &info, &err)) {
        fprintf(stderr, "%s: %s\n", name, order ? err.msg : "out of memory");
        free(order);
        return;
    }
    printf("%s,%d,%s,%g,%llu,%d,%.3f,%s\n", name, (int)n, bp_sched_name(k), tl, (unsigned long long)info.peak_bytes,
           info.optimal, info.seconds, info.picked ? info.picked : "");
    fflush(stdout);
    free(order);
}

static void rows(const char *name, const bp_graph *g)
{
    for (int i = 0; i < nlimits; i++) {
        if (want_best) row_one(name, g, BP_SCHED_BEST, limits[i]);
        if (want_opt) row_one(name, g, BP_SCHED_OPTIMAL, limits[i]);
    }
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A random layered DAG of L layers of w ops (see the header); NULL on error. */
static bp_graph *layered(uint64_t seed, int L, int w)
{
    char name[64];
    snprintf(name, sizeof name, "layered%llu", (unsigned long long)seed);
    bp_graph *g = bp_graph_new(name, NULL);
    int32_t *t = malloc((size_t)L * (size_t)w * sizeof *t), in = -1;
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    bp_error err;
    int bad = !g || !t || bp_graph_add_tensor(g, "x", 65536, &in, &err) || bp_graph_mark(g, in, BP_TENSOR_INPUT, &err);
    for (int l = 0; l < L && !bad; l++)
        for (int j = 0; j < w && !bad; j++) {
            char tn[32], on[32];
            snprintf(tn, sizeof tn, "t%d_%d", l, j);
            snprintf(on, sizeof on, "op%d_%d", l, j);
            int32_t ins[4], nin = 0, out;
            if (l == 0) ins[nin++] = in;
            else {
                int k = 1 + (int)(rnd(&s) % 3);
                for (int q = 0; q < k; q++) {
                    int32_t c = t[(l - 1) * w + (int)(rnd(&s) % (uint64_t)w)];
                    int dup = 0;
                    for (int r = 0; r < nin; r++) dup |= ins[r] == c;
                    if (!dup) ins[nin++] = c;
                }
                if (l >= 2 && rnd(&s) % 10 < 3) {
                    int back = 2 + (int)(rnd(&s) % 3);
                    if (back > l) back = l;
                    ins[nin++] = t[(l - back) * w + (int)(rnd(&s) % (uint64_t)w)];
                }
            }
            uint64_t bytes = (1 + rnd(&s) % 64) * 4096;
            bad = bp_graph_add_tensor(g, tn, bytes, &out, &err) ||
                  bp_graph_add_op(g, on, "op", nin, ins, 1, &out, 0, NULL, &err) ||
                  (l == L - 1 && bp_graph_mark(g, out, BP_TENSOR_OUTPUT, &err));
            if (!bad) t[l * w + j] = out;
        }
    if (!bad) bad = bp_graph_finalize(g, &err) != BP_OK;
    free(t);
    if (bad) {
        if (g) fprintf(stderr, "%s: %s\n", name, err.msg);
        bp_graph_free(g);
        return NULL;
    }
    return g;
}

/* Reads path (N bound to 1 where the graph has it) and prints its rows. */
static void file_rows(const char *path, const char *name)
{
    bp_graph *g = NULL;
    bp_error err;
    bp_status rs = bp_graph_read(path, NULL, &g, &err);
    if (!rs && bp_graph_bind_dim(g, "N", 1, &err)) rs = BP_OK; /* no symbol N: nothing to bind */
    if (!rs) rs = bp_graph_finalize(g, &err);
    if (rs) fprintf(stderr, "skipping %s: %s\n", path, err.msg);
    else rows(name, g);
    bp_graph_free(g);
}

static void onnx_rows(const char *dir, const char *only)
{
    char *names[256];
    int n = onnxdir_list(dir, only, names, 256);
    for (int i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        file_rows(path, names[i]);
        free(names[i]);
    }
}

int main(int argc, char **argv)
{
    const char *onnx = NULL, *only = NULL;
    int nlay = 0, g0 = 0, g1 = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--onnx") && i + 1 < argc) onnx = argv[++i];
        else if (!strcmp(argv[i], "--layered") && i + 1 < argc) nlay = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--limits") && i + 1 < argc) {
            char *p = argv[++i];
            nlimits = 0;
            while (*p && nlimits < 8) {
                limits[nlimits++] = strtod(p, &p);
                if (*p == ',') p++;
                else break;
            }
        } else if (!strcmp(argv[i], "--sched") && i + 1 < argc) {
            const char *s = argv[++i];
            want_best = strcmp(s, "optimal") != 0;
            want_opt = strcmp(s, "best") != 0;
        } else if (!strcmp(argv[i], "--graphs")) {
            g0 = i + 1;
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2)) i++;
            g1 = i + 1;
        } else {
            fprintf(stderr, "usage: bench_anytime [--layered N] [--graphs F...] [--onnx DIR] [--limits 1,10] "
                            "[--sched best|optimal|both] [--only NAME]\n");
            return 2;
        }
    }
    printf("graph,ops,sched,limit_s,peak,proven,seconds,picked\n");
    for (int k = 1; k <= nlay; k++) {
        bp_graph *g = layered((uint64_t)k, 25, 20);
        if (g && (!only || strstr(bp_graph_name(g), only))) rows(bp_graph_name(g), g);
        bp_graph_free(g);
    }
    for (int i = g0; i < g1; i++) {
        const char *b = strrchr(argv[i], '/');
        if (!only || strstr(argv[i], only)) file_rows(argv[i], b ? b + 1 : argv[i]);
    }
    if (onnx) onnx_rows(onnx, only);
    return 0;
}
