/*
 * check.c — the independent interval-assignment verifier (bp_intervals_check).
 *
 * It sweeps time: intervals enter at lower and leave at upper (leaving first
 * at equal t, lifetimes are half-open), and the live ones are kept in a treap
 * ordered by offset.  Because the live set is pairwise disjoint while the
 * check passes, an entering interval only has to be compared with its
 * neighbours by offset: O(n log n) in all.
 */
#include "assign/assign_internal.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- verifier */

typedef struct chk_treap {
    uint32_t *l, *r;      /* children, UINT32_MAX = none */
    const uint64_t *off;  /* key: (offset, index) */
} chk_treap;

#define CHK_NIL UINT32_MAX

static uint32_t chk_prio(uint32_t i)
{
    uint32_t x = i * 0x9e3779b9u;
    x ^= x >> 16; x *= 0x85ebca6bu; x ^= x >> 13;
    return x;
}

static bool chk_less(const chk_treap *t, uint32_t a, uint32_t b)
{
    return t->off[a] < t->off[b] || (t->off[a] == t->off[b] && a < b);
}

/* Splits tree `root` into keys < k and keys >= k (iteratively). */
static void chk_split(chk_treap *t, uint32_t root, uint32_t k, uint32_t *lo, uint32_t *hi)
{
    uint32_t *lp = lo, *hp = hi;
    while (root != CHK_NIL) {
        if (chk_less(t, root, k)) { *lp = root; lp = &t->r[root]; root = t->r[root]; }
        else { *hp = root; hp = &t->l[root]; root = t->l[root]; }
    }
    *lp = CHK_NIL; *hp = CHK_NIL;
}

static uint32_t chk_merge(chk_treap *t, uint32_t a, uint32_t b)
{
    uint32_t root = CHK_NIL, *slot = &root;
    while (a != CHK_NIL && b != CHK_NIL) {
        if (chk_prio(a) > chk_prio(b)) { *slot = a; slot = &t->r[a]; a = t->r[a]; }
        else { *slot = b; slot = &t->l[b]; b = t->l[b]; }
    }
    *slot = a != CHK_NIL ? a : b;
    return root;
}

typedef struct chk_ev { int64_t t; uint32_t i; } chk_ev;

static int chk_cmp_ev(const void *a, const void *b)
{
    const chk_ev *x = a, *y = b;
    if (x->t != y->t) return (x->t > y->t) - (x->t < y->t);
    return (x->i > y->i) - (x->i < y->i);
}

bp_status bp_intervals_check(const bp_interval *iv, size_t n, const uint64_t *offsets,
                             uint64_t arena, bp_error *err)
{
    return bp__intervals_check_alloc(&bp__libc_allocator, iv, n, offsets, arena, err);
}

