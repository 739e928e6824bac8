/* Pool tests, local handles and threads: the thread caches, local handles
 * (flush requests, batches, eviction, no growth, footprint on a real trace,
 * what a handle keeps), frees from other threads, per-thread arenas (no
 * growth in lockstep, chunks kept, orphans of exited threads). */
#define _DEFAULT_SOURCE
#include "pool_testutil.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

typedef struct { bp_pool *p; void *blk[8]; int n; } cache_arg;

static void *cache_thread(void *v)
{
    cache_arg *a = v;
    bp_error err = {0};
    /* freed here: they stay in this thread's cache until it exits */
    CHECK_OK(tp_dealloc_all(a->p, NULL, a->blk, a->n, &err), err);
    return NULL;
}

static void test_thread_cache(void)
{
    bp_error err = {0};
    bp_pool *p = tp_pool(NULL);
    bp_pool_stats s0, s1;
    bp_pool_get_stats(p, &s0);
    /* free then alloc of the same rounded size: the same block, from the cache */
    void *a = NULL, *b = NULL;
    CHECK_OK(bp_pool_alloc(p, 5000, &a, &err), err);
    CHECK_OK(bp_pool_dealloc(p, a, &err), err);
    CHECK(bp_pool_block_bytes(p, a) == 0);
    CHECK(bp_pool_dealloc(p, a, &err) == BP_ERR_USAGE);   /* double free of a cached block */
    CHECK_OK(bp__pool_check(p, 1, &err), err);             /* with a block in the cache */
    CHECK_OK(bp_pool_alloc(p, 5100, &b, &err), err);       /* rounds to the same 5120 */
    CHECK(a == b && bp_pool_block_bytes(p, b) == 5120);
    bp_pool_get_stats(p, &s1);
    CHECK(s1.cache_hits == s0.cache_hits + 1 && s1.n_allocs == 2 && s1.n_deallocs == 1 && s1.n_live_blocks == 1);
    CHECK(s1.in_use_bytes == 5120);
    /* a larger class never comes from a smaller class's bin: 5400 rounds
     * to 5632, whose class is 6144 */
    CHECK_OK(bp_pool_dealloc(p, b, &err), err);
    CHECK_OK(bp_pool_alloc(p, 5400, &a, &err), err);
    CHECK(a != b && bp_pool_block_bytes(p, a) == 6144);
    CHECK_OK(bp_pool_dealloc(p, a, &err), err);
    /* blocks freed by another thread sit in its cache; statistics return
     * them first, and so does the thread's exit */
    cache_arg ca = {p, {0}, 8};
    CHECK_OK(tp_alloc_all(p, NULL, ca.blk, 8, 3000, 3000, &err), err);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, cache_thread, &ca) == 0);
    pthread_join(th, NULL);
    bp_pool_get_stats(p, &s1);
    CHECK(tp_drained(&s1));
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    s1 = tp_compacted(p);
    CHECK_MSG(s1.n_free_blocks == s1.n_chunks, "%" PRIu64 " free blocks in %" PRIu64 " chunks", s1.n_free_blocks,
              s1.n_chunks);
    /* the cache is bounded: many frees of one size leave most on the lists */
    void *v[64];
    CHECK_OK(tp_alloc_all(p, NULL, v, 64, 1024, 0, &err), err);
    CHECK_OK(tp_dealloc_all(p, NULL, v, 64, &err), err);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_free(p);
}

/* ------------------------------------------------------ local handles */

