/* Helpers shared by the pool's test programs (test_pool.c, test_pool_local.c):
 * pools and handles made the tests' way, alloc/free loops, drained-pool checks
 * and a counting allocator.  Header-only, static inline. */
#ifndef BP_POOL_TESTUTIL_H
#define BP_POOL_TESTUTIL_H

#include "bufplan.h"
#include "check.h"
#include "pool/pool_internal.h"

#include <stdlib.h>

#define MiB (UINT64_C(1) << 20)
#define KiB (UINT64_C(1) << 10)

static inline int env_seed_bug(void)
{
    const char *e = getenv("BP_POOL_SEED_BUG");
    return e && *e && *e != '0';
}

/* ------------------------------------------------------ setup helpers */

/* Setups the tests share.  Failures of the calls under test are checked at
 * the call sites (CHECK_OK names the line); a pool or handle that cannot be
 * made stops the run, as there is nothing left to test. */

static inline bp_pool_options tp_options(void)
{
    bp_pool_options o;
    bp_pool_options_init(&o);
    return o;
}

/* a pool with options o (NULL: the defaults) */
static inline bp_pool *tp_pool(const bp_pool_options *o)
{
    bp_error err = {0};
    bp_pool *p = NULL;
    CHECK_OK(bp_pool_new(o, &p, &err), err);
    REQUIRE(p);
    return p;
}

/* a handle of p caching at most cache_bytes (0: the default bound) */
static inline bp_pool_local *tp_local(bp_pool *p, uint64_t cache_bytes)
{
    bp_error err = {0};
    bp_pool_local *l = NULL;
    CHECK_OK(bp_pool_local_new(p, cache_bytes, &l, &err), err);
    REQUIRE(l);
    return l;
}

/* through handle l when there is one, else through the plain API of p */
static inline bp_status tp_alloc(bp_pool *p, bp_pool_local *l, uint64_t bytes, void **ptr, bp_error *err)
{
    return l ? bp_pool_local_alloc(l, bytes, ptr, err) : bp_pool_alloc(p, bytes, ptr, err);
}

static inline bp_status tp_dealloc(bp_pool *p, bp_pool_local *l, void *ptr, bp_error *err)
{
    return l ? bp_pool_local_dealloc(l, ptr, err) : bp_pool_dealloc(p, ptr, err);
}

/* The loops below make every call even after a failure and return the
 * first failure, its message in *err, for the caller's CHECK_OK. */
static inline void tp_keep_first(bp_status *first, bp_status st, const bp_error *e, bp_error *err)
{
    if (st != BP_OK && *first == BP_OK) { *first = st; *err = *e; }
}

/* v[i] = a block of bytes + i * step, for i < n */
static inline bp_status tp_alloc_all(bp_pool *p, bp_pool_local *l, void **v, int n, uint64_t bytes, uint64_t step,
                              bp_error *err)
{
    bp_status first = BP_OK;
    for (int i = 0; i < n; i++) {
        bp_error e = {0};
        tp_keep_first(&first, tp_alloc(p, l, bytes + (uint64_t)i * step, &v[i], &e), &e, err);
    }
    return first;
}

/* frees v[0..n) in order, skipping NULL (a no-op for both APIs) */
static inline bp_status tp_dealloc_all(bp_pool *p, bp_pool_local *l, void *const *v, int n, bp_error *err)
{
    bp_status first = BP_OK;
    for (int i = 0; i < n; i++) {
        bp_error e = {0};
        if (v[i]) tp_keep_first(&first, tp_dealloc(p, l, v[i], &e), &e, err);
    }
    return first;
}

/* One phase of a replay of stages through handle l: a window of live
 * blocks slides through the phase's `count` blocks of bytes + i * 256 (block
 * i in slot i % cap of live, whose previous block is freed first). */
static inline bp_status tp_phase(bp_pool_local *l, void **live, int cap, uint64_t bytes, int count, bp_error *err)
{
    bp_status first = BP_OK;
    for (int i = 0; i < count + 4; i++) {
        bp_error e = {0};
        if (live[i % cap]) tp_keep_first(&first, bp_pool_local_dealloc(l, live[i % cap], &e), &e, err);
        live[i % cap] = NULL;
        if (i < count)
            tp_keep_first(&first, bp_pool_local_alloc(l, bytes + (uint64_t)i * 256, &live[i % cap], &e), &e, err);
    }
    return first;
}

/* blocks of `bytes` into v[0..) through the plain API until a call fails
 * or cap are live: *n of them; returns the last call's status */
static inline bp_status tp_fill(bp_pool *p, uint64_t bytes, void **v, int cap, int *n, bp_error *err)
{
    bp_status st = BP_OK;
    *n = 0;
    while (*n < cap && (st = bp_pool_alloc(p, bytes, &v[*n], err)) == BP_OK) (*n)++;
    return st;
}

static inline bp_pool_stats tp_stats(bp_pool *p)
{
    bp_pool_stats s;
    bp_pool_get_stats(p, &s);
    return s;
}

/* the stats after a merge pass */
static inline bp_pool_stats tp_compacted(bp_pool *p)
{
    bp_pool_compact(p);
    return tp_stats(p);
}

/* nothing allocated, nothing cached */
static inline int tp_drained(const bp_pool_stats *s)
{
    return s->in_use_bytes == 0 && s->cached_bytes == 0 && s->n_live_blocks == 0;
}

/* A host allocator that counts live bytes, to check the pool frees all its
 * metadata and allocates none while an arena tensor is bound. */
typedef struct { long long live, calls; } count_ctx;
static inline void *cnt_alloc(void *c, size_t n) { ((count_ctx *)c)->live += (long long)n; ((count_ctx *)c)->calls++; return malloc(n ? n : 1); }
static inline void *cnt_realloc(void *c, void *p, size_t o, size_t n)
{
    ((count_ctx *)c)->live += (long long)n - (long long)o;
    ((count_ctx *)c)->calls++;
    return realloc(p, n ? n : 1);
}
static inline void cnt_free(void *c, void *p, size_t n) { if (p) ((count_ctx *)c)->live -= (long long)n; free(p); }

#endif /* BP_POOL_TESTUTIL_H */
