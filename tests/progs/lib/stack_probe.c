/* stack_probe.c: another interposer of the kind a profiler preloads: it defines cuMemcpyHtoD_v2
 * itself, counts calls, and forwards to the next definition found with dlsym(RTLD_NEXT). Preloaded
 * before or after the shim, every copy must still reach the driver exactly once (no recursion). */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

static unsigned long calls;

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
    static CUresult (*next)(CUdeviceptr, const void *, size_t);
    if (!next)
        next = (CUresult(*)(CUdeviceptr, const void *, size_t))dlsym(RTLD_NEXT, "cuMemcpyHtoD_v2");
    calls++;
    return next ? next(dst, src, bytes) : CUDA_ERROR_NOT_FOUND;
}

__attribute__((destructor)) static void report(void) { fprintf(stderr, "stack_probe: %lu calls\n", calls); }
