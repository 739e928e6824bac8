/*
 * local.c — local handles and the plain API: per-thread caches of size-class
 * bins with batch refill, least recently used bins evicted first and idle
 * caches returned; the plain API keeps a locked one per thread (pthread key).
 */
#define _POSIX_C_SOURCE 200809L
#include "core/internal.h"
#include "pool/pool_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* ------------------------------------------------- local handles: calls */

/* The size of a request of q bytes (quantum-rounded) whose cache class
 * rounded it to sz: for a region request (class REGION_CLASS and up) in a
 * pool past the small-pool floor, q rounded to REGION_GRAIN only.  Such
 * blocks are never cached there (bp__pool_region_nocache), so the class
 * rounding (up to a quarter, 11% on average) bought nothing and only spread
 * the region: the transformer trace's 196.3 MiB block took 224 MiB (peak
 * reserved 236 -> 208.4 MiB), and on the synthetic trace the handles'
 * footprint fell from 147.0 to 133.6 MiB.  64 KiB rather than the quantum:
 * with exact sizes the synthetic trace grew once after warm-up through a
 * handle (slivers of a few KiB between blocks). */
static inline uint64_t region_size(const bp_pool_local *l, uint64_t q, uint64_t sz)
{
    const bp_pool *p = l->pool;
    if (bp__pool_class(q) < REGION_CLASS || !p->vm || p->region_off || bp__pool_loc_cap(l) <= LOC_MIN_CAP) return sz;
    q = bp__align_up(q, REGION_GRAIN);
    return q < sz ? q : sz;
}

void bp_pool_local_flush(bp_pool_local *l)
{
    if (l) bp__pool_local_flush(l);
}

/* The last block handed out through cache l was freed (its owner's
 * thread).  In a pool past the small-pool floor the cache goes back to the
 * lists, where it merges, if it hit LOC_IDLE_HITS times since the last such
 * flush.  So a trace that is replayed starts every replay from the same
 * merged lists: the blocks cached at the end of the last replay (among them
 * small pieces borrowed from the large region) no longer sit where that
 * replay cut them, and the next replay makes the same choices as the one
 * before, with no growth (without this, the synthetic trace's region grew in
 * a later replay: a 15.6 MiB request with 43.6 MiB free in 6 pieces, the
 * largest 14.3 MiB, after cached pieces had moved the large blocks). */
__attribute__((noinline)) void bp__pool_local_idle(bp_pool_local *l)
{
    if (l->learn == 2) l->learn_hooks->boundary(l);
    uint64_t hits = atomic_load_explicit(&l->hits, memory_order_relaxed);
    if (hits - l->idle_hits < LOC_IDLE_HITS || bp__pool_loc_cap(l) <= LOC_MIN_CAP) return;
    l->idle_hits = hits;
    /* a locked cache's bytes are read under its lock (another thread may
     * be returning it); bp__pool_local_flush returns at once when it is
     * empty */
    if (l->locked) bp__pool_spin_lock(&l->lock);
    bp__pool_local_flush(l);
    if (l->locked) bp__pool_spin_unlock(&l->lock);
}

/* An arena for a new handle: one left by a freed handle, else a new one
 * (global lock held).  NULL when host memory is out. */
