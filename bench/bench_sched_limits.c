#define _POSIX_C_SOURCE 200809L
/*
 * bench_sched_limits — does `best` stop when its answer is proven, and does
 * `optimal` honour its time limit?
 *   Per graph (the generated graphs, plain and --training, the 4-layer and
 *   12-layer encoders with and without separate heads, and every ONNX model
 *   in a directory with the symbol N bound to 1): the whole planning time
 *   (bp_plan_graph) and the order's peak of `given`; the order-independent
 *   lower bound `best` knows before it searches (its portfolio and bounds
 *   only); `best` with the default options; `optimal` with --time-limit S.
 *   One CSV row per graph; `meets` says whether given's peak already equals
 *   the bound, `target` whether best's time is within 5 x given + 2 ms there.
 *   Times of given and best (wall and process CPU) are the median of
 *   --repeat runs (default 5; the machine is shared), optimal runs once.
 * usage: bench_sched_limits [--onnx DIR] [--time-limit S] [--no-optimal] [--only NAME] [--repeat N]
 */
#include <bufplan.h>
#include "onnxdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct run { double ms, cpu_ms, sched_ms; uint64_t peak; int proven; } run;

/* CPU seconds of this process: less disturbed than the wall clock by other
 * work on a shared machine. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Plans g with scheduler k (time limit tl, <= 0: the default); 0 on success. */
static int plan_one(const bp_graph *g, bp_sched_kind k, double tl, run *r)
{
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.sched = k;
    if (tl > 0) po.time_limit = tl;
    bp_plan *p = NULL;
    bp_error err;
    double c0 = cpu_now();
    if (bp_plan_graph(g, &po, &p, &err)) { fprintf(stderr, "%s: %s\n", bp_graph_name(g), err.msg); return 1; }
    r->cpu_ms = (cpu_now() - c0) * 1e3;
    const bp_plan_stats *st = bp_plan_get_stats(p);
    r->ms = st->plan_seconds * 1e3;
    r->sched_ms = st->schedule_seconds * 1e3;
    r->peak = st->lower_bound_bytes;
    r->proven = st->sched_optimal;
    bp_plan_free(p);
    return 0;
}

/* The bound best knows without searching: best with almost no time. */
static uint64_t bound_of(const bp_graph *g)
{
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.sched = BP_SCHED_BEST;
    po.time_limit = 1e-9;
    int32_t *order = malloc(((size_t)bp_graph_n_ops(g) + 1) * sizeof *order);
    bp_schedule_info info;
    bp_error err;
    uint64_t lb = 0;
    if (order && !bp_schedule_ex(g, &po, order, &info, &err)) lb = info.optimal ? info.peak_bytes : info.lower_bound;
    free(order);
    return lb;
}

static double opt_limit = 1.0;
static int no_optimal, repeat = 5;

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_dbl);
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* plan_one `repeat` times; r->ms and r->cpu_ms are the medians (the rest
 * from the last run). */
static int plan_median(const bp_graph *g, bp_sched_kind k, run *r)
{
    double ms[64], cpu[64];
    int n = repeat < 1 ? 1 : repeat > 64 ? 64 : repeat;
    for (int i = 0; i < n; i++) {
        if (plan_one(g, k, 0, r)) return 1;
        ms[i] = r->ms;
        cpu[i] = r->cpu_ms;
    }
    r->ms = median(ms, n);
    r->cpu_ms = median(cpu, n);
    return 0;
}

static void row(const char *name, const bp_graph *g)
{
    run gv, bs, op = {0, 0, 0, 0, 0};
    if (plan_median(g, BP_SCHED_GIVEN, &gv) || plan_median(g, BP_SCHED_BEST, &bs)) return;
    if (!no_optimal && plan_one(g, BP_SCHED_OPTIMAL, opt_limit, &op)) return;
    uint64_t lb = bound_of(g);
    int meets = gv.peak <= lb;
    printf("%s,%d,%.3f,%llu,%llu,%d,%.3f,%llu,%d,%s,%.3f,%.3f,%llu,%d,%.3f,%.3f\n", name, bp_graph_n_ops(g), gv.ms,
           (unsigned long long)gv.peak, (unsigned long long)lb, meets, bs.ms, (unsigned long long)bs.peak, bs.proven,
           meets ? (bs.ms <= 5 * gv.ms + 2 ? "yes" : "NO") : "-", no_optimal ? 0 : opt_limit, op.sched_ms / 1e3,
           (unsigned long long)op.peak, op.proven, gv.cpu_ms, bs.cpu_ms);
    fflush(stdout);
}

static void gen_rows(const char *only)
{
    static const struct { const char *kind, *label; int layers, nodes; } gens[] = {
        {"resnet50", "resnet50", 0, 0}, {"unet", "unet", 0, 0}, {"randwire", "randwire", 0, 0},
        {"transformer", "transformer-12", 12, 0}, {"transformer", "transformer-4", 4, 0},
        {"transformer", "transformer-12-heads", 12, 1}, {"transformer", "transformer-4-heads", 4, 1},
    };
    for (size_t i = 0; i < sizeof gens / sizeof gens[0]; i++)
        for (int tr = 0; tr < 2; tr++) {
            char name[96];
            snprintf(name, sizeof name, "gen:%s%s", gens[i].label, tr ? "-training" : "");
            if (only && !strstr(name, only)) continue;
            bp_gen_options go;
            bp_gen_options_init(&go);
            go.layers = gens[i].layers;
            go.nodes = gens[i].nodes;
            go.training = tr;
            bp_graph *g = NULL;
            bp_error err;
            if (bp_gen(gens[i].kind, &go, NULL, &g, &err)) { fprintf(stderr, "gen %s: %s\n", name, err.msg); continue; }
            row(name, g);
            bp_graph_free(g);
        }
}

static void onnx_rows(const char *dir, const char *only)
{
    char *names[256];
    int n = onnxdir_list(dir, only, names, 256);
    for (int i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        bp_graph *g = NULL;
        bp_error err;
        bp_status rs = bp_graph_read(path, NULL, &g, &err);
        if (!rs) rs = bp_graph_bind_dim(g, "N", 1, &err);
        if (!rs) rs = bp_graph_finalize(g, &err);
        if (rs) fprintf(stderr, "skipping %s: %s\n", path, err.msg);
        else row(names[i], g);
        bp_graph_free(g);
        free(names[i]);
    }
}

int main(int argc, char **argv)
{
    const char *onnx = NULL, *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--onnx") && i + 1 < argc) onnx = argv[++i];
        else if (!strcmp(argv[i], "--time-limit") && i + 1 < argc) opt_limit = atof(argv[++i]);
        else if (!strcmp(argv[i], "--no-optimal")) no_optimal = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_sched_limits [--onnx DIR] [--time-limit S] [--no-optimal] [--only NAME] [--repeat N]\n");
            return 2;
        }
    }
    printf("graph,ops,given_ms,given_peak,bound,given_meets_bound,best_ms,best_peak,best_proven,best_target,"
           "optimal_limit_s,optimal_s,optimal_peak,optimal_proven,given_cpu_ms,best_cpu_ms\n");
    gen_rows(only);
    if (onnx) onnx_rows(onnx, only);
    return 0;
}
