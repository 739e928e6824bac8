/*
 * chunks.c — the pool's memory: backend chunks tiled by blocks, the page
 * maps and chunk index that find a block by address, the large region grown
 * in place at its end, merge passes, free chunks moved between arenas.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/internal.h"
#include "pool/pool_internal.h"

#include <pthread.h>
#include <stdatomic.h>

/* ---------------------------------------------------------------- merging */

/* Merges every free block with the free blocks after it of the same home,
 * in the chunks of arena `only` (NULL: every arena).  Global lock and the
 * class locks of those arenas held. */
void bp__pool_merge_locked(bp_pool *p, parena *only)
{
    for (parena *a = p->arenas; a; a = a->next)
        if (!only || a == only) atomic_store_explicit(&a->since_compact, 0, memory_order_relaxed);
    p->compactions++;
    for (size_t j = 0; j < p->n_chunks; j++) {
        pchunk *ch = p->chunks[j];
        if (!ch->live) continue;
        parena *a = bp__pool_chunk_arena(ch);
        if (only && a != only) continue;
        for (uint32_t i = ch->first; i; i = bp__pool_desc(p, i)->next_phys) {
            pblk *b = bp__pool_desc(p, i);
            if (atomic_load_explicit(&b->state, memory_order_acquire) != BLK_FREE) continue;
            pcls *K = &a->cls[b->home];
            bool moved = false;
            while (b->next_phys) {
                uint32_t ni = b->next_phys;
                pblk *n = bp__pool_desc(p, ni);
                if (atomic_load_explicit(&n->state, memory_order_acquire) != BLK_FREE || n->home != b->home) break;
                if (!moved) { bp__pool_unlink(p, K, i); moved = true; } /* its size bin changes */
                bp__pool_unlink(p, K, ni);
                bp__pool_absorb(p, K, i, ni);
                p->merges++;
            }
            if (moved) bp__pool_push(p, K, i);
        }
    }
}

/* Anything freed since the last pass, in any arena (global lock held). */
bool bp__pool_merge_due(const bp_pool *p)
{
    for (parena *a = p->arenas; a; a = a->next)
        if (atomic_load_explicit(&a->since_compact, memory_order_relaxed)) return true;
    return false;
}

/* The merge interval of arena a has passed: a pass over a's chunks only
 * (its own class locks, so other arenas' threads do not wait). */
void bp__pool_maybe_compact(bp_pool *p, parena *a)
{
    if (pthread_mutex_trylock(&p->global) != 0) return; /* someone else is at it */
    bp__pool_arena_lock(a);
    if (atomic_load_explicit(&a->since_compact, memory_order_relaxed) >= p->compact_interval)
        bp__pool_merge_locked(p, a);
    bp__pool_arena_unlock(a);
    pthread_mutex_unlock(&p->global);
}

/* ----------------------------------------------------------------- chunks */

/* Frees chunk c's page map (the array, or a region's directory and
 * leaves); returns its bytes. */
uint64_t bp__pool_map_free(bp_pool *p, pchunk *c)
{
    uint64_t n = 0;
    if (c->map) {
        n += c->map_n * sizeof *c->map;
        bp__free(&p->alloc, c->map, (size_t)c->map_n * sizeof *c->map);
    }
    if (c->dir) {
        for (uint64_t k = 0; k < c->dir_n; k++)
            if (c->dir[k]) {
                bp__free(&p->alloc, c->dir[k], LEAF_N * sizeof(atomic_uint));
                n += LEAF_N * sizeof(atomic_uint);
            }
        bp__free(&p->alloc, c->dir, (size_t)c->dir_n * sizeof *c->dir);
        n += c->dir_n * sizeof *c->dir;
    }
    c->map = NULL;
    c->map_n = 0;
    c->dir = NULL;
    c->dir_n = 0;
    return n;
}

/* Gives chunk c's memory back to the backend: a region's whole
 * reservation, else the piece. */
void bp__pool_chunk_release(bp_pool *p, pchunk *c)
{
    p->be.release(p->be.ctx, (void *)c->base, (size_t)(c->va ? c->va : c->bytes));
}

