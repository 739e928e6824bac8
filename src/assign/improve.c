/*
 * improve.c — bestfit's improvement phase on small inputs: randomised
 * skyline constructions, and an iterated greedy over placement orders.
 *
 * Skyline (no pre-placed buffers).  Time is cut at the distinct end points
 * into segments; the skyline is the height of the packing over each one.  A
 * construction repeatedly takes the lowest stretch of the skyline (a min
 * tree over the segments finds it; leftmost on ties) and fills it at its
 * level.  A fill chooses the set of unplaced buffers inside the stretch,
 * disjoint in time, of most weight (weighted interval scheduling, one pass
 * from the right over the segments: O(stretch + candidates)); a buffer
 * weighs the time it covers, more when it is large or tops out level with a
 * neighbour of the stretch, plus a little noise.  Filling the whole stretch
 * at once is what these near-perfect packings (the MiniMalloc instances)
 * need: the optimum leaves few gaps, and choosing one buffer at a time by a
 * score cannot see which choices tile the stretch.  Every third
 * construction is a pick instead: the one best-scored buffer (lifetime
 * relative to the stretch, size, starts / ends at its ends, level with a
 * neighbour): it wins on a few instances.  When nothing fits, the stretch is
 * raised to its lower neighbour (that space is wasted).  A segment's level
 * plus the bytes still unplaced in it bounds the arena (placements keep
 * that sum, only waste raises it), so a construction stops as soon as a
 * raise pushes some segment past the best arena so far.  The first
 * constructions use fixed weights, the rest random ones, every other one a
 * small perturbation of the best construction's weights.  Unplaced buffers
 * are listed by first segment (ascending by last).
 *
 * Ruin and recreate (the last 30% of the skyline's budget).  From the best
 * packing, the buffers ending above a random level 20-90% below its arena
 * are removed and placed again by a construction (random weights) whose
 * skyline starts as the highest kept buffer over each segment: a buffer
 * crossing the level sits above every kept one it shares time with, so no
 * space is lost.  A packing no higher than the current one replaces it.
 * With fresh constructions alone the gains flatten out (a construction
 * redoes the well-packed bottom every time); re-placing only the top is
 * ~10% cheaper per unit of work and lowered the mean over the MiniMalloc
 * instances (16 seeds) from 1.039 to 1.036 at the same budget.
 *
 * Between the two, when the constructions left the arena more than 3%
 * above max-live + 7%, one dive of search's depth-first search
 * (bp__assign_search_probe, order TCA, at most k nodes) asks for a packing
 * at max-live + 7%.  That is for instances whose max-live is well below the
 * optimum, where bestfit's probes at max-live are futile: on MiniMalloc's J
 * it finds 1.013 x the best known in one dive where the skyline ends at
 * 1.042.  A packing found is charged to ruin and recreate's budget.
 *
 * Orders (with pre-placed buffers).  A
 * solution is encoded as an order of the buffers; decoding places them in
 * that order, each at the lowest aligned offset where it misses the placed
 * buffers overlapping it in time and the pre-placed ones.  Decoding the
 * buffers of any solution sorted by offset gives each an offset no higher
 * than it had (the earlier ones end no higher, so its old offset is still
 * free): the incumbent is never lost, and the optimum is some order's
 * decoding.  Moves take a buffer ending at the peak (or any buffer) to an
 * earlier position, or swap two buffers overlapping in time; only the
 * suffix from the first changed position is decoded again, a decoding
 * stops as soon as one buffer ends above the current arena, and moves that
 * do not raise the arena are kept (walks along plateaus).  Each placement
 * visits only the buffers overlapping it in time (adjacency lists from
 * bp__assign_overlaps, O(n log n + overlaps)).
 *
 * Deterministic: a fixed-seed xorshift generator and a work budget in
 * deterministic units (skyline steps and candidates, overlap visits), not
 * the clock; the caller scales it, and gives up above a number of
 * overlapping pairs.  The optional deadline is for a caller on a clock
 * (search's incumbent phase could use it); bestfit passes none.
 */
#include "assign/assign_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct im_conf { uint64_t off, end; } im_conf;

typedef struct im_ctx {
    const bp_allocator *a;
    uint32_t k;
    uint32_t *orig;              /* k: index in the caller's array */
    uint64_t *size, *align;      /* k */
    uint32_t *adj_off, *adj;     /* CSR: free buffers overlapping in time */
    uint32_t *fx_off;            /* CSR into fxo/fxe: pre-placed obstacles */
    uint64_t *fxo, *fxe;
    size_t n_adj, n_fx;
    uint32_t *perm, *pos;        /* the order and each buffer's position in it */
    uint64_t *off, *cur;         /* trial offsets; offsets of the current order */
    uint64_t *pmax, *tmax;       /* k + 1: max end over positions < p (current / trial) */
    im_conf *conf;               /* scratch, max degree */
    size_t conf_cap;
    uint64_t work;
} im_ctx;

static uint64_t im_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return *s = x;
}

static void im_sort_conf(im_conf *c, size_t k)
{
    /* insertion sort for the short lists, quicksort (smaller side first) above */
    while (k > 24) {
        size_t mid = k / 2;
        uint64_t a0 = c[0].off, a1 = c[mid].off, a2 = c[k - 1].off;
        uint64_t piv = a0 < a1 ? (a1 < a2 ? a1 : (a0 < a2 ? a2 : a0)) : (a0 < a2 ? a0 : (a1 < a2 ? a2 : a1));
        size_t i = 0, j = k - 1;
        for (;;) {
            while (c[i].off < piv) i++;
            while (c[j].off > piv) j--;
            if (i >= j) break;
            im_conf t = c[i]; c[i] = c[j]; c[j] = t;
            i++; j--;
        }
        /* [0, j] <= piv <= [j+1, k) */
        size_t left = j + 1;
        if (left < k - left) { im_sort_conf(c, left); c += left; k -= left; }
        else { im_sort_conf(c + left, k - left); k = left; }
    }
    for (size_t i = 1; i < k; i++) {
        im_conf v = c[i];
        size_t j = i;
        while (j > 0 && c[j - 1].off > v.off) { c[j] = c[j - 1]; j--; }
        c[j] = v;
    }
}

