/*
 * assign.c — offset assignment over half-open intervals: the dispatcher, the
 * max-live lower bound, and the two simple assigners (naive, color).
 *
 * bp_assign_intervals() validates the input once (lifetimes, alignment, fixed
 * offsets), runs one strategy, then recomputes the arena from the offsets so
 * every strategy is judged the same way.  Zero-size intervals take no memory:
 * they get offset 0 (or their fixed offset) and never conflict.  Pre-placed
 * intervals (fixed_offset) keep their offsets in every strategy; naive and
 * color put everything else above the highest fixed byte.
 *
 * The lower bound is max-live: a sweep over sorted lowers and uppers where
 * frees come before allocations at equal t (half-open), raised to the highest
 * fixed byte.  Search may report a stronger bound.
 *
 * Working memory comes from the caller's allocator (bp_assign_options.alloc,
 * libc when NULL), here and in every strategy, so that a failing allocation
 * anywhere ends the call with BP_ERR_NOMEM and nothing held.
 *
 * color is the seed's algorithm: intervals by end ascending each take the
 * smallest color whose tenants all ended by its start.  Tenants of a color
 * are added in end order, so a color is free for [lower, upper) iff its
 * latest end <= lower; a segment tree over colors keyed by that latest end
 * finds the leftmost free color in O(log C).  A color is one buffer as large
 * as its largest tenant, aligned to its strictest tenant; buffers are laid
 * out back to back.
 *
 * Shared with the greedy, the improvement phase and search: the numbering
 * of the sized intervals (free first, then pre-placed) with their end points
 * sorted by time, and the overlap lists built from them in a sweep that
 * keeps the live set (count, then fill: exact allocations; lists in sweep
 * order, which results depend on: improve draws swap partners by index).
 */
#include "assign/assign_internal.h"

#include <stdlib.h>
#include <string.h>

void bp_assign_options_init(bp_assign_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->time_limit = 10.0;
    o->capacity = 0;
    o->seed = 1;
    o->progress = 0;
    o->alloc = NULL;
}

/* ------------------------------------------------------------ max-live */

typedef struct assign_ev { int64_t t; uint64_t size; } assign_ev;

static int assign_cmp_ev(const void *a, const void *b)
{
    const assign_ev *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

/* LSD radix sort of events by t (sign flipped so negative times order
 * first); bytes that are equal in every key are skipped. */
static void assign_radix_ev(assign_ev *a, assign_ev *tmp, size_t m)
{
    uint64_t all_or = 0, all_and = ~(uint64_t)0;
    for (size_t k = 0; k < m; k++) {
        uint64_t key = (uint64_t)a[k].t ^ (UINT64_C(1) << 63);
        all_or |= key; all_and &= key;
    }
    assign_ev *src = a, *dst = tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        if ((((all_or ^ all_and) >> shift) & 0xff) == 0) continue;
        size_t cnt[257] = {0};
        for (size_t k = 0; k < m; k++) cnt[((((uint64_t)src[k].t ^ (UINT64_C(1) << 63)) >> shift) & 0xff) + 1]++;
        for (int b = 0; b < 256; b++) cnt[b + 1] += cnt[b];
        for (size_t k = 0; k < m; k++) dst[cnt[(((uint64_t)src[k].t ^ (UINT64_C(1) << 63)) >> shift) & 0xff]++] = src[k];
        assign_ev *sw = src; src = dst; dst = sw;
    }
    if (src != a) memcpy(a, src, m * sizeof *a);
}

