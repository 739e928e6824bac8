/*
 * pool_internal.h — shared by the pool's files (blocks.c, chunks.c,
 * alloc.c, local.c, learn.c, pool.c: pool.c's opener has the design): the
 * pool's state, the helpers its hot paths inline, the functions one file
 * calls in another (bp__pool_*), the learned sequences' hook table; and,
 * for the tests and backend_mmap.c, the test hooks and the optional
 * address-space operations of a backend.  Not part of the public API.
 */
#ifndef BP_POOL_INTERNAL_H
#define BP_POOL_INTERNAL_H

#include "core/internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

/* ------------------------------------------------------------- test hooks */

/* Test hook: on = 1 makes a block borrowed from a larger class return, when
 * freed, to the class it served instead of the class it came from, the
 * return rule docs/POOL.md shows to make fragmentation drift. */
void bp__pool_set_seed_bug(bp_pool *p, int on);
/* Full invariant check (takes every lock): blocks tile every chunk, the page
 * maps point at block starts, free lists are consistent with the blocks and
 * the counters.  quiescent: also check that in-use bytes match the blocks
 * (only valid while no other thread is allocating). */
bp_status bp__pool_check(bp_pool *p, int quiescent, bp_error *err);
/* Test hook: on = 0 turns the large region off for the pool's next growths
 * (large requests then get chunks of their own, as a backend without
 * address-space operations does); on = 1 (the default) turns it back on. */
void bp__pool_set_region(bp_pool *p, int on);

/* Address-space operations of a backend, optional: reserve_va reserves
 * `bytes` of address space with no memory behind it (NULL on failure);
 * commit makes [addr, addr + bytes) of such a reservation usable (addr and
 * bytes multiples of the granularity; 0 on success).  The reservation is
 * given back whole with the backend's release(ctx, base, reserved bytes).
 * With them the pool's large region grows in place, so its free space
 * merges across growths (chunks.c).  The mmap backend has them (PROT_NONE
 * reservation, mprotect to commit); a CUDA backend could with the driver's
 * virtual memory API (cuMemAddressReserve / cuMemMap).  decommit serves
 * the learned sequences (learn.c): while a handle learns, the pages of the
 * blocks it frees go back to the OS (the mmap backend: MADV_DONTNEED). */
typedef struct bp__pool_vm {
    void *(*reserve_va)(void *ctx, size_t bytes);
    int (*commit)(void *ctx, void *addr, size_t bytes);
    /* gives back the memory of the whole pages inside [addr, addr + bytes),
     * which stay usable (zero on their next touch); 1 when a call was made */
    int (*decommit)(void *ctx, void *addr, size_t bytes);
} bp__pool_vm;

/* The address-space operations of backend `be`, NULL when it has none (any
 * backend but bufplan's mmap one). */
const bp__pool_vm *bp__pool_backend_vm(const bp_pool_backend *be);

/* ------------------------------------------------------------------ state */

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
                                         with every class lock held (bp__pool_lock_home re-checks it) */
    uintptr_t base;                   /* as the backend returned it */
    uint64_t bytes;                   /* as reserved */
    uintptr_t start;                  /* aligned start of the blocks */
    uint64_t usable;                  /* bytes tiled by blocks */
    atomic_uint *map;                 /* granule -> descriptor starting there (NULL in a region) */
    uint64_t map_n;
    /* a region (bp__pool_region_grow): address space reserved up front, made
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
    int seed_bug;                     /* test hook: freed blocks go to the class they served */
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
    /* learned sequences (learn.c) */
    const struct bp__pool_learn_hooks *learn_hooks; /* options.learn: learn.c's entry points (NULL: no
                                         handle learns) */
    struct ppat *pats;                /* every plan (global lock) */
    atomic_int n_pats;                /* how many: a failed lookup asks the plans only when > 0 */
    uint64_t learned_hits;            /* of plans and handles already gone (global lock) */
    atomic_uint_fast64_t decommits;   /* backend decommit calls (learning handles) */
};

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
#define LOC_BIG_DIV 8u                 /* a block of >= cap/8 bytes is large (bp__pool_loc_keep) */
#define LOC_IDLE_HITS 256u             /* an idle flush needs this many hits since the last one */
#define LOC_SMALL_KEEP (LOC_MIN_CAP / LOC_BIG_DIV) /* smaller blocks: bp__pool_loc_keep is the bound alone
                                          (at most REGION_NOCACHE) */

