/* Executor tests (single thread): planned, dynamic (pool and malloc) and
 * safe runs of every generated graph kind agree byte for byte with digest
 * kernels; bp_exec_verify agrees; a plan with one lifetime cut short is
 * caught by bp_verify and by bp_exec_verify naming the victim and a tensor
 * placed over it; a failing kernel stops the run with the op's name and
 * leaks nothing; planned runs allocate nothing; per-type kernels; repeat;
 * bad arguments.  ONNX models: test_exec_onnx.c. */
#define _DEFAULT_SOURCE
#include "exec_util.h"


typedef struct { long long live, calls; } count_ctx;
static void *cnt_alloc(void *c, size_t n) { ((count_ctx *)c)->live += (long long)n; ((count_ctx *)c)->calls++; return malloc(n ? n : 1); }
static void *cnt_realloc(void *c, void *p, size_t o, size_t n)
{
    ((count_ctx *)c)->live += (long long)n - (long long)o;
    ((count_ctx *)c)->calls++;
    return realloc(p, n ? n : 1);
}
static void cnt_free(void *c, void *p, size_t n) { if (p) ((count_ctx *)c)->live -= (long long)n; free(p); }

/* Every generated graph: one safe run is the reference; dynamic mode (pool
 * and malloc, own order) once; planned mode for each assigner (and the
 * fence-aware assignment, and no aliasing); bp_exec_verify for best fit. */
static void test_generated(void)
{
    eu_case cs[16];
    int n = eu_cases(cs, 16);
    struct { bp_assign_kind k; int fa, no_alias; } cfg[] = {
        {BP_ASSIGN_BESTFIT, 0, 0}, {BP_ASSIGN_NAIVE, 0, 0}, {BP_ASSIGN_COLOR, 0, 0},
        {BP_ASSIGN_BESTFIT, 1, 0}, {BP_ASSIGN_BESTFIT, 0, 1}};
    for (int i = 0; i < n; i++) {
        bp_graph *g = eu_gen(&cs[i]);
        if (!g) continue;
        bp_error e;
        bp_status s;
        char gname[64];
        snprintf(gname, sizeof gname, "%s%s", cs[i].kind, cs[i].o.training ? "-training" : "");
        bp_exec *safe = eu_run(g, NULL, BP_EXEC_SAFE, 1, 0, 0);
        bp_exec *dy = eu_run(g, NULL, BP_EXEC_DYNAMIC, 1, 0, 0);
        bp_exec *dm = eu_run(g, NULL, BP_EXEC_DYNAMIC, 1, 1, 0);
        if (safe) {
            /* safe mode holds every tensor's own buffer for the whole run: that is its peak */
            bp_exec_info si;
            bp_exec_get_info(safe, &si);
            bp_exec_run_stats rs;
            CHECK_OK(bp_exec_run(safe, &rs, &e), e);
            CHECK_MSG(si.safe_bytes > 0 && rs.peak_bytes == si.safe_bytes, "%s: safe mode: peak_bytes %llu, safe buffers %llu",
                      gname, (unsigned long long)rs.peak_bytes, (unsigned long long)si.safe_bytes);
        }
        if (safe && dy) CHECK_MSG(eu_diff_outputs(g, dy, safe) == 0, "%s: dynamic differs from safe", gname);
        if (safe && dm) CHECK_MSG(eu_diff_outputs(g, dm, safe) == 0, "%s: dynamic (malloc) differs from safe", gname);
        if (dy) {
            bp_pool_stats ps;
            bp_pool_get_stats(bp_exec_pool(dy), &ps);
            CHECK_MSG(ps.n_allocs > 0, "%s: dynamic mode allocated nothing", gname);
            CHECK_MSG(ps.n_locals == 1, "%s: dynamic mode: %llu pool handles (one per worker)", gname,
                      (unsigned long long)ps.n_locals);
            /* the run's blocks went back to the worker's handle: a second run takes them from its cache */
            uint64_t hits = ps.cache_hits;
            CHECK_OK(bp_exec_run(dy, NULL, &e), e);
            bp_pool_get_stats(bp_exec_pool(dy), &ps);
            CHECK_MSG(ps.cache_hits > hits, "%s: the second dynamic run took no block from the worker's handle", gname);
            if (safe) CHECK_MSG(eu_diff_outputs(g, dy, safe) == 0, "%s: second dynamic run differs from safe", gname);
        }
        if (dm) {
            bp_pool_stats ps;
            bp_pool_get_stats(bp_exec_pool(dm), &ps);
            CHECK_MSG(ps.n_locals == 0, "%s: dynamic mode with malloc made %llu pool handles", gname,
                      (unsigned long long)ps.n_locals);
        }
        for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
            bp_plan_options po;
            bp_plan_options_init(&po);
            po.assign = cfg[c].k;
            po.fence_aware = cfg[c].fa;
            po.no_alias = cfg[c].no_alias;
            bp_plan *p = NULL;
            s = bp_plan_graph(g, &po, &p, &e);
            CHECK_MSG(s == BP_OK, "plan %s: %s", gname, e.msg);
            if (s) continue;
            CHECK_OK(bp_verify(g, p, &e), e);
            bp_exec *pl = eu_run(g, p, BP_EXEC_PLANNED, 1, 0, 0);
            if (safe && pl)
                CHECK_MSG(eu_diff_outputs(g, pl, safe) == 0, "%s/%s%s%s: planned differs from safe", gname,
                          bp_assign_name(cfg[c].k), cfg[c].fa ? " fence-aware" : "", cfg[c].no_alias ? " no-alias" : "");
            bp_exec_free(pl);
            if (c == 0) {
                s = bp_exec_verify(g, p, NULL, 5, NULL, &e);
                CHECK_MSG(s == BP_OK, "%s: verify: %s", gname, e.msg);
            }
            bp_plan_free(p);
        }
        bp_exec_free(safe);
        bp_exec_free(dy);
        bp_exec_free(dm);
        bp_graph_free(g);
    }
}

