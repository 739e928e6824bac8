/*
 * blocks.c — blocks and size classes: a size's class, an arena's class
 * locks, host-side block descriptors, and each class's free lists (TLSF-like
 * bins by power of two) with best fit, split and immediate coalescing.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/internal.h"
#include "pool/pool_internal.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>

/* --------------------------------------------------------------- classes */

uint64_t bp_pool_class_min(int k)
{
    if (k < 0) return 0;
    if (k >= NCLS) return UINT64_MAX;
    if (k < 10) return (uint64_t)MIN_QUANTUM << k;
    return (uint64_t)(256u << 10) << (2 * (k - 10));
}

int bp_pool_class_of(uint64_t bytes)
{
    if (bytes > UINT64_MAX - MIN_QUANTUM) return NCLS - 1;
    return bp__pool_class(bytes <= MIN_QUANTUM ? MIN_QUANTUM
                                               : (bytes + MIN_QUANTUM - 1) & ~(uint64_t)(MIN_QUANTUM - 1));
}

void bp__pool_class_name(int k, char *buf, size_t n)
{
    uint64_t b = bp_pool_class_min(k);
    if (b >= (1u << 20)) snprintf(buf, n, "%" PRIu64 " MiB", b >> 20);
    else if (b >= 1024) snprintf(buf, n, "%" PRIu64 " KiB", b >> 10);
    else snprintf(buf, n, "%" PRIu64 " B", b);
}

/* ------------------------------------------------------------------ locks */

/* The locks themselves (test-and-test-and-set spin locks) are inline in
 * pool_internal.h, with bp__pool_lock_home. */

void bp__pool_arena_init(parena *a, int id)
{
    for (int k = 0; k < NCLS; k++) {
        atomic_init(&a->cls[k].lock, 0);
        a->cls[k].ar = a;
        a->cls[k].idx = k;
    }
    atomic_init(&a->nonempty, 0);
    atomic_init(&a->since_compact, 0);
    a->id = id;
}

void bp__pool_arena_lock(parena *a)
{
    for (int k = 0; k < NCLS; k++) bp__pool_spin_lock(&a->cls[k].lock);
}
void bp__pool_arena_unlock(parena *a)
{
    for (int k = NCLS - 1; k >= 0; k--) bp__pool_spin_unlock(&a->cls[k].lock);
}
/* Every class lock of every arena, in list order (global lock held). */
void bp__pool_lock_all(bp_pool *p)
{
    for (parena *a = p->arenas; a; a = a->next) bp__pool_arena_lock(a);
}
void bp__pool_unlock_all(bp_pool *p)
{
    for (parena *a = p->arenas; a; a = a->next) bp__pool_arena_unlock(a);
}

/* ------------------------------------------------------------ descriptors */

/* Moves up to SPARE_BATCH descriptors to k's spare list (k locked). */
static void pool_desc_refill(bp_pool *p, pcls *k)
{
    bp__pool_spin_lock(&p->meta);
    for (unsigned got = 0; got < SPARE_BATCH; got++) {
        uint32_t i = p->desc_free;
        if (i) {
            p->desc_free = bp__pool_desc(p, i)->next_free;
        } else {
            if ((p->desc_next >> DESC_SHIFT) >= p->n_slabs) {
                if (p->n_slabs >= MAX_SLABS) break;
                pblk *s = bp__calloc(&p->alloc, DESC_SLAB, sizeof *s);
                if (!s) break;
                p->slabs[p->n_slabs++] = s;
            }
            i = p->desc_next++;
        }
        bp__pool_desc(p, i)->id = i;
        bp__pool_desc(p, i)->next_free = k->spare;
        k->spare = i;
        k->n_spare++;
    }
    bp__pool_spin_unlock(&p->meta);
}

/* A fresh descriptor from k's spares (k locked); 0 when host memory is out. */
uint32_t bp__pool_desc_get(bp_pool *p, pcls *k)
{
    if (!k->spare) pool_desc_refill(p, k);
    uint32_t i = k->spare;
    if (i) {
        k->spare = bp__pool_desc(p, i)->next_free;
        k->n_spare--;
    }
    return i;
}