bool bp__pool_index_rebuild(bp_pool *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n_chunks; i++) n += p->chunks[i]->live;
    size_t bytes = sizeof(pindex) + n * sizeof(((pindex *)0)->e[0]);
    pindex *ix = bp__alloc(&p->alloc, bytes);
    if (!ix) return false;
    ix->retired = NULL;
    ix->n = 0;
    for (size_t i = 0; i < p->n_chunks; i++) {
        pchunk *c = p->chunks[i];
        if (!c->live) continue;
        size_t j = ix->n++;
        while (j > 0 && ix->e[j - 1].lo > c->start) { ix->e[j] = ix->e[j - 1]; j--; }
        ix->e[j].lo = c->start;
        ix->e[j].hi = c->start + c->usable;
        ix->e[j].c = c;
    }
    pindex *old = atomic_exchange_explicit(&p->index, ix, memory_order_acq_rel);
    /* Readers may still hold the old snapshot: keep it until the pool is freed. */
    if (old) { old->retired = p->retired; p->retired = old; }
    p->meta_bytes += bytes;
    return true;
}

/* The index entry of the chunk that holds address a in snapshot ix, or
 * NULL.  Its bounds are the chunk's as of the snapshot (a region grows:
 * lock-free readers use these, not the chunk's own fields). */
const struct pindex_e *bp__pool_index_find(const pindex *ix, uintptr_t a)
{
    if (!ix) return NULL;
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a < ix->e[mid].lo) hi = mid;
        else if (a >= ix->e[mid].hi) lo = mid + 1;
        else return &ix->e[mid];
    }
    return NULL;
}

pchunk *bp__pool_find_chunk(const bp_pool *p, uintptr_t a)
{
    const pindex *ix = atomic_load_explicit(&((bp_pool *)p)->index, memory_order_acquire);
    const struct pindex_e *e = bp__pool_index_find(ix, a);
    return e ? e->c : NULL;
}

/* The descriptor of the live block at ptr, or 0. */
uint32_t bp__pool_lookup(const bp_pool *p, const void *ptr)
{
    uintptr_t a = (uintptr_t)ptr;
    pchunk *c = bp__pool_find_chunk(p, a);
    if (!c || ((a - c->start) & (p->quantum - 1))) return 0;
    uint32_t i = atomic_load_explicit(bp__pool_chunk_slot(c, (a - c->start) >> p->qshift), memory_order_relaxed);
    return i && BADDR(bp__pool_desc(p, i)) == a ? i : 0;
}

/* Smallest piece a class grows by: 16 blocks of its largest size, at most
 * grow_bytes; large requests get exactly what they need. */
uint64_t bp__pool_grow_min(const bp_pool *p, const parena *a, int c)
{
    uint64_t m = c + 1 < NCLS ? bp_pool_class_min(c + 1) * 16 : p->grow_bytes;
    /* Geometric growth: a piece is at least 1/8 of what the arena holds, so
     * the chunk count (and the cost of rebuilding the chunk index on each
     * growth) stays logarithmic until pieces reach grow_bytes. */
    uint64_t geo = atomic_load_explicit(&a->reserved, memory_order_relaxed) / 8;
    if (geo > m) m = geo;
    return m < p->grow_bytes ? m : p->grow_bytes;
}

/* Links chunk ch (first block i, homed in K) into arena a and the chunk
 * index; on failure (no memory for the index) unlinks it and returns the
 * descriptor, and the caller frees the rest.  Global lock held. */
static bool pool_chunk_link(bp_pool *p, parena *a, pchunk *ch, pcls *K, uint32_t i)
{
    ch->first = i;
    ch->live = 1;
    atomic_init(&ch->arena, a);
    p->chunks[p->n_chunks++] = ch;
    if (bp__pool_index_rebuild(p)) return true;
    p->n_chunks--;
    bp__pool_spin_lock(&K->lock);
    bp__pool_desc_put(p, K, i);
    bp__pool_spin_unlock(&K->lock);
    return false;
}

/* Reserves a chunk of `bytes` usable bytes for arena a, homed at class c;
 * its one block is returned off-list (state DEAD).  Global lock held.
 * Returns the descriptor or 0; *why says which resource ran out. */
