/* search against brute force: on thousands of random instances of up to 7
 * buffers, search's arena equals the optimum found by trying every offset
 * of every buffer (branch and bound on the arena only), and search says it
 * is optimal.  Also: capacity mode (fits / does not fit) against the same
 * optimum, determinism, the time limit returning a verified packing, and
 * a search 20,000 buffers deep on a small thread stack. */
#define _POSIX_C_SOURCE 200809L
#include "bufplan.h"
#include "check.h"
#include "assign/assign_internal.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

static int overlap_t(const bp_interval *a, const bp_interval *b)
{
    return a->size && b->size && a->lower < b->upper && b->lower < a->upper;
}

/* Exhaustive: every offset (multiple of the alignment) for every buffer,
 * cut only when the arena can no longer beat the best found. */
static void brute(const bp_interval *iv, size_t n, size_t i, uint64_t *off, uint64_t cur, uint64_t *best)
{
    if (cur >= *best) return;
    if (i == n) { *best = cur; return; }
    if (!iv[i].size) { off[i] = 0; brute(iv, n, i + 1, off, cur, best); return; }
    uint64_t al = iv[i].alignment > 1 ? iv[i].alignment : 1;
    bool fixed = iv[i].fixed_offset != BP_NO_OFFSET;
    for (uint64_t o = fixed ? iv[i].fixed_offset : 0; fixed || o + iv[i].size < *best; o += al) {
        int ok = 1;
        for (size_t j = 0; j < i && ok; j++)
            if (overlap_t(&iv[i], &iv[j]) && o < off[j] + iv[j].size && off[j] < o + iv[i].size) ok = 0;
        if (!ok) { if (fixed) break; continue; }
        off[i] = o;
        uint64_t c2 = o + iv[i].size > cur ? o + iv[i].size : cur;
        brute(iv, n, i + 1, off, c2, best);
        if (fixed) break;
    }
}

static void test_brute_force(void)
{
    ull seed = 2024;
    bp_interval iv[7];
    uint64_t off[7], boff[7];
    int n_opt = 0, n_gap = 0;
    for (int round = 0; round < 3000; round++) {
        size_t n = 1 + test_rand(&seed) % 7;
        int64_t span = 2 + (int64_t)(test_rand(&seed) % 8);
        for (size_t i = 0; i < n; i++) {
            int64_t lo = (int64_t)(test_rand(&seed) % (ull)span);
            int64_t len = 1 + (int64_t)(test_rand(&seed) % (ull)span);
            iv[i].lower = lo;
            iv[i].upper = lo + len;
            iv[i].size = 1 + test_rand(&seed) % 5;
            if (test_rand(&seed) % 12 == 0) iv[i].size = 0;
            iv[i].alignment = round % 3 == 0 ? 1ull << (test_rand(&seed) % 3) : 0;
            iv[i].fixed_offset = BP_NO_OFFSET;
        }
        uint64_t sum = 1;
        for (size_t i = 0; i < n; i++) sum += iv[i].size + 4;
        uint64_t best = sum * 2;
        brute(iv, n, 0, boff, 0, &best);
        bp_assign_options o;
        bp_assign_options_init(&o);
        o.time_limit = 20;
        bp_assign_result r;
        bp_error e;
        CHECK_OK(bp_assign_intervals(iv, n, BP_ASSIGN_SEARCH, &o, off, &r, &e), e);
        CHECK_OK(bp_intervals_check(iv, n, off, r.arena_bytes, &e), e);
        CHECK_MSG(r.arena_bytes == best, "round %d: search %llu, brute force %llu", round, (ull)r.arena_bytes, (ull)best);
        CHECK_MSG(r.optimal, "round %d: optimum %llu not proven", round, (ull)best);
        CHECK(r.lower_bound == r.arena_bytes);
        if (r.arena_bytes > bp_intervals_max_live(iv, n)) n_gap++;
        n_opt++;
        /* capacity mode: fits at the optimum, does not fit one below */
        if (best > 0) {
            o.capacity = best;
            CHECK_OK(bp_assign_intervals(iv, n, BP_ASSIGN_SEARCH, &o, off, &r, &e), e);
            CHECK_MSG(r.fits == 1 && r.arena_bytes <= best, "round %d: capacity %llu fits=%d", round, (ull)best, r.fits);
            CHECK_OK(bp_intervals_check(iv, n, off, best, &e), e);
            if (best > 1) {
                o.capacity = best - 1;
                CHECK_OK(bp_assign_intervals(iv, n, BP_ASSIGN_SEARCH, &o, off, &r, &e), e);
                CHECK_MSG(r.fits == 0, "round %d: capacity %llu fits=%d", round, (ull)(best - 1), r.fits);
            }
        }
    }
    /* the instances must include ones where max-live is not reachable */
    CHECK(n_opt == 3000 && n_gap > 50);
    fprintf(stderr, "%d instances, %d with optimum above max-live\n", n_opt, n_gap);
}

