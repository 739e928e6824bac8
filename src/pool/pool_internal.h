/*
 * Test hooks of the pool (pool.c), and the optional address-space
 * operations a backend may offer.  Not part of the public API.
 */
#ifndef BP_POOL_INTERNAL_H
#define BP_POOL_INTERNAL_H

#include "core/internal.h"

/* Re-enables the seed design's bug for tests: a block borrowed from a larger
 * class is returned, when freed, to the class it served instead of the class
 * it came from.  docs/POOL.md explains why this makes fragmentation drift. */
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
 * merges across growths (pool.c).  The mmap backend has them (PROT_NONE
 * reservation, mprotect to commit); a CUDA backend could with the driver's
 * virtual memory API (cuMemAddressReserve / cuMemMap).  decommit serves
 * the learned sequences (pool.c): while a handle learns, the pages of the
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

#endif /* BP_POOL_INTERNAL_H */