/* Max-live with event arrays from `a`; false when they cannot be had. */
static bool assign_max_live(const bp_allocator *a, const bp_interval *iv, size_t n, uint64_t *out)
{
    *out = 0;
    if (!iv || n == 0) return true;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (iv[i].size && iv[i].lower < iv[i].upper) m++;
    if (m == 0) return true;
    assign_ev *lo = bp__alloc(a, m * sizeof *lo);
    assign_ev *hi = bp__alloc(a, m * sizeof *hi);
    uint64_t best = 0;
    bool ok = lo && hi;
    if (ok) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (!iv[i].size || iv[i].lower >= iv[i].upper) continue;
            lo[k].t = iv[i].lower; lo[k].size = iv[i].size;
            hi[k].t = iv[i].upper; hi[k].size = iv[i].size;
            k++;
        }
        assign_ev *tmp = bp__alloc(a, m * sizeof *tmp);
        if (tmp) {
            assign_radix_ev(lo, tmp, m);
            assign_radix_ev(hi, tmp, m);
            bp__free(a, tmp, m * sizeof *tmp);
        } else {   /* no scratch for the radix sort */
            qsort(lo, m, sizeof *lo, assign_cmp_ev);
            qsort(hi, m, sizeof *hi, assign_cmp_ev);
        }
        /* Frees (hi) at t are applied before allocations (lo) at t. */
        uint64_t live = 0;
        size_t j = 0;
        for (size_t i = 0; i < m; i++) {
            while (j < m && hi[j].t <= lo[i].t) live -= hi[j++].size;
            live += lo[i].size;
            if (live > best) best = live;
        }
    }
    bp__free(a, lo, m * sizeof *lo);
    bp__free(a, hi, m * sizeof *hi);
    *out = best;
    return ok;
}

void bp__assign_count(const bp_interval *iv, size_t n, uint32_t *k, uint32_t *nf)
{
    uint32_t a = 0, b = 0;
    for (size_t i = 0; i < n; i++) {
        if (!iv[i].size) continue;
        if (iv[i].fixed_offset == BP_NO_OFFSET) a++; else b++;
    }
    *k = a;
    *nf = b;
}

static int assign_cmp_tp(const void *x, const void *y)
{
    const bp__tp *a = x, *b = y;
    if (a->t != b->t) return (a->t > b->t) - (a->t < b->t);
    if (a->end != b->end) return (int)b->end - (int)a->end; /* ends first: half-open */
    return (a->b > b->b) - (a->b < b->b);
}

uint64_t bp__assign_endpoints(const bp_interval *iv, size_t n, uint32_t k, uint32_t nf, bp__tp *tp, uint32_t *ids)
{
    uint32_t q = 0, f = 0;
    for (size_t i = 0; i < n; i++) {
        if (!iv[i].size) continue;
        uint32_t id = iv[i].fixed_offset == BP_NO_OFFSET ? q++ : k + f++;
        ids[id] = (uint32_t)i;
        tp[2 * (size_t)id] = (bp__tp){iv[i].lower, id, 0};
        tp[2 * (size_t)id + 1] = (bp__tp){iv[i].upper, id, 1};
    }
    size_t m = 2 * ((size_t)k + nf);
    qsort(tp, m, sizeof *tp, assign_cmp_tp);
    uint64_t pairs = 0, live = 0;
    for (size_t e = 0; e < m; e++) {
        if (tp[e].end) live--; else { pairs += live; live++; }
    }
    return pairs;
}

/* One sweep of bp__assign_overlaps: pass 0 counts each buffer's entries
 * (and sets the bits), pass 1 writes the lists at cur[] (free-free at
 * cur[x], free-fixed at cur[k + x]).  The live set is unordered (a freed
 * slot takes the last one), so a list's order is the order of the sweep. */
static inline void assign_ov_sweep(const bp__tp *tp, uint32_t k, uint32_t nt, uint32_t *live, uint32_t *where,
                                   bp__overlaps *o, uint32_t *cur, int pass)
{
    size_t n_live = 0;
    for (size_t e = 0; e < 2 * (size_t)nt; e++) {
        uint32_t b = tp[e].b;
        if (tp[e].end) {
            uint32_t w = where[b];
            live[w] = live[--n_live];
            where[live[w]] = w;
            continue;
        }
        for (size_t l = 0; l < n_live; l++) {
            uint32_t x = live[l];
            if (x < k && b < k) {
                if (pass == 0) {
                    o->ov_off[x + 1]++; o->ov_off[b + 1]++;
                    if (o->bits) {
                        o->bits[(size_t)b * o->W + (x >> 6)] |= UINT64_C(1) << (x & 63);
                        o->bits[(size_t)x * o->W + (b >> 6)] |= UINT64_C(1) << (b & 63);
                    }
                } else if (!o->bits) {
                    o->ov[cur[x]++] = b; o->ov[cur[b]++] = x;
                }
            } else if (x < k || b < k) {   /* two pre-placed buffers: no entry */
                uint32_t fr = x < k ? x : b;
                if (pass == 0) o->fx_off[fr + 1]++;
                else o->fx[cur[k + fr]++] = (x < k ? b : x) - k;
            }
        }
        where[b] = (uint32_t)n_live;
        live[n_live++] = b;
    }
}

