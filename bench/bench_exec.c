/*
 * bench_exec — the executor's numbers (bench/suites/exec.sh):
 *  1. dispatch overhead per op with empty kernels on ~1M-op graphs (chain:
 *     nothing to run in parallel; randwire: wide), 1 and 2 threads;
 *  2. parallel speed-up with busy-wait kernels (--kernel-us, default 50) on
 *     wide graphs: 1 thread vs 2 threads with the best-fit plan (fences),
 *     the fence-aware plan, and safe mode (no reuse, no fences);
 *  3. allocation overhead and peak memory: planned vs dynamic (pool) vs
 *     dynamic (malloc), with digest kernels and with empty ones.
 * Plans use the kahn scheduler and best fit (or fence-aware) assignment.
 * Times are the best of --reps runs.  Prints Markdown tables.
 * usage: bench_exec [--quick] [--threads N] [--kernel-us U] [--reps R]
 */
#define _POSIX_C_SOURCE 200809L
#include "bufplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int spin_kernel(void *user, const bp_exec_call *c, bp_error *err)
{
    (void)c; (void)err;
    double us = *(const double *)user;
    double end = now() + us * 1e-6;
    while (now() < end) {}
    return 0;
}

static int empty_kernel(void *user, const bp_exec_call *c, bp_error *err)
{
    (void)user; (void)c; (void)err;
    return 0;
}

static void die(const char *what, const bp_error *e)
{
    fprintf(stderr, "bench_exec: %s: %s\n", what, e->msg);
    exit(2);
}

typedef struct res { double best, alloc; uint64_t peak, n_allocs, fences, arena, reserved; } res;

/* Best of reps runs of one configuration. */
static res run_cfg(const bp_graph *g, const bp_plan *p, bp_exec_mode mode, int threads, int use_malloc,
                   bp_kernel_fn fn, void *user, int reps, int digest_inputs)
{
    bp_exec_options o;
    bp_exec_options_init(&o);
    o.mode = mode;
    o.threads = threads;
    o.dynamic_malloc = use_malloc;
    o.time_allocs = 1;
    bp_exec *ex = NULL;
    bp_error e;
    if (bp_exec_new(g, p, &o, &ex, &e)) die("exec_new", &e);
    bp_exec_set_kernel(ex, fn, user);
    if (digest_inputs && bp_digest_fill_inputs(ex, 1, &e)) die("fill", &e);
    res r = {1e30, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < reps; k++) {
        bp_exec_run_stats st;
        if (bp_exec_run(ex, &st, &e)) die("run", &e);
        if (st.seconds < r.best) { r.best = st.seconds; r.alloc = st.alloc_seconds; }
        r.peak = st.peak_bytes;
        r.n_allocs = st.n_allocs;
    }
    bp_exec_info info;
    bp_exec_get_info(ex, &info);
    r.fences = info.n_fences;
    r.arena = mode == BP_EXEC_SAFE ? info.safe_bytes : info.arena_bytes;
    bp_pool_stats ps;
    bp_pool_get_stats(bp_exec_pool(ex), &ps);
    r.reserved = ps.peak_reserved_bytes;
    bp_exec_free(ex);
    return r;
}

static bp_graph *gen(const char *kind, int layers, int nodes, int width, int seq)
{
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.layers = layers;
    go.nodes = nodes;
    go.width = width;
    go.seq = seq;
    bp_graph *g = NULL;
    bp_error e;
    if (bp_gen(kind, &go, NULL, &g, &e)) die(kind, &e);
    return g;
}

static bp_plan *plan(const bp_graph *g, int fence_aware)
{
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.fence_aware = fence_aware;
    po.sched = BP_SCHED_KAHN;   /* the executor is measured, not the scheduler */
    bp_plan *p = NULL;
    bp_error e;
    if (bp_plan_graph(g, &po, &p, &e)) die("plan", &e);
    return p;
}

