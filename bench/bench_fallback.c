/*
 * bench_fallback — recompute and offload under a budget on real training
 * graphs: for every graph in a folder (default ../shared/data/graphs/training),
 * at budgets of 0.8, 0.6 and 0.5 of `-s best`'s arena, bufplan's plan (verified,
 * its arena checked against the budget) or its certificate, the recompute
 * overhead, the transfer cost not hidden and the offload bytes, the plan time;
 * and the two references on the same order and model, verified too: Chen et
 * al.'s sqrt(n) checkpointing (recompute only) and "offload everything saved
 * for backward" (bp__plan_fallback_reference).  A reference fits when its
 * packed arena is within the budget.  Prints a markdown table.
 *
 * usage: bench_fallback [DIR] [--time-limit S]
 */
#define _POSIX_C_SOURCE 200809L
#include "plan/plan_internal.h"

#include <bufplan.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ref_result {
    int fits;
    double overhead;
    uint64_t arena, offload;
} ref_result;

static ref_result reference(const bp_graph *g, const bp_plan_options *po, const int32_t *order, uint64_t budget, int policy)
{
    ref_result r = {0, 0, 0, 0};
    bp_plan_options o = *po;
    o.budget = 0;
    bp_plan *p = NULL;
    bp_error e;
    if (bp_plan_graph_order(g, &o, order, &p, &e) || bp__plan_fallback_reference(g, &o, p, policy, &e) || bp_verify(g, p, &e)) {
        fprintf(stderr, "%s: reference %d: %s\n", bp_graph_name(g), policy, e.msg);
        bp_plan_free(p);
        return r;
    }
    const bp_plan_stats *st = bp_plan_get_stats(p);
    r.arena = st->arena_bytes;
    r.fits = st->arena_bytes <= budget;
    r.overhead = st->overhead_percent;
    r.offload = st->offload_bytes;
    bp_plan_free(p);
    return r;
}

static void cell(char *buf, size_t cap, const ref_result *r)
{
    if (!r->arena) snprintf(buf, cap, "error");
    else if (!r->fits) snprintf(buf, cap, "no fit (%.0f MiB)", (double)r->arena / 1048576.0);
    else snprintf(buf, cap, "%.2f%%", r->overhead);
}

/* "no fit: from N MiB" out of a certificate's message. */
static void certificate_cell(char *buf, size_t cap, const char *msg)
{
    const char *key = "smallest budget bufplan can fit is ", *q = strstr(msg, key);
    if (q) snprintf(buf, cap, "certificate: from %.1f MiB", (double)strtoull(q + strlen(key), NULL, 10) / 1048576.0);
    else snprintf(buf, cap, "certificate");
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void one_graph(const char *path, double tl, int *wins, int *cmps, int *bad)
{
    bp_graph *g = NULL;
    bp_error e;
    if (bp_graph_read(path, NULL, &g, &e)) { fprintf(stderr, "%s\n", e.msg); return; }
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.time_limit = tl;
    bp_plan *base = NULL;
    if (bp_plan_graph(g, &po, &base, &e)) { fprintf(stderr, "%s\n", e.msg); bp_graph_free(g); return; }
    uint64_t arena = bp_plan_get_stats(base)->arena_bytes;
    static const double fr[3] = {0.8, 0.6, 0.5};
    for (int f = 0; f < 3; f++) {
        po.budget = (uint64_t)((double)arena * fr[f]);
        bp_plan *p = NULL;
        double t0 = bp__now();
        bp_status s = bp_plan_graph(g, &po, &p, &e);
        double ms = (bp__now() - t0) * 1e3;
        char mine[160], chen[64], off[64];
        ref_result rc = reference(g, &po, bp_plan_schedule(base), po.budget, 1);
        ref_result ro = reference(g, &po, bp_plan_schedule(base), po.budget, 2);
        cell(chen, sizeof chen, &rc);
        cell(off, sizeof off, &ro);
        if (!s) {
            const bp_plan_stats *st = bp_plan_get_stats(p);
            bp_error ve;
            int ok = bp_verify(g, p, &ve) == BP_OK && st->arena_bytes <= po.budget;
            if (!ok) (*bad)++;
            snprintf(mine, sizeof mine, "%s%.2f%%, %d recomputes, %.1f MiB offloaded", ok ? "" : "BAD PLAN ", st->overhead_percent,
                     st->n_recomputes, (double)st->offload_bytes / 1048576.0);
            for (int k = 0; k < 2; k++) {
                const ref_result *r = k ? &ro : &rc;
                if (!r->fits) continue;
                (*cmps)++;
                *wins += st->overhead_percent <= r->overhead + 1e-9;
            }
        } else {
            certificate_cell(mine, sizeof mine, e.msg);
        }
        /* recompute only, against Chen's rule */
        bp_plan_options pr = po;
        pr.fallback = BP_FALLBACK_RECOMPUTE;
        bp_plan *q = NULL;
        char rec[160];
        if (bp_plan_graph(g, &pr, &q, &e) == BP_OK) {
            bp_error ve;
            int ok = bp_verify(g, q, &ve) == BP_OK && bp_plan_get_stats(q)->arena_bytes <= pr.budget;
            if (!ok) (*bad)++;
            snprintf(rec, sizeof rec, "%s%.2f%%", ok ? "" : "BAD PLAN ", bp_plan_get_stats(q)->overhead_percent);
            if (rc.fits) { (*cmps)++; *wins += bp_plan_get_stats(q)->overhead_percent <= rc.overhead + 1e-9; }
        } else {
            certificate_cell(rec, sizeof rec, e.msg);
        }
        bp_plan_free(q);
        printf("| %s | %.1f | %.0f%% | %s | %.0f | %s | %s | %s |\n", bp_graph_name(g), (double)arena / 1048576.0, fr[f] * 100, mine, ms, rec, chen, off);
        bp_plan_free(p);
    }
    bp_plan_free(base);
    bp_graph_free(g);
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    double tl = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--time-limit") && i + 1 < argc) tl = atof(argv[++i]);
        else dir = argv[i];
    }
    char def[4096];
    if (!dir) {
        const char *d = getenv("BP_DATA");
        snprintf(def, sizeof def, "%s/graphs/training", d && *d ? d : "../shared/data");
        dir = def;
    }
    DIR *dp = opendir(dir);
    if (!dp) { fprintf(stderr, "bench_fallback: cannot open %s\n", dir); return 2; }
    char *names[512];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dp)) && n < 512)
        if (strstr(de->d_name, ".json") || strstr(de->d_name, ".onnx")) names[n++] = strdup(de->d_name);
    closedir(dp);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    printf("| graph | best arena (MiB) | budget | bufplan: overhead, recomputes, offloaded | plan ms | bufplan recompute only | Chen sqrt(n) (recompute only) | offload all saved |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    int wins = 0, cmps = 0, bad = 0;
    for (int i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        one_graph(path, tl, &wins, &cmps, &bad);
        free(names[i]);
    }
    printf("\nbufplan's overhead <= the reference's in %d of %d cases where a reference fits; %d bad plans\n", wins, cmps, bad);
    return bad ? 1 : 0;
}
