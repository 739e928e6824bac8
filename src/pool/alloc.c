/*
 * alloc.c — the core allocator: an arena's lists (own class, then borrowing
 * from larger ones), else the slow path under the global lock (merge, take a
 * free chunk, grow); frees go home; caches go back to the lists; trim.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/internal.h"
#include "pool/pool_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

/* ------------------------------------------------ caches: the lists' side */

static void pool_account_alloc(bp_pool *p, uint64_t size)
{
    /* the counter may dip below zero for a moment (a handle that freed
     * another's blocks passes on its change first): compare signed */
    uint64_t now = atomic_fetch_add_explicit(&p->in_use, size, memory_order_relaxed) + size;
    uint64_t peak = atomic_load_explicit(&p->peak_in_use, memory_order_relaxed);
    while ((int64_t)now > (int64_t)peak && !atomic_compare_exchange_weak_explicit(&p->peak_in_use, &peak, now,
                                                               memory_order_relaxed, memory_order_relaxed)) {
    }
}

/* Block i (off every list) goes back to its home's free list; the caller
 * takes its size off the in-use count. */
static void pool_list_put(bp_pool *p, uint32_t i)
{
    pcls *K = bp__pool_lock_home(bp__pool_desc(p, i));
    bp__pool_push(p, K, bp__pool_coalesce(p, K, i));
    bp__pool_spin_unlock(&K->lock);
}

/* Asks every unlocked local handle that holds blocks to return its cache
 * at its next call (global lock held); locked ones are returned by
 * bp__pool_mag_flush_all. */
void bp__pool_locals_request_flush(bp_pool *p)
{
    for (bp_pool_local *l = p->locals; l; l = l->next)
        if (!l->locked && atomic_load_explicit(&l->cached, memory_order_relaxed))
            atomic_store_explicit(&l->flush_req, 1, memory_order_relaxed);
}

/* In-use bytes change through a handle's misses and list frees: the change
 * goes to the pool's shared counter (a contended line when threads miss at
 * the same time) once it passes LOC_DELTA either way; statistics add the
 * handles' pending changes, and the peak may miss up to LOC_DELTA per
 * handle. */
void bp__pool_local_delta_flush(bp_pool_local *l)
{
    bp_pool *p = l->pool;
    if (l->delta > 0) pool_account_alloc(p, (uint64_t)l->delta);
    else if (l->delta < 0) atomic_fetch_sub_explicit(&p->in_use, (uint64_t)-l->delta, memory_order_relaxed);
    l->delta = 0;
    atomic_store_explicit(&l->pending, 0, memory_order_relaxed);
}

/* Returns every cached block to its home's list (the owner's thread, or
 * anyone holding a locked cache's lock). */
__attribute__((noinline)) void bp__pool_local_flush(bp_pool_local *l)
{
    bp_pool *p = l->pool;
    atomic_store_explicit(&l->flush_req, 0, memory_order_relaxed);
    if (!l->bytes) return;
    uint64_t n = 0;
    for (unsigned w = 0; w < LOC_NB / 64; w++) {
        for (uint64_t m = l->full[w]; m; m &= m - 1) {
            unsigned c = w * 64 + (unsigned)__builtin_ctzll(m);
            for (pblk *b = l->bin[c]; b;) {
                pblk *next = b->lnext;
                l->delta -= (int64_t)b->size; /* before: merging changes it */
                pool_list_put(p, b->id);
                b = next;
                n++;
            }
            l->bin[c] = NULL;
        }
        l->full[w] = 0;
    }
    l->bytes = 0;
    bp__pool_loc_set(&l->cached, 0);
    bp__pool_local_delta_flush(l);
    /* they count towards the next merge pass now */
    atomic_fetch_add_explicit(&l->arena->since_compact, n, memory_order_relaxed);
}

/* The batch of a miss of a small class: up to LOC_BATCH_BYTES of blocks of
 * size sz in all (at most LOC_BATCH_MAX, within the handle's bound) come off
 * the list of K (locked) that served the first; they go to the bins.
 * Returns their bytes (the caller counts them in use). */