static void test_local(void)
{
    bp_error err = {0};
    bp_pool *p = tp_pool(NULL);
    bp_pool_local *l = (bp_pool_local *)1;
    CHECK(bp_pool_local_new(NULL, 0, &l, &err) == BP_ERR_USAGE && l == NULL && strstr(err.msg, "NULL pool"));
    CHECK(bp_pool_local_new(p, 0, NULL, &err) == BP_ERR_USAGE && strstr(err.msg, "NULL output"));
    l = tp_local(p, 0);
    void *a = (void *)1, *b = NULL, *c = NULL;
    CHECK(bp_pool_local_alloc(NULL, 10, &a, &err) == BP_ERR_USAGE && a == NULL && strstr(err.msg, "NULL handle"));
    CHECK(bp_pool_local_alloc(l, 10, NULL, &err) == BP_ERR_USAGE && strstr(err.msg, "NULL output pointer"));
    CHECK_MSG(bp_pool_local_alloc(l, UINT64_MAX, &a, &err) == BP_ERR_EXHAUSTED && a == NULL && strstr(err.msg, "18446744073709551615"), "%s", err.msg);
    CHECK(bp_pool_local_dealloc(NULL, &err, &err) == BP_ERR_USAGE && strstr(err.msg, "local dealloc: NULL handle"));
    CHECK(bp_pool_local_dealloc(l, NULL, &err) == BP_OK);
    /* free then alloc of the same rounded size: the same block, from the cache */
    bp_pool_stats s0, s1;
    bp_pool_get_stats(p, &s0);
    CHECK(s0.n_locals == 1);
    CHECK_OK(bp_pool_local_alloc(l, 70000, &a, &err), err);
    CHECK(bp_pool_block_bytes(p, a) == 81920);          /* 274 quanta -> class of 320 */
    CHECK_OK(bp_pool_local_dealloc(l, a, &err), err);
    CHECK(bp_pool_block_bytes(p, a) == 0);
    CHECK(bp_pool_local_dealloc(l, a, &err) == BP_ERR_USAGE && strstr(err.msg, "not a live block")); /* double */
    CHECK(bp_pool_dealloc(p, a, &err) == BP_ERR_USAGE);                   /* double, through the plain API */
    bp_pool_get_stats(p, &s1);
    CHECK(s1.cached_bytes == 81920 && s1.in_use_bytes == 0 && s1.n_live_blocks == 0);
    CHECK_OK(bp__pool_check(p, 1, &err), err);                           /* with a block in the handle */
    CHECK_OK(bp_pool_local_alloc(l, 79000, &b, &err), err);              /* another size of the same class */
    CHECK(a == b && bp_pool_block_bytes(p, b) == 81920);
    bp_pool_get_stats(p, &s1);
    CHECK(s1.cache_hits == s0.cache_hits + 1 && s1.cached_bytes == 0 && s1.in_use_bytes == 81920);
    CHECK(s1.n_allocs == 2 && s1.n_deallocs == 1 && s1.n_live_blocks == 1);
    /* interior and foreign pointers */
    int local;
    CHECK(bp_pool_local_dealloc(l, (char *)b + 256, &err) == BP_ERR_USAGE);
    CHECK(bp_pool_local_dealloc(l, (char *)b + 1, &err) == BP_ERR_USAGE);
    CHECK(bp_pool_local_dealloc(l, &local, &err) == BP_ERR_USAGE);
    /* two classes up never comes from the cache (100000 -> 448 quanta) ... */
    CHECK_OK(bp_pool_local_dealloc(l, b, &err), err);
    CHECK_OK(bp_pool_local_alloc(l, 100000, &c, &err), err);
    CHECK(c != b && bp_pool_block_bytes(p, c) == 114688);
    /* ... but the next class up serves a miss whole (90000 -> class of 384
     * quanta, the cached block is of 448) */
    CHECK_OK(bp_pool_local_dealloc(l, c, &err), err);
    CHECK_OK(bp_pool_local_alloc(l, 90000, &a, &err), err);
    CHECK(a == c && bp_pool_block_bytes(p, a) == 114688);
    CHECK_OK(bp_pool_local_dealloc(l, a, &err), err);
    CHECK_OK(bp_pool_local_alloc(l, 100000, &c, &err), err);
    CHECK(c == a);
    /* 0 bytes counts as 1 */
    CHECK_OK(bp_pool_local_alloc(l, 0, &a, &err), err);
    CHECK(a && bp_pool_block_bytes(p, a) == 256);
    /* either API frees what the other allocated */
    CHECK_OK(bp_pool_dealloc(p, c, &err), err);
    CHECK_OK(bp_pool_alloc(p, 9000, &c, &err), err);
    CHECK_OK(bp_pool_local_dealloc(l, c, &err), err);
    CHECK_OK(bp_pool_local_dealloc(l, a, &err), err);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    /* flush: everything back on the lists, merged into one block per chunk */
    bp_pool_local_flush(l);
    s1 = tp_compacted(p);
    CHECK(s1.cached_bytes == 0 && s1.in_use_bytes == 0);
    CHECK_MSG(s1.n_free_blocks == s1.n_chunks, "%" PRIu64 " free blocks in %" PRIu64 " chunks", s1.n_free_blocks,
              s1.n_chunks);
    bp_pool_local_free(l);
    bp_pool_get_stats(p, &s1);
    CHECK(s1.n_locals == 0 && s1.n_allocs == s1.n_deallocs && s1.cache_hits >= s0.cache_hits + 3);

    /* the bound: a handle of 64 KiB caches at most 64 KiB */
    l = tp_local(p, 64 * KiB);
    void *v[40];
    CHECK_OK(tp_alloc_all(p, l, v, 40, 3 * KiB, 0, &err), err);
    CHECK_OK(tp_dealloc_all(p, l, v, 40, &err), err);
    bp_pool_get_stats(p, &s1);
    CHECK_MSG(s1.cached_bytes <= 64 * KiB && s1.cached_bytes >= 60 * KiB, "cached %" PRIu64, s1.cached_bytes);
    CHECK(s1.in_use_bytes == 0);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    /* many sizes: the bins' table is bounded, the rest goes to the lists */
    void *w[600];
    CHECK_OK(tp_alloc_all(p, l, w, 600, 256 / 4 + 1, 256 / 4, &err), err);
    CHECK_OK(tp_dealloc_all(p, l, w, 600, &err), err);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_get_stats(p, &s1);
    CHECK(s1.in_use_bytes == 0 && s1.n_live_blocks == 0);
    /* a handle left to bp_pool_free is freed with the pool (ASan checks) */
    CHECK_OK(bp_pool_local_alloc(l, 3 * KiB, &v[0], &err), err);
    CHECK_OK(bp_pool_local_dealloc(l, v[0], &err), err);
    bp_pool_free(p);

    /* cached blocks never make the pool grow for their owner: with a byte
     * limit, a request of another size fits only once the cache is returned */
    bp_pool_options o = tp_options();
    o.max_bytes = 2 * MiB;
    o.compact_interval = 0;
    p = tp_pool(&o);
    l = tp_local(p, 0);
    void *x[8];
    CHECK_OK(tp_alloc_all(p, l, x, 8, 200 * KiB, 0, &err), err);
    CHECK_OK(tp_dealloc_all(p, l, x, 8, &err), err);
    bp_pool_get_stats(p, &s0);
    CHECK(s0.cached_bytes == 8 * 224 * KiB);                /* 200 KiB -> class of 224 KiB */
    CHECK_OK(bp_pool_local_alloc(l, 1700 * KiB, &a, &err), err); /* -> 1792 KiB */
    bp_pool_get_stats(p, &s1);
    CHECK(s1.reserved_bytes <= o.max_bytes && s1.cached_bytes == 0 && s1.os_calls == s0.os_calls);
    /* and a split of a cached block: one 224 KiB block serves 100 KiB (112) */
    CHECK_OK(bp_pool_local_dealloc(l, a, &err), err);
    bp_pool_local_flush(l);
    CHECK_OK(tp_alloc_all(p, l, x, 8, 200 * KiB, 0, &err), err);
    CHECK_OK(bp_pool_local_dealloc(l, x[0], &err), err);
    void *y[40];
    int ny = 0, in_x0 = 0;
    while (ny < 40 && bp_pool_local_alloc(l, 100 * KiB, &y[ny], &err) == BP_OK) {
        in_x0 += (char *)y[ny] >= (char *)x[0] && (char *)y[ny] < (char *)x[0] + 224 * KiB;
        ny++;
    }
    CHECK_MSG(ny < 40 && in_x0 >= 1, "%d blocks of 100 KiB, %d inside the cached block", ny, in_x0);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    for (int i = 1; i < 8; i++) CHECK_OK(bp_pool_local_dealloc(l, x[i], &err), err);
    CHECK_OK(tp_dealloc_all(p, l, y, ny, &err), err);
    bp_pool_local_free(l);
    bp_pool_get_stats(p, &s1);
    CHECK(tp_drained(&s1) && s1.failures == 1);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_free(p);
}

