/* reuse_bench.c: the classic reuse loop. B host buffers of S bytes are copied H2D (or D2H), in
 * turn, P passes; prints the throughput of each pass. The buffers are malloc'd (pageable), malloc'd
 * side by side in the heap ("heap": glibc's mmap threshold raised, so neighbours share pages, as
 * PyTorch's tensors do once glibc's threshold has risen) or, with "pinned", cuMemHostAlloc'd. Run
 * it without the shim, under the shim (pin-on-reuse), and pinned, side by side:
 * tests/bench/run_reuse.sh. Never asserts a timing.
 * Usage: reuse_bench pageable|heap|pinned [B [S [P [h2d|d2h]]]]   (default 200 x 4 MiB, 10 passes, h2d) */
#define _GNU_SOURCE
#include <malloc.h>
#include <time.h>

#include "../progs/testutil.h"
#include "bench_time.h"

int main(int argc, char **argv)
{
    int pinned = argc > 1 && !strcmp(argv[1], "pinned");
    int nbuf = argc > 2 ? atoi(argv[2]) : 200;
    size_t bytes = argc > 3 ? (size_t)strtoull(argv[3], NULL, 0) : 4u << 20;
    int passes = argc > 4 ? atoi(argv[4]) : 10;
    int d2h = argc > 5 && !strcmp(argv[5], "d2h");
    if (argc > 1 && !strcmp(argv[1], "heap"))
        mallopt(M_MMAP_THRESHOLD, 256 << 20);
    struct test_driver d;
    test_driver_start(&d, "getproc");
    unsigned char **bufs = malloc(sizeof *bufs * (size_t)nbuf);
    CUdeviceptr *devs = malloc(sizeof *devs * (size_t)nbuf);
    for (int i = 0; i < nbuf; i++) {
        if (pinned)
            CHECK(d.host_alloc((void **)&bufs[i], bytes, 0));
        else
            bufs[i] = malloc(bytes);
        memset(bufs[i], i, bytes);
        CHECK(d.mem_alloc(&devs[i], bytes));
    }
    for (int p = 0; p < passes; p++) {
        CHECK(d.stream_sync(NULL)); /* the legacy stream: these copies' stream */
        double t0 = bench_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < nbuf; i++)
            CHECK(d2h ? d.dtoh(bufs[i], devs[i], bytes) : d.htod(devs[i], bufs[i], bytes));
        CHECK(d.stream_sync(NULL));
        double s = (bench_ns(CLOCK_MONOTONIC) - t0) / 1e9;
        printf("pass %d: %.2f GB/s (%.1f ms)\n", p + 1, (double)nbuf * (double)bytes / s / 1e9, s * 1e3);
    }
    for (int i = 0; i < nbuf; i++) {
        CHECK(d.mem_free(devs[i]));
        if (pinned)
            CHECK(d.free_host(bufs[i]));
        else
            free(bufs[i]);
    }
    return 0;
}
