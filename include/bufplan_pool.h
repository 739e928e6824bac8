/* bufplan — runtime buffer pool; included by bufplan.h, not meant to be
 * included alone.  Design and rationale: docs/POOL.md.
 *
 * The pool owns the real memory a plan refers to.  Two uses:
 *   - plan-backed: bp_pool_new_arena(arena_bytes) reserves one arena of
 *     exactly the plan's size; tensors are bound at their plan offsets with
 *     bp_pool_arena_bind(), and running the plan allocates nothing.
 *   - dynamic: bp_pool_alloc() / bp_pool_dealloc() serve tensors the plan
 *     cannot place (symbolic shapes) from size classes over a few large
 *     pieces of backing memory.
 * Both can be used on the same pool.  Backing memory comes from a backend
 * (mmap by default; a CUDA backend when built with CUDA).  The pool never
 * reads or writes the memory it hands out (its metadata lives on the host),
 * so device memory works.  All functions are thread-safe. */
/* bufplan.h first (outside the guard): it declares the core types and
 * includes every part of the API in order, this one included. */
#include "bufplan.h"
#ifndef BUFPLAN_POOL_H
#define BUFPLAN_POOL_H

#include "bufplan_api.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct bp_pool bp_pool;

/* ---------------------------------------------------------------- backend */

/* Where backing memory comes from.  reserve returns `bytes` of memory (NULL
 * on failure) aligned to at least base_alignment; release gives it back with
 * the same size.  Both are called rarely (growth, trim, destroy) and under the
 * pool's global lock.  The struct is copied by bp_pool_new(); ctx must stay
 * valid until the pool is freed. */
typedef struct bp_pool_backend {
    const char *name;                 /* for messages: "mmap", "cuda:0", ... */
    void *(*reserve)(void *ctx, size_t bytes);
    void (*release)(void *ctx, void *base, size_t bytes);
    void *ctx;
    size_t granularity;               /* reserve sizes are multiples of this (power of two); 0 = 64 KiB */
    size_t base_alignment;            /* alignment reserve guarantees (power of two); 0 = 4096 */
    int host_accessible;              /* 1 when the CPU can touch the memory (informational) */
} bp_pool_backend;

/* Anonymous private mmap (MAP_NORESERVE), released with munmap. */
BP_API void bp_pool_backend_mmap(bp_pool_backend *out);
/* cudaMalloc / cudaFree on `device`.  BP_ERR_UNSUPPORTED when bufplan was
 * built without CUDA or no such device exists. */
BP_API bp_status bp_pool_backend_cuda(int device, bp_pool_backend *out, bp_error *err);

/* ---------------------------------------------------------------- options */

/* Size classes: 256 B .. 128 KiB in powers of two (10 fine classes), then
 * 256 KiB, 1 MiB, 4 MiB, 16 MiB, 64 MiB (5 coarse classes; the last one is
 * open-ended).  Class k serves rounded sizes in [bp_pool_class_min(k),
 * bp_pool_class_min(k + 1)). */
#define BP_POOL_N_CLASSES 15

typedef struct bp_pool_options {
    uint64_t alignment;        /* of every block, power of two; default 256.  Sizes are
                                  rounded up to max(256, alignment). */
    uint64_t max_bytes;        /* limit on bytes reserved from the backend (arena included);
                                  0 = none.  Past it, allocations fail with BP_ERR_EXHAUSTED. */
    uint64_t grow_bytes;       /* largest minimum piece reserved per backend call; default 2 MiB.
                                  Small classes grow by min(grow_bytes, max(16 x class size,
                                  reserved / 8)): geometric, so chunks stay few. */
    uint64_t reserve_bytes;    /* reserved at creation as one piece every class can borrow
                                  from; default 0 */
    uint32_t compact_interval; /* merge adjacent free blocks every this many deallocs;
                                  0 = only when the pool would otherwise grow.  Default 4096. */
    uint32_t max_scan;         /* best fit looks at this many candidates per class at most
                                  (an exact fit stops at once); 0 = all.  Default 64. */
    int learn;                 /* 1: local handles learn a request sequence that repeats and serve
                                  it from a plan (bp_pool_local_new); default 0.  docs/POOL.md,
                                  "Learned sequences". */
    const bp_pool_backend *backend; /* NULL = mmap */
    const bp_allocator *alloc;      /* host metadata; NULL = libc */
} bp_pool_options;

