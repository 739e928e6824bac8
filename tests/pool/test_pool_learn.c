/* Learned sequences of the pool (options.learn, docs/POOL.md): a handle
 * that sees the same sequence of requests twice plans it and serves later
 * repetitions from the plan.  Every run here goes through a shadow model:
 * each live block aligned, inside no other live block, at least as large as
 * asked, its bytes intact when freed.  The cases: a sequence repeated
 * (planned from the third run on, no OS call after that), runs that leave
 * the plan (a larger request, another free order, a free through another
 * handle or the plain API, double and interior frees) and come back to it,
 * a plan dropped after two such runs in a row and learned again, a plan
 * whose handle is freed while some of its blocks live, sequences that never
 * repeat (learning stops), a handle whose blocks are freed elsewhere (its
 * OS calls stop), and learning off. */
#define _DEFAULT_SOURCE
#include "bufplan.h"
#include "check.h"
#include "pool/pool_internal.h"
#include "pool_shadow.h"

#include <inttypes.h>
#include <stdint.h>

#define MiB (UINT64_C(1) << 20)
#define KiB (UINT64_C(1) << 10)

typedef struct { int alloc, id; uint64_t bytes; } sev;   /* an allocation of `bytes` as `id`, or id's free */
typedef struct { unsigned char *p; uint64_t req, size; unsigned tag; } live_t;

enum { MAXID = 512 };

/* A sequence of n allocations: sizes from 0 bytes to ~3 MiB, each block
 * freed at a random later moment, all freed at the end.  Returns the events. */
static int make_seq(sev *ev, int n, unsigned long long seed)
{
    int m = 0, live[MAXID], nl = 0;
    for (int i = 0; i < n; i++) {
        uint64_t r = test_rand(&seed) % 100;
        uint64_t b = r < 5 ? 0 : r < 60 ? 1 + test_rand(&seed) % (16 * KiB) : r < 92 ? test_rand(&seed) % (600 * KiB)
                                                                                    : test_rand(&seed) % (3 * MiB);
        ev[m++] = (sev){1, i, b};
        live[nl++] = i;
        while (nl > 0 && test_rand(&seed) % 100 < 45) {
            int k = (int)(test_rand(&seed) % (unsigned)nl);
            ev[m++] = (sev){0, live[k], 0};
            live[k] = live[--nl];
        }
    }
    while (nl > 0) ev[m++] = (sev){0, live[--nl], 0};
    return m;
}

/* How a run departs from its sequence (event numbers; -1 = never). */
typedef struct {
    int bigger_at;         /* this allocation asks for 1 MiB more */
    int swap_at;           /* this free and the next event change places */
    int foreign_at;        /* this free goes through `other` (NULL: the plain API) */
    bp_pool_local *other;
    int stop_at;           /* the run stops before this event, blocks stay live in *left */
} dev_t_;

static const dev_t_ NODEV = {-1, -1, -1, NULL, -1};

typedef struct {
    live_t by_id[MAXID];
    unsigned tag;
    uint64_t quantum;
} shadow;

static void sh_alloc(bp_pool *p, bp_pool_local *l, shadow *sh, int id, uint64_t bytes)
{
    bp_error err = {0};
    void *ptr = NULL;
    CHECK_OK(bp_pool_local_alloc(l, bytes, &ptr, &err), err);
    if (!ptr) return;
    uint64_t size = bp_pool_block_bytes(p, ptr);
    CHECK_MSG(((uintptr_t)ptr & (sh->quantum - 1)) == 0, "%p not aligned to %" PRIu64, ptr, sh->quantum);
    CHECK_MSG(size >= (bytes ? bytes : 1), "block %p: %" PRIu64 " usable bytes for a request of %" PRIu64, ptr, size,
              bytes);
    for (int j = 0; j < MAXID; j++) {
        const live_t *o = &sh->by_id[j];
        if (!o->p) continue;
        uintptr_t a = (uintptr_t)ptr, b = (uintptr_t)o->p;
        CHECK_MSG(a + size <= b || b + o->size <= a, "blocks overlap: %p+%" PRIu64 " and %p+%" PRIu64, ptr, size,
                  (void *)o->p, o->size);
    }
    sh->by_id[id] = (live_t){ptr, bytes ? bytes : 1, size, ++sh->tag};
    fill(ptr, sh->by_id[id].req, sh->tag);
}