/* Another thread compacts the pool: the handle returns its cache at its
 * next call. */
typedef struct { bp_pool *p; } compact_arg;
static void *compact_thread(void *v)
{
    bp_pool_compact(((compact_arg *)v)->p);
    return NULL;
}

static void test_local_flush_request(void)
{
    bp_error err = {0};
    bp_pool *p = tp_pool(NULL);
    bp_pool_local *l = tp_local(p, 0);
    void *a = NULL, *b = NULL;
    CHECK_OK(bp_pool_local_alloc(l, 5000, &a, &err), err);
    CHECK_OK(bp_pool_local_alloc(l, 7000, &b, &err), err);
    CHECK_OK(bp_pool_local_dealloc(l, a, &err), err);
    bp_pool_stats s = tp_stats(p);
    uint64_t cached = s.cached_bytes;          /* a, and what the miss took in its batch */
    CHECK(cached >= 5120);
    compact_arg ca = {p};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, compact_thread, &ca) == 0);
    pthread_join(th, NULL);
    bp_pool_get_stats(p, &s);
    CHECK(s.cached_bytes == cached);            /* the other thread cannot take it */
    CHECK_OK(bp_pool_local_dealloc(l, b, &err), err); /* the next call returns the cache first */
    bp_pool_get_stats(p, &s);
    CHECK_MSG(s.cached_bytes == 7168, "cached %" PRIu64, s.cached_bytes);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_local_free(l);
    bp_pool_free(p);
}

/* A miss of a small class takes a batch from the lists under one lock: the
 * first block is handed out, the rest wait in the handle's bin (within its
 * bound), so the next allocations of the class hit. */
static void test_local_batch(void)
{
    bp_error err = {0};
    bp_pool *p = tp_pool(NULL);
    bp_pool_local *l = tp_local(p, 0);
    bp_pool_stats s0, s1;
    void *v[9];
    /* free memory on the lists first (a miss of an empty pool grows it) */
    CHECK_OK(bp_pool_alloc(p, 256 * KiB, &v[0], &err), err);
    CHECK_OK(bp_pool_dealloc(p, v[0], &err), err);
    bp_pool_compact(p);
    CHECK_OK(bp_pool_local_alloc(l, 1000, &v[0], &err), err);   /* 1024: a miss */
    bp_pool_get_stats(p, &s0);
    CHECK_MSG(s0.cached_bytes == 7 * 1024, "cached %" PRIu64 " after one miss", s0.cached_bytes);
    CHECK(s0.in_use_bytes == 1024);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    for (int i = 1; i < 8; i++) CHECK_OK(bp_pool_local_alloc(l, 800 + 20 * (uint64_t)i, &v[i], &err), err);
    bp_pool_get_stats(p, &s1);
    CHECK(s1.cache_hits == s0.cache_hits + 7 && s1.cached_bytes == 0 && s1.in_use_bytes == 8 * 1024);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < i; j++) CHECK(v[i] != v[j]);
    CHECK_OK(bp_pool_local_alloc(l, 1024, &v[8], &err), err);  /* the next miss, the next batch */
    bp_pool_get_stats(p, &s1);
    CHECK(s1.cached_bytes == 7 * 1024);
    CHECK_OK(tp_dealloc_all(p, l, v, 9, &err), err);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_local_free(l);
    /* the batch stays inside the handle's bound */
    l = tp_local(p, 4096);
    CHECK_OK(bp_pool_local_alloc(l, 3000, &v[0], &err), err);   /* 3072 */
    bp_pool_get_stats(p, &s1);
    CHECK_MSG(s1.cached_bytes <= 4096 && s1.cached_bytes == 3072, "cached %" PRIu64, s1.cached_bytes);
    CHECK_OK(bp_pool_local_dealloc(l, v[0], &err), err);
    bp_pool_local_free(l);
    bp_pool_get_stats(p, &s1);
    CHECK(tp_drained(&s1));
    bp_pool_free(p);
}

