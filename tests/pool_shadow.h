/* The pool tests' fill pattern (test_pool.c, test_pool_learn.c): a block's
 * head, tail and middle bytes from its tag, enough to catch overlap and stray
 * writes without touching every page of large blocks. */
#ifndef BP_POOL_SHADOW_H
#define BP_POOL_SHADOW_H
#include <stdint.h>

static unsigned char pat(unsigned tag, uint64_t i) { return (unsigned char)(tag * 31u + i * 7u + (i >> 8)); }

static void fill(unsigned char *p, uint64_t n, unsigned tag)
{
    /* head, tail and the middle: enough to catch overlap and stray writes
     * without touching every page of large blocks */
    uint64_t k = n < 128 ? n : 128;
    for (uint64_t i = 0; i < k; i++) p[i] = pat(tag, i);
    for (uint64_t i = n - k; i < n; i++) p[i] = pat(tag, i);
    p[n / 2] = pat(tag, n / 2);
}

static int intact(const unsigned char *p, uint64_t n, unsigned tag)
{
    uint64_t k = n < 128 ? n : 128;
    for (uint64_t i = 0; i < k; i++)
        if (p[i] != pat(tag, i)) return 0;
    for (uint64_t i = n - k; i < n; i++)
        if (p[i] != pat(tag, i)) return 0;
    return p[n / 2] == pat(tag, n / 2);
}

#endif