typedef struct lent { uintptr_t a; pblk *b; } lent; /* a block this handle handed out */
typedef struct lmru { uintptr_t region, lo; uint64_t len; const pchunk *c; } lmru; /* 64 KiB region -> chunk: start,
                                                                                usable (as of the index), chunk */

/* A learned sequence's plan (learn.c): its events, its slots. */
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

struct bp_pool_local {
    bp_pool *pool;
    void *raw;                        /* what alloc returned (the struct is 64-aligned) */
    /* a learned sequence's hit path (learn.c) */
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
    uint64_t idle_hits;               /* hits at its last idle flush (bp__pool_local_idle) */
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
    /* learning (options.learn; owner only, learn.c) */
    int learn;                        /* 0 off, 1 recording, 2 a plan exists */
    int misses;                       /* sequences in a row that left the plan */
    int tries;                        /* sequences or plans left before learning stops */
    struct ppat *pat;
    struct lrec *rec;
    atomic_uint_fast64_t lhits;       /* allocations served from the plan (read by statistics) */
    const struct bp__pool_learn_hooks *learn_hooks; /* the pool's, for a handle made while it learns */
};

/* ----------------------------------------------- learned sequences: hooks */

/* The learned sequences' entry points that the files below learn.c call,
 * as a table of function pointers, so that those files never name a
 * symbol of learn.c.  learn.c defines the one table, bp__pool_learn;
 * pool.c points p->learn_hooks at it when the pool is made with
 * options.learn (NULL otherwise), and every handle made in such a pool
 * gets it too (l->learn_hooks; not the plain API's caches, which never
 * learn).  A call through p->learn_hooks needs a plan to exist (p->n_pats);
 * one through l->learn_hooks, a handle that learns (l->learn). */
typedef struct bp__pool_learn_hooks {
    /* a new handle starts to record (sets l->rec, l->learn, l->tries) */
    void (*start)(bp_pool_local *l);
    /* nothing l handed out is live, or one of its planned blocks was freed
     * off the plan (l->learn == 2): the next sequence may start on the plan */
    void (*boundary)(bp_pool_local *l);
    /* l is being freed: its recording goes, and its plan too unless some of
     * the plan's blocks still live */
    void (*release)(bp_pool_local *l);
    /* a free of ptr that the pool's lookup did not find, while plans exist:
     * a planned block freed through l (NULL: not through its owner), else a
     * usage error */
    bp_status (*free_any)(bp_pool *p, bp_pool_local *l, void *ptr, bp_error *err);
    /* the bytes of the live planned block at ptr, 0 when there is none */
    uint64_t (*block_bytes)(bp_pool *p, const void *ptr);
} bp__pool_learn_hooks;

/* ----------------------------------- blocks.c: classes, locks, free lists */

/* Spin locks: test-and-test-and-set.  Critical sections are short (a list
 * operation, tens of ns), so a waiter spins with a pause hint a short while
 * before it yields (the holder may have been preempted on a loaded machine).
 * bp__pool_cpu_relax is the pause hint. */
static inline void bp__pool_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Takes spin lock l. */
static inline void bp__pool_spin_lock(atomic_int *l)
{
    for (unsigned n = 0;;) {
        if (!atomic_exchange_explicit(l, 1, memory_order_acquire)) return;
        while (atomic_load_explicit(l, memory_order_relaxed)) {
            bp__pool_cpu_relax();
            if (++n >= 64) { sched_yield(); n = 0; }
        }
    }
}
/* Releases spin lock l. */
static inline void bp__pool_spin_unlock(atomic_int *l) { atomic_store_explicit(l, 0, memory_order_release); }

