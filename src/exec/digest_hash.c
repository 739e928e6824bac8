/*
 * digest_hash.c — bp_digest_hash: a fast 64-bit hash of a byte range (four
 * independent multiply-xorshift lanes over 8-byte words, the tail folded in
 * with its length, finished by splitmix64's mixer).  Used by the digest
 * kernels, safe mode and buffer history.
 */
#include "exec/exec_internal.h"

#include <string.h>

static inline uint64_t dg_load(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

uint64_t bp_digest_hash(const void *data, uint64_t bytes, uint64_t seed)
{
    const unsigned char *p = data;
    const uint64_t K = 0x9e3779b97f4a7c15ull, M = 0xff51afd7ed558ccdull;
    uint64_t h0 = seed ^ (bytes * K), h1 = h0 + K, h2 = h0 + 2 * K, h3 = h0 + 3 * K;
    uint64_t n = bytes;
    if (!p) n = 0;
    while (n >= 32) {   /* four independent lanes */
        h0 = (h0 ^ dg_load(p)) * M; h0 ^= h0 >> 29;
        h1 = (h1 ^ dg_load(p + 8)) * M; h1 ^= h1 >> 29;
        h2 = (h2 ^ dg_load(p + 16)) * M; h2 ^= h2 >> 29;
        h3 = (h3 ^ dg_load(p + 24)) * M; h3 ^= h3 >> 29;
        p += 32;
        n -= 32;
    }
    while (n >= 8) { h0 = (h0 ^ dg_load(p)) * M; h0 ^= h0 >> 29; p += 8; n -= 8; }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, p, (size_t)n);
        h1 = (h1 ^ w ^ (n << 56)) * M;
    }
    return bp__dg_mix(h0 ^ bp__dg_mix(h1 ^ bp__dg_mix(h2 ^ bp__dg_mix(h3))));
}

