/*
 * bestfit.c — greedy best-fit offsets in one arena (the TFLite / XLA
 * heuristic), made fast and run over several orders.
 *
 * For each interval in a static order (largest first, longest first, largest
 * area first, most conflicts first), collect the already placed intervals that
 * overlap it in time, sort them by offset, and take the smallest gap between
 * them that holds it (aligned); if none does, it goes on top of them.
 *
 * Finding the placed intervals that overlap [l, u) is the hot spot.  They
 * are those live at l plus those starting inside (l, u).  The second set is
 * a range of the array sorted by lower.  The first is a stabbing query on a
 * static interval tree over the ranks of the distinct lowers (each interval
 * sits at the highest node whose split point it crosses, listed by lower
 * ascending and by upper descending, so a scan stops at the first miss).  A
 * placement costs O(log n + d) for d intervals overlapping it in time, plus
 * sorting the placed ones by offset: a run is O(n log n + overlaps).
 * Orders are sorted by LSD radix (stable, so ties
 * keep the lower-first order).  A run stops as soon as it cannot beat the
 * best arena so far; the orders stop at the lower bound.  The result is
 * never above naive (naive's layout is taken if it were).
 *
 * Small inputs (up to 20,000 free intervals and 2M overlapping pairs) then
 * get more work.  Without fixed offsets and up to 2,000 intervals: one
 * size-ordered run (a second changed no MiniMalloc or ONNX arena and cost
 * up to 0.7 ms on J), then decision probes of search's depth-first search
 * at max-live (bp__assign_search_probe, orders TWA then TCA) on a node
 * budget that shrinks with the buffers' time segments (a node's cost grows
 * with them): they find F-K at their bound in ~360-1,900 nodes, and then
 * nothing else runs (0.7-1.4 ms).  Then the improvement phase
 * (improve.c) on a deterministic work budget (7.2 x 10^5 units,
 * ~2.5 ms here): randomised skyline
 * constructions that fill the lowest stretch with the set of buffers that
 * covers it best, stopped early by a waste bound, then (when they end far
 * above max-live) one probe at max-live + 7%, then ruin and recreate of the
 * best packing's top.  A tenth of that budget goes to the input, the rest
 * to its chains (chain.c: same-size buffers where one starts as the
 * previous ends, merged, so each chain's parts share an offset) when it has
 * any: a smaller instance whose packings are the input's, on which the
 * constructions land much nearer the optimum (MiniMalloc's E 1.066 ->
 * 1.023, J 1.013 -> 1.000; B and C at their bound in 20 of 20 seeds of the
 * constructions, were 16 and 15).  With fixed offsets (or too many
 * overlapping pairs for the skyline), the canonical greedy
 * (greedy.c: skyline packing, lowest floor first, static
 * priorities, squeaky wheel) with its squeaky-wheel passes, then an
 * iterated greedy over placement orders.
 * This brings the MiniMalloc instances from ~1.07-1.19 to ~1.00-1.02 x
 * the best known, all but D and E at their bound (docs/BENCHMARKS.md).
 * Search's incumbent phase (quality mode) runs the greedy on its larger
 * budget (up to 200,000 intervals) until its deadline, without the
 * improvement phase.
 *
 * Large inputs without fixed offsets (2 x 10^4 to 2 x 10^6 sized
 * intervals) get, after the time-order pass, the window phase (window.c:
 * windows of time around the peak packed again by this bestfit, and the
 * buffers too long for a window held at the bottom) instead of the
 * size-ordered runs.
 *
 * Without fixed offsets, an online best-fit pass in time order runs first,
 * whatever the size: frees come from a heap on upper, and the free gaps sit
 * in two treaps (by size for the best-fit query, by offset for merging), so
 * it is O(n log n) even on graphs with thousands of tensors live at once
 * (randwire), where the overlap term of the size-ordered runs explodes.  It
 * often reaches the lower bound and ends the call.  Otherwise the
 * size-ordered runs follow, as many as an overlap budget allows (counted in
 * one sweep): none when even one would blow it, one above 500k intervals,
 * none above 2M.  Search's incumbent phase (quality mode) runs all orders.
 */
#include "assign/assign_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The time-order pass runs above this many intervals: all (it is cheap). */
#define BF_TIME_ORDER_MIN 0u
/* Overlap visits the size-ordered runs may spend together (outside search's
 * quality mode). */
#define BF_OVERLAP_BUDGET UINT64_C(60000000)
#define BF_SIZE_RUNS_ONE 500000u
#define BF_SIZE_RUNS_MAX 2000000u
/* size-ordered runs before the improvement phase (small inputs without
 * pre-placed buffers): one (ONNX's densenet121 and resnet50 need it to
 * reach their bound; a second changed nothing) */
#define BF_SIZE_RUNS_SMALL 1
/* The canonical greedy (greedy.c) runs up to this many free
 * intervals in bestfit (its overlap lists cost O(n + overlaps) to build) and
 * in search's incumbent phase, with these work budgets (overlap visits). */
#define BF_GREEDY_MAX 20000u
#define BF_GREEDY_MAX_SEARCH 200000u
#define BF_GREEDY_WORK 150000u
#define BF_GREEDY_WORK_SEARCH 5000000u
/* The improvement phase (improve.c): at most this many overlapping
 * pairs, and these work budgets (its own units: skyline steps and overlap
 * visits; 10^6 is ~3 ms here).  Without pre-placed buffers / with them. */
#define BF_IMPROVE_PAIRS 2000000u
/* The skyline constructions (no pre-placed buffers) run up to this many
 * intervals: above it the budget buys too few of them to beat the greedy,
 * which then runs on its own budget as before. */
#define BF_SKYLINE_MAX 2000u
#define BF_IMPROVE_WORK 720000u
/* ... of which this share (per mille) goes to the constructions on the
 * input itself and the rest to those on its chains (bf_chains) when it has
 * any: all to the chains lost densenet121's bound (1 in 11,000 above it);
 * 10% keeps it, and B, C at theirs in 20 of 20 seeds. */
