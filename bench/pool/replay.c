/*
 * Replays an alloc/free trace (pool_trace's CSV) against one allocator:
 * bufplan's pool (REPLAY_POOL), whatever malloc this executable is linked
 * with (glibc, jemalloc, mimalloc, tcmalloc), or the floor (REPLAY_FLOOR:
 * offsets from a static plan of the trace, free does nothing; the harness's
 * own cost per call).  With --threads T, T threads
 * replay their own copy of the trace at once on the same allocator (each
 * with its own tensors).  Tensors still live at the end of a replay (graph
 * outputs) are freed before the next.
 *
 * 1. Memory pass (also the warm-up): one replay that writes one byte in every
 *    page of every block.  Peak RSS growth over it (VmHWM, reset with
 *    clear_refs) is the memory the allocator took from the OS and used,
 *    measured the same way for every allocator, to the page.  The same
 *    growth at the end (peak_rss_run_mib), after one more replay that
 *    writes every page once the timed rounds are over, is the steady-state
 *    footprint: an allocator whose caches spread the blocks of later
 *    replays over more memory than the first one used shows it there (the
 *    timed rounds write only first bytes, which hides it).
 * 2. Timed rounds (--rounds, best one counts): each replays the trace
 *    --iters times, or more to reach --min-calls alloc+free calls per
 *    thread (fewer when that would take more than --max-round-s, judged by
 *    one untimed replay after the warm-up), writing only the first byte of each block (an allocator that
 *    gives memory back to the OS pays the page faults it causes).
 * OS calls after warm-up: mmap, munmap, mremap, madvise, brk and mprotect
 * calls of the whole process during the timed rounds, counted with kernel
 * tracepoints (perf_event_open; "n/a" where not permitted).
 *
 * The pool is used through one bp_pool_local handle per thread (what a user
 * does on each worker thread); --plain uses bp_pool_alloc / bp_pool_dealloc.
 * CPU time per call (CLOCK_THREAD_CPUTIME_ID, best round) is printed beside
 * the wall-clock rate: it is less disturbed by other load on the machine.
 *
 * Prints one line of key=value; for the pool also its own counters.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef REPLAY_POOL
#include "bufplan.h"
#endif
#ifdef REPLAY_FLOOR
#include <sys/mman.h>
#endif

typedef struct { int32_t id; uint64_t bytes; } rop; /* bytes 0 = free */

static rop *ops;
static size_t n_ops;
static int32_t n_ids;
static int touch = 1;
static pthread_barrier_t bar;
#ifdef REPLAY_POOL
static bp_pool *pool;
static uint64_t cache_bytes;           /* --cache-bytes: each handle's cache bound (0 = default) */
static int print_stats;                /* --stats: the pool's statistics to stderr at the end */
static int plain;                      /* --plain: bp_pool_alloc/dealloc instead of a local handle */
static int learn;                      /* --learn: the pool's learned sequences (options.learn) */
static uint64_t grow_bytes;            /* --grow-bytes: the pool option (0 = default) */
static _Thread_local bp_pool_local *tl_local; /* this worker's handle */
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

/* ---- the floor (REPLAY_FLOOR): the harness with an allocator that costs
 * next to nothing.  A static plan of the trace, made before the replays
 * (first fit by offset over the replay's own alloc/free order, 256-byte
 * granules: what a plan-backed pool does), gives every ALLOC row its offset
 * in one arena per thread; alloc is one load from that table, free does
 * nothing.  Its CPU time per call is the harness's own (trace loop, slot
 * array, first-byte write of each block); its footprint is the plan's
 * arena. */
#ifdef REPLAY_FLOOR
static uint64_t *floor_off;            /* per op: offset of an ALLOC row's block */
static uint64_t floor_arena;           /* the plan's arena bytes */
static _Thread_local char *floor_base; /* this thread's arena */

static void floor_plan(void)
{
    typedef struct { uint64_t off, size; int32_t id; } live;
    live *lv = malloc(sizeof *lv * ((size_t)n_ids + 1));
    size_t n = 0;
    floor_off = calloc(n_ops, sizeof *floor_off);
    for (size_t i = 0; i < n_ops; i++) {
        const rop *o = &ops[i];
        size_t k;
        if (o->bytes) {
            uint64_t sz = (o->bytes + 255) & ~(uint64_t)255, off = 0;
            for (k = 0; k < n && lv[k].off < off + sz; k++) /* first gap that fits (sorted by offset) */
                if (lv[k].off + lv[k].size > off) off = lv[k].off + lv[k].size;
            memmove(&lv[k + 1], &lv[k], (n - k) * sizeof *lv);
            /* the replay frees a live name's old block after allocating the new one */
            lv[k] = (live){off, sz, -1};
            n++;
            for (size_t j = 0; j < n; j++)
                if (lv[j].id == o->id) { memmove(&lv[j], &lv[j + 1], (n - j - 1) * sizeof *lv); n--; break; }
            for (k = 0; k < n; k++) if (lv[k].id == -1) lv[k].id = o->id;
            floor_off[i] = off;
            if (off + sz > floor_arena) floor_arena = off + sz;
        } else {
            for (k = 0; k < n; k++)
                if (lv[k].id == o->id) { memmove(&lv[k], &lv[k + 1], (n - k - 1) * sizeof *lv); n--; break; }
        }
    }
    free(lv);
}
#endif

