/* Parallel executor tests (run them under TSan too:
 *   cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DBP_SANITIZE=thread
 *   cmake --build build-tsan -j2 && cd build-tsan && ctest -R test_exec_threads).
 * - planned (best fit and fence-aware plans) and dynamic runs on 2 and 8
 *   threads agree with a safe run on every generated graph kind, repeatedly;
 * - fences against a brute-force oracle on random graphs with in-place
 *   reuse: every access of an earlier tenant of some bytes reaches the
 *   producer of every later tenant through dependencies and fences, and no
 *   fence is implied by the others (transitive closure with bitsets);
 * - a failing kernel on 4 threads stops the run with the op's name, returns
 *   every pool block, joins cleanly, and the executor runs again. */
#include "exec_util.h"

static void test_generated_parallel(void)
{
    eu_case cs[16];
    int n = eu_cases(cs, 16);
    for (int i = 0; i < n; i++) {
        bp_graph *g = eu_gen(&cs[i]);
        if (!g) continue;
        bp_error e;
        bp_exec *safe = eu_run(g, NULL, BP_EXEC_SAFE, 1, 0, 0);
        for (int fa = 0; fa < 2; fa++) {
            bp_plan_options po;
            bp_plan_options_init(&po);
            po.fence_aware = fa;
            bp_plan *p = NULL;
            if (bp_plan_graph(g, &po, &p, &e)) { CHECK_MSG(0, "plan %s: %s", cs[i].kind, e.msg); continue; }
            int threads[] = {2, 8};
            for (int k = 0; k < 2; k++) {
                bp_exec *pl = eu_run(g, p, BP_EXEC_PLANNED, threads[k], 0, 0);
                if (pl && safe) {
                    CHECK_MSG(eu_diff_outputs(g, pl, safe) == 0, "%s%s planned x%d differs from safe", cs[i].kind,
                              fa ? " (fence-aware)" : "", threads[k]);
                    for (int rep = 0; rep < 2; rep++) {
                        CHECK_OK(bp_exec_run(pl, NULL, &e), e);
                        CHECK_MSG(eu_diff_outputs(g, pl, safe) == 0, "%s planned x%d differs on repeat", cs[i].kind, threads[k]);
                    }
                }
                bp_exec_free(pl);
                if (!fa) {
                    bp_exec *dy = eu_run(g, p, BP_EXEC_DYNAMIC, threads[k], 0, 0);
                    if (dy && safe) {
                        CHECK_MSG(eu_diff_outputs(g, dy, safe) == 0, "%s dynamic x%d differs from safe", cs[i].kind, threads[k]);
                        /* one pool handle per worker; a second run starts from their caches, and storages
                         * freed by another worker than the one that allocated them went back to that
                         * worker's arena */
                        bp_pool_stats ps;
                        bp_pool_get_stats(bp_exec_pool(dy), &ps);
                        CHECK_MSG(ps.n_locals == (uint64_t)threads[k], "%s dynamic x%d: %llu pool handles", cs[i].kind,
                                  threads[k], (unsigned long long)ps.n_locals);
                        CHECK_OK(bp_exec_run(dy, NULL, &e), e);
                        CHECK_MSG(eu_diff_outputs(g, dy, safe) == 0, "%s dynamic x%d differs on repeat", cs[i].kind, threads[k]);
                    }
                    bp_exec_free(dy);
                }
            }
            bp_plan_free(p);
        }
        bp_exec *sp = eu_run(g, NULL, BP_EXEC_SAFE, 2, 0, 0);
        if (sp && safe) CHECK_MSG(eu_diff_outputs(g, sp, safe) == 0, "%s safe x2 differs from safe", cs[i].kind);
        bp_exec_free(sp);
        bp_exec_free(safe);
        bp_graph_free(g);
    }
}

/* ------------------------------------------------------- fence oracle */

/* A random DAG of element-wise ("Add", in-place capable) and other ops over
 * a few tensor sizes, so the planner reuses bytes both across storages and
 * in place. */
