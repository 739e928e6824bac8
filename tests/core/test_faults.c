/* Allocation-failure injection through the public API: a bp_allocator that
 * fails its k-th allocation, for every k a pipeline reaches (read a graph
 * -> finalize -> plan with several strategies -> verify -> write the plan ->
 * read it back -> verify; ONNX import; MiniMalloc CSV; generators; each
 * interval assigner called with the allocator in bp_assign_options: naive
 * and color, bestfit's time-order pass (past its first node pool) and
 * size-ordered runs and canonical greedy, search's incumbent phase, model
 * and frame stack).  At
 * each k the pipeline must stop with BP_ERR_NOMEM (never another status,
 * never a crash) and, once everything is freed, the allocator must hold no
 * bytes: every allocation freed once, with the size it was made with.
 * (LeakSanitizer would also see a leak; the ledger here also catches frees
 * through the wrong allocator or with a wrong size.) */
#define _GNU_SOURCE
#include <bufplan.h>
#include <bufplan_limits.h>
#include "check.h"
#include "assign/assign_internal.h"

#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct fa {
    unsigned long calls, fail_at;   /* fail the fail_at-th call (1-based); 0 = never */
    unsigned long failed;           /* 1 once the fault was injected */
    long live_blocks;
    long long live_bytes;
    int bad_free;
} fa;

typedef struct fa_hdr { size_t size; uint64_t magic; } fa_hdr;
#define FA_MAGIC UINT64_C(0xfa17fa17fa17fa17)

static bool fa_fail(fa *f)
{
    f->calls++;
    if (f->fail_at && f->calls == f->fail_at) { f->failed = 1; return true; }
    return false;
}

static void *fa_alloc(void *ctx, size_t n)
{
    fa *f = ctx;
    if (fa_fail(f) || n > SIZE_MAX - sizeof(fa_hdr)) return NULL;
    fa_hdr *h = malloc(sizeof *h + n);
    if (!h) return NULL;
    h->size = n;
    h->magic = FA_MAGIC;
    f->live_blocks++;
    f->live_bytes += (long long)n;
    return h + 1;
}

static void fa_free(void *ctx, void *p, size_t n)
{
    fa *f = ctx;
    if (!p) return;
    fa_hdr *h = (fa_hdr *)p - 1;
    if (h->magic != FA_MAGIC || h->size != n) {
        if (!f->bad_free) fprintf(stderr, "test_faults: free of %zu bytes, allocated %zu (magic %s)\n", n, h->size,
                                  h->magic == FA_MAGIC ? "ok" : "BAD");
        f->bad_free = 1;
    }
    h->magic = 0;
    f->live_blocks--;
    f->live_bytes -= (long long)h->size;
    free(h);
}

static void *fa_realloc(void *ctx, void *p, size_t o, size_t n)
{
    fa *f = ctx;
    if (fa_fail(f) || n > SIZE_MAX - sizeof(fa_hdr)) return NULL;
    fa_hdr *h = (fa_hdr *)p - 1;
    if (h->magic != FA_MAGIC || h->size != o) {
        if (!f->bad_free) fprintf(stderr, "test_faults: realloc from %zu bytes, allocated %zu\n", o, h->size);
        f->bad_free = 1;
    }
    fa_hdr *q = realloc(h, sizeof *q + n);
    if (!q) return NULL;
    f->live_bytes += (long long)n - (long long)q->size;
    q->size = n;
    return q + 1;
}

/* A pipeline returns the first status that is not BP_OK (or BP_OK). */
typedef bp_status (*pipeline)(const bp_allocator *a, bp_error *err);