#define BF_IMPROVE_PRE 100u
/* Before the skyline: decision probes of search (bp__assign_search_probe)
 * at max-live, with the static order TWA (limit BF_PROBE_TWA_M x m nodes)
 * then TCA (BF_PROBE_TCA_M x m): TWA finds MiniMalloc's G, I, K at their
 * bound in ~1,150-1,870 nodes, TCA finds F, H in ~360-410.  A node's cost
 * grows with the buffers' time segments (the sum over buffers of the
 * segments each spans: ~0.5 us at 2-7k, 1.25 us at 16k on J), so the
 * budget over both steps is BF_PROBE_WORK / (segments + BF_PROBE_SEG0)
 * nodes, at most BF_PROBE_MAX_M x m; none when that is less than m (one
 * dive).  Above BF_PROBE_SEG1 (segments + BF_PROBE_SEG0) the budget falls
 * with the square of the segments: of the MiniMalloc instances only J
 * (16,452 segments; the next is D at 7,166) is limited by segments rather
 * than by m, its max-live lies 5% under its best known so these probes are
 * futile there, and they cost it ~2 ms: 1,028 -> 555 nodes pays for the
 * improvement phase's probe at max-live + 7% (improve.c) that
 * brings J within 3%.  Those that reach their bound here have at most
 * 6,632 segments (I).  Steps below max-live (1%, 2%, ... under the arena) are not
 * tried: they found nothing the skyline does not, and a packing they find
 * changes the skyline's start (D went 1.018 -> 1.051). */
#define BF_PROBE_WORK 2e7
#define BF_PROBE_SEG0 3000.0
#define BF_PROBE_SEG1 10500.0
#define BF_PROBE_MAX_M 6.5
#define BF_PROBE_TWA_M 5
#define BF_PROBE_TCA_M 1.5
#define BF_PROBE_ORDER_A 2   /* TWA */
#define BF_PROBE_ORDER_B 3   /* TCA */
#define BF_IMPROVE_WORK_FIXED 300000u
/* ... scaled down for tiny inputs (a few thousand units per interval is
 * plenty there, and search calls bestfit on every sub-problem it tries) */
#define BF_IMPROVE_PER_INTERVAL 4096u

static uint64_t bf_improve_work(size_t n, uint64_t budget)
{
    uint64_t w = (uint64_t)n * BF_IMPROVE_PER_INTERVAL;
    return w < budget ? w : budget;
}

typedef struct bf_conf { uint64_t off, end; } bf_conf;

/* One entry of a node list: the rank of the interval's lower (list A) or
 * upper (list B) among the distinct lowers, and the interval. */
typedef struct bf_ent { uint32_t r, i; } bf_ent;

typedef struct bf_ctx {
    const bp_interval *iv;
    size_t n;
    uint32_t m;            /* intervals with size > 0 */
    uint32_t *by_lower;    /* m: interval index at each position */
    int64_t *L;            /* m: lower at each position */
    uint32_t *qa;          /* n: rank of each interval's lower */
    uint32_t *after;       /* n: first position whose lower > the interval's */
    uint64_t *pend;        /* n: offset + size of a placed interval, 0 = not placed */
    /* interval tree over the T distinct lowers (T2 = power of two >= T) */
    size_t T2;
    uint32_t *noff;        /* 2*T2 + 1: node lists in A / B */
    bf_ent *A, *B;         /* per node: by lower ascending / by upper descending */
    size_t n_ent;
    bf_conf *conf; size_t conf_cap;
    bf_conf *tmp; size_t tmp_cap;   /* the radix sort's scratch */
    const bp_allocator *a; /* the caller's (bp__assign_alloc) */
} bf_ctx;

/* --------------------------------------------------------- interval tree */

/* Appends interval j when it is placed (pend != 0).  Written either way
 * and kept only then: a branch on it would mispredict half the time. */
static inline bool bf_push(bf_ctx *c, long *k, uint32_t j, const uint64_t *off)
{
    uint64_t e = c->pend[j];
    if ((size_t)*k >= c->conf_cap &&
        !bp__grow(c->a, (void **)&c->conf, &c->conf_cap, (size_t)*k + 1, sizeof *c->conf))
        return false;
    c->conf[*k].off = off[j];
    c->conf[*k].end = e;
    *k += e != 0;
    return true;
}

/* Collects the placed intervals overlapping interval x = iv[xi] into
 * c->conf: those live at x's lower (a stabbing query down the tree) and those
 * starting inside (lower, upper) (a range of the lower-sorted array).
 * Returns the count or -1 on OOM. */
static long bf_conflicts(bf_ctx *c, uint32_t xi, const uint64_t *off)
{
    const bp_interval *x = &c->iv[xi];
    long k = 0;
    size_t p = c->qa[xi], T2 = c->T2;
    size_t v = T2 + p;
    /* leaf: intervals whose only point is p */
    for (uint32_t e = c->noff[v]; e < c->noff[v + 1]; e++)
        if (!bf_push(c, &k, c->A[e].i, off)) return -1;
    for (unsigned sh = 1; (T2 >> (sh - 1)) > 1; sh++) {
        v = (T2 + p) >> sh;
        uint32_t e0 = c->noff[v], e1 = c->noff[v + 1];
        if (e0 == e1) continue;
        size_t lo = (v << sh) - T2, mid = lo + ((size_t)1 << (sh - 1));
        if (p < mid) {
            for (uint32_t e = e0; e < e1 && c->A[e].r <= p; e++)
                if (!bf_push(c, &k, c->A[e].i, off)) return -1;
        } else {
            for (uint32_t e = e0; e < e1 && c->B[e].r > p; e++)
                if (!bf_push(c, &k, c->B[e].i, off)) return -1;
        }
    }
    /* lower in (x.lower, x.upper) */
    for (size_t q = c->after[xi]; q < c->m && c->L[q] < x->upper; q++) {
        uint32_t j = c->by_lower[q];
        if (!bf_push(c, &k, j, off)) return -1;
    }
    return k;
}

/* Sorts conflicts by offset: insertion sort for short lists, else an LSD
 * radix sort over the bits that vary in the list, in as few passes of at
 * most ~log2(k) bits as cover them (t is scratch of k).  Quicksort's
 * comparisons mispredict about half the time here.  Entries with equal
 * offsets may come out in any order: bf_gap's result does not depend on it. */