int bp__assign_overlaps(const bp_allocator *a, const bp__tp *tp, uint32_t k, uint32_t nf, bp__overlaps *o)
{
    uint32_t nt = k + nf;
    size_t m = nt ? nt : 1, mc = k ? 2 * (size_t)k : 1;
    o->ov = o->fx = NULL;
    o->n_ov = o->n_fx = 0;
    uint32_t *live = bp__alloc(a, m * sizeof *live), *where = bp__alloc(a, m * sizeof *where), *cur = NULL;
    int rc = -1;
    if (!live || !where) goto out;
    assign_ov_sweep(tp, k, nt, live, where, o, NULL, 0);
    for (uint32_t b = 0; b < k; b++) { o->ov_off[b + 1] += o->ov_off[b]; o->fx_off[b + 1] += o->fx_off[b]; }
    size_t n_ov = o->bits ? 0 : (k ? o->ov_off[k] : 0), n_fx = k ? o->fx_off[k] : 0;
    if (!o->bits) {
        o->ov = bp__alloc(a, (n_ov ? n_ov : 1) * sizeof *o->ov);
        if (!o->ov) goto out;
        o->n_ov = n_ov ? n_ov : 1;
    }
    o->fx = bp__alloc(a, (n_fx ? n_fx : 1) * sizeof *o->fx);
    if (!o->fx) goto out;
    o->n_fx = n_fx ? n_fx : 1;
    if (n_ov || n_fx) {
        cur = bp__alloc(a, mc * sizeof *cur);
        if (!cur) goto out;
        if (k) {
            memcpy(cur, o->ov_off, (size_t)k * sizeof *cur);
            memcpy(cur + k, o->fx_off, (size_t)k * sizeof *cur);
        }
        assign_ov_sweep(tp, k, nt, live, where, o, cur, 1);
    }
    rc = 0;
out:
    bp__free(a, live, m * sizeof *live);
    bp__free(a, where, m * sizeof *where);
    bp__free(a, cur, mc * sizeof *cur);
    if (rc) {
        bp__free(a, o->ov, o->n_ov * sizeof *o->ov);
        bp__free(a, o->fx, o->n_fx * sizeof *o->fx);
        o->ov = o->fx = NULL;
        o->n_ov = o->n_fx = 0;
    }
    return rc;
}

/* Stable LSD radix sort of idx[0..m) by key (8-bit digits; a digit that is
 * the same in every key is skipped). */
void bp__assign_radix(uint64_t *key, uint32_t *idx, uint64_t *tk, uint32_t *ti, size_t m)
{
    uint64_t all_or = 0, all_and = ~(uint64_t)0;
    for (size_t k = 0; k < m; k++) { all_or |= key[k]; all_and &= key[k]; }
    uint64_t *k0 = key, *k1 = tk;
    uint32_t *i0 = idx, *i1 = ti;
    for (int shift = 0; shift < 64; shift += 8) {
        if ((((all_or ^ all_and) >> shift) & 0xff) == 0) continue;
        size_t cnt[257] = {0};
        for (size_t k = 0; k < m; k++) cnt[((k0[k] >> shift) & 0xff) + 1]++;
        for (int b = 0; b < 256; b++) cnt[b + 1] += cnt[b];
        for (size_t k = 0; k < m; k++) {
            size_t d = cnt[(k0[k] >> shift) & 0xff]++;
            k1[d] = k0[k]; i1[d] = i0[k];
        }
        uint64_t *sk = k0; k0 = k1; k1 = sk;
        uint32_t *si = i0; i0 = i1; i1 = si;
    }
    if (k0 != key) {
        memcpy(key, k0, m * sizeof *key);
        memcpy(idx, i0, m * sizeof *idx);
    }
}

