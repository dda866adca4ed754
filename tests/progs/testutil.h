/* testutil.h: shared by the C test programs. A table of driver functions the tests call, filled
 * through one of the routes a real program uses to reach the driver:
 *   linked   - the exported symbols (the program is linked with -lcuda)
 *   dlsym    - dlopen("libcuda.so.1") + dlsym(handle, "<exported name>") for each (as JAX does)
 *   getproc  - dlsym(handle, "cuGetProcAddress_v2"), then the self-lookup of "cuGetProcAddress"
 *              (v12000) and every other function through the answer (as the CUDA runtime does)
 *   getproc_ptds - the same with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 *   getproc_v1   - the self-lookup at v11030, which answers the v1 cuGetProcAddress ABI
 * Plus CHECK(), deterministic fill patterns and a checksum. Test code, header-only. */
#ifndef PINSHIM_TESTUTIL_H
#define PINSHIM_TESTUTIL_H

#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                    \
    do {                                                                                               \
        CUresult r_ = (call);                                                                          \
        if (r_ != CUDA_SUCCESS) {                                                                      \
            fprintf(stderr, "%s:%d: %s failed with %d\n", __FILE__, __LINE__, #call, (int)r_);         \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

/* X(field, exported name, name for cuGetProcAddress, version, return-and-params) */
#define TEST_DRIVER_FUNCS(X)                                                                           \
    X(init, "cuInit", "cuInit", 2000, (unsigned int))                                                  \
    X(device_get, "cuDeviceGet", "cuDeviceGet", 2000, (CUdevice *, int))                               \
    X(device_count, "cuDeviceGetCount", "cuDeviceGetCount", 2000, (int *))                             \
    X(primary_retain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", 7000, (CUcontext *, CUdevice)) \
    X(ctx_set, "cuCtxSetCurrent", "cuCtxSetCurrent", 4000, (CUcontext))                                \
    X(mem_alloc, "cuMemAlloc_v2", "cuMemAlloc", 3020, (CUdeviceptr *, size_t))                         \
    X(mem_free, "cuMemFree_v2", "cuMemFree", 3020, (CUdeviceptr))                                      \
    X(host_alloc, "cuMemHostAlloc", "cuMemHostAlloc", 2020, (void **, size_t, unsigned int))           \
    X(alloc_host, "cuMemAllocHost_v2", "cuMemAllocHost", 3020, (void **, size_t))                      \
    X(free_host, "cuMemFreeHost", "cuMemFreeHost", 2000, (void *))                                     \
    X(host_register, "cuMemHostRegister_v2", "cuMemHostRegister", 6050, (void *, size_t, unsigned int)) \
    X(host_unregister, "cuMemHostUnregister", "cuMemHostUnregister", 4000, (void *))                   \
    X(alloc_managed, "cuMemAllocManaged", "cuMemAllocManaged", 6000, (CUdeviceptr *, size_t, unsigned int)) \
    X(stream_create, "cuStreamCreate", "cuStreamCreate", 2000, (CUstream *, unsigned int))             \
    X(stream_destroy, "cuStreamDestroy_v2", "cuStreamDestroy", 4000, (CUstream))                       \
    X(stream_sync, "cuStreamSynchronize", "cuStreamSynchronize", 2000, (CUstream))                     \
    X(stream_query, "cuStreamQuery", "cuStreamQuery", 2000, (CUstream))                                \
    X(ctx_sync, "cuCtxSynchronize_v2", "cuCtxSynchronize", 13000, (CUcontext))                        \
    X(event_create, "cuEventCreate", "cuEventCreate", 2000, (CUevent *, unsigned int))                 \
    X(event_record, "cuEventRecord", "cuEventRecord", 2000, (CUevent, CUstream))                       \
    X(event_sync, "cuEventSynchronize", "cuEventSynchronize", 2000, (CUevent))                         \
    X(event_query, "cuEventQuery", "cuEventQuery", 2000, (CUevent))                                    \
    X(memcpy, "cuMemcpy", "cuMemcpy", 4000, (CUdeviceptr, CUdeviceptr, size_t))                        \
    X(memcpy_async, "cuMemcpyAsync", "cuMemcpyAsync", 4000, (CUdeviceptr, CUdeviceptr, size_t, CUstream)) \
    X(htod, "cuMemcpyHtoD_v2", "cuMemcpyHtoD", 3020, (CUdeviceptr, const void *, size_t))              \
    X(dtoh, "cuMemcpyDtoH_v2", "cuMemcpyDtoH", 3020, (void *, CUdeviceptr, size_t))                    \
    X(dtod, "cuMemcpyDtoD_v2", "cuMemcpyDtoD", 3020, (CUdeviceptr, CUdeviceptr, size_t))               \
    X(htod_async, "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync", 3020, (CUdeviceptr, const void *, size_t, CUstream)) \
    X(dtoh_async, "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync", 3020, (void *, CUdeviceptr, size_t, CUstream)) \
    X(dtod_async, "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync", 3020, (CUdeviceptr, CUdeviceptr, size_t, CUstream)) \
    X(m2d, "cuMemcpy2D_v2", "cuMemcpy2D", 3020, (const CUDA_MEMCPY2D *))                               \
    X(m2d_unaligned, "cuMemcpy2DUnaligned_v2", "cuMemcpy2DUnaligned", 3020, (const CUDA_MEMCPY2D *))   \
    X(m2d_async, "cuMemcpy2DAsync_v2", "cuMemcpy2DAsync", 3020, (const CUDA_MEMCPY2D *, CUstream))     \
    X(m3d, "cuMemcpy3D_v2", "cuMemcpy3D", 3020, (const CUDA_MEMCPY3D *))                               \
    X(m3d_async, "cuMemcpy3DAsync_v2", "cuMemcpy3DAsync", 3020, (const CUDA_MEMCPY3D *, CUstream))     \
    X(peer, "cuMemcpyPeer", "cuMemcpyPeer", 4000, (CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t)) \
    X(peer_async, "cuMemcpyPeerAsync", "cuMemcpyPeerAsync", 4000,                                      \
      (CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream))                              \
    X(batch, "cuMemcpyBatchAsync_v2", "cuMemcpyBatchAsync", 13000,                                     \
      (CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *, size_t, CUstream)) \
    X(launch_host_func, "cuLaunchHostFunc", "cuLaunchHostFunc", 10000, (CUstream, CUhostFn, void *))   \
    X(add_callback, "cuStreamAddCallback", "cuStreamAddCallback", 5000,                                \
      (CUstream, CUstreamCallback, void *, unsigned int))                                              \
    X(begin_capture, "cuStreamBeginCapture_v2", "cuStreamBeginCapture", 10010, (CUstream, CUstreamCaptureMode)) \
    X(end_capture, "cuStreamEndCapture", "cuStreamEndCapture", 10000, (CUstream, CUgraph *))           \
    X(graph_instantiate, "cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags", 11040,          \
      (CUgraphExec *, CUgraph, unsigned long long))                                                    \
    X(graph_launch, "cuGraphLaunch", "cuGraphLaunch", 10000, (CUgraphExec, CUstream))

struct test_driver {
#define X(field, exp, query, version, params) CUresult(*field) params;
    TEST_DRIVER_FUNCS(X)
#undef X
    int per_thread; /* 1 when the per-thread flavour was asked for */
    void *lib;      /* the dlopen handle, and the route's cuGetProcAddress (NULL for dlsym): */
    void *getproc;  /* test_driver_extra looks further functions up the same way */
    int getproc_v1;
};

typedef CUresult (*getproc_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*getproc_v1_fn)(const char *, void **, int, cuuint64_t);

/* Per-thread names for the dlsym route: the exported _ptds/_ptsz symbol of a legacy name. */
static inline const char *test_ptds_name(const char *exp, char *buf, size_t len)
{
    static const char *sync_style[] = {"cuMemcpy", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2",
                                       "cuMemcpy2D_v2", "cuMemcpy2DUnaligned_v2", "cuMemcpy3D_v2", "cuMemcpyPeer"};
    static const char *stream_style[] = {"cuMemcpyAsync", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2",
                                         "cuMemcpyDtoDAsync_v2", "cuMemcpy2DAsync_v2", "cuMemcpy3DAsync_v2",
                                         "cuMemcpyPeerAsync", "cuMemcpyBatchAsync_v2", "cuStreamSynchronize",
                                         "cuStreamQuery", "cuEventRecord", "cuLaunchHostFunc", "cuStreamAddCallback",
                                         "cuStreamBeginCapture_v2", "cuStreamEndCapture", "cuGraphLaunch"};
    for (size_t i = 0; i < sizeof sync_style / sizeof *sync_style; i++)
        if (strcmp(exp, sync_style[i]) == 0) {
            snprintf(buf, len, "%s_ptds", exp);
            return buf;
        }
    for (size_t i = 0; i < sizeof stream_style / sizeof *stream_style; i++)
        if (strcmp(exp, stream_style[i]) == 0) {
            snprintf(buf, len, "%s_ptsz", exp);
            return buf;
        }
    return exp;
}

/* Fills d through the named route; exits with a message on failure. `linked` is filled by the
 * caller (it needs the symbols at link time), so it is not handled here. */
static inline void test_driver_load(struct test_driver *d, const char *route)
{
    memset(d, 0, sizeof *d);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "cannot dlopen libcuda.so.1: %s\n", dlerror());
        exit(1);
    }
    int ptds = strcmp(route, "getproc_ptds") == 0 || strcmp(route, "dlsym_ptds") == 0;
    d->per_thread = ptds;
    d->lib = h;
    if (strncmp(route, "dlsym", 5) == 0) {
        char buf[128];
#define X(field, exp, query, version, params)                                                          \
    d->field = (CUresult(*) params)dlsym(h, ptds ? test_ptds_name(exp, buf, sizeof buf) : exp);        \
    if (!d->field) {                                                                                   \
        fprintf(stderr, "dlsym(%s) failed\n", exp);                                                    \
        exit(1);                                                                                       \
    }
        TEST_DRIVER_FUNCS(X)
#undef X
        return;
    }
    int v1 = strcmp(route, "getproc_v1") == 0;
    if (strncmp(route, "getproc", 7) != 0) {
        fprintf(stderr, "unknown route '%s'\n", route);
        exit(2);
    }
    /* As the CUDA runtime does: fetch cuGetProcAddress_v2 by dlsym, then ask it for itself. */
    getproc_v2_fn boot = (getproc_v2_fn)dlsym(h, "cuGetProcAddress_v2");
    if (!boot) {
        fprintf(stderr, "dlsym(cuGetProcAddress_v2) failed\n");
        exit(1);
    }
    void *self = NULL;
    CUdriverProcAddressQueryResult status;
    CHECK(boot("cuGetProcAddress", &self, v1 ? 11030 : 12000, 0, &status));
    d->getproc = self;
    d->getproc_v1 = v1;
    cuuint64_t flags = ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
#define X(field, exp, query, version, params)                                                          \
    {                                                                                                  \
        void *fn = NULL;                                                                               \
        int ask = version < 13000 ? 13000 : version;                                                   \
        CUresult r = v1 ? ((getproc_v1_fn)self)(query, &fn, ask, flags)                                \
                        : ((getproc_v2_fn)self)(query, &fn, ask, flags, &status);                      \
        if (r != CUDA_SUCCESS || !fn) {                                                                \
            fprintf(stderr, "cuGetProcAddress(%s) failed: %d\n", query, (int)r);                       \
            exit(1);                                                                                   \
        }                                                                                              \
        d->field = (CUresult(*) params)fn;                                                             \
    }
    TEST_DRIVER_FUNCS(X)
#undef X
}

/* A function outside TEST_DRIVER_FUNCS, found through d's route (its exported name for dlsym,
 * cuGetProcAddress of `query` at `version` otherwise); NULL when the driver lacks it. */
static inline void *test_driver_extra(const struct test_driver *d, const char *exp, const char *query, int version)
{
    if (!d->getproc)
        return d->lib ? dlsym(d->lib, exp) : NULL;
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    cuuint64_t flags = d->per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
    CUresult r = d->getproc_v1 ? ((getproc_v1_fn)d->getproc)(query, &fn, version, flags)
                               : ((getproc_v2_fn)d->getproc)(query, &fn, version, flags, &status);
    return r == CUDA_SUCCESS ? fn : NULL;
}

/* Loads the driver by `route`, initializes it and makes device 0's primary context current. */
static inline CUcontext test_driver_start(struct test_driver *d, const char *route)
{
    CUdevice dev;
    CUcontext ctx;
    test_driver_load(d, route);
    CHECK(d->init(0));
    CHECK(d->device_get(&dev, 0));
    CHECK(d->primary_retain(&ctx, dev));
    CHECK(d->ctx_set(ctx));
    return ctx;
}

/* Deterministic, position- and seed-dependent bytes (never all zero). */
static inline void test_fill(void *p, size_t n, uint32_t seed)
{
    unsigned char *b = p;
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b[i] = (unsigned char)(x >> 7);
    }
}

/* FNV-1a 64-bit: printed by the tests so outputs can be compared byte for byte. */
static inline uint64_t test_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

#endif
