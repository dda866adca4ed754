/* footprint_loop.c: one of the shim's hot paths, N times over: a 4-byte cuMemcpyDtoHAsync into
 * pinned memory + cuStreamSynchronize (mode d, the pattern of PyTorch's .item()), a 4 KiB
 * cuMemcpyHtoDAsync from pinned memory (mode h), a 4 KiB cuMemcpyHtoDAsync from the next of 1000
 * malloc'd 4 KiB buffers, round the list (mode p, PyTorch's small CPU tensors
 * .to("cuda", non_blocking=True)), a 4 KiB cuMemcpyDtoHAsync into the next of them +
 * cuStreamSynchronize (mode q, a small tensor's .cpu()), a cuEventRecord + cuEventQuery (mode e), or
 * a fresh 1 MiB malloc, its first byte written, cuMemcpyHtoDAsync of all of it, cuStreamSynchronize
 * and free (mode f: a CPU tensor made each step and copied, above the small copies' shortcut and
 * below staging: a tracked allocation, a described copy passed to the driver), or the same with
 * LIVE_BUFFERS other tracked 1 MiB allocations alive (mode g: the table a program holds), or mode h
 * with the small blocks a framework makes for each new tensor (mode t: three, of 64, 208 and 432
 * bytes, into a ring of as many tensors as there are pageable buffers, the blocks they replace freed
 * first: PyTorch's small tensors .to("cuda"), the last pass's results freed as the next is made);
 * each iteration opened by a store to `marker` (built without -pie, so that its address is the one
 * nm reads), the process's mappings to stderr at the end.
 * Meant for tests/bench/nullcuda.c (no driver work to trace). Two users: footprint.py traces it, and
 * the Makefile's profile-guided build runs the modes its PGO_MODES names (not g and t) to train the
 * library's layout.
 * Build: gcc -O2 -no-pie -I$CUDA_HOME/include footprint_loop.c -lcuda
 * Usage: footprint_loop N d|h|p|q|e|f|g|t */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGEABLE_BUFFERS 1000
#define FRESH_BYTES (1 << 20)
#define LIVE_BUFFERS 100
#define TENSOR_BLOCKS 3 /* mode t: blocks a tensor's objects take (sizes below) */

static const size_t tensor_block_bytes[TENSOR_BLOCKS] = {64, 208, 432};
static void *tensor_blocks[PAGEABLE_BUFFERS][TENSOR_BLOCKS];

volatile long marker;

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 40;
    char mode = argc > 2 ? argv[2][0] : 'd';
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CUevent ev = NULL;
    void *pinned, *pageable[PAGEABLE_BUFFERS];
    CUdeviceptr d;
    if (!mode || !strchr("dhpqefgt", mode) || n < 0) {
        fprintf(stderr, "footprint_loop: usage: footprint_loop N d|h|p|q|e|f|g|t, not %s %s\n", argc > 1 ? argv[1] : "",
                argc > 2 ? argv[2] : "");
        return 2;
    }
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
        cuStreamCreate(&s, 0) || cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING) ||
        cuMemHostAlloc(&pinned, 1 << 20, 0) || cuMemAlloc(&d, 1 << 20)) {
        fprintf(stderr, "footprint_loop: CUDA setup failed\n");
        return 1;
    }
    /* one synchronize starts the shim's clock, which calibrates at its first read 10 ms later: so
     * the loop runs calibrated from its first call (a profile trained on it does not follow time) */
    cuStreamSynchronize(s);
    usleep(20000);
    for (int i = 0; (mode == 'p' || mode == 'q') && i < PAGEABLE_BUFFERS; i++)
        if (!(pageable[i] = calloc(1, 4096)))
            return 1;
    for (int i = 0; mode == 'g' && i < LIVE_BUFFERS; i++) /* kept to the end */
        if (!(pageable[i] = malloc(FRESH_BYTES)))
            return 1;
    for (int i = 0; i < n; i++) {
        marker = i;
        if (mode == 'p') {
            cuMemcpyHtoDAsync(d, pageable[i % PAGEABLE_BUFFERS], 4096, s);
        } else if (mode == 'h') {
            cuMemcpyHtoDAsync(d, pinned, 4096, s);
        } else if (mode == 't') {
            void **blocks = tensor_blocks[i % PAGEABLE_BUFFERS];
            for (int b = 0; b < TENSOR_BLOCKS; b++) {
                free(blocks[b]); /* NULL in the first pass */
                if (!(blocks[b] = malloc(tensor_block_bytes[b])))
                    return 1;
                memset(blocks[b], 0, tensor_block_bytes[b]);
            }
            cuMemcpyHtoDAsync(d, pinned, 4096, s);
        } else if (mode == 'q') {
            cuMemcpyDtoHAsync(pageable[i % PAGEABLE_BUFFERS], d, 4096, s);
            cuStreamSynchronize(s);
        } else if (mode == 'f' || mode == 'g') {
            char *fresh = malloc(FRESH_BYTES);
            if (!fresh)
                return 1;
            fresh[0] = (char)i;
            cuMemcpyHtoDAsync(d, fresh, FRESH_BYTES, s);
            cuStreamSynchronize(s);
            free(fresh);
        } else if (mode == 'e') {
            cuEventRecord(ev, s);
            cuEventQuery(ev);
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
