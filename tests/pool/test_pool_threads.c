/* Two-thread stress of the pool (meant for TSan too: build with
 * -DBP_SANITIZE=thread).  It runs twice: with the plain API, and with one
 * bp_pool_local handle per thread (most calls through it, some plain), where
 * a block sent to the other thread is a remote free through that thread's
 * handle; and again with each thread freeing and remaking its handle every
 * 5000 operations while its blocks are still live (its arena's chunks move
 * to the shared arena under the other thread).  Each thread allocates and frees random sizes across
 * every class, fills each block with its own pattern and checks it when it is
 * freed; a third of the blocks are handed to the other thread through a
 * mutex-protected mailbox and freed there (cross-thread frees).  A small
 * compaction interval and a byte limit force merging, borrowing and growth
 * while the other thread is on the common path (sizes up to 8 MiB grow the
 * large region, one per arena).  At the end the pool's
 * invariants and counters must hold exactly.  Last, learned sequences
 * (options.learn): each thread repeats its own sequence through its handle
 * until the handle plans it, and now and then hands one of its planned
 * blocks to the other thread, which frees it (through its own handle or the
 * plain API) while the owner goes on. */
#include "bufplan.h"
#include "check.h"
#include "pool/pool_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>

#define NTHREADS 2
#define MAILBOX 64

typedef struct { unsigned char *p; uint64_t n; unsigned tag; } blk;

typedef struct {
    pthread_mutex_t mu;
    blk box[NTHREADS][MAILBOX];   /* box[t]: blocks for thread t to free */
    int nbox[NTHREADS];
} mail_t;

typedef struct {
    bp_pool *pool;
    mail_t *mail;
    int id, ops;
    atomic_int *fails;
    long long exhausted;
    int use_local;
    bp_pool_local *local;
    unsigned long long rs;
} arg_t;

static unsigned char pat(unsigned tag, uint64_t i) { return (unsigned char)(tag * 13u + i * 5u); }

static void fill(blk *b)
{
    uint64_t k = b->n < 64 ? b->n : 64;
    for (uint64_t i = 0; i < k; i++) b->p[i] = pat(b->tag, i);
    for (uint64_t i = b->n - k; i < b->n; i++) b->p[i] = pat(b->tag, i);
}

static int ok(const blk *b)
{
    uint64_t k = b->n < 64 ? b->n : 64;
    for (uint64_t i = 0; i < k; i++)
        if (b->p[i] != pat(b->tag, i)) return 0;
    for (uint64_t i = b->n - k; i < b->n; i++)
        if (b->p[i] != pat(b->tag, i)) return 0;
    return 1;
}

static bp_pool *stress_pool(const bp_pool_options *o)
{
    bp_error err = {0};
    bp_pool *p = NULL;
    CHECK_OK(bp_pool_new(o, &p, &err), err);
    REQUIRE(p);
    return p;
}

static void mail_init(mail_t *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
}

/* Takes the blocks mailed to thread id into in[]; returns how many. */
static int mail_take(mail_t *m, int id, blk *in)
{
    pthread_mutex_lock(&m->mu);
    int n = m->nbox[id];
    for (int i = 0; i < n; i++) in[i] = m->box[id][i];
    m->nbox[id] = 0;
    pthread_mutex_unlock(&m->mu);
    return n;
}

static void release(arg_t *a, blk *b)
{
    bp_error err = {0};
    if (!ok(b)) atomic_fetch_add(a->fails, 1);
    bp_status st = a->local && test_rand(&a->rs) % 4 ? bp_pool_local_dealloc(a->local, b->p, &err)
                                                     : bp_pool_dealloc(a->pool, b->p, &err);
    if (st != BP_OK) {
        fprintf(stderr, "thread %d: %s\n", a->id, err.msg);
        atomic_fetch_add(a->fails, 1);
    }
}

