/*
 * bench_assign — every interval assigner side by side (naive, color, bestfit,
 * search) on the MiniMalloc instances and the ONNX lifetime CSVs, then
 * bestfit's scaling on random graph-like interval sets.  Prints Markdown.
 *
 *   bench_assign [--quick] [--data DIR] [--time-limit S] [--max-n N] [--only SUBSTR]
 *   bench_assign --nodes N1,N2,... [--reps R] [--data DIR] [--only SUBSTR]
 *
 * --nodes runs search on a node budget (bp__assign_search_ex: the result is
 * a function of the input and the budget) for each budget on every
 * MiniMalloc and ONNX instance and prints the nodes used, the arena, whether
 * it is proven optimal, an FNV-1a hash of all offsets and the CPU time; two
 * builds that make the same decisions print the same nodes, arena and hash.
 * CPU ns / node subtracts the CPU time of a 1-node run (the incumbent phase);
 * with --reps R each time is the least of R runs.
 *
 * Times are wall clock per call, the best of 5 calls for naive, color and
 * bestfit (the scaling table also gives CPU time: the machine may be shared).  "best known" is the smallest arena published or found so far for each
 * instance (../shared/data/minimalloc/README.md and onnx/README.md).
 */
#define _POSIX_C_SOURCE 200809L
#include "bufplan.h"
#include "assign/assign_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef unsigned long long ull;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Best known arenas from the data READMEs (MiniMalloc runs there). */
static const struct { const char *name; ull best; } best_known[] = {
    {"A.1048576", 1048576}, {"B.1048576", 1048576}, {"C.1048576", 1039360},
    {"D.1048576", 1038336}, {"E.1048576", 1048576}, {"F.1048576", 1048576},
    {"G.1048576", 1048576}, {"H.1048576", 1048576}, {"I.1048576", 1048576},
    {"J.1048576", 1041408}, {"K.1048576", 1048576}, {"input.12", 12},
    {"light_densenet121", 40133408},
};

static ull lookup_best(const char *name, ull lb, int is_onnx)
{
    for (size_t i = 0; i < sizeof best_known / sizeof best_known[0]; i++)
        if (!strcmp(best_known[i].name, name)) return best_known[i].best;
    return is_onnx ? lb : 0; /* onnx: MiniMalloc packs the others at the bound */
}

static void fmt_ms(char *b, size_t n, double s)
{
    if (s < 0.01) snprintf(b, n, "%.2f ms", s * 1e3);
    else if (s < 1) snprintf(b, n, "%.0f ms", s * 1e3);
    else snprintf(b, n, "%.2f s", s);
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The *.csv files of dir whose names contain only (all when NULL), sorted;
 * -1 when dir cannot be opened. */
static int list_csv(const char *dir, const char *only, char *names[256])
{
    DIR *d = opendir(dir);
    if (!d) { printf("(%s not found)\n", dir); return -1; }
    int nn = 0;
    struct dirent *de;
    while ((de = readdir(d)) && nn < 256) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".csv") && (!only || strstr(de->d_name, only)))
            names[nn++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)nn, sizeof *names, cmp_str);
    return nn;
}

/* Reads instance dir/name (a name from list_csv, freed here) and its name
 * without ".csv" into base; NULL after printing a row with the error. */
static bp_instance *read_listed(const char *dir, char *name, char base[256])
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(base, 256, "%s", name);
    base[strlen(base) - 4] = 0;
    free(name);
    bp_instance *inst;
    bp_error e;
    if (bp_instance_read_csv(path, NULL, &inst, &e) != BP_OK) {
        printf("| %s | error: %s |\n", base, e.msg);
        return NULL;
    }
    return inst;
}

/* Calls fn on each instance of dir whose name contains only (all when
 * NULL), in name order, with its name without ".csv" and a scratch offsets
 * array of its size; an unreadable file gets an error row instead. */
typedef void (*instance_fn)(const char *base, const bp_instance *inst, uint64_t *off, void *ctx);

static void each_instance(const char *dir, const char *only, instance_fn fn, void *ctx)
{
    char *names[256];
    int nn = list_csv(dir, only, names);
    if (nn < 0) return;
    for (int f = 0; f < nn; f++) {
        char base[256];
        bp_instance *inst = read_listed(dir, names[f], base);
        if (!inst) continue;
        uint64_t *off = calloc(inst->n ? inst->n : 1, sizeof *off);
        if (off) fn(base, inst, off, ctx);
        else printf("| %s | error: out of memory |\n", base);
        free(off);
        bp_instance_free(inst);
    }
}

typedef struct { int is_onnx; double limit; } table_ctx;

