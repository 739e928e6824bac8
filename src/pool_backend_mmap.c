/*
 * pool_backend_mmap.c — the default pool backend: anonymous private mmap with
 * MAP_NORESERVE (pages are committed on first touch), munmap to release.
 * Pieces are large and few (the pool grows by whole chunks), so the cost of
 * one system call per piece is paid only while the pool warms up.
 */
#define _DEFAULT_SOURCE
#include "internal.h"

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
