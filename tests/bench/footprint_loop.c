/* footprint_loop.c: the loop footprint.py traces: N iterations of a 4-byte cuMemcpyDtoHAsync into
 * pinned memory + cuStreamSynchronize (mode d, the pattern of PyTorch's .item()) or of a 4 KiB
 * cuMemcpyHtoDAsync from pinned memory (mode h), each iteration opened by a store to `marker`, whose
 * address goes to stderr with the process's mappings at the end. Meant for tests/bench/nullcuda.c
 * (no driver work to trace). Build: gcc -O2 -I$CUDA_HOME/include footprint_loop.c -lcuda
 * Usage: footprint_loop N d|h */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

volatile long marker;

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 40;
    int h2d = argc > 2 && argv[2][0] == 'h';
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    void *pinned;
    CUdeviceptr d;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
        cuStreamCreate(&s, 0) || cuMemHostAlloc(&pinned, 1 << 20, 0) || cuMemAlloc(&d, 1 << 20)) {
        fprintf(stderr, "footprint_loop: CUDA setup failed\n");
        return 1;
    }
    fprintf(stderr, "marker %p\n", (void *)&marker);
    for (int i = 0; i < n; i++) {
        marker = i;
        if (h2d) {
            cuMemcpyHtoDAsync(d, pinned, 4096, s);
        } else {
            cuMemcpyDtoHAsync(pinned, d, 4, s);
            cuStreamSynchronize(s);
        }
    }
    marker = -1;
    char line[512];
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof line, f))
        fprintf(stderr, "map %s", line);
    return 0;
}