/* Pre-placed buffers: search treats them as obstacles and still finds (and
 * proves) the optimum that brute force finds with those offsets fixed. */
static void test_fixed_brute(void)
{
    ull seed = 31337;
    bp_interval iv[7];
    uint64_t off[7], boff[7];
    int n_fixed_rounds = 0, n_above = 0;
    for (int round = 0; round < 1500; round++) {
        size_t n = 2 + test_rand(&seed) % 6;
        int64_t span = 2 + (int64_t)(test_rand(&seed) % 8);
        for (size_t i = 0; i < n; i++) {
            int64_t lo = (int64_t)(test_rand(&seed) % (ull)span);
            iv[i].lower = lo;
            iv[i].upper = lo + 1 + (int64_t)(test_rand(&seed) % (ull)span);
            iv[i].size = 1 + test_rand(&seed) % 5;
            iv[i].alignment = round % 4 == 0 ? 1ull << (test_rand(&seed) % 3) : 0;
            iv[i].fixed_offset = BP_NO_OFFSET;
        }
        /* one or two pre-placed buffers, disjoint in bytes, somewhere low */
        size_t nf = 1 + test_rand(&seed) % 2;
        uint64_t at = test_rand(&seed) % 6;
        for (size_t f = 0; f < nf; f++) {
            size_t i = (size_t)test_rand(&seed) % n;
            if (iv[i].fixed_offset != BP_NO_OFFSET) continue;
            uint64_t al = iv[i].alignment > 1 ? iv[i].alignment : 1;
            at = (at + al - 1) / al * al;
            iv[i].fixed_offset = at;
            at += iv[i].size + test_rand(&seed) % 4;
        }
        /* pre-placed first: brute force then prunes on them at once */
        for (size_t i = 0, w = 0; i < n; i++)
            if (iv[i].fixed_offset != BP_NO_OFFSET) { bp_interval t = iv[w]; iv[w] = iv[i]; iv[i] = t; w++; }
        uint64_t sum = at + 1;
        for (size_t i = 0; i < n; i++) sum += iv[i].size + 4;
        uint64_t best = sum * 2;
        brute(iv, n, 0, boff, 0, &best);
        bp_assign_options o;
        bp_assign_options_init(&o);
        o.time_limit = 20;
        bp_assign_result r;
        bp_error e;
        CHECK_OK(bp_assign_intervals(iv, n, BP_ASSIGN_SEARCH, &o, off, &r, &e), e);
        CHECK_OK(bp_intervals_check(iv, n, off, r.arena_bytes, &e), e);
        for (size_t i = 0; i < n; i++)
            if (iv[i].fixed_offset != BP_NO_OFFSET) CHECK(off[i] == iv[i].fixed_offset);
        CHECK_MSG(r.arena_bytes == best, "round %d: search %llu, brute force %llu", round, (ull)r.arena_bytes, (ull)best);
        CHECK_MSG(r.optimal, "round %d: optimum %llu not proven", round, (ull)best);
        /* bestfit keeps them too and is never better than the optimum */
        CHECK_OK(bp_assign_intervals(iv, n, BP_ASSIGN_BESTFIT, &o, off, &r, &e), e);
        CHECK_OK(bp_intervals_check(iv, n, off, r.arena_bytes, &e), e);
        CHECK(r.arena_bytes >= best);
        if (best > bp_intervals_max_live(iv, n)) n_above++;
        n_fixed_rounds++;
    }
    CHECK(n_fixed_rounds == 1500 && n_above > 50);
    fprintf(stderr, "%d instances with pre-placed buffers, %d with optimum above max-live\n", n_fixed_rounds, n_above);
}

