/* passthrough.c: what does the shim cost per copy call on its pass-through path?
 *
 * Driver API only (linked with -lcuda, so the exported-symbol route is used).
 * Enqueues N (default 200000, argv[1]) 4-byte cuMemcpyHtoDAsync_v2 copies from
 * a cuMemHostAlloc'd buffer on a created stream and times the loop with
 * CLOCK_MONOTONIC. The stream is synchronized every SYNC_EVERY calls inside the
 * timed loop (so it never fills up); the final synchronize is outside.
 * Prints exactly one line on stdout: "ns_per_call <float>".
 *
 * Build: gcc -O2 -std=c11 -I$CUDA_HOME/include passthrough.c -lcuda -o passthrough
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SYNC_EVERY 1000
#define WARMUP 2000

static void check(CUresult r, const char *what, int line) {
    if (r != CUDA_SUCCESS) {
        const char *name = NULL, *desc = NULL;
        cuGetErrorName(r, &name);
        cuGetErrorString(r, &desc);
        fprintf(stderr, "passthrough: line %d: %s failed: %d %s (%s)\n", line, what, (int)r,
                name ? name : "?", desc ? desc : "?");
        exit(1);
    }
}
#define CK(call) check((call), #call, __LINE__)

static double now_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        perror("clock_gettime");
        exit(1);
    }
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    long n = 200000;
    if (argc > 1) {
        char *end = NULL;
        n = strtol(argv[1], &end, 10);
        if (!end || *end != '\0' || n <= 0) {
            fprintf(stderr, "usage: %s [calls>0]\n", argv[0]);
            return 2;
        }
    }

    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    CUdeviceptr d;
    unsigned int *h = NULL;

    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CK(cuMemHostAlloc((void **)&h, sizeof *h, 0));
    CK(cuMemAlloc(&d, sizeof *h));
    *h = 0x5A5A5A5Au;

    /* warm-up: same call, same stream */
    for (int i = 0; i < WARMUP; i++) {
        CK(cuMemcpyHtoDAsync_v2(d, h, sizeof *h, stream));
        if ((i + 1) % SYNC_EVERY == 0) CK(cuStreamSynchronize(stream));
    }
    CK(cuStreamSynchronize(stream));

    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        CK(cuMemcpyHtoDAsync_v2(d, h, sizeof *h, stream));
        if ((i + 1) % SYNC_EVERY == 0) CK(cuStreamSynchronize(stream));
    }
    double t1 = now_ns();
    CK(cuStreamSynchronize(stream));

    /* the copies must have done what they say: round-trip one value */
    unsigned int back = 0;
    *h = 0xC0FFEE11u;
    CK(cuMemcpyHtoDAsync_v2(d, h, sizeof *h, stream));
    CK(cuStreamSynchronize(stream));
    CK(cuMemcpyDtoH_v2(&back, d, sizeof back));
    if (back != 0xC0FFEE11u) {
        fprintf(stderr, "passthrough: round trip gave 0x%08x, expected 0xc0ffee11\n", back);
        return 1;
    }

    CK(cuMemFree(d));
    CK(cuMemFreeHost(h));
    CK(cuStreamDestroy(stream));
    CK(cuDevicePrimaryCtxRelease(dev));

    printf("ns_per_call %.1f\n", (t1 - t0) / (double)n);
    return 0;
}