/* Blocks allocated on one thread (its handle's arena) and freed on another,
 * through a handle and through the plain API: they go back to the arena
 * they came from, not into the freeing thread's cache, so the allocating
 * handle gets them again from its own lists; a double free across threads
 * is still caught, and the counters balance. */
typedef struct { bp_pool *p; void **blk; int n; int plain; } xfree_arg;
static void *xfree_thread(void *v)
{
    xfree_arg *a = v;
    bp_error err = {0};
    bp_pool_local *l = a->plain ? NULL : tp_local(a->p, 0);
    CHECK_OK(tp_dealloc_all(a->p, l, a->blk, a->n, &err), err);
    CHECK(bp_pool_dealloc(a->p, a->blk[0], &err) == BP_ERR_USAGE);  /* double free, cross-thread */
    CHECK(l ? bp_pool_local_dealloc(l, a->blk[1], &err) == BP_ERR_USAGE : 1);
    bp_pool_stats s = tp_stats(a->p);
    CHECK_MSG(s.cached_bytes == 0, "%" PRIu64 " bytes of another arena cached by the freeing thread", s.cached_bytes);
    CHECK_OK(bp__pool_check(a->p, 0, &err), err);
    bp_pool_local_free(l);
    return NULL;
}

static void test_cross_thread_free(void)
{
    for (int plain = 0; plain < 2; plain++) {
        bp_error err = {0};
        bp_pool *p = tp_pool(NULL);
        bp_pool_local *l = tp_local(p, 0);
        void *blk[16], *again[16];
        CHECK_OK(tp_alloc_all(p, l, blk, 16, 4096, 4096, &err), err);
        bp_pool_stats s0, s;
        bp_pool_get_stats(p, &s0);
        xfree_arg a = {p, blk, 16, plain};
        pthread_t th;
        REQUIRE(pthread_create(&th, NULL, xfree_thread, &a) == 0);
        pthread_join(th, NULL);
        bp_pool_get_stats(p, &s);
        CHECK(s.in_use_bytes == 0 && s.n_live_blocks == 0 && s.n_allocs == s.n_deallocs);
        CHECK(s.os_calls == s0.os_calls && s.reserved_bytes == s0.reserved_bytes);
        CHECK_OK(bp__pool_check(p, 1, &err), err);
        /* the same sizes again: from the allocating handle's arena, without
         * growing (sizes of one class may come back in another order) */
        CHECK_OK(tp_alloc_all(p, l, again, 16, 4096, 4096, &err), err);
        int same = 0;
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) same += again[i] == blk[j];
        CHECK_MSG(same == 16, "%d of 16 blocks came back to the allocating arena", same);
        bp_pool_get_stats(p, &s);
        CHECK(s.os_calls == s0.os_calls);
        CHECK_OK(tp_dealloc_all(p, l, again, 16, &err), err);
        bp_pool_local_free(l);
        CHECK_OK(bp__pool_check(p, 1, &err), err);
        bp_pool_get_stats(p, &s);
        CHECK(tp_drained(&s));
        bp_pool_free(p);
    }
}

/* Two threads, each with its own handle (so its own arena), replay phases
 * of different sizes in lockstep: after the first replay the pool does not
 * grow (its OS-call counter, not timing), and neither thread's misses
 * touch the other's memory. */
typedef struct {
    bp_pool *p;
    pthread_barrier_t *bar;
    int id;
    uint64_t os[12];
} lockstep_arg;

static void *lockstep_thread(void *v)
{
    lockstep_arg *a = v;
    bp_error err = {0};
    bp_pool_local *l = tp_local(a->p, 0);
    static const uint64_t phase[] = {1900 * KiB, 950 * KiB, 240 * KiB, 120 * KiB, 60 * KiB, 30 * KiB, 3 * KiB};
    static const int count[] = {1, 5, 18, 21, 18, 5, 40};
    void *live[48] = {0};
    for (int rep = 0; rep < 12; rep++) {
        /* the second thread is three phases ahead, so the two miss at
         * once on different classes */
        for (int q = 0; q < 7; q++) {
            int ph = (q + 3 * a->id) % 7;
            CHECK_OK(tp_phase(l, live, 48, phase[ph], count[ph], &err), err);
        }
        CHECK_OK(tp_dealloc_all(a->p, l, live, 48, &err), err);
        memset(live, 0, sizeof live);
        pthread_barrier_wait(a->bar);
        if (a->id == 0) {
            bp_pool_stats s = tp_stats(a->p);
            a->os[rep] = s.os_calls;
            CHECK_OK(bp__pool_check(a->p, 0, &err), err);
        }
        pthread_barrier_wait(a->bar);
    }
    bp_pool_local_free(l);
    return NULL;
}