/* Same input, same answer; a tiny time limit still returns a valid packing. */
static void test_deterministic_and_limit(void)
{
    ull seed = 99;
    enum { N = 300 };
    bp_interval *iv = calloc(N, sizeof *iv);
    uint64_t *a = calloc(N, sizeof *a), *b = calloc(N, sizeof *b);
    for (size_t i = 0; i < N; i++) {
        int64_t lo = (int64_t)(test_rand(&seed) % 200);
        iv[i].lower = lo;
        iv[i].upper = lo + 1 + (int64_t)(test_rand(&seed) % 40);
        iv[i].size = 1024 * (1 + test_rand(&seed) % 64);
        iv[i].fixed_offset = BP_NO_OFFSET;
    }
    bp_assign_options o;
    bp_assign_options_init(&o);
    o.time_limit = 0.2;
    bp_assign_result r1, r2;
    bp_error e;
    CHECK_OK(bp_assign_intervals(iv, N, BP_ASSIGN_SEARCH, &o, a, &r1, &e), e);
    CHECK_OK(bp_intervals_check(iv, N, a, r1.arena_bytes, &e), e);
    CHECK(r1.arena_bytes >= r1.lower_bound && r1.lower_bound >= bp_intervals_max_live(iv, N));
    /* a node-count-identical rerun: the time limit may cut the two runs at
     * different nodes, so compare runs that finish (generous limit) */
    o.time_limit = 30;
    CHECK_OK(bp_assign_intervals(iv, N, BP_ASSIGN_SEARCH, &o, a, &r1, &e), e);
    CHECK_OK(bp_assign_intervals(iv, N, BP_ASSIGN_SEARCH, &o, b, &r2, &e), e);
    if (r1.optimal && r2.optimal) {
        CHECK(r1.arena_bytes == r2.arena_bytes && r1.nodes == r2.nodes);
        CHECK(memcmp(a, b, N * sizeof *a) == 0);
    }
    /* pre-placed intervals: search keeps them, and is never worse than
     * bestfit with them */
    iv[0].fixed_offset = 0;
    iv[1].fixed_offset = 1u << 20;
    o.time_limit = 1;
    CHECK_OK(bp_assign_intervals(iv, N, BP_ASSIGN_SEARCH, &o, a, &r1, &e), e);
    CHECK(a[0] == 0 && a[1] == 1u << 20);
    CHECK_OK(bp_intervals_check(iv, N, a, r1.arena_bytes, &e), e);
    CHECK_OK(bp_assign_intervals(iv, N, BP_ASSIGN_BESTFIT, &o, b, &r2, &e), e);
    CHECK(r1.arena_bytes <= r2.arena_bytes && r1.lower_bound <= r1.arena_bytes);
    free(iv); free(a); free(b);
}

/* Deep descent: 20,000 random buffers (lifetimes up to 16 steps over 5,000
 * steps) where bestfit stays above max-live and the first probe, at the
 * bound, succeeds in one dive that places every buffer: some 11,000 frames
 * deep (placements plus splits).  It runs in a thread with a 256 KiB stack,
 * where a search recursing once per placement overflows (the recursive
 * version did, under ASan); the search keeps its frames on the heap. */
typedef struct deep_job {
    const bp_interval *iv;
    size_t n;
    uint64_t *off;
    bp_assign_result r;
    bp_status st;
    bp_error e;
} deep_job;

static void *deep_run(void *arg)
{
    deep_job *j = arg;
    bp_assign_options o;
    bp_assign_options_init(&o);
    o.time_limit = 30;
    j->st = bp_assign_intervals(j->iv, j->n, BP_ASSIGN_SEARCH, &o, j->off, &j->r, &j->e);
    return NULL;
}