static const char graph_text[] =
    "{\"format\": \"bufplan-graph\", \"version\": 1, \"name\": \"f\",\n"
    " \"tensors\": [{\"name\": \"x\", \"shape\": [1, 8], \"dtype\": \"f32\"}, {\"name\": \"w\", \"bytes\": 64},\n"
    "  {\"name\": \"a\", \"shape\": [\"N\", 8], \"dtype\": \"f32\"}, {\"name\": \"b\", \"bytes\": 32},\n"
    "  {\"name\": \"c\", \"bytes\": 32, \"view_of\": \"b\"}, {\"name\": \"d\", \"bytes\": 32}, {\"name\": \"e\", \"bytes\": 96}],\n"
    " \"ops\": [{\"name\": \"mm\", \"type\": \"MatMul\", \"inputs\": [\"x\", \"w\"], \"outputs\": [\"b\"], \"cost\": 2},\n"
    "  {\"name\": \"dyn\", \"type\": \"Shape\", \"inputs\": [\"x\"], \"outputs\": [\"a\"]},\n"
    "  {\"name\": \"v\", \"type\": \"Reshape\", \"inputs\": [\"b\"], \"outputs\": [\"c\"]},\n"
    "  {\"name\": \"r\", \"type\": \"Relu\", \"inputs\": [\"c\"], \"outputs\": [\"d\"], \"inplace\": {\"d\": \"c\"}},\n"
    "  {\"name\": \"cat\", \"type\": \"Concat\", \"inputs\": [\"d\", \"a\", \"x\"], \"outputs\": [\"e\"]}],\n"
    " \"inputs\": [\"x\"], \"weights\": [\"w\"], \"outputs\": [\"e\"]}\n";

static bp_status pl_graph(const bp_allocator *a, bp_error *err)
{
    bp_graph *g = NULL;
    bp_status s = bp_graph_parse_json(graph_text, strlen(graph_text), "f.json", a, &g, err);
    if (s) return s;
    static const bp_sched_kind sk[] = {BP_SCHED_KAHN, BP_SCHED_DFS, BP_SCHED_SEED, BP_SCHED_BEST, BP_SCHED_LIST};
    static const bp_assign_kind ak[] = {BP_ASSIGN_BESTFIT, BP_ASSIGN_COLOR, BP_ASSIGN_NAIVE, BP_ASSIGN_SEARCH, BP_ASSIGN_BESTFIT};
    for (size_t i = 0; i < sizeof sk / sizeof sk[0] && !s; i++) {
        bp_plan_options o;
        bp_plan_options_init(&o);
        o.sched = sk[i];
        o.assign = ak[i];
        o.time_limit = 0.5;
        bp_plan *p = NULL;
        s = bp_plan_graph(g, &o, &p, err);
        if (!s) s = bp_verify(g, p, err);
        if (!s && i == 0) {
            char *buf = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&buf, &len);
            s = f ? bp_plan_write_json_file(p, g, f, err) : BP_ERR_IO;
            if (f) fclose(f);
            bp_plan *q = NULL;
            if (!s) s = bp_plan_parse_json(g, buf, len, "f.plan.json", &q, err);
            if (!s) s = bp_verify(g, q, err);
            bp_plan_free(q);
            free(buf);
        }
        bp_plan_free(p);
    }
    if (!s) s = bp_graph_bind_dim(g, "N", 3, err);
    if (!s) s = bp_graph_append_backward(g, err);
    bp_graph_free(g);
    return s;
}

static bp_status pl_gen(const bp_allocator *a, bp_error *err)
{
    /* two generators keep the sweep (quadratic in its length) short */
    static const char *const kinds[] = {"diamond", "transformer", NULL};
    bp_status s = BP_OK;
    for (int k = 0; kinds[k] && !s; k++) {
        bp_gen_options o;
        bp_gen_options_init(&o);
        o.layers = 2; o.width = 64; o.nodes = 5; o.seq = 4;
        bp_graph *g = NULL;
        s = bp_gen(kinds[k], &o, a, &g, err);
        if (!s) {
            bp_plan *p = NULL;
            s = bp_plan_graph(g, NULL, &p, err);
            bp_plan_free(p);
        }
        bp_graph_free(g);
    }
    return s;
}

/* Recompute and offload: a small training graph at 0.9 of its arena, the
 * plan verified, through the plan JSON and back. */
static bp_status pl_fallback(const bp_allocator *a, bp_error *err)
{
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.layers = 2; go.width = 8; go.training = 1;
    bp_graph *g = NULL;
    bp_plan *p = NULL, *q = NULL;
    bp_status s = bp_gen("unet", &go, a, &g, err);
    bp_plan_options o;
    bp_plan_options_init(&o);
    o.sched = BP_SCHED_LIST;
    if (!s) s = bp_plan_graph(g, &o, &p, err);
    if (!s) o.budget = bp_plan_get_stats(p)->arena_bytes / 10 * 9;
    bp_plan_free(p);
    p = NULL;
    if (!s) s = bp_plan_graph(g, &o, &p, err);
    if (!s) s = bp_verify(g, p, err);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = s ? NULL : open_memstream(&buf, &len);
    if (f) { s = bp_plan_write_json_file(p, g, f, err); fclose(f); }
    if (!s) s = bp_plan_parse_json(g, buf, len, "fb.plan.json", &q, err);
    if (!s) s = bp_verify(g, q, err);
    free(buf);
    bp_plan_free(q);
    bp_plan_free(p);
    bp_graph_free(g);
    return s;
}