static void sh_free(bp_pool *p, bp_pool_local *l, shadow *sh, int id, int plain)
{
    bp_error err = {0};
    live_t *o = &sh->by_id[id];
    CHECK_MSG(intact(o->p, o->req, o->tag), "block %p (%" PRIu64 " bytes) was overwritten", (void *)o->p, o->req);
    CHECK_OK(plain ? bp_pool_dealloc(p, o->p, &err) : bp_pool_local_dealloc(l, o->p, &err), err);
    o->p = NULL;
}

/* Runs ev (m events) through handle l with the departures d. */
static void run(bp_pool *p, bp_pool_local *l, shadow *sh, const sev *ev, int m, dev_t_ d)
{
    for (int k = 0; k < m; k++) {
        if (k == d.stop_at) return;
        sev e = ev[k];
        if (k == d.swap_at && k + 1 < m) {
            sev nx = ev[k + 1];
            if (nx.alloc) sh_alloc(p, l, sh, nx.id, nx.bytes);
            else sh_free(p, l, sh, nx.id, 0);
            k++;
        }
        if (e.alloc) sh_alloc(p, l, sh, e.id, e.bytes + (k == d.bigger_at ? MiB : 0));
        else if (k == d.foreign_at) sh_free(p, d.other, sh, e.id, d.other == NULL);
        else sh_free(p, l, sh, e.id, 0);
    }
}

static bp_pool_stats stats(bp_pool *p)
{
    bp_pool_stats s;
    bp_pool_get_stats(p, &s);
    return s;
}

/* ev run twice through l: the handle has planned it. */
static void learn_twice(bp_pool *p, bp_pool_local *l, shadow *sh, const sev *ev, int m)
{
    run(p, l, sh, ev, m, NODEV);
    run(p, l, sh, ev, m, NODEV);
    REQUIRE(stats(p).learned_plans == 1);
}

static bp_pool *learn_pool(uint64_t alignment, int learn)
{
    bp_error err = {0};
    bp_pool_options o;
    bp_pool_options_init(&o);
    o.alignment = alignment;
    o.learn = learn;
    bp_pool *p = NULL;
    CHECK_OK(bp_pool_new(&o, &p, &err), err);
    REQUIRE(p);
    return p;
}

static bp_pool_local *handle(bp_pool *p)
{
    bp_error err = {0};
    bp_pool_local *l = NULL;
    CHECK_OK(bp_pool_local_new(p, 0, &l, &err), err);
    REQUIRE(l);
    return l;
}

static int n_allocs(const sev *ev, int m)
{
    int n = 0;
    for (int k = 0; k < m; k++) n += ev[k].alloc;
    return n;
}

/* a free event's number past `after` */
static int free_event(const sev *ev, int m, int after)
{
    for (int k = after; k < m; k++)
        if (!ev[k].alloc) return k;
    return -1;
}

static int alloc_event(const sev *ev, int m, int after)
{
    for (int k = after; k < m; k++)
        if (ev[k].alloc) return k;
    return -1;
}

/* the largest sum of live rounded sizes over the sequence */
static uint64_t max_live(const sev *ev, int m, uint64_t q)
{
    uint64_t sz[MAXID] = {0}, live = 0, peak = 0;
    for (int k = 0; k < m; k++) {
        if (ev[k].alloc) {
            uint64_t b = ev[k].bytes ? ev[k].bytes : 1;
            sz[ev[k].id] = (b + q - 1) / q * q;
            live += sz[ev[k].id];
            if (live > peak) peak = live;
        } else
            live -= sz[ev[k].id];
    }
    return peak;
}

/* What is in use can never be more than what is reserved, now or at the peak. */
static void check_in_use_within_reserved(const bp_pool_stats *s, const char *when)
{
    CHECK_MSG(s->in_use_bytes <= s->reserved_bytes && s->peak_in_use_bytes <= s->peak_reserved_bytes,
              "%s: in use %" PRIu64 " (peak %" PRIu64 ") above reserved %" PRIu64 " (peak %" PRIu64 ")", when,
              s->in_use_bytes, s->peak_in_use_bytes, s->reserved_bytes, s->peak_reserved_bytes);
}