#define BF_SORT_SMALL 24
static void bf_sort_conf(bf_conf *c, bf_conf *t, long k)
{
    if (k <= BF_SORT_SMALL) {
        for (long i = 1; i < k; i++) {
            bf_conf v = c[i];
            long j = i - 1;
            while (j >= 0 && c[j].off > v.off) { c[j + 1] = c[j]; j--; }
            c[j + 1] = v;
        }
        return;
    }
    uint64_t all_or = 0, all_and = ~(uint64_t)0;
    for (long i = 0; i < k; i++) { all_or |= c[i].off; all_and &= c[i].off; }
    uint64_t diff = all_or ^ all_and;
    if (!diff) return;
    int lo = __builtin_ctzll(diff), span = 64 - __builtin_clzll(diff) - lo;
    int dmax = 63 - __builtin_clzll((uint64_t)k);   /* 2^d buckets <= k */
    if (dmax > 11) dmax = 11;
    int passes = (span + dmax - 1) / dmax, d = (span + passes - 1) / passes;
    uint32_t cnt[1 << 11], nb = 1u << d;
    uint64_t mask = nb - 1;
    bf_conf *src = c, *dst = t;
    for (int shift = lo; shift < lo + span; shift += d) {
        memset(cnt, 0, nb * sizeof *cnt);
        for (long i = 0; i < k; i++) cnt[(src[i].off >> shift) & mask]++;
        for (uint32_t b = 0, sum = 0; b < nb; b++) { uint32_t x = cnt[b]; cnt[b] = sum; sum += x; }
        for (long i = 0; i < k; i++) dst[cnt[(src[i].off >> shift) & mask]++] = src[i];
        bf_conf *sw = src; src = dst; dst = sw;
    }
    if (src != c) memcpy(c, src, (size_t)k * sizeof *c);
}

/* The best-fitting aligned offset for `size` among conflicts sorted by offset:
 * the smallest gap that holds it (lowest on ties), else on top of them all. */
static uint64_t bf_gap(const bf_conf *c, long k, uint64_t size, uint64_t align)
{
    uint64_t floor = 0, best = UINT64_MAX, best_gap = UINT64_MAX;
    for (long i = 0; i < k; i++) {
        if (c[i].off > floor) {
            uint64_t o = bp__align_up(floor, align);
            if (o + size <= c[i].off) {
                uint64_t gap = c[i].off - floor;
                if (gap < best_gap) { best_gap = gap; best = o; }
            }
        }
        if (c[i].end > floor) floor = c[i].end;
    }
    if (best != UINT64_MAX) return best;
    return bp__align_up(floor, align);
}

/* One greedy run in the given order; returns the arena, or UINT64_MAX when
 * it stopped because it could not beat `cutoff`, or 0 with *oom set. */
static uint64_t bf_run(bf_ctx *c, const uint32_t *order, uint32_t n_order, uint64_t *off,
                       uint64_t base_arena, uint64_t cutoff, bool *oom)
{
    const bp_interval *iv = c->iv;
    memset(c->pend, 0, c->n * sizeof *c->pend);
    /* pre-placed intervals first */
    for (size_t i = 0; i < c->n; i++)
        if (iv[i].fixed_offset != BP_NO_OFFSET) {
            off[i] = iv[i].fixed_offset;
            if (iv[i].size) c->pend[i] = iv[i].fixed_offset + iv[i].size;
        }
    uint64_t arena = base_arena;
    for (uint32_t k = 0; k < n_order; k++) {
        uint32_t i = order[k];
        const bp_interval *x = &iv[i];
        long nc = bf_conflicts(c, i, off);
        if (nc < 0) { *oom = true; return 0; }
        if (nc > BF_SORT_SMALL && !bp__grow(c->a, (void **)&c->tmp, &c->tmp_cap, (size_t)nc, sizeof *c->tmp)) {
            *oom = true;
            return 0;
        }
        bf_sort_conf(c->conf, c->tmp, nc);
#ifndef NDEBUG
        /* debug builds (the tests): sorted by offset */
        for (long q = 1; q < nc; q++)
            if (c->conf[q - 1].off > c->conf[q].off) {
                fprintf(stderr, "bestfit: conflicts out of order at %ld of %ld\n", q, nc);
                abort();
            }
#endif
        uint64_t o = bf_gap(c->conf, nc, x->size, x->alignment);
        off[i] = o;
        c->pend[i] = o + x->size;
        if (o + x->size > arena) {
            arena = o + x->size;
            if (arena >= cutoff) return UINT64_MAX;
        }
    }
    return arena;
}

enum { BF_BY_SIZE, BF_BY_LENGTH, BF_BY_AREA, BF_BY_DEGREE, BF_N_ORDERS };

static uint64_t bf_sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return bp__mul_u64(a, b, &r) ? r : UINT64_MAX;
}

static uint64_t bf_len(const bp_interval *x) { return (uint64_t)x->upper - (uint64_t)x->lower; }

/* Number of positions in sorted a[0..m) with a[p] < v (lt) or <= v. */
static size_t bf_count_lt(const int64_t *a, size_t m, int64_t v, bool le)
{
    size_t lo = 0, hi = m;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v || (le && a[mid] == v)) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* ------------------------------------------------------- time order */

/* Online best fit in time order, for large inputs, the way a real
 * allocator would run the plan: intervals by lower, frees from a min-heap on upper.  The free gaps below the top of the used
 * space are nodes of two treaps sharing one node pool: one keyed by
 * (size, offset) answers "smallest gap that holds s" in O(log g), one keyed
 * by offset finds the neighbours a freed block merges with.  A block freed
 * at the top lowers the top instead.  A run is O(n log n) whatever the live
 * set.  by_lower[] is the m sized intervals sorted by lower (no fixed
 * offsets).  Returns the arena, or 0 with *oom set. */
typedef struct bf_gap_node {
    uint64_t off, size;
    uint32_t c[2][2];           /* children: [treap][left/right]; 0 = none */
    uint32_t pri;
} bf_gap_node;