uint64_t bp__pool_local_batch(bp_pool_local *l, pcls *K, uint64_t sz, int c)
{
    if (sz > LOC_BATCH_BYTES / 2) return 0; /* a batch of one: the block the caller took */
    bp_pool *p = l->pool;
    uint64_t cap = bp__pool_loc_cap(l);
    unsigned n = (unsigned)(LOC_BATCH_BYTES / sz);
    if (n > LOC_BATCH_MAX) n = LOC_BATCH_MAX;
    while (n > 1 && l->bytes + (n - 1) * sz > cap) n--;
    uint64_t got = 0;
    unsigned m = 1;
    for (; m < n; m++) {
        uint32_t x = bp__pool_fit(p, K, sz);
        if (!x) break;
        bp__pool_take(p, K, x, sz, c);
        pblk *xb = bp__pool_desc(p, x);
        atomic_store_explicit(&xb->state, BLK_CACHED, memory_order_relaxed);
        got += xb->size;
        bp__pool_loc_push(l, xb, bp__pool_loc_floor(xb->size >> l->qshift));
    }
    if (m > 1) {
        bp__pool_loc_set(&l->cached, l->bytes);
        bp__pool_loc_set(&l->puts, atomic_load_explicit(&l->puts, memory_order_relaxed) + m - 1);
    }
    return got;
}

/* Returns every locked cache to the lists (global lock held, no class lock
 * held); unlocked handles are asked to (bp__pool_locals_request_flush). */
void bp__pool_mag_flush_all(bp_pool *p)
{
    for (bp_pool_local *l = p->locals; l; l = l->next) {
        if (!l->locked) continue;
        bp__pool_spin_lock(&l->lock);
        bp__pool_local_flush(l);
        bp__pool_spin_unlock(&l->lock);
    }
}

/* Bytes in every cache (global lock held). */
static uint64_t pool_cached_bytes(bp_pool *p)
{
    uint64_t n = 0;
    for (bp_pool_local *l = p->locals; l; l = l->next) n += atomic_load_explicit(&l->cached, memory_order_relaxed);
    return n;
}

/* ------------------------------------------------------------- allocation */

static bp_status pool_exhausted(bp_pool *p, uint64_t bytes, uint64_t sz, int c, bp_status why, bp_error *err)
{
    /* global lock held */
    uint64_t free_b = 0, largest = 0, nfree = 0;
    bp__pool_lock_all(p);
    for (parena *a = p->arenas; a; a = a->next)
        for (int k = 0; k < NCLS; k++) {
            pcls *K = &a->cls[k];
            free_b += K->free_bytes;
            nfree += K->n_free;
            if (K->bins) {
                uint32_t i = K->head[31 - __builtin_clz(K->bins)];
                for (; i; i = bp__pool_desc(p, i)->next_free)
                    if (bp__pool_desc(p, i)->size > largest) largest = bp__pool_desc(p, i)->size;
            }
        }
    bp__pool_unlock_all(p);
    atomic_fetch_add_explicit(&p->failures, 1, memory_order_relaxed);
    char cname[32], limit[48];
    bp__pool_class_name(c, cname, sizeof cname);
    if (p->max_bytes) snprintf(limit, sizeof limit, "%" PRIu64, p->max_bytes);
    else snprintf(limit, sizeof limit, "none");
    const char *what = why == BP_ERR_NOMEM ? "out of host memory for the pool's metadata"
                       : p->max_bytes && p->reserved + sz > p->max_bytes ? "the pool's byte limit is reached"
                                                                         : "the backend refused to reserve more";
    return bp__err(err, why == BP_ERR_NOMEM ? BP_ERR_NOMEM : BP_ERR_EXHAUSTED,
                   "pool (%s): cannot allocate %" PRIu64 " bytes (rounded to %" PRIu64 ", class %s): %s; "
                   "reserved %" PRIu64 " bytes (limit %s), in use %" PRIu64 ", free %" PRIu64 " in %" PRIu64
                   " blocks, largest free block %" PRIu64,
                   p->be.name ? p->be.name : "backend", bytes, sz, cname, what, p->reserved, limit,
                   (uint64_t)atomic_load_explicit(&p->in_use, memory_order_relaxed) - pool_cached_bytes(p), free_b,
                   nfree, largest);
}

/* Arena a's lists: own class, then larger classes (borrowing).  The class
 * locks of a held. */
static uint32_t pool_search(bp_pool *p, parena *a, int c, uint64_t sz, pcls **from)
{
    for (int k = c; k < NCLS; k++) {
        pcls *K = &a->cls[k];
        uint32_t i = K->bins ? bp__pool_fit(p, K, sz) : 0;
        if (i) {
            bp__pool_take(p, K, i, sz, c);
            *from = K;
            return i;
        }
    }
    return 0;
}