static void test_deep(void)
{
    enum { N = 20000 };
    ull seed = 2;
    bp_interval *iv = calloc(N, sizeof *iv);
    uint64_t *off = calloc(N, sizeof *off);
    REQUIRE(iv && off);
    for (size_t i = 0; i < N; i++) {
        iv[i].lower = (int64_t)(test_rand(&seed) % (N / 4));
        iv[i].upper = iv[i].lower + 1 + (int64_t)(test_rand(&seed) % 16);
        iv[i].size = 1 + test_rand(&seed) % 1000;
        iv[i].fixed_offset = BP_NO_OFFSET;
    }
    deep_job j = { iv, N, off, {0}, BP_OK, {0} };
    pthread_attr_t at;
    pthread_t th;
    REQUIRE(pthread_attr_init(&at) == 0);
    REQUIRE(pthread_attr_setstacksize(&at, 256 * 1024) == 0);
    REQUIRE(pthread_create(&th, &at, deep_run, &j) == 0);
    REQUIRE(pthread_join(th, NULL) == 0);
    pthread_attr_destroy(&at);
    CHECK_OK(j.st, j.e);
    bp_error e;
    CHECK_OK(bp_intervals_check(iv, N, off, j.r.arena_bytes, &e), e);
    CHECK(j.r.lower_bound >= bp_intervals_max_live(iv, N) && j.r.arena_bytes >= j.r.lower_bound);
    /* the point of the instance: the search ran, through (at least) one
     * dive as deep as there are buffers (if bestfit ever packs it at the
     * bound, pick another seed) */
    CHECK_MSG(j.r.nodes >= N, "search explored %llu nodes, not a deep dive", (ull)j.r.nodes);
    fprintf(stderr, "deep: %d buffers, %llu nodes, arena %llu, bound %llu, %.1f s\n", N, (ull)j.r.nodes,
            (ull)j.r.arena_bytes, (ull)j.r.lower_bound, j.r.seconds);
    free(iv); free(off);
}

/* search with a node budget (bp__assign_search_ex) on a random instance. */
static bp_status budget_run(const bp_interval *iv, size_t n, uint64_t budget, uint64_t *off, bp_assign_result *r,
                            bp_error *e)
{
    bp_assign_options o;
    bp_assign_options_init(&o);
    o.time_limit = 0; /* no clock: the budget alone ends it */
    memset(r, 0, sizeof *r);
    r->fits = -1;
    r->lower_bound = bp_intervals_max_live(iv, n);
    return bp__assign_search_ex(iv, n, &o, budget, off, r, e);
}

/* A node budget makes the result a function of the input and the budget:
 * two runs agree to the byte and the node; a larger budget continues the
 * same search, so its arena is never larger and its bound never smaller.
 * On small instances, whatever the budget, the reported lower bound never
 * exceeds the brute-force optimum (and the arena never goes below it). */
