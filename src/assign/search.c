/*
 * search.c — the decision search of `search`, the exact assigner: does
 * everything fit under capacity C?  Depth-first search over canonical
 * packings on the context search_build.c makes, one part at a time;
 * search_probe.c chooses the capacities.  The ideas of MiniMalloc (Moffitt,
 * ASPLOS 2023):
 *
 *  - Offsets are assigned in nondecreasing order (ties by a static preorder),
 *    each buffer at its floor: the highest end of the placed buffers that
 *    overlap it in time (aligned).  Some optimal packing is reached this way:
 *    take one with the least sum of offsets and replay it by offset.
 *  - Dominance: a buffer is not placed at or above the lowest ceiling
 *    (floor + size) of another unplaced buffer; that one would fit entirely
 *    below, and moving it down lowers the sum of offsets.
 *  - Cross-section bound: in every time section, the unplaced sizes stack
 *    above max(floor of the section, current offset); more than C prunes.
 *    The lowest floor among a section's unplaced buffers raises its base.
 *    A node lists no candidate above C - (largest unplaced section total):
 *    each would fail the bound once placed (10x fewer placements tried on
 *    G); the lowest-floor check tries first the buffer that passed last.
 *  - Hatless pruning: when nothing unplaced overlaps the buffer just placed
 *    and its subtree fails, its siblings fail too.
 *  - Decomposition: where no buffer crosses a time point the problem splits
 *    into independent parts, each solved (and bounded) on its own; during
 *    the search, a split appears when the last unplaced buffer crossing a
 *    time point is placed, and the sides are solved one after the other.
 *  - Round robin over static preorders with doubling node limits; a run that
 *    exhausts its tree proves infeasibility whatever the order.  The ranks
 *    that break ties between equal floors come from MiniMalloc's keys (T =
 *    largest section total a buffer lives in, A = area, W = length, C =
 *    sections spanned).  A sub-part re-ranks its buffers with the totals
 *    still unplaced when it splits off, as MiniMalloc does: with the static
 *    totals, instance I stayed 3-6% above its bound after 10 s; re-ranked, TWA
 *    packs it at the bound in under 2,000 nodes.
 *
 * Decisions depend on node counts only, so results are deterministic; the
 * wall clock only stops the search.
 *
 * A node costs O(unplaced buffers + what the placement touches), not
 * O(buffers + sections): each node's list keeps its unplaced buffers first
 * (a placed one is swapped to the end of the prefix, pos[] finds it); the
 * largest section total is the parent's unless its placement touched the
 * section holding it; a dead buffer shows when a placement raises it.  The section check runs before placing (most
 * placements fail it): on b's sections, then only on the one run of
 * sections holding a buffer b raises, skipping those whose bytes fit above
 * the raised floor; the placed part of the path keeps every other section
 * valid (sr_sections_ok_inc), and debug builds compare each answer with the
 * full check.  Up to 4,096 buffers, overlaps, section members and the
 * unplaced set are bitsets.  None of this changes a decision: node counts
 * and packings are those of the plain rescans (bench_assign --nodes).
 *
 * Most nodes are entered right after their parent's placement and
 * inherit from it: the candidates (the parent's untried ones whose floor
 * did not move, plus the buffers the placement raised; a full pass only
 * when the floor limit grew) and the lowest ceiling (the lowest of the
 * SR_MK kept, while not above a bound on all others).  Candidates are
 * taken lazily: a scan for the first, a heap after.  Without alignment the
 * section that failed last is tested before the scan for the raised run
 * (s is in it iff it holds a buffer b raises), and that scan's list of
 * raised buffers is what sr_place raises.  For bestfit's short probes
 * (bp__assign_search_probe, a few thousand nodes) the fixed costs matter
 * too: up to 4,096 buffers the overlaps go straight into the bitset rows,
 * the candidate stack is sized for one dive up front, a static order is
 * ranked at its first use, and sub-parts re-rank with packed integer keys
 * (used as the ranks themselves when they fit 32 bits).  All together, on
 * 2,000-node probes at max-live (MiniMalloc D, G, I, J, K), 1.5-1.8x fewer
 * instructions a node and about 2x less setup than before.
 *
 * The depth-first search runs on an explicit stack of frames grown with the
 * caller's allocator (sr_search): its depth is the number of buffers placed
 * plus the splits on the way, which the input controls, so it never recurses
 * on the C stack.  All working memory comes from bp_assign_options.alloc.
 *
 * Pre-placed (fixed-offset) intervals are obstacles: a buffer's floor is the
 * lowest aligned offset at or above the placed buffers under it that misses
 * every obstacle (a buffer resting on an obstacle cannot move down either,
 * so the canonical and dominance arguments still hold), the cross-section
 * bound adds the obstacle bytes above the section's base, and the grid g
 * includes the obstacles' offsets and sizes.
 */
#include "assign/search_ctx.h"

#include <stdlib.h>
#include <string.h>

static bool sr_time_up(sr_ctx *c)
{
    if (c->timed_out) return true;
    if ((c->nodes & 1023) == 0) {
        double now = bp__now();
        if (c->deadline > 0 && now >= c->deadline) { c->timed_out = true; return true; }
        if (c->progress && now - c->t0 > 1.0 && now - c->last_print > 0.25) {
            fprintf(stderr, "\rsearch: arena %llu, lower bound %llu, %llu nodes, %.1f s   ",
                    (unsigned long long)c->show_ub, (unsigned long long)c->show_lb,
                    (unsigned long long)c->nodes, now - c->t0);
            c->last_print = now;
            c->printed = 1;
        }
    }
    return false;
}

/* Keys of buffer b under heuristic h (MiniMalloc's letters, all
 * descending): T = largest unplaced total of a section it lives in (from
 * `tot`), C = sections spanned, A = area, W = length. */
static bp__prio_key sr_key_of(const sr_ctx *c, uint32_t b, int h, const uint64_t *tot);

/* Ranks list[0..cnt) by heuristic c->h with section totals `tot` into
 * c->wrank (0 .. cnt-1). */
static void sr_rank_list(sr_ctx *c, const uint32_t *list, uint32_t cnt, const uint64_t *tot);


static inline bool sr_cand_lt(const sr_cand *a, const sr_cand *b)
{
    return a->off < b->off || (a->off == b->off && a->rank < b->rank);
}

/* An in-place sort of T by LT (a strict order with no ties, so any sort
 * gives the same order as qsort would): insertion sort up to SMALL
 * elements, else heap sort, the comparison inlined (qsort's indirect calls
 * cost up to 8x more on these hot paths). */
#define SR_DEFINE_SORT(NAME, T, LT, SMALL)                                    \
    static void NAME##_sift(T *a, size_t i, size_t n)                         \
    {                                                                         \
        T v = a[i];                                                           \
        for (;;) {                                                            \
            size_t j = 2 * i + 1;                                             \
            if (j >= n) break;                                                \
            if (j + 1 < n && LT(&a[j], &a[j + 1])) j++;                       \
            if (!LT(&v, &a[j])) break;                                        \
            a[i] = a[j];                                                      \
            i = j;                                                            \
        }                                                                     \
        a[i] = v;                                                             \
    }                                                                         \
    static void NAME(T *a, size_t n)                                          \
    {                                                                         \
        if (n > (SMALL)) {                                                    \
            for (size_t i = n / 2; i-- > 0;) NAME##_sift(a, i, n);            \
            for (size_t m = n - 1; m > 0; m--) {                              \
                T t = a[0]; a[0] = a[m]; a[m] = t;                            \
                NAME##_sift(a, 0, m);                                         \
            }                                                                 \
            return;                                                           \
        }                                                                     \
        for (size_t i = 1; i < n; i++) {                                      \
            T v = a[i];                                                       \
            size_t j = i;                                                     \
            while (j > 0 && LT(&v, &a[j - 1])) { a[j] = a[j - 1]; j--; }      \
            a[j] = v;                                                         \
        }                                                                     \
    }

