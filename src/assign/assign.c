/*
 * assign.c — offset assignment over half-open intervals: the dispatcher and
 * the color assigner (the max-live bound, naive and the helpers the other
 * strategies share are sweep.c).
 *
 * bp_assign_intervals() validates the input once (lifetimes, alignment, fixed
 * offsets), runs one strategy, then recomputes the arena from the offsets so
 * every strategy is judged the same way.  Zero-size intervals take no memory:
 * they get offset 0 (or their fixed offset) and never conflict.  Pre-placed
 * intervals (fixed_offset) keep their offsets in every strategy; naive and
 * color put everything else above the highest fixed byte.
 *
 * The lower bound is max-live (sweep.c), raised to the highest fixed byte.
 * Search may report a stronger bound.
 *
 * Working memory comes from the caller's allocator (bp_assign_options.alloc,
 * libc when NULL), here and in every strategy, so that a failing allocation
 * anywhere ends the call with BP_ERR_NOMEM and nothing held.
 *
 * color, the original assigner: intervals by end ascending each take the
 * smallest color whose tenants all ended by its start.  Tenants of a color
 * are added in end order, so a color is free for [lower, upper) iff its
 * latest end <= lower; a segment tree over colors keyed by that latest end
 * finds the leftmost free color in O(log C).  A color is one buffer as large
 * as its largest tenant, aligned to its strictest tenant; buffers are laid
 * out back to back.

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
    uint64_t top = bp__assign_fixed_top(iv, n);
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
    if (!bp__assign_max_live(a, iv, n, &lb))
        return bp__err(err, BP_ERR_NOMEM, "bp_assign_intervals: out of memory for %zu intervals", n);
    uint64_t ftop = bp__assign_fixed_top(iv, n);
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