/* ops / longest path (in ops): the speed-up unbounded threads could reach
 * with equal op times. */
static double parallelism(const bp_graph *g, const bp_plan *p)
{
    int n = bp_graph_n_ops(g);
    const int32_t *order = bp_plan_schedule(p);
    int *lv = calloc((size_t)n, sizeof *lv);
    int best = 0;
    for (int s = 0; s < n; s++) {
        int op = order[s], l = 0;
        for (int i = 0; i < bp_graph_op_n_inputs(g, op); i++) {
            int32_t pr = bp_graph_tensor_producer(g, bp_graph_op_input(g, op, i));
            if (pr >= 0 && lv[pr] > l) l = lv[pr];
        }
        lv[op] = l + 1;
        if (lv[op] > best) best = lv[op];
    }
    free(lv);
    return best ? (double)n / best : 1.0;
}

static const char *mib(uint64_t b, char *buf)
{
    snprintf(buf, 32, "%.2f MiB", (double)b / 1048576.0);
    return buf;
}

int main(int argc, char **argv)
{
    int quick = 0, threads = 2, reps = 3;
    double kus = 50;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kernel-us") && i + 1 < argc) kus = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json")) { /* tables only */ }
        else { fprintf(stderr, "usage: bench_exec [--quick] [--threads N] [--kernel-us U] [--reps R]\n"); return 2; }
    }
    if (threads < 2) threads = 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    char b1[32], b2[32], b3[32];

    /* 1. dispatch overhead: a 1M-op chain (100k with --quick) and a ~90k-op
     * randwire (planning a 1M-op randwire with best fit takes minutes) */
    int n_ops = quick ? 100000 : 1000000;
    printf("## Dispatch overhead (empty kernels, best of %d runs)\n\n", reps);
    printf("| graph | ops | mode | threads | fences | run | per op | target |\n|---|---:|---|---:|---:|---:|---:|---|\n");
    {
        bp_graph *gs[2] = {gen("chain", 0, n_ops, 16, 0), gen("randwire", 1, 20000, 1, 0)};
        const char *names[2] = {"chain", "randwire"};
        for (int k = 0; k < 2; k++) {
            bp_plan *p = plan(gs[k], 0);
            int no = bp_graph_n_ops(gs[k]);
            int ths[2] = {1, threads};
            for (int t = 0; t < 2; t++) {
                res r = run_cfg(gs[k], p, BP_EXEC_PLANNED, ths[t], 0, empty_kernel, NULL, reps, 0);
                double ns = r.best * 1e9 / no;
                printf("| %s | %d | planned | %d | %llu | %.1f ms | %.0f ns | %s |\n", names[k], no, ths[t],
                       (unsigned long long)r.fences, r.best * 1e3, ns,
                       ths[t] == 1 ? (ns < 300 ? "< 300 ns: met" : "< 300 ns: MISSED") : (ns < 2000 ? "< 2 us: met" : "< 2 us: MISSED"));
            }
            bp_plan_free(p);
            bp_graph_free(gs[k]);
        }
    }

    /* 2. speed-up */
    printf("\n## Parallel speed-up (%.0f us busy-wait kernels, %d threads vs 1, best of %d)\n\n", kus, threads, reps);
    printf("| graph | ops | ops / longest path | 1 thread | %d thr. best fit (fences, arena) | %d thr. fence-aware (fences, arena) | %d thr. safe (no reuse) | fence cost |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|\n", threads, threads, threads);
    {
        /* randwire at two widths; the transformer with per-head attention
         * (nodes > 0) at width 512: 8 heads as parallel branches */
        bp_graph *gs[3] = {gen("randwire", quick ? 1 : 2, quick ? 32 : 64, 8, 0), gen("randwire", quick ? 1 : 2, quick ? 64 : 128, 8, 0),
                           gen("transformer", quick ? 1 : 2, 1, 512, 32)};
        const char *names[3] = {"randwire", "randwire (wider)", "transformer (8 heads)"};
        for (int k = 0; k < 3; k++) {
            bp_plan *p = plan(gs[k], 0), *pf = plan(gs[k], 1);
            res r1 = run_cfg(gs[k], p, BP_EXEC_PLANNED, 1, 0, spin_kernel, &kus, reps, 0);
            res r2 = run_cfg(gs[k], p, BP_EXEC_PLANNED, threads, 0, spin_kernel, &kus, reps, 0);
            res rf = run_cfg(gs[k], pf, BP_EXEC_PLANNED, threads, 0, spin_kernel, &kus, reps, 0);
            res rs = run_cfg(gs[k], NULL, BP_EXEC_SAFE, threads, 0, spin_kernel, &kus, reps, 0);
            double s2 = r1.best / r2.best, sf = r1.best / rf.best, ss = r1.best / rs.best;
            printf("| %s | %d | %.1f | %.1f ms | %.2fx (%llu, %s) | %.2fx (%llu, %s) | %.2fx (%s) | %.1f%% / %.1f%% |\n", names[k],
                   bp_graph_n_ops(gs[k]), parallelism(gs[k], p), r1.best * 1e3, s2, (unsigned long long)r2.fences, mib(r2.arena, b1), sf,
                   (unsigned long long)rf.fences, mib(rf.arena, b2), ss, mib(rs.arena, b3),
                   100.0 * (ss - s2) / ss, 100.0 * (ss - sf) / ss);
            bp_plan_free(p);
            bp_plan_free(pf);
            bp_graph_free(gs[k]);
        }
        printf("\nfence cost = (speed-up without reuse - speed-up with the plan) / speed-up without reuse, best fit / fence-aware.\n");
    }

    /* 3. allocation overhead and peak memory */
    printf("\n## Allocation overhead and peak memory (1 thread, best of %d)\n\n", reps);
    printf("| graph | kernels | mode | run | alloc time | share | run-time allocs | peak live activations | pool reserved (peak) |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n");
    {
        bp_graph *gs[3] = {gen("transformer", quick ? 2 : 4, 0, 256, 128), gen("resnet50", 0, 0, quick ? 16 : 32, 0),
                           gen("randwire", 1, quick ? 2000 : 20000, 1, 0)};
        const char *names[3] = {"transformer", "resnet50", "randwire"};
        for (int k = 0; k < 3; k++) {
            bp_plan *p = plan(gs[k], 0);
            for (int kern = 0; kern < 2; kern++) {
                struct { const char *name; bp_exec_mode m; int mal; } modes[3] = {
                    {"planned", BP_EXEC_PLANNED, 0}, {"dynamic (pool)", BP_EXEC_DYNAMIC, 0}, {"dynamic (malloc)", BP_EXEC_DYNAMIC, 1}};
                for (int m = 0; m < 3; m++) {
                    res r = run_cfg(gs[k], p, modes[m].m, 1, modes[m].mal, kern ? empty_kernel : bp_digest_kernel, NULL, reps, !kern);
                    printf("| %s | %s | %s | %.2f ms | %.3f ms | %.2f%% | %llu | %s%s | %s |\n", names[k], kern ? "empty" : "digest",
                           modes[m].name, r.best * 1e3, r.alloc * 1e3, 100.0 * r.alloc / r.best, (unsigned long long)r.n_allocs,
                           mib(r.peak, b1), m == 0 ? (r.peak == bp_plan_get_stats(p)->arena_bytes ? " (= arena)" : " (arena + dynamic)") : "",
                           modes[m].mal ? "-" : mib(r.reserved, b2));
                }
            }
            bp_plan_free(p);
            bp_graph_free(gs[k]);
        }
        printf("\nshare = time in ALLOC/FREE handling / run time.  Planned mode binds every tensor at plan time (one arena, zero run-time allocations).\n");
    }
    return 0;
}