static void test_node_budget(void)
{
    ull seed = 4242;
    enum { N = 60 };
    bp_interval iv[N];
    uint64_t a[N], b[N];
    int cut = 0;
    for (int inst = 0; inst < 4; inst++) {
        for (size_t i = 0; i < N; i++) {
            int64_t lo = (int64_t)(test_rand(&seed) % 40);
            iv[i].lower = lo;
            iv[i].upper = lo + 1 + (int64_t)(test_rand(&seed) % 12);
            iv[i].size = 1 + test_rand(&seed) % 97;
            iv[i].alignment = inst == 3 ? 1ull << (test_rand(&seed) % 3) : 0;
            iv[i].fixed_offset = BP_NO_OFFSET;
        }
        uint64_t prev_arena = UINT64_MAX, prev_lb = 0;
        for (uint64_t budget = 50; budget <= 51200; budget *= 4) {
            bp_assign_result r1, r2;
            bp_error e;
            CHECK_OK(budget_run(iv, N, budget, a, &r1, &e), e);
            CHECK_OK(budget_run(iv, N, budget, b, &r2, &e), e);
            CHECK_OK(bp_intervals_check(iv, N, a, r1.arena_bytes, &e), e);
            CHECK_MSG(r1.arena_bytes == r2.arena_bytes && r1.lower_bound == r2.lower_bound && r1.nodes == r2.nodes &&
                      !memcmp(a, b, sizeof a), "instance %d, budget %llu: two runs differ", inst, (ull)budget);
            CHECK(r1.nodes <= budget);
            CHECK(r1.lower_bound <= r1.arena_bytes);
            CHECK_MSG(r1.arena_bytes <= prev_arena && r1.lower_bound >= prev_lb,
                      "instance %d, budget %llu: arena %llu (was %llu), bound %llu (was %llu)", inst, (ull)budget,
                      (ull)r1.arena_bytes, (ull)prev_arena, (ull)r1.lower_bound, (ull)prev_lb);
            if (!r1.optimal) cut++;
            prev_arena = r1.arena_bytes;
            prev_lb = r1.lower_bound;
        }
    }
    CHECK_MSG(cut > 0, "every budget finished: the instances do not test the cut");
    /* small instances (half of them aligned, where max-live is loose), small
     * budgets: the bound stays a bound */
    bp_interval sv[7];
    uint64_t so[7], bo[7];
    int raised = 0, gap = 0;
    for (int round = 0; round < 1500; round++) {
        size_t n = 3 + test_rand(&seed) % 5;
        int64_t span = 2 + (int64_t)(test_rand(&seed) % 8);
        for (size_t i = 0; i < n; i++) {
            int64_t lo = (int64_t)(test_rand(&seed) % (ull)span);
            sv[i].lower = lo;
            sv[i].upper = lo + 1 + (int64_t)(test_rand(&seed) % (ull)span);
            sv[i].size = 1 + test_rand(&seed) % 5;
            sv[i].alignment = round % 2 ? 1ull << (test_rand(&seed) % 3) : 0;
            sv[i].fixed_offset = BP_NO_OFFSET;
        }
        uint64_t best = 1;
        for (size_t i = 0; i < n; i++) best += 2 * sv[i].size + 8;
        brute(sv, n, 0, bo, 0, &best);
        uint64_t budget = 1 + test_rand(&seed) % 300;
        if (best > bp_intervals_max_live(sv, n)) gap++;
        bp_assign_result r;
        bp_error e;
        CHECK_OK(budget_run(sv, n, budget, so, &r, &e), e);
        CHECK_OK(bp_intervals_check(sv, n, so, r.arena_bytes, &e), e);
        CHECK_MSG(r.lower_bound <= best && best <= r.arena_bytes, "round %d: bound %llu, optimum %llu, arena %llu",
                  round, (ull)r.lower_bound, (ull)best, (ull)r.arena_bytes);
        if (r.lower_bound > bp_intervals_max_live(sv, n)) raised++;
    }
    CHECK_MSG(raised > 20, "search raised the bound above max-live on only %d instances", raised);
    fprintf(stderr, "node budget: %d cut runs; small instances: %d with optimum above max-live, bound raised on %d\n",
            cut, gap, raised);
}

/* A pre-placed buffer above everything else: the arena is its end, far
 * above max-live.  Search proves it at once (it used to probe below it
 * until the time limit: every part fit, the incumbent never dropped), and
 * a capacity below that end does not fit. */
static void test_obstacle_on_top(void)
{
    bp_interval iv[3] = {
        {0, 2, 10, 0, BP_NO_OFFSET}, {0, 2, 10, 0, BP_NO_OFFSET}, {0, 1, 5, 0, 100},
    };
    uint64_t off[3];
    bp_assign_result r;
    bp_error e;
    CHECK_OK(budget_run(iv, 3, 100000, off, &r, &e), e);
    CHECK_OK(bp_intervals_check(iv, 3, off, r.arena_bytes, &e), e);
    CHECK_MSG(r.arena_bytes == 105 && r.optimal && r.lower_bound == 105, "arena %llu, bound %llu, optimal %d",
              (ull)r.arena_bytes, (ull)r.lower_bound, r.optimal);
    bp_assign_options o;
    bp_assign_options_init(&o);
    o.capacity = 50;
    CHECK_OK(bp_assign_intervals(iv, 3, BP_ASSIGN_SEARCH, &o, off, &r, &e), e);
    CHECK_MSG(r.fits == 0, "capacity 50 under an obstacle ending at 105: fits=%d", r.fits);
}

/* Above 4,096 buffers search keeps no bitsets and walks overlap lists
 * instead (sr_place, sr_sections_ok_inc); debug builds check every
 * incremental section test against the full one.  900 random instances of
 * 4-7 buffers (a third aligned), each in its own time window, so they
 * are independent parts: the optimum is the largest brute-force optimum,
 * and search must reach it and prove it.  The first one whose optimum is
 * above its max-live gets sizes and alignments times 128 (its optimum
 * too: a canonical packing's offsets are sums of sizes, aligned up), so
 * the whole instance has its optimum above max-live and search has to
 * exhaust a tree. */
