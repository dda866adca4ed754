/* percall.c: cost of the driver queries the shim makes per copy (pointer attributes on pageable,
 * pinned and device pointers; address range; capture status; the current context and its device),
 * ns per call, median of 5 loops. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

#define TIME(label, call)                                                                              \
    do {                                                                                               \
        double t[5];                                                                                   \
        for (int k = 0; k < 5; k++) {                                                                  \
            double t0 = now_ns();                                                                      \
            for (int i = 0; i < 20000; i++)                                                            \
                (void)(call);                                                                          \
            t[k] = (now_ns() - t0) / 20000;                                                            \
        }                                                                                              \
        qsort(t, 5, sizeof *t, cmp);                                                                   \
        printf("%-44s %8.1f ns\n", label, t[2]);                                                       \
    } while (0)

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    cuInit(0);
    cuDeviceGet(&dev, 0);
    cuDevicePrimaryCtxRetain(&ctx, dev);
    cuCtxSetCurrent(ctx);
    cuStreamCreate(&s, 0);
    char *pageable = malloc(1 << 20);
    pageable[0] = 1;
    void *pinned;
    cuMemHostAlloc(&pinned, 1 << 20, 0);
    CUdeviceptr d, base;
    size_t size;
    cuMemAlloc(&d, 1 << 20);
    unsigned int type, managed;
    CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *data[2] = {&type, &managed};
    CUstreamCaptureStatus st;
    TIME("cuPointerGetAttributes(pageable)", cuPointerGetAttributes(2, attrs, data, (CUdeviceptr)pageable));
    TIME("cuPointerGetAttributes(pinned)", cuPointerGetAttributes(2, attrs, data, (CUdeviceptr)pinned));
    TIME("cuPointerGetAttributes(device)", cuPointerGetAttributes(2, attrs, data, d));
    TIME("cuMemGetAddressRange(device)", cuMemGetAddressRange(&base, &size, d));
    TIME("cuStreamIsCapturing", cuStreamIsCapturing(s, &st));
    TIME("cuCtxGetDevice", cuCtxGetDevice(&dev));
    CUcontext current;
    TIME("cuCtxGetCurrent", cuCtxGetCurrent(&current));
    return 0;
}