/* A node's candidates are tried in (offset, rank) order, but most nodes
 * try only one or two before a child succeeds or the node is cut off: the
 * first is found by a plain scan, the rest kept as a min-heap (built in
 * O(nc) at the second), and each next one is moved on demand to the end of
 * the slice, so candidate i sits at base + nc - 1 - i.  Keys are distinct
 * (ranks are), so the order is that of a full sort. */
static void sr_cand_sift(sr_cand *a, size_t i, size_t n)
{
    sr_cand v = a[i];
    for (;;) {
        size_t j = 2 * i + 1;
        if (j >= n) break;
        if (j + 1 < n && sr_cand_lt(&a[j + 1], &a[j])) j++;
        if (!sr_cand_lt(&a[j], &v)) break;
        a[i] = a[j];
        i = j;
    }
    a[i] = v;
}

static void sr_cand_heapify(sr_cand *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;) sr_cand_sift(a, i, n);
}

/* Pops the smallest of the heap a[0..m) to a[m - 1]. */
static inline void sr_cand_pop(sr_cand *a, size_t m)
{
    if (m < 2) return;
    sr_cand t = a[0]; a[0] = a[m - 1]; a[m - 1] = t;
    sr_cand_sift(a, 0, m - 1);
}

/* Lowest aligned offset >= o where b misses every obstacle. */
static uint64_t sr_adjust(const sr_ctx *c, uint32_t b, uint64_t o)
{
    if (!c->nf) return o;
    bool moved = true;
    while (moved) {
        moved = false;
        for (uint32_t e = c->fx_off[b]; e < c->fx_off[b + 1]; e++) {
            uint32_t f = c->fx[e];
            if (o < c->fxe[f] && c->fxo[f] < o + c->size[b]) { o = bp__align_up(c->fxe[f], c->align[b]); moved = true; }
        }
    }
    return o;
}

/* Obstacle bytes at or above `from` in section s. */
static uint64_t sr_fixed_above(const sr_ctx *c, uint32_t s, uint64_t from)
{
    uint64_t t = 0;
    for (uint32_t e = c->sfx_off[s]; e < c->sfx_off[s + 1]; e++) {
        uint32_t f = c->sfx[e];
        if (c->fxe[f] > from) t += c->fxe[f] - (c->fxo[f] > from ? c->fxo[f] : from);
    }
    return t;
}

static bp__prio_key sr_key_of(const sr_ctx *c, uint32_t b, int h, const uint64_t *tot)
{
    uint64_t T = 0;
    if (tot) for (uint32_t s = c->slo[b]; s < c->shi[b]; s++) if (tot[s] > T) T = tot[s];
    uint64_t C = c->shi[b] - c->slo[b], len = c->len[b];
    uint64_t A = c->size[b] * len;
    if (len && A / len != c->size[b]) A = UINT64_MAX;
    bp__prio_key k;
    k.b = b;
    switch (h) {
    case 0: k.k1 = len; k.k2 = A; k.k3 = T; break;    /* WAT */
    case 1: k.k1 = T; k.k2 = A; k.k3 = len; break;    /* TAW */
    case 2: k.k1 = T; k.k2 = len; k.k3 = A; break;    /* TWA */
    default: k.k1 = T; k.k2 = C; k.k3 = A; break;     /* TCA */
    }
    return k;
}

static inline bool sr_key_lt(const bp__prio_key *x, const bp__prio_key *y)
{
    return bp__prio_key_cmp(x, y) < 0;
}

/* keys (the buffer index breaks ties): re-ranking split-off parts is hot
 * in bestfit's short probes */
SR_DEFINE_SORT(sr_sort_keys, bp__prio_key, sr_key_lt, 24)

/* Keys of a whole part or sub-part: runs of 16 sorted in place, then merged
 * through tmp (n of them) -- about half the compares and moves of the heap
 * sort, which this replaced in every probe's static orders. */
static void sr_msort_keys(bp__prio_key *a, bp__prio_key *tmp, size_t n)
{
    enum { RUN = 16 };
    for (size_t i = 0; i < n; i += RUN) sr_sort_keys(a + i, n - i < RUN ? n - i : RUN);
    bp__prio_key *src = a, *dst = tmp;
    for (size_t w = RUN; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) dst[o++] = sr_key_lt(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < mid) dst[o++] = src[i++];
            while (j < hi) dst[o++] = src[j++];
        }
        bp__prio_key *t = src; src = dst; dst = t;
    }
    if (src != a) memcpy(a, src, n * sizeof *a);
}

static void sr_rank_list(sr_ctx *c, const uint32_t *list, uint32_t cnt, const uint64_t *tot)
{
    for (uint32_t q = 0; q < cnt; q++) c->keys[q] = sr_key_of(c, list[q], c->h, tot);
    sr_msort_keys(c->keys, c->keys2, cnt);
    for (uint32_t r = 0; r < cnt; r++) c->wrank[c->keys[r].b] = r;
}

/* The same order with packed keys: T is the only key that changes, so
 * under TAW / TWA / TCA a buffer's key is (T descending, its rank by the
 * two static keys and the index), and under WAT (its rank among the
 * distinct (W, A) pairs, T descending, index); when these fit in 64 bits
 * (T below 2^32 on every MiniMalloc instance) one integer compare orders
 * them.  Splits re-rank often: 111 times in 1,770 nodes on G, a quarter
 * of the probe with the full keys. */
static inline bool sr_u64_lt(const uint64_t *x, const uint64_t *y) { return *x < *y; }

SR_DEFINE_SORT(sr_sort_u64, uint64_t, sr_u64_lt, 32)

static unsigned sr_bits(uint64_t v)
{
    unsigned n = 0;
    while (v) { n++; v >>= 1; }
    return n;
}

/* sr_rank_list(c, list, cnt, tot) for a sub-part; false (c->oom) when the
 * static ranks cannot be allocated. */