static const char csv_text[] = "id,lower,upper,size,alignment\na,0,2,4,\nb,1,3,8,4\nc,2,4,4,\n\"d x\",0,5,16,16\n";

static bp_status pl_csv(const bp_allocator *a, bp_error *err)
{
    bp_instance *inst = NULL;
    bp_status s = bp_instance_parse_csv(csv_text, strlen(csv_text), "f.csv", a, &inst, err);
    if (s) return s;
    bp_instance_free(inst);
    return BP_OK;
}

/* ---------------------------------------------------------- assigners */

/* n random intervals over `span` steps (sizes 1..64, some aligned), the
 * first n_fixed of them pre-placed one above the other. */
static void rand_intervals(bp_interval *iv, size_t n, size_t n_fixed, int64_t span, unsigned long long seed)
{
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        iv[i].lower = (int64_t)(test_rand(&seed) % (unsigned long long)span);
        iv[i].upper = iv[i].lower + 1 + (int64_t)(test_rand(&seed) % 6);
        iv[i].size = 1 + test_rand(&seed) % 64;
        iv[i].alignment = test_rand(&seed) % 4 == 0 ? 8 : 0;
        iv[i].fixed_offset = BP_NO_OFFSET;
        if (i < n_fixed) {
            at = (at + 7) / 8 * 8;
            iv[i].fixed_offset = at;
            at += iv[i].size;
        }
    }
}

/* One assigner on iv with the allocator; the result must verify. */
static bp_status run_assign(const bp_allocator *a, const bp_interval *iv, size_t n, bp_assign_kind kind,
                            bp_assign_result *r, bp_error *err)
{
    uint64_t *off = malloc((n ? n : 1) * sizeof *off);
    if (!off) return BP_ERR_NOMEM;
    bp_assign_options o;
    bp_assign_options_init(&o);
    o.alloc = a;
    o.time_limit = 60;  /* never reached: the runs must be the same each time */
    bp_status s = bp_assign_intervals(iv, n, kind, &o, off, r, err);
    if (!s) s = bp_intervals_check(iv, n, off, r->arena_bytes, err);
    free(off);
    return s;
}

static bp_status pl_naive_color(const bp_allocator *a, bp_error *err)
{
    bp_interval iv[24];
    bp_assign_result r;
    rand_intervals(iv, 24, 3, 12, 5);
    bp_status s = run_assign(a, iv, 24, BP_ASSIGN_NAIVE, &r, err);
    if (!s) s = run_assign(a, iv, 24, BP_ASSIGN_COLOR, &r, err);
    return s;
}

/* bestfit's time-order pass leaves P = 1100 one-byte gaps at once (the
 * even intervals end together between odd ones still live), more than its
 * first pool of 1024 gap nodes, and packs at the bound.  Then a small
 * instance with pre-placed intervals (no time-order pass): size-ordered
 * runs and the canonical greedy. */
enum { GAP_P = 1100 };
static bp_interval gap_iv[2 * GAP_P + 1];
static int gap_at_bound;

static bp_status pl_bestfit(const bp_allocator *a, bp_error *err)
{
    bp_assign_result r;
    bp_status s = run_assign(a, gap_iv, 2 * GAP_P + 1, BP_ASSIGN_BESTFIT, &r, err);
    if (!s && r.arena_bytes == r.lower_bound) gap_at_bound = 1;
    if (s) return s;
    bp_interval iv[40];
    rand_intervals(iv, 40, 2, 16, 11);
    return run_assign(a, iv, 40, BP_ASSIGN_BESTFIT, &r, err);
}

/* search on instances whose optimum is above max-live (with and without
 * pre-placed intervals): the incumbent phase, the model, and a search that
 * splits into sub-parts and grows its stacks. */