enum { BF_BY_SIZE_T, BF_BY_OFF_T };   /* the two treaps */

typedef struct bf_gaps {
    bf_gap_node *nd;            /* nd[0] unused: 0 is "no node" */
    uint32_t cap, n_used, free_list;
    uint32_t root[2];
} bf_gaps;

/* Key order in treap k: (size, offset) or offset. */
static inline bool bf_glt(const bf_gap_node *nd, int k, uint32_t a, uint32_t b)
{
    if (k == BF_BY_OFF_T) return nd[a].off < nd[b].off;
    return nd[a].size < nd[b].size || (nd[a].size == nd[b].size && nd[a].off < nd[b].off);
}

/* Treap insert/remove, recursive: the depth is the treap's, O(log g)
 * expected, with priorities hashed from node numbers (not input-driven). */
static uint32_t bf_gins(bf_gap_node *nd, int k, uint32_t t, uint32_t x)
{
    if (!t) return x;
    int side = !bf_glt(nd, k, x, t);
    uint32_t ch = nd[t].c[k][side] = bf_gins(nd, k, nd[t].c[k][side], x);
    if (nd[ch].pri <= nd[t].pri) return t;
    nd[t].c[k][side] = nd[ch].c[k][!side];   /* rotate ch up */
    nd[ch].c[k][!side] = t;
    return ch;
}

static uint32_t bf_gmerge(bf_gap_node *nd, int k, uint32_t a, uint32_t b)
{
    if (!a || !b) return a ? a : b;
    if (nd[a].pri > nd[b].pri) { nd[a].c[k][1] = bf_gmerge(nd, k, nd[a].c[k][1], b); return a; }
    nd[b].c[k][0] = bf_gmerge(nd, k, a, nd[b].c[k][0]);
    return b;
}

static uint32_t bf_gdel(bf_gap_node *nd, int k, uint32_t t, uint32_t x)
{
    if (t == x) return bf_gmerge(nd, k, nd[t].c[k][0], nd[t].c[k][1]);
    int side = !bf_glt(nd, k, x, t);
    nd[t].c[k][side] = bf_gdel(nd, k, nd[t].c[k][side], x);
    return t;
}

static void bf_gap_remove(bf_gaps *g, uint32_t x)
{
    for (int k = 0; k < 2; k++) g->root[k] = bf_gdel(g->nd, k, g->root[k], x);
    g->nd[x].c[0][0] = g->free_list;      /* recycle */
    g->free_list = x;
}

static bool bf_gap_add(const bp_allocator *a, bf_gaps *g, uint64_t off, uint64_t size)
{
    uint32_t x = g->free_list;
    if (x) g->free_list = g->nd[x].c[0][0];
    else {
        if (g->n_used + 1 >= g->cap) {
            if (g->cap > UINT32_MAX / 2) return false;
            uint32_t nc = g->cap * 2;
            bf_gap_node *nn = bp__realloc(a, g->nd, (size_t)g->cap * sizeof *nn, (size_t)nc * sizeof *nn);
            if (!nn) return false;
            g->nd = nn; g->cap = nc;
        }
        x = ++g->n_used;
        uint32_t h = x * 0x9E3779B1u;            /* fixed priority per node */
        h ^= h >> 15; h *= 0x2C1B3C6Du; h ^= h >> 12;
        g->nd[x].pri = h;
    }
    bf_gap_node *n = &g->nd[x];
    n->off = off; n->size = size;
    memset(n->c, 0, sizeof n->c);
    for (int k = 0; k < 2; k++) g->root[k] = bf_gins(g->nd, k, g->root[k], x);
    return true;
}

/* The first gap (by size, then offset) not below (size, off). */
static uint32_t bf_gap_ceil(const bf_gaps *g, uint64_t size, uint64_t off)
{
    uint32_t t = g->root[BF_BY_SIZE_T], r = 0;
    while (t) {
        const bf_gap_node *n = &g->nd[t];
        if (n->size > size || (n->size == size && n->off >= off)) { r = t; t = n->c[BF_BY_SIZE_T][0]; }
        else t = n->c[BF_BY_SIZE_T][1];
    }
    return r;
}

/* The gap starting at the largest offset below `off` (pred) and the one
 * starting exactly at `end` (succ). */
static void bf_gap_around(const bf_gaps *g, uint64_t off, uint64_t end, uint32_t *pred, uint32_t *succ)
{
    const int k = BF_BY_OFF_T;
    uint32_t t = g->root[k];
    *pred = *succ = 0;
    while (t) {
        if (g->nd[t].off < off) { *pred = t; t = g->nd[t].c[k][1]; } else t = g->nd[t].c[k][0];
    }
    t = g->root[k];
    while (t) {
        if (g->nd[t].off == end) { *succ = t; break; }
        t = g->nd[t].c[k][end > g->nd[t].off];
    }
}

/* How many size-ordered candidates a placement tries when alignment makes
 * the smallest gaps unusable, before it goes on top. */
#define BF_ALIGN_TRIES 16