/* Decodes perm[p0..k) on top of the current prefix.  Returns the arena, or
 * UINT64_MAX when a buffer ended above `cutoff` (*stop = its position). */
static uint64_t im_decode(im_ctx *c, uint32_t p0, uint64_t cutoff, uint32_t *stop)
{
    uint64_t top = c->pmax[p0];
    c->tmax[p0] = top;
    for (uint32_t p = p0; p < c->k; p++) {
        uint32_t b = c->perm[p];
        size_t nc = 0;
        uint32_t e0 = c->adj_off[b], e1 = c->adj_off[b + 1];
        c->work += e1 - e0 + 1;
        for (uint32_t e = e0; e < e1; e++) {
            uint32_t x = c->adj[e];
            if (c->pos[x] >= p) continue;
            c->conf[nc].off = c->off[x];
            c->conf[nc].end = c->off[x] + c->size[x];
            nc++;
        }
        for (uint32_t e = c->fx_off[b]; e < c->fx_off[b + 1]; e++) {
            c->conf[nc].off = c->fxo[e];
            c->conf[nc].end = c->fxe[e];
            nc++;
        }
        im_sort_conf(c->conf, nc);
        uint64_t s = c->size[b], al = c->align[b], o = 0;
        for (size_t i = 0; i < nc; i++) {
            if (c->conf[i].off >= o + s) break;
            if (c->conf[i].end > o) o = bp__align_up(c->conf[i].end, al);
        }
        c->off[b] = o;
        if (o + s > top) {
            top = o + s;
            if (top > cutoff) { *stop = p; return UINT64_MAX; }
        }
        c->tmax[p + 1] = top;
    }
    *stop = c->k;
    return top;
}

/* Trial outcome: keep (copy trial into current) or roll the offsets back. */
static void im_commit(im_ctx *c, uint32_t p0)
{
    for (uint32_t p = p0; p < c->k; p++) c->cur[c->perm[p]] = c->off[c->perm[p]];
    memcpy(c->pmax + p0 + 1, c->tmax + p0 + 1, (size_t)(c->k - p0) * sizeof *c->pmax);
}

static void im_rollback(im_ctx *c, uint32_t p0, uint32_t stop)
{
    for (uint32_t p = p0; p <= stop && p < c->k; p++) c->off[c->perm[p]] = c->cur[c->perm[p]];
}

/* Moves the buffer at position i to position j (j < i), shifting the rest. */
static void im_move(im_ctx *c, uint32_t i, uint32_t j)
{
    uint32_t b = c->perm[i];
    memmove(c->perm + j + 1, c->perm + j, (size_t)(i - j) * sizeof *c->perm);
    c->perm[j] = b;
    for (uint32_t p = j; p <= i; p++) c->pos[c->perm[p]] = p;
}

/* ... and back: the buffer at j returns to i. */
static void im_unmove(im_ctx *c, uint32_t i, uint32_t j)
{
    uint32_t b = c->perm[j];
    memmove(c->perm + j, c->perm + j + 1, (size_t)(i - j) * sizeof *c->perm);
    c->perm[i] = b;
    for (uint32_t p = j; p <= i; p++) c->pos[c->perm[p]] = p;
}

static void im_swap(im_ctx *c, uint32_t i, uint32_t j)
{
    uint32_t t = c->perm[i];
    c->perm[i] = c->perm[j]; c->perm[j] = t;
    c->pos[c->perm[i]] = i; c->pos[c->perm[j]] = j;
}


/* ------------------------------------------------------------ skyline */

/* Skyline construction over the compressed time axis (no pre-placed
 * buffers): the lowest stretch of the skyline [a, b) gets one of the
 * unplaced buffers whose lifetime lies inside it, chosen by a scored rule;
 * when none fits, the stretch is raised to its lower neighbour (that space
 * is wasted).  Weights w[] vary the rule between constructions. */
typedef struct im_sky {
    uint32_t S;                  /* segments */
    uint32_t *ls, *us;           /* k: first / past-last segment of each buffer */
    uint64_t *h;                 /* S + 4: skyline height: the min tree's leaves (mn + P), h[S..] = max stops scans */
    uint64_t *mn;                /* 2 * P + 4: min tree over h (leaves P.., past S = max) */
    uint32_t P;
    uint32_t *head;              /* S: first unplaced buffer starting at the segment */
    uint32_t *nx, *pv;           /* k + 1: links; every list ends in k, a sentinel past every stretch */
    int64_t *tpt;                /* S + 1: the time points */
    double inv_max;              /* 1 / the largest size */
    double *dlen, *szn, *dsz;    /* k: lifetime (time), size * inv_max, size (as doubles, once) */
    uint32_t *byus;              /* k: buffers by last segment descending */
    uint64_t *R, *R0;            /* S: unplaced bytes live in each segment (now / at the start) */
    double *f;                   /* S + 1: the fill's best weight from each segment of the stretch on */
    uint32_t *fc;                /* S + 1: its first buffer there, UINT32_MAX = the segment stays empty */
    uint8_t *keep;               /* k: a recreate keeps the buffer where it was */
} im_sky;

static void im_sky_unlink(im_sky *y, uint32_t b)
{
    if (y->pv[b] != UINT32_MAX) y->nx[y->pv[b]] = y->nx[b]; else y->head[y->ls[b]] = y->nx[b];
    y->pv[y->nx[b]] = y->pv[b];   /* the sentinel's pv is never read */
}

/* The min tree above h[l..u) after those leaves were set to v (h is the
 * tree's leaf row).  Work is counted as for recomputing every node above
 * [l, u) (the range's width at each level), but only the two end nodes of
 * a level need a min: those strictly between cover leaves in [l, u) alone
 * and hold v.  Once the range is one node, the path to the root carries
 * its min in a register (no store-to-load wait per level), and stops at
 * the first node whose value does not change: the levels above are only
 * counted. */
