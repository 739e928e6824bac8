/*
 * window.c — bestfit's improvement phase at scale: repacking time windows
 * around the arena's peak.
 *
 * On large inputs the improvement phase proper (improve.c) cannot run over
 * the whole instance, and a packing's height is set locally: by the
 * buffers around the one that ends highest.  So, from the packing in
 * offsets[]: take a buffer that ends at the arena, and a window of time
 * around its lifetime holding about W buffers.  The buffers living inside
 * the window are free; those crossing its edges keep their offsets
 * (pre-placed); no other buffer shares time with a free one, so any packing
 * of that sub-instance under the current arena is a packing of the whole.
 * bestfit (with its greedy and its search over placement orders, both on
 * deterministic work budgets) packs it.  A lower sub-arena is written back
 * and the next peak is taken.  When a window does not go lower, it is
 * tried once more at four times the size, and when that fails too, both
 * sizes again with bestfit's thorough mode (the canonical greedy on
 * search's larger work budget, no deadline: the CNN-like 10^5 and
 * 3 x 10^5 peaks need it); when all fail, or the arena is at max-live, or
 * the rounds are spent, the phase ends.
 *
 * A round is O(n) (finding the peak and the window's edge-crossing buffers
 * are scans) plus the sub-problem, whose size is bounded: with a bounded
 * number of rounds the phase is O(n) on top of bestfit's O(n log n).
 * Deterministic: no clock, no randomness.
 */
#include "assign/assign_internal.h"

#include <string.h>

/* Buffers per window (free ones, by lower), and the larger retry. */
#define WIN_SIZE 1500u
#define WIN_SIZE_RETRY 6000u
/* A window holds at most this many times its size in free buffers (so a
 * sub-instance stays under bestfit's BF_GREEDY_MAX and never comes back
 * here). */
#define WIN_MAX_FACTOR 3u
/* Rounds (windows packed) at most. */
#define WIN_ROUNDS 64u

typedef struct win_ctx {
    const bp_allocator *a;
    bp__pack_fn pack;
    const bp_interval *iv;
    size_t n;
    uint32_t m;           /* sized intervals */
    uint32_t *by_lower;   /* m: sized intervals by lower */
    int64_t *L;           /* m: their lowers */
    bp_interval *sub;     /* the window's sub-instance */
    uint32_t *map;        /* input index of each sub interval */
    uint64_t *soff;       /* its offsets */
    size_t cap_sub, cap_map, cap_off;
} win_ctx;

/* The first position whose lower is >= t (binary search). */
static uint32_t win_pos(const win_ctx *c, int64_t t)
{
    uint32_t lo = 0, hi = c->m;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->L[mid] < t) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* The arena of offsets[] and a sized interval that reaches it (the first). */
static uint64_t win_peak(const win_ctx *c, const uint64_t *off, uint32_t *at)
{
    uint64_t top = 0;
    *at = UINT32_MAX;
    for (size_t i = 0; i < c->n; i++) {
        uint64_t e = c->iv[i].size ? off[i] + c->iv[i].size : 0;
        if (e > top) { top = e; *at = (uint32_t)i; }
    }
    return top;
}

/* Appends interval i to the sub-instance, pre-placed at off when fixed;
 * false on OOM. */
static bool win_push(win_ctx *c, size_t *k, uint32_t i, bool fixed, uint64_t off)
{
    if (!bp__grow(c->a, (void **)&c->sub, &c->cap_sub, *k + 1, sizeof *c->sub) ||
        !bp__grow(c->a, (void **)&c->map, &c->cap_map, *k + 1, sizeof *c->map) ||
        !bp__grow(c->a, (void **)&c->soff, &c->cap_off, *k + 1, sizeof *c->soff))
        return false;
    c->sub[*k] = c->iv[i];
    c->sub[*k].fixed_offset = fixed ? off : BP_NO_OFFSET;
    c->map[(*k)++] = i;
    return true;
}