static void test_repeat(uint64_t alignment, unsigned long long seed)
{
    bp_error err = {0};
    static sev ev[4 * MAXID];
    int m = make_seq(ev, 300, seed), n = n_allocs(ev, m);
    bp_pool *p = learn_pool(alignment, 1);
    bp_pool_local *l = handle(p);
    shadow sh = {.quantum = alignment > 256 ? alignment : 256};
    run(p, l, &sh, ev, m, NODEV);
    bp_pool_stats s1 = stats(p);
    CHECK(s1.learned_plans == 0 && s1.learned_allocs == 0);
    check_in_use_within_reserved(&s1, "learning, one run");
    run(p, l, &sh, ev, m, NODEV);
    bp_pool_stats s2 = stats(p);
    check_in_use_within_reserved(&s2, "the plan made");
    CHECK_MSG(s2.learned_plans == 1, "two runs of the same sequence: %" PRIu64 " plans", s2.learned_plans);
    /* the plan's block: no smaller than what the sequence has live at once,
     * no larger than every block side by side */
    uint64_t q = sh.quantum, sum = 0;
    for (int k = 0; k < m; k++)
        if (ev[k].alloc) sum += ((ev[k].bytes ? ev[k].bytes : 1) + q - 1) / q * q;
    CHECK_MSG(s2.learned_bytes >= max_live(ev, m, q) && s2.learned_bytes <= sum + q,
              "plan block %" PRIu64 " bytes: live peak %" PRIu64 ", all blocks %" PRIu64, s2.learned_bytes,
              max_live(ev, m, q), sum);
    CHECK_OK(bp__pool_check(p, 0, &err), err);
    for (int r = 0; r < 4; r++) run(p, l, &sh, ev, m, NODEV);
    bp_pool_stats s3 = stats(p);
    CHECK_MSG(s3.learned_allocs == 4 * (uint64_t)n, "four planned runs of %d allocations: %" PRIu64 " served", n,
              s3.learned_allocs);
    CHECK_MSG(s3.os_calls == s2.os_calls, "OS calls after the plan: %" PRIu64 " -> %" PRIu64, s2.os_calls,
              s3.os_calls);
    CHECK(s3.reserved_bytes == s2.reserved_bytes && s3.in_use_bytes == s2.in_use_bytes);
    check_in_use_within_reserved(&s3, "served from the plan");
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_local_free(l);
    bp_pool_stats s4 = stats(p);
    CHECK(s4.learned_plans == 0 && s4.in_use_bytes == 0 && s4.n_live_blocks == 0);
    CHECK(s4.learned_allocs == s3.learned_allocs);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_free(p);
}

/* Frees a handle has not yet passed on to the pool's counter (under 4 MiB
 * here) are counted before a block that goes to the counter at once (a
 * recorded allocation, the plan's block): the in-use peak stays within the
 * reserved peak in every run. */
static void test_in_use_peak(void)
{
    sev ev[8];
    int m = 0;
    for (int i = 0; i < 4; i++) ev[m++] = (sev){1, i, MiB - 4 * KiB};
    for (int i = 0; i < 4; i++) ev[m++] = (sev){0, i, 0};
    bp_pool *p = learn_pool(256, 1);
    bp_pool_local *l = handle(p);
    shadow sh = {.quantum = 256};
    for (int r = 0; r < 5; r++) {
        run(p, l, &sh, ev, m, NODEV);
        bp_pool_stats s = stats(p);
        char when[32];
        snprintf(when, sizeof when, "run %d", r + 1);
        check_in_use_within_reserved(&s, when);
    }
    CHECK(stats(p).learned_plans == 1);
    bp_pool_local_free(l);
    bp_pool_free(p);
}

