/*
 * util.c — allocation through the caller's allocator, error messages, the
 * interned name index and whole-file reads (atomic writes: outfile.c).
 *
 * The name index is a string pool plus open addressing (linear probing) over
 * a power-of-two slot array kept at most half full, so lookups are O(1) and a
 * name costs its bytes plus ~12 bytes of index.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE 1   /* madvise(MADV_HUGEPAGE) */
#include "core/internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Large blocks of the default allocator ask for transparent huge pages
 * (where the kernel has them, THP set to "madvise"): planning 10^6+ tensors
 * touches hundreds of MB of fresh memory once, and 4 KiB first-touch faults
 * cost more than the work done on them (~5 ms per MB in a VM, ~20x less
 * with 2 MiB pages).  Only the 2 MiB-aligned interior is advised; a
 * caller-supplied allocator is left alone.  Advice only: failure is fine. */
void bp__hint_huge(void *p, size_t n)
{
#if defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (!p || n < 2 * huge) return;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + n) & ~(huge - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p; (void)n;
#endif
}

/* bp__fault_fail() is always false outside fault-injection test builds. */
static void *libc_alloc(void *ctx, size_t n)
{
    (void)ctx;
    void *p = bp__fault_fail() ? NULL : malloc(n ? n : 1);
    bp__hint_huge(p, n);
    return p;
}
static void *libc_realloc(void *ctx, void *p, size_t o, size_t n)
{
    (void)ctx; (void)o;
    void *q = bp__fault_fail() ? NULL : realloc(p, n ? n : 1);
    bp__hint_huge(q, n);
    return q;
}
static void libc_free(void *ctx, void *p, size_t n) { (void)ctx; (void)n; free(p); }

const bp_allocator bp__libc_allocator = { libc_alloc, libc_realloc, libc_free, NULL };

const bp_allocator *bp_allocator_default(void) { return &bp__libc_allocator; }

void *bp__alloc(const bp_allocator *a, size_t size) { return a->alloc(a->ctx, size); }

void *bp__calloc(const bp_allocator *a, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) return NULL;
    /* libc's calloc hands out fresh pages untouched, where alloc + memset
     * writes them all: a pool's page map (4 bytes per 256-byte granule, 1.6%
     * of its memory) then costs resident memory only where blocks start
     * (the transformer trace: 3.4 MiB of 205.8).  Large arrays keep the
     * huge-page hint: without it color on 10^7 intervals took 6.2 s instead
     * of 4.8 (4 KiB faults during its accesses); with it 4.7 s, and
     * bench_assign's peak RSS there is 956 MiB instead of 1136. */
    if (a->alloc == libc_alloc) {
        void *q = bp__fault_fail() ? NULL : calloc(total ? total : 1, 1);
        bp__hint_huge(q, total);
        return q;
    }
    void *p = a->alloc(a->ctx, total);
    if (p) memset(p, 0, total);
    return p;
}

void *bp__realloc(const bp_allocator *a, void *p, size_t old_size, size_t new_size)
{
    if (!p) return a->alloc(a->ctx, new_size);
    return a->realloc(a->ctx, p, old_size, new_size);
}

void bp__free(const bp_allocator *a, void *p, size_t size)
{
    if (p) a->free(a->ctx, p, size);
}

bool bp__grow(const bp_allocator *a, void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > SIZE_MAX / 2) return false;
        nc *= 2;
    }
    size_t bytes;
    if (__builtin_mul_overflow(nc, elem, &bytes)) return false;
    void *p = bp__realloc(a, *arr, *cap * elem, bytes);
    if (!p) return false;
    *arr = p;
    *cap = nc;
    return true;
}

bp_status bp__err(bp_error *err, bp_status s, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = s;
    }
    return s;
}

void bp__err_clear(bp_error *err)
{
    if (err) { err->status = BP_OK; err->msg[0] = 0; }
}

double bp__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *bp_status_str(bp_status s)
{
    switch (s) {
    case BP_OK: return "ok";
    case BP_ERR_NOMEM: return "out of memory";
    case BP_ERR_INVALID: return "invalid input";
    case BP_ERR_IO: return "i/o error";
    case BP_ERR_USAGE: return "bad argument";
    case BP_ERR_BUDGET: return "does not fit the budget";
    case BP_ERR_VERIFY: return "verification failed";
    case BP_ERR_UNSUPPORTED: return "unsupported";
    case BP_ERR_LIMIT: return "limit exceeded";
    case BP_ERR_EXHAUSTED: return "pool exhausted";
    case BP_ERR_KERNEL: return "kernel error";
    case BP_ERR_TIMEOUT: return "time limit reached";
    }
    return "unknown status";
}

const char *bp_version(void) { return BP_VERSION_STRING; }

/* ------------------------------------------------------------ name index */

uint64_t bp__hash_bytes(const void *p, size_t n, uint64_t seed)
{
    /* FNV-1a, then a final avalanche so low bits are usable as slot index. */
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull ^ seed;
    for (size_t i = 0; i < n; i++) { h ^= s[i]; h *= 1099511628211ull; }
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33;
    return h;
}

void bp__names_free(const bp_allocator *a, bp__names *nm)
{
    bp__free(a, nm->pool, nm->pool_cap);
    bp__free(a, nm->off, nm->off_cap * sizeof *nm->off);
    bp__free(a, nm->slots, nm->n_slots * sizeof *nm->slots);
    memset(nm, 0, sizeof *nm);
}