/* ---------------------------------------------------------------- replay */
static inline void *xalloc(uint64_t n, size_t op)
{
#ifdef REPLAY_FLOOR
    (void)n;
    return floor_base + floor_off[op];
#elif defined REPLAY_POOL
    (void)op;
    void *p = NULL;
    if (tl_local) bp_pool_local_alloc(tl_local, n, &p, NULL);
    else bp_pool_alloc(pool, n, &p, NULL);
    return p;
#else
    (void)op;
    return malloc(n);
#endif
}

static inline void xfree(void *p)
{
#ifdef REPLAY_FLOOR
    (void)p;
#elif defined REPLAY_POOL
    if (tl_local) bp_pool_local_dealloc(tl_local, p, NULL);
    else bp_pool_dealloc(pool, p, NULL);
#else
    free(p);
#endif
}

static long failures;

/* Touches one byte per page of a block (the memory pass), or only its first
 * byte (the timed replays). */
static inline void touch_block(void *p, uint64_t n, int all)
{
    if (!touch) return;
    if (!all) { *(volatile char *)p = 1; return; }
    for (uint64_t o = 0; o < n; o += 4096) ((volatile char *)p)[o] = 1;
    ((volatile char *)p)[n - 1] = 1;
}

static size_t frag_at;                 /* pool: stats after this many events of the first pass */
#ifdef REPLAY_POOL
static bp_pool_stats s_early;
static int have_early;
#endif

static void replay_once(void **slot, int all, int first)
{
    for (size_t i = 0; i < n_ops; i++) {
        const rop *o = &ops[i];
        if (o->bytes) {
            void *p = xalloc(o->bytes, i);
            if (!p) { __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED); continue; }
            touch_block(p, o->bytes, all);
            if (slot[o->id]) xfree(slot[o->id]); /* a trace that re-allocates a live name */
            slot[o->id] = p;
        } else if (slot[o->id]) {
            xfree(slot[o->id]);
            slot[o->id] = NULL;
        }
#ifdef REPLAY_POOL
        if (first && frag_at && i + 1 == frag_at) { bp_pool_get_stats(pool, &s_early); have_early = 1; }
#else
        (void)first;
#endif
    }
    for (int32_t i = 0; i < n_ids; i++)
        if (slot[i]) { xfree(slot[i]); slot[i] = NULL; }
}

static int rounds = 3, reps = 1;
static double round_s[64][64];         /* [thread][round] */
static double round_cpu[64][64];       /* thread CPU seconds */

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    void **slot = calloc((size_t)n_ids, sizeof *slot);
#ifdef REPLAY_FLOOR
    floor_base = mmap(NULL, floor_arena ? floor_arena : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (floor_base == MAP_FAILED) { fprintf(stderr, "floor: mmap failed\n"); exit(1); }
#endif
#ifdef REPLAY_POOL
    /* what a real user does on each worker thread: one local handle */
    if (!plain && bp_pool_local_new(pool, cache_bytes, &tl_local, NULL) != BP_OK) tl_local = NULL;
#endif
    pthread_barrier_wait(&bar); /* baseline taken */
    replay_once(slot, 1, t == 0); /* memory pass and warm-up: every page written */
    pthread_barrier_wait(&bar); /* warm-up done */
    pthread_barrier_wait(&bar); /* peak RSS read */
    replay_once(slot, 0, 0);      /* calibration: one replay as the rounds make them */
    pthread_barrier_wait(&bar);
    for (int r = 0; r < rounds; r++) {
        pthread_barrier_wait(&bar);
        double t0 = now(), c0 = cpu_now();
        for (int k = 0; k < reps; k++) replay_once(slot, 0, 0);
        round_s[t][r] = now() - t0;
        round_cpu[t][r] = cpu_now() - c0;
    }
    pthread_barrier_wait(&bar); /* rounds done */
    pthread_barrier_wait(&bar); /* OS calls read */
    replay_once(slot, 1, 0);    /* footprint: every page of the steady state's blocks */
    pthread_barrier_wait(&bar);
#ifdef REPLAY_POOL
    bp_pool_local_free(tl_local);
    tl_local = NULL;
#endif
#ifdef REPLAY_FLOOR
    munmap(floor_base, floor_arena ? floor_arena : 1);
#endif
    free(slot);
    return NULL;
}