/* Builds the window around interval x with about w free buffers: [t0, t1)
 * covers x's lifetime; free = the buffers inside it, fixed = those
 * crossing an edge.  Returns the sub-instance's size, 0 when x itself
 * would not be free or the window holds more than WIN_MAX_FACTOR w buffers
 * in all, or (size_t)-1 on OOM. */
static size_t win_build(win_ctx *c, uint32_t x, uint32_t w, const uint64_t *off)
{
    const bp_interval *iv = c->iv;
    uint32_t p0 = win_pos(c, iv[x].lower), p1 = win_pos(c, iv[x].upper);
    if (p1 - p0 > WIN_MAX_FACTOR * w) return 0; /* x lives too long for a window */
    while (p1 - p0 < w && (p0 > 0 || p1 < c->m)) {
        if (p0 > 0) p0--;
        if (p1 < c->m) p1++;
    }
    int64_t t0 = p0 < c->m ? c->L[p0] : iv[x].lower, t1 = p1 < c->m ? c->L[p1] : INT64_MAX;
    if (t0 > iv[x].lower) t0 = iv[x].lower;
    if (t1 < iv[x].upper) return 0;
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++) {
        const bp_interval *y = &iv[i];
        if (!y->size || y->upper <= t0 || y->lower >= t1) continue;
        bool fixed = y->lower < t0 || y->upper > t1 || y->fixed_offset != BP_NO_OFFSET;
        if (k >= WIN_MAX_FACTOR * w) return 0; /* too dense: the sub-problem would not be small */
        if (!win_push(c, &k, (uint32_t)i, fixed, off[i])) return (size_t)-1;
    }
    return k;
}

/* Packs window k (built) with bestfit (in its thorough mode when
 * thorough); writes back a packing below arena.  Returns 1 when it went
 * lower, 0 when not, -1 on OOM. */
static int win_pack(win_ctx *c, size_t k, int thorough, uint64_t arena, uint64_t *off)
{
    uint64_t ar = arena;
    bp_status st = c->pack(c->a, c->sub, k, thorough, c->soff, &ar);
    if (st != BP_OK) return st == BP_ERR_NOMEM ? -1 : 0;
    if (ar >= arena) return 0;
    for (size_t j = 0; j < k; j++)
        if (c->sub[j].fixed_offset == BP_NO_OFFSET) off[c->map[j]] = c->soff[j];
    return 1;
}

/* The rounds; *arena and offsets improve only.  Returns 0, 2 when a buffer
 * too long for a window ends at the arena, or -1 on OOM. */
static int win_rounds(win_ctx *c, uint64_t lb, uint64_t *off, uint64_t *arena)
{
    for (unsigned round = 0; round < WIN_ROUNDS && *arena > lb; round++) {
        uint32_t x;
        uint64_t top = win_peak(c, off, &x);
        if (x == UINT32_MAX) return 0;
        int got = 0;
        /* bestfit at both sizes first, then its thorough mode at both */
        for (unsigned t = 0; t < 4 && !got; t++) {
            size_t k = win_build(c, x, t % 2 ? WIN_SIZE_RETRY : WIN_SIZE, off);
            if (k == (size_t)-1) return -1;
            if (k == 0) return 0;
            got = win_pack(c, k, (int)(t / 2), top, off);
            if (got < 0) return -1;
        }
        if (!got) return 0;
        uint32_t y;
        *arena = win_peak(c, off, &y);
    }
    return 0;
}

/* The buffers too long for a window, packed alone (bestfit) and then held
 * at the bottom: the rest packed around them by bestfit, then the rounds
 * on that packing.  offsets[] and *arena take the result when it is lower.
 * Returns 0 or -1 on OOM. */