static uint64_t bf_timeorder(const bp_allocator *a, const bp_interval *iv, const uint32_t *by_lower, uint32_t m,
                             uint64_t *off, bool *oom)
{
    bf_gaps g = { 0 };
    g.cap = 1024;
    g.nd = bp__alloc(a, (size_t)g.cap * sizeof *g.nd);
    uint32_t *heap = bp__alloc(a, ((size_t)m + 1) * sizeof *heap);
    if (!g.nd || !heap) goto oom;
    uint32_t hn = 0;
    uint64_t arena = 0, top = 0;
    for (uint32_t p = 0; p < m; p++) {
        uint32_t i = by_lower[p];
        const bp_interval *x = &iv[i];
        /* free what ended by x's lower */
        while (hn && iv[heap[0]].upper <= x->lower) {
            uint32_t d = heap[0];
            uint32_t v = heap[--hn], q = 0;
            for (;;) {
                uint32_t l = 2 * q + 1;
                if (l >= hn) break;
                uint32_t r = l + 1 < hn && iv[heap[l + 1]].upper < iv[heap[l]].upper ? l + 1 : l;
                if (iv[heap[r]].upper >= iv[v].upper) break;
                heap[q] = heap[r]; q = r;
            }
            heap[q] = v;
            /* give d's bytes back, merged with the free neighbours */
            uint64_t o = off[d], e = off[d] + iv[d].size;
            uint32_t pr, su;
            bf_gap_around(&g, o, e, &pr, &su);
            if (pr && g.nd[pr].off + g.nd[pr].size == o) { o = g.nd[pr].off; bf_gap_remove(&g, pr); }
            if (su) { e = g.nd[su].off + g.nd[su].size; bf_gap_remove(&g, su); }
            if (e >= top) top = o;
            else if (!bf_gap_add(a, &g, o, e - o)) goto oom;
        }
        /* the smallest gap that holds x (aligned), else the top */
        uint64_t at = UINT64_MAX;
        uint32_t cand = bf_gap_ceil(&g, x->size, 0);
        for (int t = 0; cand && t < BF_ALIGN_TRIES; t++) {
            bf_gap_node n = g.nd[cand];
            uint64_t o = bp__align_up(n.off, x->alignment);
            if (o - n.off <= n.size && n.size - (o - n.off) >= x->size) {
                bf_gap_remove(&g, cand);
                if (o > n.off && !bf_gap_add(a, &g, n.off, o - n.off)) goto oom;
                if (o + x->size < n.off + n.size && !bf_gap_add(a, &g, o + x->size, n.off + n.size - o - x->size)) goto oom;
                at = o;
                break;
            }
            cand = bf_gap_ceil(&g, n.size, n.off + 1);
        }
        if (at == UINT64_MAX) {
            at = bp__align_up(top, x->alignment);
            if (at > top && !bf_gap_add(a, &g, top, at - top)) goto oom;
            top = at + x->size;
            if (top > arena) arena = top;
        }
        off[i] = at;
        /* push on the end heap */
        uint32_t q = hn++;
        while (q > 0 && iv[heap[(q - 1) / 2]].upper > x->upper) { heap[q] = heap[(q - 1) / 2]; q = (q - 1) / 2; }
        heap[q] = i;
    }
    bp__free(a, g.nd, (size_t)g.cap * sizeof *g.nd);
    bp__free(a, heap, ((size_t)m + 1) * sizeof *heap);
    return arena;
oom:
    bp__free(a, g.nd, (size_t)g.cap * sizeof *g.nd);
    bp__free(a, heap, ((size_t)m + 1) * sizeof *heap);
    *oom = true;
    return 0;
}

/* The sum over intervals (size > 0) of the time segments each spans (the
 * segments lie between consecutive distinct end points): the cost of a
 * search node grows with it.  It is the sum of the uppers' ranks among the
 * distinct end points less that of the lowers': one merge of L and U (the
 * m lowers and uppers, each sorted ascending). */
static uint64_t bf_segments(const int64_t *L, const int64_t *U, uint32_t m)
{
    uint64_t s = 0, r = 0, d = 0;   /* r: the rank of the last value, d: distinct values so far */
    int64_t last = 0;
    for (uint32_t p = 0, q = 0; p < m || q < m;) {
        bool up = p >= m || (q < m && U[q] < L[p]);
        int64_t v = up ? U[q++] : L[p++];
        if (!d || v != last) { r = d++; last = v; }
        s = up ? s + r : s - r;   /* modulo 2^64: the total is the true sum */
    }
    return s;
}

/* The improvement phase on the chains of iv (chain.c; m sized
 * intervals) with `work` units, from naive's stack of them; a packing below
 * *arena is written back to offsets[] (every part at its chain's offset).
 * 1 when it ran, 0 when there are no chains (or too many overlaps), -1 out
 * of memory. */
static int bf_chains(const bp_allocator *a, const bp_interval *iv, size_t n, uint32_t m, uint64_t lb,
                     uint64_t work, uint64_t *offsets, uint64_t *arena)
{
    bp__chains ch;
    if (bp__assign_chains(a, iv, n, &ch) < 0) return -1;
    int rc = 0;
    if (ch.n < m) {
        uint64_t *co = bp__alloc(a, (ch.n ? ch.n : 1) * sizeof *co);
        bp_assign_result r;
        bp_error e;
        if (!co) rc = -1;
        /* naive cannot fail here: its stack is as high as the input's,
         * which bestfit stacked first */
        else if (bp__assign_naive(ch.iv, ch.n, co, &r, &e) == BP_OK) {
            uint64_t top = r.arena_bytes;
            rc = bp__assign_improve(a, ch.iv, ch.n, lb, BF_IMPROVE_PAIRS, work, 0, co, &top);
            if (rc == 0 && top < *arena) {
                for (size_t i = 0; i < n; i++)
                    if (ch.of[i] != UINT32_MAX) offsets[i] = co[ch.of[i]];
                *arena = top;
            }
            rc = rc == 0 ? 1 : rc > 0 ? 0 : -1;
        }
        bp__free(a, co, (ch.n ? ch.n : 1) * sizeof *co);
    }
    bp__assign_chains_free(a, &ch);
    return rc;
}

bp_status bp__assign_bestfit(const bp_interval *iv, size_t n, const bp_assign_options *o,
                             uint64_t *offsets, bp_assign_result *res, bp_error *err)
{
    return bp__assign_bestfit_ex(iv, n, o, 0, 0, offsets, res, err);
}

/* The interval tree over ranks of distinct lowers.  qa[i] = rank of
 * lower; work[i] = rank of upper = number of distinct lowers < upper. */