/* The arena that owns chunk c now. */
static inline parena *bp__pool_chunk_arena(const pchunk *c)
{
    return atomic_load_explicit(&((pchunk *)c)->arena, memory_order_acquire);
}

/* Locks the home class of block b (not free, so its chunk and home are
 * fixed) in the arena that owns its chunk now.  A chunk changes arena only
 * under every class lock, so the owner read again under the lock is stable. */
static inline pcls *bp__pool_lock_home(const pblk *b)
{
    for (;;) {
        parena *a = bp__pool_chunk_arena(b->chunk);
        pcls *K = &a->cls[b->home];
        bp__pool_spin_lock(&K->lock);
        if (atomic_load_explicit(&b->chunk->arena, memory_order_relaxed) == a) return K;
        bp__pool_spin_unlock(&K->lock);
    }
}

/* The start address of the block that descriptor b describes. */
#define BADDR(b) atomic_load_explicit(&(b)->addr, memory_order_relaxed)

/* Descriptor i. */
static inline pblk *bp__pool_desc(const bp_pool *p, uint32_t i)
{
    return &p->slabs[i >> DESC_SHIFT][i & (DESC_SLAB - 1)];
}

/* The page map entry of granule g of chunk c (one array, or a region's
 * leaves). */
static inline atomic_uint *bp__pool_chunk_slot(const pchunk *c, uint64_t g)
{
    if (__builtin_expect(c->dir != NULL, 0)) return &c->dir[g >> LEAF_SHIFT][g & (LEAF_N - 1)];
    return &c->map[g];
}

/* The page map of chunk c says that block i starts at addr. */
static inline void bp__pool_map_set(const bp_pool *p, pchunk *c, uintptr_t addr, uint32_t i)
{
    atomic_store_explicit(bp__pool_chunk_slot(c, (addr - c->start) >> p->qshift), i, memory_order_relaxed);
}

/* The free list (size bin) of a block of `size` bytes: [2^(j+8), 2^(j+9)). */
static inline unsigned bp__pool_bin(uint64_t size)
{
    unsigned l = 63u - (unsigned)__builtin_clzll(size | MIN_QUANTUM) - 8u;
    return l < NBINS ? l : NBINS - 1;
}

/* The size class of a request of sz bytes (a multiple of the quantum). */
static inline int bp__pool_class(uint64_t sz)
{
    if (sz < MIN_QUANTUM) return 0;
    int l = 63 - __builtin_clzll(sz);
    if (l < 18) return l - 8;
    int k = 10 + (l - 18) / 2;
    return k < NCLS ? k : NCLS - 1;
}

/* The lower bound of size class k as text ("256 KiB"), into buf. */
void bp__pool_class_name(int k, char *buf, size_t n);
/* Arena a (zeroed) gets its class locks and back links; id 0 is shared. */
void bp__pool_arena_init(parena *a, int id);
/* Takes every class lock of arena a, in class order. */
void bp__pool_arena_lock(parena *a);
/* Releases every class lock of arena a. */
void bp__pool_arena_unlock(parena *a);
/* Takes every class lock of every arena, in list order (global lock held). */
void bp__pool_lock_all(bp_pool *p);
/* Releases what bp__pool_lock_all took. */
void bp__pool_unlock_all(bp_pool *p);
/* A fresh descriptor from k's spares (k locked); 0 when host memory is out. */
uint32_t bp__pool_desc_get(bp_pool *p, pcls *k);
/* Descriptor i, its block gone, back to k's spares or the pool's (k locked). */
void bp__pool_desc_put(bp_pool *p, pcls *k, uint32_t i);
/* Block i (off every list) onto k's free list, state FREE (k locked). */
void bp__pool_push(bp_pool *p, pcls *k, uint32_t i);
/* Block i off k's free list (k locked). */
void bp__pool_unlink(bp_pool *p, pcls *k, uint32_t i);
/* Best fit for sz bytes on k's lists (k locked); 0 when nothing fits. */
uint32_t bp__pool_fit(const bp_pool *p, const pcls *k, uint64_t sz);
/* Free block li absorbs its free successor ri (both off-list; k = their home, locked). */
void bp__pool_absorb(bp_pool *p, pcls *k, uint32_t li, uint32_t ri);
/* Block i (off-list) merges with its free neighbours of home k (locked); returns the block to push. */
uint32_t bp__pool_coalesce(bp_pool *p, pcls *k, uint32_t i);
/* Block i off k's list, cut to sz bytes (the rest stays on k), USED for class served (k locked). */
void bp__pool_take(bp_pool *p, pcls *k, uint32_t i, uint64_t sz, int served);