static bool sr_rank_sub(sr_ctx *c, const uint32_t *list, uint32_t cnt, const uint64_t *tot)
{
    int h = c->h;
    uint32_t k = c->k;
    if (!c->sk[h]) {
        if (!c->pk && !(c->pk = bp__alloc(c->a, (size_t)k * sizeof *c->pk))) { c->oom = true; return false; }
        if (!(c->sk[h] = bp__alloc(c->a, 2 * (size_t)k * sizeof *c->sk[h]))) { c->oom = true; return false; }
        for (uint32_t b = 0; b < k; b++) c->keys[b] = sr_key_of(c, b, h, NULL);   /* T = 0 */
        sr_msort_keys(c->keys, c->keys2, k);
        uint32_t g = 0;
        for (uint32_t r = 0; r < k; r++) {
            const bp__prio_key *y = &c->keys[r];
            if (h == 0 && r > 0 && (y->k1 != y[-1].k1 || y->k2 != y[-1].k2)) g++;
            c->sk[h][y->b] = h == 0 ? g : r;
            c->sk[h][k + r] = y->b;
        }
        c->tmax = 0;
        for (uint32_t s = 0; s < c->n_sec; s++) if (c->sec_total0[s] > c->tmax) c->tmax = c->sec_total0[s];
        c->bb = sr_bits(k - 1);
        c->bt = sr_bits(c->tmax);
        c->packs[h] = c->bb + c->bt + (h == 0 ? sr_bits(g) : 0) <= 64 && c->bb + c->bt < 64;
    }
    unsigned bb = c->bb, bt = c->bt;
    if (!c->packs[h]) {
        sr_rank_list(c, list, cnt, tot);   /* too wide to pack */
        return true;
    }
    const uint32_t *sk = c->sk[h];
    uint64_t *pk = c->pk, tmax = c->tmax;
    if (h != 0 && bb + bt <= 32) {
        /* the packed key fits a rank: ranks are only compared with each
         * other (within the sub-part), so it serves as one, unsorted */
        for (uint32_t q = 0; q < cnt; q++) {
            uint32_t b = list[q];
            uint64_t T = 0;
            for (uint32_t s = c->slo[b]; s < c->shi[b]; s++) if (tot[s] > T) T = tot[s];
            c->wrank[b] = (uint32_t)(((tmax - T) << bb) | sk[b]);
        }
    } else {
    for (uint32_t q = 0; q < cnt; q++) {
        uint32_t b = list[q];
        uint64_t T = 0;
        for (uint32_t s = c->slo[b]; s < c->shi[b]; s++) if (tot[s] > T) T = tot[s];
        pk[q] = h == 0 ? ((uint64_t)sk[b] << (bt + bb)) | ((tmax - T) << bb) | b : ((tmax - T) << bb) | sk[b];
    }
    sr_sort_u64(pk, cnt);
    uint64_t mb = (UINT64_C(1) << bb) - 1;
    for (uint32_t r = 0; r < cnt; r++) {
        uint32_t v = (uint32_t)(pk[r] & mb);
        c->wrank[h == 0 ? v : sk[k + v]] = r;
    }
    }
#ifndef NDEBUG
    /* debug builds (the tests): the order of the full keys */
    {
        uint32_t *w2 = c->dbg_w;
        {
            uint32_t *inv = w2 + k;
            for (uint32_t q = 0; q < cnt; q++) w2[list[q]] = c->wrank[list[q]];
            sr_rank_list(c, list, cnt, tot);
            for (uint32_t q = 0; q < cnt; q++) inv[c->wrank[list[q]]] = list[q];
            for (uint32_t r = 0; r + 1 < cnt; r++)
                if (w2[inv[r]] >= w2[inv[r + 1]]) {
                    fprintf(stderr, "search: compact re-ranking disagrees with the full keys\n");
                    abort();
                }
            for (uint32_t q = 0; q < cnt; q++) c->wrank[list[q]] = w2[list[q]];
        }
    }
#endif
    return true;
}

/* Places b at offset o: updates the floors of overlapping unplaced buffers
 * and of b's sections; records undo information. */
static inline void sr_raise(sr_ctx *c, uint32_t x, uint64_t h)
{
    uint64_t nm = bp__align_up(h, c->align[x]);
    if (c->minoff[x] >= nm) return;
    nm = sr_adjust(c, x, nm);
    c->tr[c->tr_n].b = x; c->tr[c->tr_n].v = c->minoff[x]; c->tr_n++;
    c->minoff[x] = nm;
    if (nm > c->rmax) c->rmax = nm;
    if (nm + c->size[x] > c->cap) c->rdead = true;
    if (c->slo[x] < c->rlo) c->rlo = c->slo[x];
    if (c->shi[x] > c->rhi) c->rhi = c->shi[x];
}

/* Places b at o: raises the floors of the unplaced buffers it overlaps and
 * of its sections, logging the old values for sr_unplace.  Returns false,
 * having changed nothing, when the logs cannot grow (out of memory). */
static bool sr_place(sr_ctx *c, uint32_t b, uint64_t o)
{
    uint32_t deg = c->ov_off[b + 1] - c->ov_off[b], span = c->shi[b] - c->slo[b];
    if (c->tr_n + deg > c->tr_cap && !bp__grow(c->a, (void **)&c->tr, &c->tr_cap, c->tr_n + deg, sizeof *c->tr)) return false;
    if (c->ts_n + span > c->ts_cap && !bp__grow(c->a, (void **)&c->ts, &c->ts_cap, c->ts_n + span, sizeof *c->ts)) return false;
    c->off[b] = o;
    uint64_t h = o + c->size[b];
    c->rlo = c->slo[b]; c->rhi = c->shi[b]; c->rmax = 0; c->rdead = false;
    if (c->ovb && !c->aligned && !c->nf && c->rl_b == b && c->rl_h == h) {
        /* right after sr_predict passed b at o: the buffers it raises are
         * those its scan listed */
        uint64_t *minoff = c->minoff, cap = c->cap;
        c->unpl[b >> 6] &= ~(UINT64_C(1) << (b & 63));
        bool dead = false;
        for (uint32_t i = 0; i < c->rl_n; i++) {
            uint32_t x = c->rl[i];
            c->tr[c->tr_n].b = x; c->tr[c->tr_n].v = minoff[x]; c->tr_n++;
            minoff[x] = h;
            dead |= h + c->size[x] > cap;
        }
        c->rdead = dead;
        c->rl_b = UINT32_MAX;
#ifndef NDEBUG
        /* debug builds (the tests): no unplaced neighbour is left below h */
        const uint64_t *row = c->ovb + (size_t)b * c->W;
        for (uint32_t w = 0; w < c->W; w++)
            for (uint64_t m = row[w] & c->unpl[w]; m; m &= m - 1)
                if (minoff[w * 64 + (uint32_t)__builtin_ctzll(m)] < h) {
                    fprintf(stderr, "search: sr_predict's raised list misses a buffer\n");
                    abort();
                }
#endif
    } else if (c->ovb && !c->aligned && !c->nf) {
        /* the fast path (sr_predict, no obstacles): every raised floor is
         * h, and rlo / rhi / rmax are not used */
        const uint64_t *row = c->ovb + (size_t)b * c->W;
        uint64_t *minoff = c->minoff, cap = c->cap;
        c->unpl[b >> 6] &= ~(UINT64_C(1) << (b & 63));
        bool dead = false;
        for (uint32_t w = 0; w < c->W; w++)
            for (uint64_t m = row[w] & c->unpl[w]; m; m &= m - 1) {
                uint32_t x = w * 64 + (uint32_t)__builtin_ctzll(m);
                if (minoff[x] >= h) continue;
                c->tr[c->tr_n].b = x; c->tr[c->tr_n].v = minoff[x]; c->tr_n++;
                minoff[x] = h;
                dead |= h + c->size[x] > cap;
            }
        c->rdead = dead;
    } else if (c->ovb) {
        const uint64_t *row = c->ovb + (size_t)b * c->W;
        c->unpl[b >> 6] &= ~(UINT64_C(1) << (b & 63));
        for (uint32_t w = 0; w < c->W; w++)
            for (uint64_t m = row[w] & c->unpl[w]; m; m &= m - 1)
                sr_raise(c, w * 64 + (uint32_t)__builtin_ctzll(m), h);
    } else {
        for (uint32_t e = c->ov_off[b]; e < c->ov_off[b + 1]; e++)
            if (c->off[c->ov[e]] == UINT64_MAX) sr_raise(c, c->ov[e], h);
    }
    uint64_t sz = c->size[b];
    for (uint32_t s = c->slo[b]; s < c->shi[b]; s++) {
        c->ts[c->ts_n].s = s; c->ts[c->ts_n].v = c->floor_[s]; c->ts_n++;
        if (h > c->floor_[s]) c->floor_[s] = h;
        c->total[s] -= sz;
    }
    return true;
}