static void im_sky_up(im_ctx *c, im_sky *y, uint32_t l, uint32_t u, uint64_t v)
{
    uint64_t *mn = y->mn;
    uint32_t lo = (y->P + l) / 2, hi = (y->P + u - 1) / 2;
    uint64_t work = u - l;
    for (; lo < hi; lo /= 2, hi /= 2) {
        work += hi - lo + 1;
        mn[lo] = mn[2 * lo] < mn[2 * lo + 1] ? mn[2 * lo] : mn[2 * lo + 1];
        for (uint32_t q = lo + 1; q < hi; q++) mn[q] = v;
        mn[hi] = mn[2 * hi] < mn[2 * hi + 1] ? mn[2 * hi] : mn[2 * hi + 1];
    }
    if (lo >= 1) {
        uint64_t x = mn[2 * lo] < mn[2 * lo + 1] ? mn[2 * lo] : mn[2 * lo + 1];
        for (;; lo /= 2) {
            work++;
            if (mn[lo] == x) { work += 31 - (uint32_t)__builtin_clz(lo); break; }
            mn[lo] = x;
            if (lo == 1) break;
            uint64_t sib = mn[lo ^ 1];
            x = sib < x ? sib : x;
        }
    }
#ifndef NDEBUG
    /* debug builds (the tests): the count is that of the full recomputation */
    uint64_t full = u - l;
    for (uint32_t l2 = (y->P + l) / 2, h2 = (y->P + u - 1) / 2; l2 >= 1; l2 /= 2, h2 /= 2) full += h2 - l2 + 1;
    if (work != full) {
        fprintf(stderr, "improve: min tree update counted %llu units, not %llu\n", (unsigned long long)work,
                (unsigned long long)full);
        abort();
    }
#endif
    c->work += work;
}

/* h[l..u) = v, and the min tree above it. */
static void im_sky_set(im_ctx *c, im_sky *y, uint32_t l, uint32_t u, uint64_t v)
{
    for (uint32_t s = l; s < u; s++) y->h[s] = v;
    im_sky_up(c, y, l, u, v);
}

/* Weights (w[0..7]) of: lifetime / stretch, size / largest, starts at the
 * stretch's left end, ends at its right end, noise, tops out level with a
 * neighbour of the stretch (left / right), spans the stretch.  A fill
 * weighs a buffer by the time it covers x (1 + w[1] size + w[5] level +
 * w[4] noise); a pick scores it by all of them.  The first constructions
 * use fixed weights, then random ones. */
#define IM_N_RULES 4
/* per mille of the skyline's budget for the constructions (the rest: ruin
 * and recreate), and the range of the ruin's depth (fraction of the arena) */
#define IM_SKY_BUILD_SHARE 700
#define IM_RUIN_LO 0.2
#define IM_RUIN_HI 0.9
/* The probe between the constructions and ruin and recreate (im_probe):
 * one dive of search's depth-first search (at most k nodes, static order
 * TCA) at max-live + IM_PROBE_PCT %, run only when that capacity is more than
 * IM_PROBE_GAIN_PCT % below the constructions' best arena.  On MiniMalloc's
 * J (max-live 5% below the best known, so the probes at max-live are
 * futile) it finds 1,054,720 (1.013 x the best known) in one dive (409
 * nodes) where the skyline ends at 1.042; D (1.0914 x max-live after the
 * constructions) and every other instance do not run it.  A packing found
 * is charged IM_PROBE_UNITS a node (on J a node costs ~9k instructions,
 * ~400 units: deliberately high, so that ruin and recreate does not run
 * after it); a fruitless probe is not charged. */
#define IM_PROBE_PCT 7
#define IM_PROBE_GAIN_PCT 3
#define IM_PROBE_ORDER 3
#define IM_PROBE_UNITS 1000u
#define IM_W 8
static const double im_rules[IM_N_RULES][IM_W] = {
    {1, 0.2, 0.3, 0.3, 0, 0, 0, 0}, {1, 0.5, 0.1, 0.1, 0, 0, 0, 0},
    {0.2, 1, 0.3, 0.3, 0, 0, 0, 0}, {1, 0, 1, 1, 0, 0, 0, 0},
};

/* Places b at the stretch's level hm; false when the construction can no
 * longer stay at or under cutoff. */
static bool im_sky_place(im_ctx *c, im_sky *y, uint32_t b, uint64_t hm, uint64_t cutoff, uint64_t *arena)
{
    im_sky_unlink(y, b);
    uint64_t o = bp__align_up(hm, c->align[b]), top = o + c->size[b];
    c->off[b] = o;
    bool ok = true;
    uint32_t l = y->ls[b], u = y->us[b];
    for (uint32_t s = l; s < u; s++) {
        y->h[s] = top;
        y->R[s] -= c->size[b];
        if (top + y->R[s] > cutoff) ok = false;   /* padding below b is waste too */
    }
    im_sky_up(c, y, l, u, top);
    if (top > *arena) *arena = top;
    return ok;
}

/* One construction; writes c->off[]; returns the arena or UINT64_MAX when
 * it could not stay at or under cutoff.  With base (a packing) it is a
 * recreate: the buffers of base that end at or under theta keep their
 * offsets, the skyline starts as the highest of them over each segment, and
 * only the rest are placed again.  Nothing removed lies under that skyline
 * (in a packing, a buffer crossing theta sits above every buffer under
 * theta that shares a segment with it), so no space is lost. */