static uint64_t search_nodes;
static struct { size_t n, n_fixed; int64_t span; unsigned long long seed; } search_cases[] = {
    {36, 0, 14, 4}, {30, 2, 12, 20},
};

/* Moves each case's seed forward until bestfit alone stays above max-live
 * (so that search has something to search: bestfit keeps getting better)
 * and search finishes within a node budget (the sweep reruns it once per
 * allocation point). */
static void pick_search_seeds(void)
{
    for (size_t c = 0; c < sizeof search_cases / sizeof search_cases[0]; c++) {
        bool found = false;
        for (int tries = 0; tries < 1000 && !found; tries++, search_cases[c].seed += !found) {
            bp_interval iv[64];
            uint64_t off[64];
            bp_assign_result r;
            bp_error err = {0};
            rand_intervals(iv, search_cases[c].n, search_cases[c].n_fixed, search_cases[c].span, search_cases[c].seed);
            REQUIRE(run_assign(bp_allocator_default(), iv, search_cases[c].n, BP_ASSIGN_BESTFIT, &r, &err) == BP_OK);
            if (r.arena_bytes <= r.lower_bound) continue;
            bp_assign_options o;
            bp_assign_options_init(&o);
            REQUIRE(bp__assign_search_ex(iv, search_cases[c].n, &o, 200000, off, &r, &err) == BP_OK);
            found = r.optimal && r.nodes > 0;
        }
        CHECK_MSG(found, "no seed for search case %zu", c);
    }
}

static bp_status pl_search(const bp_allocator *a, bp_error *err)
{
    const size_t n_cases = sizeof search_cases / sizeof search_cases[0];
    bp_status s = BP_OK;
    for (size_t c = 0; c < n_cases && !s; c++) {
        bp_interval iv[64];
        bp_assign_result r;
        rand_intervals(iv, search_cases[c].n, search_cases[c].n_fixed, search_cases[c].span, search_cases[c].seed);
        s = run_assign(a, iv, search_cases[c].n, BP_ASSIGN_SEARCH, &r, err);
        if (!s && r.nodes > search_nodes) search_nodes = r.nodes;
    }
    return s;
}

static unsigned char *onnx_data;
static size_t onnx_len;

static bp_status pl_onnx(const bp_allocator *a, bp_error *err)
{
    bp_graph *g = NULL;
    FILE *devnull = fopen("/dev/null", "w");
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    o.warnings = devnull;
    bp_status s = bp_onnx_parse(onnx_data, onnx_len, "f.onnx", &o, a, &g, NULL, err);
    if (devnull) fclose(devnull);
    if (!s) {
        bp_plan *p = NULL;
        s = bp_plan_graph(g, NULL, &p, err);
        if (!s) s = bp_verify(g, p, err);
        bp_plan_free(p);
    }
    bp_graph_free(g);
    return s;
}

/* Runs p with the k-th allocation failing for k = 1, 2, ... until a run
 * sees no fault; returns the number of failure points tested. */
static unsigned long sweep(const char *name, pipeline p)
{
    fa f0 = {0};
    bp_allocator a0 = {fa_alloc, fa_realloc, fa_free, &f0};
    bp_error err = {0};
    bp_status s = p(&a0, &err);
    CHECK_MSG(s == BP_OK, "%s: without faults: %s", name, err.msg);
    CHECK(f0.live_bytes == 0 && f0.live_blocks == 0 && !f0.bad_free);
    unsigned long n = f0.calls, bad = 0;
    for (unsigned long k = 1; k <= n + 1; k++) {
        fa f = {.fail_at = k};
        bp_allocator a = {fa_alloc, fa_realloc, fa_free, &f};
        memset(&err, 0, sizeof err);
        s = p(&a, &err);
        if (f.failed) {
            /* BP_OK is a clean outcome too: the code fell back (the
             * pipelines verify every plan they make) */
            if (s != BP_ERR_NOMEM && s != BP_OK && bad++ < 5)
                CHECK_MSG(s == BP_ERR_NOMEM, "%s: allocation %lu failed, status %d: %s", name, k, (int)s, err.msg);
            else if (s == BP_ERR_NOMEM && !err.msg[0])
                CHECK_MSG(0, "%s: allocation %lu: BP_ERR_NOMEM without a message", name, k);
        } else {
            CHECK_MSG(s == BP_OK, "%s: no fault at %lu but status %d: %s", name, k, (int)s, err.msg);
        }
        if (f.live_bytes || f.live_blocks || f.bad_free) {
            CHECK_MSG(0, "%s: allocation %lu failed: %lld bytes in %ld blocks left%s", name, k, f.live_bytes, f.live_blocks,
                      f.bad_free ? ", bad free" : "");
            break;
        }
    }
    if (bad > 0) CHECK_MSG(0, "%s: %lu failure points gave another status than BP_ERR_NOMEM", name, bad);
    printf("%-11s %6lu allocation-failure points tested\n", name, n);
    return n;
}

