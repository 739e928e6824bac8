#define _POSIX_C_SOURCE 200809L
/*
 * bench_plan — the core planner's numbers:
 *   quality: naive vs color vs bestfit vs lower bound on the generated graphs;
 *   speed:   kahn + lifetimes + bestfit + events + verify on randwire graphs of
 *            10^4 .. 10^7 tensors (graph already in memory), with the planner's
 *            own peak memory per tensor (a counting allocator).
 * usage: bench_plan [quality|speed|all] [--quick] [--min N] [--max N]
 */
#include <bufplan.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Counts the planner's bytes; the memory itself comes from the library's
 * default allocator (malloc with huge-page advice on large blocks). */
typedef struct counting { size_t live, peak; } counting;
static void *c_alloc(void *ctx, size_t n)
{
    counting *c = ctx;
    const bp_allocator *d = bp_allocator_default();
    void *p = d->alloc(d->ctx, n);
    if (p) { c->live += n; if (c->live > c->peak) c->peak = c->live; }
    return p;
}
static void *c_realloc(void *ctx, void *p, size_t o, size_t n)
{
    counting *c = ctx;
    const bp_allocator *d = bp_allocator_default();
    void *q = d->realloc(d->ctx, p, o, n);
    if (q) { c->live += n - o; if (c->live > c->peak) c->peak = c->live; }
    return q;
}
static void c_free(void *ctx, void *p, size_t n)
{
    counting *c = ctx;
    const bp_allocator *d = bp_allocator_default();
    if (p) c->live -= n;
    d->free(d->ctx, p, n);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void quality(void)
{
    static const char *const kinds[] = {"resnet50", "unet", "transformer", "randwire"};
    printf("### Assigners on the generated graphs (kahn order, alignment 256)\n\n");
    printf("| graph | tensors | naive | color | bestfit | lower bound | color/naive | bestfit/naive | bestfit/LB | color/LB |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        bp_error err;
        bp_gen_options go;
        bp_gen_options_init(&go);
        bp_graph *g = NULL;
        if (bp_gen(kinds[k], &go, NULL, &g, &err)) { fprintf(stderr, "%s\n", err.msg); continue; }
        uint64_t arena[BP_ASSIGN_COUNT] = {0}, lb = 0, naive = 0;
        for (int a = BP_ASSIGN_NAIVE; a <= BP_ASSIGN_BESTFIT; a++) {
            bp_plan_options po;
            bp_plan_options_init(&po);
            po.sched = BP_SCHED_KAHN;
            po.assign = (bp_assign_kind)a;
            bp_plan *p = NULL;
            if (bp_plan_graph(g, &po, &p, &err) || bp_verify(g, p, &err)) { fprintf(stderr, "%s: %s\n", kinds[k], err.msg); bp_plan_free(p); continue; }
            arena[a] = bp_plan_get_stats(p)->arena_bytes;
            lb = bp_plan_get_stats(p)->lower_bound_bytes;
            naive = bp_plan_get_stats(p)->naive_bytes;
            bp_plan_free(p);
        }
        printf("| %s | %d | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB | %.3f | %.3f | %.4f | %.3f |\n", kinds[k], bp_graph_n_tensors(g),
               naive / 1048576.0, arena[BP_ASSIGN_COLOR] / 1048576.0, arena[BP_ASSIGN_BESTFIT] / 1048576.0, lb / 1048576.0,
               (double)arena[BP_ASSIGN_COLOR] / (double)naive, (double)arena[BP_ASSIGN_BESTFIT] / (double)naive,
               (double)arena[BP_ASSIGN_BESTFIT] / (double)lb, (double)arena[BP_ASSIGN_COLOR] / (double)lb);
        bp_graph_free(g);
    }
    printf("\n");
}

static void speed(long min_tensors, long max_tensors, bp_assign_kind assign)
{
    printf("### Planning speed on randwire (kahn + lifetimes + %s + events + verify, one core)\n\n", bp_assign_name(assign));
    printf("| tensors | ops | gen s | plan s | verify s | total s | us/tensor | (plan+verify)/(n log2 n) ns | planner bytes/tensor | arena/LB |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (long target = 10000; target <= max_tensors; target *= 10) {
        if (target < min_tensors) continue;
        bp_error err;
        bp_gen_options go;
        bp_gen_options_init(&go);
        /* randwire: about 8.2 tensors per node per stage, 3 stages */
        go.nodes = (int)(target * 10 / 245 > 8 ? target * 10 / 245 : 8);
        go.layers = 3;
        counting cnt = {0, 0};
        bp_allocator al = {c_alloc, c_realloc, c_free, &cnt};
        double t0 = now();
        bp_graph *g = NULL;
        if (bp_gen("randwire", &go, &al, &g, &err)) { fprintf(stderr, "%s\n", err.msg); return; }
        double t1 = now();
        size_t graph_bytes = cnt.live;
        cnt.peak = cnt.live;
        bp_plan_options po;
        bp_plan_options_init(&po);
        po.sched = BP_SCHED_KAHN;
        po.assign = assign;
        bp_plan *p = NULL;
        if (bp_plan_graph(g, &po, &p, &err)) { fprintf(stderr, "%s\n", err.msg); bp_graph_free(g); return; }
        double t2 = now();
        if (bp_verify(g, p, &err)) { fprintf(stderr, "verify: %s\n", err.msg); }
        double t3 = now();
        double n = (double)bp_graph_n_tensors(g);
        printf("| %d | %d | %.2f | %.3f | %.3f | %.3f | %.3f | %.1f | %.0f | %.4f |\n", bp_graph_n_tensors(g), bp_graph_n_ops(g),
               t1 - t0, t2 - t1, t3 - t2, t3 - t1, (t3 - t1) / n * 1e6, (t3 - t1) / (n * log2(n)) * 1e9,
               (double)(cnt.peak - graph_bytes) / n,
               (double)bp_plan_get_stats(p)->arena_bytes / (double)bp_plan_get_stats(p)->lower_bound_bytes);
        fflush(stdout);
        bp_plan_free(p);
        bp_graph_free(g);
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    const char *what = "all";
    long max = 10000000, min = 0;
    bp_assign_kind assign = BP_ASSIGN_BESTFIT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) max = 1000000;
        else if (!strcmp(argv[i], "--max") && i + 1 < argc) max = atol(argv[++i]);
        else if (!strcmp(argv[i], "--min") && i + 1 < argc) min = atol(argv[++i]);
        else if (!strcmp(argv[i], "-a") && i + 1 < argc) { if (bp_assign_parse(argv[++i], &assign)) return 2; }
        else what = argv[i];
    }
    if (!strcmp(what, "quality") || !strcmp(what, "all")) quality();
    if (!strcmp(what, "speed") || !strcmp(what, "all")) speed(min, max, assign);
    return 0;
}
