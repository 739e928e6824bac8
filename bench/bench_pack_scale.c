/*
 * bench_pack_scale — packing at scale: bestfit against TFLite Micro's
 * greedy-by-size planner on the CNN-like generator (cnnlike.h), at 10k to
 * 1M buffers.  Prints Markdown: max-live, each arena over max-live, wall
 * and CPU time, and bestfit's CPU time per n log2 n (flat = O(n log n)).
 *
 *   bench_pack_scale [--sizes N1,N2,...] [--tflm-max N] [--seed S]
 *
 * The TFLM peer (tflm_greedy) is TFLite Micro's GreedyMemoryPlanner: the
 * buffers sorted by size, largest first (ties by first use); each in turn
 * walks the already placed buffers in offset order (a linked list), skips
 * those not live with it, and takes the first gap from offset 0 that holds
 * it, else the end of the last one.  It is quadratic: it runs up to
 * --tflm-max buffers (default 100,000) and is reported as skipped above.
 * Every layout is checked by bp_intervals_check.
 */
#define _POSIX_C_SOURCE 200809L
#include "bufplan.h"
#include "cnnlike.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned long long ull;

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct { uint64_t size; int64_t lower; uint32_t i; } tflm_key;

/* Size descending, then first use ascending, then index (a total order). */
static int tflm_cmp(const void *a, const void *b)
{
    const tflm_key *x = a, *y = b;
    if (x->size != y->size) return x->size > y->size ? -1 : 1;
    if (x->lower != y->lower) return x->lower < y->lower ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* TFLite Micro's greedy-by-size planner; returns the arena, or 0 on out of
 * memory (off unset). */
static uint64_t tflm_greedy(const bp_interval *iv, size_t n, uint64_t *off)
{
    tflm_key *order = malloc((n ? n : 1) * sizeof *order);
    uint32_t *next = malloc((n ? n : 1) * sizeof *next);
    if (!order || !next) { free(order); free(next); return 0; }
    for (size_t i = 0; i < n; i++) order[i] = (tflm_key){iv[i].size, iv[i].lower, (uint32_t)i};
    qsort(order, n, sizeof *order, tflm_cmp);
    const uint32_t NONE = UINT32_MAX;
    uint32_t head = NONE;
    uint64_t arena = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t b = order[k].i;
        const bp_interval *x = &iv[b];
        uint64_t cand = 0;
        uint32_t prev = NONE, it = head, at = NONE; /* insert after `at` */
        for (; it != NONE; prev = it, it = next[it]) {
            const bp_interval *y = &iv[it];
            if (y->upper <= x->lower || x->upper <= y->lower) continue; /* not live together */
            if (off[it] >= cand + x->size) break;                       /* the gap before it holds x */
            if (off[it] + y->size > cand) cand = off[it] + y->size;
        }
        /* keep the list sorted by offset: insert before the first entry above cand */
        prev = NONE;
        for (it = head; it != NONE && off[it] <= cand; prev = it, it = next[it]) {}
        at = prev;
        off[b] = cand;
        if (at == NONE) { next[b] = head; head = b; }
        else { next[b] = next[at]; next[at] = b; }
        if (cand + x->size > arena) arena = cand + x->size;
    }
    free(order);
    free(next);
    return arena;
}

static void fmt_s(char *b, size_t n, double s)
{
    if (s < 1) snprintf(b, n, "%.0f ms", s * 1e3);
    else snprintf(b, n, "%.2f s", s);
}

/* One row: bestfit, then TFLM when n <= tflm_max. */
static void row(size_t n, size_t tflm_max, ull seed)
{
    bp_interval *iv = malloc(n * sizeof *iv);
    uint64_t *off = malloc(n * sizeof *off);
    if (!iv || !off) { printf("| %zu | out of memory |\n", n); free(iv); free(off); return; }
    cnnlike_gen(iv, n, seed);
    ull lb = bp_intervals_max_live(iv, n);
    bp_assign_result r;
    bp_error e;
    double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    bp_status s = bp_assign_intervals(iv, n, BP_ASSIGN_BESTFIT, NULL, off, &r, &e);
    double wall = clock_s(CLOCK_MONOTONIC) - w0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (s == BP_OK) s = bp_intervals_check(iv, n, off, r.arena_bytes, &e);
    if (s != BP_OK) { printf("| %zu | bestfit FAILED: %s |\n", n, e.msg); free(iv); free(off); return; }
    char tw[32], tc[32], tt[32] = "-";
    fmt_s(tw, sizeof tw, wall);
    fmt_s(tc, sizeof tc, cpu);
    double nlogn = (double)n * log2((double)n);
    printf("| %zu | %llu | %.4f | %s | %s | %.1f |", n, lb, (double)r.arena_bytes / (double)lb, tw, tc, cpu * 1e9 / nlogn);
    if (n <= tflm_max) {
        double t0 = clock_s(CLOCK_MONOTONIC);
        uint64_t a = tflm_greedy(iv, n, off);
        double dt = clock_s(CLOCK_MONOTONIC) - t0;
        if (!a || bp_intervals_check(iv, n, off, a, &e) != BP_OK) printf(" FAILED |");
        else {
            fmt_s(tt, sizeof tt, dt);
            printf(" %.4f | %s | %s |", (double)a / (double)lb, tt, r.arena_bytes <= a ? "yes" : "**no**");
        }
    } else {
        printf(" skipped | - | - |");
    }
    printf("\n");
    fflush(stdout);
    free(iv);
    free(off);
}

int main(int argc, char **argv)
{
    size_t sizes[32] = {10000, 30000, 100000, 300000, 1000000};
    int ns = 5;
    size_t tflm_max = 100000;
    ull seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            ns = 0;
            for (char *p = argv[++i]; *p && ns < 32;) {
                sizes[ns++] = (size_t)strtod(p, &p);
                if (*p == ',') p++; else break;
            }
        } else if (!strcmp(argv[i], "--tflm-max") && i + 1 < argc) tflm_max = (size_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else { fprintf(stderr, "usage: bench_pack_scale [--sizes N1,N2,...] [--tflm-max N] [--seed S]\n"); return 2; }
    }
    printf("### Packing at scale (CNN-like generator, seed %llu; one core)\n\n", seed);
    printf("| buffers | max-live | bestfit / max-live | bestfit wall | bestfit CPU | CPU ns / (n log2 n) | TFLM greedy / max-live | TFLM wall | bestfit <= TFLM |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < ns; i++)
        if (sizes[i] > CNNLIKE_LONG) row(sizes[i], tflm_max, seed);
    return 0;
}