static void *worker(void *vp)
{
    arg_t *a = vp;
    unsigned long long rs = 1000 + (unsigned long long)a->id;
    a->rs = 77 + (unsigned long long)a->id;
    if (a->use_local && bp_pool_local_new(a->pool, 0, &a->local, NULL) != BP_OK) atomic_fetch_add(a->fails, 1);
    enum { LIVE = 48 };
    blk live[LIVE];
    int n = 0;
    unsigned tag = (unsigned)a->id << 24;
    bp_error err = {0};
    for (int op = 0; op < a->ops; op++) {
        /* mode 2: the handle is freed and made again now and then, while its
         * blocks live on (here and in the other thread's mailbox): its
         * arena's chunks move to the shared arena under the other thread */
        if (a->use_local == 2 && op % 5000 == 4999) {
            bp_pool_local_free(a->local);
            a->local = NULL;
            if (bp_pool_local_new(a->pool, 0, &a->local, NULL) != BP_OK) atomic_fetch_add(a->fails, 1);
        }
        /* free what the other thread sent */
        blk in[MAILBOX];
        int nin = mail_take(a->mail, a->id, in);
        for (int i = 0; i < nin; i++) release(a, &in[i]);

        if (n < LIVE && (n == 0 || test_rand(&rs) % 2)) {
            int k = (int)(test_rand(&rs) % 13); /* up to 8 MiB: the large region too */
            uint64_t lo = bp_pool_class_min(k), size = 1 + test_rand(&rs) % (lo * 2);
            void *p = NULL;
            bp_status st = a->local && test_rand(&rs) % 4 ? bp_pool_local_alloc(a->local, size, &p, &err)
                                                          : bp_pool_alloc(a->pool, size, &p, &err);
            if (st == BP_ERR_EXHAUSTED) { a->exhausted++; continue; }
            if (st != BP_OK || !p || ((uintptr_t)p & 255)) { atomic_fetch_add(a->fails, 1); continue; }
            live[n] = (blk){p, size, ++tag};
            fill(&live[n]);
            n++;
        } else if (n > 0) {
            int j = (int)(test_rand(&rs) % (unsigned)n);
            blk b = live[j];
            live[j] = live[--n];
            int other = (a->id + 1) % NTHREADS;
            int sent = 0;
            if (test_rand(&rs) % 3 == 0) {
                pthread_mutex_lock(&a->mail->mu);
                if (a->mail->nbox[other] < MAILBOX) {
                    a->mail->box[other][a->mail->nbox[other]++] = b;
                    sent = 1;
                }
                pthread_mutex_unlock(&a->mail->mu);
            }
            if (!sent) release(a, &b);
        }
    }
    for (int j = 0; j < n; j++) release(a, &live[j]);
    return NULL;
}

/* after both threads stopped: leftovers in the mailboxes, then the handles */
static void finish(arg_t *args, mail_t *mail)
{
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < mail->nbox[t]; i++) release(&args[t], &mail->box[t][i]);
    for (int t = 0; t < NTHREADS; t++) {
        bp_pool_local_free(args[t].local);
        args[t].local = NULL;
    }
}

static void stress(int use_local)
{
    bp_error err = {0};
    bp_pool_options o;
    bp_pool_options_init(&o);
    o.compact_interval = 97;
    o.max_bytes = 96u << 20;
    bp_pool *p = stress_pool(&o);
    mail_t mail;
    mail_init(&mail);
    atomic_int fails;
    atomic_init(&fails, 0);
    pthread_t th[NTHREADS];
    arg_t args[NTHREADS];
    int ops = getenv("BP_POOL_STRESS_OPS") ? atoi(getenv("BP_POOL_STRESS_OPS")) : 60000;
    for (int t = 0; t < NTHREADS; t++) {
        args[t] = (arg_t){p, &mail, t, ops, &fails, 0, use_local, NULL, 0};
        REQUIRE(pthread_create(&th[t], NULL, worker, &args[t]) == 0);
    }
    /* the stats reader runs concurrently too */
    for (int i = 0; i < 20; i++) {
        bp_pool_stats s;
        bp_pool_get_stats(p, &s);
        CHECK(s.reserved_bytes <= o.max_bytes);
        CHECK_OK(bp__pool_check(p, 0, &err), err);
    }
    for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
    CHECK_OK(bp__pool_check(p, 1, &err), err); /* quiescent: the handles' caches are walked too */
    finish(args, &mail);
    CHECK_MSG(atomic_load(&fails) == 0, "%d corrupted blocks or failed calls", atomic_load(&fails));
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_stats s;
    bp_pool_get_stats(p, &s);
    CHECK(s.in_use_bytes == 0 && s.n_live_blocks == 0 && s.n_allocs == s.n_deallocs);
    CHECK(s.n_allocs > (uint64_t)ops / 2);
    CHECK(s.reserved_bytes <= o.max_bytes && s.compactions > 0 && s.borrows > 0);
    if (use_local) CHECK(s.cache_hits > 0 && s.n_locals == 0 && s.cached_bytes == 0);
    printf("threads (%s): %" PRIu64 " allocs, %" PRIu64 " borrows, %" PRIu64 " merge passes, %lld exhausted, "
           "reserved %" PRIu64 " (peak in use %" PRIu64 ")\n", use_local == 2 ? "local handles, remade" : use_local ? "local handles" : "plain API", s.n_allocs, s.borrows, s.compactions,
           args[0].exhausted + args[1].exhausted, s.reserved_bytes, s.peak_in_use_bytes);
    pthread_mutex_destroy(&mail.mu);
    bp_pool_free(p);
}

/* ---------------------------------------------------- learned sequences */