uint32_t bp__pool_grow(bp_pool *p, parena *a, int c, uint64_t bytes, bp_status *why)
{
    uint64_t extra = p->quantum > p->be.base_alignment ? p->quantum : 0;
    uint64_t total = bytes + extra;
    *why = BP_ERR_EXHAUSTED;
    if (total < bytes || (p->max_bytes && (p->reserved > p->max_bytes || total > p->max_bytes - p->reserved)))
        return 0;
    if (p->n_chunks == p->cap_chunks &&
        !bp__grow(&p->alloc, (void **)&p->chunks, &p->cap_chunks, p->n_chunks + 1, sizeof *p->chunks)) {
        *why = BP_ERR_NOMEM;
        return 0;
    }
    void *base = total <= SIZE_MAX ? p->be.reserve(p->be.ctx, (size_t)total) : NULL;
    p->os_calls++;
    if (!base) return 0;
    pchunk *ch = bp__calloc(&p->alloc, 1, sizeof *ch);
    uintptr_t start = (uintptr_t)bp__align_up((uint64_t)(uintptr_t)base, p->quantum);
    uint64_t usable = (total - (start - (uintptr_t)base)) & ~(p->quantum - 1);
    uint64_t map_n = usable >> p->qshift;
    atomic_uint *map = ch ? bp__calloc(&p->alloc, (size_t)map_n, sizeof *map) : NULL;
    pcls *K = &a->cls[c];
    uint32_t i = 0;
    if (map) {
        bp__pool_spin_lock(&K->lock);
        i = bp__pool_desc_get(p, K);
        bp__pool_spin_unlock(&K->lock);
    }
    if (!i) {
        bp__free(&p->alloc, map, (size_t)map_n * sizeof *map);
        bp__free(&p->alloc, ch, sizeof *ch);
        p->be.release(p->be.ctx, base, (size_t)total);
        p->os_calls++;
        *why = BP_ERR_NOMEM;
        return 0;
    }
    ch->base = (uintptr_t)base;
    ch->bytes = total;
    ch->start = start;
    ch->usable = usable;
    ch->map = map;
    ch->map_n = map_n;
    if (!pool_chunk_link(p, a, ch, K, i)) {
        bp__free(&p->alloc, map, (size_t)map_n * sizeof *map);
        bp__free(&p->alloc, ch, sizeof *ch);
        p->be.release(p->be.ctx, base, (size_t)total);
        p->os_calls++;
        *why = BP_ERR_NOMEM;
        return 0;
    }
    p->meta_bytes += sizeof *ch + map_n * sizeof *map;
    p->reserved += total;
    atomic_fetch_add_explicit(&a->reserved, total, memory_order_relaxed);
    p->usable += usable;
    if (p->reserved > p->peak_reserved) p->peak_reserved = p->reserved;
    atomic_store_explicit(&p->reserved_hint, p->reserved, memory_order_relaxed);
    /* (no flush request to the other handles: their memory is in their
     * own arenas; they are asked only when the pool would fail) */
    pblk *b = bp__pool_desc(p, i);
    atomic_store_explicit(&b->addr, start, memory_order_relaxed);
    b->size = usable;
    b->chunk = ch;
    b->home = b->served = (uint8_t)c;
    b->prev_phys = b->next_phys = 0;
    bp__pool_map_set(p, ch, start, i);
    return i; /* not on a list yet: the caller pushes (and takes) under K's lock */
}

/* ----------------------------------------------------------- the region */

/* Large requests (class REGION_CLASS and up) grow one region per arena
 * instead of getting chunks of their own: a reservation of address space
 * (REGION_VA) whose usable part grows at its end, one backend commit per
 * growth.  Its blocks all have home REGION_HOME, the open class, so every
 * large class borrows from it and its pieces go back to it when freed (the
 * return rule is what lets it heal); free space at its end merges with the
 * next growth.  So the arena's large blocks share one address range, free
 * neighbours always merge, and a 16 MiB request can use the space that 4 MiB
 * requests freed, where separate chunks could never merge (the synthetic
 * trace's growth after warm-up and its drift).  Needs the backend's
 * address-space operations (pool_internal.h); without them large requests
 * get chunks as before. */

/* The last block of chunk ch (every class lock held). */
static uint32_t region_last(const bp_pool *p, const pchunk *ch)
{
    uint32_t t = ch->first;
    while (bp__pool_desc(p, t)->next_phys) t = bp__pool_desc(p, t)->next_phys;
    return t;
}

/* Bytes of t that a growth at the end would merge with: all of it when it
 * is free and of the region's home. */
static uint64_t region_tail_free(const bp_pool *p, uint32_t t)
{
    const pblk *b = bp__pool_desc(p, t);
    return atomic_load_explicit(&b->state, memory_order_acquire) == BLK_FREE && b->home == REGION_HOME ? b->size : 0;
}

/* Makes the page map leaves for granules [g0, g1) of region ch (global
 * lock held).  False when host memory is out. */