static void test_arenas_no_growth(void)
{
    bp_error err = {0};
    bp_pool *p = tp_pool(NULL);
    pthread_barrier_t bar;
    REQUIRE(pthread_barrier_init(&bar, NULL, 2) == 0);
    lockstep_arg a[2] = {{p, &bar, 0, {0}}, {p, &bar, 1, {0}}};
    pthread_t th[2];
    for (int t = 0; t < 2; t++) REQUIRE(pthread_create(&th[t], NULL, lockstep_thread, &a[t]) == 0);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&bar);
    for (int rep = 1; rep < 12; rep++)
        CHECK_MSG(a[0].os[rep] == a[0].os[0], "replay %d: %" PRIu64 " OS calls, %" PRIu64 " after the first", rep,
                  a[0].os[rep], a[0].os[0]);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_stats s = tp_stats(p);
    CHECK(tp_drained(&s) && s.n_locals == 0);
    printf("arenas, 2 threads in lockstep: reserved %.1f MiB, peak in use %.1f MiB, %" PRIu64 " OS calls\n",
           (double)s.reserved_bytes / (double)MiB, (double)s.peak_in_use_bytes / (double)MiB, s.os_calls);
    bp_pool_free(p);
}

/* A live arena keeps its memory while it is free between its thread's uses.
 * Two handles (one per worker thread; their steps are run here one after
 * the other, the interleaving the 2-thread replay met at random) each
 * allocate, free and return a 1.5 MiB block.  In the warm-up A runs first,
 * so its chunk is entirely free when B first misses; B must grow its own
 * rather than take A's, or A, on its next round, would take B's back and B
 * grow after the warm-up (1 OS call in the rounds; the synthetic and
 * mobilenet_v2 replays grew so, in 2 runs out of 6).  Then the exhaustion
 * side: under a byte limit another arena's entirely free chunk of a smaller
 * class does serve the request (the only time a live arena's memory moves). */
static void test_arena_keeps_chunks(void)
{
    bp_error err = {0};
    bp_pool *p = tp_pool(NULL);
    bp_pool_local *l[2] = {NULL, NULL};
    for (int t = 0; t < 2; t++) l[t] = tp_local(p, 0);
    void *first[2] = {NULL, NULL}, *b[2] = {NULL, NULL};
    for (int t = 0; t < 2; t++) { /* warm-up: A's replay, then B's */
        CHECK_OK(bp_pool_local_alloc(l[t], 3 * MiB / 2, &first[t], &err), err);
        CHECK_OK(bp_pool_local_dealloc(l[t], first[t], &err), err);
        bp_pool_local_flush(l[t]);
    }
    CHECK_MSG(first[0] != first[1], "the second handle took the first's free chunk (%p)", first[0]);
    bp_pool_stats s0, s;
    bp_pool_get_stats(p, &s0);
    for (int round = 0; round < 10; round++) {
        for (int t = 0; t < 2; t++) CHECK_OK(bp_pool_local_alloc(l[t], 3 * MiB / 2, &b[t], &err), err);
        for (int t = 0; t < 2; t++) {
            CHECK_MSG(b[t] == first[t], "round %d, handle %d: %p, its warm-up block was %p", round, t, b[t], first[t]);
            CHECK_OK(bp_pool_local_dealloc(l[t], b[t], &err), err);
            bp_pool_local_flush(l[t]);
        }
    }
    bp_pool_get_stats(p, &s);
    CHECK_MSG(s.os_calls == s0.os_calls, "%" PRIu64 " OS calls after the warm-up", s.os_calls - s0.os_calls);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    for (int t = 0; t < 2; t++) bp_pool_local_free(l[t]);
    bp_pool_free(p);

    /* a 3 MiB limit: A's free 2 MiB chunk of the 256 KiB class moves to B
     * for 1.5 MiB, which B cannot grow for */
    bp_pool_options o = tp_options();
    o.max_bytes = 3 * MiB;
    p = tp_pool(&o);
    for (int t = 0; t < 2; t++) l[t] = tp_local(p, 0);
    CHECK_OK(bp_pool_local_alloc(l[0], 300 * KiB, &b[0], &err), err);
    CHECK_OK(bp_pool_local_dealloc(l[0], b[0], &err), err);
    bp_pool_local_flush(l[0]);
    bp_pool_get_stats(p, &s0);
    CHECK_OK(bp_pool_local_alloc(l[1], 3 * MiB / 2, &b[1], &err), err);
    bp_pool_get_stats(p, &s);
    CHECK_MSG(s.os_calls == s0.os_calls && s.reserved_bytes == s0.reserved_bytes,
              "%" PRIu64 " OS calls, reserved %" PRIu64 " -> %" PRIu64, s.os_calls - s0.os_calls, s0.reserved_bytes,
              s.reserved_bytes);
    CHECK(b[1] == b[0]);
    if (b[1]) CHECK_OK(bp_pool_local_dealloc(l[1], b[1], &err), err);
    CHECK_OK(bp__pool_check(p, 0, &err), err);
    for (int t = 0; t < 2; t++) bp_pool_local_free(l[t]);
    bp_pool_free(p);
}