/* A plan with one lifetime cut short: the verifier names the tensor, and a
 * planned run read it corrupted, which bp_exec_verify reports with the
 * tensor placed over its bytes. */
static void test_broken_plan(void)
{
    const char *kinds[] = {"resnet50", "randwire", "transformer", "unet", "chain", "diamond"};
    int found = 0;
    for (int i = 0; i < 6 && found < 3; i++) {
        eu_case cs[16];
        int n = eu_cases(cs, 16);
        bp_gen_options go;
        bp_gen_options_init(&go);
        for (int k = 0; k < n; k++) if (!strcmp(cs[k].kind, kinds[i]) && !cs[k].o.training) go = cs[k].o;
        bp_graph *g = NULL;
        bp_error e;
        if (bp_gen(kinds[i], &go, NULL, &g, &e)) { CHECK_MSG(0, "gen %s: %s", kinds[i], e.msg); continue; }
        bp_plan_options po;
        bp_plan_options_init(&po);
        po.sched = BP_SCHED_KAHN;   /* FIFO order: long lifetimes to cut */
        bp_plan *p = NULL;
        CHECK_OK(bp_plan_graph(g, &po, &p, &e), e);
        int32_t culprit = -1;
        int32_t v = p ? eu_break_plan(g, p, &culprit) : -1;
        if (v < 0) { bp_plan_free(p); bp_graph_free(g); continue; }
        found++;
        char vq[300];
        snprintf(vq, sizeof vq, "\"%s\"", bp_graph_tensor_name(g, v));
        bp_status s = bp_verify(g, p, &e);
        CHECK_MSG(s == BP_ERR_VERIFY && strstr(e.msg, vq), "%s: bp_verify missed the cut lifetime of %s: %s", kinds[i], vq, e.msg);
        for (int threads = 1; threads <= 2; threads++) {
            bp_exec_options o;
            bp_exec_options_init(&o);
            o.threads = threads;
            s = bp_exec_verify(g, p, &o, 9, NULL, &e);
            CHECK_MSG(s == BP_ERR_VERIFY, "%s x%d: exec verify passed a broken plan", kinds[i], threads);
            if (s != BP_ERR_VERIFY) continue;
            char want[400];
            snprintf(want, sizeof want, "first tensor whose contents differ: %s", vq);
            CHECK_MSG(strstr(e.msg, want) != NULL, "%s x%d: victim %s not named: %s", kinds[i], threads, vq, e.msg);
            /* some tensor placed over its bytes while it was live is named */
            const char *tail = strstr(e.msg, "shared while it was live with");
            CHECK_MSG(tail && strstr(tail, "\"") && !strstr(tail, "with no other tensor"), "%s: no culprit named: %s", kinds[i], e.msg);
            char cq[300];
            snprintf(cq, sizeof cq, "\"%s\"", bp_graph_tensor_name(g, culprit));
            (void)cq;
        }
        bp_plan_free(p);
        bp_graph_free(g);
    }
    CHECK_MSG(found >= 2, "could break only %d plans", found);
}

