/*
 * greedy.c — the canonical greedy: one depth-first dive of the exact
 * search (search.c) without backtracking, repeated with reordering.
 *
 * A pass places buffers bottom-up: the next buffer is the unplaced one with
 * the lowest floor (the highest end of the placed buffers overlapping it in
 * time, aligned, moved above any pre-placed buffer it would hit), ties by a
 * priority; it goes at its floor.  This is a skyline packing: every buffer
 * rests on another or on 0, and the floors of an indexed heap only rise.
 * A pass costs O((n + overlaps) log n).
 *
 * Passes run over static priorities (MiniMalloc's preorders: largest
 * cross-section it lives in, length, area, size), then squeaky-wheel
 * optimisation (Joslin & Clements): the buffers that ended above the lower
 * bound are blamed in proportion to how far, and the next pass gives the
 * most-blamed buffers the first pick among equal floors.  Passes stop at the
 * lower bound, when a deterministic work budget (overlap visits) is spent,
 * or at the deadline.  Every pass is aborted as soon as it cannot beat the
 * best arena so far.
 */
#include "assign/assign_internal.h"

#include <stdlib.h>
#include <string.h>

/* The overlap lists are skipped beyond this many pairs (bestfit's interval
 * tree handles those inputs). */
#define GR_MAX_PAIRS 8000000u
/* Static priorities tried before the squeaky-wheel passes. */
#define GR_N_STATIC 5

typedef struct gr_ctx {
    uint32_t k, nf;
    uint32_t *orig;          /* k: index in the caller's array */
    uint64_t *size, *align;  /* k */
    uint32_t *ov_off, *ov;   /* CSR: free buffers overlapping in time */
    uint32_t *fx_off, *fx;   /* CSR: pre-placed buffers overlapping in time */
    size_t n_ov, n_fx;       /* entries allocated in ov, fx */
    uint64_t *fxo, *fxe;     /* nf: pre-placed offset / end */
    uint64_t base;           /* top of the pre-placed buffers */
    uint64_t *floor_, *off;  /* k */
    uint32_t *heap, *hpos;   /* indexed min-heap on (floor, prio); hpos UINT32_MAX = placed */
    uint32_t hn;
    const uint32_t *prio;
    uint64_t work;
    const bp_allocator *a;   /* all of the above */
} gr_ctx;

/* Lowest aligned offset >= o where b misses every pre-placed buffer. */
static uint64_t gr_adjust(const gr_ctx *c, uint32_t b, uint64_t o)
{
    uint32_t e0 = c->fx_off[b], e1 = c->fx_off[b + 1];
    bool moved = true;
    while (moved) {
        moved = false;
        for (uint32_t e = e0; e < e1; e++) {
            uint32_t f = c->fx[e];
            if (o < c->fxe[f] && c->fxo[f] < o + c->size[b]) { o = bp__align_up(c->fxe[f], c->align[b]); moved = true; }
        }
    }
    return o;
}

static inline bool gr_less(const gr_ctx *c, uint32_t a, uint32_t b)
{
    return c->floor_[a] < c->floor_[b] || (c->floor_[a] == c->floor_[b] && c->prio[a] < c->prio[b]);
}

static void gr_sift_down(gr_ctx *c, uint32_t i)
{
    uint32_t x = c->heap[i];
    for (;;) {
        uint32_t l = 2 * i + 1;
        if (l >= c->hn) break;
        uint32_t m = l + 1 < c->hn && gr_less(c, c->heap[l + 1], c->heap[l]) ? l + 1 : l;
        if (!gr_less(c, c->heap[m], x)) break;
        c->heap[i] = c->heap[m]; c->hpos[c->heap[i]] = i;
        i = m;
    }
    c->heap[i] = x; c->hpos[x] = i;
}

/* One pass with priorities prio; returns the arena, or UINT64_MAX when it
 * reached `cutoff`. */