/* A handle freed while blocks it allocated are still live elsewhere: its
 * arena's chunks go to the shared arena; the blocks stay valid (their bytes
 * intact) and are freed later from another thread, through a handle and the
 * plain API; the freed handle's memory then serves a new handle without
 * growing, and that handle reuses the retired arena. */
typedef struct { bp_pool *p; unsigned char *blk[24]; uint64_t n[24]; } orphan_arg;
static void *orphan_thread(void *v)
{
    orphan_arg *a = v;
    bp_error err = {0};
    bp_pool_local *l = tp_local(a->p, 0);
    void *tmp[8];
    for (int i = 0; i < 24; i++) {
        a->n[i] = 100 * KiB + (uint64_t)i * 256; /* one cache class (112 KiB) */
        CHECK_OK(bp_pool_local_alloc(l, a->n[i], (void **)&a->blk[i], &err), err);
        memset(a->blk[i], i + 1, (size_t)a->n[i]);
    }
    CHECK_OK(tp_alloc_all(a->p, l, tmp, 8, 5000, 0, &err), err);
    CHECK_OK(tp_dealloc_all(a->p, l, tmp, 8, &err), err); /* cached when freed */
    bp_pool_local_free(l);
    return NULL;
}

static void test_arena_orphans(void)
{
    bp_error err = {0};
    bp_pool *p = tp_pool(NULL);
    orphan_arg a;
    memset(&a, 0, sizeof a);
    a.p = p;
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, orphan_thread, &a) == 0);
    pthread_join(th, NULL);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_stats s0, s;
    bp_pool_get_stats(p, &s0);
    CHECK(s0.n_locals == 0 && s0.cached_bytes == 0 && s0.n_live_blocks == 24);
    bp_pool_local *l = tp_local(p, 0);
    for (int i = 0; i < 24; i++) {
        int good = 1;
        for (uint64_t j = 0; j < a.n[i]; j++) good &= a.blk[i][j] == (unsigned char)(i + 1);
        CHECK_MSG(good, "block %d changed after its handle was freed", i);
        CHECK(bp_pool_block_bytes(p, a.blk[i]) >= a.n[i]);
        CHECK_OK(i % 2 ? bp_pool_local_dealloc(l, a.blk[i], &err) : bp_pool_dealloc(p, a.blk[i], &err), err);
        CHECK(bp_pool_dealloc(p, a.blk[i], &err) == BP_ERR_USAGE);
    }
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_get_stats(p, &s0);  /* (this also returns the plain API's cache) */
    /* the orphaned memory serves the new handle (it is in the shared arena) */
    void *v[24];
    for (int i = 0; i < 24; i++) CHECK_OK(bp_pool_local_alloc(l, a.n[i], &v[i], &err), err);
    bp_pool_get_stats(p, &s);
    CHECK_MSG(s.os_calls == s0.os_calls, "%" PRIu64 " OS calls, %" PRIu64 " before", s.os_calls, s0.os_calls);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    CHECK_OK(tp_dealloc_all(p, l, v, 24, &err), err);
    bp_pool_local_free(l);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_get_stats(p, &s);
    CHECK(tp_drained(&s) && s.n_allocs == s.n_deallocs);
    CHECK(bp_pool_trim(p) == s.reserved_bytes);
    bp_pool_free(p);
}

/* A miss the lists cannot serve evicts the handle's bins least recently
 * allocated first, one bin at a time, until the lists can serve: the cold
 * bin goes back (and merges), the bin in use stays, and the pool does not
 * grow. */
static void test_local_evict(void)
{
    bp_error err = {0};
    bp_pool_options o = tp_options();
    o.max_bytes = 2 * MiB;       /* one chunk of 2 MiB, no growth possible */
    o.compact_interval = 0;
    bp_pool *p = tp_pool(&o);
    bp_pool_local *l = tp_local(p, 0);
    void *a[4], *b[4], *x = NULL;
    /* the chunk's home is the 1 MiB class, so every size below borrows from
     * it and merged pieces serve any of them */
    CHECK_OK(bp_pool_alloc(p, 1900 * KiB, &x, &err), err);
    CHECK_OK(bp_pool_dealloc(p, x, &err), err);
    bp_pool_compact(p);
    CHECK_OK(tp_alloc_all(p, l, a, 4, 200 * KiB, 0, &err), err); /* 224 KiB */
    CHECK_OK(tp_alloc_all(p, l, b, 4, 100 * KiB, 0, &err), err); /* 112 KiB */
    CHECK_OK(tp_dealloc_all(p, l, a, 4, &err), err);
    CHECK_OK(tp_dealloc_all(p, l, b, 4, &err), err);
    /* the 112 KiB class is allocated again: the 224 KiB bin is the colder */
    CHECK_OK(bp_pool_local_alloc(l, 100 * KiB, &x, &err), err);
    CHECK_OK(bp_pool_local_dealloc(l, x, &err), err);
    bp_pool_stats s0, s1;
    bp_pool_get_stats(p, &s0);
    CHECK_MSG(s0.cached_bytes == 4 * 224 * KiB + 4 * 112 * KiB && s0.reserved_bytes == 2 * MiB,
              "cached %" PRIu64 ", reserved %" PRIu64, s0.cached_bytes, s0.reserved_bytes);
    /* 800 KiB (896 KiB): the lists hold 704 KiB; evicting the 224 KiB bin
     * merges its four blocks into one 896 KiB block, which fits */
    CHECK_OK(bp_pool_local_alloc(l, 800 * KiB, &x, &err), err);
    bp_pool_get_stats(p, &s1);
    CHECK_MSG(s1.cached_bytes == 4 * 112 * KiB, "cached %" PRIu64 " after the eviction", s1.cached_bytes);
    CHECK(s1.os_calls == s0.os_calls && s1.reserved_bytes == 2 * MiB);
    CHECK(bp_pool_block_bytes(p, x) == 896 * KiB);
    int from_a = 0;
    for (int i = 0; i < 4; i++) from_a += x == a[i];
    CHECK_MSG(from_a == 1, "the 896 KiB block is made of the evicted blocks");
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    /* the bin in use still hits */
    uint64_t hits = s1.cache_hits;
    CHECK_OK(bp_pool_local_alloc(l, 110 * KiB, &a[0], &err), err);
    bp_pool_get_stats(p, &s1);
    CHECK(s1.cache_hits == hits + 1);
    CHECK_OK(bp_pool_local_dealloc(l, a[0], &err), err);
    CHECK_OK(bp_pool_local_dealloc(l, x, &err), err);
    bp_pool_local_free(l);
    bp_pool_get_stats(p, &s1);
    CHECK(tp_drained(&s1) && s1.failures == 0);
    bp_pool_free(p);
}