static bool region_leaves(bp_pool *p, pchunk *ch, uint64_t g0, uint64_t g1)
{
    for (uint64_t k = g0 >> LEAF_SHIFT; g1 > g0 && k <= (g1 - 1) >> LEAF_SHIFT && k < ch->dir_n; k++) {
        if (ch->dir[k]) continue;
        atomic_uint *leaf = bp__calloc(&p->alloc, LEAF_N, sizeof *leaf);
        if (!leaf) return false;
        ch->dir[k] = leaf;
        p->meta_bytes += LEAF_N * sizeof *leaf;
    }
    return true;
}

static void pool_count_reserve(bp_pool *p, parena *a, uint64_t bytes)
{
    p->reserved += bytes;
    atomic_fetch_add_explicit(&a->reserved, bytes, memory_order_relaxed);
    if (p->reserved > p->peak_reserved) p->peak_reserved = p->reserved;
    atomic_store_explicit(&p->reserved_hint, p->reserved, memory_order_relaxed);
}

/* May `bytes` more be reserved under max_bytes? */
static bool pool_may_reserve(const bp_pool *p, uint64_t bytes)
{
    return !p->max_bytes || (p->reserved <= p->max_bytes && bytes <= p->max_bytes - p->reserved);
}

/* A new region for arena a whose first block holds sz bytes; the block is
 * returned off-list (state DEAD), as bp__pool_grow does.  0 and *why = BP_OK
 * when the backend refuses the reservation (the caller grows by chunks). */
static uint32_t region_new(bp_pool *p, parena *a, uint64_t sz, bp_status *why)
{
    uint64_t gran = p->be.granularity, extra = p->quantum > p->be.base_alignment ? p->quantum : 0;
    uint64_t min = bp__align_up(sz + extra, gran), first = bp__align_up(sz + extra > p->grow_bytes ? sz + extra : p->grow_bytes, gran);
    *why = BP_ERR_EXHAUSTED;
    if (min < sz || first < sz) return 0;
    if (!pool_may_reserve(p, first)) first = min;
    if (!pool_may_reserve(p, first)) return 0;
    *why = BP_ERR_NOMEM;
    if (p->n_chunks == p->cap_chunks &&
        !bp__grow(&p->alloc, (void **)&p->chunks, &p->cap_chunks, p->n_chunks + 1, sizeof *p->chunks))
        return 0;
    uint64_t va = REGION_VA;
    if (va < 4 * first) va = bp__align_up(4 * first, gran);
    void *base = NULL;
    for (; va >= first && va >= REGION_VA_MIN; va = bp__align_up(va / 2, gran)) {
        base = va <= SIZE_MAX ? p->vm->reserve_va(p->be.ctx, (size_t)va) : NULL;
        p->os_calls++;
        if (base) break;
    }
    if (!base) {
        /* no address space for it: large requests get chunks from now on */
        p->region_off = 2;
        *why = BP_OK;
        return 0;
    }
    pchunk *ch = bp__calloc(&p->alloc, 1, sizeof *ch);
    uint32_t i = 0;
    pcls *K = &a->cls[REGION_HOME];
    if (ch) {
        ch->base = (uintptr_t)base;
        ch->va = va;
        ch->start = (uintptr_t)bp__align_up((uint64_t)(uintptr_t)base, p->quantum);
        ch->dir_n = (((va - (ch->start - ch->base)) >> p->qshift) + LEAF_N - 1) >> LEAF_SHIFT;
        ch->dir = bp__calloc(&p->alloc, (size_t)ch->dir_n, sizeof *ch->dir);
        if (ch->dir) p->meta_bytes += ch->dir_n * sizeof *ch->dir;
        ch->usable = (first - (ch->start - ch->base)) & ~(p->quantum - 1);
        if (ch->dir && region_leaves(p, ch, 0, ch->usable >> p->qshift)) {
            bp__pool_spin_lock(&K->lock);
            i = bp__pool_desc_get(p, K);
            bp__pool_spin_unlock(&K->lock);
        }
    }
    if (i && p->vm->commit(p->be.ctx, base, (size_t)first) != 0) {
        p->os_calls++;
        *why = BP_ERR_EXHAUSTED;
        bp__pool_spin_lock(&K->lock);
        bp__pool_desc_put(p, K, i);
        bp__pool_spin_unlock(&K->lock);
        i = 0;
    } else if (i) {
        p->os_calls++;
        ch->bytes = first;
        if (!pool_chunk_link(p, a, ch, K, i)) i = 0;
    }
    if (!i) {
        if (ch) {
            p->meta_bytes -= bp__pool_map_free(p, ch);
            bp__free(&p->alloc, ch, sizeof *ch);
        }
        p->be.release(p->be.ctx, base, (size_t)va);
        p->os_calls++;
        return 0;
    }
    p->meta_bytes += sizeof *ch;
    pool_count_reserve(p, a, first);
    p->usable += ch->usable;
    pblk *b = bp__pool_desc(p, i);
    atomic_store_explicit(&b->addr, ch->start, memory_order_relaxed);
    b->size = ch->usable;
    b->chunk = ch;
    b->home = b->served = REGION_HOME;
    b->prev_phys = b->next_phys = 0;
    bp__pool_map_set(p, ch, ch->start, i);
    a->region = ch;
    *why = BP_OK;
    return i;
}

