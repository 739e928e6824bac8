/*
 * backend_mmap.c — the default pool backend: anonymous private mmap with
 * MAP_NORESERVE (pages are committed on first touch), munmap to release.
 * Pieces are large and few (the pool grows by whole chunks), so the cost of
 * one system call per piece is paid only while the pool warms up.
 *
 * It also has the optional address-space operations (pool_internal.h) the
 * pool's large region uses: a PROT_NONE reservation with no memory behind
 * it, made usable piece by piece with mprotect, so the region grows in place
 * and its free space stays one address range.
 */
#define _DEFAULT_SOURCE
#include "core/internal.h"
#include "pool/pool_internal.h"

#include <sys/mman.h>

static void *mmap_reserve(void *ctx, size_t bytes)
{
    (void)ctx;
    if (bytes == 0) return NULL;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void mmap_release(void *ctx, void *base, size_t bytes)
{
    (void)ctx;
    if (base) munmap(base, bytes);
}

static void *mmap_reserve_va(void *ctx, size_t bytes)
{
    (void)ctx;
    if (bytes == 0) return NULL;
    void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* The reservation was made with MAP_NORESERVE, so making part of it
 * writable commits no swap either: pages are backed on first touch. */
static int mmap_commit(void *ctx, void *addr, size_t bytes)
{
    (void)ctx;
    return mprotect(addr, bytes, PROT_READ | PROT_WRITE) == 0 ? 0 : -1;
}

static int mmap_decommit(void *ctx, void *addr, size_t bytes)
{
    (void)ctx;
    uintptr_t lo = ((uintptr_t)addr + 4095) & ~(uintptr_t)4095, hi = ((uintptr_t)addr + bytes) & ~(uintptr_t)4095;
    if (hi <= lo) return 0;
    (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
    return 1;
}

static const bp__pool_vm mmap_vm = {mmap_reserve_va, mmap_commit, mmap_decommit};

const bp__pool_vm *bp__pool_backend_vm(const bp_pool_backend *be)
{
    return be && be->reserve == mmap_reserve && be->release == mmap_release ? &mmap_vm : NULL;
}

void bp_pool_backend_mmap(bp_pool_backend *out)
{
    if (!out) return;
    out->name = "mmap";
    out->reserve = mmap_reserve;
    out->release = mmap_release;
    out->ctx = NULL;
    out->granularity = 64 * 1024;
    out->base_alignment = 4096;
    out->host_accessible = 1;
}