uint64_t bp_intervals_max_live(const bp_interval *iv, size_t n)
{
    uint64_t best;
    if (assign_max_live(&bp__libc_allocator, iv, n, &best)) return best;
    /* Out of memory: O(n^2) without allocation.  The maximum is reached at
     * some interval's lower end. */
    best = 0;
    for (size_t i = 0; i < n; i++) {
        if (!iv[i].size || iv[i].lower >= iv[i].upper) continue;
        uint64_t s = 0;
        for (size_t j = 0; j < n; j++)
            if (iv[j].size && iv[j].lower <= iv[i].lower && iv[i].lower < iv[j].upper)
                s += iv[j].size;
        if (s > best) best = s;
    }
    return best;
}

/* --------------------------------------------------------------- naive */

/* The highest byte used by pre-placed intervals (validated: no overflow). */
static uint64_t assign_fixed_top(const bp_interval *iv, size_t n)
{
    uint64_t top = 0;
    for (size_t i = 0; i < n; i++)
        if (iv[i].fixed_offset != BP_NO_OFFSET && iv[i].size && iv[i].fixed_offset + iv[i].size > top)
            top = iv[i].fixed_offset + iv[i].size;
    return top;
}

bp_status bp__assign_naive(const bp_interval *iv, size_t n, uint64_t *offsets,
                           bp_assign_result *res, bp_error *err)
{
    uint64_t top = assign_fixed_top(iv, n);
    for (size_t i = 0; i < n; i++) {
        if (iv[i].fixed_offset != BP_NO_OFFSET) { offsets[i] = iv[i].fixed_offset; continue; }
        if (!iv[i].size) { offsets[i] = 0; continue; }
        uint64_t off = bp__align_up(top, iv[i].alignment);
        if (off < top || !bp__add_u64(off, iv[i].size, &top))
            return bp__err(err, BP_ERR_LIMIT, "naive assignment: arena size overflows 64 bits at interval %zu", i);
        offsets[i] = off;
    }
    res->arena_bytes = top;
    return BP_OK;
}

/* --------------------------------------------------------------- color */

typedef struct assign_color_order { int64_t upper; size_t idx; } assign_color_order;

static int assign_cmp_color_order(const void *a, const void *b)
{
    const assign_color_order *x = a, *y = b;
    if (x->upper != y->upper) return (x->upper > y->upper) - (x->upper < y->upper);
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Segment tree over colors 0..cap-1: tree[node] = min latest-end of the
 * colors below it; unopened colors hold INT64_MIN (always free). */
static size_t assign_color_find(const int64_t *tree, size_t cap, int64_t lower)
{
    size_t node = 1, lo = 0, hi = cap;
    if (tree[1] > lower) return cap;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (tree[2 * node] <= lower) { node = 2 * node; hi = mid; }
        else { node = 2 * node + 1; lo = mid; }
    }
    return lo;
}

static void assign_color_set(int64_t *tree, size_t cap, size_t c, int64_t v)
{
    size_t node = 1, lo = 0, hi = cap;
    size_t path[64]; int depth = 0;
    while (hi - lo > 1) {
        path[depth++] = node;
        size_t mid = lo + (hi - lo) / 2;
        if (c < mid) { node = 2 * node; hi = mid; } else { node = 2 * node + 1; lo = mid; }
    }
    tree[node] = v;
    while (depth > 0) {
        size_t p = path[--depth];
        tree[p] = tree[2 * p] < tree[2 * p + 1] ? tree[2 * p] : tree[2 * p + 1];
    }
}