/* One row of the side-by-side table: every assigner on one instance. */
static void table_row(const char *base, const bp_instance *inst, uint64_t *off, void *ctx)
{
    const table_ctx *t = ctx;
    bp_error e;
    ull lb = bp_intervals_max_live(inst->iv, inst->n);
    ull best = lookup_best(base, lb, t->is_onnx);
    printf("| %s | %zu | %llu |", base, inst->n, lb);
    if (best) printf(" %llu |", best); else printf(" ? |");
    for (int k = 0; k < BP_ASSIGN_COUNT; k++) {
        bp_assign_options o;
        bp_assign_options_init(&o);
        o.time_limit = t->limit;
        bp_assign_result r;
        /* the fast assigners: best of 5 calls (the machine may be shared) */
        int reps = k == BP_ASSIGN_SEARCH ? 1 : 5;
        double dt = 1e30;
        bp_status s = BP_OK;
        for (int rep = 0; rep < reps && s == BP_OK; rep++) {
            double t0 = now();
            s = bp_assign_intervals(inst->iv, inst->n, (bp_assign_kind)k, &o, off, &r, &e);
            if (now() - t0 < dt) dt = now() - t0;
        }
        if (s == BP_OK) s = bp_intervals_check(inst->iv, inst->n, off, r.arena_bytes, &e);
        if (s != BP_OK) { printf(" FAILED: %s |", e.msg); continue; }
        char tb[32];
        fmt_ms(tb, sizeof tb, dt);
        double rl = lb ? (double)r.arena_bytes / (double)lb : 1.0;
        double rb = best ? (double)r.arena_bytes / (double)best : 0.0;
        if (k == BP_ASSIGN_SEARCH)
            printf(" %llu | %.4f | %.4f | %s | %s%s |", (ull)r.arena_bytes, rl, rb, tb,
                   r.optimal ? "yes" : "no",
                   r.optimal && r.lower_bound > lb ? " (LB raised)" : "");
        else if (k == BP_ASSIGN_BESTFIT)
            printf(" %llu | %.4f | %.4f | %s |", (ull)r.arena_bytes, rl, rb, tb);
        else
            printf(" %.3f |", rl);
    }
    printf("\n");
    fflush(stdout);
}

static void run_dir(const char *dir, int is_onnx, double limit, const char *only)
{
    table_ctx t = { is_onnx, limit };
    each_instance(dir, only, table_row, &t);
}

static uint64_t fnv_offsets(const uint64_t *off, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++) { h ^= (off[i] >> (8 * b)) & 0xff; h *= 1099511628211ull; }
    return h;
}

/* One node-budgeted search (the least CPU time of `reps` runs); false on
 * error (printed). */
static int run_budget(const bp_instance *inst, uint64_t budget, int reps, uint64_t *off, bp_assign_result *r, double *cpu)
{
    *cpu = 1e30;
    for (int i = 0; i < reps; i++) {
        bp_assign_options o;
        bp_assign_options_init(&o);
        o.time_limit = 0; /* no clock: the budget alone ends it */
        bp_error e;
        memset(r, 0, sizeof *r);
        r->lower_bound = bp_intervals_max_live(inst->iv, inst->n);
        double c0 = cpu_now();
        bp_status s = bp__assign_search_ex(inst->iv, inst->n, &o, budget, off, r, &e);
        double dc = cpu_now() - c0;
        if (dc < *cpu) *cpu = dc;
        if (s == BP_OK) s = bp_intervals_check(inst->iv, inst->n, off, r->arena_bytes, &e);
        if (s != BP_OK) { printf("| FAILED: %s |\n", e.msg); return 0; }
    }
    return 1;
}

typedef struct { const uint64_t *budgets; int nb, reps; } nodes_ctx;

/* The --nodes rows of one instance: one per node budget. */
static void nodes_rows(const char *base, const bp_instance *inst, uint64_t *off, void *ctx)
{
    const nodes_ctx *t = ctx;
    bp_assign_result r0, r;
    double c0 = 0, c1 = 0;
    if (!run_budget(inst, 1, t->reps, off, &r0, &c0)) return;
    for (int i = 0; i < t->nb; i++) {
        if (!run_budget(inst, t->budgets[i], t->reps, off, &r, &c1)) break;
        double dn = (double)r.nodes - (double)r0.nodes;
        printf("| %s | %llu | %llu | %llu | %s | %016llx | %.1f ms |", base, (ull)t->budgets[i], (ull)r.nodes,
               (ull)r.arena_bytes, r.optimal ? "yes" : "no", (ull)fnv_offsets(off, inst->n), c1 * 1e3);
        if (dn > 0) printf(" %.0f |\n", (c1 - c0) * 1e9 / dn); else printf(" - |\n");
        fflush(stdout);
    }
}

static void run_nodes_dir(const char *dir, const char *only, const uint64_t *budgets, int nb, int reps)
{
    nodes_ctx t = { budgets, nb, reps };
    each_instance(dir, only, nodes_rows, &t);
}

/* Graph-like random intervals: two births per step, mostly short lives with
 * a tail of long ones, sizes from 256 B to ~4 MiB. */
static void random_graphlike(bp_interval *iv, size_t n, ull seed)
{
    ull s = seed;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        ull r = s;
        int64_t lo = (int64_t)(i / 2);
        ull p = r % 100, len;
        if (p < 90) len = 1 + (r >> 8) % 4;
        else if (p < 99) len = 5 + (r >> 8) % 46;
        else len = 50 + (r >> 8) % 951;
        ull size = 256ull * (1 + ((r >> 20) % 64) * (1 + ((r >> 30) % 64)));
        iv[i].lower = lo;
        iv[i].upper = lo + (int64_t)len;
        iv[i].size = size;
        iv[i].alignment = 0;
        iv[i].fixed_offset = BP_NO_OFFSET;
    }
}