BP_API void bp_pool_options_init(bp_pool_options *o);
/* Smallest rounded size of class k (k in 0..BP_POOL_N_CLASSES), UINT64_MAX for
 * k == BP_POOL_N_CLASSES. */
BP_API uint64_t bp_pool_class_min(int k);
/* The class that serves a request of `bytes` (after rounding to 256). */
BP_API int bp_pool_class_of(uint64_t bytes);

/* ------------------------------------------------------------- lifecycle */

/* A dynamic pool (no arena).  o may be NULL for the defaults. */
BP_API bp_status bp_pool_new(const bp_pool_options *o, bp_pool **out, bp_error *err);
/* A plan-backed pool: one arena of exactly arena_bytes (the executor passes
 * bp_plan_get_stats(plan)->arena_bytes) reserved in one backend call, plus the
 * dynamic classes for whatever the plan could not place.  arena_bytes may be
 * 0 (then the arena base is NULL). */
BP_API bp_status bp_pool_new_arena(uint64_t arena_bytes, const bp_pool_options *o,
                                   bp_pool **out, bp_error *err);
/* Releases all backing memory, including blocks still allocated. */
BP_API void bp_pool_free(bp_pool *p);

/* ----------------------------------------------------------------- arena */

BP_API void *bp_pool_arena_base(const bp_pool *p);
BP_API uint64_t bp_pool_arena_bytes(const bp_pool *p);
/* *ptr = arena base + offset after checking [offset, offset + bytes) lies in
 * the arena (BP_ERR_USAGE otherwise).  Allocates nothing. */
BP_API bp_status bp_pool_arena_bind(const bp_pool *p, uint64_t offset, uint64_t bytes,
                                    void **ptr, bp_error *err);

/* ------------------------------------------------------- dynamic blocks */

/* A block of at least `bytes` (0 counts as 1), aligned to the pool's
 * alignment.  On failure *ptr is NULL and the status is BP_ERR_EXHAUSTED
 * (max_bytes reached or the backend refused; the message gives the request
 * and the pool's state), BP_ERR_NOMEM (host metadata) or BP_ERR_USAGE. */
BP_API bp_status bp_pool_alloc(bp_pool *p, uint64_t bytes, void **ptr, bp_error *err);
/* Returns a block.  NULL is a no-op.  A pointer that is not a live block of
 * this pool (double free, interior pointer, foreign pointer) is reported as
 * BP_ERR_USAGE and ignored. */
BP_API bp_status bp_pool_dealloc(bp_pool *p, void *ptr, bp_error *err);
/* Usable bytes of a live block (its rounded size), 0 if ptr is not one. */
BP_API uint64_t bp_pool_block_bytes(bp_pool *p, const void *ptr);

/* ------------------------------------------------ per-thread handles */

/* A local handle: one thread's cache of freed blocks, in front of the pool
 * (like a mimalloc heap or a jemalloc explicit tcache).  Make one per worker
 * thread; a handle must not be used by two threads at once (handing it from
 * one thread to another with proper synchronisation is fine).  Its hit path
 * takes no lock, no atomic read-modify-write and no thread-local lookup:
 *   - Requests (of at most 2^31 quanta) are rounded up to a cache class: one
 *     per quantum up to 15 quanta, then 4 per power of two (waste below a
 *     quarter of the request; bp_pool_alloc rounds the same way).
 *     bp_pool_local_dealloc puts the block on the handle's stack for its
 *     class; bp_pool_local_alloc of any size of that class pops it again.
 *   - A miss is served from the pool's class lists like bp_pool_alloc; when
 *     they have nothing that fits, the handle returns its own cache first,
 *     so cached blocks never make the pool grow for their owner.
 * Any live block of the pool may be freed through any handle or through
 * bp_pool_dealloc, and the other way round (cross-thread frees are fine).  A
 * double free through a handle is detected when the two frees are ordered
 * (the same thread, or synchronised threads); two threads freeing the same
 * block at the same moment is a bug in the caller that is not detected.
 * The cache holds at most cache_bytes (0 = max(8 MiB, a quarter of the
 * pool's reserved bytes)).  When another thread grows, compacts or trims the
 * pool, the handle returns its cache at its next call (a handle that makes
 * no more calls keeps it: free or flush handles of idle threads).  Free every
 * handle before the pool; bp_pool_free frees the ones left. */
