/*
 * sweep.c — what every assigner shares, at the bottom of assign/: the
 * max-live lower bound (a sweep over sorted lowers and uppers where frees
 * come before allocations at equal t, half-open), the naive assigner (every
 * interval above the last), the radix sort, and for the greedy, the
 * improvement phase and search the numbering of the sized intervals (free
 * first, then pre-placed) with their end points sorted by time, and the
 * overlap lists built from them in a sweep that keeps the live set (count,
 * then fill: exact allocations; lists in sweep order, which results depend
 * on: improve draws swap partners by index).
 */
#include "assign/assign_internal.h"

#include <stdlib.h>
#include <string.h>

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
bool bp__assign_max_live(const bp_allocator *a, const bp_interval *iv, size_t n, uint64_t *out)
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
    if (bp__assign_max_live(&bp__libc_allocator, iv, n, &best)) return best;
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
uint64_t bp__assign_fixed_top(const bp_interval *iv, size_t n)
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
    uint64_t top = bp__assign_fixed_top(iv, n);
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