void bp__pool_desc_put(bp_pool *p, pcls *k, uint32_t i)
{
    pblk *b = bp__pool_desc(p, i);
    atomic_store_explicit(&b->state, BLK_DEAD, memory_order_relaxed);
    atomic_store_explicit(&b->addr, 0, memory_order_relaxed);
    b->chunk = NULL;
    if (k->n_spare < SPARE_MAX) {
        b->next_free = k->spare;
        k->spare = i;
        k->n_spare++;
        return;
    }
    bp__pool_spin_lock(&p->meta);
    b->next_free = p->desc_free;
    p->desc_free = i;
    bp__pool_spin_unlock(&p->meta);
}

/* ------------------------------------------------------------- free lists */

void bp__pool_push(bp_pool *p, pcls *k, uint32_t i)
{
    pblk *b = bp__pool_desc(p, i);
    unsigned j = bp__pool_bin(b->size);
    b->prev_free = 0;
    b->next_free = k->head[j];
    if (k->head[j]) bp__pool_desc(p, k->head[j])->prev_free = i;
    if (!k->bins) atomic_fetch_or_explicit(&k->ar->nonempty, 1u << k->idx, memory_order_relaxed);
    k->head[j] = i;
    k->bins |= 1u << j;
    k->n_free++;
    k->free_bytes += b->size;
    atomic_store_explicit(&b->state, BLK_FREE, memory_order_release);
}

void bp__pool_unlink(bp_pool *p, pcls *k, uint32_t i)
{
    pblk *b = bp__pool_desc(p, i);
    unsigned j = bp__pool_bin(b->size);
    if (b->prev_free) bp__pool_desc(p, b->prev_free)->next_free = b->next_free;
    else if (!(k->head[j] = b->next_free) && !(k->bins &= ~(1u << j)))
        atomic_fetch_and_explicit(&k->ar->nonempty, ~(1u << k->idx), memory_order_relaxed);
    if (b->next_free) bp__pool_desc(p, b->next_free)->prev_free = b->prev_free;
    b->prev_free = b->next_free = 0;
    k->n_free--;
    k->free_bytes -= b->size;
}

/* Best fit for sz in class k (k locked).  In sz's own size bin: the smallest
 * block >= sz (an exact fit ends the scan, and so does max_scan candidates
 * once one fits).  Otherwise the first non-empty larger bin (every block
 * there fits): the smallest of its first max_scan blocks.  O(1) when the
 * lists are short, as they are once a trace repeats. */
/* Best fit in the region's home class (region mode): an exact fit at
 * once, else the smallest block of at least sz bytes in the lowest size bin
 * that has one, the lowest address among equals (among the first max_scan
 * of each bin).  Address order keeps live blocks packed towards the start
 * of the region and its end free for growth.  On the synthetic trace (five
 * random draws, 1-16 MiB requests in the region) it was the one policy with no
 * growth after warm-up, against LIFO best fit and address-ordered first
 * fit; preferring any block to the free end (dlmalloc's "top") was worse. */
static uint32_t region_fit(const bp_pool *p, const pcls *k, uint64_t sz)
{
    uint32_t best = 0;
    uint64_t best_size = UINT64_MAX;
    uintptr_t best_addr = 0;
    for (uint32_t m = k->bins & ~((1u << bp__pool_bin(sz)) - 1); m && !best; m &= m - 1) {
        uint32_t seen = 0;
        for (uint32_t i = k->head[__builtin_ctz(m)]; i; i = bp__pool_desc(p, i)->next_free) {
            const pblk *b = bp__pool_desc(p, i);
            if (b->size == sz) return i;
            if (b->size > sz && (b->size < best_size || (b->size == best_size && BADDR(b) < best_addr))) {
                best = i;
                best_size = b->size;
                best_addr = BADDR(b);
            }
            if (p->max_scan && ++seen >= p->max_scan) break;
        }
    }
    return best;
}

