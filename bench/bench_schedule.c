#define _POSIX_C_SOURCE 200809L
/*
 * bench_schedule — every scheduler side by side.
 *   quality: peak (the order's lower bound, MiB) of given, kahn, dfs, list,
 *            lpmf, seed and best on the generated graphs (resnet50, unet,
 *            transformer, randwire, each also --training), the training
 *            graphs in $BP_DATA/graphs/training and the ONNX models under
 *            $BP_DATA/onnx; best / given, best vs list, and best's time.
 *   speed:   list, lpmf, seed and best (its default time limit) on a
 *            randwire graph of about 10^6 ops.
 *   ONNX models with symbolic dimensions get them bound: batch-like symbols
 *   (N, batch*, unk*) to 1, every other symbol to 640 (the detector's input).
 *   orders:  for regression checks of the fast orders: per graph and per
 *            scheduler (list, lpmf, seed, with and without random tie-breaks)
 *            the peak, an FNV-1a hash of the order, and the time of the
 *            scheduler alone (the sgraph is built once, timed apart).
 * usage: bench_schedule [quality|speed|orders|all] [--quick] [--json] [--time-limit S] [--no-best]
 */
#include <bufplan.h>
#include "bufplan_sched.h"
#include "plan/plan_internal.h" /* the graph's symbol names, to bind them */
#include "schedule/schedule_internal.h" /* orders: the schedulers alone */

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const bp_sched_kind kinds[] = {BP_SCHED_GIVEN, BP_SCHED_KAHN, BP_SCHED_DFS, BP_SCHED_LIST,
                                      BP_SCHED_LPMF, BP_SCHED_SEED, BP_SCHED_BEST};
#define NK (int)(sizeof kinds / sizeof kinds[0])

static int json_out, n_rows, n_worse;
static double time_limit = 2.0;
static int speed_no_best;

static void row(const char *name, bp_graph *g)
{
    int32_t n = bp_graph_n_ops(g);
    int32_t *order = malloc(((size_t)n + 1) * sizeof *order);
    if (!order) return;
    uint64_t peak[NK];
    double secs[NK];
    int ok[NK], optimal = 0;
    for (int k = 0; k < NK; k++) {
        bp_plan_options po;
        bp_plan_options_init(&po);
        po.sched = kinds[k];
        po.time_limit = time_limit;
        bp_schedule_info info;
        bp_error err;
        double t0 = now();
        ok[k] = bp_schedule_ex(g, &po, order, &info, &err) == BP_OK;
        secs[k] = now() - t0;
        peak[k] = ok[k] ? info.peak_bytes : 0;
        if (kinds[k] == BP_SCHED_BEST) optimal = info.optimal;
    }
    uint64_t base = UINT64_MAX;
    for (int k = 0; k < NK - 1; k++)
        if (ok[k] && peak[k] < base) base = peak[k];
    uint64_t best = peak[NK - 1];
    if (best > base) n_worse++;
    n_rows++;
    double r_given = ok[0] && best ? (double)peak[0] / (double)best : 0;
    double r_list = peak[3] ? 100.0 * (1.0 - (double)best / (double)peak[3]) : 0;
    if (json_out) {
        printf("{\"graph\":\"%s\",\"ops\":%d", name, n);
        for (int k = 0; k < NK; k++)
            printf(",\"%s\":%s%llu", bp_sched_name(kinds[k]), ok[k] ? "" : "-", (unsigned long long)peak[k]);
        printf(",\"best_seconds\":%.3f,\"optimal\":%d}\n", secs[NK - 1], optimal);
        fflush(stdout);
        free(order);
        return;
    }
    printf("| %s | %d |", name, n);
    for (int k = 0; k < NK; k++) {
        if (!ok[k]) printf(" - |");
        else printf(" %.2f |", (double)peak[k] / 1048576.0);
    }
    printf(" %.2fx | %.1f%% | %.2f%s | %.3f |\n", r_given, r_list, secs[NK - 1], optimal ? " (opt)" : "",
           secs[3] + secs[4] + secs[5]);
    fflush(stdout);
    free(order);
}

static void header(void)
{
    if (json_out) return;
    printf("| graph | ops |");
    for (int k = 0; k < NK; k++) printf(" %s MiB |", bp_sched_name(kinds[k]));
    printf(" given/best | best vs list | best s | list+lpmf+seed s |\n|---|---:|");
    for (int k = 0; k < NK; k++) printf("---:|");
    printf("---:|---:|---:|---:|\n");
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Files under dir ending in ext, recursively, sorted. */
static int list_files(const char *dir, const char *ext, char **out, int max, int n)
{
    DIR *d = opendir(dir);
    if (!d) return n;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (e->d_name[0] == '.') continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t l = strlen(e->d_name), el = strlen(ext);
        if (l > el && !strcmp(e->d_name + l - el, ext)) out[n++] = strdup(path);
        else if (!strchr(e->d_name, '.')) n = list_files(path, ext, out, max, n);
    }
    closedir(d);
    qsort(out, (size_t)n, sizeof *out, cmp_str);
    return n;
}

