/*
 * Replays an alloc/free trace (pool_trace's CSV) against one allocator:
 * bufplan's pool (REPLAY_POOL) or whatever malloc this executable is linked
 * with (glibc, jemalloc, mimalloc, tcmalloc).  The trace is replayed once to
 * warm up, then --iters times timed; with --threads T, T threads replay it
 * at once on the same allocator (each with its own tensors).  Tensors still
 * live at the end of a replay (graph outputs) are freed before the next.
 *
 * Prints one line of key=value: throughput (alloc+free calls per second),
 * the growth of the process's peak virtual size over the run (what every
 * allocator reserved from the OS, measured the same way for all), and for
 * the pool its own counters (OS calls after warm-up, fragmentation).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef REPLAY_POOL
#include "bufplan.h"
#endif

typedef struct { int32_t id; uint64_t bytes; } rop; /* bytes 0 = free */

static rop *ops;
static size_t n_ops;
static int32_t n_ids;
static int iters = 5, touch = 1;
static pthread_barrier_t bar;
#ifdef REPLAY_POOL
static bp_pool *pool;
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl)) { v = atol(line + kl); break; }
    if (f) fclose(f);
    return v;
}

/* ---- trace loading: names -> dense ids through a small hash table ---- */
static char **names;
static int32_t *slots;
static size_t n_slots;

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int32_t intern(const char *s)
{
    if ((size_t)n_ids * 2 >= n_slots) {
        size_t ns = n_slots ? n_slots * 2 : 1024;
        int32_t *nsl = malloc(ns * sizeof *nsl);
        for (size_t i = 0; i < ns; i++) nsl[i] = -1;
        for (size_t i = 0; i < n_slots; i++)
            if (slots[i] >= 0) {
                size_t j = hash(names[slots[i]]) & (ns - 1);
                while (nsl[j] >= 0) j = (j + 1) & (ns - 1);
                nsl[j] = slots[i];
            }
        free(slots);
        slots = nsl;
        n_slots = ns;
        names = realloc(names, ns / 2 * sizeof *names);
    }
    size_t j = hash(s) & (n_slots - 1);
    while (slots[j] >= 0) {
        if (!strcmp(names[slots[j]], s)) return slots[j];
        j = (j + 1) & (n_slots - 1);
    }
    names[n_ids] = strdup(s);
    slots[j] = n_ids;
    return n_ids++;
}

static int load(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) { perror(path); return -1; }
    char line[4096];
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        char *type = strtok(line, ",\r\n"), *name = strtok(NULL, ",\r\n"), *bytes = strtok(NULL, ",\r\n");
        if (!type || !name || !strcmp(type, "event_type")) continue;
        int is_alloc = !strcmp(type, "ALLOC");
        if (!is_alloc && strcmp(type, "FREE")) continue;
        if (n_ops == cap) { cap = cap ? cap * 2 : 4096; ops = realloc(ops, cap * sizeof *ops); }
        uint64_t b = is_alloc && bytes ? strtoull(bytes, NULL, 10) : 0;
        ops[n_ops++] = (rop){intern(name), is_alloc ? (b ? b : 1) : 0};
    }
    fclose(f);
    return 0;
}

/* ---------------------------------------------------------------- replay */
static inline void *xalloc(uint64_t n)
{
#ifdef REPLAY_POOL
    void *p = NULL;
    bp_pool_alloc(pool, n, &p, NULL);
    return p;
#else
    return malloc(n);
#endif
}

static inline void xfree(void *p)
{
#ifdef REPLAY_POOL
    bp_pool_dealloc(pool, p, NULL);
#else
    free(p);
#endif
}

static long failures;

static void replay_once(void **slot)
{
    for (size_t i = 0; i < n_ops; i++) {
        const rop *o = &ops[i];
        if (o->bytes) {
            void *p = xalloc(o->bytes);
            if (!p) { __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED); continue; }
            if (touch) *(volatile char *)p = 1;
            if (slot[o->id]) xfree(slot[o->id]); /* a trace that re-allocates a live name */
            slot[o->id] = p;
        } else if (slot[o->id]) {
            xfree(slot[o->id]);
            slot[o->id] = NULL;
        }
    }
    for (int32_t i = 0; i < n_ids; i++)
        if (slot[i]) { xfree(slot[i]); slot[i] = NULL; }
}

static void *worker(void *arg)
{
    (void)arg;
    void **slot = calloc((size_t)n_ids, sizeof *slot);
    pthread_barrier_wait(&bar); /* baseline taken */
    replay_once(slot);          /* warm-up */
    pthread_barrier_wait(&bar); /* warm-up done */
    for (int r = 0; r < iters; r++) replay_once(slot);
    pthread_barrier_wait(&bar);
    free(slot);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int threads = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-touch")) touch = 0;
        else path = argv[i];
    }
    if (!path || threads < 1 || iters < 1) {
        fprintf(stderr, "usage: %s TRACE.csv [--iters N] [--threads T] [--no-touch]\n", argv[0]);
        return 2;
    }
    if (load(path) || n_ops == 0) { fprintf(stderr, "%s: empty trace\n", path); return 2; }
    const char *verified = "yes";
#ifndef REPLAY_POOL
    const char *want = REPLAY_NAME;
    if (!strcmp(want, "jemalloc") && !dlsym(RTLD_DEFAULT, "mallctl")) verified = "NO";
    if (!strcmp(want, "mimalloc") && !dlsym(RTLD_DEFAULT, "mi_version")) verified = "NO";
    if (!strcmp(want, "tcmalloc") && !dlsym(RTLD_DEFAULT, "tc_malloc")) verified = "NO";
#else
    bp_error err;
    if (bp_pool_new(NULL, &pool, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
#endif
    pthread_barrier_init(&bar, NULL, (unsigned)threads + 1);
    pthread_t th[64];
    if (threads > 64) threads = 64;
    for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, worker, NULL);
    long base_kib = status_kib("VmSize:");
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    double t0 = now();
#ifdef REPLAY_POOL
    bp_pool_stats s0;
    bp_pool_get_stats(pool, &s0);
#endif
    pthread_barrier_wait(&bar);
    double t1 = now();
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    long peak_kib = status_kib("VmPeak:");
    double calls = 2.0 * (double)n_ops * iters * threads; /* an ALLOC row is one alloc + one free */
    size_t n_alloc = 0;
    for (size_t i = 0; i < n_ops; i++) n_alloc += ops[i].bytes != 0;
    calls = 2.0 * (double)n_alloc * iters * threads;
    printf("allocator=%s verified=%s threads=%d events=%zu calls=%.0f seconds=%.6f mcalls_per_s=%.3f "
           "peak_va_mib=%.1f failures=%ld",
           REPLAY_NAME, verified, threads, n_ops, calls, t1 - t0, calls / (t1 - t0) / 1e6,
           (peak_kib - base_kib) / 1024.0, failures);
#ifdef REPLAY_POOL
    bp_pool_stats s1;
    bp_pool_get_stats(pool, &s1);
    printf(" os_calls_after_warmup=%llu peak_reserved_mib=%.1f meta_mib=%.2f fragmentation=%.3f borrows=%llu",
           (unsigned long long)(s1.os_calls - s0.os_calls), s1.peak_reserved_bytes / 1048576.0,
           s1.meta_bytes / 1048576.0, s1.fragmentation, (unsigned long long)s1.borrows);
    bp_pool_free(pool);
#endif
    printf("\n");
    return failures ? 1 : 0;
}