static void test_kernel_error(void)
{
    bp_graph *g;
    bp_plan *p;
    if (!eu_small_randwire(1, &g, &p)) return;
    bp_error e;
    int32_t fail_op = bp_plan_schedule(p)[bp_graph_n_ops(g) / 2];
    bp_digest_options d = {0, fail_op};
    for (int mode = 0; mode < 3; mode++) {
        bp_exec_options o;
        bp_exec_options_init(&o);
        o.mode = (bp_exec_mode)mode;
        bp_exec *ex = NULL;
        CHECK_OK(bp_exec_new(g, p, &o, &ex, &e), e);
        if (!ex) continue;
        bp_exec_set_kernel(ex, bp_digest_kernel, &d);
        bp_exec_run_stats st;
        bp_status s = bp_exec_run(ex, &st, &e);
        char want[300];
        snprintf(want, sizeof want, "op \"%s\"", bp_graph_op_name(g, fail_op));
        CHECK_MSG(s == BP_ERR_KERNEL && strstr(e.msg, want) && strstr(e.msg, "told to fail"), "mode %d: %d %s", mode, (int)s, e.msg);
        CHECK(st.n_ops == (uint64_t)bp_graph_n_ops(g) / 2 + 1);
        bp_pool_stats ps;
        bp_pool_get_stats(bp_exec_pool(ex), &ps);
        if (mode == BP_EXEC_DYNAMIC) CHECK_MSG(ps.n_live_blocks == 0 && ps.in_use_bytes == 0, "blocks left after a failed run: %llu", (unsigned long long)ps.n_live_blocks);
        /* the executor stays usable */
        d.fail_op = -1;
        CHECK_OK(bp_exec_run(ex, NULL, &e), e);
        d.fail_op = fail_op;
        bp_exec_free(ex);
    }
    bp_plan_free(p);
    bp_graph_free(g);
}

/* Planned runs allocate nothing: not on the host, not from the pool. */
static void test_zero_alloc(void)
{
    count_ctx cc = {0, 0};
    bp_allocator al = {cnt_alloc, cnt_realloc, cnt_free, &cc};
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.layers = 1; go.width = 64; go.seq = 8;
    bp_graph *g = NULL;
    bp_error e;
    CHECK_OK(bp_gen("transformer", &go, &al, &g, &e), e);
    if (!g) return;
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph(g, NULL, &p, &e), e);
    for (int threads = 1; threads <= 2; threads++) {
        bp_exec_options o;
        bp_exec_options_init(&o);
        o.threads = threads;
        bp_exec *ex = NULL;
        CHECK_OK(bp_exec_new(g, p, &o, &ex, &e), e);
        if (!ex) continue;
        bp_exec_set_kernel(ex, bp_digest_kernel, NULL);
        bp_pool_stats before, after;
        bp_pool_get_stats(bp_exec_pool(ex), &before);
        long long calls = cc.calls;
        bp_exec_run_stats st;
        CHECK_OK(bp_exec_run(ex, &st, &e), e);
        CHECK_OK(bp_exec_run(ex, &st, &e), e);
        bp_pool_get_stats(bp_exec_pool(ex), &after);
        CHECK_MSG(cc.calls == calls, "planned run made %lld host allocations", cc.calls - calls);
        CHECK(after.n_allocs == before.n_allocs && after.os_calls == before.os_calls);
        CHECK(st.n_allocs == 0 && st.peak_bytes == bp_plan_get_stats(p)->arena_bytes);
        CHECK(after.arena_bytes == bp_plan_get_stats(p)->arena_bytes);
        bp_exec_free(ex);
    }
    bp_plan_free(p);
    bp_graph_free(g);
    CHECK_MSG(cc.live == 0, "%lld bytes leaked", cc.live);
}

typedef struct { int calls_default, calls_type; const char *type; int bad; } reg_ctx;
static int k_default(void *u, const bp_exec_call *c, bp_error *e)
{
    reg_ctx *r = u;
    r->calls_default++;
    if (!strcmp(c->op_type, r->type)) r->bad++;
    if (c->n_in != bp_graph_op_n_inputs(c->graph, c->op) || strcmp(c->op_name, bp_graph_op_name(c->graph, c->op))) r->bad++;
    for (int i = 0; i < c->n_in; i++) if (c->in[i].bytes && !c->in[i].data) r->bad++;
    for (int i = 0; i < c->n_out; i++) if (c->out[i].tensor != bp_graph_op_output(c->graph, c->op, i)) r->bad++;
    return bp_digest_kernel(NULL, c, e);
}
static int k_type(void *u, const bp_exec_call *c, bp_error *e)
{
    reg_ctx *r = u;
    r->calls_type++;
    if (strcmp(c->op_type, r->type)) r->bad++;
    return bp_digest_kernel(NULL, c, e);
}