static void test_deviate(void)
{
    bp_error err = {0};
    static sev ev[4 * MAXID];
    int m = make_seq(ev, 200, 11), n = n_allocs(ev, m);
    bp_pool *p = learn_pool(256, 1);
    bp_pool_local *l = handle(p);
    shadow sh = {.quantum = 256};
    learn_twice(p, l, &sh, ev, m);
    uint64_t served = stats(p).learned_allocs;
    /* a larger request halfway: the rest comes from the pool; the planned
     * blocks still live stay where they are */
    dev_t_ d = NODEV;
    d.bigger_at = alloc_event(ev, m, m / 2);
    run(p, l, &sh, ev, m, d);
    bp_pool_stats s = stats(p);
    CHECK(s.learned_plans == 1 && s.learned_allocs > served && s.learned_allocs < served + (uint64_t)n);
    served = s.learned_allocs;
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    /* the next run is the sequence again: all of it from the plan */
    run(p, l, &sh, ev, m, NODEV);
    CHECK_MSG(stats(p).learned_allocs == served + (uint64_t)n, "back on the plan: %" PRIu64 " of %d",
              stats(p).learned_allocs - served, n);
    served = stats(p).learned_allocs;
    /* two runs in a row off the plan (another free order, then a larger
     * first request): the plan is dropped */
    d = NODEV;
    d.swap_at = free_event(ev, m, m / 3);
    run(p, l, &sh, ev, m, d);
    CHECK(stats(p).learned_plans == 1);
    d = NODEV;
    d.bigger_at = 0;
    run(p, l, &sh, ev, m, d);
    bp_pool_stats s2 = stats(p);
    CHECK_MSG(s2.learned_plans == 0, "two runs off the plan: %" PRIu64 " plans left", s2.learned_plans);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    /* and learned again from two more runs of the sequence */
    served = s2.learned_allocs;
    run(p, l, &sh, ev, m, NODEV);
    run(p, l, &sh, ev, m, NODEV);
    CHECK(stats(p).learned_plans == 1);
    run(p, l, &sh, ev, m, NODEV);
    CHECK(stats(p).learned_allocs == served + (uint64_t)n);
    bp_pool_local_free(l);
    CHECK(stats(p).in_use_bytes == 0);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_free(p);
}

static void test_foreign(void)
{
    bp_error err = {0};
    static sev ev[4 * MAXID];
    int m = make_seq(ev, 200, 12), n = n_allocs(ev, m);
    bp_pool *p = learn_pool(256, 1);
    bp_pool_local *l = handle(p), *l2 = handle(p);
    shadow sh = {.quantum = 256};
    learn_twice(p, l, &sh, ev, m);
    /* stop halfway, before a free: planned blocks are live, and the plan's
     * next event is that block's free */
    dev_t_ d = NODEV;
    int stop = free_event(ev, m, m / 2);
    REQUIRE(stop > 0);
    d.stop_at = stop;
    run(p, l, &sh, ev, m, d);
    int id = ev[stop].id;
    REQUIRE(sh.by_id[id].p);
    live_t b = sh.by_id[id];
    /* seen from elsewhere: its size */
    CHECK(bp_pool_block_bytes(p, b.p) == b.size);
    /* freed through another handle, then again through the owner (the
     * free its plan expects next) and the plain API: double frees */
    CHECK(intact(b.p, b.req, b.tag));
    CHECK_OK(bp_pool_local_dealloc(l2, b.p, &err), err);
    sh.by_id[id].p = NULL;
    CHECK(bp_pool_block_bytes(p, b.p) == 0);
    CHECK(bp_pool_local_dealloc(l, b.p, &err) == BP_ERR_USAGE && strstr(err.msg, "double free"));
    CHECK(bp_pool_dealloc(p, b.p, &err) == BP_ERR_USAGE);
    /* an interior pointer of a live planned block is no block */
    for (int j = 0; j < MAXID; j++) {
        live_t *o = &sh.by_id[j];
        if (!o->p || o->size <= 256) continue;
        CHECK(bp_pool_block_bytes(p, o->p + 256) == 0);
        CHECK(bp_pool_dealloc(p, o->p + 256, &err) == BP_ERR_USAGE && strstr(err.msg, "not a live block"));
        CHECK(bp_pool_local_dealloc(l, o->p + 256, &err) == BP_ERR_USAGE);
        break;
    }
    /* the rest of the run, one more free through the plain API; every
     * block is checked by the shadow */
    for (int k = stop + 1; k < m; k++) {
        if (ev[k].alloc) sh_alloc(p, l, &sh, ev[k].id, ev[k].bytes);
        else if (sh.by_id[ev[k].id].p) sh_free(p, l, &sh, ev[k].id, k == free_event(ev, m, m / 2 + 10));
    }
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    CHECK(stats(p).learned_plans == 1);
    /* the sequence again: on the plan from its start */
    uint64_t served = stats(p).learned_allocs;
    run(p, l, &sh, ev, m, NODEV);
    CHECK_MSG(stats(p).learned_allocs == served + (uint64_t)n, "after foreign frees: %" PRIu64 " of %d planned",
              stats(p).learned_allocs - served, n);
    /* a planned run with a free through another handle at its middle */
    d = NODEV;
    d.foreign_at = free_event(ev, m, m / 2);
    d.other = l2;
    run(p, l, &sh, ev, m, d);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_local_free(l2);
    bp_pool_local_free(l);
    bp_pool_stats s = stats(p);
    CHECK(s.in_use_bytes == 0 && s.learned_plans == 0);
    bp_pool_free(p);
}