static void sr_unplace(sr_ctx *c, uint32_t b, size_t tr_mark, size_t ts_mark)
{
    while (c->tr_n > tr_mark) { c->tr_n--; c->minoff[c->tr[c->tr_n].b] = c->tr[c->tr_n].v; }
    while (c->ts_n > ts_mark) { c->ts_n--; c->floor_[c->ts[c->ts_n].s] = c->ts[c->ts_n].v; }
    uint64_t sz = c->size[b];
    for (uint32_t s = c->slo[b]; s < c->shi[b]; s++) c->total[s] += sz;
    c->off[b] = UINT64_MAX;
    if (c->ovb) c->unpl[b >> 6] |= UINT64_C(1) << (b & 63);
}

/* Whether an unplaced buffer overlaps b. */
static bool sr_hat(const sr_ctx *c, uint32_t b)
{
    if (c->ovb) {
        const uint64_t *row = c->ovb + (size_t)b * c->W;
        for (uint32_t w = 0; w < c->W; w++) if (row[w] & c->unpl[w]) return true;
        return false;
    }
    for (uint32_t e = c->ov_off[b]; e < c->ov_off[b + 1]; e++) if (c->off[c->ov[e]] == UINT64_MAX) return true;
    return false;
}

/* Cross-section check after placing b at offset o: in each section the
 * unplaced buffers stack (disjointly: they are live together) above the
 * highest of the section's placed ends, o (offsets never decrease), and the
 * lowest floor among them.  The first two are checked everywhere; the third
 * only changes in the sections of b and of the buffers whose floor b raised
 * (trail entries from tr_mark on), so only those are rescanned. */
static bool sr_sec_test(sr_ctx *c, uint32_t s)
{
    if (!c->total[s]) return true;
    /* passes as soon as one unplaced buffer could start low enough (with
     * obstacles: m + obstacle bytes above m only grows with m) */
    if (c->total[s] > c->cap) return false;
    uint64_t need = c->cap - c->total[s];
    bool fx = c->nf && c->sfx_off[s] < c->sfx_off[s + 1];
    /* the buffer that passed last time usually still does */
    uint32_t w = c->wit[s];
    if (c->off[w] == UINT64_MAX && c->minoff[w] <= need &&
        (!fx || c->minoff[w] + sr_fixed_above(c, s, c->minoff[w]) <= need)) return true;
    for (uint32_t e = c->sec_off[s]; e < c->sec_off[s + 1]; e++) {
        uint32_t x = c->sec_buf[e];
        if (c->off[x] != UINT64_MAX || c->minoff[x] > need) continue;
        if (!fx || c->minoff[x] + sr_fixed_above(c, s, c->minoff[x]) <= need) { c->wit[s] = x; return true; }
    }
    return false;
}

static bool sr_sec_scan(sr_ctx *c, uint32_t s)
{
    if (c->stamp[s] == c->stamp_now) return true;
    c->stamp[s] = c->stamp_now;
    return sr_sec_test(c, s);
}

static bool sr_sections_ok_full(sr_ctx *c, uint32_t s0, uint32_t s1, uint32_t b, uint64_t o, size_t tr_mark)
{
    for (uint32_t s = s0; s < s1; s++) {
        if (!c->total[s]) continue;
        uint64_t f = c->floor_[s] > o ? c->floor_[s] : o;
        if (f + c->total[s] > c->cap) return false;
        if (c->nf && c->sfx_off[s] < c->sfx_off[s + 1] && f + c->total[s] + sr_fixed_above(c, s, f) > c->cap) return false;
    }
    if (!c->sec_buf) return true;
    c->stamp_now++;
    for (uint32_t s = c->slo[b]; s < c->shi[b]; s++) if (!sr_sec_scan(c, s)) return false;
    for (size_t e = tr_mark; e < c->tr_n; e++) {
        uint32_t x = c->tr[e].b;
        for (uint32_t s = c->slo[x]; s < c->shi[x]; s++) if (!sr_sec_scan(c, s)) return false;
    }
    return true;
}

/* sr_sections_ok_full without obstacles, on the sections whose state the
 * placement changed.  Invariant on every node's path: each section of the
 * node's range has floor + total <= cap (the root's check of the largest
 * total, then every placement) and passes the lowest-floor test (all
 * floors start at 0).  Between the parent and the child, only b's sections
 * lose bytes and gain a floor, and only the sections of b and of the
 * buffers whose floor it raised (all overlap b, so their sections form one
 * run [lo, hi) around b's) can change their lowest floor; the candidate
 * list already keeps o + total <= cap everywhere (sr_enter).  So checking
 * these gives the answer of the full check at O(b's sections + run)
 * instead of O(node's sections + sum of the raised buffers' sections). */
static bool sr_sections_ok_inc(sr_ctx *c, uint32_t b)
{
    /* b's sections: floor + total was checked before placing (sr_try) */
    if (!c->sec_buf) return true;
    uint32_t b0 = c->slo[b], b1 = c->shi[b];
    for (uint32_t s = b0; s < b1; s++) if (!sr_sec_test(c, s)) return false;
    /* the others: each holds a raised buffer, now at a floor <= rmax, so
     * it passes while its unplaced bytes fit above rmax */
    const uint64_t *total = c->total;
    uint64_t lim = c->rmax <= c->cap ? c->cap - c->rmax : 0;
    for (uint32_t s = c->rlo; s < b0; s++) if (total[s] > lim && !sr_sec_test(c, s)) return false;
    for (uint32_t s = b1; s < c->rhi; s++) if (total[s] > lim && !sr_sec_test(c, s)) return false;
    return true;
}

/* sr_sec_test on section s as it will be once b is placed below h (need
 * computed by the caller): b gone, the buffers b overlaps (bit set in row)
 * raised to h, aligned. */
static inline uint64_t sr_floor_after(const sr_ctx *c, uint32_t x, const uint64_t *row, uint64_t h)
{
    uint64_t m = c->minoff[x];
    if (row[x >> 6] >> (x & 63) & 1) {
        uint64_t nm = c->aligned ? bp__align_up(h, c->align[x]) : h;
        if (nm > m) m = nm;
    }
    return m;
}

static bool sr_sec_pred_scan(sr_ctx *c, uint32_t s, uint64_t need, uint32_t b, const uint64_t *row, uint64_t h);

/* The witness first, inline (it passes most tests: D tests ~36 sections a
 * node), then the scan. */
static inline bool sr_sec_pred(sr_ctx *c, uint32_t s, uint64_t need, uint32_t b, const uint64_t *row, uint64_t h)
{
    uint32_t w = c->wit[s];
    if (w != b && c->off[w] == UINT64_MAX) {
        if (!c->aligned && c->secb) {
            if (c->minoff[w] <= need &&
                ((s >= c->slo[b] && s < c->shi[b]) || !(row[w >> 6] >> (w & 63) & 1))) return true;
        } else if (sr_floor_after(c, w, row, h) <= need) return true;
    }
    return sr_sec_pred_scan(c, s, need, b, row, h);
}