static void test_many_parts(void)
{
    enum { COPIES = 900, M = 7 };
    ull seed = 777;
    bp_interval *iv = calloc(COPIES * M, sizeof *iv);
    uint64_t *off = calloc(COPIES * M, sizeof *off);
    REQUIRE(iv && off);
    size_t n = 0;
    uint64_t opt = 0;
    int gaps = 0, scaled = 0;
    for (int cp = 0; cp < COPIES; cp++) {
        bp_interval *x = iv + n;
        size_t m = 4 + test_rand(&seed) % (M - 3);
        int64_t span = 3 + (int64_t)(test_rand(&seed) % 6), base = (int64_t)cp * 100;
        for (size_t i = 0; i < m; i++) {
            int64_t lo = (int64_t)(test_rand(&seed) % (ull)span);
            x[i].lower = base + lo;
            x[i].upper = base + lo + 1 + (int64_t)(test_rand(&seed) % (ull)span);
            x[i].size = 1 + test_rand(&seed) % 6;
            x[i].alignment = cp % 3 == 0 ? 1ull << (test_rand(&seed) % 3) : 0;
            x[i].fixed_offset = BP_NO_OFFSET;
        }
        uint64_t best = 1, bo[M];
        for (size_t i = 0; i < m; i++) best += 2 * x[i].size + 8;
        brute(x, m, 0, bo, 0, &best);
        if (best > bp_intervals_max_live(x, m)) {
            gaps++;
            if (!scaled) {
                for (size_t i = 0; i < m; i++) {
                    x[i].size *= 128;
                    if (x[i].alignment > 1) x[i].alignment *= 128;
                }
                best *= 128;
                scaled = 1;
            }
        }
        if (best > opt) opt = best;
        n += m;
    }
    REQUIRE(n > 4096 && scaled);
    bp_assign_result r;
    bp_error e;
    CHECK_OK(budget_run(iv, n, 2000000, off, &r, &e), e);
    CHECK_OK(bp_intervals_check(iv, n, off, r.arena_bytes, &e), e);
    CHECK_MSG(r.arena_bytes == opt && r.optimal, "%zu buffers: arena %llu (optimum %llu), optimal %d", n,
              (ull)r.arena_bytes, (ull)opt, r.optimal);
    CHECK_MSG(r.nodes > 0, "bestfit alone solved it: the search path is not tested");
    fprintf(stderr, "many parts: %zu buffers, %d parts above max-live, arena %llu, %llu nodes\n", n, gaps,
            (ull)r.arena_bytes, (ull)r.nodes);
    free(iv);
    free(off);
}

/* MiniMalloc's instance I (374 buffers): search packs it at its lower
 * bound, 2^20, within a node budget (it stayed 3-6% above it before
 * sub-parts were re-ranked by the sizes left in their sections). */
static void test_minimalloc_I(void)
{
    const char *data = getenv("BP_DATA");
    char path[4096];
    snprintf(path, sizeof path, "%s/minimalloc/challenging/I.1048576.csv", data ? data : "../shared/data");
    bp_instance *inst;
    bp_error e;
    if (bp_instance_read_csv(path, NULL, &inst, &e) != BP_OK) {
        fprintf(stderr, "skipping instance I: %s\n", e.msg);
        return;
    }
    uint64_t *off = calloc(inst->n, sizeof *off);
    REQUIRE(off);
    bp_assign_result r;
    CHECK_OK(budget_run(inst->iv, inst->n, 300000, off, &r, &e), e);
    CHECK_OK(bp_intervals_check(inst->iv, inst->n, off, r.arena_bytes, &e), e);
    CHECK_MSG(r.arena_bytes == 1048576 && r.optimal, "I: arena %llu after %llu nodes", (ull)r.arena_bytes, (ull)r.nodes);
    fprintf(stderr, "I: arena %llu, %llu nodes\n", (ull)r.arena_bytes, (ull)r.nodes);
    free(off);
    bp_instance_free(inst);
}

int main(void)
{
    test_minimalloc_I();
    test_many_parts();
    test_obstacle_on_top();
    test_node_budget();
    test_deep();
    test_brute_force();
    test_fixed_brute();
    test_deterministic_and_limit();
    return check_status();
}