/* ---------------------------------- chunks.c: chunks, the region, merging */

/* Merge pass over arena only's chunks (NULL: all); global lock and those arenas' class locks held. */
void bp__pool_merge_locked(bp_pool *p, parena *only);
/* Anything freed since the last merge pass, in any arena (global lock held). */
bool bp__pool_merge_due(const bp_pool *p);
/* A merge pass over arena a's chunks if its interval has passed and the global lock is free. */
void bp__pool_maybe_compact(bp_pool *p, parena *a);
/* Frees chunk c's page map; returns its bytes. */
uint64_t bp__pool_map_free(bp_pool *p, pchunk *c);
/* Gives chunk c's memory (a region's whole reservation) back to the backend. */
void bp__pool_chunk_release(bp_pool *p, pchunk *c);
/* Publishes a new chunk index of the live chunks (global lock held); false when host memory is out. */
bool bp__pool_index_rebuild(bp_pool *p);
/* The entry of snapshot ix whose chunk holds address a, or NULL. */
const struct pindex_e *bp__pool_index_find(const pindex *ix, uintptr_t a);
/* The live chunk that holds address a, or NULL (lock-free). */
pchunk *bp__pool_find_chunk(const bp_pool *p, uintptr_t a);
/* The descriptor of the block that starts at ptr, or 0 (lock-free). */
uint32_t bp__pool_lookup(const bp_pool *p, const void *ptr);
/* The smallest piece arena a's class c grows by. */
uint64_t bp__pool_grow_min(const bp_pool *p, const parena *a, int c);
/* A new chunk of `bytes` for arena a, class c; its one block off-list, or 0 and *why (global lock held). */
uint32_t bp__pool_grow(bp_pool *p, parena *a, int c, uint64_t bytes, bp_status *why);
/* A block of at least sz bytes from arena a's region, grown or made for it, off-list; 0 and *why. */
uint32_t bp__pool_region_grow(bp_pool *p, parena *a, uint64_t sz, bp_status *why);
/* Chunk ch and its free blocks move to arena a (global lock and both arenas' class locks held). */
void bp__pool_chunk_move(bp_pool *p, pchunk *ch, parena *a);
/* The smallest entirely free chunk of at least sz bytes moves to arena a, class c; its block or 0. */
uint32_t bp__pool_steal_chunk(bp_pool *p, parena *a, int c, uint64_t sz, bool any);

/* ----------------------------- alloc.c: the core allocator, cache returns */

/* Asks every unlocked handle that holds blocks to return its cache at its next call (global lock held). */
void bp__pool_locals_request_flush(bp_pool *p);
/* Passes handle l's pending in-use change on to the pool's counter. */
void bp__pool_local_delta_flush(bp_pool_local *l);
/* Returns every block cached in l to its home's list (l's owner, or l's lock held). */
void bp__pool_local_flush(bp_pool_local *l);
/* A miss's batch: more blocks of sz bytes from K (locked) into l's bins; returns their bytes. */
uint64_t bp__pool_local_batch(bp_pool_local *l, pcls *K, uint64_t sz, int c);
/* Returns every locked (plain API) cache to the lists (global lock held, no class lock). */
void bp__pool_mag_flush_all(bp_pool *p);
/* The slow path under the global lock: merge, search, take a free chunk, grow; *ptr or an error. */
bp_status bp__pool_alloc_slow(bp_pool *p, parena *a, bp_pool_local *l, uint64_t bytes, uint64_t sz, int c,
                              void **ptr, bp_error *err);