/* A slot holds the id + 1 in its low 32 bits and the upper 32 bits of the
 * name's hash above, so a probe compares strings only on a tag match. */
static bool names_rehash(const bp_allocator *a, bp__names *nm, size_t n_slots)
{
    uint64_t *s = bp__calloc(a, n_slots, sizeof *s);
    if (!s) return false;
    for (size_t i = 0; i < nm->n_slots; i++) {
        uint64_t v = nm->slots[i];
        if (!v) continue;
        int32_t id = (int32_t)(uint32_t)v - 1;
        const char *str = nm->pool + nm->off[id];
        uint64_t h = bp__hash_bytes(str, strlen(str), 0);
        size_t k = (size_t)h & (n_slots - 1);
        while (s[k]) k = (k + 1) & (n_slots - 1);
        s[k] = v;
    }
    bp__free(a, nm->slots, nm->n_slots * sizeof *nm->slots);
    nm->slots = s;
    nm->n_slots = n_slots;
    return true;
}

static int32_t names_probe(const bp__names *nm, const char *s, size_t len, uint64_t h, size_t *slot)
{
    size_t mask = nm->n_slots - 1, k = (size_t)h & mask;
    uint64_t tag = h >> 32;
    for (;;) {
        uint64_t v = nm->slots[k];
        if (!v) { *slot = k; return -1; }
        if ((v >> 32) == tag) {
            int32_t id = (int32_t)(uint32_t)v - 1;
            const char *c = nm->pool + nm->off[id];
            if (strncmp(c, s, len) == 0 && c[len] == 0) { *slot = k; return id; }
        }
        k = (k + 1) & mask;
    }
}

int32_t bp__names_find(const bp__names *nm, const char *s, size_t len)
{
    if (!nm->n_slots) return -1;
    size_t slot;
    return names_probe(nm, s, len, bp__hash_bytes(s, len, 0), &slot);
}

int32_t bp__names_add(const bp_allocator *a, bp__names *nm, const char *s, size_t len, int32_t *existing)
{
    if (nm->n >= INT32_MAX - 1 || nm->pool_len + len + 1 > UINT32_MAX) return -1;
    if ((nm->n + 1) * 2 > nm->n_slots && !names_rehash(a, nm, nm->n_slots ? nm->n_slots * 2 : 64)) return -1;
    uint64_t h = bp__hash_bytes(s, len, 0);
    size_t slot;
    int32_t f = names_probe(nm, s, len, h, &slot);
    if (f >= 0) { if (existing) *existing = f; return -2; }
    if (!bp__grow(a, (void **)&nm->pool, &nm->pool_cap, nm->pool_len + len + 1, 1)) return -1;
    if (!bp__grow(a, (void **)&nm->off, &nm->off_cap, nm->n + 1, sizeof *nm->off)) return -1;
    memcpy(nm->pool + nm->pool_len, s, len);
    nm->pool[nm->pool_len + len] = 0;
    int32_t id = (int32_t)nm->n;
    nm->off[id] = (uint32_t)nm->pool_len;
    nm->pool_len += len + 1;
    nm->n++;
    nm->slots[slot] = ((h >> 32) << 32) | (uint64_t)(uint32_t)(id + 1);
    return id;
}

/* ----------------------------------------------------------------- files */

bp_status bp__read_file(const char *path, const bp_allocator *a, char **buf, size_t *len, bp_error *err)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return bp__err(err, BP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *b = bp__alloc(a, cap);
    if (!b) { if (f != stdin) fclose(f); return bp__err(err, BP_ERR_NOMEM, "%s: out of memory reading the file", path); }
    for (;;) {
        if (n + 1 >= cap) {
            size_t oc = cap;
            if (!bp__grow(a, (void **)&b, &cap, cap + 1, 1)) {
                bp__free(a, b, oc);
                if (f != stdin) fclose(f);
                return bp__err(err, BP_ERR_NOMEM, "%s: out of memory reading the file", path);
            }
        }
        size_t r = fread(b + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) break;
    }
    int bad = ferror(f);
    if (f != stdin) fclose(f);
    if (bad) { bp__free(a, b, cap); return bp__err(err, BP_ERR_IO, "%s: read error", path); }
    b[n] = 0;
    /* shrink is optional; callers free with the returned length + 1 semantics
     * through bp__free(a, buf, len + 1) — realloc down so the sizes agree. */
    char *s = bp__realloc(a, b, cap, n + 1);
    if (s) b = s; else { bp__free(a, b, cap); return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", path); }
    *buf = b;
    *len = n;
    return BP_OK;
}

void bp__json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}

bool bp__valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
        if (n < 0 || (n == 1 && c < 0xc2) || (c == 0xf4 && p[1] > 0x8f) || c > 0xf4) return false;
        if (n == 2 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f))) return false;
        if (n == 3 && c == 0xf0 && p[1] < 0x90) return false;
        p++;
        for (int i = 0; i < n; i++, p++)
            if ((*p & 0xc0) != 0x80) return false;
    }
    return true;
}

const char *bp__fmt_double(char buf[32], double v)
{
    if (v == (double)(long long)v && v > -9007199254740992.0 && v < 9007199254740992.0) {
        snprintf(buf, 32, "%lld", (long long)v);
        return buf;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return buf;
    }
    return buf;
}