static uint64_t im_sky_build(im_ctx *c, im_sky *y, const double *w, bool fill, uint64_t *rng, uint64_t cutoff,
                             const uint64_t *base, uint64_t theta)
{
    uint32_t k = c->k, S = y->S;
    uint64_t arena = 0;
    uint32_t placed = 0;
    for (uint32_t s = 0; s < S; s++) { y->h[s] = 0; y->head[s] = k; y->R[s] = base ? 0 : y->R0[s]; }
    if (base) {
        for (uint32_t b = 0; b < k; b++) {
            uint64_t top = base[b] + c->size[b];
            y->keep[b] = top <= theta;
            c->work += y->us[b] - y->ls[b];
            if (y->keep[b]) {
                c->off[b] = base[b];
                for (uint32_t s = y->ls[b]; s < y->us[b]; s++) if (y->h[s] < top) y->h[s] = top;
                if (top > arena) arena = top;
                placed++;
            } else {
                for (uint32_t s = y->ls[b]; s < y->us[b]; s++) y->R[s] += c->size[b];
            }
        }
        if (arena > cutoff) return UINT64_MAX;
        for (uint32_t s = 0; s < S; s++) if (y->h[s] + y->R[s] > cutoff) return UINT64_MAX;
    }
    for (uint32_t v = S; v < y->P + 4; v++) y->h[v] = UINT64_MAX;
    for (uint32_t v = y->P; v-- > 1;) y->mn[v] = y->mn[2 * v] < y->mn[2 * v + 1] ? y->mn[2 * v] : y->mn[2 * v + 1];
    for (uint32_t q = 0; q < k; q++) {   /* pushed by upper descending: lists come out ascending */
        uint32_t b = y->byus[q], s = y->ls[b];
        if (base && y->keep[b]) continue;
        y->pv[b] = UINT32_MAX;
        y->nx[b] = y->head[s];
        y->pv[y->head[s]] = b;
        y->head[s] = b;
    }
    c->work += S + k;
    /* A segment of the last stretch that placements left at its level:
     * then the leftmost at the min (those before the stretch are higher). */
    uint32_t gap = UINT32_MAX;
    while (placed < k) {
        /* the lowest stretch [a, e), leftmost: that gap, else down the
         * leftmost children that hold the root's min, three levels at a
         * time while they exist (the 8 nodes below, no branch), then by one */
        uint64_t hm = y->mn[1];
        uint32_t a = gap;
        if (a == UINT32_MAX) {
            uint32_t v = 1;
            while (4 * v < y->P) {
                const uint64_t *g = y->mn + 8 * v;
                unsigned hit = 0;
                for (unsigned j = 0; j < 8; j++) hit |= (unsigned)(g[j] == hm) << j;
                v = 8 * v + (uint32_t)__builtin_ctz(hit);
            }
            while (v < y->P) v = 2 * v + (y->mn[2 * v] != hm);
            a = v - y->P;
        }
#ifndef NDEBUG
        /* debug builds (the tests): a is the leftmost leaf at the min */
        {
            uint32_t v = 1;
            while (v < y->P) v = y->mn[2 * v] <= y->mn[2 * v + 1] ? 2 * v : 2 * v + 1;
            if (v - y->P != a) {
                fprintf(stderr, "improve: stretch at segment %u, not %u\n", a, v - y->P);
                abort();
            }
        }
#endif
        gap = UINT32_MAX;
        uint32_t e = a + 1;
        /* h[S..S+3] = max > hm; four at a time: one branch for four */
        while ((y->h[e] == hm) & (y->h[e + 1] == hm) & (y->h[e + 2] == hm) & (y->h[e + 3] == hm)) e += 4;
        while (y->h[e] == hm) e++;
        c->work += e - a + 1;
        /* the fill: weighted interval scheduling from the right, over the
         * unplaced buffers that start in the stretch (each list ascending
         * by last segment: the scan stops at the first that leaves it) */
        double span = (double)(y->tpt[e] - y->tpt[a]);
        uint32_t W = e - a;
        /* the neighbours' levels (none: max, never a buffer's top) */
        uint64_t hl = a > 0 ? y->h[a - 1] : UINT64_MAX, hr = y->h[e];
        /* A bool's term below is its weight or +0.0, and adding +0.0 to
         * these sums (never -0.0: the weights are >= 0) changes nothing,
         * so the terms that are 0 are skipped, in the same order.  The
         * rng state, the work and the fill's weights sit in locals: the
         * stores to f and fc could alias them. */
        uint64_t rs = *rng, cand = 0;
        const uint32_t *head = y->head, *nx = y->nx, *us = y->us;
        const double *dlen = y->dlen;
        if (!fill) {
            /* the pick: the one best-scored buffer */
            uint32_t pick = UINT32_MAX;
            double best = -1e300;
            for (uint32_t s = a; s < e; s++) {
                bool lt = s == a;
                for (uint32_t b = head[s];; b = nx[b]) {
                    uint32_t ub = us[b];
                    if (ub > e) { cand += b < k; break; }   /* the rest end later still */
                    cand++;
                    bool rt = ub == e;
                    double sc = w[0] * (dlen[b] / span) + w[1] * y->szn[b];
                    if (lt) sc += w[2];
                    if (rt) sc += w[3];
                    if (lt || rt) {
                        uint64_t tp = bp__align_up(hm, c->align[b]) + c->size[b];
                        if (lt && hl == tp) sc += w[5];
                        if (rt && hr == tp) sc += w[6];
                        if (lt && rt) sc += w[7];
                    }
                    sc += w[4] * (double)(im_rand(&rs) >> 11) * (1.0 / 9007199254740992.0);
                    if (sc > best) { best = sc; pick = b; }
                }
            }
            y->f[0] = 0;
            y->fc[0] = pick;
            W = pick == UINT32_MAX ? 0 : 1;
        } else {
            double *f = y->f, w1 = w[1], w4 = w[4], w5 = w[5], inv = y->inv_max;
            const double *dsz = y->dsz;
            uint32_t *fc = y->fc;
            f[W] = 0;
            double bv = 0;   /* f[i + 1] */
            for (uint32_t i = W; i-- > 0;) {
                uint32_t s = a + i, bc = UINT32_MAX;
                for (uint32_t b = head[s];; b = nx[b]) {
                    uint32_t ub = us[b];
                    if (ub > e) { cand += b < k; break; }
                    cand++;
                    double g = 1 + w1 * dsz[b] * inv;
                    if (s == a || ub == e) {
                        uint64_t tp = bp__align_up(hm, c->align[b]) + c->size[b];
                        if ((s == a && hl == tp) || (ub == e && hr == tp)) g += w5;
                    }
                    double val = (dlen[b] / span) * (g + w4 * (double)(im_rand(&rs) >> 11) * (1.0 / 9007199254740992.0));
                    val += f[ub - a];
                    if (val > bv) { bv = val; bc = b; }
                }
                f[i] = bv;
                fc[i] = bc;
            }
        }
        *rng = rs;
        c->work += cand;
        uint32_t before = placed;
        for (uint32_t i = 0; i < W;) {
            uint32_t b = y->fc[i];
            if (b == UINT32_MAX) { if (gap == UINT32_MAX) gap = a + i; i++; continue; }
            if (!im_sky_place(c, y, b, hm, cutoff, &arena) || arena > cutoff) return UINT64_MAX;
            placed++;
            if (!fill) { gap = y->ls[b] > a ? a : y->us[b] < e ? y->us[b] : UINT32_MAX; break; }
            i = y->us[b] - a;
        }
        if (placed > before) continue;
        gap = UINT32_MAX;
        /* nothing fits: raise the stretch to its lower neighbour (that
         * space is wasted; give up when it pushes a segment's bound over) */
        uint64_t to = UINT64_MAX;
        if (a > 0) to = y->h[a - 1];
        if (e < S && y->h[e] < to) to = y->h[e];
        for (uint32_t s = a; s < e; s++)
            if (to + y->R[s] > cutoff) return UINT64_MAX;
        im_sky_set(c, y, a, e, to);
    }
    return arena;
}