/* The handle goes while planned blocks live: the plan stays until the last
 * one is freed (plain API), or dies with the pool. */
static void test_orphan(void)
{
    bp_error err = {0};
    static sev ev[4 * MAXID];
    int m = make_seq(ev, 150, 13);
    for (int v = 0; v < 2; v++) {
        bp_pool *p = learn_pool(256, 1);
        bp_pool_local *l = handle(p);
        shadow sh = {.quantum = 256};
        learn_twice(p, l, &sh, ev, m);
        dev_t_ d = NODEV;
        d.stop_at = m / 2;
        run(p, l, &sh, ev, m, d);
        bp_pool_local_free(l);
        CHECK(stats(p).learned_plans == 1);
        if (v == 1) { bp_pool_free(p); continue; } /* LeakSanitizer: the plan goes with the pool */
        int left = 0;
        for (int j = 0; j < MAXID; j++)
            if (sh.by_id[j].p) {
                CHECK(stats(p).learned_plans == 1);
                sh_free(p, NULL, &sh, j, 1);
                left++;
            }
        CHECK(left > 0);
        bp_pool_stats s = stats(p);
        CHECK_MSG(s.learned_plans == 0 && s.in_use_bytes == 0, "%" PRIu64 " plans, %" PRIu64 " bytes in use",
                  s.learned_plans, s.in_use_bytes);
        CHECK_OK(bp__pool_check(p, 1, &err), err);
        bp_pool_free(p);
    }
}

/* Sequences that never repeat: no plan, learning stops; learning off. */
static void test_no_repeat(void)
{
    bp_error err = {0};
    static sev ev[4 * MAXID];
    bp_pool *p = learn_pool(256, 1);
    bp_pool_local *l = handle(p);
    shadow sh = {.quantum = 256};
    for (int r = 0; r < 12; r++) {
        int m = make_seq(ev, 80, 100 + (unsigned)r);
        run(p, l, &sh, ev, m, NODEV);
    }
    CHECK(stats(p).learned_plans == 0);
    /* learning has stopped: a sequence repeated now is not planned */
    int m = make_seq(ev, 80, 7);
    for (int r = 0; r < 3; r++) run(p, l, &sh, ev, m, NODEV);
    bp_pool_stats s = stats(p);
    CHECK_MSG(s.learned_plans == 0 && s.learned_allocs == 0, "%" PRIu64 " plans after learning stopped",
              s.learned_plans);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_local_free(l);
    bp_pool_free(p);
    /* options.learn = 0: never */
    p = learn_pool(256, 0);
    l = handle(p);
    for (int r = 0; r < 4; r++) run(p, l, &sh, ev, m, NODEV);
    CHECK(stats(p).learned_plans == 0 && stats(p).learned_allocs == 0);
    bp_pool_local_free(l);
    bp_pool_free(p);
}

/* A handle whose blocks are sometimes freed elsewhere never sees its log
 * come back to nothing live: it gives pages back for a bounded time only
 * (no OS call after that), and works on. */
static void test_freed_elsewhere(void)
{
    bp_error err = {0};
    bp_pool *p = learn_pool(256, 1);
    bp_pool_local *l = handle(p);
    uint64_t calls_at = 0;
    for (int i = 0; i < 150000; i++) {
        void *a = NULL, *b = NULL;
        CHECK_OK(bp_pool_local_alloc(l, 64 * KiB + (uint64_t)(i % 7) * 4096, &a, &err), err);
        CHECK_OK(bp_pool_local_alloc(l, 40 * KiB, &b, &err), err);
        CHECK_OK(bp_pool_local_dealloc(l, a, &err), err);
        CHECK_OK(bp_pool_dealloc(p, b, &err), err);
        if (i == 100000) calls_at = stats(p).os_calls;
    }
    bp_pool_stats s = stats(p);
    CHECK_MSG(s.os_calls == calls_at, "OS calls went on: %" PRIu64 " after 100k rounds, %" PRIu64 " after 150k",
              calls_at, s.os_calls);
    CHECK(s.learned_plans == 0 && s.in_use_bytes == 0);
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_local_free(l);
    bp_pool_free(p);
}

int main(void)
{
    test_repeat(256, 1);
    test_repeat(4096, 2);
    test_repeat(256, 3);
    test_in_use_peak();
    test_deviate();
    test_foreign();
    test_orphan();
    test_no_repeat();
    test_freed_elsewhere();
    return check_status();
}
