/*
 * heapcount.c — a heap counter for LD_PRELOAD, used by the ONNX Runtime peer
 * (bench/ort).  It measures how many heap bytes a process holds live at most
 * between two points that the measured program marks.
 *
 * Algorithm: malloc, calloc, realloc, free, posix_memalign, aligned_alloc,
 * memalign, valloc and pvalloc are wrapped; each forwards to glibc's
 * __libc_* entry points (no dlsym, so no allocation while resolving) and adds
 * or subtracts malloc_usable_size of the block from one atomic live count.
 * The peak is raised with a compare-and-swap loop after every increase, so it
 * is exact under threads (ORT's thread pool allocates too).  Bytes are what
 * the allocator really hands out (its rounding included).
 *
 * Control without signals or an FFI: the program calls access(2) (Node:
 * fs.accessSync) on a path under "/heapcount/", which this library
 * intercepts (access and faccessat) and answers itself:
 *   /heapcount/reset   sets the peak to the current live count and records
 *                      that count as the baseline;
 *   /heapcount/report  writes "live peak baseline\n" (decimal bytes) to the
 *                      file named by the environment variable HEAPCOUNT_OUT
 *                      (truncated first); the call fails with EIO when the
 *                      variable is unset or the file cannot be written.
 * Every other path goes to the real access/faccessat.  The report is written
 * with open/write/close on a stack buffer, so it does not allocate.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

/* The counters are process-wide by nature: the allocator itself is global. */
static _Atomic long long hc_live;
static _Atomic long long hc_peak;
static _Atomic long long hc_base;

/* hc_add: adds the usable size of p (may be NULL) to the live count and
 * raises the peak to it. */
static void hc_add(void *p) {
    if (!p) return;
    long long now = atomic_fetch_add(&hc_live, (long long)malloc_usable_size(p)) + (long long)malloc_usable_size(p);
    long long pk = atomic_load(&hc_peak);
    while (now > pk && !atomic_compare_exchange_weak(&hc_peak, &pk, now)) {
    }
}

/* hc_sub: subtracts the usable size of p (may be NULL) from the live count;
 * called before p is released. */
static void hc_sub(void *p) {
    if (p) atomic_fetch_sub(&hc_live, (long long)malloc_usable_size(p));
}

/* The allocation entry points: each does what glibc's does (same contract,
 * same errors) and counts the block it returns or releases. */
void *malloc(size_t n) {
    void *p = __libc_malloc(n);
    hc_add(p);
    return p;
}

void *calloc(size_t n, size_t m) {
    void *p = __libc_calloc(n, m);
    hc_add(p);
    return p;
}

void free(void *p) {
    hc_sub(p);
    __libc_free(p);
}

/* realloc: the old block's bytes leave the count only when the call
 * succeeds (on failure the old block stays valid). */
void *realloc(void *p, size_t n) {
    size_t old = p ? malloc_usable_size(p) : 0;
    void *q = __libc_realloc(p, n);
    if (q || n == 0) atomic_fetch_sub(&hc_live, (long long)old);
    hc_add(q);
    return q;
}

void *memalign(size_t a, size_t n) {
    void *p = __libc_memalign(a, n);
    hc_add(p);
    return p;
}

void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }

int posix_memalign(void **out, size_t a, size_t n) {
    if (a < sizeof(void *) || (a & (a - 1))) return EINVAL;
    void *p = __libc_memalign(a, n);
    if (!p && n) return ENOMEM;
    hc_add(p);
    *out = p;
    return 0;
}

void *valloc(size_t n) { return memalign((size_t)sysconf(_SC_PAGESIZE), n); }

void *pvalloc(size_t n) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return memalign(pg, (n + pg - 1) / pg * pg);
}

/* hc_utoa: writes v in decimal at s (room for 21 chars); returns the end. */
static char *hc_utoa(char *s, long long v) {
    char tmp[24];
    int k = 0;
    if (v < 0) {
        *s++ = '-';
        v = -v;
    }
    do tmp[k++] = (char)('0' + v % 10);
    while ((v /= 10) && k < 23);
    while (k) *s++ = tmp[--k];
    return s;
}

/* hc_control: handles a /heapcount/ path; returns 0, or -1 with errno set. */
static int hc_control(const char *path) {
    const char *cmd = path + strlen("/heapcount/");
    if (!strcmp(cmd, "reset")) {
        long long now = atomic_load(&hc_live);
        atomic_store(&hc_base, now);
        atomic_store(&hc_peak, now);
        return 0;
    }
    if (!strcmp(cmd, "report")) {
        const char *out = getenv("HEAPCOUNT_OUT");
        if (!out) return errno = EIO, -1;
        char buf[96], *e = buf;
        e = hc_utoa(e, atomic_load(&hc_live));
        *e++ = ' ';
        e = hc_utoa(e, atomic_load(&hc_peak));
        *e++ = ' ';
        e = hc_utoa(e, atomic_load(&hc_base));
        *e++ = '\n';
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) return errno = EIO, -1;
        ssize_t w = write(fd, buf, (size_t)(e - buf));
        close(fd);
        return w == e - buf ? 0 : (errno = EIO, -1);
    }
    return errno = ENOENT, -1;
}

static int hc_is_control(const char *path) { return path && !strncmp(path, "/heapcount/", strlen("/heapcount/")); }

/* access / faccessat: a /heapcount/ path is a control (hc_control); any
 * other goes to the kernel unchanged. */
int access(const char *path, int mode) {
    if (hc_is_control(path)) return hc_control(path);
    return (int)syscall(SYS_faccessat, AT_FDCWD, path, mode);
}

int faccessat(int dirfd, const char *path, int mode, int flags) {
    if (hc_is_control(path)) return hc_control(path);
#ifdef SYS_faccessat2
    if (flags) return (int)syscall(SYS_faccessat2, dirfd, path, mode, flags);
#endif
    return (int)syscall(SYS_faccessat, dirfd, path, mode);
}