typedef struct im_key { uint64_t off, size; uint32_t b; } im_key;

static int im_cmp_key(const void *x, const void *y)
{
    const im_key *a = x, *b = y;
    if (a->off != b->off) return a->off < b->off ? -1 : 1;
    if (a->size != b->size) return a->size > b->size ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

static void im_free(im_ctx *c)
{
    const bp_allocator *a = c->a;
    size_t k = c->k ? c->k : 1;
    bp__free(a, c->orig, k * sizeof *c->orig);
    bp__free(a, c->size, k * sizeof *c->size);
    bp__free(a, c->align, k * sizeof *c->align);
    bp__free(a, c->adj_off, (k + 1) * sizeof *c->adj_off);
    bp__free(a, c->fx_off, (k + 1) * sizeof *c->fx_off);
    bp__free(a, c->adj, c->n_adj * sizeof *c->adj);
    bp__free(a, c->fxo, c->n_fx * sizeof *c->fxo);
    bp__free(a, c->fxe, c->n_fx * sizeof *c->fxe);
    bp__free(a, c->perm, k * sizeof *c->perm);
    bp__free(a, c->pos, k * sizeof *c->pos);
    bp__free(a, c->off, k * sizeof *c->off);
    bp__free(a, c->cur, k * sizeof *c->cur);
    bp__free(a, c->pmax, (k + 1) * sizeof *c->pmax);
    bp__free(a, c->tmax, (k + 1) * sizeof *c->tmax);
    bp__free(a, c->conf, c->conf_cap * sizeof *c->conf);
}

/* The probe between the constructions and ruin and recreate: one dive (at
 * most k nodes) of search's depth-first search with the static order TCA at
 * max-live + IM_PROBE_PCT %, from the best packing (bst, or the caller's
 * offsets when the constructions found nothing better).  A packing found
 * replaces bst and *best_ar, and its nodes are charged to c->work.  Returns
 * 1 when it found one, 0 when not, -1 out of memory. */
static int im_probe(im_ctx *c, const bp_interval *iv, size_t n, uint64_t lb, const uint64_t *bst,
                    const uint64_t *offsets, uint64_t *best_ar, uint64_t *out)
{
    uint64_t *tmp = bp__alloc(c->a, n * sizeof *tmp);
    if (!tmp) return -1;
    memcpy(tmp, offsets, n * sizeof *tmp);
    if (bst) for (uint32_t b = 0; b < c->k; b++) tmp[c->orig[b]] = bst[b];
    uint64_t ar = *best_ar, nodes = 0;
    bp__probe st = { lb + lb / 100 * IM_PROBE_PCT, IM_PROBE_ORDER, (int64_t)c->k };
    int rc = bp__assign_search_probe(c->a, iv, n, &st, 1, (uint64_t)c->k, tmp, &ar, &nodes);
    if (rc == 0 && ar < *best_ar) {
        for (uint32_t b = 0; b < c->k; b++) out[b] = tmp[c->orig[b]];
        *best_ar = ar;
        c->work += nodes * IM_PROBE_UNITS;
        rc = 1;
    }
    bp__free(c->a, tmp, n * sizeof *tmp);
    return rc;
}

int bp__assign_improve(const bp_allocator *a, const bp_interval *iv, size_t n, uint64_t lb, uint64_t max_pairs,
                       uint64_t work, double deadline, uint64_t *offsets, uint64_t *arena)
{
    return bp__assign_improve_ex(a, iv, n, lb, max_pairs, work, deadline, IM_SKY_BUILD_SHARE, offsets, arena);
}

/* Without pre-placed buffers: skyline constructions (fixed, then random
 * weights) on build_share per mille of the budget, a decision probe of
 * search between the two phases, then ruin and recreate from the best
 * packing.  best, *best_ar and *improved are updated; false on OOM. */
static bool im_skyline_phase(im_ctx *c, const bp_interval *iv, size_t n, uint64_t lb, const bp__tp *tp, uint32_t nt,
                             uint64_t work, double deadline, unsigned build_share, const uint64_t *offsets,
                             uint64_t *best, uint64_t *best_ar, bool *improved, uint64_t *rng)
{
    const bp_allocator *a = c->a;
    uint32_t k = c->k;
    im_sky y;
    memset(&y, 0, sizeof y);
    size_t np = 2 * (size_t)k;
    y.tpt = bp__alloc(a, (np + 1) * sizeof *y.tpt);
    y.ls = bp__alloc(a, (size_t)k * sizeof *y.ls);
    y.us = bp__alloc(a, ((size_t)k + 1) * sizeof *y.us);
    y.P = 1;
    while (y.P < np) y.P *= 2;
    size_t mn_cap = 2 * (size_t)y.P + 4;   /* enough for any S <= np (P shrinks to fit S below), and 4 past h[S] */
    y.mn = bp__alloc(a, mn_cap * sizeof *y.mn);
    y.head = bp__alloc(a, np * sizeof *y.head);
    y.nx = bp__alloc(a, ((size_t)k + 1) * sizeof *y.nx);
    y.pv = bp__alloc(a, ((size_t)k + 1) * sizeof *y.pv);
    y.byus = bp__alloc(a, (size_t)k * sizeof *y.byus);
    y.R = bp__calloc(a, np, sizeof *y.R);
    y.R0 = bp__calloc(a, np, sizeof *y.R0);
    y.f = bp__alloc(a, (np + 1) * sizeof *y.f);
    y.fc = bp__alloc(a, (np + 1) * sizeof *y.fc);
    y.keep = bp__alloc(a, (size_t)k * sizeof *y.keep);
    y.dlen = bp__alloc(a, (size_t)k * sizeof *y.dlen);
    y.szn = bp__alloc(a, (size_t)k * sizeof *y.szn);
    y.dsz = bp__alloc(a, (size_t)k * sizeof *y.dsz);
    bool ok = y.byus && y.mn && y.tpt && y.ls && y.us && y.head && y.nx && y.pv && y.R && y.R0 &&
              y.f && y.fc && y.keep && y.dlen && y.szn && y.dsz;
    if (ok) {
        /* tp[] holds the sorted end points: distinct times */
        uint32_t T = 0;
        uint64_t mx = 1;
        for (size_t e = 0; e < 2 * (size_t)nt; e++) {
            if (T == 0 || tp[e].t != y.tpt[T - 1]) y.tpt[T++] = tp[e].t;
            if (tp[e].end) y.us[tp[e].b] = T - 1; else y.ls[tp[e].b] = T - 1;
        }
        for (uint32_t b = 0; b < k; b++) if (c->size[b] > mx) mx = c->size[b];
        y.inv_max = 1.0 / (double)mx;
        y.us[k] = UINT32_MAX;   /* the lists' sentinel ends past every stretch */
        for (uint32_t b = 0; b < k; b++) {
            y.dlen[b] = (double)(y.tpt[y.us[b]] - y.tpt[y.ls[b]]);
            y.dsz[b] = (double)c->size[b];
            y.szn[b] = y.dsz[b] * y.inv_max;
        }
        /* by upper descending: the end points in reverse */
        uint32_t nq = 0;
        for (size_t e = 2 * (size_t)nt; e-- > 0;)
            if (tp[e].end) y.byus[nq++] = tp[e].b;
        y.S = T - 1;
        y.P = 1;
        while (y.P < y.S) y.P *= 2;
        y.h = y.mn + y.P;
        /* bytes live in each segment: a construction stops when a
         * segment's level plus its unplaced bytes passes the cutoff */
        for (uint32_t b = 0; b < k; b++)
            for (uint32_t s = y.ls[b]; s < y.us[b]; s++) y.R0[s] += c->size[b];
        c->work += np;
        /* fixed weights, then random ones; every other random
         * construction perturbs the weights of the best so far */
        double w[IM_W], bw[IM_W] = {0};
        bool have_bw = false;
        /* constructions on build_share per mille of the budget, then
         * ruin and recreate on the rest */
        uint64_t build_work = work / 1000 * (build_share < 1000 ? build_share : 1000);
        for (uint64_t it = 0; c->work < build_work && *best_ar > lb; it++) {
            if (deadline > 0 && (it & 7) == 7 && bp__now() >= deadline) break;
            for (int q = 0; q < IM_W; q++) {
                double r = (double)(im_rand(rng) >> 11) * (1.0 / 9007199254740992.0);
                if (it < IM_N_RULES) w[q] = im_rules[it][q];
                else if (have_bw && (it & 1)) w[q] = bw[q] + 0.2 * (r - 0.5) < 0 ? 0 : bw[q] + 0.2 * (r - 0.5);
                else w[q] = q == 4 ? 0.3 * r : r;   /* noise: a tie-breaker, not the rule */
            }
            /* two fills, then a pick */
            uint64_t ar = im_sky_build(c, &y, w, it % 3 != 2, rng, *best_ar - 1, NULL, 0);
            if (ar < *best_ar) {
                *best_ar = ar;
                *improved = true;
                memcpy(best, c->off, (size_t)k * sizeof *best);
                memcpy(bw, w, sizeof bw);
                have_bw = true;
            }
        }
        /* A decision probe of search between the two phases (see
         * IM_PROBE_PCT), when the constructions left the arena far
         * above max-live: its nodes come out of ruin and recreate's
         * budget when it finds a packing. */
        uint64_t pcap = lb + lb / 100 * IM_PROBE_PCT;
        if (build_share > 0 && lb < UINT64_MAX / 4 && *best_ar > pcap + pcap / 100 * IM_PROBE_GAIN_PCT &&
            c->work < work) {
            int pr = im_probe(c, iv, n, lb, *improved ? best : NULL, offsets, best_ar, best);
            if (pr < 0) ok = false;
            else if (pr > 0) *improved = true;
        }
        /* Ruin and recreate, from the best packing: the buffers ending
         * above a random level (20-90% below the arena) are placed again
         * by a construction (random weights) on top of the rest; a
         * packing no higher replaces the current one (walks along
         * plateaus). */
        uint64_t cur_ar = *best_ar;
        for (uint32_t b = 0; b < k; b++) c->cur[b] = *improved ? best[b] : offsets[c->orig[b]];
        for (uint64_t it = 0; ok && c->work < work && *best_ar > lb; it++) {
            if (deadline > 0 && (it & 7) == 7 && bp__now() >= deadline) break;
            for (int q = 0; q < IM_W; q++) {
                double r = (double)(im_rand(rng) >> 11) * (1.0 / 9007199254740992.0);
                w[q] = q == 4 ? 0.3 * r : r;
            }
            uint64_t r = im_rand(rng);
            double u = IM_RUIN_LO + (IM_RUIN_HI - IM_RUIN_LO) * (double)(r >> 11) * (1.0 / 9007199254740992.0);
            uint64_t theta = cur_ar - (uint64_t)((double)cur_ar * u);
            uint64_t ar = im_sky_build(c, &y, w, r % 3 != 2, rng, cur_ar, c->cur, theta);
            if (ar == UINT64_MAX) continue;
            memcpy(c->cur, c->off, (size_t)k * sizeof *c->cur);
            cur_ar = ar;
            if (ar < *best_ar) {
                *best_ar = ar;
                *improved = true;
                memcpy(best, c->off, (size_t)k * sizeof *best);
            }
        }
    }
    bp__free(a, y.tpt, (np + 1) * sizeof *y.tpt);
    bp__free(a, y.ls, (size_t)k * sizeof *y.ls);
    bp__free(a, y.us, ((size_t)k + 1) * sizeof *y.us);
    bp__free(a, y.mn, mn_cap * sizeof *y.mn);
    bp__free(a, y.head, np * sizeof *y.head);
    bp__free(a, y.nx, ((size_t)k + 1) * sizeof *y.nx);
    bp__free(a, y.pv, ((size_t)k + 1) * sizeof *y.pv);
    bp__free(a, y.byus, (size_t)k * sizeof *y.byus);
    bp__free(a, y.R, np * sizeof *y.R);
    bp__free(a, y.R0, np * sizeof *y.R0);
    bp__free(a, y.f, (np + 1) * sizeof *y.f);
    bp__free(a, y.fc, (np + 1) * sizeof *y.fc);
    bp__free(a, y.keep, (size_t)k * sizeof *y.keep);
    bp__free(a, y.dlen, (size_t)k * sizeof *y.dlen);
    bp__free(a, y.szn, (size_t)k * sizeof *y.szn);
    bp__free(a, y.dsz, (size_t)k * sizeof *y.dsz);
    return ok;
}

/* The search over orders' lists (pre-placed buffers present): the overlap
 * lists, a pre-placed buffer kept as its offset and end per entry (fxo, fxe),
 * and the conflict scratch sized for the longest list.  False on OOM. */
static bool im_order_lists(im_ctx *c, const bp_interval *iv, const bp__tp *tp, const uint32_t *ids, uint32_t nf)
{
    const bp_allocator *a = c->a;
    uint32_t k = c->k;
    bp__overlaps ol = { .ov_off = c->adj_off, .fx_off = c->fx_off };
    if (bp__assign_overlaps(a, tp, k, nf, &ol)) return false;
    c->adj = ol.ov; c->n_adj = ol.n_ov;
    c->n_fx = ol.n_fx;
    c->fxo = bp__alloc(a, c->n_fx * sizeof *c->fxo);
    c->fxe = bp__alloc(a, c->n_fx * sizeof *c->fxe);
    if (c->fxo && c->fxe)
        for (uint32_t at = 0; at < c->fx_off[k]; at++) {
            const bp_interval *x = &iv[ids[k + ol.fx[at]]];
            c->fxo[at] = x->fixed_offset;
            c->fxe[at] = x->fixed_offset + x->size;
        }
    bp__free(a, ol.fx, ol.n_fx * sizeof *ol.fx);
    if (!c->fxo || !c->fxe) {   /* free with the size they were made */
        bp__free(a, c->fxo, c->n_fx * sizeof *c->fxo);
        bp__free(a, c->fxe, c->n_fx * sizeof *c->fxe);
        c->fxo = c->fxe = NULL;
        c->n_fx = 0;
        return false;
    }
    size_t maxd = 1;
    for (uint32_t b = 0; b < k; b++) {
        size_t d = (size_t)(c->adj_off[b + 1] - c->adj_off[b]) + (c->fx_off[b + 1] - c->fx_off[b]);
        if (d > maxd) maxd = d;
    }
    c->conf = bp__alloc(a, maxd * sizeof *c->conf);
    if (!c->conf) return false;
    c->conf_cap = maxd;
    return true;
}

/* With pre-placed buffers: the search over orders.  From the caller's
 * solution sorted by offset, random moves (a peak buffer earlier, any
 * buffer earlier, a swap with a buffer it overlaps), each decoded and kept
 * unless it raises the arena, until `work` is spent, the bound lb is
 * reached or the deadline passes.  best / *best_ar / *improved as
 * im_skyline_phase.  False on OOM. */
static bool im_order_search(im_ctx *c, const bp_interval *iv, size_t n, uint64_t lb, uint64_t work,
                            double deadline, const uint64_t *offsets, uint64_t *best, uint64_t *best_ar,
                            bool *improved, uint64_t *rng)
{
    const bp_allocator *a = c->a;
    uint32_t k = c->k;
    /* The start: the caller's solution sorted by offset (larger first on ties). */
    uint32_t *peak = bp__alloc(a, (size_t)k * sizeof *peak);   /* scratch: the buffers ending at the arena */
    im_key *keys = bp__alloc(a, (size_t)k * sizeof *keys);
    if (!peak || !keys) {
        bp__free(a, peak, (size_t)k * sizeof *peak);
        bp__free(a, keys, (size_t)k * sizeof *keys);
        return false;
    }
    for (uint32_t b = 0; b < k; b++) keys[b] = (im_key){ offsets[c->orig[b]], c->size[b], b };
    qsort(keys, k, sizeof *keys, im_cmp_key);
    for (uint32_t p = 0; p < k; p++) { c->perm[p] = keys[p].b; c->pos[keys[p].b] = p; }
    c->pmax[0] = 0;
    uint32_t stop;
    uint64_t cur = im_decode(c, 0, UINT64_MAX, &stop);
    im_commit(c, 0);
    /* pre-placed buffers count for the arena too */
    uint64_t base = 0;
    for (size_t i = 0; i < n; i++)
        if (iv[i].size && iv[i].fixed_offset != BP_NO_OFFSET && iv[i].fixed_offset + iv[i].size > base)
            base = iv[i].fixed_offset + iv[i].size;
    if ((cur > base ? cur : base) < *best_ar) {
        *best_ar = cur > base ? cur : base;
        *improved = true;
        memcpy(best, c->cur, (size_t)k * sizeof *best);
    }
    uint64_t iter = 0;
    while (*best_ar > lb && cur > base && c->work < work) {
        if (deadline > 0 && (++iter & 63) == 0 && bp__now() >= deadline) break;
        uint64_t r = im_rand(rng);
        int kind = (int)(r % 8);
        uint32_t i, j;
        if (kind < 4) {
            /* a peak buffer, moved earlier */
            uint32_t np = 0;
            for (uint32_t b = 0; b < k; b++)
                if (c->cur[b] + c->size[b] == cur && c->pos[b] > 0) peak[np++] = b;
            if (!np) continue;
            uint32_t b = peak[(r >> 8) % np];
            i = c->pos[b];
            j = (uint32_t)((r >> 32) % i);
        } else if (kind < 7) {
            i = 1 + (uint32_t)((r >> 8) % (k - 1));
            j = (uint32_t)((r >> 32) % i);
        } else {
            uint32_t b = (uint32_t)((r >> 8) % k);
            uint32_t d = c->adj_off[b + 1] - c->adj_off[b];
            if (!d) continue;
            uint32_t x = c->adj[c->adj_off[b] + (uint32_t)((r >> 32) % d)];
            i = c->pos[b] > c->pos[x] ? c->pos[b] : c->pos[x];
            j = c->pos[b] > c->pos[x] ? c->pos[x] : c->pos[b];
            im_swap(c, i, j);
            uint64_t t = im_decode(c, j, cur, &stop);
            if (t == UINT64_MAX) { im_rollback(c, j, stop); im_swap(c, i, j); continue; }
            im_commit(c, j);
            cur = t;
            goto accepted;
        }
        im_move(c, i, j);
        {
            uint64_t t = im_decode(c, j, cur, &stop);
            if (t == UINT64_MAX) { im_rollback(c, j, stop); im_unmove(c, i, j); continue; }
            im_commit(c, j);
            cur = t;
        }
    accepted:
        if ((cur > base ? cur : base) < *best_ar) {
            *best_ar = cur > base ? cur : base;
            *improved = true;
            memcpy(best, c->cur, (size_t)k * sizeof *best);
        }
    }
    bp__free(a, peak, (size_t)k * sizeof *peak);
    bp__free(a, keys, (size_t)k * sizeof *keys);
    return true;
}

int bp__assign_improve_ex(const bp_allocator *a, const bp_interval *iv, size_t n, uint64_t lb, uint64_t max_pairs,
                          uint64_t work, double deadline, unsigned build_share, uint64_t *offsets, uint64_t *arena)
{
    im_ctx c;
    memset(&c, 0, sizeof c);
    c.a = a;
    if (n >= UINT32_MAX / 2) return 1;
    uint32_t k, nf;
    bp__assign_count(iv, n, &k, &nf);
    if (k < 2 || *arena <= lb) return 0;
    uint32_t nt = k + nf;
    int rc = -1;
    bp__tp *tp = bp__alloc(a, 2 * (size_t)nt * sizeof *tp);
    uint32_t *ids = bp__alloc(a, (size_t)nt * sizeof *ids);
    uint64_t *best = NULL;
    c.k = k;
    c.orig = bp__alloc(a, (size_t)k * sizeof *c.orig);
    c.size = bp__alloc(a, (size_t)k * sizeof *c.size);
    c.align = bp__alloc(a, (size_t)k * sizeof *c.align);
    c.adj_off = bp__calloc(a, (size_t)k + 1, sizeof *c.adj_off);
    c.fx_off = bp__calloc(a, (size_t)k + 1, sizeof *c.fx_off);
    c.perm = bp__alloc(a, (size_t)k * sizeof *c.perm);
    c.pos = bp__alloc(a, (size_t)k * sizeof *c.pos);
    c.off = bp__alloc(a, (size_t)k * sizeof *c.off);
    c.cur = bp__alloc(a, (size_t)k * sizeof *c.cur);
    c.pmax = bp__alloc(a, ((size_t)k + 1) * sizeof *c.pmax);
    c.tmax = bp__alloc(a, ((size_t)k + 1) * sizeof *c.tmax);
    if (!tp || !ids || !c.orig || !c.size || !c.align || !c.adj_off || !c.fx_off || !c.perm ||
        !c.pos || !c.off || !c.cur || !c.pmax || !c.tmax) goto out;
    /* free buffers 0..k-1, pre-placed k.. (ids: the caller's index of each) */
    if (bp__assign_endpoints(iv, n, k, nf, tp, ids) > max_pairs) { rc = 1; goto out; }
    for (uint32_t q = 0; q < k; q++) {
        c.orig[q] = ids[q];
        c.size[q] = iv[ids[q]].size;
        c.align[q] = iv[ids[q]].alignment > 1 ? iv[ids[q]].alignment : 1;
    }
    uint64_t best_ar = *arena;
    bool improved = false;
    best = bp__alloc(a, (size_t)k * sizeof *best);
    if (!best) goto out;
    uint64_t rng = UINT64_C(0x9e3779b97f4a7c15);
    if (nf == 0 && !im_skyline_phase(&c, iv, n, lb, tp, nt, work, deadline, build_share, offsets, best, &best_ar,
                                     &improved, &rng))
        goto out;
    /* Without pre-placed buffers the skyline had the whole budget; with
     * them, the search over orders below does. */
    if (nf == 0) goto finish;
    if (!im_order_lists(&c, iv, tp, ids, nf)) goto out;
    if (!im_order_search(&c, iv, n, lb, work, deadline, offsets, best, &best_ar, &improved, &rng)) goto out;
finish:
    if (improved) {
        for (uint32_t b = 0; b < k; b++) offsets[c.orig[b]] = best[b];
        *arena = best_ar;
    }
    rc = 0;
out:
    bp__free(a, tp, 2 * (size_t)nt * sizeof *tp);
    bp__free(a, ids, (size_t)nt * sizeof *ids);
    bp__free(a, best, (size_t)k * sizeof *best);
    im_free(&c);
    return rc;
}