/* ---- OS calls: kernel tracepoints of the memory syscalls, counted for the
 * whole process (inherited by the replay threads).  -1 when perf events are
 * not available. */
static const char *const os_syscalls[] = {"mmap", "munmap", "mremap", "madvise", "brk", "mprotect"};
#define N_OS ((int)(sizeof os_syscalls / sizeof os_syscalls[0]))
static int os_fd[N_OS];

static void os_open(void)
{
    for (int i = 0; i < N_OS; i++) {
        os_fd[i] = -1;
        char path[128];
        snprintf(path, sizeof path, "/sys/kernel/tracing/events/syscalls/sys_enter_%s/id", os_syscalls[i]);
        FILE *f = fopen(path, "r");
        long id = -1;
        if (f) { if (fscanf(f, "%ld", &id) != 1) id = -1; fclose(f); }
        if (id < 0) continue;
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.type = PERF_TYPE_TRACEPOINT;
        a.size = sizeof a;
        a.config = (uint64_t)id;
        a.inherit = 1;
        a.exclude_kernel = 0;
        os_fd[i] = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    }
}

static long long os_read(void)
{
    long long sum = 0;
    for (int i = 0; i < N_OS; i++) {
        uint64_t v = 0;
        if (os_fd[i] < 0 || read(os_fd[i], &v, sizeof v) != (ssize_t)sizeof v) return -1;
        sum += (long long)v;
    }
    return sum;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int threads = 1;
    long min_calls = 0;
    double max_round_s = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-calls") && i + 1 < argc) min_calls = atol(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-round-s") && i + 1 < argc) max_round_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--frag-at") && i + 1 < argc) frag_at = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--no-touch")) touch = 0;
#ifdef REPLAY_POOL
        else if (!strcmp(argv[i], "--plain")) plain = 1;
        else if (!strcmp(argv[i], "--learn")) learn = 1;
        else if (!strcmp(argv[i], "--stats")) print_stats = 1;
        else if (!strcmp(argv[i], "--cache-bytes") && i + 1 < argc) cache_bytes = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--grow-bytes") && i + 1 < argc) grow_bytes = strtoull(argv[++i], NULL, 10);
#endif
        else path = argv[i];
    }
    if (!path || threads < 1 || threads > 64 || reps < 1 || rounds < 1 || rounds > 64) {
        fprintf(stderr, "usage: %s TRACE.csv [--iters N] [--min-calls N] [--rounds R] [--threads T] "
                        "[--max-round-s S] [--frag-at EVENTS] [--no-touch] [--plain] [--learn] [--grow-bytes N] [--cache-bytes N] [--stats] (pool)\n", argv[0]);
        return 2;
    }
    if (load(path) || n_ops == 0) { fprintf(stderr, "%s: empty trace\n", path); return 2; }
    size_t n_alloc = 0;
    for (size_t i = 0; i < n_ops; i++) n_alloc += ops[i].bytes != 0;
    /* each timed round replays the trace `reps` times per thread, at least
     * min_calls alloc+free calls per thread */
    if (min_calls > 0 && (long)(2 * n_alloc) * reps < min_calls) reps = (int)((min_calls + 2 * (long)n_alloc - 1) / (2 * (long)n_alloc));
    const char *verified = "yes";
    const char *name = REPLAY_NAME;
#ifdef REPLAY_POOL
    if (plain) name = REPLAY_NAME "-plain";
    if (learn) name = plain ? REPLAY_NAME "-plain-learn" : REPLAY_NAME "-learn";
#endif
#ifdef REPLAY_FLOOR
    floor_plan();
#endif
#ifndef REPLAY_POOL
    const char *want = REPLAY_NAME;
    if (!strcmp(want, "jemalloc") && !dlsym(RTLD_DEFAULT, "mallctl")) verified = "NO";
    if (!strcmp(want, "mimalloc") && !dlsym(RTLD_DEFAULT, "mi_version")) verified = "NO";
    if (!strcmp(want, "tcmalloc") && !dlsym(RTLD_DEFAULT, "tc_malloc")) verified = "NO";
