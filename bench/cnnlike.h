/* cnnlike.h — a CNN-like synthetic interval generator (header only, shared
 * by bench_pack_scale and the packing-at-scale test).
 *
 * n buffers: n - 16 made by ops plus 16 that live throughout.
 *   - op t makes tensor t, which op t + 1 reads: tensor t lives over the
 *     steps [t, t + 1] (half-open [t, t + 2)), cut at the last op;
 *   - with p = 0.15 a tensor gets one extra reader, and with p = 0.02
 *     another, each at a log-uniform distance in [2, 1024]: it lives to the
 *     farthest reader;
 *   - 16 tensors live throughout [0, n - 16);
 *   - blocks of 50-500 consecutive ops (uniform) share one resolution h in
 *     {112, 56, 28, 14, 7} and one channel count c in {16, 32, 64, 128,
 *     256, 512} (uniform, independent); a tensor's size is 4 h^2 c m with
 *     m in {1, 2, 4, 6} (an expansion factor, uniform per tensor); each of
 *     the 16 long-lived tensors draws its own h, c and m.
 * No alignment, no fixed offsets.  Deterministic for (n, seed): xorshift64.
 */
#ifndef BP_BENCH_CNNLIKE_H
#define BP_BENCH_CNNLIKE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "bufplan.h"

#define CNNLIKE_LONG 16

static inline uint64_t cnnlike_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Uniform in [0, 1). */
static inline double cnnlike_unit(uint64_t *s) { return (double)(cnnlike_rand(s) >> 11) * (1.0 / 9007199254740992.0); }

/* A log-uniform integer distance in [2, 1024]. */
static inline int64_t cnnlike_dist(uint64_t *s)
{
    double d = exp(log(2.0) + cnnlike_unit(s) * (log(1024.0) - log(2.0)));
    int64_t k = (int64_t)(d + 0.5);
    return k < 2 ? 2 : k > 1024 ? 1024 : k;
}

/* Fills iv[0..n) (n > CNNLIKE_LONG); the long-lived buffers come last. */
static inline void cnnlike_gen(bp_interval *iv, size_t n, uint64_t seed)
{
    static const uint64_t hs[] = {112, 56, 28, 14, 7}, cs[] = {16, 32, 64, 128, 256, 512}, ms[] = {1, 2, 4, 6};
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    int64_t T = (int64_t)(n - CNNLIKE_LONG), left = 0;
    uint64_t h = 0, c = 0;
    for (int64_t t = 0; t < T; t++) {
        if (left == 0) {
            left = 50 + (int64_t)(cnnlike_rand(&s) % 451);
            h = hs[cnnlike_rand(&s) % 5];
            c = cs[cnnlike_rand(&s) % 6];
        }
        left--;
        int64_t last = t + 1;
        if (cnnlike_unit(&s) < 0.15) { int64_t d = t + cnnlike_dist(&s); if (d > last) last = d; }
        if (cnnlike_unit(&s) < 0.02) { int64_t d = t + cnnlike_dist(&s); if (d > last) last = d; }
        if (last > T - 1) last = T - 1;
        if (last < t) last = t;
        bp_interval *x = &iv[t];
        x->lower = t;
        x->upper = last + 1;
        x->size = 4 * h * h * c * ms[cnnlike_rand(&s) % 4];
        x->alignment = 0;
        x->fixed_offset = BP_NO_OFFSET;
    }
    for (size_t i = 0; i < CNNLIKE_LONG; i++) {
        bp_interval *x = &iv[(size_t)T + i];
        x->lower = 0;
        x->upper = T;
        uint64_t hl = hs[cnnlike_rand(&s) % 5];
        x->size = 4 * hl * hl * cs[cnnlike_rand(&s) % 6] * ms[cnnlike_rand(&s) % 4];
        x->alignment = 0;
        x->fixed_offset = BP_NO_OFFSET;
    }
}

#endif
