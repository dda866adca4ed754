/* staging_bench.c: pageable copy bandwidth, H2D and D2H, sync and async, one size per line.
 * Each measurement uses a fresh malloc'd buffer (filled before timing, so page faults are not
 * timed) and times the copy until it has completed (call + stream synchronize). Prints, per
 * (dir, mode, size), the best GB/s of `reps` measurements. Run it with and without the shim
 * (tests/bench/run_staging.sh does, side by side); it never judges the numbers.
 * usage: staging_bench [reps] [max_bytes] */
#include <time.h>

#include "testutil.h" /* CHECK() */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    size_t max = argc > 2 ? strtoull(argv[2], NULL, 0) : (size_t)1 << 30;
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d;
    CHECK(cuMemAlloc(&d, max));
    static const size_t sizes[] = {64u << 10, 128u << 10, 256u << 10, 512u << 10, 1u << 20, 2u << 20, 4u << 20,
                                   6u << 20, 8u << 20, 12u << 20, 16u << 20, 64u << 20, 256u << 20, 1u << 30};
    printf("%-4s %-5s %12s %10s\n", "dir", "mode", "bytes", "GB/s");
    for (int dir = 0; dir < 2; dir++)
        for (int async = 0; async < 2; async++)
            for (size_t i = 0; i < sizeof sizes / sizeof *sizes && sizes[i] <= max; i++) {
                size_t n = sizes[i];
                double best = 0;
                int tries = n <= (16u << 20) ? 4 * reps : reps; /* small copies are noisy: more tries */
                for (int r = 0; r < tries; r++) {
                    unsigned char *host = malloc(n); /* fresh each time: nothing to reuse */
                    memset(host, r + 1, n);
                    CHECK(cuCtxSynchronize());
                    double t0 = now();
                    if (dir == 0)
                        CHECK(async ? cuMemcpyHtoDAsync(d, host, n, s) : cuMemcpyHtoD(d, host, n));
                    else
                        CHECK(async ? cuMemcpyDtoHAsync(host, d, n, s) : cuMemcpyDtoH(host, d, n));
                    CHECK(async ? cuStreamSynchronize(s) : cuCtxSynchronize());
                    double gbps = (double)n / (now() - t0) / 1e9;
                    if (gbps > best)
                        best = gbps;
                    free(host);
                }
                printf("%-4s %-5s %12zu %10.2f\n", dir ? "d2h" : "h2d", async ? "async" : "sync", n, best);
                fflush(stdout);
            }
    return 0;
}
