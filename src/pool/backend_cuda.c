/*
 * backend_cuda.c — the CUDA pool backend: cudaMalloc / cudaFree on one
 * device.  Built only when CMake found the CUDA runtime (BP_HAVE_CUDA); the
 * pool never touches the memory (its metadata lives on the host), so device
 * pointers are handed out as they are.  cudaMalloc guarantees 256-byte
 * alignment; we reserve in 2 MiB multiples (the driver's large-page size).
 * Without CUDA, bp_pool_backend_cuda() reports BP_ERR_UNSUPPORTED.
 */
#include "core/internal.h"

#ifdef BP_HAVE_CUDA
#include <cuda_runtime_api.h>

/* The device number travels in ctx (device + 1, so ctx is never NULL) and
 * needs no allocation. */
static int cuda_dev(void *ctx) { return (int)((intptr_t)ctx - 1); }

static void *cuda_reserve(void *ctx, size_t bytes)
{
    void *p = NULL;
    if (bytes == 0 || cudaSetDevice(cuda_dev(ctx)) != cudaSuccess) return NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky-free error state */
        return NULL;
    }
    return p;
}

static void cuda_release(void *ctx, void *base, size_t bytes)
{
    (void)bytes;
    if (!base || cudaSetDevice(cuda_dev(ctx)) != cudaSuccess) return;
    (void)cudaFree(base);
}

static const char *const cuda_names[] = {"cuda:0", "cuda:1", "cuda:2", "cuda:3",
                                         "cuda:4", "cuda:5", "cuda:6", "cuda:7"};

bp_status bp_pool_backend_cuda(int device, bp_pool_backend *out, bp_error *err)
{
    if (!out) return bp__err(err, BP_ERR_USAGE, "pool: cuda backend: NULL output");
    if (device < 0 || device >= (int)(sizeof cuda_names / sizeof cuda_names[0]))
        return bp__err(err, BP_ERR_USAGE, "pool: cuda backend: device %d out of range 0..7", device);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return bp__err(err, BP_ERR_UNSUPPORTED, "pool: cuda backend: no usable device: %s", cudaGetErrorString(e));
    }
    if (device >= n)
        return bp__err(err, BP_ERR_UNSUPPORTED, "pool: cuda backend: device %d requested, %d present", device, n);
    out->name = cuda_names[device];
    out->reserve = cuda_reserve;
    out->release = cuda_release;
    out->ctx = (void *)(intptr_t)(device + 1);
    out->granularity = 2u << 20;
    out->base_alignment = 256;
    out->host_accessible = 0;
    return BP_OK;
}

#else /* !BP_HAVE_CUDA */

bp_status bp_pool_backend_cuda(int device, bp_pool_backend *out, bp_error *err)
{
    (void)device;
    (void)out;
    return bp__err(err, BP_ERR_UNSUPPORTED, "pool: cuda backend: bufplan was built without CUDA");
}

#endif
