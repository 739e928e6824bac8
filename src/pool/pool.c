/*
 * pool.c — the runtime buffer pool: size classes over a few large pieces of
 * backing memory, best fit within a class, borrowing from larger classes,
 * periodic merging, and a plan-backed arena.  docs/POOL.md has the long form.
 *
 * Memory comes from a backend in chunks.  Blocks tile each chunk; a block's
 * descriptor lives on the host (never in the memory itself, which may be on a
 * device), and each chunk has a page map from every 256-byte granule to the
 * descriptor of the block that starts there, so dealloc(ptr) is a binary
 * search over the (few) chunks plus one array read.
 *
 * Every block has a *home* class: the class whose memory it is.  A chunk is
 * reserved for one class and all blocks split from it keep that home; a free
 * block sits on one of its home's doubly linked free lists (one per power of
 * two of block size, with a bit mask of non-empty ones, as in TLSF).
 * Allocation rounds the request up, takes the best fit from its own class (an
 * exact fit stops the scan; lists are LIFO so the common case is the head),
 * and splits off the rest, which stays in the same class.  When the class has nothing that fits,
 * it borrows from the next larger class that does; the piece keeps the home
 * of the class it came from and returns there when freed.  A block that
 * reaches its home's list merges at once with free neighbours of the same
 * home (a chunk has one home, so one class lock covers them); a full merge
 * pass also runs every compact_interval deallocs and before the pool would
 * grow, so borrowed pieces heal back into the large blocks they were cut
 * from.  Returning a borrowed piece to the class it
 * *served* (the seed's bug, bp__pool_set_seed_bug) strands it where it can
 * never merge back, and the large classes erode until the pool must grow.
 *
 * Arenas: the class lists live in arenas.  Arena 0 (shared) holds the
 * up-front reservation and the chunks of freed handles; every thread cache
 * (a bp_pool_local, the plain API's included) owns one more, and a chunk
 * belongs to one arena (pchunk.arena).  A thread allocates from its cache,
 * then its own arena's lists (uncontended locks), then the shared arena's,
 * and grows into its own arena; so two threads never meet on a class lock
 * and never flush each other.  A free of another arena's block goes to that
 * arena's list under its class lock (pool_lock_home re-reads the owner under
 * the lock: a chunk changes arena only under every class lock).  A freed
 * handle's chunks move to the shared arena (its live blocks stay valid) and
 * its arena struct waits for the next handle.  Only when the pool cannot
 * grow are other threads' caches and arenas searched.
 *
 * Locks: the common path (alloc from its own class or borrowed from a larger
 * one, any dealloc) holds one per-class spin lock at a time and changes
 * per-block state with atomics (USED -> GOING -> FREE detects double frees
 * without a lock); an atomic bit mask of non-empty classes per arena lets it
 * skip empty ones.  The global mutex is taken only to merge, grow, move
 * chunks between arenas or trim (and to read statistics); those take every
 * class lock of every arena after the global one (a periodic merge pass
 * takes only its arena's).  No path holds two class locks unless it holds
 * the global lock, so there is no lock-order cycle.  (The seed took the
 * global lock to borrow too; taking only the donor's lock is enough, because
 * a borrow touches one list.)
 *
 * The large region (pool_region_grow): with a backend that can reserve
 * address space and commit it piecewise (the mmap one), requests of 4 MiB
 * and up do not get chunks of their own, which never merge, but grow one
 * region per arena at its end.  Its blocks have the open class as their
 * home, so every large class borrows from it and its pieces return to it,
 * where they merge with their free neighbours; address-ordered best fit
 * keeps it packed.  Its blocks of 1 MiB and more are not cached (in pools
 * past the small-pool cache floor), so freed space merges at once; the plain
 * API's cache keeps none of its blocks, so returning that cache (statistics
 * do) cannot move the small pieces borrowed from it.  Past that floor its
 * requests are rounded to 64 KiB, not to a cache class (region_size).  Its page
 * map is two-level so that it grows without moving.
 *
 * Thread caches: every per-thread cache is a bp_pool_local.  The plain API
 * keeps one per thread in a pthread key owned by the pool, with a spin lock
 * its thread holds while touching the bins, so that before merging or
 * growing (and for compact, trim, statistics) every plain cache goes back to
 * the lists at once; a thread's exit returns its cache too.
 * Lock order: global, locked caches, classes.
 *
 * Local handles (bp_pool_local): an explicit per-thread cache with no lock.
 * Size-class bins (4 geometric steps per doubling, requests rounded up to
 * their class, indexed directly) hold stacks linked through the
 * descriptors; a hit is a pop or a push plus relaxed loads/stores of the
 * block's state.  Dealloc finds the descriptor through a direct-mapped table
 * of the handle's own recent allocations (validated: the descriptor must
 * still start at the address), else a region -> chunk table and the page
 * map; a freed block below 1 MiB needs only the cache bound to stay.  A
 * miss takes a cached block of the next class, then a batch of its
 * class from the lists under one lock, then evicts the bins to the lists
 * (where they merge), least recently allocated class first, one bin at a
 * time until the lists can serve, before the pool merges or grows.  The bins
 * hold blocks of the handle's arena and of the shared one only.  In a small
 * pool, large freed blocks beyond one per bin go back to the lists (loc_keep),
 * so a repeated trace reuses the pages it touched before.  In a larger pool,
 * a cache whose last handed-out block is freed goes back to the lists
 * (local_idle), so each repetition of a trace starts from the same merged
 * lists and makes the same choices: no growth after warm-up.  Other
 * threads never touch a handle: they set its flush flag (compact, trim, or a
 * pool that cannot grow), honoured at its next call.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/internal.h"
#include "pool/pool_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define NCLS BP_POOL_N_CLASSES
#define MIN_QUANTUM 256u
#define DESC_SHIFT 10
#define DESC_SLAB (1u << DESC_SHIFT)
#define MAX_SLABS 8192u                /* 8M descriptors */
#define SPARE_BATCH 32u
#define SPARE_MAX 256u
#define NBINS 32
#define LEAF_SHIFT 16                  /* a region's page map leaf: 2^16 granules (16 MiB at 256 B) */
#define LEAF_N (1u << LEAF_SHIFT)
#define REGION_CLASS 12                /* requests of this class and up (>= 4 MiB) grow the region */
#define REGION_HOME (NCLS - 1)         /* the region's home: the open class, so every large class
                                          can borrow from it */
#define REGION_VA (UINT64_C(8) << 30)  /* address space a region reserves (less if refused) */
#define REGION_NOCACHE (UINT64_C(1) << 20) /* region blocks this large are never cached */
#define REGION_VA_MIN (UINT64_C(256) << 20)
#define REGION_GRAIN (UINT64_C(64) << 10) /* region requests round to this, not to a cache class
                                             (region_size) */

enum { BLK_DEAD = 0, BLK_FREE, BLK_USED, BLK_GOING, BLK_CACHED };


typedef struct pchunk pchunk;
typedef struct parena parena;

typedef struct pblk {
    _Atomic uintptr_t addr;           /* atomic: a local handle may read a stale descriptor's (BADDR) */
    uint64_t size;
    pchunk *chunk;
    uint32_t prev_phys, next_phys;    /* neighbours in the chunk (0 = none) */
    union {
        struct { uint32_t prev_free, next_free; }; /* free list of the home class (FREE) */
        struct pblk *lnext;           /* a local handle's stack (CACHED in a bp_pool_local) */
    };
    uint32_t id;                      /* its own descriptor number */
    uint8_t home;                     /* class whose memory this is */
    uint8_t served;                   /* class of the request it serves */
    atomic_uchar state;
} pblk;

struct pchunk {
    _Atomic(parena *) arena;          /* owner of its blocks' lists; changes only under the global lock
                                         with every class lock held (pool_lock_home re-checks it) */
    uintptr_t base;                   /* as the backend returned it */
    uint64_t bytes;                   /* as reserved */
    uintptr_t start;                  /* aligned start of the blocks */
    uint64_t usable;                  /* bytes tiled by blocks */
    atomic_uint *map;                 /* granule -> descriptor starting there (NULL in a region) */
    uint64_t map_n;
    /* a region (pool_region_grow): address space reserved up front, made
     * usable piece by piece at its end; its page map is two-level, so it
     * grows without moving (lock-free readers hold on to it) */
    atomic_uint **dir;                /* granule >> LEAF_SHIFT -> leaf (written once, before the index
                                         that covers it is published) */
    uint64_t dir_n;                   /* leaves the reservation needs */
    uint64_t va;                      /* bytes of address space reserved (0: a plain chunk) */
    uint32_t first;                   /* descriptor of the first block */
    int live;
};

typedef struct pindex {
    struct pindex *retired;
    size_t n;
    struct pindex_e { uintptr_t lo, hi; pchunk *c; } e[];
} pindex;

typedef struct pcls {
    _Alignas(64) atomic_int lock;
    uint32_t head[NBINS];             /* free lists (LIFO) by block size: bin j holds [2^(j+8), 2^(j+9)) */
    uint32_t bins;                    /* bit j set when head[j] is not empty */
    uint32_t n_free;
    uint64_t free_bytes;
    uint32_t spare, n_spare;          /* unused descriptors (via next_free) */
    uint64_t n_deallocs;              /* blocks returned to this class */
    uint64_t n_allocs;                /* blocks taken from this class's memory */
    uint64_t lent;                    /* of those, for a smaller class (borrowed) */
    uint64_t merges;                  /* blocks merged away when freed (immediate coalescing) */
    parena *ar;                       /* the arena it belongs to */
    int idx;                          /* its class number */
} pcls;

/* An arena: the per-class free lists of the chunks it owns.  Arena 0 (the
 * pool's `shared`) holds the up-front reservation and the chunks of freed
 * handles; every bp_pool_local (the plain API's per-thread caches too) owns
 * one more, so threads on their own arenas never meet on a class lock. */
struct parena {
    pcls cls[NCLS];
    _Alignas(64) atomic_uint nonempty; /* hint: bit k set when class k's list is not empty */
    atomic_uint_fast64_t since_compact; /* frees since its last merge pass */
    parena *next;                     /* all arenas, live or unused (global lock) */
    parena *next_unused;              /* arenas of freed handles, for reuse (global lock) */
    pchunk *region;                   /* its large region, grown in place (global lock; valid while
                                         live and still in this arena) */
    void *raw;                        /* what alloc returned (NULL: the pool's shared arena) */
    atomic_uint_fast64_t reserved;    /* bytes of its chunks (changed under the global lock; read by
                                         its handle's cache bound without it) */
    int id;                           /* 0 = shared */
    int live;                         /* owned by a handle (global lock) */
};

struct bp_pool {
    parena shared;                    /* arena 0 */
    parena *arenas;                   /* every arena, shared first (global lock) */
    parena *unused;                   /* arenas of freed handles (global lock) */
    int n_arenas;
    void *raw;                        /* what alloc returned (the struct is 64-aligned) */
    size_t raw_size;
    bp_allocator alloc;
    bp_pool_backend be;
    uint64_t quantum;
    unsigned qshift;
    uint64_t max_bytes, grow_bytes;
    uint32_t compact_interval, max_scan;
    int seed_bug;
    int region_off;                   /* test hook: no large region */
    const bp__pool_vm *vm;            /* the backend's address-space operations, NULL if none */
    pthread_mutex_t global;
    atomic_int meta;                  /* descriptor slabs (leaf lock) */
    pblk *slabs[MAX_SLABS];
    uint32_t desc_next, desc_free, n_slabs; /* under meta */
    /* under the global lock */
    pchunk **chunks;
    size_t n_chunks, cap_chunks;
    pindex *retired;
    uint64_t reserved, peak_reserved, usable, os_calls, borrows, compactions, merges, meta_bytes;
    /* lock-free */
    _Atomic(pindex *) index;
    atomic_uint_fast64_t in_use, peak_in_use, failures; /* in_use: blocks off the lists
                                                                         (handed out or cached) */
    /* thread caches */
    pthread_key_t key;                /* the plain API's per-thread bp_pool_local */
    int has_key;
    uint64_t mag_hits, mag_puts;      /* of local handles already gone */
    bp_pool_local *locals;            /* live local handles, the plain API's included (global lock) */
    atomic_uint_fast64_t reserved_hint; /* = reserved, readable without the lock */
    /* arena */
    void *arena_raw;
    uint64_t arena_bytes, arena_reserved;
    /* learned sequences (pool_learn_*) */
    int learn;                        /* options.learn: handles learn */
    struct ppat *pats;                /* every plan (global lock) */
    atomic_int n_pats;                /* how many: a failed lookup asks the plans only when > 0 */
    uint64_t learned_hits;            /* of plans and handles already gone (global lock) */
    atomic_uint_fast64_t decommits;   /* backend decommit calls (learning handles) */
};

/* --------------------------------------------------------------- classes */

uint64_t bp_pool_class_min(int k)
{
    if (k < 0) return 0;
    if (k >= NCLS) return UINT64_MAX;
    if (k < 10) return (uint64_t)MIN_QUANTUM << k;
    return (uint64_t)(256u << 10) << (2 * (k - 10));
}

static int pool_class(uint64_t sz)
{
    if (sz < MIN_QUANTUM) return 0;
    int l = 63 - __builtin_clzll(sz);
    if (l < 18) return l - 8;
    int k = 10 + (l - 18) / 2;
    return k < NCLS ? k : NCLS - 1;
}

int bp_pool_class_of(uint64_t bytes)
{
    if (bytes > UINT64_MAX - MIN_QUANTUM) return NCLS - 1;
    return pool_class(bytes <= MIN_QUANTUM ? MIN_QUANTUM : (bytes + MIN_QUANTUM - 1) & ~(uint64_t)(MIN_QUANTUM - 1));
}

static void pool_class_name(int k, char *buf, size_t n)
{
    uint64_t b = bp_pool_class_min(k);
    if (b >= (1u << 20)) snprintf(buf, n, "%" PRIu64 " MiB", b >> 20);
    else if (b >= 1024) snprintf(buf, n, "%" PRIu64 " KiB", b >> 10);
    else snprintf(buf, n, "%" PRIu64 " B", b);
}

/* ------------------------------------------------------------------ locks */

/* Test-and-test-and-set.  Critical sections are short (a list operation,
 * tens of ns), so a waiter spins with a pause hint a short while before it
 * yields (the holder may have been preempted on a loaded machine). */
static inline void pool_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline void pool_spin_lock(atomic_int *l)
{
    for (unsigned n = 0;;) {
        if (!atomic_exchange_explicit(l, 1, memory_order_acquire)) return;
        while (atomic_load_explicit(l, memory_order_relaxed)) {
            pool_cpu_relax();
            if (++n >= 64) { sched_yield(); n = 0; }
        }
    }
}
static inline void pool_spin_unlock(atomic_int *l) { atomic_store_explicit(l, 0, memory_order_release); }

static void arena_lock(parena *a)
{
    for (int k = 0; k < NCLS; k++) pool_spin_lock(&a->cls[k].lock);
}
static void arena_unlock(parena *a)
{
    for (int k = NCLS - 1; k >= 0; k--) pool_spin_unlock(&a->cls[k].lock);
}
/* Every class lock of every arena, in list order (global lock held). */
static void pool_lock_all(bp_pool *p)
{
    for (parena *a = p->arenas; a; a = a->next) arena_lock(a);
}
static void pool_unlock_all(bp_pool *p)
{
    for (parena *a = p->arenas; a; a = a->next) arena_unlock(a);
}

static inline parena *chunk_arena(const pchunk *c)
{
    return atomic_load_explicit(&((pchunk *)c)->arena, memory_order_acquire);
}

/* Locks the home class of block b (not free, so its chunk and home are
 * fixed) in the arena that owns its chunk now.  A chunk changes arena only
 * under every class lock, so the owner read again under the lock is stable. */
static pcls *pool_lock_home(const pblk *b)
{
    for (;;) {
        parena *a = chunk_arena(b->chunk);
        pcls *K = &a->cls[b->home];
        pool_spin_lock(&K->lock);
        if (atomic_load_explicit(&b->chunk->arena, memory_order_relaxed) == a) return K;
        pool_spin_unlock(&K->lock);
    }
}

/* ------------------------------------------------------------ descriptors */

#define BADDR(b) atomic_load_explicit(&(b)->addr, memory_order_relaxed)

static inline pblk *D(const bp_pool *p, uint32_t i) { return &p->slabs[i >> DESC_SHIFT][i & (DESC_SLAB - 1)]; }

