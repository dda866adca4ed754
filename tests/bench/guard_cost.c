/* guard_cost.c: what the guard costs per guarded copy, for guard_pages = all and first.
 * Two numbers per size (4 KiB, 1 MiB, 64 MiB, or the sizes given as arguments, in bytes):
 *   pair_ns   - one mprotect(PROT_NONE) + mprotect(PROT_READ|PROT_WRITE) pair on the pinned
 *               destination: all of its pages, and its first page only (what the guard adds to each
 *               copy at least, measured in this process without the shim's bookkeeping)
 *   copy_ns   - one cuMemcpyDtoHAsync_v2 into pinned memory + cuStreamSynchronize, end to end; run
 *               this program under the shim with PINSHIM_GUARD=off, warn + guard_pages=all, and
 *               warn + guard_pages=first (tests/bench/run_guard_cost.sh) and subtract
 * The driver is found at run time (libcuda.so.1: the real one on a GPU machine, the fake one with
 * LD_LIBRARY_PATH=build/fakecuda). Prints one line per size; never asserts a timing.
 * Environment: GUARD_COST_ITERS (default 200; a 64 MiB size uses a tenth, at least 10). */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../progs/testutil.h"
#include "bench_time.h"

static double median(double *v, int n) { return n > 0 ? bench_median(v, n) : 0; }

static double pair_ns(void *p, size_t len, int iters)
{
    double *t = malloc(sizeof *t * (size_t)iters);
    for (int i = 0; i < iters; i++) {
        double t0 = bench_ns(CLOCK_MONOTONIC);
        if (mprotect(p, len, PROT_NONE) != 0 || mprotect(p, len, PROT_READ | PROT_WRITE) != 0) {
            perror("mprotect");
            exit(1);
        }
        t[i] = bench_ns(CLOCK_MONOTONIC) - t0;
    }
    double m = median(t, iters);
    free(t);
    return m;
}

int main(int argc, char **argv)
{
    struct test_driver d;
    test_driver_start(&d, "getproc");
    size_t defaults[] = {4096, 1u << 20, 64u << 20};
    int nsizes = argc > 1 ? argc - 1 : 3;
    int base_iters = getenv("GUARD_COST_ITERS") ? atoi(getenv("GUARD_COST_ITERS")) : 200;
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    printf("%12s %8s %16s %16s %16s\n", "bytes", "iters", "pair_all_ns", "pair_first_ns", "copy_ns");
    for (int k = 0; k < nsizes; k++) {
        size_t bytes = argc > 1 ? (size_t)strtoull(argv[k + 1], NULL, 0) : defaults[k];
        int iters = bytes >= (64u << 20) ? (base_iters / 10 > 10 ? base_iters / 10 : 10) : base_iters;
        void *host;
        CUdeviceptr dev;
        CHECK(d.host_alloc(&host, bytes, 0));
        CHECK(d.mem_alloc(&dev, bytes));
        memset(host, 1, bytes);
        CHECK(d.htod(dev, host, bytes));
        /* The pages inside the buffer, as the guard protects them: the driver need not return a
         * page-aligned pointer (mprotect fails with EINVAL on one that is not). */
        uintptr_t lo = ((uintptr_t)host + ps - 1) / ps * ps, hi = ((uintptr_t)host + bytes) / ps * ps;
        size_t whole = hi > lo ? hi - lo : 0;
        double all = whole ? pair_ns((void *)lo, whole, iters) : 0;
        double first = whole ? pair_ns((void *)lo, ps, iters) : 0;
        if (!whole)
            fprintf(stderr, "# %zu bytes at %p hold no whole page: no pair measured\n", bytes, host);
        double *t = malloc(sizeof *t * (size_t)iters);
        for (int i = 0; i < 3; i++) { /* warm-up: the guard's first copy sets itself up */
            CHECK(d.dtoh_async(host, dev, bytes, s));
            CHECK(d.stream_sync(s));
        }
        for (int i = 0; i < iters; i++) {
            double t0 = bench_ns(CLOCK_MONOTONIC);
            CHECK(d.dtoh_async(host, dev, bytes, s));
            CHECK(d.stream_sync(s));
            t[i] = bench_ns(CLOCK_MONOTONIC) - t0;
        }
        printf("%12zu %8d %16.0f %16.0f %16.0f\n", bytes, iters, all, first, median(t, iters));
        free(t);
        CHECK(d.mem_free(dev));
        CHECK(d.free_host(host));
    }
    CHECK(d.stream_destroy(s));
    return 0;
}