static bool bf_build_tree(bf_ctx *c, const int64_t *U, const uint32_t *order, uint64_t *work)
{
    const bp_allocator *a = c->a;
    size_t n = c->n;
    uint32_t m = c->m;
    uint32_t T = 0;
    for (uint32_t p = 0; p < m; p++) {
        if (p == 0 || c->L[p] != c->L[p - 1]) T++;
        c->qa[c->by_lower[p]] = T - 1;
    }
    for (uint32_t p = m, end = m; p-- > 0;) {
        if (p + 1 < m && c->L[p] != c->L[p + 1]) end = p + 1;
        c->after[c->by_lower[p]] = end;
    }
    /* uppers ascending against the distinct lowers, by merging */
    uint32_t r = 0, p2 = 0;
    for (uint32_t q = 0; q < m; q++) {
        int64_t u = U[q];
        while (p2 < m && c->L[p2] < u) { if (p2 == 0 || c->L[p2] != c->L[p2 - 1]) r++; p2++; }
        work[order[q]] = r;
    }
    c->T2 = 1;
    while (c->T2 < T) c->T2 *= 2;
    c->noff = bp__calloc(a, 2 * c->T2 + 1, sizeof *c->noff);
    uint32_t *nodeof = bp__alloc(a, n * sizeof *nodeof);
    size_t n_ent = 0;
    if (!c->noff || !nodeof) { bp__free(a, nodeof, n * sizeof *nodeof); return false; }
    for (uint32_t p = 0; p < m; p++) {
        uint32_t i = c->by_lower[p];
        uint64_t qa = c->qa[i], qb = work[i];
        if (qb <= qa) { nodeof[i] = 0; continue; } /* holds no query point */
        uint64_t r2 = qb - 1;
        size_t v = qa == r2 ? c->T2 + qa : (c->T2 + qa) >> (64 - __builtin_clzll(qa ^ r2));
        nodeof[i] = (uint32_t)v;
        c->noff[v + 1]++;
        n_ent++;
    }
    for (size_t v = 0; v < 2 * c->T2; v++) c->noff[v + 1] += c->noff[v];
    c->n_ent = n_ent;   /* the size the arrays are freed with */
    c->A = bp__alloc(a, (n_ent ? n_ent : 1) * sizeof *c->A);
    c->B = bp__alloc(a, (n_ent ? n_ent : 1) * sizeof *c->B);
    if (!c->A || !c->B) { bp__free(a, nodeof, n * sizeof *nodeof); return false; }
    /* fill: A by lower ascending, B by upper descending; noff[v] is used
     * as the cursor and restored afterwards */
    for (uint32_t p = 0; p < m; p++) {
        uint32_t i = c->by_lower[p];
        if (!nodeof[i]) continue;
        bf_ent e = { c->qa[i], i };
        c->A[c->noff[nodeof[i]]++] = e;
    }
    for (size_t v = 2 * c->T2; v > 0; v--) c->noff[v] = c->noff[v - 1];
    c->noff[0] = 0;
    for (uint32_t q = m; q-- > 0;) {
        uint32_t i = order[q];
        if (!nodeof[i]) continue;
        bf_ent e = { (uint32_t)work[i], i };
        c->B[c->noff[nodeof[i]]++] = e;
    }
    for (size_t v = 2 * c->T2; v > 0; v--) c->noff[v] = c->noff[v - 1];
    c->noff[0] = 0;
    bp__free(a, nodeof, n * sizeof *nodeof);
    return true;
}

/* After the size-ordered runs: for small inputs search's decision probes
 * and the skyline constructions, or the canonical greedy (and, with
 * pre-placed buffers, the improvement phase).  *best and offsets improve
 * only; returns -1 on OOM. */
static int bf_finish(const bf_ctx *c, const bp_interval *iv, size_t n, uint32_t m, uint32_t n_free, const int64_t *U,
                     uint64_t lb, int quality, double deadline, uint64_t *offsets, uint64_t *best_io)
{
    const bp_allocator *a = c->a;
    /* Small inputs: the improvement phase (improve.c).  Without
     * pre-placed buffers search's decision probes run first, then the
     * skyline constructions; otherwise (pre-placed buffers, or too many
     * overlapping pairs for the skyline) the canonical greedy runs and, with
     * pre-placed buffers, the search over orders follows.  Search's
     * incumbent phase (quality) runs the greedy only, as before. */
    bool small = !quality && n_free == m && n_free <= BF_SKYLINE_MAX;
    /* First, decision probes of search's depth-first search at max-live
     * (they find the packings at the bound that the constructions miss on
     * MiniMalloc's F-K, and then the constructions need not run).  A probe
     * that finds nothing leaves offsets[] as they were, so running it
     * before the constructions changes no result.  The budget: see
     * BF_PROBE_WORK. */
    if (*best_io > lb && small) {
        uint64_t segs = bf_segments(c->L, U, m);
        double nodes = BF_PROBE_WORK / ((double)segs + BF_PROBE_SEG0);
        if ((double)segs + BF_PROBE_SEG0 > BF_PROBE_SEG1) nodes *= BF_PROBE_SEG1 / ((double)segs + BF_PROBE_SEG0);
        if (nodes > BF_PROBE_MAX_M * m) nodes = BF_PROBE_MAX_M * m;
        uint64_t budget = (uint64_t)nodes;
        bp__probe steps[2] = {
            { lb, BF_PROBE_ORDER_A, (int64_t)(BF_PROBE_TWA_M * m) },
            { lb, BF_PROBE_ORDER_B, (int64_t)(BF_PROBE_TCA_M * m) },
        };
        if (budget >= m && bp__assign_search_probe(a, iv, n, steps, 2, budget, offsets, best_io, NULL) < 0) return -1;
    }
    bool sky = false;   /* the skyline constructions ran */
    if (*best_io > lb && small) {
        /* The constructions on the input get a tenth of the budget (enough
         * for those that end at their bound there: ONNX's densenet121), the
         * chains (bf_chains) the rest; without chains the input gets it all. */
        uint64_t iw = bf_improve_work(n, BF_IMPROVE_WORK);
        uint64_t pre = iw * BF_IMPROVE_PRE / 1000;
        int g = bp__assign_improve(a, iv, n, lb, BF_IMPROVE_PAIRS, pre, 0, offsets, best_io);
        if (g < 0) return -1;
        sky = g == 0;
        if (sky && *best_io > lb) {
            g = bf_chains(a, iv, n, m, lb, iw - pre, offsets, best_io);
            if (g == 0) g = bp__assign_improve(a, iv, n, lb, BF_IMPROVE_PAIRS, iw - pre, 0, offsets, best_io);
            if (g < 0) return -1;
        }
    }
    if (*best_io > lb && !sky && n_free <= (quality ? BF_GREEDY_MAX_SEARCH : BF_GREEDY_MAX) &&
        (!deadline || bp__now() < deadline)) {
        uint64_t wk = quality ? BF_GREEDY_WORK_SEARCH : BF_GREEDY_WORK;
        int g = bp__assign_greedy(a, iv, n, lb, wk, deadline, offsets, best_io);
        if (g < 0) return -1;
        if (*best_io > lb && !quality && n_free < m) {
            g = bp__assign_improve(a, iv, n, lb, BF_IMPROVE_PAIRS, bf_improve_work(n, BF_IMPROVE_WORK_FIXED), 0, offsets, best_io);
            if (g < 0) return -1;
        }
    }
    return 0;
}