static int win_relayout(win_ctx *c, uint64_t lb, uint64_t *offsets, uint64_t *arena)
{
    const bp_allocator *a = c->a;
    size_t n = c->n, nh = 0;
    bp_interval *cp = bp__alloc(a, (n ? n : 1) * sizeof *cp);
    uint64_t *off = bp__alloc(a, (n ? n : 1) * sizeof *off);
    uint32_t *hid = bp__alloc(a, (n ? n : 1) * sizeof *hid);
    int rc = -1;
    if (!cp || !off || !hid) goto out;
    memcpy(cp, c->iv, n * sizeof *cp);
    for (size_t i = 0; i < n; i++)
        if (cp[i].size && win_pos(c, cp[i].upper) - win_pos(c, cp[i].lower) > WIN_MAX_FACTOR * WIN_SIZE) {
            hid[nh] = (uint32_t)i;
            cp[nh++] = c->iv[i];   /* the long ones first, packed alone */
        }
    if (nh == 0) { rc = 0; goto out; } /* nothing to hold (and packing cp would come back here) */
    uint64_t ar = 0;
    bp_status st = c->pack(a, cp, nh, 0, off, &ar);
    if (st == BP_OK) {
        memcpy(cp, c->iv, n * sizeof *cp);
        for (size_t j = 0; j < nh; j++) cp[hid[j]].fixed_offset = off[j];
        st = c->pack(a, cp, n, 0, off, &ar);
    }
    if (st != BP_OK) { rc = st == BP_ERR_NOMEM ? -1 : 0; goto out; }
    const bp_interval *orig = c->iv;
    c->iv = cp;
    rc = win_rounds(c, lb, off, &ar);
    c->iv = orig;
    if (rc >= 0) rc = 0;
    if (!rc && ar < *arena) {
        memcpy(offsets, off, n * sizeof *off);
        *arena = ar;
    }
out:
    bp__free(a, cp, (n ? n : 1) * sizeof *cp);
    bp__free(a, off, (n ? n : 1) * sizeof *off);
    bp__free(a, hid, (n ? n : 1) * sizeof *hid);
    return rc;
}

int bp__assign_windows(const bp_allocator *a, bp__pack_fn pack, const bp_interval *iv, size_t n, uint64_t lb,
                       uint64_t *offsets, uint64_t *arena)
{
    win_ctx c;
    memset(&c, 0, sizeof c);
    c.a = a;
    c.pack = pack;
    c.iv = iv;
    c.n = n;
    for (size_t i = 0; i < n; i++) c.m += iv[i].size != 0;
    size_t m1 = c.m ? c.m : 1;
    c.by_lower = bp__alloc(a, m1 * sizeof *c.by_lower);
    c.L = bp__alloc(a, m1 * sizeof *c.L);
    uint64_t *key = bp__alloc(a, m1 * sizeof *key), *tk = bp__alloc(a, m1 * sizeof *tk);
    uint32_t *ti = bp__alloc(a, m1 * sizeof *ti);
    int rc = -1;
    if (c.by_lower && c.L && key && tk && ti) {
        uint32_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (!iv[i].size) continue;
            c.by_lower[k] = (uint32_t)i;
            key[k++] = (uint64_t)iv[i].lower ^ (UINT64_C(1) << 63); /* order-preserving */
        }
        bp__assign_radix(key, c.by_lower, tk, ti, c.m);
        for (uint32_t p = 0; p < c.m; p++) c.L[p] = iv[c.by_lower[p]].lower;
        rc = win_rounds(&c, lb, offsets, arena);
        if (rc >= 0 && *arena > lb) rc = win_relayout(&c, lb, offsets, arena);
    }
    bp__free(a, key, m1 * sizeof *key);
    bp__free(a, tk, m1 * sizeof *tk);
    bp__free(a, ti, m1 * sizeof *ti);
    bp__free(a, c.by_lower, m1 * sizeof *c.by_lower);
    bp__free(a, c.L, m1 * sizeof *c.L);
    bp__free(a, c.sub, c.cap_sub * sizeof *c.sub);
    bp__free(a, c.map, c.cap_map * sizeof *c.map);
    bp__free(a, c.soff, c.cap_off * sizeof *c.soff);
    return rc;
}
