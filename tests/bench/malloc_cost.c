/* malloc_cost.c: what the shim's allocator hooks add to small allocations. Times N malloc/free
 * pairs of small sizes (16..1528 bytes), best of 15 runs, and prints ns per pair. Run it with and
 * without the shim (tests/bench/run_reuse.sh does, alternately) and subtract; never asserts timing.
 * Usage: malloc_cost [N]   (default 5 million) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_time.h"

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 5000000;
    double best = 1e30;
    volatile unsigned sink = 0;
    for (int run = 0; run < 15; run++) {
        double t0 = bench_ns(CLOCK_MONOTONIC);
        for (long i = 0; i < n; i++) {
            unsigned char *p = malloc(16 + (size_t)(i & 63) * 24);
            p[0] = (unsigned char)i;
            sink += p[0];
            free(p);
        }
        double ns = (bench_ns(CLOCK_MONOTONIC) - t0) / (double)n;
        if (ns < best)
            best = ns;
    }
    printf("%.2f ns per small malloc/free pair (best of 15 runs of %ld)\n", best, n);
    return sink == 12345 ? 1 : 0;
}
