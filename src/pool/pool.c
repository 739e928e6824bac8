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
 * *served* instead (a test hook, bp__pool_set_seed_bug) strands it where it
 * can never merge back, and the large classes erode until the pool must grow.
 *
 * Arenas: the class lists live in arenas.  Arena 0 (shared) holds the
 * up-front reservation and the chunks of freed handles; every thread cache
 * (a bp_pool_local, the plain API's included) owns one more, and a chunk
 * belongs to one arena (pchunk.arena).  A thread allocates from its cache,
 * then its own arena's lists (uncontended locks), then the shared arena's,
 * and grows into its own arena; so two threads never meet on a class lock
 * and never flush each other.  A free of another arena's block goes to that
 * arena's list under its class lock (bp__pool_lock_home re-reads the owner
 * under the lock: a chunk changes arena only under every class lock).  A freed
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
 * the global lock, so there is no lock-order cycle.  (A borrow takes only
 * the donor's lock, not the global one: it touches one list.)
 *
 * The large region (bp__pool_region_grow): with a backend that can reserve
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
 * pool, large freed blocks beyond one per bin go back to the lists
 * (bp__pool_loc_keep), so a repeated trace reuses the pages it touched
 * before.  In a larger pool, a cache whose last handed-out block is freed
 * goes back to the lists (bp__pool_local_idle), so each repetition of a
 * trace starts from the same merged lists and makes the same choices: no
 * growth after warm-up.  Other
 * threads never touch a handle: they set its flush flag (compact, trim, or a
 * pool that cannot grow), honoured at its next call.
 *
 * Files, each calling only those before it: blocks.c (classes, locks,
 * descriptors, free lists), chunks.c (chunks, page maps and the chunk
 * index, the region, merge passes), alloc.c (the arenas' lists, the slow
 * path, caches back to the lists, trim), local.c (local handles, the plain
 * API and its thread caches), learn.c (learned sequences and the handles'
 * alloc and dealloc; the files below reach it through the hook table
 * bp__pool_learn), and this one (lifecycle, compact and trim, the arena,
 * statistics, test hooks and the invariant check).  pool_internal.h has
 * the shared state and the inline hit paths.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/internal.h"
#include "pool/pool_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

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
    p->learn_hooks = o->learn ? &bp__pool_learn : NULL;
    p->vm = bp__pool_backend_vm(&p->be);
    p->desc_next = 1; /* 0 means "none" */
    p->meta_bytes = raw_size;
    bp__pool_arena_init(&p->shared, 0);
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
    p->has_key = pthread_key_create(&p->key, bp__pool_mag_exit) == 0;
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
        uint32_t b = want >= o->reserve_bytes ? bp__pool_grow(p, &p->shared, NCLS - 1, want, &why) : 0;
        if (b) {
            pcls *K = &p->shared.cls[NCLS - 1];
            bp__pool_spin_lock(&K->lock);
            bp__pool_push(p, K, b);
            bp__pool_spin_unlock(&K->lock);
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
        if (c->live) bp__pool_chunk_release(p, c);
        bp__pool_map_free(p, c);
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
        bp__pool_learn_pat_destroy(p, q);
        q = next;
    }
    for (bp_pool_local *l = p->locals; l;) {
        bp_pool_local *next = l->next;
        bp__pool_learn_rec_free(p, l->rec);
        bp__pool_local_struct_free(p, l);
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

/* ------------------------------------------------------- compact and trim */

void bp_pool_compact(bp_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->global);
    bp__pool_mag_flush_all(p);
    bp__pool_locals_request_flush(p);
    bp__pool_lock_all(p);
    bp__pool_merge_locked(p, NULL);
    bp__pool_unlock_all(p);
    pthread_mutex_unlock(&p->global);
}

uint64_t bp_pool_trim(bp_pool *p)
{
    return p ? bp__pool_trim(p, NULL) : 0;
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
    bp__pool_mag_flush_all(p); /* exact counts: every cached block back on its list */
    bp__pool_lock_all(p);
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
                for (uint32_t i = K->head[31 - __builtin_clz(K->bins)]; i; i = bp__pool_desc(p, i)->next_free)
                    if (bp__pool_desc(p, i)->size > s->largest_free_bytes)
                        s->largest_free_bytes = bp__pool_desc(p, i)->size;
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
    bp__pool_spin_lock(&p->meta);
    s->meta_bytes = p->meta_bytes + (uint64_t)p->n_slabs * DESC_SLAB * sizeof(pblk); /* slabs: under meta */
    bp__pool_spin_unlock(&p->meta);
    bp__pool_unlock_all(p);
    pthread_mutex_unlock(&p->global);
}

void bp_pool_stats_print(bp_pool *p, FILE *f)
{
    if (!f) return;
    if (!p) { fprintf(f, "pool: none\n"); return; }
    bp_pool_stats s;
    bp_pool_get_stats(p, &s);
    fprintf(f, "pool (%s, alignment %" PRIu64 ")\n", p->be.name ? p->be.name : "backend", p->quantum);
    /* decommits: learning handles giving a freed block's pages back (docs/POOL.md) */
    uint64_t dec = atomic_load_explicit(&p->decommits, memory_order_relaxed);
    fprintf(f, "  reserved       %14" PRIu64 " bytes (peak %" PRIu64 ") in %" PRIu64 " pieces, %" PRIu64 " OS calls",
            s.reserved_bytes, s.peak_reserved_bytes, s.n_chunks, s.os_calls);
    if (dec) fprintf(f, " (%" PRIu64 " of them pages of freed blocks given back while learning)", dec);
    fputc('\n', f);
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
        bp__pool_class_name(k, name, sizeof name);
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
        if (l->locked) bp__pool_spin_lock(&l->lock);
    bp__pool_lock_all(p);
    uint64_t free_b = 0, used_b = 0, cached_b = 0, usable = 0, nfree = 0;
#define PCHECK(cond, ...) do { if (!(cond)) { st = bp__err(err, BP_ERR_VERIFY, __VA_ARGS__); goto done; } } while (0)
    for (size_t j = 0; j < p->n_chunks; j++) {
        pchunk *ch = p->chunks[j];
        if (!ch->live) continue;
        usable += ch->usable;
        PCHECK(bp__pool_find_chunk(p, ch->start) == ch, "chunk %zu not in the index", j);
        uintptr_t at = ch->start;
        uint32_t prev = 0;
        for (uint32_t i = ch->first; i; prev = i, i = bp__pool_desc(p, i)->next_phys) {
            pblk *b = bp__pool_desc(p, i);
            unsigned s = atomic_load(&b->state);
            PCHECK(BADDR(b) == at, "chunk %zu: block %u at %#" PRIxPTR ", expected %#" PRIxPTR, j, i, BADDR(b), at);
            PCHECK(b->size && (b->size & (p->quantum - 1)) == 0, "block %u: size %" PRIu64, i, b->size);
            PCHECK(b->chunk == ch && b->prev_phys == prev, "block %u: bad chunk or prev link", i);
            PCHECK(atomic_load(bp__pool_chunk_slot(ch, (BADDR(b) - ch->start) >> p->qshift)) == i,
                   "block %u: page map", i);
            PCHECK(s == BLK_FREE || s == BLK_USED || s == BLK_GOING || s == BLK_CACHED, "block %u: state %u", i, s);
            PCHECK(b->home < NCLS, "block %u: home %u", i, b->home);
            if (s == BLK_FREE) { free_b += b->size; nfree++; }
            else if (s == BLK_CACHED) cached_b += b->size;
            else used_b += b->size;
            for (uintptr_t g = BADDR(b) + p->quantum; g < BADDR(b) + b->size; g += p->quantum)
                if (atomic_load(bp__pool_chunk_slot(ch, (g - ch->start) >> p->qshift)) != 0)
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
            if (p->chunks[j]->live && bp__pool_chunk_arena(p->chunks[j]) == a) ab += p->chunks[j]->bytes;
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
                for (uint32_t i = K->head[j]; i; prev = i, i = bp__pool_desc(p, i)->next_free) {
                    pblk *b = bp__pool_desc(p, i);
                    PCHECK(atomic_load(&b->state) == BLK_FREE, "arena %d: class %d: block %u on the free list is not "
                           "free", a->id, k, i);
                    PCHECK(b->home == k, "arena %d: class %d: block %u has home %u", a->id, k, i, b->home);
                    PCHECK(bp__pool_chunk_arena(b->chunk) == a, "arena %d: class %d: block %u is of arena %d", a->id, k,
                           i,
                           bp__pool_chunk_arena(b->chunk)->id);
                    PCHECK(b->prev_free == prev, "arena %d: class %d: block %u: bad prev_free", a->id, k, i);
                    PCHECK(bp__pool_bin(b->size) == j, "arena %d: class %d: block %u in the wrong size bin", a->id, k,
                           i);
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
                    PCHECK(atomic_load(&x->state) == BLK_CACHED && bp__pool_loc_floor(x->size >> p->qshift) == j &&
                           bp__pool_desc(p, x->id) == x,
                           "local cache: block %u (%" PRIu64 " bytes) is not a cached block of "
                           "class %u", x->id, x->size, j);
                    PCHECK(bp__pool_chunk_arena(x->chunk) == l->arena || bp__pool_chunk_arena(x->chunk) == &p->shared,
                           "local cache of arena %d: block %u is of arena %d", l->arena->id, x->id,
                           bp__pool_chunk_arena(x->chunk)->id);
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
    bp__pool_unlock_all(p);
    for (bp_pool_local *l = p->locals; l; l = l->next)
        if (l->locked) bp__pool_spin_unlock(&l->lock);
    pthread_mutex_unlock(&p->global);
    return st;
}