/* Grows region ch of arena a at its end so that its last block, merged
 * with the growth, holds sz bytes; returns that block off-list (state
 * DEAD).  0 and *why = BP_OK when its address space is full.  Global lock
 * held, no class lock. */
static uint32_t region_extend(bp_pool *p, parena *a, pchunk *ch, uint64_t sz, bp_status *why)
{
    pcls *K = &a->cls[REGION_HOME];
    bp__pool_lock_all(p);
    uint64_t have = region_tail_free(p, region_last(p, ch));
    bp__pool_unlock_all(p);
    uint64_t end = ch->start + ch->usable, cend = ch->base + ch->bytes; /* tiled, committed */
    uint64_t need = sz > have ? sz - have : 0;
    *why = BP_OK;
    if (cend - end < need) {
        uint64_t gran = p->be.granularity, lack = need - (cend - end);
        uint64_t min = bp__align_up(lack, gran), step = bp__align_up(lack > p->grow_bytes ? lack : p->grow_bytes, gran);
        if (min < lack || ch->base + ch->va - cend < min) return 0; /* full: a new region */
        if (step > ch->base + ch->va - cend || !pool_may_reserve(p, step)) step = min;
        *why = BP_ERR_EXHAUSTED;
        if (!pool_may_reserve(p, step)) return 0;
        *why = BP_ERR_NOMEM;
        if (!region_leaves(p, ch, (end - ch->start) >> p->qshift, (cend + step - ch->start) >> p->qshift)) return 0;
        p->os_calls++;
        *why = BP_ERR_EXHAUSTED;
        if (p->vm->commit(p->be.ctx, (void *)(uintptr_t)cend, (size_t)step) != 0) return 0;
        ch->bytes += step;
        pool_count_reserve(p, a, step);
        cend += step;
    }
    uint64_t new_end = ch->start + ((cend - ch->start) & ~(p->quantum - 1));
    uint32_t n = 0;
    if (new_end > end) {
        /* the new range becomes part of the index before any block there
         * is handed out */
        *why = BP_ERR_NOMEM;
        bp__pool_spin_lock(&K->lock);
        n = bp__pool_desc_get(p, K);
        bp__pool_spin_unlock(&K->lock);
        if (!n) return 0;
        ch->usable = new_end - ch->start;
        if (!bp__pool_index_rebuild(p)) {
            ch->usable = end - ch->start; /* committed, tiled by a later growth */
            bp__pool_spin_lock(&K->lock);
            bp__pool_desc_put(p, K, n);
            bp__pool_spin_unlock(&K->lock);
            return 0;
        }
        p->usable += new_end - end;
    }
    bp__pool_lock_all(p);
    uint32_t t = region_last(p, ch), r = 0;
    pblk *tb = bp__pool_desc(p, t);
    if (region_tail_free(p, t)) {
        bp__pool_unlink(p, K, t);
        tb->size += new_end - end;
        r = t;
        if (n) bp__pool_desc_put(p, K, n);
    } else if (n) {
        pblk *nb = bp__pool_desc(p, n);
        atomic_store_explicit(&nb->addr, end, memory_order_relaxed);
        nb->size = new_end - end;
        nb->chunk = ch;
        nb->home = nb->served = REGION_HOME;
        nb->prev_phys = t;
        nb->next_phys = 0;
        tb->next_phys = n;
        bp__pool_map_set(p, ch, end, n);
        r = n;
    }
    if (r && bp__pool_desc(p, r)->size < sz) {
        /* the free end was taken meanwhile (another thread's shared-arena
         * allocation): it stays free, the caller grows again */
        bp__pool_push(p, K, r);
        r = 0;
    }
    if (r) atomic_store_explicit(&bp__pool_desc(p, r)->state, BLK_DEAD, memory_order_relaxed);
    bp__pool_unlock_all(p);
    *why = BP_OK;
    return r;
}