static void test_registry_and_repeat(void)
{
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.width = 4;
    bp_graph *g = NULL;
    bp_error e;
    CHECK_OK(bp_gen("resnet50", &go, NULL, &g, &e), e);
    if (!g) return;
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph(g, NULL, &p, &e), e);
    bp_exec *ex = NULL;
    CHECK_OK(bp_exec_new(g, p, NULL, &ex, &e), e);
    if (!ex) { bp_plan_free(p); bp_graph_free(g); return; }
    reg_ctx rc = {0, 0, "Conv", 0};
    /* strict: an op type with no kernel (and no default) fails the run, naming the type */
    CHECK_OK(bp_exec_set_type_kernel(ex, "Conv", k_type, &rc, &e), e);
    CHECK_OK(bp_digest_fill_inputs(ex, 1, &e), e);
    CHECK(bp_exec_run(ex, NULL, &e) == BP_ERR_USAGE && strstr(e.msg, "of type \"") && strstr(e.msg, "has no kernel") &&
          !strstr(e.msg, "type \"Conv\""));
    CHECK(rc.calls_type == 0);   /* nothing ran */
    /* the no-op default lets it run */
    bp_exec_set_kernel(ex, bp_exec_noop_kernel, NULL);
    CHECK_OK(bp_exec_run(ex, NULL, &e), e);
    rc.calls_type = 0;
    bp_exec_set_kernel(ex, k_default, &rc);
    CHECK(bp_exec_set_type_kernel(ex, "NoSuchType", k_type, &rc, &e) == BP_ERR_USAGE && strstr(e.msg, "NoSuchType"));
    CHECK_OK(bp_digest_fill_inputs(ex, 1, &e), e);
    int n_conv = 0;
    for (int32_t op = 0; op < bp_graph_n_ops(g); op++) n_conv += !strcmp(bp_graph_op_type(g, op), "Conv");
    CHECK_OK(bp_exec_run(ex, NULL, &e), e);
    CHECK(rc.calls_type == n_conv && rc.calls_default == bp_graph_n_ops(g) - n_conv && rc.bad == 0);
    /* repeat: the same outputs every time */
    int32_t out = -1;
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) if (bp_graph_tensor_flags(g, t) & BP_TENSOR_OUTPUT) out = t;
    uint64_t nb;
    const void *d = bp_exec_tensor_data(ex, out, &nb);
    uint64_t h1 = bp_digest_hash(d, nb, 0);
    CHECK_OK(bp_exec_run(ex, NULL, &e), e);
    d = bp_exec_tensor_data(ex, out, &nb);
    CHECK(bp_digest_hash(d, nb, 0) == h1);
    /* a different input changes the output */
    int32_t in = -1;
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) if (bp_graph_tensor_flags(g, t) & BP_TENSOR_INPUT) in = t;
    CHECK(in >= 0);
    unsigned char junk[64];
    memset(junk, 0x5a, sizeof junk);
    CHECK_OK(bp_exec_set_input(ex, in, junk, sizeof junk, &e), e);
    CHECK_OK(bp_exec_run(ex, NULL, &e), e);
    d = bp_exec_tensor_data(ex, out, &nb);
    CHECK(bp_digest_hash(d, nb, 0) != h1);
    CHECK(bp_exec_set_input(ex, out, junk, 1, &e) == BP_ERR_USAGE && strstr(e.msg, "not an input"));
    CHECK(bp_exec_set_input(ex, -1, junk, 1, &e) == BP_ERR_USAGE);
    bp_exec_free(ex);
    bp_plan_free(p);
    bp_graph_free(g);
}