static bp_graph *random_graph(unsigned long long *rng, int n_ops)
{
    bp_graph *g = bp_graph_new("random", NULL);
    bp_error e;
    int32_t *t = malloc(((size_t)n_ops + 2) * sizeof *t);
    uint64_t *sz = malloc(((size_t)n_ops + 2) * sizeof *sz);
    int nt = 0;
    char name[32];
    const uint64_t sizes[] = {256, 512, 1024, 2048};
    for (int k = 0; k < 2; k++) {
        snprintf(name, sizeof name, "in%d", k);
        sz[nt] = sizes[test_rand(rng) % 4];
        bp_graph_add_tensor(g, name, sz[nt], &t[nt], &e);
        bp_graph_mark(g, t[nt], BP_TENSOR_INPUT, &e);
        nt++;
    }
    for (int i = 0; i < n_ops; i++) {
        int window = nt < 6 ? nt : 6;
        int32_t a = (int32_t)(nt - 1 - (int)(test_rand(rng) % (unsigned)window));
        int32_t b = (int32_t)(nt - 1 - (int)(test_rand(rng) % (unsigned)window));
        if (test_rand(rng) % 3 == 0) a = (int32_t)(test_rand(rng) % (unsigned)nt);
        bool ew = test_rand(rng) % 2 == 0;
        uint64_t osz = ew ? sz[a] : sizes[test_rand(rng) % 4];
        snprintf(name, sizeof name, "t%d", i);
        bp_graph_add_tensor(g, name, osz, &t[nt], &e);
        sz[nt] = osz;
        int32_t ins[2] = {t[a], t[b]};
        snprintf(name, sizeof name, "op%d", i);
        bp_graph_add_op(g, name, ew ? "Add" : "MatMul", a == b ? 1 : 2, ins, 1, &t[nt], 1.0, NULL, &e);
        nt++;
    }
    bp_graph_mark(g, t[nt - 1], BP_TENSOR_OUTPUT, &e);
    if (bp_graph_finalize(g, &e)) { fprintf(stderr, "finalize: %s\n", e.msg); bp_graph_free(g); g = NULL; }
    free(t);
    free(sz);
    return g;
}

typedef struct { int n, w; uint64_t *bits; } closure;
static int cl_get(const closure *c, int a, int b) { return (int)((c->bits[(size_t)a * (size_t)c->w + (size_t)(b / 64)] >> (b % 64)) & 1); }
/* reach[a] includes b when a reaches b; edges (from,to) with from earlier in order. */
static void cl_build(closure *c, const bp_graph *g, const int32_t *order, const int32_t *fences, size_t nf, size_t skip)
{
    int n = bp_graph_n_ops(g);
    c->n = n;
    c->w = (n + 63) / 64;
    c->bits = calloc((size_t)n * (size_t)c->w, sizeof *c->bits);
    /* process in reverse order: reach[u] = union over successors v of {v} + reach[v] */
    for (int s = n - 1; s >= 0; s--) {
        int u = order[s];
        uint64_t *ru = c->bits + (size_t)u * (size_t)c->w;
        for (int32_t k = 0; k < bp_graph_op_n_outputs(g, u); k++) {
            const int32_t *cons;
            int32_t nc = bp_graph_tensor_consumers(g, bp_graph_op_output(g, u, k), &cons);
            for (int32_t j = 0; j < nc; j++) {
                int v = cons[j];
                if (v == u) continue;
                ru[v / 64] |= 1ull << (v % 64);
                for (int x = 0; x < c->w; x++) ru[x] |= c->bits[(size_t)v * (size_t)c->w + (size_t)x];
            }
        }
        for (size_t f = 0; f < nf; f++) {
            if (f == skip || fences[2 * f] != u) continue;
            int v = fences[2 * f + 1];
            ru[v / 64] |= 1ull << (v % 64);
            for (int x = 0; x < c->w; x++) ru[x] |= c->bits[(size_t)v * (size_t)c->w + (size_t)x];
        }
    }
}