/* ------------------------------------------------------------ the pool */

/* A pool with learned sequences (its metadata, the handle's log, the plan
 * and bestfit's working memory all come from the allocator): a handle
 * repeats a sequence until it is planned and served from the plan; one
 * run frees a planned block through the plain API.  A failed allocation
 * inside learning is not an error: the handle goes on unplanned. */
static uint64_t pool_learned;

static bp_status pl_pool_learn(const bp_allocator *a, bp_error *err)
{
    bp_pool_options o;
    bp_pool_options_init(&o);
    o.learn = 1;
    o.alloc = a;
    bp_pool *p = NULL;
    bp_status s = bp_pool_new(&o, &p, err);
    if (s) return s;
    bp_pool_local *l = NULL;
    s = bp_pool_local_new(p, 0, &l, err);
    enum { N = 40 };
    void *v[N] = {0};
    for (int rep = 0; rep < 5 && !s; rep++) {
        for (int i = 0; i < N + 3 && !s; i++) {
            if (i < N) s = bp_pool_local_alloc(l, 1000 + (uint64_t)i * 3000, &v[i], err);
            if (!s && i >= 3) {
                s = rep == 3 && i == 20 ? bp_pool_dealloc(p, v[i - 3], err) : bp_pool_local_dealloc(l, v[i - 3], err);
                v[i - 3] = NULL;
            }
        }
    }
    bp_pool_stats st;
    bp_pool_get_stats(p, &st);
    pool_learned = st.learned_allocs;
    for (int i = 0; i < N; i++)
        if (v[i]) bp_pool_local_dealloc(l, v[i], NULL);
    bp_pool_local_free(l);
    bp_pool_free(p);
    return s;
}

static void load_onnx(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/onnx/onnx-backend-light/light_bvlc_alexnet.onnx", test_data_dir());
    FILE *f = fopen(path, "rb");
    if (!f) return;
    onnx_data = malloc(1 << 20);
    REQUIRE(onnx_data);
    onnx_len = fread(onnx_data, 1, 1 << 20, f);
    fclose(f);
}

int main(void)
{
    unsigned long total = 0;
    total += sweep("graph", pl_graph);
    total += sweep("gen", pl_gen);
    total += sweep("fallback", pl_fallback);
    total += sweep("csv", pl_csv);
    for (size_t i = 0; i < 2 * GAP_P + 1; i++) {
        bp_interval *x = &gap_iv[i];
        x->lower = (int64_t)i;
        x->upper = i == 2 * GAP_P ? 2 * GAP_P + 1 : i % 2 == 0 ? 2 * GAP_P : 4 * GAP_P;
        x->size = 1;
        x->alignment = 0;
        x->fixed_offset = BP_NO_OFFSET;
    }
    total += sweep("naive+color", pl_naive_color);
    total += sweep("bestfit", pl_bestfit);
    CHECK_MSG(gap_at_bound, "bestfit's time-order pass did not pack the gap instance at the bound");
    pick_search_seeds();
    total += sweep("search", pl_search);
    CHECK_MSG(search_nodes > 0, "the search pipeline never searched (bestfit reached the bound)");
    total += sweep("pool-learn", pl_pool_learn);
    CHECK_MSG(pool_learned > 0, "the pool pipeline never served from a learned plan");
    load_onnx();
    if (onnx_data && bp_onnx_available()) total += sweep("onnx", pl_onnx);
    else fprintf(stderr, "test_faults: no ONNX model or no ONNX support, skipping the ONNX sweep\n");
    free(onnx_data);
    printf("%-11s %6lu allocation-failure points tested\n", "total", total);
    return check_status();
}