/* How many size-ordered runs bestfit_ex makes (m sized intervals, n_free
 * of them free; U the uppers ascending): all BF_N_ORDERS in quality mode,
 * else as many as the overlap budget allows; 0 when the time-order pass's
 * result stands. */
static int bf_n_orders(const bf_ctx *c, const int64_t *U, uint32_t n_free, int quality)
{
    uint32_t m = c->m;
    int n_orders = BF_N_ORDERS;
    if (quality) return n_orders;
    uint64_t overlaps = 0;
    for (uint32_t p = 0, q = 0; p < m; p++) {
        while (q < m && U[q] <= c->L[p]) q++;
        overlaps += p - q;   /* started before p and not ended by L[p] (ties on lower: close enough) */
    }
    uint64_t per = overlaps + (uint64_t)m * 8;
    n_orders = per * BF_N_ORDERS <= BF_OVERLAP_BUDGET ? BF_N_ORDERS : (int)(BF_OVERLAP_BUDGET / per);
    /* a size-ordered run costs ~1 us per interval even without overlaps:
     * one above half a million, none above two million (the time-order
     * pass alone keeps 10^7 intervals within seconds) */
    if (m > BF_SIZE_RUNS_ONE && n_orders > 1) n_orders = 1;
    if (m > BF_SIZE_RUNS_MAX) n_orders = 0;
    if (n_orders == 0 && n_free == m && m > BF_TIME_ORDER_MIN) return 0;   /* the time-order pass stands */
    if (n_orders == 0) n_orders = 1;   /* nothing else ran: one order, whatever it costs */
    /* the skyline constructions follow: two orders are enough */
    if (n_free == m && n_free <= BF_SKYLINE_MAX && n_orders > BF_SIZE_RUNS_SMALL) n_orders = BF_SIZE_RUNS_SMALL;
    return n_orders;
}

/* Writes size-ordered run ord's order of the free intervals into order[]
 * and returns their number: sorted by the secondary key, then (stably) by
 * the primary, both descending (complemented keys); ties stay lower-first.
 * key, tk, ti: scratch of m entries. */
static uint32_t bf_make_order(const bf_ctx *c, int ord, const int64_t *U, uint32_t *order, uint64_t *key,
                              uint64_t *tk, uint32_t *ti)
{
    const bp_interval *iv = c->iv;
    uint32_t m = c->m;
    uint32_t k = 0;
    for (uint32_t p = 0; p < m; p++) {
        uint32_t i = c->by_lower[p];
        if (iv[i].fixed_offset != BP_NO_OFFSET) continue;
        order[k++] = i;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t q = 0; q < k; q++) {
            const bp_interval *x = &iv[order[q]];
            uint64_t v;
            int what = pass == 0 ? (ord == BF_BY_SIZE ? BF_BY_LENGTH : BF_BY_SIZE) : ord;
            switch (what) {
            case BF_BY_SIZE: v = x->size; break;
            case BF_BY_LENGTH: v = bf_len(x); break;
            case BF_BY_AREA: v = bf_sat_mul(x->size, bf_len(x)); break;
            default: {
                /* intervals overlapping x: all but those ending by x's
                 * start and those starting at or after x's end */
                size_t ends_before = bf_count_lt(U, m, x->lower, true);
                size_t starts_after = m - bf_count_lt(c->L, m, x->upper, false);
                v = (uint64_t)(m - ends_before - starts_after);
                break;
            }
            }
            key[q] = ~v;
        }
        bp__assign_radix(key, order, tk, ti, k);
    }
    return k;
}

/* window.c's sub-solver: bestfit on iv[0..n) (pre-placed buffers allowed);
 * thorough = search's incumbent phase (the greedy on its larger budget, no
 * deadline). */
static bp_status bf_pack(const bp_allocator *a, const bp_interval *iv, size_t n, int thorough, uint64_t *off,
                         uint64_t *arena)
{
    bp_assign_options o;
    memset(&o, 0, sizeof o);
    o.alloc = a;
    bp_assign_result r;
    memset(&r, 0, sizeof r);
    bp_error e;
    if (!bp__assign_max_live(a, iv, n, &r.lower_bound)) return BP_ERR_NOMEM;
    uint64_t ftop = bp__assign_fixed_top(iv, n);
    if (ftop > r.lower_bound) r.lower_bound = ftop;
    bp_status st = bp__assign_bestfit_ex(iv, n, &o, thorough, 0, off, &r, &e);
    *arena = r.arena_bytes;
    return st;
}