/* The slow path, under the global lock: merge what was freed since the last
 * pass; search arena a and the shared arena again; take an entirely free
 * chunk of either; grow into a.  Only when the pool cannot grow (byte limit,
 * backend refusal) does it touch the other threads' memory: the plain
 * caches go back, the handles are asked to return theirs at their next
 * call, and every arena's lists and free chunks are searched. */
bp_status bp__pool_alloc_slow(bp_pool *p, parena *a, bp_pool_local *l, uint64_t bytes, uint64_t sz, int c,
                              void **ptr, bp_error *err)
{
    pthread_mutex_lock(&p->global);
    bp__pool_lock_all(p);
    if (bp__pool_merge_due(p)) bp__pool_merge_locked(p, NULL);
    pcls *K = NULL;
    uint32_t i = pool_search(p, a, c, sz, &K);
    if (!i && a != &p->shared) i = pool_search(p, &p->shared, c, sz, &K);
    /* not another live arena's free chunk: it is free only between its
     * thread's uses, and taking it makes that thread borrow or grow later,
     * so the pool's growth would depend on how the threads interleave */
    if (!i) i = bp__pool_steal_chunk(p, a, c, sz, false);
    if (i && !K) bp__pool_take(p, K = &a->cls[bp__pool_desc(p, i)->home], i, sz, c);
    /* a handle's miss takes its batch here too */
    uint64_t extra = i && l ? bp__pool_local_batch(l, K, sz, c) : 0;
    bp__pool_unlock_all(p);
    if (!i) {
        bp_status why = BP_OK;
        uint32_t b = c >= REGION_CLASS ? bp__pool_region_grow(p, a, sz, &why) : 0;
        if (!b && why == BP_OK) {
            uint64_t g = bp__pool_grow_min(p, a, c);
            uint64_t want = bp__align_up(sz > g ? sz : g, p->be.granularity);
            uint64_t exact = bp__align_up(sz, p->be.granularity);
            b = bp__pool_grow(p, a, c, want, &why);
            if (!b && why == BP_ERR_EXHAUSTED && exact < want) b = bp__pool_grow(p, a, c, exact, &why);
        }
        if (b) {
            K = &bp__pool_chunk_arena(bp__pool_desc(p, b)->chunk)->cls[bp__pool_desc(p, b)->home];
            bp__pool_spin_lock(&K->lock);
            bp__pool_push(p, K, b);
            bp__pool_take(p, K, b, sz, c);
            if (l) extra = bp__pool_local_batch(l, K, sz, c);
            bp__pool_spin_unlock(&K->lock);
            i = b;
        } else if (why == BP_ERR_EXHAUSTED) {
            bp__pool_mag_flush_all(p);
            bp__pool_locals_request_flush(p);
            bp__pool_lock_all(p);
            bp__pool_merge_locked(p, NULL);
            /* an entirely free chunk of any arena moves to a whole, else a
             * piece of any arena's lists (it stays that arena's) */
            if ((i = bp__pool_steal_chunk(p, a, c, sz, true)))
                bp__pool_take(p, K = &a->cls[bp__pool_desc(p, i)->home], i, sz, c);
            for (parena *o = p->arenas; o && !i; o = o->next) i = pool_search(p, o, c, sz, &K);
            bp__pool_unlock_all(p);
        }
        if (!i) {
            bp_status s = pool_exhausted(p, bytes, sz, c, why, err);
            pthread_mutex_unlock(&p->global);
            return s;
        }
    }
    pthread_mutex_unlock(&p->global);
    if (l) bp__pool_local_account(l, (int64_t)(bp__pool_desc(p, i)->size + extra));
    else pool_account_alloc(p, bp__pool_desc(p, i)->size);
    *ptr = (void *)BADDR(bp__pool_desc(p, i));
    return BP_OK;
}

/* Arena a's lists, own class then larger ones (borrowing), one class lock
 * at a time: the first fit is taken for class c and its list's class stays
 * locked (*Kp) for the caller.  0 when no list has a fit (nothing locked). */
uint32_t bp__pool_arena_take(bp_pool *p, parena *a, uint64_t sz, int c, pcls **Kp)
{
    unsigned mask = atomic_load_explicit(&a->nonempty, memory_order_relaxed) >> c;
    for (int k = c; mask; k++, mask >>= 1) {
        if (!(mask & 1)) continue;
        pcls *K = &a->cls[k];
        bp__pool_spin_lock(&K->lock);
        uint32_t i = K->bins ? bp__pool_fit(p, K, sz) : 0;
        if (i) {
            bp__pool_take(p, K, i, sz, c);
            *Kp = K;
            return i;
        }
        bp__pool_spin_unlock(&K->lock);
    }
    return 0;
}