static bool sr_sec_pred_scan(sr_ctx *c, uint32_t s, uint64_t need, uint32_t b, const uint64_t *row, uint64_t h)
{
    if (!c->aligned && c->secb) {
        /* without alignment a raised floor is h: in b's sections (need >=
         * h: sr_enter lists no candidate with o + total > cap) a buffer
         * passes on its floor now; elsewhere this runs only when need < h
         * (see sr_predict), so only buffers b does not overlap can pass */
        bool in_b = s >= c->slo[b] && s < c->shi[b];
        const uint64_t *sb = c->secb + (size_t)s * c->W;
        for (uint32_t i = 0; i < c->W; i++) {
            uint64_t m = sb[i] & c->unpl[i] & (in_b ? ~UINT64_C(0) : ~row[i]);
            if (i == b >> 6) m &= ~(UINT64_C(1) << (b & 63));
            for (; m; m &= m - 1) {
                uint32_t x = i * 64 + (uint32_t)__builtin_ctzll(m);
                if (c->minoff[x] <= need) { c->wit[s] = x; return true; }
            }
        }
        c->lastfail = s;
        return false;
    }
    if (c->secb) {
        const uint64_t *sb = c->secb + (size_t)s * c->W;
        for (uint32_t i = 0; i < c->W; i++) {
            uint64_t m = sb[i] & c->unpl[i];
            if (i == b >> 6) m &= ~(UINT64_C(1) << (b & 63));
            for (; m; m &= m - 1) {
                uint32_t x = i * 64 + (uint32_t)__builtin_ctzll(m);
                if (sr_floor_after(c, x, row, h) <= need) { c->wit[s] = x; return true; }
            }
        }
        c->lastfail = s;
        return false;
    }
    for (uint32_t e = c->sec_off[s]; e < c->sec_off[s + 1]; e++) {
        uint32_t x = c->sec_buf[e];
        if (x == b || c->off[x] != UINT64_MAX) continue;
        if (sr_floor_after(c, x, row, h) <= need) { c->wit[s] = x; return true; }
    }
    c->lastfail = s;
    return false;
}

/* Whether section s holds an unplaced buffer that b overlaps (row) with
 * its floor below h, i.e. one that placing b below h raises (unaligned). */
static inline bool sr_raises_in(const sr_ctx *c, uint32_t s, const uint64_t *row, uint64_t h)
{
    const uint64_t *sb = c->secb + (size_t)s * c->W;
    for (uint32_t i = 0; i < c->W; i++)
        for (uint64_t m = sb[i] & row[i] & c->unpl[i]; m; m &= m - 1)
            if (c->minoff[i * 64 + (uint32_t)__builtin_ctzll(m)] < h) return true;
    return false;
}

/* sr_sections_ok_inc before placing b at o (no obstacles, bitsets): the
 * same answer from the floors each buffer will have, so that a placement
 * that fails (most do: 4 of 5 on instance D) changes nothing.  The section
 * that failed last is tried first. */
static bool sr_predict(sr_ctx *c, uint32_t b, uint64_t o)
{
    uint64_t sz = c->size[b], h = o + sz, cap = c->cap, rmax = 0;
    const uint64_t *row = c->ovb + (size_t)b * c->W;
    uint32_t b0 = c->slo[b], b1 = c->shi[b], lo = b0, hi = b1;
    c->rl_b = UINT32_MAX;
    if (!c->sec_buf) return true;
    const uint64_t *total = c->total;
    uint32_t lf = c->lastfail;
    bool lf_out = !c->aligned && (lf < b0 || lf >= b1);
    if (lf_out) {
        /* Without alignment, the section that failed last, if outside b's,
         * is tried before the scan below (most failures are there: 15,359
         * of 17,431 in a 2,000-node probe of J): every raised floor is h,
         * so lf is in the run [lo, hi) iff b raises a buffer in it
         * (sr_raises_in), and there lim = cap - h. */
        uint64_t t = total[lf], lim = h <= cap ? cap - h : 0;
        if (t > lim && (t > cap || !sr_sec_pred(c, lf, cap - t, b, row, h))) {
            if (sr_raises_in(c, lf, row, h)) return false;
            c->lastfail = lf;
        }
    }
    if (!c->aligned) {
        /* the buffers b raises, listed for sr_place */
        const uint64_t *minoff = c->minoff;
        uint32_t *rl = c->rl, n = 0;
        for (uint32_t w = 0; w < c->W; w++)
            for (uint64_t m = row[w] & c->unpl[w]; m; m &= m - 1) {
                uint32_t x = w * 64 + (uint32_t)__builtin_ctzll(m);
                if (minoff[x] >= h) continue;
                rl[n++] = x;
                lo = c->slo[x] < lo ? c->slo[x] : lo;
                hi = c->shi[x] > hi ? c->shi[x] : hi;
            }
        if (n) rmax = h;
        c->rl_n = n; c->rl_b = b; c->rl_h = h;
    } else {
        for (uint32_t w = 0; w < c->W; w++)
            for (uint64_t m = row[w] & c->unpl[w]; m; m &= m - 1) {
                uint32_t x = w * 64 + (uint32_t)__builtin_ctzll(m);
                uint64_t nm = bp__align_up(h, c->align[x]);
                if (c->minoff[x] >= nm) continue;
                if (nm > rmax) rmax = nm;
                if (c->slo[x] < lo) lo = c->slo[x];
                if (c->shi[x] > hi) hi = c->shi[x];
            }
    }
    uint64_t lim = rmax <= cap ? cap - rmax : 0;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: the last failing section only, if in range (and not
         * tried above) */
        uint32_t s = pass ? lo : lf, end = pass ? hi : lf + 1;
        if (!pass && (s < lo || s >= hi || lf_out)) continue;
        for (; s < end; s++) {
            uint64_t t = total[s];
            if (s >= b0 && s < b1) t -= sz;
            else if (t <= lim) continue;
            if (!t) continue;
            if (t > cap) { c->lastfail = s; return false; }
            if (!sr_sec_pred(c, s, cap - t, b, row, h)) return false;
        }
    }
    return true;
}

static bool sr_sections_ok(sr_ctx *c, uint32_t s0, uint32_t s1, uint32_t b, uint64_t o, size_t tr_mark)
{
    if (c->nf) return sr_sections_ok_full(c, s0, s1, b, o, tr_mark);
    bool r = sr_sections_ok_inc(c, b);
#ifndef NDEBUG
    /* debug builds (the tests): the incremental answer is the full one */
    if (r != sr_sections_ok_full(c, s0, s1, b, o, tr_mark)) {
        fprintf(stderr, "search: incremental section check %d disagrees with the full check\n", (int)r);
        abort();
    }
#endif
    return r;
}

enum { SR_GO = -1 };   /* a step pushed a child, or a parent goes on */


/* Room for one more frame; false (and c->oom) when the stack cannot grow.
 * Frame pointers are stale afterwards. */
static bool sr_reserve(sr_ctx *c)
{
    if (c->fr_n < c->fr_cap) return true;
    if (bp__grow(c->a, (void **)&c->fr, &c->fr_cap, c->fr_n + 1, sizeof *c->fr)) return true;
    c->oom = true;
    return false;
}

/* Pushes a node frame (room was reserved). */
static sr_frame *sr_push_node(sr_ctx *c, uint32_t s0, uint32_t s1, uint32_t *bufs, size_t list_pos,
                              uint32_t nb, uint32_t left, uint64_t last_off, uint32_t last_rank)
{
    sr_frame *g = &c->fr[c->fr_n++];
    g->kind = SR_FR_NODE;
    g->s0 = s0; g->s1 = s1; g->nb = nb; g->left = left;
    g->bufs = bufs; g->list_pos = list_pos;
    g->u.n.last_off = last_off; g->u.n.last_rank = last_rank;
    g->u.n.pb = UINT32_MAX;
    return g;
}

/* Entering a node: a leaf records the packing; otherwise the node is
 * counted, the limits checked, and the candidates collected and sorted.
 * Returns SR_GO when the candidates are ready, else the node's result. */