static void quality(int quick)
{
    const char *data = getenv("BP_DATA");
    if (!data || !*data) data = "../shared/data";
    header();
    static const char *const gens[] = {"resnet50", "unet", "transformer", "randwire"};
    for (int tr = 0; tr < 2; tr++)
        for (size_t i = 0; i < sizeof gens / sizeof gens[0]; i++) {
            bp_gen_options go;
            bp_gen_options_init(&go);
            go.training = tr;
            bp_graph *g = NULL;
            bp_error err;
            if (bp_gen(gens[i], &go, NULL, &g, &err)) { fprintf(stderr, "gen %s: %s\n", gens[i], err.msg); continue; }
            char name[64];
            snprintf(name, sizeof name, "gen %s%s", gens[i], tr ? " --training" : "");
            row(name, g);
            bp_graph_free(g);
        }
    if (quick) return;
    char *files[256];
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/graphs/training", data);
    int nf = list_files(dir, ".json", files, 256, 0);
    snprintf(dir, sizeof dir, "%s/onnx", data);
    int nf2 = list_files(dir, ".onnx", files + nf, 256 - nf, 0);
    qsort(files + nf, (size_t)nf2, sizeof *files, cmp_str);
    for (int i = 0; i < nf + nf2; i++) {
        bp_graph *g = NULL;
        bp_error err;
        bp_status rs = bp_graph_read(files[i], NULL, &g, &err);
        for (size_t k = 0; !rs && k < g->syms.n; k++) {
            const char *sym = bp__names_get(&g->syms, (int32_t)k);
            bool batch = !strcmp(sym, "N") || !strncmp(sym, "batch", 5) || !strncmp(sym, "unk", 3);
            rs = bp_graph_bind_dim(g, sym, batch ? 1 : 640, &err);
        }
        if (rs || bp_graph_finalize(g, &err)) {
            fprintf(stderr, "skipping %s: %s\n", files[i], err.msg);
            bp_graph_free(g);
            free(files[i]);
            continue;
        }
        const char *base = strstr(files[i], "/data/") ? strstr(files[i], "/data/") + 6 : files[i];
        row(base, g);
        bp_graph_free(g);
        free(files[i]);
    }
}

static void speed(int quick)
{
    bp_gen_options go;
    bp_gen_options_init(&go);
    int target = quick ? 100000 : 1000000;
    go.nodes = target / 14; /* randwire makes about 14 ops per node */
    bp_graph *g = NULL;
    bp_error err;
    double t0 = now();
    if (bp_gen("randwire", &go, NULL, &g, &err)) { fprintf(stderr, "gen randwire: %s\n", err.msg); return; }
    int32_t n = bp_graph_n_ops(g);
    fprintf(stderr, "randwire with %d ops generated in %.1f s\n", n, now() - t0);
    int32_t *order = malloc((size_t)n * sizeof *order);
    static const bp_sched_kind sk[] = {BP_SCHED_KAHN, BP_SCHED_LIST, BP_SCHED_LPMF, BP_SCHED_SEED, BP_SCHED_BEST};
    if (!json_out) printf("\n| scheduler (randwire, %d ops) | peak MiB | seconds | CPU seconds |\n|---|---:|---:|---:|\n", n);
    for (size_t k = 0; k < sizeof sk / sizeof sk[0] - (size_t)speed_no_best; k++) {
        bp_plan_options po;
        bp_plan_options_init(&po);
        po.sched = sk[k];
        bp_schedule_info info;
        t0 = now();
        double c0 = cpu_now();
        bp_status s = bp_schedule_ex(g, &po, order, &info, &err);
        double dt = now() - t0, dc = cpu_now() - c0;
        if (s) { fprintf(stderr, "%s: %s\n", bp_sched_name(sk[k]), err.msg); continue; }
        if (json_out) printf("{\"speed\":\"%s\",\"ops\":%d,\"peak\":%llu,\"seconds\":%.3f,\"cpu_seconds\":%.3f}\n",
                             bp_sched_name(sk[k]), n, (unsigned long long)info.peak_bytes, dt, dc);
        else printf("| %s%s | %.2f | %.2f | %.2f |\n", bp_sched_name(sk[k]), sk[k] == BP_SCHED_BEST ? " (default limit)" : "",
                    (double)info.peak_bytes / 1048576.0, dt, dc);
        fflush(stdout);
    }
    free(order);
    bp_graph_free(g);
}

/* ------------------------------------------------------------- orders */

static uint64_t order_hash(const int32_t *order, int32_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int32_t i = 0; i < n; i++) {
        uint32_t v = (uint32_t)order[i];
        for (int b = 0; b < 4; b++) { h ^= (v >> (8 * b)) & 0xff; h *= 0x100000001b3ull; }
    }
    return h;
}

