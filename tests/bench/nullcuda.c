/* nullcuda.c: a "driver" that does nothing, for measuring what the shim itself costs per call
 * (tests/bench/run_wrapcost.sh with WRAPCOST_DRIVER=null). Every entry point returns CUDA_SUCCESS at
 * once without touching its arguments, except the few the shim and the benchmark need an answer
 * from: cuGetProcAddress (any name: itself for "cuGetProcAddress", the no-op otherwise), host
 * allocation (plain page-aligned memory), pointer attributes (all zero: pageable), capture status
 * (none), the current context, the device count (one, as on a machine of one GPU) and the driver
 * version. It moves no data and knows no handles: benchmarks only, never a test of behaviour (that
 * is the fake driver's job, tests/fakecuda).
 * cuda.h is not included (its prototypes would clash with the one no-op behind many names); the
 * few types and values used are the driver ABI's.
 * Build: gcc -O2 -shared -fPIC nullcuda.c -o libcuda.so.1 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef void *CUstream, *CUcontext;
typedef unsigned long long CUdeviceptr;
typedef uint64_t cuuint64_t;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define NULL_DRIVER_VERSION 13000

#define EXPORT __attribute__((visibility("default")))

/* NULLCUDA_TOUCH_BYTES: each call writes one byte per 64-byte line of a private buffer of this
 * size, as a real driver's own work pushes the caller's data out of the L1/L2 caches (a model of
 * that pressure, to see what the shim's scattered state costs when it is not cached). */
static unsigned char *touch_buf;
static size_t touch_bytes;

__attribute__((constructor)) static void touch_init(void)
{
    const char *v = getenv("NULLCUDA_TOUCH_BYTES");
    touch_bytes = v ? strtoul(v, NULL, 0) : 0;
    if (touch_bytes && !(touch_buf = calloc(1, touch_bytes)))
        touch_bytes = 0;
}

static CUresult nothing(void)
{
    for (size_t i = 0; i < touch_bytes; i += 64)
        touch_buf[i]++;
    return CUDA_SUCCESS;
}

/* The calls a benchmark loop makes, exported so that the dlsym route finds them too. */
#define NOTHING_EXPORTS(X)                                                                          \
    X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuMemAlloc_v2)          \
    X(cuStreamCreate) X(cuEventCreate) X(cuMemcpyDtoHAsync_v2) X(cuMemcpyHtoDAsync_v2)               \
    X(cuMemcpyDtoH_v2) X(cuMemcpyHtoD_v2) X(cuStreamSynchronize) X(cuStreamQuery) X(cuCtxSynchronize) \
    X(cuEventRecord) X(cuEventRecordWithFlags) X(cuEventQuery) X(cuEventSynchronize)               \
    X(cuMemHostRegister_v2) X(cuMemHostUnregister)
#define X(name) EXPORT CUresult name(void) __attribute__((alias("nothing")));
NOTHING_EXPORTS(X)
#undef X

EXPORT CUresult cuDriverGetVersion(int *v)
{
    *v = NULL_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags)
{
    (void)flags;
    return posix_memalign(pp, 4096, bytes ? bytes : 1) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytes) { return cuMemHostAlloc(pp, bytes, 0); }

EXPORT CUresult cuPointerGetAttributes(unsigned int n, int *attrs, void **data, CUdeviceptr p)
{
    (void)attrs;
    (void)p;
    for (unsigned int i = 0; i < n; i++)
        memset(data[i], 0, sizeof(unsigned int));
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamIsCapturing(CUstream s, int *status)
{
    (void)s;
    *status = 0; /* CU_STREAM_CAPTURE_STATUS_NONE */
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx)
{
    *ctx = (CUcontext)(uintptr_t)0x1000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    *count = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetProcAddress_v2(const char *, void **, int, cuuint64_t, int *);
EXPORT CUresult cuGetProcAddress(const char *, void **, int, cuuint64_t);

static void *lookup(const char *name, int version)
{
    static const struct {
        const char *name;
        void *fn;
    } own[] = {
        {"cuDriverGetVersion", (void *)cuDriverGetVersion}, {"cuMemHostAlloc", (void *)cuMemHostAlloc},
        {"cuMemAllocHost", (void *)cuMemAllocHost_v2},      {"cuPointerGetAttributes", (void *)cuPointerGetAttributes},
        {"cuStreamIsCapturing", (void *)cuStreamIsCapturing}, {"cuCtxGetCurrent", (void *)cuCtxGetCurrent},
        {"cuDeviceGetCount", (void *)cuDeviceGetCount},
    };
    if (strcmp(name, "cuGetProcAddress") == 0)
        return version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (strcmp(name, own[i].name) == 0)
            return own[i].fn;
    return (void *)nothing;
}

CUresult cuGetProcAddress_v2(const char *name, void **pfn, int version, cuuint64_t flags,
                             int *status)
{
    (void)flags;
    *pfn = lookup(name, version);
    if (status)
        *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *name, void **pfn, int version, cuuint64_t flags)
{
    return cuGetProcAddress_v2(name, pfn, version, flags, NULL);
}