bp_status bp__intervals_check_alloc(const bp_allocator *a, const bp_interval *iv, size_t n,
                                    const uint64_t *offsets, uint64_t arena, bp_error *err)
{
    bp__err_clear(err);
    if (n && (!iv || !offsets)) return bp__err(err, BP_ERR_USAGE, "bp_intervals_check: NULL intervals or offsets");
    if (n >= UINT32_MAX) return bp__err(err, BP_ERR_LIMIT, "bp_intervals_check: %zu intervals", n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const bp_interval *x = &iv[i];
        uint64_t end;
        if (x->size && x->lower >= x->upper)
            return bp__err(err, BP_ERR_INVALID, "interval %zu: lower %lld >= upper %lld", i,
                           (long long)x->lower, (long long)x->upper);
        if (x->fixed_offset != BP_NO_OFFSET && offsets[i] != x->fixed_offset)
            return bp__err(err, BP_ERR_VERIFY, "interval %zu: offset %llu but fixed at %llu", i,
                           (unsigned long long)offsets[i], (unsigned long long)x->fixed_offset);
        if (x->alignment > 1 && offsets[i] % x->alignment)
            return bp__err(err, BP_ERR_VERIFY, "interval %zu: offset %llu is not a multiple of its alignment %llu", i,
                           (unsigned long long)offsets[i], (unsigned long long)x->alignment);
        if (!x->size) continue;
        if (!bp__add_u64(offsets[i], x->size, &end))
            return bp__err(err, BP_ERR_VERIFY, "interval %zu: offset %llu + size %llu overflows", i,
                           (unsigned long long)offsets[i], (unsigned long long)x->size);
        if (arena && end > arena)
            return bp__err(err, BP_ERR_VERIFY, "interval %zu: bytes [%llu, %llu) outside the arena of %llu", i,
                           (unsigned long long)offsets[i], (unsigned long long)end, (unsigned long long)arena);
        m++;
    }
    if (m < 2) return BP_OK;
    chk_ev *lo = bp__calloc(a, m, sizeof *lo), *hi = bp__calloc(a, m, sizeof *hi);
    uint32_t *tl = bp__calloc(a, n, sizeof *tl), *tr = bp__calloc(a, n, sizeof *tr);
    bp_status st = BP_OK;
    if (!lo || !hi || !tl || !tr) { st = bp__err(err, BP_ERR_NOMEM, "bp_intervals_check: out of memory"); goto done; }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!iv[i].size) continue;
        lo[k].t = iv[i].lower; lo[k].i = (uint32_t)i;
        hi[k].t = iv[i].upper; hi[k].i = (uint32_t)i;
        k++;
    }
    qsort(lo, m, sizeof *lo, chk_cmp_ev);
    qsort(hi, m, sizeof *hi, chk_cmp_ev);
    chk_treap t = { tl, tr, offsets };
    uint32_t root = CHK_NIL;
    size_t j = 0;
    for (size_t q = 0; q < m && st == BP_OK; q++) {
        /* leave first: [lower, upper) ends before anything starting at upper */
        while (j < m && hi[j].t <= lo[q].t) {
            uint32_t x = hi[j++].i, a1, b1;
            chk_split(&t, root, x, &a1, &b1);
            /* x is the smallest key of b1: unlink that leftmost node */
            uint32_t *slot = &b1;
            while (*slot != x) slot = &t.l[*slot];
            *slot = t.r[x];
            root = chk_merge(&t, a1, b1);
        }
        uint32_t x = lo[q].i;
        tl[x] = tr[x] = CHK_NIL;
        /* neighbours by (offset, index) */
        uint32_t pred = CHK_NIL, succ = CHK_NIL, cur = root;
        while (cur != CHK_NIL) {
            if (chk_less(&t, cur, x)) { pred = cur; cur = tr[cur]; }
            else { succ = cur; cur = tl[cur]; }
        }
        uint64_t xe = offsets[x] + iv[x].size;
        uint32_t bad = CHK_NIL;
        if (pred != CHK_NIL && offsets[pred] + iv[pred].size > offsets[x]) bad = pred;
        else if (succ != CHK_NIL && offsets[succ] < xe) bad = succ;
        if (bad != CHK_NIL) {
            const bp_interval *y = &iv[bad];
            st = bp__err(err, BP_ERR_VERIFY,
                         "intervals %u [%lld, %lld) bytes [%llu, %llu) and %u [%lld, %lld) bytes [%llu, %llu) overlap",
                         bad, (long long)y->lower, (long long)y->upper, (unsigned long long)offsets[bad],
                         (unsigned long long)(offsets[bad] + y->size), x, (long long)iv[x].lower,
                         (long long)iv[x].upper, (unsigned long long)offsets[x], (unsigned long long)xe);
            break;
        }
        uint32_t a1, b1;
        chk_split(&t, root, x, &a1, &b1);
        root = chk_merge(&t, chk_merge(&t, a1, x), b1);
    }
done:
    bp__free(a, lo, m * sizeof *lo);
    bp__free(a, hi, m * sizeof *hi);
    bp__free(a, tl, n * sizeof *tl);
    bp__free(a, tr, n * sizeof *tr);
    return st;
}
