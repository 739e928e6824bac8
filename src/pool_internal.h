/*
 * Test hooks of the pool (pool.c).  Not part of the public API.
 */
#ifndef BP_POOL_INTERNAL_H
#define BP_POOL_INTERNAL_H

#include "internal.h"

/* Re-enables the seed design's bug for tests: a block borrowed from a larger
 * class is returned, when freed, to the class it served instead of the class
 * it came from.  docs/POOL.md explains why this makes fragmentation drift. */
void bp__pool_set_seed_bug(bp_pool *p, int on);
/* Full invariant check (takes every lock): blocks tile every chunk, the page
 * maps point at block starts, free lists are consistent with the blocks and
 * the counters.  quiescent: also check that in-use bytes match the blocks
 * (only valid while no other thread is allocating). */
bp_status bp__pool_check(bp_pool *p, int quiescent, bp_error *err);

#endif /* BP_POOL_INTERNAL_H */