static void run_scaling(size_t max_n)
{
    printf("\n### bestfit scaling (random graph-like intervals, one core)\n\n");
    printf("| intervals | max-live | bestfit arena | / max-live | bestfit wall | bestfit CPU | CPU ns / interval | color CPU | peak RSS |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t n = 10000; n <= max_n; n *= 10) {
        bp_interval *iv = malloc(n * sizeof *iv);
        uint64_t *off = malloc(n * sizeof *off);
        if (!iv || !off) { printf("| %zu | out of memory |\n", n); free(iv); free(off); break; }
        random_graphlike(iv, n, 42 + n);
        bp_assign_result r, rc;
        bp_error e;
        double t0 = now(), c0 = cpu_now();
        bp_status s = bp_assign_intervals(iv, n, BP_ASSIGN_BESTFIT, NULL, off, &r, &e);
        double dt = now() - t0, dcpu = cpu_now() - c0;
        if (s == BP_OK) s = bp_intervals_check(iv, n, off, r.arena_bytes, &e);
        double t1 = cpu_now();
        bp_status s2 = bp_assign_intervals(iv, n, BP_ASSIGN_COLOR, NULL, off, &rc, &e);
        double dc = cpu_now() - t1;
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        char tb[32], tc[32], tu[32];
        fmt_ms(tb, sizeof tb, dt);
        fmt_ms(tu, sizeof tu, dcpu);
        fmt_ms(tc, sizeof tc, dc);
        if (s != BP_OK || s2 != BP_OK) printf("| %zu | FAILED: %s |\n", n, e.msg);
        else
            printf("| %zu | %llu | %llu | %.4f | %s | %s | %.0f | %s | %.0f MiB |\n", n, (ull)r.lower_bound, (ull)r.arena_bytes,
                   (double)r.arena_bytes / (double)r.lower_bound, tb, tu, dcpu * 1e9 / (double)n, tc,
                   (double)ru.ru_maxrss / 1024.0);
        fflush(stdout);
        free(iv);
        free(off);
    }
}

int main(int argc, char **argv)
{
    const char *data = getenv("BP_DATA");
    if (!data || !*data) data = "../shared/data";
    int quick = 0;
    double limit = 10.0;
    size_t max_n = 10000000;
    const char *only = NULL;
    int scaling = 1, instances = 1;
    uint64_t budgets[32];
    int n_budgets = 0, reps = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--time-limit") && i + 1 < argc) limit = atof(argv[++i]);
        else if (!strcmp(argv[i], "--max-n") && i + 1 < argc) max_n = (size_t)atof(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--no-scaling")) scaling = 0;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]) > 0 ? atoi(argv[i]) : 1;
        else if (!strcmp(argv[i], "--nodes") && i + 1 < argc) {
            for (char *p = argv[++i]; *p && n_budgets < 32;) {
                budgets[n_budgets++] = strtoull(p, &p, 10);
                if (*p == ',') p++; else break;
            }
        }
        else if (!strcmp(argv[i], "--scaling-only")) instances = 0;
        else { fprintf(stderr, "usage: bench_assign [--quick] [--data DIR] [--time-limit S] [--max-n N] [--only SUBSTR] [--no-scaling|--scaling-only] [--nodes N1,N2,... [--reps R]]\n"); return 2; }
    }
    if (n_budgets) {
        printf("### search on node budgets (bp__assign_search_ex)\n\n");
        printf("| instance | node budget | nodes | arena | proven | offsets FNV-1a | CPU | CPU ns / node |\n");
        printf("|---|---:|---:|---:|---|---|---:|---:|\n");
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/minimalloc/challenging", data);
        run_nodes_dir(dir, only, budgets, n_budgets, reps);
        snprintf(dir, sizeof dir, "%s/onnx/lifetimes", data);
        run_nodes_dir(dir, only, budgets, n_budgets, reps);
        return 0;
    }
    if (quick) { if (limit > 1) limit = 1; if (max_n > 1000000) max_n = 1000000; }
    if (instances) {
        printf("### Assigners side by side (search time limit %.0f s; ratios to max-live LB and to best known)\n\n", limit);
        printf("| instance | buffers | max-live LB | best known | naive /LB | color /LB | bestfit | /LB | /best | time | search | /LB | /best | time | optimal proven |\n");
        printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/minimalloc/challenging", data);
        run_dir(dir, 0, limit, only);
        snprintf(dir, sizeof dir, "%s/minimalloc/examples", data);
        run_dir(dir, 0, limit, only ? only : "input");
        snprintf(dir, sizeof dir, "%s/onnx/lifetimes", data);
        run_dir(dir, 1, limit, only);
    }
    if (scaling) run_scaling(max_n);
    return 0;
}