static void test_bad_args(void)
{
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.nodes = 10; go.width = 16;
    bp_graph *g = NULL, *g2 = NULL;
    bp_error e;
    CHECK_OK(bp_gen("chain", &go, NULL, &g, &e), e);
    go.nodes = 12;
    CHECK_OK(bp_gen("chain", &go, NULL, &g2, &e), e);
    if (!g || !g2) return;
    bp_plan *p2 = NULL, *p = NULL;
    CHECK_OK(bp_plan_graph(g2, NULL, &p2, &e), e);
    CHECK_OK(bp_plan_graph(g, NULL, &p, &e), e);
    bp_exec *ex = NULL;
    CHECK(bp_exec_new(g, NULL, NULL, &ex, &e) == BP_ERR_USAGE && strstr(e.msg, "needs a plan") && !ex);
    CHECK(bp_exec_new(g, p2, NULL, &ex, &e) == BP_ERR_USAGE && strstr(e.msg, "not this graph") && !ex);
    bp_exec_options o;
    bp_exec_options_init(&o);
    o.threads = 0;
    CHECK(bp_exec_new(g, p, &o, &ex, &e) == BP_ERR_USAGE && strstr(e.msg, "threads") && !ex);
    o.threads = 1;
    o.mode = (bp_exec_mode)7;
    CHECK(bp_exec_new(g, p, &o, &ex, &e) == BP_ERR_USAGE && !ex);
    CHECK(bp_exec_new(NULL, p, NULL, &ex, &e) == BP_ERR_USAGE);
    CHECK(bp_exec_run(NULL, NULL, &e) == BP_ERR_USAGE);
    bp_exec_free(NULL);
    /* a plan whose schedule is not topological */
    int32_t sw = p->order[0];
    p->order[0] = p->order[1];
    p->order[1] = sw;
    CHECK(bp_exec_new(g, p, NULL, &ex, &e) == BP_ERR_INVALID && strstr(e.msg, "before the producer") && !ex);
    p->order[1] = p->order[0];
    p->order[0] = sw;
    /* a tensor outside the arena */
    int32_t t = -1;
    for (int32_t i = 0; i < p->n_t; i++) if (p->tp[i].offset != BP_NO_OFFSET && p->tp[i].alias_of < 0) t = i;
    CHECK(t >= 0);
    uint64_t save = p->tp[t].offset;
    p->tp[t].offset = p->stats.arena_bytes;
    CHECK(bp_exec_new(g, p, NULL, &ex, &e) == BP_ERR_INVALID && strstr(e.msg, "does not fit") && !ex);
    p->tp[t].offset = save;
    CHECK_OK(bp_exec_new(g, p, NULL, &ex, &e), e);
    bp_exec_free(ex);
    bp_plan_free(p);
    bp_plan_free(p2);
    bp_graph_free(g);
    bp_graph_free(g2);
}

#define RUN(f) do { double t0_ = bp__now(); f(); fprintf(stderr, "%-28s %.2f s\n", #f, bp__now() - t0_); } while (0)

/* Dynamic mode with a learning pool (options.learn): every generated graph
 * runs five times on one worker, each run byte-identical to safe mode; the
 * worker's handle plans the runs and serves the later ones from the plan. */
static void test_dynamic_learn(void)
{
    eu_case cs[16];
    int n = eu_cases(cs, 16);
    for (int i = 0; i < n; i++) {
        bp_graph *g = eu_gen(&cs[i]);
        if (!g) continue;
        const char *tr = cs[i].o.training ? "-training" : "";
        bp_exec *safe = eu_run(g, NULL, BP_EXEC_SAFE, 1, 0, 0);
        bp_pool_options po;
        bp_pool_options_init(&po);
        po.learn = 1;
        bp_exec_options o;
        bp_exec_options_init(&o);
        o.mode = BP_EXEC_DYNAMIC;
        o.pool = &po;
        bp_exec *ex = eu_run_opts(g, NULL, &o); /* run 1 */
        if (ex && safe) {
            bp_error e;
            for (int r = 0; r < 5; r++) {
                if (r) CHECK_OK(bp_exec_run(ex, NULL, &e), e);
                CHECK_MSG(eu_diff_outputs(g, ex, safe) == 0, "%s%s: learning run %d differs from safe", cs[i].kind,
                          tr, r + 1);
            }
            bp_pool_stats ps;
            bp_pool_get_stats(bp_exec_pool(ex), &ps);
            CHECK_MSG(ps.learned_plans == 1 && ps.learned_allocs > 0, "%s%s: %llu plans, %llu allocations from them",
                      cs[i].kind, tr, (unsigned long long)ps.learned_plans, (unsigned long long)ps.learned_allocs);
        }
        bp_exec_free(ex);
        bp_exec_free(safe);
        bp_graph_free(g);
    }
}

int main(void)
{
    RUN(test_generated);
    RUN(test_dynamic_learn);
    RUN(test_broken_plan);
    RUN(test_kernel_error);
    RUN(test_zero_alloc);
    RUN(test_registry_and_repeat);
    RUN(test_bad_args);
    return check_status();
}