uint32_t bp__pool_fit(const bp_pool *p, const pcls *k, uint64_t sz)
{
    if (k->idx == REGION_HOME && p->vm && !p->region_off) return region_fit(p, k, sz);
    unsigned j = bp__pool_bin(sz);
    uint32_t best = 0, seen = 0;
    uint64_t best_size = UINT64_MAX;
    if (k->bins & (1u << j)) {
        for (uint32_t i = k->head[j]; i;) {
            const pblk *b = bp__pool_desc(p, i);
            if (b->size == sz) return i;
            if (b->size > sz && b->size < best_size) { best = i; best_size = b->size; }
            if (p->max_scan && ++seen >= p->max_scan && (best || seen >= 4 * p->max_scan)) break;
            i = b->next_free;
        }
        if (best) return best;
    }
    uint32_t up = j + 1 < NBINS ? k->bins & ~((2u << j) - 1) : 0;
    if (!up) return 0;
    seen = 0;
    for (uint32_t i = k->head[__builtin_ctz(up)]; i;) {
        const pblk *b = bp__pool_desc(p, i);
        if (b->size < best_size) { best = i; best_size = b->size; }
        if (p->max_scan && ++seen >= p->max_scan) break;
        i = b->next_free;
    }
    return best;
}

/* Free block li absorbs its physical successor ri (free, same home, off
 * every list; k = that home, locked): ri's descriptor goes back to k. */
void bp__pool_absorb(bp_pool *p, pcls *k, uint32_t li, uint32_t ri)
{
    pblk *l = bp__pool_desc(p, li), *r = bp__pool_desc(p, ri);
    l->size += r->size;
    l->next_phys = r->next_phys;
    if (r->next_phys) bp__pool_desc(p, r->next_phys)->prev_phys = li;
    bp__pool_map_set(p, r->chunk, BADDR(r), 0);
    bp__pool_desc_put(p, k, ri);
}

/* Immediate coalescing: block i (off every list, about to be pushed on k,
 * its home, locked) absorbs the free neighbours after and before it (a chunk
 * has one home, so k's lock covers them).  Returns the block to push: i, or
 * its free predecessor that absorbed it. */
uint32_t bp__pool_coalesce(bp_pool *p, pcls *k, uint32_t i)
{
    pblk *b = bp__pool_desc(p, i);
    uint32_t ni = b->next_phys;
    if (ni && atomic_load_explicit(&bp__pool_desc(p, ni)->state, memory_order_acquire) == BLK_FREE &&
        bp__pool_desc(p, ni)->home == b->home) {
        bp__pool_unlink(p, k, ni);
        bp__pool_absorb(p, k, i, ni);
        k->merges++;
    }
    uint32_t pi = b->prev_phys;
    if (pi && atomic_load_explicit(&bp__pool_desc(p, pi)->state, memory_order_acquire) == BLK_FREE &&
        bp__pool_desc(p, pi)->home == b->home) {
        bp__pool_unlink(p, k, pi);
        bp__pool_absorb(p, k, pi, i);
        k->merges++;
        return pi;
    }
    return i;
}

/* Cuts block i (off every list, k = its home, locked) to sz bytes; the rest
 * becomes a free block on k's list.  Returns the bytes split off (0 when
 * there is no rest, or no spare descriptor: then the whole block is used). */
static uint64_t pool_split(bp_pool *p, pcls *k, uint32_t i, uint64_t sz)
{
    pblk *b = bp__pool_desc(p, i);
    uint64_t rest = 0;
    if (b->size > sz) {
        uint32_t r = bp__pool_desc_get(p, k);
        if (r) {
            pblk *rb = bp__pool_desc(p, r);
            atomic_store_explicit(&rb->addr, BADDR(b) + sz, memory_order_relaxed);
            rb->size = b->size - sz;
            rb->chunk = b->chunk;
            rb->home = b->home;
            rb->served = b->home;
            rb->prev_phys = i;
            rb->next_phys = b->next_phys;
            if (b->next_phys) bp__pool_desc(p, b->next_phys)->prev_phys = r;
            b->next_phys = r;
            b->size = sz;
            bp__pool_map_set(p, rb->chunk, BADDR(rb), r);
            bp__pool_push(p, k, r);
            rest = rb->size;
        }
    }
    return rest;
}

void bp__pool_take(bp_pool *p, pcls *k, uint32_t i, uint64_t sz, int served)
{
    pblk *b = bp__pool_desc(p, i);
    bp__pool_unlink(p, k, i);
    pool_split(p, k, i, sz);
    b->served = (uint8_t)served;
    k->n_allocs++;
    k->lent += served != b->home;
    atomic_store_explicit(&b->state, BLK_USED, memory_order_release);
}
