/*
 * chain.c — chains of same-size buffers that follow each other in
 * time, merged into one interval each (for bestfit's small-input pipeline).
 *
 * When a buffer ends at t and another of the same size and alignment starts
 * at t, giving the second the first's offset is what a program that writes
 * a result over a dead input of its shape does, and optimal packings often
 * do it (MiniMalloc's instances have 36-121 such pairs each; its stored
 * optimum of E keeps 34 of E's 49 at one offset).  Merging every such pair
 * gives a smaller instance with the same live bytes at every time, whose
 * packings are packings of the original (each part at its chain's offset).
 * It is a restriction, so bestfit tries it beside the original, never
 * instead: with the same constructions it takes E from 1.066 to ~1.02 x its
 * optimum and J below its best known, but G, I, K need some pairs apart.
 *
 * Matching: ends and starts sorted by (size, alignment, time, index) (stable
 * radix passes, bp__assign_radix, over keys made in index order); each end takes the
 * first unmatched start with its key, so the chains are a function of the
 * input.  Time strictly grows along a chain (empty
 * lifetimes take no part), so there are no cycles.  O(n log n).
 */
#include "assign/assign_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ch_key { uint64_t size, align; int64_t t; uint32_t i; } ch_key;

static int ch_cmp(const void *x, const void *y)
{
    const ch_key *a = x, *b = y;
    if (a->size != b->size) return a->size < b->size ? -1 : 1;
    if (a->align != b->align) return a->align < b->align ? -1 : 1;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Field f of a key as an order-preserving unsigned number: 0 time, 1
 * alignment, 2 size. */
static inline uint64_t ch_field(const ch_key *k, int f)
{
    return f == 0 ? (uint64_t)k->t ^ (UINT64_C(1) << 63) : f == 1 ? k->align : k->size;
}

/* Sorts a[0..m) (made in index order) by (size, alignment, time, index):
 * stable radix passes by time, then alignment, then size, over a
 * permutation (key, idx and tk, ti: scratch of m; tmp: of m keys). */
static void ch_sort(ch_key *a, ch_key *tmp, uint64_t *key, uint32_t *idx, uint64_t *tk, uint32_t *ti, uint32_t m)
{
    for (uint32_t i = 0; i < m; i++) idx[i] = i;
    for (int f = 0; f < 3; f++) {
        for (uint32_t i = 0; i < m; i++) key[i] = ch_field(&a[idx[i]], f);
        bp__assign_radix(key, idx, tk, ti, m);
    }
    for (uint32_t i = 0; i < m; i++) tmp[i] = a[idx[i]];
    memcpy(a, tmp, (size_t)m * sizeof *a);
#ifndef NDEBUG
    /* debug builds (the tests): strictly ascending, as ch_cmp orders them */
    for (uint32_t i = 1; i < m; i++)
        if (ch_cmp(&a[i - 1], &a[i]) >= 0) {
            fprintf(stderr, "chains: keys out of order at %u of %u\n", i, m);
            abort();
        }
#endif
}

/* Whether interval x can be part of a chain: sized, free, with a lifetime. */
static inline bool ch_candidate(const bp_interval *x)
{
    return x->size && x->fixed_offset == BP_NO_OFFSET && x->lower < x->upper;
}

static bool ch_same(const ch_key *a, const ch_key *b)
{
    return a->size == b->size && a->align == b->align && a->t == b->t;
}

void bp__assign_chains_free(const bp_allocator *a, bp__chains *c)
{
    bp__free(a, c->iv, (c->n ? c->n : 1) * sizeof *c->iv);
    bp__free(a, c->of, (c->n_in ? c->n_in : 1) * sizeof *c->of);
    c->iv = NULL;
    c->of = NULL;
}

int bp__assign_chains(const bp_allocator *a, const bp_interval *iv, size_t n, bp__chains *out)
{
    out->n = 0;
    out->n_in = n;
    out->iv = NULL;
    out->of = NULL;
    uint32_t m = 0;   /* sized, free, non-empty intervals: the candidates */
    for (size_t i = 0; i < n; i++) m += ch_candidate(&iv[i]);
    size_t nm = m ? m : 1;
    ch_key *ends = bp__alloc(a, nm * sizeof *ends), *starts = bp__alloc(a, nm * sizeof *starts);
    ch_key *tmp = bp__alloc(a, nm * sizeof *tmp);
    uint64_t *key = bp__alloc(a, nm * sizeof *key), *tk = bp__alloc(a, nm * sizeof *tk);
    uint32_t *idx = bp__alloc(a, nm * sizeof *idx), *ti = bp__alloc(a, nm * sizeof *ti);
    uint32_t *next = bp__alloc(a, (n ? n : 1) * sizeof *next);
    uint8_t *is_tail = bp__calloc(a, n ? n : 1, 1);
    out->of = bp__alloc(a, (n ? n : 1) * sizeof *out->of);
    int rc = -1;
    if (!ends || !starts || !tmp || !key || !tk || !idx || !ti || !next || !is_tail || !out->of) goto done;
    {
        uint32_t k = 0;
        for (size_t i = 0; i < n; i++) {
            next[i] = UINT32_MAX;
            if (!ch_candidate(&iv[i])) continue;
            uint64_t al = iv[i].alignment > 1 ? iv[i].alignment : 1;
            ends[k] = (ch_key){ iv[i].size, al, iv[i].upper, (uint32_t)i };
            starts[k] = (ch_key){ iv[i].size, al, iv[i].lower, (uint32_t)i };
            k++;
        }
    }
    ch_sort(ends, tmp, key, idx, tk, ti, m);
    ch_sort(starts, tmp, key, idx, tk, ti, m);
    for (uint32_t e = 0, s = 0; e < m; e++) {
        while (s < m && ch_cmp(&starts[s], &ends[e]) < 0 && !ch_same(&starts[s], &ends[e])) s++;
        if (s < m && ch_same(&starts[s], &ends[e])) {
            next[ends[e].i] = starts[s].i;
            is_tail[starts[s].i] = 1;
            s++;
        }
    }
    /* One interval per chain head (and per sized interval that is no part
     * of a chain), in input order. */
    size_t n_out = 0;
    for (size_t i = 0; i < n; i++) n_out += iv[i].size && !is_tail[i];
    out->iv = bp__alloc(a, (n_out ? n_out : 1) * sizeof *out->iv);
    if (!out->iv) goto done;
    out->n = n_out;
    for (size_t i = 0; i < n; i++) out->of[i] = UINT32_MAX;
    uint32_t id = 0;
    for (size_t i = 0; i < n; i++) {
        if (!iv[i].size || is_tail[i]) continue;
        bp_interval x = iv[i];
        out->of[i] = id;
        for (uint32_t j = next[i]; j != UINT32_MAX; j = next[j]) {
            x.upper = iv[j].upper;
            out->of[j] = id;
        }
        out->iv[id++] = x;
    }
    rc = 0;
done:
    bp__free(a, ends, nm * sizeof *ends);
    bp__free(a, starts, nm * sizeof *starts);
    bp__free(a, tmp, nm * sizeof *tmp);
    bp__free(a, key, nm * sizeof *key);
    bp__free(a, tk, nm * sizeof *tk);
    bp__free(a, idx, nm * sizeof *idx);
    bp__free(a, ti, nm * sizeof *ti);
    bp__free(a, next, (n ? n : 1) * sizeof *next);
    bp__free(a, is_tail, n ? n : 1);
    if (rc) bp__assign_chains_free(a, out);
    return rc;
}