/* A repeated trace of phases of different sizes (as a network's stages):
 * after the first replay the pool never grows again, whatever its handle
 * caches (the OS-call counter, not timing). */
static void test_local_no_growth(void)
{
    bp_error err = {0};
    bp_pool *p = tp_pool(NULL);
    bp_pool_local *l = tp_local(p, 0);
    static const uint64_t phase[] = {1900 * KiB, 950 * KiB, 240 * KiB, 120 * KiB, 60 * KiB, 30 * KiB, 245 * KiB};
    static const int count[] = {1, 5, 18, 21, 18, 5, 1};
    void *live[32] = {0};
    uint64_t os_after_first = 0;
    for (int rep = 0; rep < 20; rep++) {
        /* a window of live blocks slides through each phase */
        for (int ph = 0; ph < 7; ph++) CHECK_OK(tp_phase(l, live, 32, phase[ph], count[ph], &err), err);
        CHECK_OK(tp_dealloc_all(p, l, live, 32, &err), err);
        memset(live, 0, sizeof live);
        bp_pool_stats s = tp_stats(p);
        if (rep == 0) os_after_first = s.os_calls;
        else CHECK_MSG(s.os_calls == os_after_first, "replay %d: %" PRIu64 " OS calls, %" PRIu64 " after the first",
                       rep, s.os_calls, os_after_first);
    }
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_local_free(l);
    bp_pool_free(p);
}

/* The alloc/free trace of one mobilenet_v2 inference (bench/pool's
 * pool_trace of the ONNX model, N=1): n > 0 allocates n bytes, -k frees the
 * k-th allocation of the pass. */
static const int64_t mbv2_trace[] = {
    1605632, 1605632, -1, 802816, -2, 4816896, -3, 1204224, -4, 301056, -5, 1806336, 1806336, -7, 301056, -8, -9,
    1806336, -6, 451584, -10, 100352, -11, 602112, 602112, -13, 100352, -14, -15, 602112, 602112, -16, 100352, -17,
    -18, 602112, -12, 150528, -19, 50176, -20, 301056, 301056, -22, 50176, -23, -24, 301056, 301056, -25, 50176,
    -26, -27, 301056, 301056, -28, 50176, -29, -30, 301056, -21, 301056, -31, 75264, -32, 451584, 451584, -34,
    75264, -35, -36, 451584, 451584, -37, 75264, -38, -39, 451584, -33, 112896, -40, 31360, -41, 188160, 188160,
    -43, 31360, -44, -45, 188160, 188160, -46, 31360, -47, -48, 188160, -42, 188160, -49, 62720, -50, 250880, -51,
    5120, -52, 4000, -53};

typedef struct { uintptr_t lo, hi; } span_t;

static int span_cmp(const void *a, const void *b)
{
    uintptr_t x = ((const span_t *)a)->lo, y = ((const span_t *)b)->lo;
    return x < y ? -1 : x > y;
}

/* One pass of the trace through handle l; every block handed out is added
 * to spans (check == 0) or must lie inside one of them (the union of what
 * the warm-up handed out, merged and sorted). */