static parena *arena_get(bp_pool *p)
{
    parena *a = p->unused;
    if (a) {
        p->unused = a->next_unused;
    } else {
        size_t raw_size = sizeof *a + 64;
        void *raw = bp__alloc(&p->alloc, raw_size);
        if (!raw) return NULL;
        a = (parena *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
        memset(a, 0, sizeof *a);
        a->raw = raw;
        bp__pool_arena_init(a, ++p->n_arenas);
        parena **t = &p->arenas;
        while (*t) t = &(*t)->next;
        *t = a;
        p->meta_bytes += raw_size;
    }
    a->live = 1;
    return a;
}

/* A freed handle's arena: its chunks, with their free blocks, move to the
 * shared arena (blocks still in use stay valid and go there when freed);
 * the struct is kept for the next handle, so a free that read the old owner
 * only finds it has changed (global lock held, no class lock). */
static void arena_retire(bp_pool *p, parena *a)
{
    bp__pool_lock_all(p);
    for (size_t j = 0; j < p->n_chunks; j++)
        if (p->chunks[j]->live && bp__pool_chunk_arena(p->chunks[j]) == a)
            bp__pool_chunk_move(p, p->chunks[j], &p->shared);
    bp__pool_unlock_all(p);
    a->region = NULL;
    a->live = 0;
    a->next_unused = p->unused;
    p->unused = a;
}

/* The struct is 64-aligned (its hot lines); an allocator guarantees less. */
static bp_pool_local *local_struct_new(bp_pool *p)
{
    void *raw = bp__calloc(&p->alloc, 1, sizeof(bp_pool_local) + 64);
    if (!raw) return NULL;
    bp_pool_local *l = (bp_pool_local *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    l->raw = raw;
    return l;
}

void bp__pool_local_struct_free(bp_pool *p, bp_pool_local *l)
{
    bp__free(&p->alloc, l->raw, sizeof *l + 64);
}

static bp_pool_local *local_create(bp_pool *p, uint64_t cache_bytes, int locked)
{
    bp_pool_local *l = local_struct_new(p);
    if (!l) return NULL;
    l->pool = p;
    l->quantum = p->quantum;
    l->qshift = p->qshift;
    l->locked = locked;
    l->max_req = LOC_MAX_U << p->qshift;
    l->cap = cache_bytes;
    atomic_init(&l->flush_req, 0);
    atomic_init(&l->lock, 0);
    atomic_init(&l->cached, 0);
    atomic_init(&l->hits, 0);
    atomic_init(&l->puts, 0);
    atomic_init(&l->pending, 0);
    atomic_init(&l->lhits, 0);
    atomic_init(&l->pfree, 0);
    if (p->learn_hooks && !locked) {
        l->learn_hooks = p->learn_hooks;
        l->learn_hooks->start(l);
    }
    pthread_mutex_lock(&p->global);
    l->arena = arena_get(p);
    if (!l->arena) {
        pthread_mutex_unlock(&p->global);
        if (l->learn_hooks) l->learn_hooks->release(l);
        bp__pool_local_struct_free(p, l);
        return NULL;
    }
    l->next = p->locals;
    if (p->locals) p->locals->prev = l;
    p->locals = l;
    p->meta_bytes += sizeof *l;
    pthread_mutex_unlock(&p->global);
    return l;
}

bp_status bp_pool_local_new(bp_pool *p, uint64_t cache_bytes, bp_pool_local **out, bp_error *err)
{
    if (!out) return bp__err(err, BP_ERR_USAGE, "pool: new local handle: NULL output");
    *out = NULL;
    if (!p) return bp__err(err, BP_ERR_USAGE, "pool: new local handle: NULL pool");
    bp_pool_local *l = local_create(p, cache_bytes, 0);
    if (!l) return bp__err(err, BP_ERR_NOMEM, "pool: out of memory for a local handle (%zu bytes)", sizeof *l);
    *out = l;
    return BP_OK;
}

/* Unlinks l, folds its counters into the pool's and retires its arena
 * (global lock held, l's cache empty). */
static void local_unlink(bp_pool *p, bp_pool_local *l)
{
    arena_retire(p, l->arena);
    p->mag_hits += atomic_load_explicit(&l->hits, memory_order_relaxed);
    p->mag_puts += atomic_load_explicit(&l->puts, memory_order_relaxed);
    p->learned_hits += atomic_load_explicit(&l->lhits, memory_order_relaxed);
    if (l->prev) l->prev->next = l->next;
    else p->locals = l->next;
    if (l->next) l->next->prev = l->prev;
    p->meta_bytes -= sizeof *l;
}

void bp_pool_local_free(bp_pool_local *l)
{
    if (!l) return;
    bp_pool *p = l->pool;
    if (l->learn_hooks) l->learn_hooks->release(l);
    bp__pool_local_flush(l);
    bp__pool_local_delta_flush(l);
    pthread_mutex_lock(&p->global);
    local_unlink(p, l);
    pthread_mutex_unlock(&p->global);
    bp__pool_local_struct_free(p, l);
}

/* The descriptor of the block that starts at a, or 0.  The chunk comes from
 * a small 2-way table keyed by the address's 64 KiB region (valid
 * while the pool's chunk index is the snapshot it was filled from), else
 * from a binary search of the index, which fills the entry. */
static __attribute__((noinline)) const lmru *local_region_miss(bp_pool_local *l, uintptr_t a, const pindex *ix)
{
    if (ix != l->ix) {
        l->ix = ix;
        memset(l->mru, 0, sizeof l->mru);
    }
    const struct pindex_e *x = bp__pool_index_find(ix, a);
    if (!x) return NULL;
    /* a region overlaps at most two chunks (chunks are at least as large as
     * a region): a set of two, the older entry makes room */
    lmru *e = &l->mru[((a >> LOC_REGION_SHIFT) & (LOC_MRU / 2 - 1)) * 2];
    e[1] = e[0];
    e->region = a >> LOC_REGION_SHIFT;
    e->lo = x->lo;
    e->len = x->hi - x->lo;
    e->c = x->c;
    return e;
}

__attribute__((noinline)) uint32_t bp__pool_local_lookup(bp_pool_local *l, uintptr_t a)
{
    const pindex *ix = atomic_load_explicit(&l->pool->index, memory_order_acquire);
    uintptr_t r = a >> LOC_REGION_SHIFT;
    const lmru *e = &l->mru[(r & (LOC_MRU / 2 - 1)) * 2];
    if (__builtin_expect(ix != l->ix, 0)) e = local_region_miss(l, a, ix);
    else if (e->region != r || a - e->lo >= e->len) {
        e++;
        if (__builtin_expect(e->region != r || a - e->lo >= e->len, 0)) e = local_region_miss(l, a, ix);
    }
    if (!e) return 0;
    uint64_t off = a - e->lo;
    if (off & (l->quantum - 1)) return 0;
    uint32_t i = atomic_load_explicit(bp__pool_chunk_slot(e->c, off >> l->qshift), memory_order_relaxed);
    return i && BADDR(bp__pool_desc(l->pool, i)) == a ? i : 0;
}

/* List frees through a handle count towards the merge interval n at a time
 * (the shared counter is a contended line when several handles free at
 * once): a batch of 64. */
static void local_count_frees(bp_pool_local *l, uint32_t n)
{
    bp_pool *p = l->pool;
    l->since += n;
    if (l->since < 64) return;
    n = l->since;
    l->since = 0;
    parena *a = l->arena;
    if (p->compact_interval &&
        atomic_fetch_add_explicit(&a->since_compact, n, memory_order_relaxed) + n >= p->compact_interval)
        bp__pool_maybe_compact(p, a);
    else if (!p->compact_interval)
        atomic_fetch_add_explicit(&a->since_compact, n, memory_order_relaxed);
}

/* Eviction: bin c's blocks go back to their homes' lists, where they merge
 * with free neighbours (one lock held across blocks of the same home). */
static void local_evict_bin(bp_pool_local *l, unsigned c)
{
    bp_pool *p = l->pool;
    pcls *K = NULL;
    uint64_t bytes = 0;
    uint32_t n = 0;
    for (pblk *b = l->bin[c]; b; n++) {
        pblk *next = b->lnext;
        /* the lock held covers b when b's chunk is in K's arena now (a
         * chunk leaves an arena only under all its class locks) */
        if (!K || &bp__pool_chunk_arena(b->chunk)->cls[b->home] != K) {
            if (K) bp__pool_spin_unlock(&K->lock);
            K = bp__pool_lock_home(b);
        }
        bytes += b->size; /* before: merging changes it */
        bp__pool_push(p, K, bp__pool_coalesce(p, K, b->id));
        b = next;
    }
    if (K) bp__pool_spin_unlock(&K->lock);
    l->bin[c] = NULL;
    l->full[c / 64] &= ~(UINT64_C(1) << (c % 64));
    l->bytes -= bytes;
    bp__pool_loc_set(&l->cached, l->bytes);
    bp__pool_local_account(l, -(int64_t)bytes);
    local_count_frees(l, n);
}

/* The non-empty bin whose class was allocated least recently (not bc),
 * LOC_NB when none. */
static unsigned local_coldest(const bp_pool_local *l, unsigned bc)
{
    unsigned best = LOC_NB;
    uint32_t age = 0;
    for (unsigned w = 0; w < LOC_NB / 64; w++)
        for (uint64_t m = l->full[w]; m; m &= m - 1) {
            unsigned c = w * 64 + (unsigned)__builtin_ctzll(m);
            uint32_t a = l->tick - l->used[c];
            if (c != bc && (best == LOC_NB || a > age)) { best = c; age = a; }
        }
    return best;
}

/* bp__pool_arena_take plus a batch of the same list under the same lock. */
static uint32_t local_lists_in(bp_pool_local *l, parena *a, uint64_t sz, int c)
{
    bp_pool *p = l->pool;
    pcls *K = NULL;
    uint32_t i = bp__pool_arena_take(p, a, sz, c, &K);
    if (i) {
        uint64_t got = bp__pool_desc(p, i)->size + bp__pool_local_batch(l, K, sz, c);
        bp__pool_spin_unlock(&K->lock);
        bp__pool_local_account(l, (int64_t)got);
    }
    return i;
}

/* The lists of its own arena, then of the shared one: own class then larger
 * ones, with a batch (bp__pool_local_batch).  (Batches that doubled with
 * every miss of a bin, as tcmalloc's slow start, were tried: on randwire
 * hits rose from 77% to 93% but the extra blocks carved and evicted unused
 * cost more than the misses they saved.)  0 when no list has a fit. */
static uint32_t local_lists(bp_pool_local *l, uint64_t sz, int c)
{
    bp_pool *p = l->pool;
    uint32_t i = local_lists_in(l, l->arena, sz, c);
    if (!i && l->arena != &p->shared) i = local_lists_in(l, &p->shared, sz, c);
    return i;
}

/* Block i goes out through handle l: one more live block, its address in
 * the table of the handle's recent allocations. */
bp_status bp__pool_local_hand_out(bp_pool_local *l, uint32_t i, void **ptr)
{
    pblk *b = bp__pool_desc(l->pool, i);
    uintptr_t a = BADDR(b);
    lent *t = &l->atab[bp__pool_loc_ahash(l, a)];
    l->live++;
    t->a = a;
    t->b = b;
    *ptr = (void *)a;
    return BP_OK;
}

__attribute__((noinline)) bp_status bp__pool_local_alloc_slow(bp_pool_local *l, uint64_t bytes, void **ptr,
                                                              bp_error *err)
{
    if (!ptr || !l) {
        if (ptr) *ptr = NULL;
        return bp__err(err, BP_ERR_USAGE, "pool: local alloc: NULL %s", ptr ? "handle" : "output pointer");
    }
    *ptr = NULL;
    bp_pool *p = l->pool;
    if (atomic_load_explicit(&l->flush_req, memory_order_relaxed)) {
        bp__pool_local_flush(l);
        if (bytes && bytes <= l->max_req) return bp__pool_local_alloc_general(l, bytes, ptr, err);
    }
    if (!bytes) return bp__pool_local_alloc_general(l, 1, ptr, err); /* 0 counts as 1 */
    if (bytes > UINT64_MAX - p->quantum) {
        atomic_fetch_add_explicit(&p->failures, 1, memory_order_relaxed);
        return bp__err(err, BP_ERR_EXHAUSTED, "pool (%s): cannot allocate %" PRIu64 " bytes: larger than any pool",
                       p->be.name ? p->be.name : "backend", bytes);
    }
    uint64_t sz = (bytes + p->quantum - 1) & ~(p->quantum - 1);
    unsigned bc = LOC_NB;               /* not binned: huge requests keep their exact size */
    if (bytes <= l->max_req) {
        bc = bp__pool_loc_ceil(sz >> l->qshift);
        sz = region_size(l, sz, bp__pool_loc_units(bc) << l->qshift);
    }
    int c = bp__pool_class(sz);
    uint32_t i = 0;
    /* 1. a cached block of the next class up, whole (no lock), when it is
     * no larger than that class (so at most one step more than asked) */
    if (bc + 1 < LOC_NB && l->bin[bc + 1] && l->bin[bc + 1]->size == bp__pool_loc_units(bc + 1) << l->qshift) {
        pblk *b = bp__pool_loc_pop(l, bc + 1);
        bp__pool_loc_set(&l->cached, l->bytes);
        bp__pool_loc_inc(&l->hits);
        atomic_store_explicit(&b->state, BLK_USED, memory_order_relaxed);
        i = b->id;
    }
    if (bc < LOC_NB) {
        l->used[bc] = ++l->tick;
        /* 2. the lists, a batch */
        if (!i) i = local_lists(l, sz, c);
        /* 3. eviction: the bins of the classes allocated least recently go
         * back to the lists (and merge there), one bin at a time, until the
         * lists can serve; so a phase of the program that has moved on to
         * other sizes gives its memory back, and the bins in use stay */
        while (!i) {
            unsigned v = local_coldest(l, bc);
            if (v == LOC_NB) break;
            local_evict_bin(l, v);
            i = local_lists(l, sz, c);
        }
    } else {
        i = bp__pool_alloc_lists(p, l->arena, sz, c);
        if (!i && l->bytes) {
            /* before the pool merges or grows, this thread's cache goes back */
            bp__pool_local_flush(l);
            i = bp__pool_alloc_lists(p, l->arena, sz, c);
        }
    }
    if (!i) {
        bp_status s = bp__pool_alloc_slow(p, l->arena, bc < LOC_NB ? l : NULL, bytes, sz, c, ptr, err);
        if (s) return s;
        i = bp__pool_local_lookup(l, (uintptr_t)*ptr);
    }
    return bp__pool_local_hand_out(l, i, ptr);
}

/* Not the common case: a NULL handle, a flush request, a bad pointer, a full
 * cache.  i: the block's descriptor when the fast path found one. */
__attribute__((noinline)) bp_status bp__pool_local_dealloc_slow(bp_pool_local *l, void *ptr, uint32_t i, bp_error *err)
{
    if (!l) return bp__err(err, BP_ERR_USAGE, "pool: local dealloc: NULL handle");
    bp_pool *p = l->pool;
    pblk *b = i ? bp__pool_desc(p, i) : NULL;
    if (!b && atomic_load_explicit(&p->n_pats, memory_order_relaxed)) return p->learn_hooks->free_any(p, l, ptr, err);
    unsigned char st = BLK_USED;
    if (!b || !atomic_compare_exchange_strong_explicit(&b->state, &st, BLK_GOING, memory_order_acq_rel,
                                                       memory_order_relaxed))
        return bp__err(err, BP_ERR_USAGE, "pool: dealloc of %p: not a live block of this pool "
                                          "(double free, interior or foreign pointer)", ptr);
    if (atomic_load_explicit(&l->flush_req, memory_order_relaxed)) {
        bp__pool_local_flush(l);
        atomic_store_explicit(&b->state, BLK_USED, memory_order_relaxed);
        return bp__pool_local_dealloc_general(l, ptr, err);
    }
    /* cache full, a huge block, or a block of another thread's arena: to
     * its home list in its arena, like a plain dealloc; counted for the
     * merge interval in batches (the shared counter is a contended line
     * when several handles free at once) */
    if (p->seed_bug) b->home = b->served;
    uint64_t size = b->size;
    bp__pool_free_to_list_n(p, i, size, 0);
    bp__pool_local_account(l, -(int64_t)size);
    local_count_frees(l, 1);
    if (!--l->live) bp__pool_local_idle(l);
    return BP_OK;
}

/* ------------------------------------------- the plain API's thread cache */

/* pthread key destructor: the thread is gone, its cache goes home. */
void bp__pool_mag_exit(void *v)
{
    bp_pool_local *l = v;
    bp_pool *p = l->pool;
    pthread_mutex_lock(&p->global);
    bp__pool_spin_lock(&l->lock);
    bp__pool_local_flush(l);
    bp__pool_spin_unlock(&l->lock);
    local_unlink(p, l);
    pthread_mutex_unlock(&p->global);
    bp__pool_local_struct_free(p, l);
}

/* The calling thread's locked cache, made on first use; NULL without one. */
static bp_pool_local *pool_mag(bp_pool *p)
{
    if (!p->has_key) return NULL;
    bp_pool_local *l = pthread_getspecific(p->key);
    if (l) return l;
    l = local_create(p, 0, 1);
    if (l && pthread_setspecific(p->key, l) != 0) {
        bp__pool_mag_exit(l);
        return NULL;
    }
    return l;
}

/* Plain alloc from the calling thread's cache l: the request's class or
 * the next one up.  0 on a miss. */
static uint32_t pool_mag_get(bp_pool *p, bp_pool_local *l, unsigned bc)
{
    bp__pool_spin_lock(&l->lock);
    unsigned c = l->bin[bc] ? bc
                 : bc + 1 < LOC_NB && l->bin[bc + 1] && l->bin[bc + 1]->size == bp__pool_loc_units(bc + 1) << p->qshift
                     ? bc + 1
                     : LOC_NB;
    if (c == LOC_NB) {
        bp__pool_spin_unlock(&l->lock);
        return 0;
    }
    pblk *b = bp__pool_loc_pop(l, c);
    bp__pool_loc_set(&l->cached, l->bytes);
    bp__pool_loc_inc(&l->hits);
    atomic_store_explicit(&b->state, BLK_USED, memory_order_relaxed);
    bp__pool_spin_unlock(&l->lock);
    return b->id;
}

/* Plain dealloc into the calling thread's cache l (b is GOING, ours): only
 * blocks of l's arena or the shared one, within the bound. */
static bool pool_mag_put(bp_pool *p, bp_pool_local *l, pblk *b)
{
    uint64_t u = b->size >> p->qshift;
    if (u >= 2 * LOC_MAX_U) return false;
    parena *a = bp__pool_chunk_arena(b->chunk);
    if (a != l->arena && a != &p->shared) return false;
    if (bp__pool_region_nocache(l, b)) return false;
    bp__pool_spin_lock(&l->lock);
    unsigned c = bp__pool_loc_floor(u);
    bool ok = bp__pool_loc_keep(l, b->size, c, bp__pool_loc_cap(l));
    if (ok) {
        atomic_store_explicit(&b->state, BLK_CACHED, memory_order_relaxed);
        bp__pool_loc_push(l, b, c);
        bp__pool_loc_set(&l->cached, l->bytes);
        bp__pool_loc_inc(&l->puts);
    }
    bp__pool_spin_unlock(&l->lock);
    return ok;
}

/* -------------------------------------------------------------- plain API */

bp_status bp_pool_alloc(bp_pool *p, uint64_t bytes, void **ptr, bp_error *err)
{
    if (!ptr) return bp__err(err, BP_ERR_USAGE, "pool: alloc: NULL output pointer");
    *ptr = NULL;
    if (!p) return bp__err(err, BP_ERR_USAGE, "pool: alloc: NULL pool");
    uint64_t req = bytes ? bytes : 1;
    if (req > UINT64_MAX - p->quantum) {
        atomic_fetch_add_explicit(&p->failures, 1, memory_order_relaxed);
        return bp__err(err, BP_ERR_EXHAUSTED, "pool (%s): cannot allocate %" PRIu64 " bytes: larger than any pool",
                       p->be.name ? p->be.name : "backend", bytes);
    }
    bp_pool_local *l = pool_mag(p);
    parena *a = l ? l->arena : &p->shared;
    uint64_t sz = (req + p->quantum - 1) & ~(p->quantum - 1);
    /* binned sizes are rounded up to their cache class (as in the handles),
     * so a freed block serves every request of its class */
    unsigned bc = LOC_NB;
    if (sz >> p->qshift <= LOC_MAX_U) {
        bc = bp__pool_loc_ceil(sz >> p->qshift);
        sz = bp__pool_loc_units(bc) << p->qshift;
        uint32_t h = l ? pool_mag_get(p, l, bc) : 0;
        if (h) {
            l->live++;
            *ptr = (void *)BADDR(bp__pool_desc(p, h));
            return BP_OK;
        }
    }
    if (l && bc < LOC_NB) sz = region_size(l, (req + p->quantum - 1) & ~(p->quantum - 1), sz);
    int c = bp__pool_class(sz);
    uint32_t i = bp__pool_alloc_lists(p, a, sz, c);
    if (!i && l && atomic_load_explicit(&l->cached, memory_order_relaxed)) {
        /* before the slow path, this thread's cache goes back to the lists */
        bp__pool_spin_lock(&l->lock);
        bp__pool_local_flush(l);
        bp__pool_spin_unlock(&l->lock);
        i = bp__pool_alloc_lists(p, a, sz, c);
    }
    if (!i) {
        bp_status s = bp__pool_alloc_slow(p, a, NULL, bytes, sz, c, ptr, err);
        if (s) return s;
    } else
        *ptr = (void *)BADDR(bp__pool_desc(p, i));
    if (l) l->live++;
    return BP_OK;
}

bp_status bp_pool_dealloc(bp_pool *p, void *ptr, bp_error *err)
{
    if (!ptr) return BP_OK;
    if (!p) return bp__err(err, BP_ERR_USAGE, "pool: dealloc: NULL pool");
    uint32_t i = bp__pool_lookup(p, ptr);
    pblk *b = i ? bp__pool_desc(p, i) : NULL;
    if (!b && atomic_load_explicit(&p->n_pats, memory_order_relaxed))
        return p->learn_hooks->free_any(p, NULL, ptr, err); /* a planned block, or none */
    unsigned char st = BLK_USED;
    if (!b || !atomic_compare_exchange_strong_explicit(&b->state, &st, BLK_GOING, memory_order_acq_rel,
                                                       memory_order_relaxed))
        return bp__err(err, BP_ERR_USAGE, "pool: dealloc of %p: not a live block of this pool "
                                          "(double free, interior or foreign pointer)", ptr);
    uint64_t size = b->size;
    if (p->seed_bug) b->home = b->served;
    /* into this thread's cache when it has room and the block is of its
     * arena or the shared one (counted towards the merge interval like a
     * dealloc to the lists); another arena's block goes to that arena */
    bp_pool_local *l = pool_mag(p);
    if (l && pool_mag_put(p, l, b)) {
        bp__pool_count_dealloc(p, l->arena);
    } else
        bp__pool_free_to_list_n(p, i, size, 1);
    if (l && !--l->live) bp__pool_local_idle(l);
    return BP_OK;
}

uint64_t bp_pool_block_bytes(bp_pool *p, const void *ptr)
{
    if (!p || !ptr) return 0;
    uint32_t i = bp__pool_lookup(p, ptr);
    if (!i && atomic_load_explicit(&p->n_pats, memory_order_relaxed)) return p->learn_hooks->block_bytes(p, ptr);
    if (!i || atomic_load_explicit(&bp__pool_desc(p, i)->state, memory_order_acquire) != BLK_USED) return 0;
    return bp__pool_desc(p, i)->size;
}