static int sr_enter(sr_ctx *c, sr_frame *f)
{
    const uint32_t *bl = f->bufs ? f->bufs : c->lists + f->list_pos;
    uint32_t nb = f->nb, left = f->left;
    if (left == 0) {
        for (uint32_t q = 0; q < nb; q++) c->sol[bl[q]] = c->off[bl[q]];
        return SR_FOUND;
    }
#ifndef NDEBUG
    /* debug builds (the tests): the list is unplaced buffers, then placed
     * ones, and pos[] finds each unplaced one */
    for (uint32_t q = 0; q < nb; q++)
        if ((c->off[bl[q]] == UINT64_MAX) != (q < left) || (q < left && c->pos[bl[q]] != q)) {
            fprintf(stderr, "search: node list out of order at %u of %u (%u unplaced)\n", q, nb, left);
            abort();
        }
#endif
    if (c->nodes >= c->max_nodes) { c->timed_out = true; return SR_TIMEOUT; }
    c->nodes++;
    if (c->nodes_left-- <= 0) return SR_ABORTED;
    if (sr_time_up(c)) return SR_TIMEOUT;
    /* every placement at offset o must leave room for each section's
     * unplaced bytes above o (the first check of sr_sections_ok, which the
     * placed buffer's own sections pass or fail alike): candidates above
     * cap - (largest unplaced total) would fail it, so they are not listed.
     * The largest total is the parent's unless the buffer placed there
     * lives in the section that held it (totals only shrink). */
    uint64_t cap = c->cap, mt = f->u.n.mt;
    uint32_t pb = f->u.n.pb, ms = f->u.n.ms;
    if (pb == UINT32_MAX || (ms >= c->slo[pb] && ms < c->shi[pb])) {
        mt = 0; ms = f->s0;
        for (uint32_t s = f->s0; s < f->s1; s++) if (c->total[s] > mt) { mt = c->total[s]; ms = s; }
        f->u.n.mt = mt; f->u.n.ms = ms;
    }
    const uint64_t *minoff = c->minoff, *size = c->size;
    const uint32_t *rank = c->rank;
    /* the lowest ceiling among unplaced buffers (dominance) and dead
     * buffers (ceiling above cap).  Below the root of a part, a ceiling only
     * moves when the parent's placement raised it: a dead buffer is one it
     * raised too high (sr_raise), and the lowest ceiling is the lowest of
     * the SR_MK buffers kept when it was last found, as long as that is
     * not above the bound mb on all the others (else a full pass). */
    if (mt > cap) return SR_INFEASIBLE;
    if (pb != UINT32_MAX && f->u.n.dead) return SR_INFEASIBLE;
    /* candidates: unplaced, floor below both limits, canonical after the
     * last */
    size_t base = c->cand_n;
    uint64_t last_off = f->u.n.last_off;
    uint32_t last_rank = f->u.n.last_rank;
    if (base + left > c->cand_cap && !bp__grow(c->a, (void **)&c->cand, &c->cand_cap, base + left, sizeof *c->cand)) {
        c->oom = true;
        return SR_ABORTED;
    }
    sr_cand *cd = c->cand + base;
    size_t nc = 0;
    uint64_t lim = cap - mt + 1;
    uint64_t min_h = UINT64_MAX;
    bool full = pb == UINT32_MAX;
    if (!full) {
        for (int j = 0; j < SR_MK; j++) {
            uint32_t x = f->u.n.mk[j];
            if (x != UINT32_MAX && c->off[x] == UINT64_MAX && minoff[x] + size[x] < min_h) min_h = minoff[x] + size[x];
        }
        full = min_h > f->u.n.mb;
    }
    if (full) {
        /* the lowest ceilings must be found again: in the same pass as the
         * candidates below cap - mt + 1, which are then cut at the lowest */
        uint64_t max_h = 0, tv[SR_MK + 1];
        uint32_t tb[SR_MK + 1];
        int tn = 0;
        for (uint32_t q = 0; q < left; q++) {
            uint32_t b = bl[q];
            uint64_t mo = minoff[b], h = mo + size[b];
            if (tn <= SR_MK || h < tv[SR_MK]) {
                int j = tn <= SR_MK ? tn++ : SR_MK;
                while (j > 0 && tv[j - 1] > h) { tv[j] = tv[j - 1]; tb[j] = tb[j - 1]; j--; }
                tv[j] = h; tb[j] = b;
            }
            if (h > max_h) max_h = h;
            if (mo >= lim || mo < last_off || (mo == last_off && rank[b] < last_rank)) continue;
            cd[nc].off = mo; cd[nc].rank = rank[b]; cd[nc].b = b;
            nc++;
        }
        /* a ceiling above cap (at the root of a part; below it, sr_raise
         * flags one) */
        if (pb == UINT32_MAX && max_h > cap) return SR_INFEASIBLE;
        min_h = tv[0];
        for (int j = 0; j < SR_MK; j++) f->u.n.mk[j] = j < tn ? tb[j] : UINT32_MAX;
        f->u.n.mb = tn > SR_MK ? tv[SR_MK] : UINT64_MAX;
        size_t w = 0;
        for (size_t i = 0; i < nc; i++) if (cd[i].off < min_h) cd[w++] = cd[i];
        nc = w;
        if (min_h < lim) lim = min_h;
    } else if ((min_h < lim ? min_h : lim) == f[-1].u.n.lim) {
        /* a node entered right after its parent placed pb (f[-1] is that
         * parent), with the parent's limit: its candidates are the
         * parent's not yet tried (they follow pb in (floor, rank) order)
         * whose floor pb did not raise, and the buffers pb raised (now
         * above pb's offset) whose floor is still below the limit.  A
         * limit only grows down the tree (totals shrink, ceilings rise), so
         * a larger one sends the node to the full pass below. */
        const sr_frame *p = f - 1;
        const sr_cand *rest = c->cand + p->u.n.base;
        size_t nr = p->u.n.nc - 1 - p->u.n.i;
        if (min_h < lim) lim = min_h;
        for (size_t i = 0; i < nr; i++)
            if (minoff[rest[i].b] == rest[i].off) cd[nc++] = rest[i];
        for (size_t e = p->u.n.trm; e < c->tr_n; e++) {
            uint32_t b = c->tr[e].b;
            uint64_t mo = minoff[b];
            if (mo >= lim) continue;
            cd[nc].off = mo; cd[nc].rank = rank[b]; cd[nc].b = b;
            nc++;
        }
#ifndef NDEBUG
        /* debug builds (the tests): the same set as the full pass */
        unsigned char *in = (unsigned char *)c->dbg_w;
        {
            for (size_t i = 0; i < nc; i++) in[cd[i].b] = 0;
            for (uint32_t q = 0; q < left; q++) in[bl[q]] = 0;
            size_t nf = 0;
            for (size_t i = 0; i < nc; i++)
                if (cd[i].off == minoff[cd[i].b] && cd[i].rank == rank[cd[i].b]) in[cd[i].b] = 1;
            for (uint32_t q = 0; q < left; q++) {
                uint32_t b = bl[q];
                uint64_t mo = minoff[b];
                if (mo >= lim || mo < last_off || (mo == last_off && rank[b] < last_rank)) continue;
                if (!in[b]) {
                    fprintf(stderr, "search: inherited candidates miss buffer %u\n", b);
                    abort();
                }
                nf++;
            }
            if (nf != nc) {
                fprintf(stderr, "search: inherited candidates %zu, the full pass %zu\n", nc, nf);
                abort();
            }
        }
#endif
    } else {
        if (min_h < lim) lim = min_h;
        for (uint32_t q = 0; q < left; q++) {
            uint32_t b = bl[q];
            uint64_t mo = minoff[b];
            if (mo >= lim || mo < last_off || (mo == last_off && rank[b] < last_rank)) continue;
            cd[nc].off = mo; cd[nc].rank = rank[b]; cd[nc].b = b;
            nc++;
        }
    }
#ifndef NDEBUG
    /* debug builds (the tests): the lowest ceiling of a full pass */
    {
        uint64_t m = UINT64_MAX;
        for (uint32_t q = 0; q < left; q++) if (minoff[bl[q]] + size[bl[q]] < m) m = minoff[bl[q]] + size[bl[q]];
        if (m != min_h) {
            fprintf(stderr, "search: kept lowest ceiling %llu, a full pass %llu\n", (unsigned long long)min_h, (unsigned long long)m);
            abort();
        }
    }
#endif
    f->u.n.lim = lim;
    c->cand_n = base + nc;
    f->u.n.base = base;
    f->u.n.nc = nc;
    f->u.n.i = 0;
    f->kind = SR_FR_TRY;
    return SR_GO;
}

