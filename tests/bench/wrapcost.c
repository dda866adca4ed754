/* wrapcost.c: what each call of a well-written program's hot loop costs, the pattern of PyTorch's
 * .item() on pinned memory (issue #12): a 4-byte cuMemcpyDtoHAsync into pinned memory, then
 * cuStreamSynchronize, cuEventRecord and cuEventQuery; then each other sync point alone
 * (cuEventRecordWithFlags, cuEventSynchronize, cuCtxSynchronize); a small pageable copy; and pinned
 * copies both ways once pin-on-reuse holds a registration (torch_reuse's 4 KB pinned reference runs
 * beside 200 of them). Prints the median ns per call of each, and of the whole iteration, over 9
 * rounds of N iterations; run it with and without the shim side by side
 * (tests/bench/run_wrapcost.sh). Also the cost of the clocks the shim may read.
 * Usage: wrapcost [N] (default 20000). Build: gcc -O2 -I$CUDA_HOME/include wrapcost.c -ldl */
#define _GNU_SOURCE
#include <time.h>
#include <x86intrin.h>

#include "../progs/testutil.h"
#include "bench_time.h"

/* Rounds are timed by CLOCK_MONOTONIC, or by the thread's CPU time when WRAPCOST_CPUTIME=1: with a
 * driver that never waits (WRAPCOST_DRIVER=null) that is the same work without the time other
 * processes of a busy machine took the CPU. */
static clockid_t round_clock = CLOCK_MONOTONIC;

#define ROUNDS 9
#define MEDIAN(label, n, body)                                                                         \
    do {                                                                                               \
        double t_[ROUNDS];                                                                             \
        for (int r_ = 0; r_ < ROUNDS; r_++) {                                                          \
            double t0_ = bench_ns(round_clock);                                                        \
            for (int i_ = 0; i_ < (n); i_++) {                                                         \
                body;                                                                                  \
            }                                                                                          \
            t_[r_] = (bench_ns(round_clock) - t0_) / (n);                                              \
        }                                                                                              \
        printf("wrapcost %-44s %9.1f ns\n", label, bench_median(t_, ROUNDS));                          \
    } while (0)

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    const char *cputime = getenv("WRAPCOST_CPUTIME");
    if (cputime && strcmp(cputime, "1") == 0)
        round_clock = CLOCK_THREAD_CPUTIME_ID;
    struct test_driver d;
    test_driver_start(&d, "getproc");
    CUstream s;
    CUevent e;
    CUdeviceptr dev;
    float *pinned;
    CHECK(d.stream_create(&s, 0));
    CHECK(d.event_create(&e, CU_EVENT_DISABLE_TIMING));
    CHECK(d.mem_alloc(&dev, 4096));
    CHECK(d.host_alloc((void **)&pinned, 4096, 0));
    struct timespec ts;
    volatile unsigned long long sink = 0;
    MEDIAN("clock_gettime(CLOCK_MONOTONIC)", n, clock_gettime(CLOCK_MONOTONIC, &ts); sink += (unsigned long long)ts.tv_nsec);
    MEDIAN("clock_gettime(CLOCK_MONOTONIC_COARSE)", n, clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); sink += (unsigned long long)ts.tv_nsec);
    MEDIAN("rdtsc", n, sink += __rdtsc());
    MEDIAN("4-byte D2H async into pinned + stream sync", n, CHECK(d.dtoh_async(pinned, dev, 4, s)); CHECK(d.stream_sync(s)));
    MEDIAN("cuStreamSynchronize (idle stream)", n, CHECK(d.stream_sync(s)));
    MEDIAN("cuEventRecord", n, CHECK(d.event_record(e, s)));
    MEDIAN("cuEventQuery (done)", n, (void)d.event_query(e));
    MEDIAN("whole .item() pattern (copy, sync, record, query)", n,
           CHECK(d.dtoh_async(pinned, dev, 4, s)); CHECK(d.stream_sync(s)); CHECK(d.event_record(e, s));
           (void)d.event_query(e));
    CUresult (*record_flags)(CUevent, CUstream, unsigned int) =
        (CUresult(*)(CUevent, CUstream, unsigned int))test_driver_extra(&d, "cuEventRecordWithFlags",
                                                                         "cuEventRecordWithFlags", 11010);
    if (record_flags)
        MEDIAN("cuEventRecordWithFlags", n, CHECK(record_flags(e, s, 0)));
    MEDIAN("cuEventSynchronize (done)", n, CHECK(d.event_sync(e)));
    MEDIAN("cuCtxSynchronize (idle)", n, CHECK(d.ctx_sync(NULL)));
    /* A small pageable copy (PyTorch's 1000 tensors of 4 KB): nothing to stage or pin, all cost. */
    char small_pageable[4096];
    memset(small_pageable, 2, sizeof small_pageable);
    MEDIAN("4 KiB pageable H2D async + stream sync", n,
           CHECK(d.htod_async(dev, small_pageable, sizeof small_pageable, s)); CHECK(d.stream_sync(s)));
    /* A program that also copies a pageable buffer again and again: pin-on-reuse registers it (the
     * shim's default register_after is 3 copies), and the pinned copies above run beside a live
     * registration. */
    size_t big = 4u << 20;
    char *pageable = malloc(big);
    CUdeviceptr dev_big;
    CHECK(d.mem_alloc(&dev_big, big));
    memset(pageable, 1, big);
    for (int i = 0; i < 4; i++)
        CHECK(d.htod(dev_big, pageable, big));
    MEDIAN("D2H async into pinned + sync, a registration live", n,
           CHECK(d.dtoh_async(pinned, dev, 4, s)); CHECK(d.stream_sync(s)));
    MEDIAN("4 KiB pinned H2D async + sync, registration live", n,
           CHECK(d.htod_async(dev, pinned, 4096, s)); CHECK(d.stream_sync(s)));
    (void)sink;
    return 0;
}