/* bp__pool_arena_take, the block USED and counted in use. */
static uint32_t arena_alloc_lists(bp_pool *p, parena *a, uint64_t sz, int c)
{
    pcls *K = NULL;
    uint32_t i = bp__pool_arena_take(p, a, sz, c, &K);
    if (i) {
        bp__pool_spin_unlock(&K->lock);
        pool_account_alloc(p, bp__pool_desc(p, i)->size);
    }
    return i;
}

/* Arena a's lists, then the shared arena's. */
uint32_t bp__pool_alloc_lists(bp_pool *p, parena *a, uint64_t sz, int c)
{
    uint32_t i = arena_alloc_lists(p, a, sz, c);
    if (!i && a != &p->shared) i = arena_alloc_lists(p, &p->shared, sz, c);
    return i;
}

/* A block of exactly sz (class c) for arena a: its lists (and the shared
 * arena's), else merging, borrowing or growth; no cache is involved.  *i
 * its descriptor. */
bp_status bp__pool_alloc_uncached(bp_pool *p, parena *a, uint64_t bytes, uint64_t sz, int c, uint32_t *i,
                                  bp_error *err)
{
    void *ptr = NULL;
    if ((*i = bp__pool_alloc_lists(p, a, sz, c))) return BP_OK;
    bp_status s = bp__pool_alloc_slow(p, a, NULL, bytes, sz, c, &ptr, err);
    if (!s) *i = bp__pool_lookup(p, ptr);
    return s;
}

/* Block i (GOING, off every list) goes to its home's free list in the
 * arena that owns its chunk; count: take it off the in-use count and add it
 * to that arena's merge interval (else the caller, a local handle, does
 * both in batches). */
void bp__pool_free_to_list_n(bp_pool *p, uint32_t i, uint64_t size, int count)
{
    pcls *K = bp__pool_lock_home(bp__pool_desc(p, i));
    parena *a = K->ar;
    bp__pool_push(p, K, bp__pool_coalesce(p, K, i));
    K->n_deallocs++;
    bp__pool_spin_unlock(&K->lock);
    if (count) {
        atomic_fetch_sub_explicit(&p->in_use, size, memory_order_relaxed);
        bp__pool_count_dealloc(p, a);
    }
}

/* ------------------------------------------------------------------- trim */

/* Merges, then gives entirely free chunks back to the backend: every
 * arena's (returning every cache first), or only arena `only`'s (whose
 * handle returned its own cache). */
uint64_t bp__pool_trim(bp_pool *p, parena *only)
{
    uint64_t released = 0;
    pthread_mutex_lock(&p->global);
    if (!only) {
        bp__pool_mag_flush_all(p);
        bp__pool_locals_request_flush(p);
    }
    bp__pool_lock_all(p);
    bp__pool_merge_locked(p, only);
    bool changed = false;
    for (size_t j = 0; j < p->n_chunks; j++) {
        pchunk *ch = p->chunks[j];
        if (!ch->live || (only && bp__pool_chunk_arena(ch) != only)) continue;
        pblk *b = bp__pool_desc(p, ch->first);
        if (atomic_load_explicit(&b->state, memory_order_acquire) != BLK_FREE || b->next_phys) continue;
        parena *a = bp__pool_chunk_arena(ch);
        pcls *K = &a->cls[b->home];
        bp__pool_unlink(p, K, ch->first);
        bp__pool_desc_put(p, K, ch->first);
        ch->live = 0;
        changed = true;
        bp__pool_chunk_release(p, ch);
        p->os_calls++;
        p->reserved -= ch->bytes;
        atomic_fetch_sub_explicit(&a->reserved, ch->bytes, memory_order_relaxed);
        p->usable -= ch->usable;
        atomic_store_explicit(&p->reserved_hint, p->reserved, memory_order_relaxed);
        released += ch->bytes;
    }
    if (changed) {
        /* dead chunks keep their (tiny) struct; the index drops them.  If the
         * new index cannot be allocated the old one stays: it only maps
         * addresses no live block has. */
        (void)bp__pool_index_rebuild(p);
        for (size_t j = 0; j < p->n_chunks; j++) {
            pchunk *ch = p->chunks[j];
            if (!ch->live && (ch->map || ch->dir)) p->meta_bytes -= bp__pool_map_free(p, ch);
        }
    }
    bp__pool_unlock_all(p);
    pthread_mutex_unlock(&p->global);
    return released;
}