/* A block of at least sz bytes from arena a's region, grown or made for it
 * (off-list, state DEAD: the caller pushes and takes it under its home's
 * lock).  0 and *why = BP_OK when there is no region (the caller grows by
 * chunks); else *why says what ran out.  Global lock held, no class lock. */
uint32_t bp__pool_region_grow(bp_pool *p, parena *a, uint64_t sz, bp_status *why)
{
    *why = BP_OK;
    if (!p->vm || p->region_off) return 0;
    pchunk *ch = a->region;
    if (ch && (!ch->live || bp__pool_chunk_arena(ch) != a)) ch = a->region = NULL;
    if (!ch && a != &p->shared) {
        /* a freed handle's region (now the shared arena's) is taken over
         * before new address space is reserved: a program that makes a
         * handle per request would otherwise leave one region per handle,
         * its committed memory usable only by what the shared lists serve */
        for (size_t j = 0; j < p->n_chunks && !ch; j++) {
            pchunk *c = p->chunks[j];
            if (c->live && c->va && c != p->shared.region && bp__pool_chunk_arena(c) == &p->shared) ch = c;
        }
        if (ch) {
            bp__pool_lock_all(p);
            bp__pool_chunk_move(p, ch, a);
            bp__pool_unlock_all(p);
            a->region = ch;
        }
    }
    for (int round = 0; ch && round < 3; round++) {
        uint32_t r = region_extend(p, a, ch, sz, why);
        if (r || *why != BP_OK) return r;
        if (ch->base + ch->va - (ch->base + ch->bytes) < p->be.granularity) break;
    }
    return region_new(p, a, sz, why);
}

/* Moves chunk ch (its arena's class locks and a's held, global lock held)
 * to arena a: its free blocks move to a's lists of the same home. */
void bp__pool_chunk_move(bp_pool *p, pchunk *ch, parena *a)
{
    parena *from = bp__pool_chunk_arena(ch);
    if (from == a) return;
    for (uint32_t i = ch->first; i; i = bp__pool_desc(p, i)->next_phys) {
        pblk *b = bp__pool_desc(p, i);
        if (atomic_load_explicit(&b->state, memory_order_acquire) != BLK_FREE) continue;
        bp__pool_unlink(p, &from->cls[b->home], i);
        bp__pool_push(p, &a->cls[b->home], i);
    }
    atomic_fetch_sub_explicit(&from->reserved, ch->bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&a->reserved, ch->bytes, memory_order_relaxed);
    atomic_store_explicit(&ch->arena, a, memory_order_release);
}

/* Before growing: an entirely free chunk (one merged free block) of at
 * least sz bytes, the smallest, moves to arena a and class c, so memory a
 * class or a thread no longer needs serves another without an OS call.
 * Candidates are the chunks of a and of the shared arena, or of any arena
 * when `any` (only when the pool cannot grow: a live arena's chunk is free
 * only between its thread's uses).  Only whole chunks move: moving part of one would
 * mix homes inside it and stop it from ever merging whole again.  Global
 * lock and all class locks held. */
uint32_t bp__pool_steal_chunk(bp_pool *p, parena *a, int c, uint64_t sz, bool any)
{
    uint32_t best = 0;
    uint64_t best_size = UINT64_MAX;
    pchunk *bc = NULL;
    for (size_t j = 0; j < p->n_chunks; j++) {
        pchunk *ch = p->chunks[j];
        if (!ch->live) continue;
        parena *o = bp__pool_chunk_arena(ch);
        if (!any && o != a && o != &p->shared) continue;
        pblk *b = bp__pool_desc(p, ch->first);
        if (atomic_load_explicit(&b->state, memory_order_acquire) == BLK_FREE && !b->next_phys &&
            b->size >= sz && b->size < best_size) {
            best = ch->first;
            best_size = b->size;
            bc = ch;
        }
    }
    if (!best) return 0;
    bp__pool_chunk_move(p, bc, a);
    /* a chunk of a smaller class changes home; one of a larger class (from
     * another arena) keeps it, and its pieces are borrowed as usual */
    if (bp__pool_desc(p, best)->home < c) {
        bp__pool_unlink(p, &a->cls[bp__pool_desc(p, best)->home], best);
        bp__pool_desc(p, best)->home = (uint8_t)c;
        bp__pool_push(p, &a->cls[c], best);
    }
    return best;
}