static uint64_t gr_pass(gr_ctx *c, const uint32_t *prio, uint64_t cutoff)
{
    c->prio = prio;
    uint32_t k = c->k;
    for (uint32_t b = 0; b < k; b++) {
        c->floor_[b] = c->nf ? gr_adjust(c, b, 0) : 0;
        c->heap[b] = b; c->hpos[b] = b;
    }
    c->hn = k;
    for (uint32_t i = k / 2; i-- > 0;) gr_sift_down(c, i);
    uint64_t arena = c->base;
    while (c->hn) {
        uint32_t b = c->heap[0];
        c->hpos[b] = UINT32_MAX;
        if (--c->hn) { c->heap[0] = c->heap[c->hn]; gr_sift_down(c, 0); }
        uint64_t o = c->floor_[b], top = o + c->size[b];
        c->off[b] = o;
        if (top > arena) { arena = top; if (arena >= cutoff) return UINT64_MAX; }
        uint32_t e0 = c->ov_off[b], e1 = c->ov_off[b + 1];
        c->work += e1 - e0 + 1;
        for (uint32_t e = e0; e < e1; e++) {
            uint32_t x = c->ov[e];
            if (c->hpos[x] == UINT32_MAX) continue;
            uint64_t nm = bp__align_up(top, c->align[x]);
            if (nm <= c->floor_[x]) continue;
            c->floor_[x] = c->nf ? gr_adjust(c, x, nm) : nm;
            gr_sift_down(c, c->hpos[x]);
        }
    }
    return arena;
}

static void gr_free(gr_ctx *c)
{
    const bp_allocator *a = c->a;
    size_t k = c->k ? c->k : 1, nf = c->nf ? c->nf : 1;
    bp__free(a, c->orig, k * sizeof *c->orig);
    bp__free(a, c->size, k * sizeof *c->size);
    bp__free(a, c->align, k * sizeof *c->align);
    bp__free(a, c->ov_off, (k + 1) * sizeof *c->ov_off);
    bp__free(a, c->fx_off, (k + 1) * sizeof *c->fx_off);
    bp__free(a, c->ov, c->n_ov * sizeof *c->ov);
    bp__free(a, c->fx, c->n_fx * sizeof *c->fx);
    bp__free(a, c->fxo, nf * sizeof *c->fxo);
    bp__free(a, c->fxe, nf * sizeof *c->fxe);
    bp__free(a, c->floor_, k * sizeof *c->floor_);
    bp__free(a, c->off, k * sizeof *c->off);
    bp__free(a, c->heap, k * sizeof *c->heap);
    bp__free(a, c->hpos, k * sizeof *c->hpos);
}

static uint64_t gr_sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return bp__mul_u64(a, b, &r) ? r : UINT64_MAX;
}

