/* bestfit at scale (the window phase runs above 20,000 sized intervals
 * without pre-placed buffers).  Pass / fail only, no timing.
 *   - CNN-like instances (bench/cnnlike.h, the generator bench_pack_scale
 *     measures): at 50,000 buffers within 0.1% of max-live (without the
 *     window phase bestfit ends 0.22% above it), at 100,000 within 1% (the
 *     window around the peak there needs the thorough sub-solver: bestfit
 *     alone ends 1.66% above max-live);
 *   - property: CNN-like instances of other seeds and sizes, and random
 *     interval sets (uneven lifetimes and sizes), each layout checked by
 *     the library's checker and by an independent sweep here (every pair
 *     live at once, compared by address), its arena >= max-live and equal
 *     to max(offset + size);
 *   - deterministic: two calls on the first two give the same offsets. */
#include "check.h"
#include "bufplan.h"
#include "../../bench/cnnlike.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

static const bp_interval *g_iv;

static int by_lower(const void *a, const void *b)
{
    const bp_interval *x = &g_iv[*(const uint32_t *)a], *y = &g_iv[*(const uint32_t *)b];
    return x->lower < y->lower ? -1 : x->lower > y->lower;
}

/* Independent of the library: sweep by lower, keeping the intervals still
 * live; each new one is compared by address with every live one.  Returns
 * the arena (max offset + size), or UINT64_MAX when two overlap. */
static uint64_t sweep_check(const bp_interval *iv, size_t n, const uint64_t *off)
{
    uint32_t *ord = malloc(n * sizeof *ord), *live = malloc(n * sizeof *live);
    REQUIRE(ord && live);
    size_t k = 0, nl = 0;
    for (size_t i = 0; i < n; i++)
        if (iv[i].size) ord[k++] = (uint32_t)i;
    g_iv = iv;
    qsort(ord, k, sizeof *ord, by_lower);
    uint64_t top = 0;
    for (size_t j = 0; j < k && top != UINT64_MAX; j++) {
        const bp_interval *x = &iv[ord[j]];
        size_t w = 0;
        for (size_t q = 0; q < nl; q++)
            if (iv[live[q]].upper > x->lower) live[w++] = live[q];
        nl = w;
        uint64_t a = off[ord[j]], e = a + x->size;
        for (size_t q = 0; q < nl; q++) {
            uint64_t b = off[live[q]], f = b + iv[live[q]].size;
            if (a < f && b < e) { top = UINT64_MAX; break; }
        }
        if (top != UINT64_MAX && e > top) top = e;
        live[nl++] = ord[j];
    }
    free(ord);
    free(live);
    return top;
}

/* Random intervals: lifetimes mostly short, some long, sizes over three
 * orders of magnitude (xorshift64 from seed). */
static void random_gen(bp_interval *iv, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = cnnlike_rand(&s);
        int64_t lo = (int64_t)(i / 2), len = 1 + (int64_t)(r % 8);
        if (r % 100 < 3) len += (int64_t)(cnnlike_rand(&s) % 3000);
        iv[i].lower = lo;
        iv[i].upper = lo + len;
        iv[i].size = (1 + cnnlike_rand(&s) % 1000) * ((cnnlike_rand(&s) % 4 == 0) ? 1024 : 64);
        iv[i].alignment = 0;
        iv[i].fixed_offset = BP_NO_OFFSET;
    }
}

/* Packs iv with bestfit (twice when twice: the same offsets) and checks
 * it; returns the arena / max-live ratio (0 on failure). */
static double pack_checked(const char *what, const bp_interval *iv, size_t n, bool twice)
{
    uint64_t *off = malloc(n * sizeof *off), *off2 = malloc(n * sizeof *off2);
    REQUIRE(off && off2);
    bp_assign_result r, r2;
    bp_error e;
    double ratio = 0;
    CHECK_OK(bp_assign_intervals(iv, n, BP_ASSIGN_BESTFIT, NULL, off, &r, &e), e);
    CHECK_OK(bp_intervals_check(iv, n, off, r.arena_bytes, &e), e);
    uint64_t top = sweep_check(iv, n, off), lb = bp_intervals_max_live(iv, n);
    CHECK_MSG(top != UINT64_MAX, "%s: two buffers live at once share bytes", what);
    CHECK_MSG(top == r.arena_bytes, "%s: arena %llu, layout ends at %llu", what, (ull)r.arena_bytes, (ull)top);
    CHECK_MSG(r.arena_bytes >= lb, "%s: arena %llu below max-live %llu", what, (ull)r.arena_bytes, (ull)lb);
    if (twice) {
        CHECK_OK(bp_assign_intervals(iv, n, BP_ASSIGN_BESTFIT, NULL, off2, &r2, &e), e);
        CHECK_MSG(r2.arena_bytes == r.arena_bytes && memcmp(off, off2, n * sizeof *off) == 0,
                  "%s: two calls differ", what);
    }
    if (lb) ratio = (double)r.arena_bytes / (double)lb;
    free(off);
    free(off2);
    return ratio;
}

int main(void)
{
    size_t nmax = 100000;
    bp_interval *iv = malloc(nmax * sizeof *iv);
    REQUIRE(iv);
    char what[64];

    cnnlike_gen(iv, 50000, 1);
    double q = pack_checked("cnnlike 50000", iv, 50000, true);
    CHECK_MSG(q <= 1.001, "cnnlike 50000: bestfit is %.4f x max-live", q);

    cnnlike_gen(iv, 100000, 1);
    q = pack_checked("cnnlike 100000", iv, 100000, true);
    CHECK_MSG(q <= 1.01, "cnnlike 100000: bestfit is %.4f x max-live", q);

    static const size_t sizes[] = {21000, 26000};
    for (int s = 0; s < 2; s++) {
        snprintf(what, sizeof what, "cnnlike %zu seed %d", sizes[s], s + 2);
        cnnlike_gen(iv, sizes[s], (uint64_t)s + 2);
        pack_checked(what, iv, sizes[s], false);
    }
    random_gen(iv, 21000, 2);
    pack_checked("random 21000 seed 2", iv, 21000, false);
    free(iv);
    return check_status();
}