/* First fit for class c on arena a's lists, taken; its class stays locked (*Kp); 0: nothing locked. */
uint32_t bp__pool_arena_take(bp_pool *p, parena *a, uint64_t sz, int c, pcls **Kp);
/* A block of sz (class c) from arena a's lists, then the shared arena's, counted in use; or 0. */
uint32_t bp__pool_alloc_lists(bp_pool *p, parena *a, uint64_t sz, int c);
/* A block of exactly sz for arena a from the lists or the slow path, no cache; *i its descriptor. */
bp_status bp__pool_alloc_uncached(bp_pool *p, parena *a, uint64_t bytes, uint64_t sz, int c, uint32_t *i,
                                  bp_error *err);
/* Block i (GOING) to its home's list; count: off the in-use count and towards the merge interval. */
void bp__pool_free_to_list_n(bp_pool *p, uint32_t i, uint64_t size, int count);
/* Merges, then gives entirely free chunks (of arena only; NULL: every arena) back; returns the bytes. */
uint64_t bp__pool_trim(bp_pool *p, parena *only);

/* One more dealloc towards arena a's next merge pass. */
static inline void bp__pool_count_dealloc(bp_pool *p, parena *a)
{
    if (p->compact_interval &&
        atomic_fetch_add_explicit(&a->since_compact, 1, memory_order_relaxed) + 1 >= p->compact_interval)
        bp__pool_maybe_compact(p, a);
    else if (!p->compact_interval)
        atomic_fetch_add_explicit(&a->since_compact, 1, memory_order_relaxed);
}

/* ---------------------------------- local.c: local handles, the plain API */

/* Class of u quanta rounded down (the bin of a freed block of u quanta). */
static inline unsigned bp__pool_loc_floor(uint64_t u)
{
    if (u <= LOC_LIN) return (unsigned)u - 1;
    unsigned lg = 63u - (unsigned)__builtin_clzll(u);
    return LOC_LIN + (lg - 4) * 4 + (unsigned)((u >> (lg - 2)) & 3);
}
/* Quanta of class c. */
static inline uint64_t bp__pool_loc_units(unsigned c)
{
    if (c < LOC_LIN) return c + 1;
    unsigned lg = 4 + (c - LOC_LIN) / 4, j = (c - LOC_LIN) % 4;
    return (uint64_t)(4 + j) << (lg - 2);
}
/* Class of a request of u quanta (rounded up). */
static inline unsigned bp__pool_loc_ceil(uint64_t u)
{
    unsigned c = bp__pool_loc_floor(u);
    return c + (bp__pool_loc_units(c) < u);
}

/* Counters the owner writes and statistics read: a relaxed store, an
 * increment by the one writer. */
static inline void bp__pool_loc_set(atomic_uint_fast64_t *a, uint64_t v)
{
    atomic_store_explicit(a, v, memory_order_relaxed);
}
static inline void bp__pool_loc_inc(atomic_uint_fast64_t *a)
{
    bp__pool_loc_set(a, atomic_load_explicit(a, memory_order_relaxed) + 1);
}

/* Block b onto bin c of cache l (owner, or l's lock held). */
static inline void bp__pool_loc_push(bp_pool_local *l, pblk *b, unsigned c)
{
    b->lnext = l->bin[c];
    l->bin[c] = b;
    l->full[c / 64] |= UINT64_C(1) << (c % 64);
    l->bytes += b->size;
}