/* Moves up to SPARE_BATCH descriptors to k's spare list (k locked). */
static void pool_desc_refill(bp_pool *p, pcls *k)
{
    pool_spin_lock(&p->meta);
    for (unsigned got = 0; got < SPARE_BATCH; got++) {
        uint32_t i = p->desc_free;
        if (i) {
            p->desc_free = D(p, i)->next_free;
        } else {
            if ((p->desc_next >> DESC_SHIFT) >= p->n_slabs) {
                if (p->n_slabs >= MAX_SLABS) break;
                pblk *s = bp__calloc(&p->alloc, DESC_SLAB, sizeof *s);
                if (!s) break;
                p->slabs[p->n_slabs++] = s;
            }
            i = p->desc_next++;
        }
        D(p, i)->id = i;
        D(p, i)->next_free = k->spare;
        k->spare = i;
        k->n_spare++;
    }
    pool_spin_unlock(&p->meta);
}

/* A fresh descriptor from k's spares (k locked); 0 when host memory is out. */
static uint32_t pool_desc_get(bp_pool *p, pcls *k)
{
    if (!k->spare) pool_desc_refill(p, k);
    uint32_t i = k->spare;
    if (i) {
        k->spare = D(p, i)->next_free;
        k->n_spare--;
    }
    return i;
}

static void pool_desc_put(bp_pool *p, pcls *k, uint32_t i)
{
    pblk *b = D(p, i);
    atomic_store_explicit(&b->state, BLK_DEAD, memory_order_relaxed);
    atomic_store_explicit(&b->addr, 0, memory_order_relaxed);
    b->chunk = NULL;
    if (k->n_spare < SPARE_MAX) {
        b->next_free = k->spare;
        k->spare = i;
        k->n_spare++;
        return;
    }
    pool_spin_lock(&p->meta);
    b->next_free = p->desc_free;
    p->desc_free = i;
    pool_spin_unlock(&p->meta);
}

/* ------------------------------------------------------------- free lists */

/* The page map entry of granule g of chunk c (one array, or a region's
 * leaves). */
static inline atomic_uint *chunk_slot(const pchunk *c, uint64_t g)
{
    if (__builtin_expect(c->dir != NULL, 0)) return &c->dir[g >> LEAF_SHIFT][g & (LEAF_N - 1)];
    return &c->map[g];
}

static inline void pool_map_set(const bp_pool *p, pchunk *c, uintptr_t addr, uint32_t i)
{
    atomic_store_explicit(chunk_slot(c, (addr - c->start) >> p->qshift), i, memory_order_relaxed);
}

static inline unsigned pool_bin(uint64_t size)
{
    unsigned l = 63u - (unsigned)__builtin_clzll(size | MIN_QUANTUM) - 8u;
    return l < NBINS ? l : NBINS - 1;
}

static void pool_push(bp_pool *p, pcls *k, uint32_t i)
{
    pblk *b = D(p, i);
    unsigned j = pool_bin(b->size);
    b->prev_free = 0;
    b->next_free = k->head[j];
    if (k->head[j]) D(p, k->head[j])->prev_free = i;
    if (!k->bins) atomic_fetch_or_explicit(&k->ar->nonempty, 1u << k->idx, memory_order_relaxed);
    k->head[j] = i;
    k->bins |= 1u << j;
    k->n_free++;
    k->free_bytes += b->size;
    atomic_store_explicit(&b->state, BLK_FREE, memory_order_release);
}

static void pool_unlink(bp_pool *p, pcls *k, uint32_t i)
{
    pblk *b = D(p, i);
    unsigned j = pool_bin(b->size);
    if (b->prev_free) D(p, b->prev_free)->next_free = b->next_free;
    else if (!(k->head[j] = b->next_free) && !(k->bins &= ~(1u << j)))
        atomic_fetch_and_explicit(&k->ar->nonempty, ~(1u << k->idx), memory_order_relaxed);
    if (b->next_free) D(p, b->next_free)->prev_free = b->prev_free;
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
 * seeds, 1-16 MiB requests in the region) it was the one policy with no
 * growth after warm-up, against LIFO best fit and address-ordered first
 * fit; preferring any block to the free end (dlmalloc's "top") was worse. */
static uint32_t region_fit(const bp_pool *p, const pcls *k, uint64_t sz)
{
    uint32_t best = 0;
    uint64_t best_size = UINT64_MAX;
    uintptr_t best_addr = 0;
    for (uint32_t m = k->bins & ~((1u << pool_bin(sz)) - 1); m && !best; m &= m - 1) {
        uint32_t seen = 0;
        for (uint32_t i = k->head[__builtin_ctz(m)]; i; i = D(p, i)->next_free) {
            const pblk *b = D(p, i);
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

static uint32_t pool_fit(const bp_pool *p, const pcls *k, uint64_t sz)
{
    if (k->idx == REGION_HOME && p->vm && !p->region_off) return region_fit(p, k, sz);
    unsigned j = pool_bin(sz);
    uint32_t best = 0, seen = 0;
    uint64_t best_size = UINT64_MAX;
    if (k->bins & (1u << j)) {
        for (uint32_t i = k->head[j]; i;) {
            const pblk *b = D(p, i);
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
        const pblk *b = D(p, i);
        if (b->size < best_size) { best = i; best_size = b->size; }
        if (p->max_scan && ++seen >= p->max_scan) break;
        i = b->next_free;
    }
    return best;
}

/* Free block li absorbs its physical successor ri (free, same home, off
 * every list; k = that home, locked): ri's descriptor goes back to k. */
static void pool_absorb(bp_pool *p, pcls *k, uint32_t li, uint32_t ri)
{
    pblk *l = D(p, li), *r = D(p, ri);
    l->size += r->size;
    l->next_phys = r->next_phys;
    if (r->next_phys) D(p, r->next_phys)->prev_phys = li;
    pool_map_set(p, r->chunk, BADDR(r), 0);
    pool_desc_put(p, k, ri);
}

/* Immediate coalescing: block i (off every list, about to be pushed on k,
 * its home, locked) absorbs the free neighbours after and before it (a chunk
 * has one home, so k's lock covers them).  Returns the block to push: i, or
 * its free predecessor that absorbed it. */
static uint32_t pool_coalesce(bp_pool *p, pcls *k, uint32_t i)
{
    pblk *b = D(p, i);
    uint32_t ni = b->next_phys;
    if (ni && atomic_load_explicit(&D(p, ni)->state, memory_order_acquire) == BLK_FREE && D(p, ni)->home == b->home) {
        pool_unlink(p, k, ni);
        pool_absorb(p, k, i, ni);
        k->merges++;
    }
    uint32_t pi = b->prev_phys;
    if (pi && atomic_load_explicit(&D(p, pi)->state, memory_order_acquire) == BLK_FREE && D(p, pi)->home == b->home) {
        pool_unlink(p, k, pi);
        pool_absorb(p, k, pi, i);
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
    pblk *b = D(p, i);
    uint64_t rest = 0;
    if (b->size > sz) {
        uint32_t r = pool_desc_get(p, k);
        if (r) {
            pblk *rb = D(p, r);
            atomic_store_explicit(&rb->addr, BADDR(b) + sz, memory_order_relaxed);
            rb->size = b->size - sz;
            rb->chunk = b->chunk;
            rb->home = b->home;
            rb->served = b->home;
            rb->prev_phys = i;
            rb->next_phys = b->next_phys;
            if (b->next_phys) D(p, b->next_phys)->prev_phys = r;
            b->next_phys = r;
            b->size = sz;
            pool_map_set(p, rb->chunk, BADDR(rb), r);
            pool_push(p, k, r);
            rest = rb->size;
        }
    }
    return rest;
}

static void pool_take(bp_pool *p, pcls *k, uint32_t i, uint64_t sz, int served)
{
    pblk *b = D(p, i);
    pool_unlink(p, k, i);
    pool_split(p, k, i, sz);
    b->served = (uint8_t)served;
    k->n_allocs++;
    k->lent += served != b->home;
    atomic_store_explicit(&b->state, BLK_USED, memory_order_release);
}

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
    pcls *K = pool_lock_home(D(p, i));
    pool_push(p, K, pool_coalesce(p, K, i));
    pool_spin_unlock(&K->lock);
}

/* ----------------------------------------------------- local handles */

/* A bp_pool_local is one thread's cache of freed blocks.  Bins are size
 * classes (LOC_STEPS_PER_DOUBLING geometric steps per power of two above 16
 * quanta, one bin per quantum below), so a freed block serves every request
 * of its class, not only its exact size.  A request is rounded up to its
 * class (the block is cut to that size, so blocks are interchangeable inside
 * a class: waste < 1/4 of the request); a freed block of any size goes to
 * the largest class not above its size, so every block in bin c fits every
 * request of class c.  Each bin is a singly linked stack through the
 * descriptors (pblk.lnext) of CACHED blocks, found by direct index.
 * A handle of the API (bp_pool_local_new) has no lock: other threads never
 * take blocks out of it; they set flush_req and the owner returns its cache
 * at its next call.  The plain API's per-thread cache is the same structure
 * held in the pool's pthread key with `locked` set: its owner holds `lock`
 * while it touches the bins, so a thread that grows or merges the pool can
 * return it at once. */
#define LOC_LIN 15u                    /* classes 0..14: 1..15 quanta */
#define LOC_NB 128u                    /* classes up to 2^32 quanta */
#define LOC_MAX_U (UINT64_C(1) << 31)  /* requests of at most this many quanta are binned */
#define LOC_MRU 256                    /* entries of the region -> chunk table (sets of two) */
#define LOC_REGION_SHIFT 16            /* 64 KiB: the smallest chunk */
#define LOC_MIN_CAP (8u << 20)         /* a local may always cache this much */
#define LOC_ABITS 10                   /* address -> descriptor table of recent allocations */
#define LOC_BATCH_BYTES (64u << 10)    /* a miss of a small class takes this much from the lists at once */
#define LOC_BATCH_MAX 8u               /* ... in at most this many blocks */
#define LOC_DELTA (INT64_C(4) << 20)   /* in-use change a handle keeps before the shared counter
                                          (1 MiB made every list free of a 1.5 MiB block pass it) */
#define LOC_BIG_DIV 8u                 /* a block of >= cap/8 bytes is large (loc_keep) */
#define LOC_IDLE_HITS 256u             /* an idle flush needs this many hits since the last one */
#define LOC_SMALL_KEEP (LOC_MIN_CAP / LOC_BIG_DIV) /* smaller blocks: loc_keep is the bound alone
                                          (at most REGION_NOCACHE) */

typedef struct lent { uintptr_t a; pblk *b; } lent; /* a block this handle handed out */
typedef struct lmru { uintptr_t region, lo; uint64_t len; const pchunk *c; } lmru; /* 64 KiB region -> chunk: start,
                                                                                usable (as of the index), chunk */

/* Learned sequences (see that section below). */
#define LEARN_MAX_EV (UINT32_C(1) << 19)   /* events a log may hold (it starts over at half of it) */
#define LEARN_TRIES 6                      /* logs started over or plans dropped before learning stops */
#define LEARN_MISSES 2
#define LEARN_DECOMMIT (UINT64_C(16) << 10) /* freed blocks this large give their pages back while learning */
#define LEARN_DECOMMIT_EV (UINT32_C(1) << 16) /* ... in a handle's first log, its first two segments,
                                                  and its first this many events */

typedef struct pev {                  /* one event of a plan */
    uintptr_t addr;                   /* its block */
    uint64_t lim;                     /* an allocation: its size + 1 (requests below it fit); a free: 0 */
    uint32_t slot;
} pev;

typedef struct ppat {
    struct ppat *next, *prev;         /* the pool's list (global lock) */
    bp_pool_local *owner;             /* NULL once its handle is freed (global lock) */
    uintptr_t block;                  /* the pool block holding the slots */
    uintptr_t base;                   /* slot j is at base + off[j], one quantum into the block */
    uint64_t span;                    /* the plan's arena bytes */
    uint32_t n_ev, n_slots;
    pev *pe;                          /* the events in order */
    uint64_t *off, *sz;               /* per slot: offset, rounded size */
    uint32_t *byoff;                  /* slots by offset */
    atomic_uchar *st;                 /* 1 while handed out */
    uint64_t live;                    /* slots handed out less freed by the owner, counted when it
                                         leaves the plan (owner; orphan: global lock) */
    size_t mem;                       /* host bytes */
} ppat;

typedef struct lseg {                 /* a segment of the log: from one moment with nothing live to the next */
    uint32_t end, nal;                /* events and allocations in the log up to its end */
    uint32_t pi;                      /* KMP: segments in the longest proper border of the log's segments so far */
    uint64_t h;                       /* hash of its events */
} lseg;

typedef struct lrec {                 /* a handle's recording (owner only) */
    uint64_t *code;                   /* the log: an allocation's rounded size, or a free's age << 1 | 1 */
    uint32_t n, cap, nal;             /* events, capacity, allocations */
    uint32_t seen;                    /* events since the log started, logged or not (spoilt) */
    uint64_t h;                       /* hash of the open segment's events */
    lseg *seg;
    uint32_t nseg, cseg;
    int spoilt;                       /* the log cannot be planned (restarts at the next segment's end) */
    uint32_t live;                    /* its allocations not yet freed */
    uint32_t hcap, hn;                /* live address -> allocation number (linear probing) */
    uintptr_t *hk;
    uint32_t *hv;
} lrec;

struct bp_pool_local {
    bp_pool *pool;
    void *raw;                        /* what alloc returned (the struct is 64-aligned) */
    /* a learned sequence's hit path (see "learned sequences") */
    int on;                           /* following the plan in this sequence (owner only) */
    const pev *cur, *end;             /* the plan's next event, its end */
    atomic_uchar *st;                 /* = pat->st */
    uint64_t fseen;                   /* pfree already taken off the plan's live count */
    atomic_uint_fast64_t pfree;       /* its planned blocks freed by others (global lock) */
    uint64_t quantum;
    unsigned qshift;
    int locked;                       /* the plain API's cache: owner ops under `lock` */
    uint64_t max_req;                 /* requests of 1..max_req bytes are binned */
    uint64_t bytes;                   /* cached (owner only, or under lock) */
    int64_t live;                     /* blocks it handed out less blocks freed through it (owner only) */
    uint64_t idle_hits;               /* hits at its last idle flush (local_idle) */
    uint64_t cap;                     /* bound on bytes; 0 = max(LOC_MIN_CAP, reserved / 4) */
    const pindex *ix;                 /* the chunk index the MRU entries come from */
    lmru mru[LOC_MRU];                /* 64 KiB region -> the chunks in it (2-way sets) */
    bp_pool_local *next, *prev;       /* the pool's list (global lock) */
    parena *arena;                    /* its own arena (its bins hold only blocks of it or of arena 0) */
    uint32_t since;                   /* list frees not yet added to since_compact */
    int64_t delta;                    /* change of in-use bytes not yet added to the pool's counter */
    _Alignas(64) atomic_int flush_req; /* set by other threads: return the cache */
    atomic_int lock;                  /* locked caches only */
    atomic_uint_fast64_t cached, hits, puts; /* written by the owner, read by statistics */
    atomic_int_fast64_t pending;      /* = delta, for statistics */
    uint64_t full[LOC_NB / 64];       /* bit c: bin c is not empty */
    uint32_t tick;                    /* misses so far: the clock of used[] */
    uint32_t used[LOC_NB];            /* tick of the last allocation of each class (eviction: oldest first) */
    _Alignas(64) pblk *bin[LOC_NB];
    lent atab[1u << LOC_ABITS];       /* direct-mapped by address; entries may be stale */
    /* learning (options.learn; owner only, see "learned sequences") */
    int learn;                        /* 0 off, 1 recording, 2 a plan exists */
    int misses;                       /* sequences in a row that left the plan */
    int tries;                        /* sequences or plans left before learning stops */
    struct ppat *pat;
    struct lrec *rec;
    atomic_uint_fast64_t lhits;       /* allocations served from the plan (read by statistics) */
};

/* Class of u quanta rounded down (the bin of a freed block of u quanta). */
static inline unsigned loc_floor(uint64_t u)
{
    if (u <= LOC_LIN) return (unsigned)u - 1;
    unsigned lg = 63u - (unsigned)__builtin_clzll(u);
    return LOC_LIN + (lg - 4) * 4 + (unsigned)((u >> (lg - 2)) & 3);
}
/* Quanta of class c. */
static inline uint64_t loc_units(unsigned c)
{
    if (c < LOC_LIN) return c + 1;
    unsigned lg = 4 + (c - LOC_LIN) / 4, j = (c - LOC_LIN) % 4;
    return (uint64_t)(4 + j) << (lg - 2);
}
/* Class of a request of u quanta (rounded up). */
static inline unsigned loc_ceil(uint64_t u)
{
    unsigned c = loc_floor(u);
    return c + (loc_units(c) < u);
}

/* Asks every unlocked local handle that holds blocks to return its cache
 * at its next call (global lock held); locked ones are returned by
 * pool_mag_flush_all. */
static void pool_locals_request_flush(bp_pool *p)
{
    for (bp_pool_local *l = p->locals; l; l = l->next)
        if (!l->locked && atomic_load_explicit(&l->cached, memory_order_relaxed))
            atomic_store_explicit(&l->flush_req, 1, memory_order_relaxed);
}

/* The plain API's thread caches (defined with the local handles' calls). */
static void pool_mag_flush_all(bp_pool *p);
static uint64_t pool_cached_bytes(bp_pool *p);
static uint32_t pool_mag_get(bp_pool *p, bp_pool_local *l, unsigned bc);
static bool pool_mag_put(bp_pool *p, bp_pool_local *l, pblk *b);
static inline uint64_t region_size(const bp_pool_local *l, uint64_t q, uint64_t sz);
static bp_pool_local *pool_mag(bp_pool *p);
static void local_flush(bp_pool_local *l);
static void local_idle(bp_pool_local *l);
static uint64_t local_batch(bp_pool_local *l, pcls *K, uint64_t sz, int c);
static void local_account(bp_pool_local *l, int64_t d);
static void pool_mag_exit(void *v);
static void learn_boundary(bp_pool_local *l);
static void learn_rec_free(bp_pool *p, lrec *r);
static uint64_t pool_trim(bp_pool *p, parena *only);
static void learn_release(bp_pool_local *l);
static void learn_leave(bp_pool_local *l);

/* ---------------------------------------------------------------- merging */

/* Merges every free block with the free blocks after it of the same home,
 * in the chunks of arena `only` (NULL: every arena).  Global lock and the
 * class locks of those arenas held. */
static void pool_merge_locked(bp_pool *p, parena *only)
{
    for (parena *a = p->arenas; a; a = a->next)
        if (!only || a == only) atomic_store_explicit(&a->since_compact, 0, memory_order_relaxed);
    p->compactions++;
    for (size_t j = 0; j < p->n_chunks; j++) {
        pchunk *ch = p->chunks[j];
        if (!ch->live) continue;
        parena *a = chunk_arena(ch);
        if (only && a != only) continue;
        for (uint32_t i = ch->first; i; i = D(p, i)->next_phys) {
            pblk *b = D(p, i);
            if (atomic_load_explicit(&b->state, memory_order_acquire) != BLK_FREE) continue;
            pcls *K = &a->cls[b->home];
            bool moved = false;
            while (b->next_phys) {
                uint32_t ni = b->next_phys;
                pblk *n = D(p, ni);
                if (atomic_load_explicit(&n->state, memory_order_acquire) != BLK_FREE || n->home != b->home) break;
                if (!moved) { pool_unlink(p, K, i); moved = true; } /* its size bin changes */
                pool_unlink(p, K, ni);
                pool_absorb(p, K, i, ni);
                p->merges++;
            }
            if (moved) pool_push(p, K, i);
        }
    }
}

/* Anything freed since the last pass, in any arena (global lock held). */
static bool pool_merge_due(const bp_pool *p)
{
    for (parena *a = p->arenas; a; a = a->next)
        if (atomic_load_explicit(&a->since_compact, memory_order_relaxed)) return true;
    return false;
}

void bp_pool_compact(bp_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->global);
    pool_mag_flush_all(p);
    pool_locals_request_flush(p);
    pool_lock_all(p);
    pool_merge_locked(p, NULL);
    pool_unlock_all(p);
    pthread_mutex_unlock(&p->global);
}

/* The merge interval of arena a has passed: a pass over a's chunks only
 * (its own class locks, so other arenas' threads do not wait). */
static void pool_maybe_compact(bp_pool *p, parena *a)
{
    if (pthread_mutex_trylock(&p->global) != 0) return; /* someone else is at it */
    arena_lock(a);
    if (atomic_load_explicit(&a->since_compact, memory_order_relaxed) >= p->compact_interval) pool_merge_locked(p, a);
    arena_unlock(a);
    pthread_mutex_unlock(&p->global);
}

/* ----------------------------------------------------------------- chunks */

/* Frees chunk c's page map (the array, or a region's directory and
 * leaves); returns its bytes. */
static uint64_t pool_map_free(bp_pool *p, pchunk *c)
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
static void pool_chunk_release(bp_pool *p, pchunk *c)
{
    p->be.release(p->be.ctx, (void *)c->base, (size_t)(c->va ? c->va : c->bytes));
}

static bool pool_index_rebuild(bp_pool *p)
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
static const struct pindex_e *pool_index_find(const pindex *ix, uintptr_t a)
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

static pchunk *pool_find_chunk(const bp_pool *p, uintptr_t a)
{
    const struct pindex_e *e = pool_index_find(atomic_load_explicit(&((bp_pool *)p)->index, memory_order_acquire), a);
    return e ? e->c : NULL;
}

/* Smallest piece a class grows by: 16 blocks of its largest size, at most
 * grow_bytes; large requests get exactly what they need. */
static uint64_t pool_grow_min(const bp_pool *p, const parena *a, int c)
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
    if (pool_index_rebuild(p)) return true;
    p->n_chunks--;
    pool_spin_lock(&K->lock);
    pool_desc_put(p, K, i);
    pool_spin_unlock(&K->lock);
    return false;
}

/* Reserves a chunk of `bytes` usable bytes for arena a, homed at class c;
 * its one block is returned off-list (state DEAD).  Global lock held.
 * Returns the descriptor or 0; *why says which resource ran out. */
static uint32_t pool_grow(bp_pool *p, parena *a, int c, uint64_t bytes, bp_status *why)
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
        pool_spin_lock(&K->lock);
        i = pool_desc_get(p, K);
        pool_spin_unlock(&K->lock);
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
    pblk *b = D(p, i);
    atomic_store_explicit(&b->addr, start, memory_order_relaxed);
    b->size = usable;
    b->chunk = ch;
    b->home = b->served = (uint8_t)c;
    b->prev_phys = b->next_phys = 0;
    pool_map_set(p, ch, start, i);
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
    while (D(p, t)->next_phys) t = D(p, t)->next_phys;
    return t;
}

/* Bytes of t that a growth at the end would merge with: all of it when it
 * is free and of the region's home. */
static uint64_t region_tail_free(const bp_pool *p, uint32_t t)
{
    const pblk *b = D(p, t);
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
 * returned off-list (state DEAD), as pool_grow does.  0 and *why = BP_OK
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
            pool_spin_lock(&K->lock);
            i = pool_desc_get(p, K);
            pool_spin_unlock(&K->lock);
        }
    }
    if (i && p->vm->commit(p->be.ctx, base, (size_t)first) != 0) {
        p->os_calls++;
        *why = BP_ERR_EXHAUSTED;
        pool_spin_lock(&K->lock);
        pool_desc_put(p, K, i);
        pool_spin_unlock(&K->lock);
        i = 0;
    } else if (i) {
        p->os_calls++;
        ch->bytes = first;
        if (!pool_chunk_link(p, a, ch, K, i)) i = 0;
    }
    if (!i) {
        if (ch) {
            p->meta_bytes -= pool_map_free(p, ch);
            bp__free(&p->alloc, ch, sizeof *ch);
        }
        p->be.release(p->be.ctx, base, (size_t)va);
        p->os_calls++;
        return 0;
    }
    p->meta_bytes += sizeof *ch;
    pool_count_reserve(p, a, first);
    p->usable += ch->usable;
    pblk *b = D(p, i);
    atomic_store_explicit(&b->addr, ch->start, memory_order_relaxed);
    b->size = ch->usable;
    b->chunk = ch;
    b->home = b->served = REGION_HOME;
    b->prev_phys = b->next_phys = 0;
    pool_map_set(p, ch, ch->start, i);
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
    pool_lock_all(p);
    uint64_t have = region_tail_free(p, region_last(p, ch));
    pool_unlock_all(p);
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
        pool_spin_lock(&K->lock);
        n = pool_desc_get(p, K);
        pool_spin_unlock(&K->lock);
        if (!n) return 0;
        ch->usable = new_end - ch->start;
        if (!pool_index_rebuild(p)) {
            ch->usable = end - ch->start; /* committed, tiled by a later growth */
            pool_spin_lock(&K->lock);
            pool_desc_put(p, K, n);
            pool_spin_unlock(&K->lock);
            return 0;
        }
        p->usable += new_end - end;
    }
    pool_lock_all(p);
    uint32_t t = region_last(p, ch), r = 0;
    pblk *tb = D(p, t);
    if (region_tail_free(p, t)) {
        pool_unlink(p, K, t);
        tb->size += new_end - end;
        r = t;
        if (n) pool_desc_put(p, K, n);
    } else if (n) {
        pblk *nb = D(p, n);
        atomic_store_explicit(&nb->addr, end, memory_order_relaxed);
        nb->size = new_end - end;
        nb->chunk = ch;
        nb->home = nb->served = REGION_HOME;
        nb->prev_phys = t;
        nb->next_phys = 0;
        tb->next_phys = n;
        pool_map_set(p, ch, end, n);
        r = n;
    }
    if (r && D(p, r)->size < sz) {
        /* the free end was taken meanwhile (another thread's shared-arena
         * allocation): it stays free, the caller grows again */
        pool_push(p, K, r);
        r = 0;
    }
    if (r) atomic_store_explicit(&D(p, r)->state, BLK_DEAD, memory_order_relaxed);
    pool_unlock_all(p);
    *why = BP_OK;
    return r;
}