#else
    bp_error err;
    bp_pool_options po;
    bp_pool_options_init(&po);
    po.learn = learn;
    if (grow_bytes) po.grow_bytes = grow_bytes;
    if (bp_pool_new(&po, &pool, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
#endif
    os_open();
    pthread_barrier_init(&bar, NULL, (unsigned)threads + 1);
    pthread_t th[64];
    for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    /* baseline: peak RSS reset to the current RSS (clear_refs 5), peak VA */
    FILE *cr = fopen("/proc/self/clear_refs", "w");
    if (cr) { fputs("5", cr); fclose(cr); }
    long base_rss = status_kib("VmRSS:"), base_va = status_kib("VmSize:");
    pthread_barrier_wait(&bar);
    double tw = now();
    pthread_barrier_wait(&bar); /* memory pass done */
    long peak_rss = status_kib("VmHWM:");
    /* a slow allocator: fewer replays per round, judged by one replay made
     * the way the rounds make them (the memory pass, which writes every page
     * and grows the allocator, overestimates a replay's time many times over,
     * which made the rounds of fast allocators last well under a millisecond) */
    tw = now();
    pthread_barrier_wait(&bar); /* peak RSS read */
    pthread_barrier_wait(&bar); /* calibration replay done */
    tw = now() - tw;
    if (max_round_s > 0 && tw * reps > max_round_s) reps = tw > max_round_s ? 1 : (int)(max_round_s / tw);
    long long os0 = os_read();
#ifdef REPLAY_POOL
    bp_pool_stats s0;
    bp_pool_get_stats(pool, &s0);
#endif
    for (int r = 0; r < rounds; r++) pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar); /* the last round is done */
    long long os1 = os_read();  /* before the footprint replay and before the threads free their handles */
#ifdef REPLAY_POOL
    bp_pool_stats s_rounds;     /* the pool's own backend calls, over the same span */
    bp_pool_get_stats(pool, &s_rounds);
#endif
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar); /* the footprint replay is done */
    long peak_rss_run = status_kib("VmHWM:");
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    long peak_va = status_kib("VmPeak:");
    /* the best round: the slowest thread of it */
    double best = 0;
    for (int r = 0; r < rounds; r++) {
        double w = 0;
        for (int t = 0; t < threads; t++) if (round_s[t][r] > w) w = round_s[t][r];
        if (r == 0 || w < best) best = w;
    }
    double calls = 2.0 * (double)n_alloc * reps * threads; /* per round: one alloc and one free per ALLOC row */
    /* CPU time per call (all threads' CPU time over the round's calls), the
     * best round: less disturbed by other load than wall time */
    double cpu_best = 0;
    for (int r = 0; r < rounds; r++) {
        double c = 0;
        for (int t = 0; t < threads; t++) c += round_cpu[t][r];
        if (r == 0 || c < cpu_best) cpu_best = c;
    }
    char osbuf[32];
    if (os0 >= 0 && os1 >= 0) snprintf(osbuf, sizeof osbuf, "%lld", os1 - os0);
    else snprintf(osbuf, sizeof osbuf, "n/a");
    printf("allocator=%s verified=%s threads=%d events=%zu calls_per_round=%.0f rounds=%d seconds=%.6f "
           "mcalls_per_s=%.3f cpu_ns_per_call=%.2f peak_rss_mib=%.1f peak_rss_run_mib=%.1f peak_va_mib=%.1f os_calls_after_warmup=%s "
           "failures=%ld",
           name, verified, threads, n_ops, calls, rounds, best, calls / best / 1e6, cpu_best / calls * 1e9,
           (peak_rss - base_rss) / 1024.0, (peak_rss_run - base_rss) / 1024.0, (peak_va - base_va) / 1024.0, osbuf, failures);
#ifdef REPLAY_FLOOR
    printf(" plan_arena_mib=%.1f", floor_arena / 1048576.0);
#endif
#ifdef REPLAY_POOL
    bp_pool_stats s1;
    bp_pool_get_stats(pool, &s1);
    printf(" pool_os_calls_after_warmup=%llu peak_reserved_mib=%.1f peak_in_use_mib=%.1f meta_mib=%.2f "
           "fragmentation=%.3f borrows=%llu cache_hits=%llu",
           (unsigned long long)(s_rounds.os_calls - s0.os_calls), s1.peak_reserved_bytes / 1048576.0,
           s1.peak_in_use_bytes / 1048576.0, s1.meta_bytes / 1048576.0, s1.fragmentation,
           (unsigned long long)s1.borrows, (unsigned long long)s1.cache_hits);
    if (print_stats) bp_pool_stats_print(pool, stderr);
    if (have_early)
        printf(" frag_early=%.3f overhead_early=%.3f frag_late=%.3f overhead_late=%.3f",
               s_early.fragmentation, (double)s_early.reserved_bytes / (double)s_early.peak_in_use_bytes,
               s1.fragmentation, (double)s1.reserved_bytes / (double)s1.peak_in_use_bytes);
    bp_pool_free(pool);
#endif
    printf("\n");
    return failures ? 1 : 0;
}