typedef struct bp_pool_local bp_pool_local;

BP_API bp_status bp_pool_local_new(bp_pool *p, uint64_t cache_bytes, bp_pool_local **out, bp_error *err);
/* Returns the cache to the pool and frees the handle.  NULL is a no-op. */
BP_API void bp_pool_local_free(bp_pool_local *l);
/* As bp_pool_alloc / bp_pool_dealloc, through the handle's cache. */
BP_API bp_status bp_pool_local_alloc(bp_pool_local *l, uint64_t bytes, void **ptr, bp_error *err);
BP_API bp_status bp_pool_local_dealloc(bp_pool_local *l, void *ptr, bp_error *err);
/* Returns every cached block to the pool's lists (the owner thread). */
BP_API void bp_pool_local_flush(bp_pool_local *l);

/* Merges adjacent free blocks now (what compact_interval does periodically). */
BP_API void bp_pool_compact(bp_pool *p);
/* Merges, then returns pieces that are entirely free to the backend.
 * Returns the bytes released. */
BP_API uint64_t bp_pool_trim(bp_pool *p);

/* ------------------------------------------------------------- statistics */

typedef struct bp_pool_stats {
    uint64_t reserved_bytes;        /* held from the backend now (arena included) */
    uint64_t peak_reserved_bytes;
    uint64_t arena_bytes;
    uint64_t in_use_bytes;          /* dynamic blocks handed out (rounded sizes) */
    uint64_t peak_in_use_bytes;
    uint64_t free_bytes;            /* reserved - arena - in use: in free blocks */
    uint64_t largest_free_bytes;    /* the largest free block */
    double fragmentation;           /* 1 - largest_free / free (0 when nothing is free) */
    uint64_t os_calls;              /* backend reserve + release calls */
    uint64_t n_chunks;              /* pieces held from the backend (arena included) */
    uint64_t n_allocs, n_deallocs;  /* successful calls */
    uint64_t n_live_blocks, n_free_blocks;
    uint64_t borrows;               /* allocations served from a larger class */
    uint64_t compactions, merges;   /* merge passes, blocks merged away */
    uint64_t failures;              /* allocations that failed */
    uint64_t meta_bytes;            /* host memory for the pool's own metadata */
    uint64_t class_free_bytes[BP_POOL_N_CLASSES];  /* free bytes by owning class */
    uint64_t class_allocs[BP_POOL_N_CLASSES];      /* allocations served from each class's free lists */
    uint64_t cached_bytes;          /* freed blocks held in local handles (counted in neither
                                       in_use_bytes nor free_bytes; the plain API's per-thread
                                       caches are returned before the snapshot) */
    uint64_t cache_hits;            /* allocations served from a thread cache or a local handle */
    uint64_t n_locals;              /* live local handles (bp_pool_local_new) */
    uint64_t learned_plans;         /* plans of learned sequences (options.learn) */
    uint64_t learned_bytes;         /* the blocks that hold them (counted in in_use_bytes) */
    uint64_t learned_allocs;        /* allocations served from them (not in n_allocs) */
} bp_pool_stats;

/* A consistent snapshot (briefly takes every lock). */
BP_API void bp_pool_get_stats(bp_pool *p, bp_pool_stats *out);
/* A human-readable summary (for `bufplan run --stats`). */
BP_API void bp_pool_stats_print(bp_pool *p, FILE *f);

#ifdef __cplusplus
}
#endif
#endif /* BUFPLAN_POOL_H */