bp_status bp__assign_bestfit_ex(const bp_interval *iv, size_t n, const bp_assign_options *o, int quality,
                                double deadline, uint64_t *offsets, bp_assign_result *res, bp_error *err)
{
    const bp_allocator *a = bp__assign_alloc(o);
    bp_status st = BP_OK;
    if (n >= UINT32_MAX)
        return bp__err(err, BP_ERR_LIMIT, "bestfit: %zu intervals (at most %u)", n, UINT32_MAX - 1);

    /* naive first: the ceiling, and the answer when nothing can be shared */
    st = bp__assign_naive(iv, n, offsets, res, err);
    if (st != BP_OK) return st;
    uint64_t best = res->arena_bytes;
    uint64_t lb = res->lower_bound;

    bf_ctx c;
    memset(&c, 0, sizeof c);
    c.iv = iv; c.n = n; c.a = a;
    uint32_t m = 0, n_free = 0;
    uint64_t base_arena = 0;
    for (size_t i = 0; i < n; i++) {
        if (!iv[i].size) continue;
        m++;
        if (iv[i].fixed_offset == BP_NO_OFFSET) n_free++;
        else if (iv[i].fixed_offset + iv[i].size > base_arena) base_arena = iv[i].fixed_offset + iv[i].size;
    }
    if (best <= lb || n_free == 0) return BP_OK;
    c.m = m;
    c.by_lower = bp__alloc(a, (size_t)m * sizeof *c.by_lower);
    c.L = bp__alloc(a, (size_t)m * sizeof *c.L);
    uint64_t *key = bp__alloc(a, (size_t)m * sizeof *key);
    uint64_t *tk = bp__alloc(a, (size_t)m * sizeof *tk);
    uint32_t *ti = bp__alloc(a, (size_t)m * sizeof *ti);
    uint64_t *work = bp__alloc(a, n * sizeof *work);
    /* the rest only if the size-ordered runs go ahead (page faults on fresh
     * memory are a good part of the time-order pass's cost at 10^7) */
    uint32_t *order = NULL;
    int64_t *U = NULL;
    if (!c.by_lower || !c.L || !key || !tk || !ti || !work) goto oom;

    /* positions by lower */
    {
        uint32_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (!iv[i].size) continue;
            c.by_lower[k] = (uint32_t)i;
            key[k] = (uint64_t)iv[i].lower ^ (UINT64_C(1) << 63); /* order-preserving */
            k++;
        }
        bp__assign_radix(key, c.by_lower, tk, ti, m);
        for (uint32_t p = 0; p < m; p++) c.L[p] = iv[c.by_lower[p]].lower;
    }
    /* Online best fit in time order first: O(n log n) whatever the live
     * set, and often at the lower bound already (no fixed offsets: those
     * would need the whole lifetime). */
    if (n_free == m && m > BF_TIME_ORDER_MIN) {
        bool oom = false;
        uint64_t ar = bf_timeorder(a, iv, c.by_lower, m, work, &oom);
        if (oom) goto oom;
        if (ar < best) {
            best = ar;
            for (uint32_t p = 0; p < m; p++) offsets[c.by_lower[p]] = work[c.by_lower[p]];
        }
        if (best <= lb) { res->arena_bytes = best; goto done; }
        /* Large inputs: windows around the peak (window.c) instead of the
         * size-ordered runs, which it makes itself where they pay. */
        if (!quality && m > BF_GREEDY_MAX && m <= BF_SIZE_RUNS_MAX) {
            if (bp__assign_windows(a, bf_pack, iv, n, lb, offsets, &best) < 0) goto oom;
            res->arena_bytes = best;
            goto done;
        }
    }
    c.qa = bp__alloc(a, n * sizeof *c.qa);
    c.after = bp__alloc(a, n * sizeof *c.after);
    c.pend = bp__alloc(a, n * sizeof *c.pend);
    order = bp__alloc(a, (size_t)m * sizeof *order);
    U = bp__alloc(a, (size_t)m * sizeof *U);
    if (!c.qa || !c.after || !c.pend || !order || !U) goto oom;
    /* intervals by upper (in `order`, temporarily) */
    for (uint32_t p = 0; p < m; p++) {
        order[p] = c.by_lower[p];
        key[p] = (uint64_t)iv[order[p]].upper ^ (UINT64_C(1) << 63);
    }
    bp__assign_radix(key, order, tk, ti, m);
    for (uint32_t p = 0; p < m; p++) U[p] = iv[order[p]].upper;
    /* The size-ordered runs cost O(n log n + overlaps) each: count the
     * overlapping pairs (each interval against those live at its lower)
     * and run as many orders as the budget allows; none when even one would
     * blow it (randwire at 10^5+ has thousands live at once). */
    int n_orders = bf_n_orders(&c, U, n_free, quality);
    if (n_orders == 0) { res->arena_bytes = best; goto done; }
    if (!bf_build_tree(&c, U, order, work)) goto oom;
    memcpy(work, offsets, n * sizeof *work);

    /* More orders on smaller inputs; one run costs O(n log n + overlaps). */
    for (int ord = 0; ord < n_orders && best > lb; ord++) {
        if (ord > 0 && deadline > 0 && bp__now() >= deadline) break;
        uint32_t k = bf_make_order(&c, ord, U, order, key, tk, ti);
        bool oom = false;
        uint64_t ar = bf_run(&c, order, k, work, base_arena, best, &oom);
        if (oom) goto oom;
        if (ar < best) {
            best = ar;
            memcpy(offsets, work, n * sizeof *offsets);
        }
    }
    if (bf_finish(&c, iv, n, m, n_free, U, lb, quality, deadline, offsets, &best) < 0) goto oom;
    res->arena_bytes = best;
    goto done;
oom:
    st = bp__err(err, BP_ERR_NOMEM, "bestfit: out of memory for %zu intervals", n);
done:
    bp__free(a, c.by_lower, (size_t)m * sizeof *c.by_lower);
    bp__free(a, c.L, (size_t)m * sizeof *c.L);
    bp__free(a, c.qa, n * sizeof *c.qa);
    bp__free(a, c.after, n * sizeof *c.after);
    bp__free(a, c.pend, n * sizeof *c.pend);
    bp__free(a, c.noff, (2 * c.T2 + 1) * sizeof *c.noff);
    bp__free(a, c.A, (c.n_ent ? c.n_ent : 1) * sizeof *c.A);
    bp__free(a, c.B, (c.n_ent ? c.n_ent : 1) * sizeof *c.B);
    bp__free(a, c.conf, c.conf_cap * sizeof *c.conf);
    bp__free(a, c.tmp, c.tmp_cap * sizeof *c.tmp);
    bp__free(a, key, (size_t)m * sizeof *key);
    bp__free(a, tk, (size_t)m * sizeof *tk);
    bp__free(a, ti, (size_t)m * sizeof *ti);
    bp__free(a, order, (size_t)m * sizeof *order);
    bp__free(a, work, n * sizeof *work);
    bp__free(a, U, (size_t)m * sizeof *U);
    return st;
}