int bp__assign_greedy(const bp_allocator *a, const bp_interval *iv, size_t n, uint64_t lb, uint64_t work,
                      double deadline, uint64_t *offsets, uint64_t *arena)
{
    gr_ctx c;
    memset(&c, 0, sizeof c);
    c.a = a;
    if (n >= UINT32_MAX / 2) return 1;
    uint32_t k, nf;
    bp__assign_count(iv, n, &k, &nf);
    if (k == 0) return 0;
    uint32_t nt = k + nf; /* all sized buffers: free ones 0..k-1, fixed k.. */
    int rc = -1;
    /* scratch, freed at `out` with these sizes */
    size_t n_secmax = 2 * (size_t)nt + 1;
    bp__tp *tp = bp__alloc(a, 2 * (size_t)nt * sizeof *tp);
    uint32_t *ids = bp__alloc(a, (size_t)nt * sizeof *ids);
    uint64_t *secmax = NULL, *T = NULL, *len = NULL, *boff = NULL;
    uint32_t *rank = NULL, *prio = NULL;
    bp__prio_key *keys = NULL;
    double *blame = NULL;
    c.k = k; c.nf = nf;
    c.orig = bp__alloc(a, (size_t)k * sizeof *c.orig);
    c.size = bp__alloc(a, (size_t)k * sizeof *c.size);
    c.align = bp__alloc(a, (size_t)k * sizeof *c.align);
    c.ov_off = bp__calloc(a, (size_t)k + 1, sizeof *c.ov_off);
    c.fx_off = bp__calloc(a, (size_t)k + 1, sizeof *c.fx_off);
    c.fxo = bp__alloc(a, (nf ? nf : 1) * sizeof *c.fxo);
    c.fxe = bp__alloc(a, (nf ? nf : 1) * sizeof *c.fxe);
    c.floor_ = bp__alloc(a, (size_t)k * sizeof *c.floor_);
    c.off = bp__alloc(a, (size_t)k * sizeof *c.off);
    c.heap = bp__alloc(a, (size_t)k * sizeof *c.heap);
    c.hpos = bp__alloc(a, (size_t)k * sizeof *c.hpos);
    if (!tp || !ids || !c.orig || !c.size || !c.align || !c.ov_off || !c.fx_off ||
        !c.fxo || !c.fxe || !c.floor_ || !c.off || !c.heap || !c.hpos) goto out;
    {
        uint64_t pairs = bp__assign_endpoints(iv, n, k, nf, tp, ids);
        for (uint32_t q = 0; q < k; q++) {
            const bp_interval *x = &iv[ids[q]];
            c.orig[q] = ids[q];
            c.size[q] = x->size;
            c.align[q] = x->alignment > 1 ? x->alignment : 1;
        }
        for (uint32_t f = 0; f < nf; f++) {
            const bp_interval *x = &iv[ids[k + f]];
            c.fxo[f] = x->fixed_offset;
            c.fxe[f] = x->fixed_offset + x->size;
            if (c.fxe[f] > c.base) c.base = c.fxe[f];
        }
        if (pairs > GR_MAX_PAIRS) { rc = 1; goto out; }
    }
    /* Overlap lists (free-free both ways, free-fixed into fx). */
    {
        bp__overlaps ol = { .ov_off = c.ov_off, .fx_off = c.fx_off };
        if (bp__assign_overlaps(a, tp, k, nf, &ol)) goto out;
        c.ov = ol.ov; c.n_ov = ol.n_ov;
        c.fx = ol.fx; c.n_fx = ol.n_fx;
    }
    /* Per segment the live total, for the cross-section priority T: the
     * largest total over a buffer's lifetime. */
    size_t n_seg = 0;
    secmax = bp__alloc(a, n_secmax * sizeof *secmax);
    T = bp__calloc(a, k, sizeof *T);
    len = bp__alloc(a, (size_t)k * sizeof *len);
    if (!secmax || !T || !len) goto out;
    {
        uint64_t tot = 0;
        uint32_t *seg_lo = bp__alloc(a, (size_t)nt * sizeof *seg_lo);
        if (!seg_lo) goto out;
        for (size_t e = 0; e < 2 * (size_t)nt; e++) {
            uint32_t b = tp[e].b;
            if (e > 0 && tp[e].t != tp[e - 1].t) { secmax[n_seg++] = tot; }
            if (tp[e].end) {
                tot -= b < k ? c.size[b] : c.fxe[b - k] - c.fxo[b - k];
                if (b < k) {
                    /* segments [seg_lo[b], n_seg) */
                    uint64_t m = 0;
                    for (size_t s = seg_lo[b]; s < n_seg; s++) if (secmax[s] > m) m = secmax[s];
                    T[b] = m;
                }
                continue;
            }
            seg_lo[b] = (uint32_t)n_seg;
            tot += b < k ? c.size[b] : c.fxe[b - k] - c.fxo[b - k];
        }
        bp__free(a, seg_lo, (size_t)nt * sizeof *seg_lo);
    }

    /* Static priorities. */
    rank = bp__alloc(a, (size_t)GR_N_STATIC * k * sizeof *rank);
    prio = bp__alloc(a, (size_t)k * sizeof *prio);
    keys = bp__alloc(a, (size_t)k * sizeof *keys);
    blame = bp__calloc(a, k, sizeof *blame);
    boff = bp__alloc(a, (size_t)k * sizeof *boff);
    if (!rank || !prio || !keys || !blame || !boff) goto out;
    for (uint32_t b = 0; b < k; b++) {
        const bp_interval *x = &iv[c.orig[b]];
        len[b] = (uint64_t)x->upper - (uint64_t)x->lower;
    }
    for (int h = 0; h < GR_N_STATIC; h++) {
        for (uint32_t b = 0; b < k; b++) {
            uint64_t A = gr_sat_mul(c.size[b], len[b]);
            keys[b].b = b;
            switch (h) {
            case 0: keys[b].k1 = T[b]; keys[b].k2 = A; keys[b].k3 = len[b]; break;
            case 1: keys[b].k1 = T[b]; keys[b].k2 = len[b]; keys[b].k3 = A; break;
            case 2: keys[b].k1 = c.size[b]; keys[b].k2 = len[b]; keys[b].k3 = 0; break;
            case 3: keys[b].k1 = len[b]; keys[b].k2 = A; keys[b].k3 = T[b]; break;
            default: keys[b].k1 = A; keys[b].k2 = c.size[b]; keys[b].k3 = 0; break;
            }
        }
        qsort(keys, k, sizeof *keys, bp__prio_key_cmp);
        for (uint32_t r = 0; r < k; r++) rank[(size_t)h * k + keys[r].b] = r;
    }
    uint64_t best = *arena;
    bool improved = false;
    int best_h = 0;
    for (int h = 0; h < GR_N_STATIC && best > lb; h++) {
        uint64_t ar = gr_pass(&c, rank + (size_t)h * k, best);
        if (ar < best) { best = ar; best_h = h; improved = true; memcpy(boff, c.off, (size_t)k * sizeof *boff); }
        if (work && c.work >= work) break;
        if (deadline > 0 && bp__now() >= deadline) break;
    }
    /* Squeaky wheel from the best static order. */
    {
        const uint32_t *base = rank + (size_t)best_h * k;
        uint64_t cur = best;
        /* the last full pass: the best one, else the incoming layout (a
         * static pass cut off above the best leaves c.off partly unwritten) */
        if (improved) memcpy(c.off, boff, (size_t)k * sizeof *c.off);
        else for (uint32_t b = 0; b < k; b++) c.off[b] = offsets[c.orig[b]];
        /* passes: bounded by the work budget and by a count that grows with
         * the instance (tiny ones converge in a few passes) */
        uint64_t max_passes = work > 1000000 ? 64 + 16 * (uint64_t)k : 16 + (uint64_t)k / 8;
        for (uint64_t pass = 0; pass < max_passes && best > lb && (!work || c.work < work) &&
                                (deadline <= 0 || bp__now() < deadline); pass++) {
            /* blame from the last full pass (c.off) */
            uint64_t target = lb;
            uint64_t span = cur > target ? cur - target : 1;
            for (uint32_t b = 0; b < k; b++) {
                uint64_t top = c.off[b] + c.size[b];
                blame[b] *= 0.99;
                if (top > target) blame[b] += (double)(top - target) / (double)span;
            }
            for (uint32_t b = 0; b < k; b++) {
                keys[b].b = b;
                keys[b].k1 = (uint64_t)(blame[b] * 1024.0);
                keys[b].k2 = UINT64_MAX - base[b];
                keys[b].k3 = 0;
            }
            qsort(keys, k, sizeof *keys, bp__prio_key_cmp);
            for (uint32_t r = 0; r < k; r++) prio[keys[r].b] = r;
            uint64_t ar = gr_pass(&c, prio, UINT64_MAX);
            cur = ar;
            if (ar < best) { best = ar; improved = true; memcpy(boff, c.off, (size_t)k * sizeof *boff); }
        }
    }
    if (improved) {
        for (uint32_t b = 0; b < k; b++) offsets[c.orig[b]] = boff[b];
        for (size_t i = 0; i < n; i++)
            if (iv[i].fixed_offset != BP_NO_OFFSET) offsets[i] = iv[i].fixed_offset;
        *arena = best;
    }
    rc = 0;
out:
    bp__free(a, tp, 2 * (size_t)nt * sizeof *tp);
    bp__free(a, ids, (size_t)nt * sizeof *ids);
    bp__free(a, secmax, n_secmax * sizeof *secmax);
    bp__free(a, T, (size_t)k * sizeof *T);
    bp__free(a, len, (size_t)k * sizeof *len);
    bp__free(a, rank, (size_t)GR_N_STATIC * k * sizeof *rank);
    bp__free(a, prio, (size_t)k * sizeof *prio);
    bp__free(a, keys, (size_t)k * sizeof *keys);
    bp__free(a, blame, (size_t)k * sizeof *blame);
    bp__free(a, boff, (size_t)k * sizeof *boff);
    gr_free(&c);
    return rc;
}