static int mbv2_pass(bp_pool_local *l, span_t *spans, size_t *n_spans, size_t cap_spans, int check, int pass)
{
    enum { N = sizeof mbv2_trace / sizeof mbv2_trace[0] };
    void *blk[N] = {0};
    int64_t req[N] = {0};
    int n = 0, bad = 0;
    bp_error err = {0};
    for (size_t e = 0; e < N; e++) {
        if (mbv2_trace[e] < 0) {
            int k = (int)-mbv2_trace[e] - 1;
            CHECK_OK(bp_pool_local_dealloc(l, blk[k], &err), err);
            blk[k] = NULL;
            continue;
        }
        req[n] = mbv2_trace[e];
        CHECK_OK(bp_pool_local_alloc(l, (uint64_t)req[n], &blk[n], &err), err);
        uintptr_t lo = (uintptr_t)blk[n], hi = lo + (uintptr_t)req[n];
        if (!check) {
            if (*n_spans < cap_spans) spans[(*n_spans)++] = (span_t){lo, hi};
        } else {
            size_t a = 0, b = *n_spans; /* the last span starting at or below lo */
            while (b - a > 1) {
                size_t m = (a + b) / 2;
                if (spans[m].lo <= lo) a = m;
                else b = m;
            }
            if (!bad && !(*n_spans && spans[a].lo <= lo && hi <= spans[a].hi)) {
                bad = 1;
                CHECK_MSG(0, "pass %d: block [%#" PRIxPTR ", %#" PRIxPTR ") of %" PRId64 " bytes lies outside what "
                          "the warm-up handed out", pass, lo, hi, req[n]);
            }
        }
        n++;
    }
    CHECK_OK(tp_dealloc_all(NULL, l, blk, n, &err), err);
    return bad;
}

/* Footprint: once a trace has run, repeating it hands out only memory the
 * earlier passes handed out (so no page the warm-up left untouched is
 * touched later) and reserves nothing more.  Large freed blocks that would
 * sit in the handle's cache pin memory the next pass then carves afresh. */
static void test_local_footprint(void)
{
    bp_error err = {0};
    bp_pool *p = tp_pool(NULL);
    bp_pool_local *l = tp_local(p, 0);
    enum { WARM = 3, CAP = 64 * 3 };
    span_t spans[CAP];
    size_t n = 0;
    for (int pass = 0; pass < WARM; pass++) mbv2_pass(l, spans, &n, CAP, 0, pass);
    qsort(spans, n, sizeof spans[0], span_cmp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && spans[i].lo <= spans[m - 1].hi) {
            if (spans[i].hi > spans[m - 1].hi) spans[m - 1].hi = spans[i].hi;
        } else spans[m++] = spans[i];
    }
    bp_pool_stats s0, s1;
    bp_pool_get_stats(p, &s0);
    for (int pass = WARM; pass < 200; pass++)
        if (mbv2_pass(l, spans, &m, CAP, 1, pass)) break;
    bp_pool_get_stats(p, &s1);
    CHECK_MSG(s1.os_calls == s0.os_calls && s1.reserved_bytes == s0.reserved_bytes,
              "the repeated trace grew the pool: %" PRIu64 " -> %" PRIu64 " OS calls", s0.os_calls, s1.os_calls);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_local_free(l);
    bp_pool_free(p);
}

/* The keep rule of a handle's free (loc_keep; the hit path tests only the
 * bound for blocks below 1 MiB): in a small pool with the default bound,
 * blocks of 1 MiB and more beyond the first of their class stay cached only
 * within a quarter of the pool's reserved bytes; smaller ones, and any
 * block under an explicit bound, only within the bound. */
static uint64_t keep_cached(uint64_t cache_bytes, uint64_t bytes, int n, uint64_t *reserved)
{
    bp_error err = {0};
    bp_pool *p = tp_pool(NULL);
    bp_pool_local *l = tp_local(p, cache_bytes);
    void *v[8];
    CHECK_OK(tp_alloc_all(p, l, v, n, bytes, 0, &err), err);
    CHECK_OK(tp_dealloc_all(p, l, v, n, &err), err);
    bp_pool_stats s = tp_stats(p);
    CHECK(s.in_use_bytes == 0);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    *reserved = s.reserved_bytes;
    bp_pool_local_free(l);
    bp_pool_free(p);
    return s.cached_bytes;
}

static void test_local_keep(void)
{
    uint64_t r = 0, c;
    /* 896 KiB (a class size, below 1 MiB): all four stay cached */
    c = keep_cached(0, 896 * KiB, 4, &r);
    CHECK_MSG(c == 4 * 896 * KiB, "896 KiB blocks: cached %" PRIu64, c);
    /* 1.5 MiB (a class size): the first is kept, the rest only within a
     * quarter of the reserved bytes */
    c = keep_cached(0, 3 * MiB / 2, 4, &r);
    uint64_t q = r / 4 > 3 * MiB / 2 ? r / 4 : 3 * MiB / 2;
    CHECK_MSG(c >= 3 * MiB / 2 && c <= q && c < 6 * MiB, "1.5 MiB blocks: cached %" PRIu64 " of reserved %" PRIu64,
              c, r);
    /* an explicit bound: the rule is off, the bound alone decides */
    c = keep_cached(32 * MiB, 3 * MiB / 2, 4, &r);
    CHECK_MSG(c == 6 * MiB, "1.5 MiB blocks, 32 MiB bound: cached %" PRIu64, c);
    c = keep_cached(2 * MiB, 896 * KiB, 4, &r);
    CHECK_MSG(c == 2 * 896 * KiB, "896 KiB blocks, 2 MiB bound: cached %" PRIu64, c);
}

int main(void)
{
    test_thread_cache();
    test_local();
    test_local_flush_request();
    test_local_batch();
    test_local_evict();
    test_local_no_growth();
    test_local_footprint();
    test_local_keep();
    test_cross_thread_free();
    test_arenas_no_growth();
    test_arena_keeps_chunks();
    test_arena_orphans();
    return check_status();
}