static bp_status assign_color(const bp_allocator *a, const bp_interval *iv, size_t n, uint64_t *offsets,
                              bp_assign_result *res, bp_error *err)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (iv[i].size && iv[i].fixed_offset == BP_NO_OFFSET) m++;
    uint64_t top = assign_fixed_top(iv, n);
    assign_color_order *ord = bp__calloc(a, m ? m : 1, sizeof *ord);
    uint32_t *color = bp__calloc(a, m ? m : 1, sizeof *color);
    /* At most m colors; the tree has 2*cap nodes over a power-of-two cap. */
    size_t cap = 1;
    while (cap < m) cap *= 2;
    int64_t *tree = bp__calloc(a, 2 * cap, sizeof *tree);
    uint64_t *csize = bp__calloc(a, m ? m : 1, sizeof *csize);
    uint64_t *calign = bp__calloc(a, m ? m : 1, sizeof *calign);
    bp_status st = BP_OK;
    if (!ord || !color || !tree || !csize || !calign) {
        st = bp__err(err, BP_ERR_NOMEM, "color assignment: out of memory for %zu intervals", n);
        goto done;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (iv[i].fixed_offset != BP_NO_OFFSET) { offsets[i] = iv[i].fixed_offset; continue; }
        offsets[i] = 0;
        if (!iv[i].size) continue;
        ord[k].upper = iv[i].upper; ord[k].idx = i; k++;
    }
    qsort(ord, m, sizeof *ord, assign_cmp_color_order);
    for (size_t i = 0; i < 2 * cap; i++) tree[i] = INT64_MIN;
    size_t n_colors = 0;
    for (size_t k2 = 0; k2 < m; k2++) {
        const bp_interval *x = &iv[ord[k2].idx];
        size_t c = assign_color_find(tree, cap, x->lower);
        /* Every opened color's tenants ended no later than x's end; an
         * unopened color is always free, so c < m. */
        if (c >= n_colors) n_colors = c + 1;
        color[k2] = (uint32_t)c;
        if (x->size > csize[c]) csize[c] = x->size;
        uint64_t al = x->alignment > 1 ? x->alignment : 1;
        if (al > calign[c]) calign[c] = al;
        assign_color_set(tree, cap, c, x->upper);
    }
    /* Lay the colors out back to back; reuse csize[] as the base offsets. */
    for (size_t c = 0; c < n_colors; c++) {
        uint64_t base = bp__align_up(top, calign[c]);
        uint64_t end;
        if (base < top || !bp__add_u64(base, csize[c], &end)) {
            st = bp__err(err, BP_ERR_LIMIT, "color assignment: arena size overflows 64 bits");
            goto done;
        }
        csize[c] = base;
        top = end;
    }
    for (size_t k2 = 0; k2 < m; k2++) offsets[ord[k2].idx] = csize[color[k2]];
    res->arena_bytes = top;
done:
    bp__free(a, ord, (m ? m : 1) * sizeof *ord);
    bp__free(a, color, (m ? m : 1) * sizeof *color);
    bp__free(a, tree, 2 * cap * sizeof *tree);
    bp__free(a, csize, (m ? m : 1) * sizeof *csize);
    bp__free(a, calign, (m ? m : 1) * sizeof *calign);
    return st;
}

/* ------------------------------------------------------------ dispatch */

static bool assign_is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