/* The block on top of bin c of cache l (not empty), off it. */
static inline pblk *bp__pool_loc_pop(bp_pool_local *l, unsigned c)
{
    pblk *b = l->bin[c];
    if (!(l->bin[c] = b->lnext)) l->full[c / 64] &= ~(UINT64_C(1) << (c % 64));
    l->bytes -= b->size;
    return b;
}

/* The bound on the bytes cache l may hold. */
static inline uint64_t bp__pool_loc_cap(const bp_pool_local *l)
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
static inline bool bp__pool_loc_keep(const bp_pool_local *l, uint64_t size, unsigned c, uint64_t cap)
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
static inline bool bp__pool_region_nocache(const bp_pool_local *l, const pblk *b)
{
    return (b->size >= REGION_NOCACHE || l->locked) && b->chunk->va && bp__pool_loc_cap(l) > LOC_MIN_CAP;
}

/* The slot of address a in the table of l's recent allocations. */
static inline unsigned bp__pool_loc_ahash(const bp_pool_local *l, uintptr_t a)
{
    return (unsigned)((((uint64_t)a >> l->qshift) * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - LOC_ABITS));
}

/* Adds d to handle l's pending change of the in-use bytes. */
static inline void bp__pool_local_account(bp_pool_local *l, int64_t d)
{
    l->delta += d;
    if (l->delta > LOC_DELTA || l->delta < -LOC_DELTA) bp__pool_local_delta_flush(l);
    else atomic_store_explicit(&l->pending, l->delta, memory_order_relaxed);
}

/* Handle l handed out its last live block: a plan may start, an idle cache goes back. */
void bp__pool_local_idle(bp_pool_local *l);
/* Frees the struct of handle l (unlinked). */
void bp__pool_local_struct_free(bp_pool *p, bp_pool_local *l);
/* The descriptor of the block that starts at a, through l's chunk table, or 0. */
uint32_t bp__pool_local_lookup(bp_pool_local *l, uintptr_t a);
/* Block i goes out through handle l: counted live, entered in l's address table; *ptr. */
bp_status bp__pool_local_hand_out(bp_pool_local *l, uint32_t i, void **ptr);
/* Every handle allocation the hit path does not serve (bad arguments, flush request, miss). */
bp_status bp__pool_local_alloc_slow(bp_pool_local *l, uint64_t bytes, void **ptr, bp_error *err);
/* Every handle free the hit path does not take (i: the block's descriptor when known, else 0). */
bp_status bp__pool_local_dealloc_slow(bp_pool_local *l, void *ptr, uint32_t i, bp_error *err);
/* The pthread key's destructor: a thread's plain API cache goes home and is freed. */
void bp__pool_mag_exit(void *v);

/* The block at a: first the address table of this handle's own
 * allocations.  An entry may be stale (the block was freed elsewhere and its
 * descriptor reused), so it counts only if the descriptor still starts at
 * a: while the caller's block lives at a, no other descriptor can. */
static inline pblk *bp__pool_local_find(bp_pool_local *l, uintptr_t a)
{
    const lent *t = &l->atab[bp__pool_loc_ahash(l, a)];
    if (__builtin_expect(t->a == a && BADDR(t->b) == a, 1)) return t->b;
    uint32_t i = bp__pool_local_lookup(l, a);
    return i ? bp__pool_desc(l->pool, i) : NULL;
}

/* A handle's allocation (inline here: the handles' public call in learn.c
 * and the slow path in local.c both start with it). */