typedef struct {
    bp_pool *pool;
    mail_t *mail;
    int id;
    atomic_int *fails;
    uint64_t served;              /* learned allocations seen by this thread's handle */
} larg_t;

static void learn_release(bp_pool *p, bp_pool_local *l, blk *b, int plain, atomic_int *fails)
{
    bp_error err = {0};
    if (!ok(b)) atomic_fetch_add(fails, 1);
    bp_status st = plain ? bp_pool_dealloc(p, b->p, &err) : bp_pool_local_dealloc(l, b->p, &err);
    if (st != BP_OK) {
        fprintf(stderr, "learn: %s\n", err.msg);
        atomic_fetch_add(fails, 1);
    }
}

static void *learn_worker(void *vp)
{
    larg_t *a = vp;
    bp_pool_local *l = NULL;
    if (bp_pool_local_new(a->pool, 0, &l, NULL) != BP_OK) { atomic_fetch_add(a->fails, 1); return NULL; }
    /* the sequence: 120 allocations, each freed a little later */
    enum { N = 120, W = 6 };
    uint64_t size[N];
    unsigned long long rs = 500 + (unsigned long long)a->id;
    for (int i = 0; i < N; i++) size[i] = 1 + test_rand(&rs) % (i % 9 == 0 ? 2u << 20 : 64u << 10);
    blk live[N];
    unsigned tag = (unsigned)a->id << 24;
    int other = (a->id + 1) % NTHREADS;
    for (int rep = 0; rep < 60; rep++) {
        for (int i = 0; i < N + W; i++) {
            blk in[MAILBOX];
            int nin = mail_take(a->mail, a->id, in);
            for (int k = 0; k < nin; k++) learn_release(a->pool, l, &in[k], k % 2, a->fails);
            if (i >= W) {
                blk b = live[i - W];
                int sent = 0;
                if (rep % 7 == 3 && i == N / 2) {
                    pthread_mutex_lock(&a->mail->mu);
                    if (a->mail->nbox[other] < MAILBOX) {
                        a->mail->box[other][a->mail->nbox[other]++] = b;
                        sent = 1;
                    }
                    pthread_mutex_unlock(&a->mail->mu);
                }
                if (!sent) learn_release(a->pool, l, &b, 0, a->fails);
            }
            if (i < N) {
                void *ptr = NULL;
                bp_error err = {0};
                if (bp_pool_local_alloc(l, size[i], &ptr, &err) != BP_OK || !ptr || ((uintptr_t)ptr & 255)) {
                    atomic_fetch_add(a->fails, 1);
                    live[i] = (blk){NULL, 0, 0};
                    continue;
                }
                live[i] = (blk){ptr, size[i], ++tag};
                fill(&live[i]);
            }
        }
    }
    bp_pool_stats s;
    bp_pool_get_stats(a->pool, &s);
    a->served = s.learned_allocs;
    bp_pool_local_free(l);
    return NULL;
}

static void stress_learn(void)
{
    bp_error err = {0};
    bp_pool_options o;
    bp_pool_options_init(&o);
    o.learn = 1;
    bp_pool *p = stress_pool(&o);
    mail_t mail;
    mail_init(&mail);
    atomic_int fails;
    atomic_init(&fails, 0);
    pthread_t th[NTHREADS];
    larg_t args[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        args[t] = (larg_t){p, &mail, t, &fails, 0};
        REQUIRE(pthread_create(&th[t], NULL, learn_worker, &args[t]) == 0);
    }
    for (int i = 0; i < 10; i++) {
        bp_pool_stats s;
        bp_pool_get_stats(p, &s);
        CHECK_OK(bp__pool_check(p, 0, &err), err);
    }
    for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
    /* blocks still in a mailbox: planned blocks of a freed handle (their
     * plan stays until they are freed) */
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < mail.nbox[t]; i++) learn_release(p, NULL, &mail.box[t][i], 1, &fails);
    CHECK_MSG(atomic_load(&fails) == 0, "%d corrupted blocks or failed calls", atomic_load(&fails));
    CHECK_OK(bp__pool_check(p, 1, &err), err);
    bp_pool_stats s;
    bp_pool_get_stats(p, &s);
    CHECK(s.in_use_bytes == 0 && s.learned_plans == 0 && s.n_locals == 0);
    CHECK_MSG(args[0].served > 0 && args[1].served > 0, "learned allocations seen: %" PRIu64 ", %" PRIu64,
              args[0].served, args[1].served);
    printf("threads (learned sequences): %" PRIu64 " allocations served from plans\n", s.learned_allocs);
    pthread_mutex_destroy(&mail.mu);
    bp_pool_free(p);
}

int main(void)
{
    stress(0);
    stress(1);
    stress(2);
    stress_learn();
    return check_status();
}