static void pool_chunk_move(bp_pool *p, pchunk *ch, parena *a);

/* A block of at least sz bytes from arena a's region, grown or made for it
 * (off-list, state DEAD: the caller pushes and takes it under its home's
 * lock).  0 and *why = BP_OK when there is no region (the caller grows by
 * chunks); else *why says what ran out.  Global lock held, no class lock. */
static uint32_t pool_region_grow(bp_pool *p, parena *a, uint64_t sz, bp_status *why)
{
    *why = BP_OK;
    if (!p->vm || p->region_off) return 0;
    pchunk *ch = a->region;
    if (ch && (!ch->live || chunk_arena(ch) != a)) ch = a->region = NULL;
    if (!ch && a != &p->shared) {
        /* a freed handle's region (now the shared arena's) is taken over
         * before new address space is reserved: a program that makes a
         * handle per request would otherwise leave one region per handle,
         * its committed memory usable only by what the shared lists serve */
        for (size_t j = 0; j < p->n_chunks && !ch; j++) {
            pchunk *c = p->chunks[j];
            if (c->live && c->va && c != p->shared.region && chunk_arena(c) == &p->shared) ch = c;
        }
        if (ch) {
            pool_lock_all(p);
            pool_chunk_move(p, ch, a);
            pool_unlock_all(p);
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
static void pool_chunk_move(bp_pool *p, pchunk *ch, parena *a)
{
    parena *from = chunk_arena(ch);
    if (from == a) return;
    for (uint32_t i = ch->first; i; i = D(p, i)->next_phys) {
        pblk *b = D(p, i);
        if (atomic_load_explicit(&b->state, memory_order_acquire) != BLK_FREE) continue;
        pool_unlink(p, &from->cls[b->home], i);
        pool_push(p, &a->cls[b->home], i);
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
static uint32_t pool_steal_chunk(bp_pool *p, parena *a, int c, uint64_t sz, bool any)
{
    uint32_t best = 0;
    uint64_t best_size = UINT64_MAX;
    pchunk *bc = NULL;
    for (size_t j = 0; j < p->n_chunks; j++) {
        pchunk *ch = p->chunks[j];
        if (!ch->live) continue;
        parena *o = chunk_arena(ch);
        if (!any && o != a && o != &p->shared) continue;
        pblk *b = D(p, ch->first);
        if (atomic_load_explicit(&b->state, memory_order_acquire) == BLK_FREE && !b->next_phys &&
            b->size >= sz && b->size < best_size) {
            best = ch->first;
            best_size = b->size;
            bc = ch;
        }
    }
    if (!best) return 0;
    pool_chunk_move(p, bc, a);
    /* a chunk of a smaller class changes home; one of a larger class (from
     * another arena) keeps it, and its pieces are borrowed as usual */
    if (D(p, best)->home < c) {
        pool_unlink(p, &a->cls[D(p, best)->home], best);
        D(p, best)->home = (uint8_t)c;
        pool_push(p, &a->cls[c], best);
    }
    return best;
}

/* ------------------------------------------------------------- allocation */

static bp_status pool_exhausted(bp_pool *p, uint64_t bytes, uint64_t sz, int c, bp_status why, bp_error *err)
{
    /* global lock held */
    uint64_t free_b = 0, largest = 0, nfree = 0;
    pool_lock_all(p);
    for (parena *a = p->arenas; a; a = a->next)
        for (int k = 0; k < NCLS; k++) {
            pcls *K = &a->cls[k];
            free_b += K->free_bytes;
            nfree += K->n_free;
            if (K->bins) {
                uint32_t i = K->head[31 - __builtin_clz(K->bins)];
                for (; i; i = D(p, i)->next_free)
                    if (D(p, i)->size > largest) largest = D(p, i)->size;
            }
        }
    pool_unlock_all(p);
    atomic_fetch_add_explicit(&p->failures, 1, memory_order_relaxed);
    char cname[32], limit[48];
    pool_class_name(c, cname, sizeof cname);
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
        uint32_t i = K->bins ? pool_fit(p, K, sz) : 0;
        if (i) {
            pool_take(p, K, i, sz, c);
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
static bp_status pool_alloc_slow(bp_pool *p, parena *a, bp_pool_local *l, uint64_t bytes, uint64_t sz, int c,
                                 void **ptr, bp_error *err)
{
    pthread_mutex_lock(&p->global);
    pool_lock_all(p);
    if (pool_merge_due(p)) pool_merge_locked(p, NULL);
    pcls *K = NULL;
    uint32_t i = pool_search(p, a, c, sz, &K);
    if (!i && a != &p->shared) i = pool_search(p, &p->shared, c, sz, &K);
    /* not another live arena's free chunk: it is free only between its
     * thread's uses, and taking it makes that thread borrow or grow later,
     * so the pool's growth would depend on how the threads interleave */
    if (!i) i = pool_steal_chunk(p, a, c, sz, false);
    if (i && !K) pool_take(p, K = &a->cls[D(p, i)->home], i, sz, c);
    /* a handle's miss takes its batch here too */
    uint64_t extra = i && l ? local_batch(l, K, sz, c) : 0;
    pool_unlock_all(p);
    if (!i) {
        bp_status why = BP_OK;
        uint32_t b = c >= REGION_CLASS ? pool_region_grow(p, a, sz, &why) : 0;
        if (!b && why == BP_OK) {
            uint64_t g = pool_grow_min(p, a, c);
            uint64_t want = bp__align_up(sz > g ? sz : g, p->be.granularity);
            uint64_t exact = bp__align_up(sz, p->be.granularity);
            b = pool_grow(p, a, c, want, &why);
            if (!b && why == BP_ERR_EXHAUSTED && exact < want) b = pool_grow(p, a, c, exact, &why);
        }
        if (b) {
            K = &chunk_arena(D(p, b)->chunk)->cls[D(p, b)->home];
            pool_spin_lock(&K->lock);
            pool_push(p, K, b);
            pool_take(p, K, b, sz, c);
            if (l) extra = local_batch(l, K, sz, c);
            pool_spin_unlock(&K->lock);
            i = b;
        } else if (why == BP_ERR_EXHAUSTED) {
            pool_mag_flush_all(p);
            pool_locals_request_flush(p);
            pool_lock_all(p);
            pool_merge_locked(p, NULL);
            /* an entirely free chunk of any arena moves to a whole, else a
             * piece of any arena's lists (it stays that arena's) */
            if ((i = pool_steal_chunk(p, a, c, sz, true))) pool_take(p, K = &a->cls[D(p, i)->home], i, sz, c);
            for (parena *o = p->arenas; o && !i; o = o->next) i = pool_search(p, o, c, sz, &K);
            pool_unlock_all(p);
        }
        if (!i) {
            bp_status s = pool_exhausted(p, bytes, sz, c, why, err);
            pthread_mutex_unlock(&p->global);
            return s;
        }
    }
    pthread_mutex_unlock(&p->global);
    if (l) local_account(l, (int64_t)(D(p, i)->size + extra));
    else pool_account_alloc(p, D(p, i)->size);
    *ptr = (void *)BADDR(D(p, i));
    return BP_OK;
}

/* Arena a's lists, own class then larger ones (borrowing), one class lock
 * at a time: the first fit is taken for class c and its list's class stays
 * locked (*Kp) for the caller.  0 when no list has a fit (nothing locked). */
static uint32_t arena_take(bp_pool *p, parena *a, uint64_t sz, int c, pcls **Kp)
{
    unsigned mask = atomic_load_explicit(&a->nonempty, memory_order_relaxed) >> c;
    for (int k = c; mask; k++, mask >>= 1) {
        if (!(mask & 1)) continue;
        pcls *K = &a->cls[k];
        pool_spin_lock(&K->lock);
        uint32_t i = K->bins ? pool_fit(p, K, sz) : 0;
        if (i) {
            pool_take(p, K, i, sz, c);
            *Kp = K;
            return i;
        }
        pool_spin_unlock(&K->lock);
    }
    return 0;
}

/* arena_take, the block USED and counted in use. */
static uint32_t arena_alloc_lists(bp_pool *p, parena *a, uint64_t sz, int c)
{
    pcls *K = NULL;
    uint32_t i = arena_take(p, a, sz, c, &K);
    if (i) {
        pool_spin_unlock(&K->lock);
        pool_account_alloc(p, D(p, i)->size);
    }
    return i;
}

/* Arena a's lists, then the shared arena's. */
static uint32_t pool_alloc_lists(bp_pool *p, parena *a, uint64_t sz, int c)
{
    uint32_t i = arena_alloc_lists(p, a, sz, c);
    if (!i && a != &p->shared) i = arena_alloc_lists(p, &p->shared, sz, c);
    return i;
}

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
        bc = loc_ceil(sz >> p->qshift);
        sz = loc_units(bc) << p->qshift;
        uint32_t h = l ? pool_mag_get(p, l, bc) : 0;
        if (h) {
            l->live++;
            *ptr = (void *)BADDR(D(p, h));
            return BP_OK;
        }
    }
    if (l && bc < LOC_NB) sz = region_size(l, (req + p->quantum - 1) & ~(p->quantum - 1), sz);
    int c = pool_class(sz);
    uint32_t i = pool_alloc_lists(p, a, sz, c);
    if (!i && l && atomic_load_explicit(&l->cached, memory_order_relaxed)) {
        /* before the slow path, this thread's cache goes back to the lists */
        pool_spin_lock(&l->lock);
        local_flush(l);
        pool_spin_unlock(&l->lock);
        i = pool_alloc_lists(p, a, sz, c);
    }
    if (!i) {
        bp_status s = pool_alloc_slow(p, a, NULL, bytes, sz, c, ptr, err);
        if (s) return s;
    } else
        *ptr = (void *)BADDR(D(p, i));
    if (l) l->live++;
    return BP_OK;
}

static bp_status learn_free_any(bp_pool *p, bp_pool_local *l, void *ptr, bp_error *err);
static uint64_t learn_block_bytes(bp_pool *p, const void *ptr);

/* The descriptor of the live block at ptr, or 0. */
static uint32_t pool_lookup(const bp_pool *p, const void *ptr)
{
    uintptr_t a = (uintptr_t)ptr;
    pchunk *c = pool_find_chunk(p, a);
    if (!c || ((a - c->start) & (p->quantum - 1))) return 0;
    uint32_t i = atomic_load_explicit(chunk_slot(c, (a - c->start) >> p->qshift), memory_order_relaxed);
    return i && BADDR(D(p, i)) == a ? i : 0;
}

/* A block of exactly sz (class c) for arena a: its lists (and the shared
 * arena's), else merging, borrowing or growth; no cache is involved.  *i
 * its descriptor. */
static bp_status pool_alloc_uncached(bp_pool *p, parena *a, uint64_t bytes, uint64_t sz, int c, uint32_t *i,
                                     bp_error *err)
{
    void *ptr = NULL;
    if ((*i = pool_alloc_lists(p, a, sz, c))) return BP_OK;
    bp_status s = pool_alloc_slow(p, a, NULL, bytes, sz, c, &ptr, err);
    if (!s) *i = pool_lookup(p, ptr);
    return s;
}

/* One more dealloc towards arena a's next merge pass. */
static void pool_count_dealloc(bp_pool *p, parena *a)
{
    if (p->compact_interval &&
        atomic_fetch_add_explicit(&a->since_compact, 1, memory_order_relaxed) + 1 >= p->compact_interval)
        pool_maybe_compact(p, a);
    else if (!p->compact_interval)
        atomic_fetch_add_explicit(&a->since_compact, 1, memory_order_relaxed);
}

/* Block i (GOING, off every list) goes to its home's free list in the
 * arena that owns its chunk; count: take it off the in-use count and add it
 * to that arena's merge interval (else the caller, a local handle, does
 * both in batches). */
static void pool_free_to_list_n(bp_pool *p, uint32_t i, uint64_t size, int count)
{
    pcls *K = pool_lock_home(D(p, i));
    parena *a = K->ar;
    pool_push(p, K, pool_coalesce(p, K, i));
    K->n_deallocs++;
    pool_spin_unlock(&K->lock);
    if (count) {
        atomic_fetch_sub_explicit(&p->in_use, size, memory_order_relaxed);
        pool_count_dealloc(p, a);
    }
}

bp_status bp_pool_dealloc(bp_pool *p, void *ptr, bp_error *err)
{
    if (!ptr) return BP_OK;
    if (!p) return bp__err(err, BP_ERR_USAGE, "pool: dealloc: NULL pool");
    uint32_t i = pool_lookup(p, ptr);
    pblk *b = i ? D(p, i) : NULL;
    if (!b && atomic_load_explicit(&p->n_pats, memory_order_relaxed)) return learn_free_any(p, NULL, ptr, err);
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
        pool_count_dealloc(p, l->arena);
    } else
        pool_free_to_list_n(p, i, size, 1);
    if (l && !--l->live) local_idle(l);
    return BP_OK;
}

uint64_t bp_pool_block_bytes(bp_pool *p, const void *ptr)
{
    if (!p || !ptr) return 0;
    uint32_t i = pool_lookup(p, ptr);
    if (!i && atomic_load_explicit(&p->n_pats, memory_order_relaxed)) return learn_block_bytes(p, ptr);
    if (!i || atomic_load_explicit(&D(p, i)->state, memory_order_acquire) != BLK_USED) return 0;
    return D(p, i)->size;
}

/* ------------------------------------------------- local handles: calls */

static inline void loc_set(atomic_uint_fast64_t *a, uint64_t v) { atomic_store_explicit(a, v, memory_order_relaxed); }
static inline void loc_inc(atomic_uint_fast64_t *a) { loc_set(a, atomic_load_explicit(a, memory_order_relaxed) + 1); }

static inline void loc_push(bp_pool_local *l, pblk *b, unsigned c)
{
    b->lnext = l->bin[c];
    l->bin[c] = b;
    l->full[c / 64] |= UINT64_C(1) << (c % 64);
    l->bytes += b->size;
}

static inline pblk *loc_pop(bp_pool_local *l, unsigned c)
{
    pblk *b = l->bin[c];
    if (!(l->bin[c] = b->lnext)) l->full[c / 64] &= ~(UINT64_C(1) << (c % 64));
    l->bytes -= b->size;
    return b;
}

static inline uint64_t loc_cap(const bp_pool_local *l)
{
    if (l->cap) return l->cap;
    uint64_t cap = atomic_load_explicit(&l->pool->reserved_hint, memory_order_relaxed) / 4;
    return cap < LOC_MIN_CAP ? LOC_MIN_CAP : cap;
}

/* May a freed block of `size` bytes go to bin c of a cache bounded by cap?
 * Within the bound; and while the bound is the floor LOC_MIN_CAP (a small
 * pool, default bound), a large block (>= cap/LOC_BIG_DIV) joins a bin
 * that already holds one only while the cache stays within a quarter of
 * the memory its bins draw from (its arena's and the shared arena's).  The
 * floor lets a small pool cache most of its memory, which pays for its many
 * small blocks; a few large ones cached per class would pin it instead, in
 * sizes the next requests may not ask for, and those requests would carve
 * pages no earlier pass touched (mobilenet_v2: footprint 13.9 -> 8.9 MiB,
 * the warm-up's 8.8; resnet50 12.0 -> 8.7).  Such a block goes to its list
 * and merges there.  (Applied to large pools too, the rule made the
 * synthetic trace grow more: its lists fragment where the bins kept large
 * blocks whole.) */
static inline bool loc_keep(const bp_pool_local *l, uint64_t size, unsigned c, uint64_t cap)
{
    if (l->bytes + size > cap) return false;
    if (l->cap || cap > LOC_MIN_CAP || size < cap / LOC_BIG_DIV || !l->bin[c]) return true;
    uint64_t mine = atomic_load_explicit(&l->arena->reserved, memory_order_relaxed) +
                    atomic_load_explicit(&l->pool->shared.reserved, memory_order_relaxed);
    return l->bytes + size <= mine / 4;
}

/* A large block of a region is not cached: it goes back to the region's
 * list at once and merges with its free neighbours there (cached, such
 * blocks pinned memory in sizes the next requests did not ask for: the
 * synthetic trace's footprint was 176 MiB instead of 136, with growth after
 * warm-up, measured while the region served the 1 MiB class too).  Except in a small pool (cache bound at its floor), where the
 * caches hold most of the pool anyway and the rule cost mobilenet_v2 list
 * round trips and a growth after warm-up.
 * The plain API's cache keeps no region block at all: the pieces smaller
 * classes borrow from the region are not cached either.  Cached, they stayed
 * where the warm-up had cut them until something returned the cache (each
 * bp_pool_get_stats does, and compact and trim); then they merged back, the
 * next requests cut them again by address-ordered best fit, between free
 * large blocks, and a 16 MiB request found no fit: one region growth after
 * warm-up (synthetic trace; reserved 148.4 MiB, now 131.0, for about 8%
 * more instructions per plain call).  Handles keep such pieces: statistics leave a
 * handle's cache alone, and on their hit path the round trips cost 15-19%
 * (synthetic: 146.3 -> 131.0 MiB). */
_Static_assert(LOC_SMALL_KEEP <= REGION_NOCACHE, "the dealloc fast path skips region_nocache below LOC_SMALL_KEEP");
static inline bool region_nocache(const bp_pool_local *l, const pblk *b)
{
    return (b->size >= REGION_NOCACHE || l->locked) && b->chunk->va && loc_cap(l) > LOC_MIN_CAP;
}

/* The size of a request of q bytes (quantum-rounded) whose cache class
 * rounded it to sz: for a region request (class REGION_CLASS and up) in a
 * pool past the small-pool floor, q rounded to REGION_GRAIN only.  Such
 * blocks are never cached there (region_nocache), so the class rounding
 * (up to a quarter, 11% on average) bought nothing and only spread the
 * region: the transformer trace's 196.3 MiB block took 224 MiB (peak
 * reserved 236 -> 208.4 MiB), and on the synthetic trace the handles'
 * footprint fell from 147.0 to 133.6 MiB.  64 KiB rather than the quantum:
 * with exact sizes the synthetic trace grew once after warm-up through a
 * handle (slivers of a few KiB between blocks). */
static inline uint64_t region_size(const bp_pool_local *l, uint64_t q, uint64_t sz)
{
    const bp_pool *p = l->pool;
    if (pool_class(q) < REGION_CLASS || !p->vm || p->region_off || loc_cap(l) <= LOC_MIN_CAP) return sz;
    q = bp__align_up(q, REGION_GRAIN);
    return q < sz ? q : sz;
}

/* In-use bytes change through a handle's misses and list frees: the change
 * goes to the pool's shared counter (a contended line when threads miss at
 * the same time) once it passes LOC_DELTA either way; statistics add the
 * handles' pending changes, and the peak may miss up to LOC_DELTA per
 * handle. */
static void local_delta_flush(bp_pool_local *l)
{
    bp_pool *p = l->pool;
    if (l->delta > 0) pool_account_alloc(p, (uint64_t)l->delta);
    else if (l->delta < 0) atomic_fetch_sub_explicit(&p->in_use, (uint64_t)-l->delta, memory_order_relaxed);
    l->delta = 0;
    atomic_store_explicit(&l->pending, 0, memory_order_relaxed);
}

static void local_account(bp_pool_local *l, int64_t d)
{
    l->delta += d;
    if (l->delta > LOC_DELTA || l->delta < -LOC_DELTA) local_delta_flush(l);
    else atomic_store_explicit(&l->pending, l->delta, memory_order_relaxed);
}

/* Returns every cached block to its home's list (the owner's thread, or
 * anyone holding a locked cache's lock). */
static __attribute__((noinline)) void local_flush(bp_pool_local *l)
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
    loc_set(&l->cached, 0);
    local_delta_flush(l);
    /* they count towards the next merge pass now */
    atomic_fetch_add_explicit(&l->arena->since_compact, n, memory_order_relaxed);
}

void bp_pool_local_flush(bp_pool_local *l)
{
    if (l) local_flush(l);
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
static __attribute__((noinline)) void local_idle(bp_pool_local *l)
{
    if (l->learn == 2) learn_boundary(l);
    uint64_t hits = atomic_load_explicit(&l->hits, memory_order_relaxed);
    if (hits - l->idle_hits < LOC_IDLE_HITS || loc_cap(l) <= LOC_MIN_CAP) return;
    l->idle_hits = hits;
    /* a locked cache's bytes are read under its lock (another thread may
     * be returning it); local_flush returns at once when it is empty */
    if (l->locked) pool_spin_lock(&l->lock);
    local_flush(l);
    if (l->locked) pool_spin_unlock(&l->lock);
}

static void arena_init(parena *a, int id)
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
        arena_init(a, ++p->n_arenas);
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
    pool_lock_all(p);
    for (size_t j = 0; j < p->n_chunks; j++)
        if (p->chunks[j]->live && chunk_arena(p->chunks[j]) == a) pool_chunk_move(p, p->chunks[j], &p->shared);
    pool_unlock_all(p);
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

static void local_struct_free(bp_pool *p, bp_pool_local *l)
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
    if (p->learn && !locked) {
        l->rec = bp__calloc(&p->alloc, 1, sizeof *l->rec);
        l->learn = l->rec != NULL;
        l->tries = LEARN_TRIES;
    }
    pthread_mutex_lock(&p->global);
    l->arena = arena_get(p);
    if (!l->arena) {
        pthread_mutex_unlock(&p->global);
        learn_rec_free(p, l->rec);
        local_struct_free(p, l);
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
    learn_release(l);
    local_flush(l);
    local_delta_flush(l);
    pthread_mutex_lock(&p->global);
    local_unlink(p, l);
    pthread_mutex_unlock(&p->global);
    local_struct_free(p, l);
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
    const struct pindex_e *x = pool_index_find(ix, a);
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

static inline unsigned loc_ahash(const bp_pool_local *l, uintptr_t a)
{
    return (unsigned)((((uint64_t)a >> l->qshift) * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - LOC_ABITS));
}

/* The block at a: first the address table of this handle's own
 * allocations.  An entry may be stale (the block was freed elsewhere and its
 * descriptor reused), so it counts only if the descriptor still starts at
 * a: while the caller's block lives at a, no other descriptor can. */
static uint32_t local_lookup(bp_pool_local *l, uintptr_t a);
static inline pblk *local_find(bp_pool_local *l, uintptr_t a)
{
    const lent *t = &l->atab[loc_ahash(l, a)];
    if (__builtin_expect(t->a == a && BADDR(t->b) == a, 1)) return t->b;
    uint32_t i = local_lookup(l, a);
    return i ? D(l->pool, i) : NULL;
}

static __attribute__((noinline)) uint32_t local_lookup(bp_pool_local *l, uintptr_t a)
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
    uint32_t i = atomic_load_explicit(chunk_slot(e->c, off >> l->qshift), memory_order_relaxed);
    return i && BADDR(D(l->pool, i)) == a ? i : 0;
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
        pool_maybe_compact(p, a);
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
        if (!K || &chunk_arena(b->chunk)->cls[b->home] != K) {
            if (K) pool_spin_unlock(&K->lock);
            K = pool_lock_home(b);
        }
        bytes += b->size; /* before: merging changes it */
        pool_push(p, K, pool_coalesce(p, K, b->id));
        b = next;
    }
    if (K) pool_spin_unlock(&K->lock);
    l->bin[c] = NULL;
    l->full[c / 64] &= ~(UINT64_C(1) << (c % 64));
    l->bytes -= bytes;
    loc_set(&l->cached, l->bytes);
    local_account(l, -(int64_t)bytes);
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

/* The batch of a miss of a small class: up to LOC_BATCH_BYTES of blocks of
 * size sz in all (at most LOC_BATCH_MAX, within the handle's bound) come off
 * the list of K (locked) that served the first; they go to the bins.
 * Returns their bytes (the caller counts them in use). */
static uint64_t local_batch(bp_pool_local *l, pcls *K, uint64_t sz, int c)
{
    if (sz > LOC_BATCH_BYTES / 2) return 0; /* a batch of one: the block the caller took */
    bp_pool *p = l->pool;
    uint64_t cap = loc_cap(l);
    unsigned n = (unsigned)(LOC_BATCH_BYTES / sz);
    if (n > LOC_BATCH_MAX) n = LOC_BATCH_MAX;
    while (n > 1 && l->bytes + (n - 1) * sz > cap) n--;
    uint64_t got = 0;
    unsigned m = 1;
    for (; m < n; m++) {
        uint32_t x = pool_fit(p, K, sz);
        if (!x) break;
        pool_take(p, K, x, sz, c);
        pblk *xb = D(p, x);
        atomic_store_explicit(&xb->state, BLK_CACHED, memory_order_relaxed);
        got += xb->size;
        loc_push(l, xb, loc_floor(xb->size >> l->qshift));
    }
    if (m > 1) {
        loc_set(&l->cached, l->bytes);
        loc_set(&l->puts, atomic_load_explicit(&l->puts, memory_order_relaxed) + m - 1);
    }
    return got;
}

/* arena_take plus a batch of the same list under the same lock. */
static uint32_t local_lists_in(bp_pool_local *l, parena *a, uint64_t sz, int c)
{
    bp_pool *p = l->pool;
    pcls *K = NULL;
    uint32_t i = arena_take(p, a, sz, c, &K);
    if (i) {
        uint64_t got = D(p, i)->size + local_batch(l, K, sz, c);
        pool_spin_unlock(&K->lock);
        local_account(l, (int64_t)got);
    }
    return i;
}

/* The lists of its own arena, then of the shared one: own class then larger
 * ones, with a batch (local_batch).  (Batches that doubled with every miss of a bin, as
 * tcmalloc's slow start, were tried: on randwire hits rose from 77% to 93%
 * but the extra blocks carved and evicted unused cost more than the misses
 * they saved.)  0 when no list has a fit. */
static uint32_t local_lists(bp_pool_local *l, uint64_t sz, int c)
{
    bp_pool *p = l->pool;
    uint32_t i = local_lists_in(l, l->arena, sz, c);
    if (!i && l->arena != &p->shared) i = local_lists_in(l, &p->shared, sz, c);
    return i;
}

static inline bp_status local_alloc_general(bp_pool_local *l, uint64_t bytes, void **ptr, bp_error *err);

/* Block i goes out through handle l: one more live block, its address in
 * the table of the handle's recent allocations. */
static bp_status local_hand_out(bp_pool_local *l, uint32_t i, void **ptr)
{
    pblk *b = D(l->pool, i);
    uintptr_t a = BADDR(b);
    lent *t = &l->atab[loc_ahash(l, a)];
    l->live++;
    t->a = a;
    t->b = b;
    *ptr = (void *)a;
    return BP_OK;
}
static inline bp_status local_dealloc_general(bp_pool_local *l, void *ptr, bp_error *err);

static __attribute__((noinline)) bp_status local_alloc_slow(bp_pool_local *l, uint64_t bytes, void **ptr,
                                                            bp_error *err)
{
    if (!ptr || !l) {
        if (ptr) *ptr = NULL;
        return bp__err(err, BP_ERR_USAGE, "pool: local alloc: NULL %s", ptr ? "handle" : "output pointer");
    }
    *ptr = NULL;
    bp_pool *p = l->pool;
    if (atomic_load_explicit(&l->flush_req, memory_order_relaxed)) {
        local_flush(l);
        if (bytes && bytes <= l->max_req) return local_alloc_general(l, bytes, ptr, err);
    }
    if (!bytes) return local_alloc_general(l, 1, ptr, err); /* 0 counts as 1 */
    if (bytes > UINT64_MAX - p->quantum) {
        atomic_fetch_add_explicit(&p->failures, 1, memory_order_relaxed);
        return bp__err(err, BP_ERR_EXHAUSTED, "pool (%s): cannot allocate %" PRIu64 " bytes: larger than any pool",
                       p->be.name ? p->be.name : "backend", bytes);
    }
    uint64_t sz = (bytes + p->quantum - 1) & ~(p->quantum - 1);
    unsigned bc = LOC_NB;               /* not binned: huge requests keep their exact size */
    if (bytes <= l->max_req) {
        bc = loc_ceil(sz >> l->qshift);
        sz = region_size(l, sz, loc_units(bc) << l->qshift);
    }
    int c = pool_class(sz);
    uint32_t i = 0;
    /* 1. a cached block of the next class up, whole (no lock), when it is
     * no larger than that class (so at most one step more than asked) */
    if (bc + 1 < LOC_NB && l->bin[bc + 1] && l->bin[bc + 1]->size == loc_units(bc + 1) << l->qshift) {
        pblk *b = loc_pop(l, bc + 1);
        loc_set(&l->cached, l->bytes);
        loc_inc(&l->hits);
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
        i = pool_alloc_lists(p, l->arena, sz, c);
        if (!i && l->bytes) {
            /* before the pool merges or grows, this thread's cache goes back */
            local_flush(l);
            i = pool_alloc_lists(p, l->arena, sz, c);
        }
    }
    if (!i) {
        bp_status s = pool_alloc_slow(p, l->arena, bc < LOC_NB ? l : NULL, bytes, sz, c, ptr, err);
        if (s) return s;
        i = local_lookup(l, (uintptr_t)*ptr);
    }
    return local_hand_out(l, i, ptr);
}

static inline bp_status local_alloc_general(bp_pool_local *l, uint64_t bytes, void **ptr, bp_error *err)
{
    /* the hit path: the request's class bin, no lock, no atomic
     * read-modify-write; everything else (NULL arguments, 0 bytes, huge
     * requests, a flush request, a miss) is local_alloc_slow */
    if (__builtin_expect(!ptr || !l || bytes - 1 >= l->max_req || atomic_load_explicit(&l->flush_req,
                                                                   memory_order_relaxed), 0))
        return local_alloc_slow(l, bytes, ptr, err);
    unsigned c = loc_ceil((bytes + l->quantum - 1) >> l->qshift);
    if (__builtin_expect(!l->bin[c], 0)) return local_alloc_slow(l, bytes, ptr, err);
    l->used[c] = l->tick;
    l->live++;
    pblk *b = loc_pop(l, c);
    loc_set(&l->cached, l->bytes);
    loc_inc(&l->hits);
    atomic_store_explicit(&b->state, BLK_USED, memory_order_relaxed);
    uintptr_t a = BADDR(b);
    lent *t = &l->atab[loc_ahash(l, a)];
    t->a = a;
    t->b = b;
    *ptr = (void *)a;
    return BP_OK;
}

/* Not the common case: a NULL handle, a flush request, a bad pointer, a full
 * cache.  i: the block's descriptor when the fast path found one. */
static __attribute__((noinline)) bp_status local_dealloc_slow(bp_pool_local *l, void *ptr, uint32_t i, bp_error *err)
{
    if (!l) return bp__err(err, BP_ERR_USAGE, "pool: local dealloc: NULL handle");
    bp_pool *p = l->pool;
    pblk *b = i ? D(p, i) : NULL;
    if (!b && atomic_load_explicit(&p->n_pats, memory_order_relaxed)) return learn_free_any(p, l, ptr, err);
    unsigned char st = BLK_USED;
    if (!b || !atomic_compare_exchange_strong_explicit(&b->state, &st, BLK_GOING, memory_order_acq_rel,
                                                       memory_order_relaxed))
        return bp__err(err, BP_ERR_USAGE, "pool: dealloc of %p: not a live block of this pool "
                                          "(double free, interior or foreign pointer)", ptr);
    if (atomic_load_explicit(&l->flush_req, memory_order_relaxed)) {
        local_flush(l);
        atomic_store_explicit(&b->state, BLK_USED, memory_order_relaxed);
        return local_dealloc_general(l, ptr, err);
    }
    /* cache full, a huge block, or a block of another thread's arena: to
     * its home list in its arena, like a plain dealloc; counted for the
     * merge interval in batches (the shared counter is a contended line
     * when several handles free at once) */
    if (p->seed_bug) b->home = b->served;
    uint64_t size = b->size;
    pool_free_to_list_n(p, i, size, 0);
    local_account(l, -(int64_t)size);
    local_count_frees(l, 1);
    if (!--l->live) local_idle(l);
    return BP_OK;
}

static inline bp_status local_dealloc_general(bp_pool_local *l, void *ptr, bp_error *err)
{
    if (__builtin_expect(!l || atomic_load_explicit(&l->flush_req, memory_order_relaxed), 0))
        return local_dealloc_slow(l, ptr, l ? local_lookup(l, (uintptr_t)ptr) : 0, err);
    pblk *b = local_find(l, (uintptr_t)ptr);
    /* the owner frees its block: no other thread changes its state now, so a
     * plain load is enough to catch a double free from this thread */
    if (__builtin_expect(!b || atomic_load_explicit(&b->state, memory_order_relaxed) != BLK_USED, 0))
        return local_dealloc_slow(l, ptr, 0, err);
    uint64_t size = b->size, u = size >> l->qshift;
    bp_pool *p = l->pool;
    /* the bins keep blocks of this handle's arena and of the shared one;
     * another arena's block goes back to that arena (a remote free) */
    parena *a = chunk_arena(b->chunk);
    if (__builtin_expect(a != l->arena && a != &p->shared, 0)) return local_dealloc_slow(l, ptr, b->id, err);
    uint64_t cap = loc_cap(l);
    /* below LOC_SMALL_KEEP bytes a block is neither large for loc_keep (the
     * bound is LOC_MIN_CAP or more, or set by the user) nor a region block
     * kept out of the cache, so the bound is its one test */
    if (__builtin_expect(size >= LOC_SMALL_KEEP || l->bytes + size > cap, 0)) {
        if (u >= 2 * LOC_MAX_U || region_nocache(l, b) || !loc_keep(l, size, loc_floor(u), cap))
            return local_dealloc_slow(l, ptr, b->id, err);
    }
    unsigned c = loc_floor(u);
    if (__builtin_expect(p->seed_bug, 0)) b->home = b->served;
    atomic_store_explicit(&b->state, BLK_CACHED, memory_order_relaxed);
    loc_push(l, b, c);
    loc_set(&l->cached, l->bytes);
    loc_inc(&l->puts);
    if (__builtin_expect(!--l->live, 0)) local_idle(l);
    return BP_OK;
}

/* ------------------------------------------------------ learned sequences */

/*
 * A handle of a pool made with options.learn logs its own calls: an
 * allocation as its size rounded to the quantum, a free as its block's age
 * (allocations since it), so equal stretches of calls log equally.  A
 * segment of the log ends whenever nothing it allocated is live.  At each
 * segment's end, KMP's prefix function over the segments finds the log's
 * period: when the last p segments repeat the p before them, they are the
 * sequence (one run of a model, one training step), and the handle plans it
 * as bufplan plans a graph: lifetimes in event order, bestfit offsets, one
 * pool block of the plan's arena (after giving back to the backend what its
 * own arena holds entirely free).  Later repetitions are served from the
 * plan while every call matches it: an allocation takes the next slot's
 * address when its size fits, a free must be of the expected block.  Every
 * served event matched, so the program's lifetimes are the plan's and a
 * slot's bytes are free when it is handed out.  The first call that does
 * not match leaves the plan for the rest of that repetition (the pool
 * serves it as usual; planned blocks still live are found by address when
 * freed); when nothing is live again the plan is tried from its start, and
 * after LEARN_MISSES repetitions in a row that left it, it is dropped and
 * learning starts over.  A log starts over at a segment's end when it has
 * no period after LEARN_MAX_EV / 2 events or saw a free of a block it did
 * not record; after LEARN_TRIES of those (or of dropped plans), or a full
 * log, learning stops.  While the first log records, the handle's blocks
 * come from the lists at quantum size and freed ones give their pages back
 * (learn_dealloc), so learning holds about what the sequence has live.
 *
 * Planned blocks may be freed anywhere (another handle, the plain API):
 * such a free finds the plan in the pool's list under the global lock,
 * marks the slot free and counts it in the owner's pfree, which the owner
 * compares at every planned call, so it leaves the plan.  A plan whose
 * handle is freed while some of its blocks live stays until the last one
 * is freed.  (ONNX Runtime's memory patterns do the same at its executor.)
 */
static void learn_rec_free(bp_pool *p, lrec *r)
{
    if (!r) return;
    bp__free(&p->alloc, r->code, (size_t)r->cap * sizeof *r->code);
    bp__free(&p->alloc, r->seg, (size_t)r->cseg * sizeof *r->seg);
    bp__free(&p->alloc, r->hk, (size_t)r->hcap * sizeof *r->hk);
    bp__free(&p->alloc, r->hv, (size_t)r->hcap * sizeof *r->hv);
    bp__free(&p->alloc, r, sizeof *r);
}

/* Learning stops for good (out of memory, or nothing repeats). */
static void learn_off(bp_pool_local *l)
{
    learn_rec_free(l->pool, l->rec);
    l->rec = NULL;
    if (!l->pat) l->learn = 0;
    l->tries = 0;
}

/* Room for `need` elements of `size` bytes in *a (capacity *cap). */
static bool learn_grow(bp_pool *p, void **a, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap) return true;
    uint32_t n = *cap ? *cap : 256;
    while (n < need) n *= 2;
    void *x = bp__realloc(&p->alloc, *a, (size_t)*cap * size, (size_t)n * size);
    if (!x) return false;
    *a = x;
    *cap = n;
    return true;
}

static inline uint32_t learn_hash(uintptr_t a, uint32_t cap)
{
    return (uint32_t)((((uint64_t)a >> 8) * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (cap - 1);
}

/* a -> v; *had = 1 when a was there already (its value is replaced) */
static bool learn_hput(bp_pool *p, lrec *r, uintptr_t a, uint32_t v, int *had)
{
    if (r->hcap) {
        uint32_t h = learn_hash(a, r->hcap);
        while (r->hk[h] && r->hk[h] != a) h = (h + 1) & (r->hcap - 1);
        if (r->hk[h]) {
            r->hv[h] = v;
            *had = 1;
            return true;
        }
    }
    if (2 * (r->hn + 1) > r->hcap) {
        uint32_t oc = r->hcap, nc = oc ? 2 * oc : 64;
        uintptr_t *k = bp__calloc(&p->alloc, nc, sizeof *k);
        uint32_t *w = bp__alloc(&p->alloc, (size_t)nc * sizeof *w);
        if (!k || !w) {
            bp__free(&p->alloc, k, (size_t)nc * sizeof *k);
            bp__free(&p->alloc, w, (size_t)nc * sizeof *w);
            return false;
        }
        for (uint32_t i = 0; i < oc; i++) {
            if (!r->hk[i]) continue;
            uint32_t h = learn_hash(r->hk[i], nc);
            while (k[h]) h = (h + 1) & (nc - 1);
            k[h] = r->hk[i];
            w[h] = r->hv[i];
        }
        bp__free(&p->alloc, r->hk, (size_t)oc * sizeof *r->hk);
        bp__free(&p->alloc, r->hv, (size_t)oc * sizeof *r->hv);
        r->hk = k;
        r->hv = w;
        r->hcap = nc;
    }
    uint32_t h = learn_hash(a, r->hcap);
    while (r->hk[h]) h = (h + 1) & (r->hcap - 1);
    r->hk[h] = a;
    r->hv[h] = v;
    r->hn++;
    return true;
}

/* Takes a out of the table; its value, or UINT32_MAX when absent. */
static uint32_t learn_hdel(lrec *r, uintptr_t a)
{
    if (!r->hcap) return UINT32_MAX;
    uint32_t m = r->hcap - 1, h = learn_hash(a, r->hcap);
    while (r->hk[h] && r->hk[h] != a) h = (h + 1) & m;
    if (!r->hk[h]) return UINT32_MAX;
    uint32_t v = r->hv[h];
    r->hn--;
    /* backward-shift deletion: no tombstones */
    for (uint32_t j = (h + 1) & m; r->hk[j]; j = (j + 1) & m) {
        uint32_t want = learn_hash(r->hk[j], r->hcap);
        if (((j - want) & m) >= ((j - h) & m)) {
            r->hk[h] = r->hk[j];
            r->hv[h] = r->hv[j];
            h = j;
        }
    }
    r->hk[h] = 0;
    return v;
}

/* Appends an event; false when the log is full (no moment with nothing
 * live in LEARN_MAX_EV events: blocks it recorded are freed elsewhere, or
 * the sequence is too long to learn) or memory for it cannot be had. */
static bool learn_log(bp_pool *p, lrec *r, uint64_t code)
{
    if (++r->seen > LEARN_MAX_EV) return false;
    if (r->spoilt) return true;
    void *c = r->code;
    if (!learn_grow(p, &c, &r->cap, r->n + 1, sizeof *r->code)) return false;
    r->code = c;
    r->code[r->n++] = code;
    r->h = (r->h ^ code) * UINT64_C(0x100000001B3);
    return true;
}

/* Frees plan q's host memory and its block (no lock held; q is off the
 * pool's list). */
static void learn_pat_destroy(bp_pool *p, ppat *q)
{
    if (q->block) {
        uint32_t i = pool_lookup(p, (void *)q->block);
        unsigned char st = BLK_USED;
        if (i && atomic_compare_exchange_strong_explicit(&D(p, i)->state, &st, BLK_GOING, memory_order_acq_rel,
                                                         memory_order_relaxed))
            pool_free_to_list_n(p, i, D(p, i)->size, 1);
    }
    bp__free(&p->alloc, q->pe, (size_t)q->n_ev * sizeof *q->pe);
    bp__free(&p->alloc, q->off, (size_t)q->n_slots * sizeof *q->off);
    bp__free(&p->alloc, q->sz, (size_t)q->n_slots * sizeof *q->sz);
    bp__free(&p->alloc, q->byoff, (size_t)q->n_slots * sizeof *q->byoff);
    bp__free(&p->alloc, (void *)q->st, (size_t)q->n_slots * sizeof *q->st);
    bp__free(&p->alloc, q, sizeof *q);
}

/* Off the pool's list (global lock held). */
static void learn_pat_unlink(bp_pool *p, ppat *q)
{
    if (q->prev) q->prev->next = q->next;
    else p->pats = q->next;
    if (q->next) q->next->prev = q->prev;
    p->meta_bytes -= q->mem;
    atomic_fetch_sub_explicit(&p->n_pats, 1, memory_order_relaxed);
}

/* The owner takes the plan's foreign frees off its live count. */
static inline void learn_sync(bp_pool_local *l)
{
    ppat *q = l->pat;
    uint64_t f = atomic_load_explicit(&l->pfree, memory_order_acquire);
    q->live -= f - l->fseen;
    l->fseen = f;
}

/* Drops the plan (none of its blocks live) and starts recording again, if
 * tries are left. */
static void learn_drop(bp_pool_local *l)
{
    bp_pool *p = l->pool;
    ppat *q = l->pat;
    pthread_mutex_lock(&p->global);
    learn_pat_unlink(p, q);
    pthread_mutex_unlock(&p->global);
    learn_pat_destroy(p, q);
    l->pat = NULL;
    l->on = 0;
    l->learn = 1;
    if (--l->tries <= 0) { learn_off(l); return; }
    if (!l->rec) {
        l->rec = bp__calloc(&p->alloc, 1, sizeof *l->rec);
        if (!l->rec) learn_off(l);
    }
}

/* Nothing this handle handed out is live (l->live == 0, called from
 * local_idle) or a planned block was freed off the plan: with a plan, the
 * next sequence may start on it. */
static void learn_boundary(bp_pool_local *l)
{
    if (l->learn != 2 || l->on) return;
    learn_sync(l);
    if (l->live || l->pat->live) return;
    if (l->misses >= LEARN_MISSES) { learn_drop(l); return; }
    l->on = 1;
    l->cur = l->pat->pe;
}

typedef struct { uint64_t off; uint32_t j; } learn_ofs;

static int learn_cmp_off(const void *a, const void *b)
{
    const learn_ofs *x = a, *y = b;
    return x->off != y->off ? (x->off < y->off ? -1 : 1) : (x->j > y->j) - (x->j < y->j);
}

/* Plans the log's events [e0, n), which start and end with nothing live
 * and hold n allocations.  False when it cannot (out of memory, the pool
 * cannot hold the plan's block); the caller stops learning then. */
static bool learn_plan(bp_pool_local *l, uint32_t e0, uint32_t n)
{
    bp_pool *p = l->pool;
    lrec *r = l->rec;
    uint32_t m = r->n - e0;
    uint32_t *ev = bp__alloc(&p->alloc, (size_t)m * sizeof *ev);
    ppat *q = bp__calloc(&p->alloc, 1, sizeof *q);
    bp_interval *iv = bp__alloc(&p->alloc, (size_t)n * sizeof *iv);
    if (!q || !iv || !ev) goto fail;
    q->n_ev = m;
    q->n_slots = n;
    q->pe = bp__alloc(&p->alloc, (size_t)m * sizeof *q->pe);
    q->off = bp__alloc(&p->alloc, (size_t)n * sizeof *q->off);
    q->sz = bp__alloc(&p->alloc, (size_t)n * sizeof *q->sz);
    q->byoff = bp__alloc(&p->alloc, (size_t)n * sizeof *q->byoff);
    q->st = bp__calloc(&p->alloc, n, sizeof *q->st);
    if (!q->pe || !q->off || !q->sz || !q->byoff || !q->st) goto fail;
    /* slots in the order of their allocations; a free names its block by
     * age (allocations since it) */
    uint32_t na = 0;
    for (uint32_t k = 0; k < m; k++) {
        uint64_t c = r->code[e0 + k];
        if (c & 1) ev[k] = ((na - (uint32_t)(c >> 1)) << 1) | 1;
        else {
            q->sz[na] = c;
            ev[k] = na++ << 1;
        }
    }
    for (uint32_t k = 0; k < m; k++) {
        uint32_t j = ev[k] >> 1;
        if (ev[k] & 1) iv[j].upper = k;
        else {
            iv[j].lower = k;
            iv[j].size = q->sz[j];
            iv[j].alignment = p->quantum;
            iv[j].fixed_offset = BP_NO_OFFSET;
        }
    }
    bp_assign_options ao;
    bp_assign_options_init(&ao);
    ao.alloc = &p->alloc;
    bp_assign_result res;
    if (bp_assign_intervals(iv, n, BP_ASSIGN_BESTFIT, &ao, q->off, &res, NULL) != BP_OK) goto fail;
    bp__free(&p->alloc, iv, (size_t)n * sizeof *iv);
    iv = NULL;
    learn_ofs *so = bp__alloc(&p->alloc, (size_t)n * sizeof *so);
    if (!so) goto fail;
    for (uint32_t j = 0; j < n; j++) so[j] = (learn_ofs){q->off[j], j};
    qsort(so, n, sizeof *so, learn_cmp_off);
    for (uint32_t j = 0; j < n; j++) q->byoff[j] = so[j].j;
    bp__free(&p->alloc, so, (size_t)n * sizeof *so);
    q->span = res.arena_bytes;
    q->mem = sizeof *q + (size_t)m * sizeof *q->pe + (size_t)n * (3 * sizeof(uint64_t) + sizeof(uint32_t) + 1);
    /* the handle's arena gives back what it holds entirely free, then the
     * plan's block comes from it: one piece of the sequence's peak instead
     * of what the size classes held while learning */
    local_flush(l);
    (void)pool_trim(p, l->arena);
    /* the exact size, not a cache class: it is never cached */
    uint64_t sz = q->span + p->quantum;
    uint32_t i;
    if (pool_alloc_uncached(p, l->arena, sz, sz, pool_class(sz), &i, NULL) != BP_OK) goto fail;
    q->block = BADDR(D(p, i));
    q->base = q->block + p->quantum;
    for (uint32_t k = 0; k < m; k++) {
        uint32_t j = ev[k] >> 1;
        q->pe[k] = (pev){q->base + q->off[j], ev[k] & 1 ? 0 : q->sz[j] + 1, j};
    }
    q->owner = l;
    pthread_mutex_lock(&p->global);
    q->next = p->pats;
    if (p->pats) p->pats->prev = q;
    p->pats = q;
    p->meta_bytes += q->mem;
    atomic_fetch_add_explicit(&p->n_pats, 1, memory_order_relaxed);
    pthread_mutex_unlock(&p->global);
    bp__free(&p->alloc, ev, (size_t)m * sizeof *ev);
    learn_rec_free(p, r);
    l->rec = NULL;
    l->pat = q;
    l->st = q->st;
    l->cur = q->pe;
    l->end = q->pe + q->n_ev;
    l->learn = 2;
    l->on = 1;
    l->misses = 0;
    l->fseen = atomic_load_explicit(&l->pfree, memory_order_relaxed);
    return true;
fail:
    bp__free(&p->alloc, iv, (size_t)n * sizeof *iv);
    bp__free(&p->alloc, ev, (size_t)m * sizeof *ev);
    if (q) learn_pat_destroy(p, q);
    return false;
}

/* Segments a and b of the log hold the same events. */
static bool learn_seg_eq(const lrec *r, uint32_t a, uint32_t b)
{
    uint32_t a0 = a ? r->seg[a - 1].end : 0, b0 = b ? r->seg[b - 1].end : 0;
    uint32_t len = r->seg[a].end - a0;
    return r->seg[a].h == r->seg[b].h && r->seg[b].end - b0 == len &&
           !memcmp(r->code + a0, r->code + b0, (size_t)len * sizeof *r->code);
}

static void learn_log_reset(bp_pool_local *l)
{
    lrec *r = l->rec;
    r->n = r->nal = r->nseg = r->seen = 0;
    r->h = 0;
    r->spoilt = 0;
    if (--l->tries <= 0) learn_off(l);
}

/* Nothing the log allocated is live: a segment ends.  The log's segments
 * s_0 .. s_t are matched against themselves (KMP's prefix function over
 * segments): when the last p segments repeat the p before them and p is
 * the log's period, those p segments are the sequence, and it is planned.
 * A sequence that has moments with nothing live is several segments. */
static void learn_seg_end(bp_pool_local *l)
{
    bp_pool *p = l->pool;
    lrec *r = l->rec;
    if (r->spoilt) { learn_log_reset(l); return; }
    void *sg = r->seg;
    if (!learn_grow(p, &sg, &r->cseg, r->nseg + 1, sizeof *r->seg)) { learn_off(l); return; }
    r->seg = sg;
    uint32_t t = r->nseg++;
    r->seg[t] = (lseg){r->n, r->nal, 0, r->h};
    r->h = 0;
    uint32_t k = t ? r->seg[t - 1].pi : 0;
    while (k > 0 && !learn_seg_eq(r, t, k)) k = r->seg[k - 1].pi;
    if (t > 0 && learn_seg_eq(r, t, k)) k++;
    r->seg[t].pi = k;
    uint32_t per = t + 1 - k;
    if (k >= per) {
        /* segments [t + 1 - per, t] repeat the ones before them */
        uint32_t w = t + 1 - per;
        uint32_t e0 = r->seg[w - 1].end, n = r->nal - r->seg[w - 1].nal;
        if (!learn_plan(l, e0, n)) learn_off(l);
        return;
    }
    if (r->n >= LEARN_MAX_EV / 2) learn_log_reset(l); /* no repetition in sight: start over */
}

static void learn_note_alloc(bp_pool_local *l, uint64_t bytes, void *ptr)
{
    bp_pool *p = l->pool;
    lrec *r = l->rec;
    int had = 0;
    if (!learn_hput(p, r, (uintptr_t)ptr, r->nal, &had)) { learn_off(l); return; }
    /* the block recorded at this address was freed elsewhere */
    if (had) r->spoilt = 1;
    else r->live++;
    r->nal++;
    uint64_t b = bytes ? bytes : 1;
    if (!learn_log(p, r, (b + p->quantum - 1) & ~(p->quantum - 1))) learn_off(l);
}

/* After ptr (not a planned block) was freed through the handle. */
static void learn_note_free(bp_pool_local *l, void *ptr)
{
    lrec *r = l->rec;
    uint32_t j = learn_hdel(r, (uintptr_t)ptr);
    if (j == UINT32_MAX) { r->spoilt = 1; return; } /* not allocated since the log started */
    if (!learn_log(l->pool, r, ((uint64_t)(r->nal - j) << 1) | 1)) { learn_off(l); return; }
    if (!--r->live) learn_seg_end(l);
}

/* The live slot of plan q at address a, or UINT32_MAX. */
static uint32_t learn_find(const ppat *q, uintptr_t a)
{
    if (a < q->base || a - q->base >= q->span) return UINT32_MAX;
    uint64_t o = a - q->base;
    size_t lo = 0, hi = q->n_slots;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (q->off[q->byoff[mid]] < o) lo = mid + 1;
        else hi = mid;
    }
    for (; lo < q->n_slots && q->off[q->byoff[lo]] == o; lo++)
        if (atomic_load_explicit(&q->st[q->byoff[lo]], memory_order_acquire)) return q->byoff[lo];
    return UINT32_MAX;
}

/* A free that is not the plan's next event, of a planned block or not:
 * through the owner (l, its plan) without a lock, else through the pool's
 * list of plans. */
static bp_status learn_free_any(bp_pool *p, bp_pool_local *l, void *ptr, bp_error *err)
{
    uintptr_t a = (uintptr_t)ptr;
    if (l && l->pat && a >= l->pat->base && a - l->pat->base < l->pat->span) {
        ppat *q = l->pat;
        if (l->on) learn_leave(l);
        uint32_t j = learn_find(q, a);
        if (j == UINT32_MAX)
            return bp__err(err, BP_ERR_USAGE, "pool: dealloc of %p: not a live block of this pool "
                                              "(double free or interior pointer in a learned sequence)", ptr);
        atomic_store_explicit(&q->st[j], 0, memory_order_relaxed);
        q->live--;
        learn_boundary(l);
        return BP_OK;
    }
    pthread_mutex_lock(&p->global);
    ppat *q = p->pats;
    while (q && !(a >= q->base && a - q->base < q->span)) q = q->next;
    uint32_t j = q ? learn_find(q, a) : UINT32_MAX;
    unsigned char one = 1;
    if (j == UINT32_MAX ||
        !atomic_compare_exchange_strong_explicit(&q->st[j], &one, 0, memory_order_acq_rel, memory_order_relaxed)) {
        pthread_mutex_unlock(&p->global);
        return bp__err(err, BP_ERR_USAGE, "pool: dealloc of %p: not a live block of this pool "
                                          "(double free, interior or foreign pointer)", ptr);
    }
    bool dead = false;
    if (q->owner) atomic_fetch_add_explicit(&q->owner->pfree, 1, memory_order_release);
    else if (!--q->live) {
        learn_pat_unlink(p, q);
        dead = true;
    }
    pthread_mutex_unlock(&p->global);
    if (dead) learn_pat_destroy(p, q);
    return BP_OK;
}

static uint64_t learn_block_bytes(bp_pool *p, const void *ptr)
{
    uintptr_t a = (uintptr_t)ptr;
    uint64_t n = 0;
    pthread_mutex_lock(&p->global);
    for (ppat *q = p->pats; q; q = q->next) {
        uint32_t j = learn_find(q, a);
        if (j != UINT32_MAX) { n = q->sz[j]; break; }
    }
    pthread_mutex_unlock(&p->global);
    return n;
}

/* A handle is freed: its recording goes; its plan too, or, while some of
 * its blocks live, it stays until the last one is freed. */
static void learn_release(bp_pool_local *l)
{
    bp_pool *p = l->pool;
    learn_rec_free(p, l->rec);
    l->rec = NULL;
    ppat *q = l->pat;
    if (!q) return;
    if (l->on) learn_leave(l); /* counts its live blocks */
    pthread_mutex_lock(&p->global);
    learn_sync(l); /* under the lock: no foreign free counts after it */
    bool dead = !q->live;
    if (dead) learn_pat_unlink(p, q);
    else q->owner = NULL;
    pthread_mutex_unlock(&p->global);
    l->pat = NULL;
    if (dead) learn_pat_destroy(p, q);
}

/* The sequence ran to the plan's end: the next one may start on it. */
static __attribute__((noinline)) void learn_wrap(bp_pool_local *l)
{
    l->cur = l->pat->pe;
    l->misses = 0;
    loc_set(&l->lhits, atomic_load_explicit(&l->lhits, memory_order_relaxed) + l->pat->n_slots);
}

/* A call that is not the plan's next event: the rest of this sequence is
 * served by the pool.  The plan's blocks handed out and not freed through
 * it are counted now (the hit path keeps no count). */
static void learn_leave(bp_pool_local *l)
{
    ppat *q = l->pat;
    uint64_t na = 0, pos = (uint64_t)(l->cur - q->pe);
    for (uint64_t k = 0; k < pos; k++) na += q->pe[k].lim != 0;
    q->live = 2 * na - pos; /* allocations less frees */
    loc_set(&l->lhits, atomic_load_explicit(&l->lhits, memory_order_relaxed) + na);
    l->on = 0;
    l->misses++;
}

/* While a handle records, its blocks come from the lists at their size
 * rounded to the quantum only, and go back there when freed, where they
 * merge: nothing is cached, so a block freed early in a sequence serves any
 * later request that fits, and what the handle holds while learning stays
 * near what the sequence has live. */
static bp_status learn_alloc_lists(bp_pool_local *l, uint64_t bytes, void **ptr, bp_error *err)
{
    bp_pool *p = l->pool;
    uint64_t req = bytes ? bytes : 1;
    if (req > UINT64_MAX - p->quantum) return local_alloc_general(l, bytes, ptr, err);
    if (l->bytes) local_flush(l);
    uint64_t sz = (req + p->quantum - 1) & ~(p->quantum - 1);
    uint32_t i;
    bp_status s = pool_alloc_uncached(p, l->arena, bytes, sz, pool_class(sz), &i, err);
    return s ? s : local_hand_out(l, i, ptr);
}

/* Not the plan's next allocation (or recording). */
static __attribute__((noinline)) bp_status learn_alloc(bp_pool_local *l, uint64_t bytes, void **ptr, bp_error *err)
{
    if (!ptr) return local_alloc_general(l, bytes, ptr, err);
    if (l->on) learn_leave(l);
    bp_status s = l->rec && l->learn == 1 ? learn_alloc_lists(l, bytes, ptr, err) : local_alloc_general(l, bytes, ptr, err);
    if (s == BP_OK && l->rec && l->learn == 1) learn_note_alloc(l, bytes, *ptr);
    return s;
}

static __attribute__((noinline)) bp_status learn_dealloc(bp_pool_local *l, void *ptr, bp_error *err)
{
    if (l->on) learn_leave(l);
    uintptr_t a = (uintptr_t)ptr;
    if (l->pat && a >= l->pat->base && a - l->pat->base < l->pat->span) return learn_free_any(l->pool, l, ptr, err);
    if (!l->rec || l->learn != 1) return local_dealloc_general(l, ptr, err);
    /* recorded once freed (the sequence may end here, and its plan is
     * made with nothing live); a bad pointer spoils the sequence */
    pblk *b = local_find(l, a);
    bp_pool *p = l->pool;
    /* while a handle learns (its first log: two segments, at most
     * LEARN_DECOMMIT_EV events, so a handle whose calls never repeat or
     * whose blocks are freed elsewhere stops soon), a freed block's pages go
     * back to the OS before it goes back to the lists (after that another
     * thread may use it) */
    if (b && p->vm && p->vm->decommit && b->size >= LEARN_DECOMMIT && l->tries == LEARN_TRIES &&
        !l->rec->spoilt && l->rec->nseg < 2 && l->rec->seen < LEARN_DECOMMIT_EV &&
        atomic_load_explicit(&b->state, memory_order_relaxed) == BLK_USED &&
        p->vm->decommit(p->be.ctx, ptr, (size_t)b->size))
        atomic_fetch_add_explicit(&p->decommits, 1, memory_order_relaxed);
    bp_status s = local_dealloc_slow(l, ptr, b ? b->id : 0, err);
    if (s == BP_OK && l->rec) learn_note_free(l, ptr);
    else if (l->rec) l->rec->spoilt = 1;
    return s;
}

bp_status bp_pool_local_alloc(bp_pool_local *l, uint64_t bytes, void **ptr, bp_error *err)
{
    if (__builtin_expect(l && l->on, 0)) {
        /* a learned sequence: this must be its next event, an allocation
         * that fits the slot, and no planned block was freed elsewhere */
        const pev *e = l->cur;
        if (__builtin_expect(ptr && bytes < e->lim &&
                             atomic_load_explicit(&l->pfree, memory_order_relaxed) == l->fseen, 1)) {
            atomic_store_explicit(&l->st[e->slot], 1, memory_order_relaxed);
            if (__builtin_expect((l->cur = e + 1) == l->end, 0)) learn_wrap(l);
            *ptr = (void *)e->addr;
            return BP_OK;
        }
        return learn_alloc(l, bytes, ptr, err);
    }
    if (__builtin_expect(l && l->learn, 0)) return learn_alloc(l, bytes, ptr, err);
    return local_alloc_general(l, bytes, ptr, err);
}

bp_status bp_pool_local_dealloc(bp_pool_local *l, void *ptr, bp_error *err)
{
    if (!ptr) return BP_OK;
    if (__builtin_expect(l && l->on, 0)) {
        /* a learned sequence: this must be its next event, this block's free */
        const pev *e = l->cur;
        if (__builtin_expect((uintptr_t)ptr == e->addr && !e->lim &&
                             atomic_load_explicit(&l->pfree, memory_order_relaxed) == l->fseen, 1)) {
            atomic_store_explicit(&l->st[e->slot], 0, memory_order_relaxed);
            if (__builtin_expect((l->cur = e + 1) == l->end, 0)) learn_wrap(l);
            return BP_OK;
        }
        return learn_dealloc(l, ptr, err);
    }
    if (__builtin_expect(l && l->learn, 0)) return learn_dealloc(l, ptr, err);
    return local_dealloc_general(l, ptr, err);
}

/* ------------------------------------------- the plain API's thread cache */

/* pthread key destructor: the thread is gone, its cache goes home. */
static void pool_mag_exit(void *v)
{
    bp_pool_local *l = v;
    bp_pool *p = l->pool;
    pthread_mutex_lock(&p->global);
    pool_spin_lock(&l->lock);
    local_flush(l);
    pool_spin_unlock(&l->lock);
    local_unlink(p, l);
    pthread_mutex_unlock(&p->global);
    local_struct_free(p, l);
}

/* The calling thread's locked cache, made on first use; NULL without one. */
static bp_pool_local *pool_mag(bp_pool *p)
{
    if (!p->has_key) return NULL;
    bp_pool_local *l = pthread_getspecific(p->key);
    if (l) return l;
    l = local_create(p, 0, 1);
    if (l && pthread_setspecific(p->key, l) != 0) {
        pool_mag_exit(l);
        return NULL;
    }
    return l;
}

/* Returns every locked cache to the lists (global lock held, no class lock
 * held); unlocked handles are asked to (pool_locals_request_flush). */
static void pool_mag_flush_all(bp_pool *p)
{
    for (bp_pool_local *l = p->locals; l; l = l->next) {
        if (!l->locked) continue;
        pool_spin_lock(&l->lock);
        local_flush(l);
        pool_spin_unlock(&l->lock);
    }
}

/* Bytes in every cache (global lock held). */
static uint64_t pool_cached_bytes(bp_pool *p)
{
    uint64_t n = 0;
    for (bp_pool_local *l = p->locals; l; l = l->next) n += atomic_load_explicit(&l->cached, memory_order_relaxed);
    return n;
}

/* Plain alloc from the calling thread's cache l: the request's class or
 * the next one up.  0 on a miss. */
static uint32_t pool_mag_get(bp_pool *p, bp_pool_local *l, unsigned bc)
{
    pool_spin_lock(&l->lock);
    unsigned c = l->bin[bc]                                                                      ? bc
                 : bc + 1 < LOC_NB && l->bin[bc + 1] && l->bin[bc + 1]->size == loc_units(bc + 1) << p->qshift ? bc + 1
                                                                                                   : LOC_NB;
    if (c == LOC_NB) {
        pool_spin_unlock(&l->lock);
        return 0;
    }
    pblk *b = loc_pop(l, c);
    loc_set(&l->cached, l->bytes);
    loc_inc(&l->hits);
    atomic_store_explicit(&b->state, BLK_USED, memory_order_relaxed);
    pool_spin_unlock(&l->lock);
    return b->id;
}

/* Plain dealloc into the calling thread's cache l (b is GOING, ours): only
 * blocks of l's arena or the shared one, within the bound. */
static bool pool_mag_put(bp_pool *p, bp_pool_local *l, pblk *b)
{
    uint64_t u = b->size >> p->qshift;
    if (u >= 2 * LOC_MAX_U) return false;
    parena *a = chunk_arena(b->chunk);
    if (a != l->arena && a != &p->shared) return false;
    if (region_nocache(l, b)) return false;
    pool_spin_lock(&l->lock);
    unsigned c = loc_floor(u);
    bool ok = loc_keep(l, b->size, c, loc_cap(l));
    if (ok) {
        atomic_store_explicit(&b->state, BLK_CACHED, memory_order_relaxed);
        loc_push(l, b, c);
        loc_set(&l->cached, l->bytes);
        loc_inc(&l->puts);
    }
    pool_spin_unlock(&l->lock);
    return ok;
}
/* -------------------------------------------------------------- lifecycle */

void bp_pool_options_init(bp_pool_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->alignment = 256;
    o->grow_bytes = 2u << 20;
    o->compact_interval = 4096;
    o->max_scan = 64;
}

static bool pool_pow2(uint64_t x) { return x && !(x & (x - 1)); }

static bp_status pool_create(const bp_pool_options *o, bp_pool **out, bp_error *err)
{
    bp_pool_options d;
    if (!o) { bp_pool_options_init(&d); o = &d; }
    if (!pool_pow2(o->alignment))
        return bp__err(err, BP_ERR_USAGE, "pool: alignment %" PRIu64 " is not a power of two", o->alignment);
    if (o->alignment > (UINT64_C(1) << 30))
        return bp__err(err, BP_ERR_USAGE, "pool: alignment %" PRIu64 " is larger than 1 GiB", o->alignment);
    bp_pool_backend be;
    if (o->backend) be = *o->backend;
    else bp_pool_backend_mmap(&be);
    if (!be.reserve || !be.release)
        return bp__err(err, BP_ERR_USAGE, "pool: backend \"%s\" has no reserve or release function",
                       be.name ? be.name : "?");
    if (!be.granularity) be.granularity = 64 * 1024;
    if (!be.base_alignment) be.base_alignment = 4096;
    if (!pool_pow2(be.granularity) || !pool_pow2(be.base_alignment))
        return bp__err(err, BP_ERR_USAGE, "pool: backend \"%s\": granularity %zu and base alignment %zu must be "
                       "powers of two", be.name ? be.name : "?", be.granularity, be.base_alignment);
    const bp_allocator *a = o->alloc ? o->alloc : &bp__libc_allocator;
    size_t raw_size = sizeof(bp_pool) + 64;
    void *raw = bp__alloc(a, raw_size);
    if (!raw) return bp__err(err, BP_ERR_NOMEM, "pool: out of memory");
    bp_pool *p = (bp_pool *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    memset(p, 0, sizeof *p);
    p->raw = raw;
    p->raw_size = raw_size;
    p->alloc = *a;
    p->be = be;
    p->quantum = o->alignment > MIN_QUANTUM ? o->alignment : MIN_QUANTUM;
    p->qshift = (unsigned)__builtin_ctzll(p->quantum);
    p->max_bytes = o->max_bytes;
    p->grow_bytes = o->grow_bytes ? o->grow_bytes : (2u << 20);
    p->compact_interval = o->compact_interval;
    p->max_scan = o->max_scan;
    p->learn = o->learn != 0;
    p->vm = bp__pool_backend_vm(&p->be);
    p->desc_next = 1; /* 0 means "none" */
    p->meta_bytes = raw_size;
    arena_init(&p->shared, 0);
    p->arenas = &p->shared;
    atomic_init(&p->meta, 0);
    atomic_init(&p->index, NULL);
    atomic_init(&p->in_use, 0);
    atomic_init(&p->peak_in_use, 0);
    atomic_init(&p->failures, 0);
    atomic_init(&p->decommits, 0);
    atomic_init(&p->n_pats, 0);
    atomic_init(&p->reserved_hint, 0);
    if (pthread_mutex_init(&p->global, NULL) != 0) {
        bp__free(a, raw, raw_size);
        return bp__err(err, BP_ERR_NOMEM, "pool: cannot create a mutex");
    }
    /* without a key (the process ran out of them) there are no thread caches */
    p->has_key = pthread_key_create(&p->key, pool_mag_exit) == 0;
    *out = p;
    return BP_OK;
}

bp_status bp_pool_new(const bp_pool_options *o, bp_pool **out, bp_error *err)
{
    if (!out) return bp__err(err, BP_ERR_USAGE, "pool: new: NULL output");
    *out = NULL;
    bp_pool *p = NULL;
    bp_status s = pool_create(o, &p, err);
    if (s) return s;
    if (o && o->reserve_bytes) {
        pthread_mutex_lock(&p->global);
        bp_status why;
        uint64_t want = bp__align_up(o->reserve_bytes, p->be.granularity);
        uint32_t b = want >= o->reserve_bytes ? pool_grow(p, &p->shared, NCLS - 1, want, &why) : 0;
        if (b) {
            pcls *K = &p->shared.cls[NCLS - 1];
            pool_spin_lock(&K->lock);
            pool_push(p, K, b);
            pool_spin_unlock(&K->lock);
        }
        pthread_mutex_unlock(&p->global);
        if (!b) {
            bp_pool_free(p);
            return bp__err(err, why == BP_ERR_NOMEM ? BP_ERR_NOMEM : BP_ERR_EXHAUSTED,
                           "pool: cannot reserve %" PRIu64 " bytes up front (backend %s%s)", o->reserve_bytes,
                           o->backend && o->backend->name ? o->backend->name : "mmap",
                           o->max_bytes && want > o->max_bytes ? ", above max_bytes" : "");
        }
    }
    *out = p;
    return BP_OK;
}

bp_status bp_pool_new_arena(uint64_t arena_bytes, const bp_pool_options *o, bp_pool **out, bp_error *err)
{
    if (!out) return bp__err(err, BP_ERR_USAGE, "pool: new arena: NULL output");
    *out = NULL;
    bp_pool *p = NULL;
    bp_status s = bp_pool_new(o, &p, err);
    if (s) return s;
    if (arena_bytes) {
        /* exactly arena_bytes, plus alignment slack only when the backend
         * cannot guarantee the pool's alignment */
        uint64_t extra = p->quantum > p->be.base_alignment ? p->quantum : 0;
        uint64_t total = arena_bytes + extra;
        if (total < arena_bytes || total > SIZE_MAX || (p->max_bytes && total > p->max_bytes - p->reserved) ||
            (p->max_bytes && p->reserved > p->max_bytes)) {
            s = bp__err(err, BP_ERR_EXHAUSTED, "pool (%s): arena of %" PRIu64 " bytes exceeds the limit of %" PRIu64
                        " bytes", p->be.name ? p->be.name : "backend", arena_bytes, p->max_bytes);
            bp_pool_free(p);
            return s;
        }
        void *raw = p->be.reserve(p->be.ctx, (size_t)total);
        p->os_calls++;
        if (!raw) {
            s = bp__err(err, BP_ERR_EXHAUSTED, "pool (%s): the backend could not reserve an arena of %" PRIu64 " bytes",
                        p->be.name ? p->be.name : "backend", arena_bytes);
            bp_pool_free(p);
            return s;
        }
        p->arena_raw = raw;
        p->arena_reserved = total;
        p->arena_bytes = arena_bytes;
        p->reserved += total;
        atomic_store_explicit(&p->reserved_hint, p->reserved, memory_order_relaxed);
        if (p->reserved > p->peak_reserved) p->peak_reserved = p->reserved;
    }
    *out = p;
    return BP_OK;
}

void bp_pool_free(bp_pool *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n_chunks; i++) {
        pchunk *c = p->chunks[i];
        if (c->live) pool_chunk_release(p, c);
        pool_map_free(p, c);
        bp__free(&p->alloc, c, sizeof *c);
    }
    bp__free(&p->alloc, p->chunks, p->cap_chunks * sizeof *p->chunks);
    if (p->arena_raw) p->be.release(p->be.ctx, p->arena_raw, (size_t)p->arena_reserved);
    pindex *ix = atomic_load(&p->index);
    if (ix) bp__free(&p->alloc, ix, sizeof(pindex) + ix->n * sizeof ix->e[0]);
    for (pindex *r = p->retired; r;) {
        pindex *next = r->retired;
        bp__free(&p->alloc, r, sizeof(pindex) + r->n * sizeof r->e[0]);
        r = next;
    }
    for (uint32_t s = 0; s < p->n_slabs; s++) bp__free(&p->alloc, p->slabs[s], DESC_SLAB * sizeof(pblk));
    /* after the key is deleted no thread runs its destructor for this pool */
    if (p->has_key) {
        pthread_setspecific(p->key, NULL);
        pthread_key_delete(p->key);
    }
    /* handles the caller did not free, and the plain API's thread caches,
     * die with the pool; so do the plans (their blocks went with the chunks) */
    for (ppat *q = p->pats; q;) {
        ppat *next = q->next;
        q->block = 0;
        learn_pat_destroy(p, q);
        q = next;
    }
    for (bp_pool_local *l = p->locals; l;) {
        bp_pool_local *next = l->next;
        learn_rec_free(p, l->rec);
        local_struct_free(p, l);
        l = next;
    }
    for (parena *a = p->shared.next; a;) {
        parena *next = a->next;
        bp__free(&p->alloc, a->raw, sizeof *a + 64);
        a = next;
    }
    pthread_mutex_destroy(&p->global);
    bp_allocator a = p->alloc;
    bp__free(&a, p->raw, p->raw_size);
}

/* Merges, then gives entirely free chunks back to the backend: every
 * arena's (returning every cache first), or only arena `only`'s (whose
 * handle returned its own cache). */
static uint64_t pool_trim(bp_pool *p, parena *only)
{
    uint64_t released = 0;
    pthread_mutex_lock(&p->global);
    if (!only) {
        pool_mag_flush_all(p);
        pool_locals_request_flush(p);
    }
    pool_lock_all(p);
    pool_merge_locked(p, only);
    bool changed = false;
    for (size_t j = 0; j < p->n_chunks; j++) {
        pchunk *ch = p->chunks[j];
        if (!ch->live || (only && chunk_arena(ch) != only)) continue;
        pblk *b = D(p, ch->first);
        if (atomic_load_explicit(&b->state, memory_order_acquire) != BLK_FREE || b->next_phys) continue;
        parena *a = chunk_arena(ch);
        pcls *K = &a->cls[b->home];
        pool_unlink(p, K, ch->first);
        pool_desc_put(p, K, ch->first);
        ch->live = 0;
        changed = true;
        pool_chunk_release(p, ch);
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
        (void)pool_index_rebuild(p);
        for (size_t j = 0; j < p->n_chunks; j++) {
            pchunk *ch = p->chunks[j];
            if (!ch->live && (ch->map || ch->dir)) p->meta_bytes -= pool_map_free(p, ch);
        }
    }
    pool_unlock_all(p);
    pthread_mutex_unlock(&p->global);
    return released;
}

uint64_t bp_pool_trim(bp_pool *p)
{
    return p ? pool_trim(p, NULL) : 0;
}

/* ------------------------------------------------------------------ arena */

void *bp_pool_arena_base(const bp_pool *p)
{
    if (!p || !p->arena_raw) return NULL;
    return (void *)(uintptr_t)bp__align_up((uint64_t)(uintptr_t)p->arena_raw, p->quantum);
}

uint64_t bp_pool_arena_bytes(const bp_pool *p) { return p ? p->arena_bytes : 0; }

bp_status bp_pool_arena_bind(const bp_pool *p, uint64_t offset, uint64_t bytes, void **ptr, bp_error *err)
{
    if (!ptr) return bp__err(err, BP_ERR_USAGE, "pool: arena bind: NULL output pointer");
    *ptr = NULL;
    if (!p) return bp__err(err, BP_ERR_USAGE, "pool: arena bind: NULL pool");
    if (offset > p->arena_bytes || bytes > p->arena_bytes - offset)
        return bp__err(err, BP_ERR_USAGE, "pool: arena bind: [%" PRIu64 ", %" PRIu64 ") lies outside the arena of %"
                       PRIu64 " bytes", offset, offset + bytes < offset ? UINT64_MAX : offset + bytes, p->arena_bytes);
    if (!p->arena_raw) return BP_OK; /* empty arena: a zero-byte tensor at 0 */
    *ptr = (char *)bp_pool_arena_base(p) + offset;
    return BP_OK;
}

/* -------------------------------------------------------------- statistics */

void bp_pool_get_stats(bp_pool *p, bp_pool_stats *s)
{
    if (!s) return;
    memset(s, 0, sizeof *s);
    if (!p) return;
    pthread_mutex_lock(&p->global);
    pool_mag_flush_all(p); /* exact counts: every cached block back on its list */
    pool_lock_all(p);
    for (parena *a = p->arenas; a; a = a->next)
        for (int k = 0; k < NCLS; k++) {
            pcls *K = &a->cls[k];
            s->class_free_bytes[k] += K->free_bytes;
            s->class_allocs[k] += K->n_allocs;
            s->borrows += K->lent;
            s->merges += K->merges;
            s->free_bytes += K->free_bytes;
            s->n_free_blocks += K->n_free;
            s->n_allocs += K->n_allocs;
            s->n_deallocs += K->n_deallocs;
            if (K->bins)
                for (uint32_t i = K->head[31 - __builtin_clz(K->bins)]; i; i = D(p, i)->next_free)
                    if (D(p, i)->size > s->largest_free_bytes) s->largest_free_bytes = D(p, i)->size;
        }
    s->reserved_bytes = p->reserved;
    s->peak_reserved_bytes = p->peak_reserved;
    s->arena_bytes = p->arena_bytes;
    s->n_allocs += p->mag_hits;
    s->n_deallocs += p->mag_puts;
    s->cache_hits = p->mag_hits;
    for (bp_pool_local *l = p->locals; l; l = l->next) {
        uint64_t h = atomic_load_explicit(&l->hits, memory_order_relaxed);
        s->cached_bytes += atomic_load_explicit(&l->cached, memory_order_relaxed);
        s->n_allocs += h;
        s->n_deallocs += atomic_load_explicit(&l->puts, memory_order_relaxed);
        s->cache_hits += h;
        s->n_locals += !l->locked;
    }
    int64_t pending = 0;
    for (bp_pool_local *l = p->locals; l; l = l->next) pending += atomic_load_explicit(&l->pending, memory_order_relaxed);
    uint64_t off_lists = atomic_load_explicit(&p->in_use, memory_order_relaxed) + (uint64_t)pending;
    s->in_use_bytes = off_lists - s->cached_bytes;
    s->peak_in_use_bytes = atomic_load_explicit(&p->peak_in_use, memory_order_relaxed);
    if ((int64_t)s->peak_in_use_bytes < (int64_t)off_lists) s->peak_in_use_bytes = off_lists;
    s->fragmentation = s->free_bytes ? 1.0 - (double)s->largest_free_bytes / (double)s->free_bytes : 0.0;
    s->os_calls = p->os_calls + atomic_load_explicit(&p->decommits, memory_order_relaxed);
    for (size_t j = 0; j < p->n_chunks; j++) s->n_chunks += p->chunks[j]->live;
    s->n_chunks += p->arena_raw != NULL;
    s->n_live_blocks = s->n_allocs - s->n_deallocs;
    s->learned_allocs = p->learned_hits;
    for (bp_pool_local *l = p->locals; l; l = l->next)
        s->learned_allocs += atomic_load_explicit(&l->lhits, memory_order_relaxed);
    for (const ppat *q = p->pats; q; q = q->next) {
        s->learned_plans++;
        s->learned_bytes += q->span + p->quantum;
    }

    s->compactions = p->compactions;
    s->merges += p->merges;
    s->failures = atomic_load_explicit(&p->failures, memory_order_relaxed);
    pool_spin_lock(&p->meta);
    s->meta_bytes = p->meta_bytes + (uint64_t)p->n_slabs * DESC_SLAB * sizeof(pblk); /* slabs: under meta */
    pool_spin_unlock(&p->meta);
    pool_unlock_all(p);
    pthread_mutex_unlock(&p->global);
}

void bp_pool_stats_print(bp_pool *p, FILE *f)
{
    if (!f) return;
    if (!p) { fprintf(f, "pool: none\n"); return; }
    bp_pool_stats s;
    bp_pool_get_stats(p, &s);
    fprintf(f, "pool (%s, alignment %" PRIu64 ")\n", p->be.name ? p->be.name : "backend", p->quantum);
    fprintf(f, "  reserved       %14" PRIu64 " bytes (peak %" PRIu64 ") in %" PRIu64 " pieces, %" PRIu64 " OS calls\n",
            s.reserved_bytes, s.peak_reserved_bytes, s.n_chunks, s.os_calls);
    fprintf(f, "  arena          %14" PRIu64 " bytes\n", s.arena_bytes);
    fprintf(f, "  in use         %14" PRIu64 " bytes (peak %" PRIu64 ") in %" PRIu64 " blocks\n",
            s.in_use_bytes, s.peak_in_use_bytes, s.n_live_blocks);
    fprintf(f, "  free           %14" PRIu64 " bytes in %" PRIu64 " blocks, largest %" PRIu64 ", fragmentation %.3f\n",
            s.free_bytes, s.n_free_blocks, s.largest_free_bytes, s.fragmentation);
    fprintf(f, "  thread caches  %14" PRIu64 " bytes, %" PRIu64 " allocations served from them\n", s.cached_bytes,
            s.cache_hits);
    if (s.learned_plans || s.learned_allocs)
        fprintf(f, "  learned        %14" PRIu64 " bytes in %" PRIu64 " plans, %" PRIu64 " allocations served from them\n",
                s.learned_bytes, s.learned_plans, s.learned_allocs);
    fprintf(f, "  allocs %" PRIu64 ", deallocs %" PRIu64 ", borrows %" PRIu64 ", failures %" PRIu64
               ", merge passes %" PRIu64 " (%" PRIu64 " blocks merged), metadata %" PRIu64 " bytes\n",
            s.n_allocs, s.n_deallocs, s.borrows, s.failures, s.compactions, s.merges, s.meta_bytes);
    for (int k = 0; k < NCLS; k++) {
        if (!s.class_allocs[k] && !s.class_free_bytes[k]) continue;
        char name[32];
        pool_class_name(k, name, sizeof name);
        fprintf(f, "  class %-8s allocs %12" PRIu64 "   free %14" PRIu64 " bytes\n", name, s.class_allocs[k],
                s.class_free_bytes[k]);
    }
}

/* ------------------------------------------------------------- test hooks */

void bp__pool_set_seed_bug(bp_pool *p, int on)
{
    if (p) p->seed_bug = on != 0;
}

void bp__pool_set_region(bp_pool *p, int on)
{
    if (!p) return;
    pthread_mutex_lock(&p->global);
    p->region_off = !on;
    pthread_mutex_unlock(&p->global);
}

bp_status bp__pool_check(bp_pool *p, int quiescent, bp_error *err)
{
    if (!p) return bp__err(err, BP_ERR_USAGE, "pool check: NULL pool");
    bp_status st = BP_OK;
    pthread_mutex_lock(&p->global);
    /* order: global, locked caches, classes (as everywhere) */
    for (bp_pool_local *l = p->locals; l; l = l->next)
        if (l->locked) pool_spin_lock(&l->lock);
    pool_lock_all(p);
    uint64_t free_b = 0, used_b = 0, cached_b = 0, usable = 0, nfree = 0;
#define PCHECK(cond, ...) do { if (!(cond)) { st = bp__err(err, BP_ERR_VERIFY, __VA_ARGS__); goto done; } } while (0)
    for (size_t j = 0; j < p->n_chunks; j++) {
        pchunk *ch = p->chunks[j];
        if (!ch->live) continue;
        usable += ch->usable;
        PCHECK(pool_find_chunk(p, ch->start) == ch, "chunk %zu not in the index", j);
        uintptr_t at = ch->start;
        uint32_t prev = 0;
        for (uint32_t i = ch->first; i; prev = i, i = D(p, i)->next_phys) {
            pblk *b = D(p, i);
            unsigned s = atomic_load(&b->state);
            PCHECK(BADDR(b) == at, "chunk %zu: block %u at %#" PRIxPTR ", expected %#" PRIxPTR, j, i, BADDR(b), at);
            PCHECK(b->size && (b->size & (p->quantum - 1)) == 0, "block %u: size %" PRIu64, i, b->size);
            PCHECK(b->chunk == ch && b->prev_phys == prev, "block %u: bad chunk or prev link", i);
            PCHECK(atomic_load(chunk_slot(ch, (BADDR(b) - ch->start) >> p->qshift)) == i, "block %u: page map", i);
            PCHECK(s == BLK_FREE || s == BLK_USED || s == BLK_GOING || s == BLK_CACHED, "block %u: state %u", i, s);
            PCHECK(b->home < NCLS, "block %u: home %u", i, b->home);
            if (s == BLK_FREE) { free_b += b->size; nfree++; }
            else if (s == BLK_CACHED) cached_b += b->size;
            else used_b += b->size;
            for (uintptr_t g = BADDR(b) + p->quantum; g < BADDR(b) + b->size; g += p->quantum)
                if (atomic_load(chunk_slot(ch, (g - ch->start) >> p->qshift)) != 0)
                    PCHECK(0, "block %u: stale page map entry inside it", i);
            at += b->size;
        }
        PCHECK(at == ch->start + ch->usable, "chunk %zu: blocks cover %" PRIu64 " of %" PRIu64 " bytes", j,
               (uint64_t)(at - ch->start), ch->usable);
    }
    uint64_t lfree = 0, lnum = 0;
    for (parena *a = p->arenas; a; a = a->next) {
        uint64_t ab = 0;
        for (size_t j = 0; j < p->n_chunks; j++)
            if (p->chunks[j]->live && chunk_arena(p->chunks[j]) == a) ab += p->chunks[j]->bytes;
        uint64_t ar = atomic_load_explicit(&a->reserved, memory_order_relaxed);
        PCHECK(ab == ar, "arena %d: chunks of %" PRIu64 " bytes, counter %" PRIu64, a->id, ab, ar);
        PCHECK(a->live || a == &p->shared || !ab, "arena %d: unused but holds %" PRIu64 " bytes", a->id, ab);
        for (int k = 0; k < NCLS; k++) {
            pcls *K = &a->cls[k];
            uint64_t kb = 0, kn = 0;
            PCHECK(K->ar == a && K->idx == k, "arena %d: class %d: bad back link", a->id, k);
            for (unsigned j = 0; j < NBINS; j++) {
                PCHECK(!!(K->bins & (1u << j)) == !!K->head[j], "arena %d: class %d: bin %u bit is wrong", a->id, k, j);
                uint32_t prev = 0;
                for (uint32_t i = K->head[j]; i; prev = i, i = D(p, i)->next_free) {
                    pblk *b = D(p, i);
                    PCHECK(atomic_load(&b->state) == BLK_FREE, "arena %d: class %d: block %u on the free list is not "
                           "free", a->id, k, i);
                    PCHECK(b->home == k, "arena %d: class %d: block %u has home %u", a->id, k, i, b->home);
                    PCHECK(chunk_arena(b->chunk) == a, "arena %d: class %d: block %u is of arena %d", a->id, k, i,
                           chunk_arena(b->chunk)->id);
                    PCHECK(b->prev_free == prev, "arena %d: class %d: block %u: bad prev_free", a->id, k, i);
                    PCHECK(pool_bin(b->size) == j, "arena %d: class %d: block %u in the wrong size bin", a->id, k, i);
                    kb += b->size;
                    PCHECK(++kn <= nfree, "arena %d: class %d: free list longer than the free blocks (cycle?)", a->id,
                           k);
                }
            }
            PCHECK(kb == K->free_bytes && kn == K->n_free, "arena %d: class %d: counters %" PRIu64 "/%u, lists %"
                   PRIu64 "/%" PRIu64, a->id, k, K->free_bytes, K->n_free, kb, kn);
            PCHECK(!!(atomic_load(&a->nonempty) & (1u << k)) == !!K->bins, "arena %d: class %d: non-empty hint is "
                   "wrong", a->id, k);
            lfree += kb;
            lnum += kn;
        }
    }
    PCHECK(lfree == free_b && lnum == nfree, "free lists hold %" PRIu64 " bytes in %" PRIu64 " blocks, chunks %" PRIu64
           " in %" PRIu64, lfree, lnum, free_b, nfree);
    for (bp_pool_local *l = p->locals; l; l = l->next) {
        PCHECK(l->arena && l->arena->live && l->arena != &p->shared, "local cache without an arena of its own");
        for (bp_pool_local *m = l->next; m; m = m->next) PCHECK(m->arena != l->arena, "two caches share an arena");
    }
    PCHECK(usable == p->usable, "usable %" PRIu64 " vs %" PRIu64, usable, p->usable);
    {
        uint64_t mb = 0;
        /* unlocked handles belong to their threads: walked only when no
         * thread is using the pool; locked caches are held */
        for (bp_pool_local *l = p->locals; l; l = l->next) {
            if (!quiescent && !l->locked) {
                mb += atomic_load(&l->cached);
                continue;
            }
            uint64_t b = 0;
            for (unsigned j = 0; j < LOC_NB; j++) {
                uint64_t n = 0;
                PCHECK(!!(l->full[j / 64] & (UINT64_C(1) << (j % 64))) == !!l->bin[j], "local cache: bin %u bit", j);
                for (pblk *x = l->bin[j]; x; x = x->lnext) {
                    PCHECK(atomic_load(&x->state) == BLK_CACHED && loc_floor(x->size >> p->qshift) == j &&
                           D(p, x->id) == x, "local cache: block %u (%" PRIu64 " bytes) is not a cached block of "
                           "class %u", x->id, x->size, j);
                    PCHECK(chunk_arena(x->chunk) == l->arena || chunk_arena(x->chunk) == &p->shared,
                           "local cache of arena %d: block %u is of arena %d", l->arena->id, x->id,
                           chunk_arena(x->chunk)->id);
                    b += x->size;
                    PCHECK(++n <= nfree + (cached_b >> p->qshift), "local cache: cycle in a bin");
                }
            }
            PCHECK(b == l->bytes && b == atomic_load(&l->cached), "local cache: %" PRIu64 " bytes, counters %"
                   PRIu64, b, l->bytes);
            mb += b;
        }
        PCHECK(mb == cached_b || !quiescent, "caches hold %" PRIu64 " bytes, cached blocks %" PRIu64, mb, cached_b);
        if (quiescent) {
            uint64_t in_use = atomic_load(&p->in_use);
            for (bp_pool_local *l = p->locals; l; l = l->next) in_use += (uint64_t)atomic_load(&l->pending);
            PCHECK(used_b + cached_b == in_use, "in use counter %" PRIu64 ", blocks %" PRIu64 " + cached %" PRIu64,
                   in_use, used_b, cached_b);
        }
    }
#undef PCHECK
done:
    pool_unlock_all(p);
    for (bp_pool_local *l = p->locals; l; l = l->next)
        if (l->locked) pool_spin_unlock(&l->lock);
    pthread_mutex_unlock(&p->global);
    return st;
}