static inline bp_status bp__pool_local_alloc_general(bp_pool_local *l, uint64_t bytes, void **ptr, bp_error *err)
{
    /* the hit path: the request's class bin, no lock, no atomic
     * read-modify-write; everything else (NULL arguments, 0 bytes, huge
     * requests, a flush request, a miss) is bp__pool_local_alloc_slow */
    if (__builtin_expect(!ptr || !l || bytes - 1 >= l->max_req || atomic_load_explicit(&l->flush_req,
                                                                   memory_order_relaxed), 0))
        return bp__pool_local_alloc_slow(l, bytes, ptr, err);
    unsigned c = bp__pool_loc_ceil((bytes + l->quantum - 1) >> l->qshift);
    if (__builtin_expect(!l->bin[c], 0)) return bp__pool_local_alloc_slow(l, bytes, ptr, err);
    l->used[c] = l->tick;
    l->live++;
    pblk *b = bp__pool_loc_pop(l, c);
    bp__pool_loc_set(&l->cached, l->bytes);
    bp__pool_loc_inc(&l->hits);
    atomic_store_explicit(&b->state, BLK_USED, memory_order_relaxed);
    uintptr_t a = BADDR(b);
    lent *t = &l->atab[bp__pool_loc_ahash(l, a)];
    t->a = a;
    t->b = b;
    *ptr = (void *)a;
    return BP_OK;
}

/* A handle's free: into the bin of the block's class when the cache keeps
 * it, else bp__pool_local_dealloc_slow (inline here, as the allocation). */
static inline bp_status bp__pool_local_dealloc_general(bp_pool_local *l, void *ptr, bp_error *err)
{
    if (__builtin_expect(!l || atomic_load_explicit(&l->flush_req, memory_order_relaxed), 0))
        return bp__pool_local_dealloc_slow(l, ptr, l ? bp__pool_local_lookup(l, (uintptr_t)ptr) : 0, err);
    pblk *b = bp__pool_local_find(l, (uintptr_t)ptr);
    /* the owner frees its block: no other thread changes its state now, so a
     * plain load is enough to catch a double free from this thread */
    if (__builtin_expect(!b || atomic_load_explicit(&b->state, memory_order_relaxed) != BLK_USED, 0))
        return bp__pool_local_dealloc_slow(l, ptr, 0, err);
    uint64_t size = b->size, u = size >> l->qshift;
    bp_pool *p = l->pool;
    /* the bins keep blocks of this handle's arena and of the shared one;
     * another arena's block goes back to that arena (a remote free) */
    parena *a = bp__pool_chunk_arena(b->chunk);
    if (__builtin_expect(a != l->arena && a != &p->shared, 0)) return bp__pool_local_dealloc_slow(l, ptr, b->id, err);
    uint64_t cap = bp__pool_loc_cap(l);
    /* below LOC_SMALL_KEEP bytes a block is neither large for
     * bp__pool_loc_keep (the bound is LOC_MIN_CAP or more, or set by the
     * user) nor a region block kept out of the cache, so the bound is its
     * one test */
    if (__builtin_expect(size >= LOC_SMALL_KEEP || l->bytes + size > cap, 0)) {
        if (u >= 2 * LOC_MAX_U || bp__pool_region_nocache(l, b) ||
            !bp__pool_loc_keep(l, size, bp__pool_loc_floor(u), cap))
            return bp__pool_local_dealloc_slow(l, ptr, b->id, err);
    }
    unsigned c = bp__pool_loc_floor(u);
    if (__builtin_expect(p->seed_bug, 0)) b->home = b->served;
    atomic_store_explicit(&b->state, BLK_CACHED, memory_order_relaxed);
    bp__pool_loc_push(l, b, c);
    bp__pool_loc_set(&l->cached, l->bytes);
    bp__pool_loc_inc(&l->puts);
    if (__builtin_expect(!--l->live, 0)) bp__pool_local_idle(l);
    return BP_OK;
}

/* --------------------------------------------- learn.c: learned sequences */

/* The hook table (see above). */
extern const bp__pool_learn_hooks bp__pool_learn;
/* Frees recording r (NULL: nothing). */
void bp__pool_learn_rec_free(bp_pool *p, struct lrec *r);
/* Frees plan q (off the pool's list) and its pool block (q->block, 0: none). */
void bp__pool_learn_pat_destroy(bp_pool *p, ppat *q);

#endif /* BP_POOL_INTERNAL_H */