static void test_fence_oracle(void)
{
    unsigned long long rng = 42;
    int total_fences = 0, graphs = 0;
    for (int it = 0; it < 60; it++) {
        bp_graph *g = random_graph(&rng, 10 + (int)(test_rand(&rng) % 40));
        if (!g) { CHECK(0); continue; }
        bp_error e;
        bp_plan *p = NULL;
        if (bp_plan_graph(g, NULL, &p, &e)) { CHECK_MSG(0, "plan: %s", e.msg); bp_graph_free(g); continue; }
        bp_exec_options o;
        bp_exec_options_init(&o);
        o.threads = 2;
        bp_exec *ex = NULL;
        CHECK_OK(bp_exec_new(g, p, &o, &ex, &e), e);
        if (!ex) { bp_plan_free(p); bp_graph_free(g); continue; }
        size_t nf;
        const int32_t *f = bp_exec_fences(ex, &nf);
        total_fences += (int)nf;
        graphs++;
        const int32_t *order = bp_plan_schedule(p);
        int n = bp_graph_n_ops(g), nt = bp_graph_n_tensors(g);
        int32_t *step = malloc((size_t)n * sizeof *step);
        for (int s = 0; s < n; s++) step[order[s]] = s;
        closure c;
        cl_build(&c, g, order, f, nf, (size_t)-1);
        /* every tenant pair over common bytes is ordered */
        for (int32_t a = 0; a < nt; a++) {
            const bp_tensor_plan *ta = bp_plan_tensor(p, a);
            int32_t pa = bp_graph_tensor_producer(g, a);
            if (ta->offset == BP_NO_OFFSET || pa < 0 || !ta->bytes) continue;
            for (int32_t b = 0; b < nt; b++) {
                const bp_tensor_plan *tb = bp_plan_tensor(p, b);
                int32_t pb = bp_graph_tensor_producer(g, b);
                if (b == a || tb->offset == BP_NO_OFFSET || pb < 0 || !tb->bytes || step[pa] >= step[pb]) continue;
                if (ta->offset >= tb->offset + tb->bytes || tb->offset >= ta->offset + ta->bytes) continue;
                const int32_t *cons;
                int32_t ncons = bp_graph_tensor_consumers(g, a, &cons);
                for (int32_t j = -1; j < ncons; j++) {
                    int32_t r = j < 0 ? pa : cons[j];
                    if (r == pb) continue;
                    CHECK_MSG(cl_get(&c, r, pb), "graph %d: op %s (access of %s) does not precede op %s (writes %s over it)",
                              it, bp_graph_op_name(g, r), bp_graph_tensor_name(g, a), bp_graph_op_name(g, pb),
                              bp_graph_tensor_name(g, b));
                }
            }
        }
        /* no fence is implied by the dependencies and the other fences */
        for (size_t k = 0; k < nf; k++) {
            closure c2;
            cl_build(&c2, g, order, f, nf, k);
            CHECK_MSG(!cl_get(&c2, f[2 * k], f[2 * k + 1]), "graph %d: fence %s -> %s is redundant", it,
                      bp_graph_op_name(g, f[2 * k]), bp_graph_op_name(g, f[2 * k + 1]));
            free(c2.bits);
        }
        free(c.bits);
        free(step);
        /* and the runs agree with safe mode */
        bp_exec_free(ex);
        bp_exec *safe = eu_run(g, p, BP_EXEC_SAFE, 1, 0, 0);
        for (int th = 2; th <= 8; th *= 2) {
            bp_exec *pl = eu_run(g, p, BP_EXEC_PLANNED, th, 0, 0);
            if (pl && safe) CHECK_MSG(eu_diff_outputs(g, pl, safe) == 0, "random graph %d x%d differs from safe", it, th);
            bp_exec_free(pl);
        }
        bp_exec_free(safe);
        bp_plan_free(p);
        bp_graph_free(g);
    }
    CHECK_MSG(total_fences > 0, "no fences in %d random graphs: the oracle tested nothing", graphs);
    fprintf(stderr, "fence oracle: %d graphs, %d fences\n", graphs, total_fences);
}

static void test_parallel_kernel_error(void)
{
    bp_graph *g;
    bp_plan *p;
    if (!eu_small_randwire(2, &g, &p)) return;
    bp_error e;
    int32_t fail_op = bp_plan_schedule(p)[bp_graph_n_ops(g) / 3];
    bp_digest_options d = {0, fail_op};
    for (int mode = 0; mode < 2; mode++) {
        bp_exec_options o;
        bp_exec_options_init(&o);
        o.mode = mode ? BP_EXEC_DYNAMIC : BP_EXEC_PLANNED;
        o.threads = 4;
        bp_exec *ex = NULL;
        CHECK_OK(bp_exec_new(g, p, &o, &ex, &e), e);
        if (!ex) continue;
        bp_exec_set_kernel(ex, bp_digest_kernel, &d);
        for (int rep = 0; rep < 3; rep++) {
            bp_exec_run_stats st;
            bp_status s = bp_exec_run(ex, &st, &e);
            char want[300];
            snprintf(want, sizeof want, "op \"%s\"", bp_graph_op_name(g, fail_op));
            CHECK_MSG(s == BP_ERR_KERNEL && strstr(e.msg, want), "x4: %d %s", (int)s, e.msg);
            CHECK(st.n_ops < (uint64_t)bp_graph_n_ops(g));
            bp_pool_stats ps;
            bp_pool_get_stats(bp_exec_pool(ex), &ps);
            CHECK_MSG(ps.n_live_blocks == 0, "%llu blocks left after a failed parallel run", (unsigned long long)ps.n_live_blocks);
        }
        d.fail_op = -1;
        bp_exec_run_stats st;
        CHECK_OK(bp_exec_run(ex, &st, &e), e);
        CHECK(st.n_ops == (uint64_t)bp_graph_n_ops(g));
        d.fail_op = fail_op;
        bp_exec_free(ex);
    }
    bp_plan_free(p);
    bp_graph_free(g);
}

int main(void)
{
    test_fence_oracle();
    test_parallel_kernel_error();
    test_generated_parallel();
    return check_status();
}