/* A node's candidate b (number i) failed: "hatless": when nothing unplaced
 * overlaps b, b at its floor blocks no one, so placing another buffer
 * first fails too; else the next candidate. */
static int sr_next(sr_ctx *c, sr_frame *f, uint32_t b)
{
    if (!sr_hat(c, b)) { c->cand_n = f->u.n.base; return SR_INFEASIBLE; }
    f->u.n.i++;
    return SR_GO;
}

/* A node's candidate i came back with result r: undo its placement, then
 * stop (r decided, or the hatless rule) or go on with the next. */
static int sr_node_back(sr_ctx *c, sr_frame *f, int r)
{
    uint32_t b = c->cand[f->u.n.base + f->u.n.nc - 1 - f->u.n.i].b;
    for (uint32_t s = c->slo[b] + 1; s < c->shi[b]; s++) c->cross[s]++;
    sr_unplace(c, b, f->u.n.trm, f->u.n.tsm);
    if (r != SR_INFEASIBLE) { c->cand_n = f->u.n.base; return r; }
    return sr_next(c, f, b);
}

/* Places the node's next candidates until one passes the section checks;
 * its continuation is pushed: a split when the placement left a boundary
 * inside [s0, s1) uncrossed (and buffers remain), else the next node. */
static int sr_try(sr_ctx *c, size_t fi)
{
    for (;;) {
        sr_frame *f = &c->fr[fi];
        if (f->u.n.i >= f->u.n.nc) { c->cand_n = f->u.n.base; return SR_INFEASIBLE; }
        if (!sr_reserve(c)) { f = &c->fr[fi]; c->cand_n = f->u.n.base; return SR_ABORTED; }
        f = &c->fr[fi];
        size_t m = f->u.n.nc - f->u.n.i;
        sr_cand *a = c->cand + f->u.n.base;
        if (f->u.n.i == 0) {
            /* the first: a plain minimum (many nodes try no other) */
            size_t j = 0;
            for (size_t q = 1; q < m; q++) if (sr_cand_lt(&a[q], &a[j])) j = q;
            sr_cand t = a[j]; a[j] = a[m - 1]; a[m - 1] = t;
        } else {
            if (f->u.n.i == 1) sr_cand_heapify(a, m);
            sr_cand_pop(a, m);
        }
        sr_cand cd = c->cand[f->u.n.base + m - 1];
        f->u.n.trm = c->tr_n; f->u.n.tsm = c->ts_n;
        /* b's own sections once placed (floor at least o + size, its bytes
         * gone from the totals): the part of the section check that fails
         * most, done before placing.  sr_predict implies it (an unplaced
         * buffer's floor is at least its section's floor), so the fast path
         * skips it: it fired in none of the 2,000-node probes of D-K and
         * cost J a tenth of its time. */
        bool fast = !c->nf && c->ovb, ok = true;
        if (!fast) {
            uint64_t h = cd.off + c->size[cd.b], sz = c->size[cd.b], cap = c->cap;
            bool bad = false;
            for (uint32_t s = c->slo[cd.b]; s < c->shi[cd.b] && !bad; s++) {
                uint64_t t = c->total[s] - sz, fl = c->floor_[s] > h ? c->floor_[s] : h;
                bad = t && fl + t > cap;
            }
            if (bad) {
                int r = sr_next(c, f, cd.b);
                if (r != SR_GO) return r;
                continue;
            }
        }
        if (fast && !sr_predict(c, cd.b, cd.off)) {
#ifndef NDEBUG
            /* debug builds (the tests): the placement fails the full check
             * (a placement that could not grow its undo logs changed
             * nothing: out of memory, as below) */
            if (!sr_place(c, cd.b, cd.off)) {
                c->oom = true;
                c->cand_n = f->u.n.base;
                return SR_ABORTED;
            }
            for (uint32_t s = c->slo[cd.b] + 1; s < c->shi[cd.b]; s++) c->cross[s]--;
            if (sr_sections_ok_full(c, f->s0, f->s1, cd.b, cd.off, f->u.n.trm)) {
                fprintf(stderr, "search: predicted section check fails, the full check passes\n");
                abort();
            }
            for (uint32_t s = c->slo[cd.b] + 1; s < c->shi[cd.b]; s++) c->cross[s]++;
            sr_unplace(c, cd.b, f->u.n.trm, f->u.n.tsm);
#endif
            int r = sr_next(c, f, cd.b);
            if (r != SR_GO) return r;
            continue;
        }
        {
            /* the child walks the unplaced prefix: move b to its end */
            uint32_t *l = f->bufs ? f->bufs : c->lists + f->list_pos;
            uint32_t i = c->pos[cd.b], j = f->left - 1, y = l[j];
            l[i] = y; c->pos[y] = i;
            l[j] = cd.b; c->pos[cd.b] = j;
        }
        if (!sr_place(c, cd.b, cd.off)) {   /* it changed nothing */
            c->oom = true;
            c->cand_n = f->u.n.base;
            return SR_ABORTED;
        }
        for (uint32_t s = c->slo[cd.b] + 1; s < c->shi[cd.b]; s++) c->cross[s]--;
        if (!fast) ok = sr_sections_ok(c, f->s0, f->s1, cd.b, cd.off, f->u.n.trm);
#ifndef NDEBUG
        else if (!sr_sections_ok_full(c, f->s0, f->s1, cd.b, cd.off, f->u.n.trm)) {
            fprintf(stderr, "search: predicted section check passes, the full check fails\n");
            abort();
        }
#endif
        if (ok) {
            uint32_t left = f->left - 1;
            bool split = false;
            for (uint32_t s = c->slo[cd.b] + 1; s < c->shi[cd.b]; s++)
                if (c->cross[s] == 0 && s > f->s0 && s < f->s1) { split = true; break; }
            if (!split || left == 0) {
                sr_frame *g = sr_push_node(c, f->s0, f->s1, f->bufs, f->list_pos, f->nb, left, cd.off, cd.rank);
                g->u.n.mt = f->u.n.mt; g->u.n.ms = f->u.n.ms; g->u.n.pb = cd.b;
                g->u.n.mb = f->u.n.mb; g->u.n.dead = c->rdead;
                memcpy(g->u.n.mk, f->u.n.mk, sizeof g->u.n.mk);
            } else {
                sr_frame *g = &c->fr[c->fr_n++];
                g->kind = SR_FR_SPLIT0;
                g->s0 = f->s0; g->s1 = f->s1; g->nb = f->nb; g->left = left;
                g->bufs = f->bufs; g->list_pos = f->list_pos;
            }
            return SR_GO;
        }
        int r = sr_node_back(c, f, SR_INFEASIBLE);
        if (r != SR_GO) return r;
    }
}

/* A split is over: its sub-part lists moved pos[] of its unplaced
 * buffers; they point into its own list again. */
