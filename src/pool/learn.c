/*
 * learn.c — learned sequences (options.learn): a handle logs its calls, finds
 * the repeating sequence by KMP over its segments, plans it with bestfit into
 * one pool block and serves repetitions from it; the handles' alloc/dealloc.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/internal.h"
#include "pool/pool_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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

#define LEARN_MAX_EV (UINT32_C(1) << 19)   /* events a log may hold (it starts over at half of it) */
#define LEARN_TRIES 6                      /* logs started over or plans dropped before learning stops */
#define LEARN_MISSES 2
#define LEARN_DECOMMIT (UINT64_C(16) << 10) /* freed blocks this large give their pages back while learning */
#define LEARN_DECOMMIT_EV (UINT32_C(1) << 16) /* ... in a handle's first log, its first two segments,
                                                  and its first this many events */

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

static void learn_leave(bp_pool_local *l);

void bp__pool_learn_rec_free(bp_pool *p, lrec *r)
{
    if (!r) return;
    bp__free(&p->alloc, r->code, (size_t)r->cap * sizeof *r->code);
    bp__free(&p->alloc, r->seg, (size_t)r->cseg * sizeof *r->seg);
    bp__free(&p->alloc, r->hk, (size_t)r->hcap * sizeof *r->hk);
    bp__free(&p->alloc, r->hv, (size_t)r->hcap * sizeof *r->hv);
    bp__free(&p->alloc, r, sizeof *r);
}

/* A new handle of a pool made with options.learn starts to record. */
static void learn_start(bp_pool_local *l)
{
    bp_pool *p = l->pool;
    l->rec = bp__calloc(&p->alloc, 1, sizeof *l->rec);
    l->learn = l->rec != NULL;
    l->tries = LEARN_TRIES;
}

/* Learning stops for good (out of memory, or nothing repeats). */
static void learn_off(bp_pool_local *l)
{
    bp__pool_learn_rec_free(l->pool, l->rec);
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
void bp__pool_learn_pat_destroy(bp_pool *p, ppat *q)
{
    if (q->block) {
        uint32_t i = bp__pool_lookup(p, (void *)q->block);
        unsigned char st = BLK_USED;
        if (i && atomic_compare_exchange_strong_explicit(&bp__pool_desc(p, i)->state, &st, BLK_GOING,
                                                         memory_order_acq_rel, memory_order_relaxed))
            bp__pool_free_to_list_n(p, i, bp__pool_desc(p, i)->size, 1);
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
    bp__pool_learn_pat_destroy(p, q);
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
 * bp__pool_local_idle through the hook table) or a planned block was freed
 * off the plan: with a plan, the next sequence may start on it. */
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
    bp__pool_local_flush(l);
    bp__pool_local_delta_flush(l); /* its frees counted before the block is: the peak stays true */
    (void)bp__pool_trim(p, l->arena);
    /* the exact size, not a cache class: it is never cached */
    uint64_t sz = q->span + p->quantum;
    uint32_t i;
    if (bp__pool_alloc_uncached(p, l->arena, sz, sz, bp__pool_class(sz), &i, NULL) != BP_OK) goto fail;
    q->block = BADDR(bp__pool_desc(p, i));
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
    bp__pool_learn_rec_free(p, r);
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
    if (q) bp__pool_learn_pat_destroy(p, q);
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
    if (dead) bp__pool_learn_pat_destroy(p, q);
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
    bp__pool_learn_rec_free(p, l->rec);
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
    if (dead) bp__pool_learn_pat_destroy(p, q);
}

/* The sequence ran to the plan's end: the next one may start on it. */
static __attribute__((noinline)) void learn_wrap(bp_pool_local *l)
{
    l->cur = l->pat->pe;
    l->misses = 0;
    bp__pool_loc_set(&l->lhits, atomic_load_explicit(&l->lhits, memory_order_relaxed) + l->pat->n_slots);
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
    bp__pool_loc_set(&l->lhits, atomic_load_explicit(&l->lhits, memory_order_relaxed) + na);
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
    if (req > UINT64_MAX - p->quantum) return bp__pool_local_alloc_general(l, bytes, ptr, err);
    if (l->bytes) bp__pool_local_flush(l);
    bp__pool_local_delta_flush(l); /* the block is counted at once: its frees must be too */
    uint64_t sz = (req + p->quantum - 1) & ~(p->quantum - 1);
    uint32_t i;
    bp_status s = bp__pool_alloc_uncached(p, l->arena, bytes, sz, bp__pool_class(sz), &i, err);
    return s ? s : bp__pool_local_hand_out(l, i, ptr);
}

/* Not the plan's next allocation (or recording). */
static __attribute__((noinline)) bp_status learn_alloc(bp_pool_local *l, uint64_t bytes, void **ptr, bp_error *err)
{
    if (!ptr) return bp__pool_local_alloc_general(l, bytes, ptr, err);
    if (l->on) learn_leave(l);
    bp_status s = l->rec && l->learn == 1 ? learn_alloc_lists(l, bytes, ptr, err)
                                          : bp__pool_local_alloc_general(l, bytes, ptr, err);
    if (s == BP_OK && l->rec && l->learn == 1) learn_note_alloc(l, bytes, *ptr);
    return s;
}

static __attribute__((noinline)) bp_status learn_dealloc(bp_pool_local *l, void *ptr, bp_error *err)
{
    if (l->on) learn_leave(l);
    uintptr_t a = (uintptr_t)ptr;
    if (l->pat && a >= l->pat->base && a - l->pat->base < l->pat->span) return learn_free_any(l->pool, l, ptr, err);
    if (!l->rec || l->learn != 1) return bp__pool_local_dealloc_general(l, ptr, err);
    /* recorded once freed (the sequence may end here, and its plan is
     * made with nothing live); a bad pointer spoils the sequence */
    pblk *b = bp__pool_local_find(l, a);
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
    bp_status s = bp__pool_local_dealloc_slow(l, ptr, b ? b->id : 0, err);
    if (s == BP_OK && l->rec) learn_note_free(l, ptr);
    else if (l->rec) l->rec->spoilt = 1;
    return s;
}

/* The entry points of the files below (pool_internal.h). */
const bp__pool_learn_hooks bp__pool_learn = {
    .start = learn_start,
    .boundary = learn_boundary,
    .release = learn_release,
    .free_any = learn_free_any,
    .block_bytes = learn_block_bytes,
};

/* ----------------------------------------------------- the handles' calls */

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
    return bp__pool_local_alloc_general(l, bytes, ptr, err);
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
    return bp__pool_local_dealloc_general(l, ptr, err);
}