static void orders_graph(const char *name, bp_graph *g)
{
    bp__sgraph sg;
    bp__eval ev;
    bp_error err;
    double t0 = now();
    if (bp__sgraph_build(g, NULL, &sg, &err)) { fprintf(stderr, "%s: %s\n", name, err.msg); return; }
    double tsg = now() - t0;
    if (bp__eval_init(&ev, &sg, &err)) { bp__sgraph_free(&sg); return; }
    int32_t n = sg.n;
    int32_t *order = malloc(((size_t)n + 1) * sizeof *order);
    double *cost = malloc(((size_t)n + 1) * sizeof *cost);
    if (!order || !cost) goto out;
    t0 = now();
    bp__op_costs(g, cost);
    double tco = now() - t0;
    printf("%s: ops %d sgraph %.3f s, costs %.3f s\n", name, n, tsg, tco);
    static const uint64_t ties[] = {0, 0x5eed5eedull};
    for (int k = 0; k < 3; k++)
        for (size_t ti = 0; ti < sizeof ties / sizeof ties[0]; ti++) {
            bp_status st;
            const char *nm = k == 0 ? "list" : k == 1 ? "lpmf" : "seed";
            t0 = now();
            if (k == 0) st = bp__sched_list(&sg, ties[ti], order, &err);
            else if (k == 1) st = bp__sched_lpmf(&sg, ties[ti], order, &err);
            else st = bp__sched_seed(&sg, cost, ti ? 0.37 : 0.7, ti ? 0.63 : 0.3, ties[ti], order, &err);
            double dt = now() - t0;
            if (st) { printf("  %s tie %zu: %s\n", nm, ti, err.msg); continue; }
            uint64_t pk = bp__eval_peak(&ev, order, NULL);
            printf("  %-4s tie %zu peak %llu hash %016llx  %.3f s\n", nm, ti, (unsigned long long)pk,
                   (unsigned long long)order_hash(order, n), dt);
            fflush(stdout);
        }
out:
    free(order);
    free(cost);
    bp__eval_free(&ev);
    bp__sgraph_free(&sg);
}

static void orders(int quick)
{
    const char *data = getenv("BP_DATA");
    if (!data || !*data) data = "../shared/data";
    static const char *const gens[] = {"resnet50", "unet", "transformer", "randwire"};
    for (int tr = 0; tr < 2; tr++)
        for (size_t i = 0; i < sizeof gens / sizeof gens[0]; i++) {
            bp_gen_options go;
            bp_gen_options_init(&go);
            go.training = tr;
            bp_graph *g = NULL;
            bp_error err;
            if (bp_gen(gens[i], &go, NULL, &g, &err)) continue;
            char name[64];
            snprintf(name, sizeof name, "gen %s%s", gens[i], tr ? " --training" : "");
            orders_graph(name, g);
            bp_graph_free(g);
        }
    static const char *const files[] = {"convnext_tiny", "densenet121", "inception_v3", "swin_t", "vit_b_16",
                                        "mobilenet_v3_small"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/graphs/training/%s.json", data, files[i]);
        bp_graph *g = NULL;
        bp_error err;
        if (bp_graph_read(path, NULL, &g, &err) || bp_graph_finalize(g, &err)) {
            fprintf(stderr, "skipping %s: %s\n", path, err.msg);
            bp_graph_free(g);
            continue;
        }
        orders_graph(files[i], g);
        bp_graph_free(g);
    }
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.nodes = (quick ? 100000 : 1000000) / 14;
    bp_graph *g = NULL;
    bp_error err;
    if (bp_gen("randwire", &go, NULL, &g, &err)) return;
    orders_graph(quick ? "randwire 1e5" : "randwire 1e6", g);
    bp_graph_free(g);
}

int main(int argc, char **argv)
{
    const char *what = "all";
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--json")) json_out = 1;
        else if (!strcmp(argv[i], "--time-limit") && i + 1 < argc) time_limit = atof(argv[++i]);
        else if (!strcmp(argv[i], "--no-best")) speed_no_best = 1;
        else if (argv[i][0] != '-') what = argv[i];
        else { fprintf(stderr, "usage: bench_schedule [quality|speed|orders|all] [--quick] [--json] [--time-limit S] [--no-best]\n"); return 2; }
    }
    if (quick && time_limit > 0.5) time_limit = 0.5;
    if (!strcmp(what, "quality") || !strcmp(what, "all")) quality(quick);
    if (!strcmp(what, "speed") || !strcmp(what, "all")) speed(quick);
    if (!strcmp(what, "orders")) orders(quick);
    if (!json_out && n_rows) printf("\nbest <= min(baselines) on %d of %d graphs\n", n_rows - n_worse, n_rows);
    return n_worse ? 1 : 0;
}