static void sr_split_done(sr_ctx *c, const sr_frame *f)
{
    uint32_t *l = f->bufs ? f->bufs : c->lists + f->list_pos;
    for (uint32_t q = 0; q < f->left; q++) c->pos[l[q]] = q;
}

/* A split: records the placed buffers so far, then pushes a node frame for
 * each sub-part [a, e) (e: the next boundary no unplaced buffer crosses)
 * that holds unplaced buffers, one at a time. */
static int sr_split(sr_ctx *c, size_t fi)
{
    sr_frame *f = &c->fr[fi];
#define SR_LIST (f->bufs ? f->bufs : c->lists + f->list_pos)
    if (f->kind == SR_FR_SPLIT0) {
        for (uint32_t q = f->left; q < f->nb; q++) { uint32_t x = SR_LIST[q]; c->sol[x] = c->off[x]; }
        f->u.s.mark = c->lists_n;
        f->u.s.a = f->s0;
        f->kind = SR_FR_SPLIT;
    }
    while (f->u.s.a < f->s1) {
        uint32_t a = f->u.s.a, e = a + 1;
        while (e < f->s1 && c->cross[e] != 0) e++;
        /* sub-part [a, e): unplaced buffers starting in it */
        size_t start = c->lists_n;
        for (uint32_t q = 0; q < f->left; q++) {
            uint32_t x = SR_LIST[q];
            if (c->slo[x] < a || c->slo[x] >= e) continue;
            if (c->lists_n >= c->lists_cap &&
                !bp__grow(c->a, (void **)&c->lists, &c->lists_cap, c->lists_n + 1, sizeof *c->lists)) {
                c->oom = true;
                c->lists_n = f->u.s.mark;
                return SR_ABORTED;
            }
            c->pos[x] = (uint32_t)(c->lists_n - start);
            c->lists[c->lists_n++] = x;
        }
        uint32_t cnt = (uint32_t)(c->lists_n - start);
        if (cnt) {
            if (!sr_reserve(c)) { c->lists_n = c->fr[fi].u.s.mark; return SR_ABORTED; }
            /* MiniMalloc re-sorts a sub-part's buffers with the section
             * totals left at this point; the old ranks are kept after the
             * list as (buffer, rank) pairs, restored by sr_split_back (the
             * sub-part's nodes reorder the list itself) */
            if (c->lists_n + 2 * (size_t)cnt > c->lists_cap &&
                !bp__grow(c->a, (void **)&c->lists, &c->lists_cap, c->lists_n + 2 * (size_t)cnt, sizeof *c->lists)) {
                c->oom = true;
                c->lists_n = c->fr[fi].u.s.mark;
                return SR_ABORTED;
            }
            for (uint32_t q = 0; q < cnt; q++) {
                uint32_t x = c->lists[start + q];
                c->lists[c->lists_n++] = x;
                c->lists[c->lists_n++] = c->wrank[x];
            }
            if (cnt > 1 && !sr_rank_sub(c, c->lists + start, cnt, c->total)) {
                c->lists_n = c->fr[fi].u.s.mark;
                return SR_ABORTED;
            }
            f = &c->fr[fi];
            f->u.s.start = start; f->u.s.e = e; f->u.s.cnt = cnt;
            sr_push_node(c, a, e, NULL, start, cnt, cnt, 0, 0);
            return SR_GO;
        }
        c->lists_n = start;
        f->u.s.a = e;
    }
    c->lists_n = f->u.s.mark;
    sr_split_done(c, f);
    return SR_FOUND;
#undef SR_LIST
}

/* A split's sub-part came back with r: the next one, unless r is not
 * SR_FOUND (then the split fails with r). */
static int sr_split_back(sr_ctx *c, sr_frame *f, int r)
{
    const uint32_t *old = c->lists + f->u.s.start + f->u.s.cnt;
    for (uint32_t q = 0; q < f->u.s.cnt; q++) c->wrank[old[2 * q]] = old[2 * q + 1];
    c->lists_n = f->u.s.start;
    f->u.s.a = f->u.s.e;
    if (r != SR_FOUND) { c->lists_n = f->u.s.mark; sr_split_done(c, f); return r; }
    return SR_GO;
}

/* Searches the part [s0, s1) over bufs[0..nb) to the end. */
static int sr_search(sr_ctx *c, uint32_t s0, uint32_t s1, uint32_t *bufs, uint32_t nb)
{
    c->fr_n = 0;
    if (!sr_reserve(c)) return SR_ABORTED;
    sr_push_node(c, s0, s1, bufs, 0, nb, nb, 0, 0);
    for (;;) {
        size_t fi = c->fr_n - 1;
        sr_frame *f = &c->fr[fi];
        int r = f->kind == SR_FR_NODE ? sr_enter(c, f) : SR_GO;
        if (r == SR_GO) r = f->kind == SR_FR_TRY ? sr_try(c, fi) : sr_split(c, fi);
        /* a finished frame hands r to its parent, which may finish too */
        while (r != SR_GO) {
            if (--c->fr_n == 0) return r;
            f = &c->fr[c->fr_n - 1];
            r = f->kind == SR_FR_TRY ? sr_node_back(c, f, r) : sr_split_back(c, f, r);
        }
    }
}

/* Decides part p at capacity cap with heuristic h and a node budget. */
static int sr_solve_part(sr_ctx *c, sr_part *p, uint64_t cap, int h, int64_t limit)
{
    if (p->best <= cap) return SR_FOUND;
    if (cap < p->lo) return SR_INFEASIBLE;
    c->cap = cap;
    c->rank = c->wrank;
    c->h = h;
    c->nodes_left = limit;
    if (!c->pre_done[h]) {
        sr_rank_list(c, c->part_buf, c->k, c->sec_total0);
        memcpy(c->pre + (size_t)h * c->k, c->wrank, c->k * sizeof *c->wrank);
        c->pre_done[h] = true;
    }
    for (uint32_t q = p->b0; q < p->b1; q++) {
        uint32_t b = c->part_buf[q];
        c->off[b] = UINT64_MAX;
        c->minoff[b] = sr_adjust(c, b, 0);
        c->pos[b] = q - p->b0;
        if (c->ovb) c->unpl[b >> 6] |= UINT64_C(1) << (b & 63);
        c->wrank[b] = c->pre[(size_t)h * c->k + b];
    }
    for (uint32_t s = p->s0; s < p->s1; s++) { c->floor_[s] = 0; c->total[s] = c->sec_total0[s]; c->cross[s] = c->cross0[s]; }
    c->tr_n = c->ts_n = c->cand_n = c->lists_n = 0;
    int r = sr_search(c, p->s0, p->s1, c->part_buf + p->b0, p->b1 - p->b0);
    if (r == SR_FOUND) {
        uint64_t hgt = 0;
        for (uint32_t q = p->b0; q < p->b1; q++) {
            uint32_t b = c->part_buf[q];
            c->best[b] = c->sol[b];
            if (c->sol[b] + c->size[b] > hgt) hgt = c->sol[b] + c->size[b];
        }
        p->best = hgt;
    } else if (r == SR_INFEASIBLE) {
        p->lo = cap + c->g;
    }
    return r;
}

/* Decides every part at capacity cap (heuristic h, node budget each). */
int bp__assign_search_decide(sr_ctx *c, uint64_t cap, int h, int64_t limit)
{
    int worst = SR_FOUND;
    for (uint32_t i = 0; i < c->n_parts; i++) {
        int r = sr_solve_part(c, &c->parts[i], cap, h, limit);
        if (r == SR_INFEASIBLE || r == SR_TIMEOUT) return r;
        if (r == SR_ABORTED) worst = SR_ABORTED;
        if (c->oom) return SR_ABORTED;
    }
    return worst;
}