bp_status bp_assign_intervals(const bp_interval *iv, size_t n, bp_assign_kind kind,
                              const bp_assign_options *opts, uint64_t *offsets,
                              bp_assign_result *res, bp_error *err)
{
    bp__err_clear(err);
    double t0 = bp__now();
    bp_assign_options defaults;
    if (!opts) { bp_assign_options_init(&defaults); opts = &defaults; }
    bp_assign_result local;
    if (!res) res = &local;
    memset(res, 0, sizeof *res);
    res->fits = -1;
    if (n && (!iv || !offsets))
        return bp__err(err, BP_ERR_USAGE, "bp_assign_intervals: intervals and offsets must not be NULL");
    if ((unsigned)kind >= BP_ASSIGN_COUNT)
        return bp__err(err, BP_ERR_USAGE, "bp_assign_intervals: unknown assigner %d", (int)kind);
    if (opts->alloc && (!opts->alloc->alloc || !opts->alloc->realloc || !opts->alloc->free))
        return bp__err(err, BP_ERR_USAGE, "bp_assign_intervals: the allocator lacks a function");
    const bp_allocator *a = bp__assign_alloc(opts);
    for (size_t i = 0; i < n; i++) {
        const bp_interval *x = &iv[i];
        if (x->size && x->lower >= x->upper)
            return bp__err(err, BP_ERR_INVALID, "interval %zu: lower %lld >= upper %lld with size %llu",
                           i, (long long)x->lower, (long long)x->upper, (unsigned long long)x->size);
        if (x->alignment > 1 && !assign_is_pow2(x->alignment))
            return bp__err(err, BP_ERR_INVALID, "interval %zu: alignment %llu is not a power of two",
                           i, (unsigned long long)x->alignment);
        if (x->fixed_offset != BP_NO_OFFSET) {
            uint64_t end;
            if (x->alignment > 1 && x->fixed_offset % x->alignment)
                return bp__err(err, BP_ERR_INVALID, "interval %zu: fixed offset %llu is not a multiple of its alignment %llu",
                               i, (unsigned long long)x->fixed_offset, (unsigned long long)x->alignment);
            if (!bp__add_u64(x->fixed_offset, x->size, &end) || end == BP_NO_OFFSET)
                return bp__err(err, BP_ERR_INVALID, "interval %zu: fixed offset %llu + size %llu overflows",
                               i, (unsigned long long)x->fixed_offset, (unsigned long long)x->size);
        }
        if (x->size > UINT64_MAX / 4)
            return bp__err(err, BP_ERR_LIMIT, "interval %zu: size %llu is too large",
                           i, (unsigned long long)x->size);
    }
    /* Pre-placed intervals must not collide with each other. */
    size_t n_fixed = 0;
    for (size_t i = 0; i < n; i++)
        if (iv[i].fixed_offset != BP_NO_OFFSET && iv[i].size) n_fixed++;
    if (n_fixed > 1) {
        bp_interval *fx = bp__calloc(a, n_fixed, sizeof *fx);
        uint64_t *fo = bp__calloc(a, n_fixed, sizeof *fo);
        size_t *map = bp__calloc(a, n_fixed, sizeof *map);
        bp_status st = BP_OK;
        if (!fx || !fo || !map) st = bp__err(err, BP_ERR_NOMEM, "bp_assign_intervals: out of memory");
        else {
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                if (iv[i].fixed_offset != BP_NO_OFFSET && iv[i].size) {
                    fx[k] = iv[i]; fo[k] = iv[i].fixed_offset; map[k] = i; k++;
                }
            bp_error e2;
            bp_status cs = bp__intervals_check_alloc(a, fx, n_fixed, fo, 0, &e2);
            if (cs == BP_ERR_NOMEM) st = bp__err(err, BP_ERR_NOMEM, "bp_assign_intervals: out of memory checking the fixed offsets");
            else if (cs != BP_OK) st = bp__err(err, BP_ERR_INVALID, "fixed offsets collide: %s", e2.msg);
        }
        bp__free(a, fx, n_fixed * sizeof *fx);
        bp__free(a, fo, n_fixed * sizeof *fo);
        bp__free(a, map, n_fixed * sizeof *map);
        if (st) return st;
    }

    uint64_t lb;
    if (!assign_max_live(a, iv, n, &lb))
        return bp__err(err, BP_ERR_NOMEM, "bp_assign_intervals: out of memory for %zu intervals", n);
    uint64_t ftop = assign_fixed_top(iv, n);
    if (ftop > lb) lb = ftop;
    res->lower_bound = lb;

    bp_status st;
    switch (kind) {
    case BP_ASSIGN_NAIVE: st = bp__assign_naive(iv, n, offsets, res, err); break;
    case BP_ASSIGN_COLOR: st = assign_color(a, iv, n, offsets, res, err); break;
    case BP_ASSIGN_BESTFIT: st = bp__assign_bestfit(iv, n, opts, offsets, res, err); break;
    default: st = bp__assign_search(iv, n, opts, offsets, res, err); break;
    }
    if (st != BP_OK) { res->seconds = bp__now() - t0; return st; }

    /* The arena is what the offsets say; zero-size intervals sit at 0. */
    uint64_t arena = 0;
    for (size_t i = 0; i < n; i++) {
        if (!iv[i].size) { if (iv[i].fixed_offset == BP_NO_OFFSET) offsets[i] = 0; continue; }
        uint64_t end = offsets[i] + iv[i].size;
        if (end > arena) arena = end;
    }
    res->arena_bytes = arena;
    if (res->lower_bound < lb) res->lower_bound = lb;
    if (arena == res->lower_bound) res->optimal = 1;
    if (opts->capacity) {
        if (arena <= opts->capacity) res->fits = 1;
        else if (res->lower_bound > opts->capacity || (res->optimal && kind == BP_ASSIGN_SEARCH)) res->fits = 0;
        else if (res->fits != 0) res->fits = -1;
    }
    res->seconds = bp__now() - t0;
    return BP_OK;
}
