/* observe_ab.c: what the shim's observing costs the suite's C loop (issue #12: a 4-byte
 * cuMemcpyDtoHAsync into pinned memory + cuStreamSynchronize, at most 100 ns more per iteration),
 * measured inside one process. Across fresh processes the loop spreads by about a microsecond
 * (some processes run it near 6.3 us, others near 7.2 on the same host), ten times the bound;
 * here the shim's benchmark switch (pinshim_bench_observe, outside include/pinshim.h) flips the
 * wrappers between observing and forwarding each call untouched, in blocks ordered observe,
 * forward, forward, observe, and each group of four blocks gives one paired difference (the two
 * observing blocks' mean per iteration less the two forwarding blocks'). Forwarding still passes
 * through the wrappers (a load and a branch): this is what observing costs, not the preload.
 * Prints one line per group, then the medians (ns per iteration) of each side and of the paired
 * differences, with their quartiles and range, and the differences' mean with two standard errors.
 * Without the shim it prints one line saying so and exits 0.
 * Never asserts a timing.
 * A third argument, evict KiB, writes one byte per line of a buffer that large before each iteration
 * (both sides alike): the shim's data then start cold in the caches, as between the calls of a
 * framework's hot loop, whose own work evicts them (0, the default: none). Its instructions stay
 * in the first-level instruction cache, which data writes do not reach.
 * A fourth argument names the iteration: `item` (the default, the loop above) or `pageable`: a
 * 4 KiB cuMemcpyHtoDAsync from the next of 1000 malloc'd 4 KiB buffers, round the list, as
 * PyTorch's 1000 small CPU tensors .to("cuda", non_blocking=True) (one such call per tensor), the
 * shim classifying a pageable page each time; the stream is synchronized after each block, untimed.
 * Or `fresh`: a 1 MiB malloc, the buffer written whole (the program's work, untimed: it also
 * leaves the shim's data cold), cuMemcpyHtoDAsync of all of it, cuStreamSynchronize and free, as
 * a fresh CPU tensor copied each step (the allocation tracked, the copy described and passed);
 * the malloc, and the copy through the free, are timed.
 * A fifth, code KiB, also runs that much generated code before each iteration (a chain of short
 * jumps, one per 16 bytes; x86-64 only), so that the shim's instructions start cold too: a
 * framework's own code between two calls evicts them as its data does (0, the default: none).
 * Usage: LD_PRELOAD=build/libpinshim.so observe_ab [groups [iterations per block [evict KiB [item|pageable|fresh [code KiB]]]]]
 *        (default 20 2000 0 item 0)
 * Build: gcc -std=gnu11 -O2 -I$CUDA_HOME/include tests/bench/observe_ab.c -o observe_ab -ldl -lm */
#define _GNU_SOURCE
#include <math.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <time.h>

#include "../progs/testutil.h"
#include "bench_time.h"

typedef int (*bench_observe_fn)(int);

static volatile unsigned char *evict_buf;
static size_t evict_bytes;
static bool evicting; /* data or code, before each iteration */

#define PAGEABLE_BUFFERS 1000
#define PAGEABLE_BYTES 4096
#define FRESH_BYTES (1 << 20)
static enum { ITEM, PAGEABLE, FRESH } iteration; /* what one iteration does */
static void *pageable[PAGEABLE_BUFFERS];         /* PAGEABLE's buffers */

static void (*evict_code)(void); /* generated code, run before each iteration (NULL: none) */

/* Pushes the caches' earlier contents out: one write per 64-byte line of the buffer, then the
 * generated code. */
static void evict(void)
{
    for (size_t i = 0; i < evict_bytes; i += 64)
        evict_buf[i]++;
    if (evict_code)
        evict_code();
}

/* Code of `kib` KiB that jumps through itself, 16 bytes at a time, and returns. */
static void (*code_to_evict(size_t kib))(void)
{
#if defined(__x86_64__)
    size_t n = kib << 10;
    unsigned char *c = mmap(NULL, n + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c == MAP_FAILED)
        return NULL;
    for (size_t i = 0; i < n; i += 16)
        c[i] = 0xeb, c[i + 1] = 14; /* jmp to the next 16 bytes */
    c[n] = 0xc3;                    /* ret */
    if (mprotect(c, n + 1, PROT_READ | PROT_EXEC) != 0)
        return NULL;
    return (void (*)(void))(void *)c;
#else
    (void)kib;
    return NULL;
#endif
}

/* FRESH's iteration: ns in the malloc and in the copy, synchronize and free (not the writing). */
static double fresh_copy(struct test_driver *d, CUdeviceptr dev, CUstream s, int i)
{
    double t0 = bench_ns(CLOCK_MONOTONIC);
    unsigned char *buf = malloc(FRESH_BYTES);
    double t1 = bench_ns(CLOCK_MONOTONIC);
    if (!buf)
        exit(1);
    memset(buf, i, FRESH_BYTES);
    double t2 = bench_ns(CLOCK_MONOTONIC);
    CHECK(d->htod_async(dev, buf, FRESH_BYTES, s));
    CHECK(d->stream_sync(s));
    free(buf);
    return t1 - t0 + bench_ns(CLOCK_MONOTONIC) - t2;
}

/* One block: `iters` iterations, ns per iteration. With eviction, only the calls are timed. */
static double block(struct test_driver *d, void *host, CUdeviceptr dev, CUstream s, int iters)
{
    double total = 0, t0 = bench_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < iters; i++) {
        if (evicting) {
            evict();
            t0 = bench_ns(CLOCK_MONOTONIC);
        }
        if (iteration == FRESH) {
            total += fresh_copy(d, dev, s, i);
            continue;
        }
        if (iteration == PAGEABLE) {
            CHECK(d->htod_async(dev, pageable[i % PAGEABLE_BUFFERS], PAGEABLE_BYTES, s));
        } else {
            CHECK(d->dtoh_async(host, dev, 4, s));
            CHECK(d->stream_sync(s));
        }
        if (evicting)
            total += bench_ns(CLOCK_MONOTONIC) - t0;
    }
    if (!evicting && iteration != FRESH)
        total = bench_ns(CLOCK_MONOTONIC) - t0;
    if (iteration == PAGEABLE)
        CHECK(d->stream_sync(s));
    return total / iters;
}

static int positive_arg(int argc, char **argv, int i, int fallback)
{
    if (argc <= i)
        return fallback;
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end || v < 1 || v > 1000000) {
        fprintf(stderr, "observe_ab: argument %d is '%s': expected a whole number from 1 to 1000000\n", i, argv[i]);
        exit(2);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    int groups = positive_arg(argc, argv, 1, 20), iters = positive_arg(argc, argv, 2, 2000);
    if (argc > 3 && strcmp(argv[3], "0") != 0) {
        evict_bytes = (size_t)positive_arg(argc, argv, 3, 0) << 10;
        evict_buf = calloc(evict_bytes, 1);
        if (!evict_buf)
            return 1;
    }
    if (argc > 4 && strcmp(argv[4], "item") != 0) {
        if (strcmp(argv[4], "pageable") != 0 && strcmp(argv[4], "fresh") != 0) {
            fprintf(stderr, "observe_ab: argument 4 is '%s': expected item, pageable or fresh\n", argv[4]);
            return 2;
        }
        iteration = argv[4][0] == 'p' ? PAGEABLE : FRESH;
    }
    if (argc > 5 && strcmp(argv[5], "0") != 0) {
        if (!(evict_code = code_to_evict((size_t)positive_arg(argc, argv, 5, 0)))) {
            fprintf(stderr, "observe_ab: cannot run generated code here (x86-64 only, and mmap/mprotect must allow it)\n");
            return 2;
        }
    }
    evicting = evict_bytes || evict_code;
    bench_observe_fn observe = (bench_observe_fn)dlsym(RTLD_DEFAULT, "pinshim_bench_observe");
    if (!observe) {
        printf("observe_ab: pinshim_bench_observe not found (run it with LD_PRELOAD=build/libpinshim.so); nothing measured\n");
        return 0;
    }
    struct test_driver d;
    test_driver_start(&d, "getproc");
    void *host;
    CUdeviceptr dev;
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    CHECK(d.host_alloc(&host, 4096, 0));
    CHECK(d.mem_alloc(&dev, FRESH_BYTES));
    CHECK(d.htod(dev, host, 4096));
    for (int i = 0; iteration == PAGEABLE && i < PAGEABLE_BUFFERS; i++)
        if (!(pageable[i] = calloc(1, PAGEABLE_BYTES)))
            return 1;
    if (observe(1) != 0 || observe(0) != 0 || observe(1) != 0) {
        printf("observe_ab: the shim refused to switch (the guard is on, registrations are held, or interception is "
               "off); nothing measured\n");
        return 0;
    }
    block(&d, host, dev, s, iters); /* warm-up, observing */
    double *on = malloc(sizeof *on * (size_t)groups * 2), *off = malloc(sizeof *off * (size_t)groups * 2),
           *diff = malloc(sizeof *diff * (size_t)groups);
    if (!on || !off || !diff)
        return 1;
    printf("%6s %12s %12s %10s\n", "group", "observe_ns", "forward_ns", "diff_ns");
    for (int g = 0; g < groups; g++) {
        double t[4];
        for (int b = 0; b < 4; b++) {
            observe(b == 0 || b == 3); /* observe, forward, forward, observe */
            t[b] = block(&d, host, dev, s, iters);
        }
        on[2 * g] = t[0], on[2 * g + 1] = t[3];
        off[2 * g] = t[1], off[2 * g + 1] = t[2];
        diff[g] = (t[0] + t[3] - t[1] - t[2]) / 2;
        printf("%6d %12.0f %12.0f %+10.0f\n", g, (t[0] + t[3]) / 2, (t[1] + t[2]) / 2, diff[g]);
    }
    observe(1);
    double lo = diff[0], hi = diff[0], sum = 0, sq = 0;
    for (int g = 0; g < groups; g++) {
        lo = diff[g] < lo ? diff[g] : lo, hi = diff[g] > hi ? diff[g] : hi;
        sum += diff[g];
    }
    double mean = sum / groups;
    for (int g = 0; g < groups; g++)
        sq += (diff[g] - mean) * (diff[g] - mean);
    double se2 = groups > 1 ? 2 * sqrt(sq / (groups - 1) / groups) : 0;
    double mid = bench_median(diff, groups); /* sorts diff */
    printf("median: observe %.0f ns, forward %.0f ns, observe - forward %+.0f ns per iteration (quartiles %+.1f to "
           "%+.1f, groups %+.0f to %+.0f), mean %+.1f +- %.1f (2 standard errors), %d groups of 4 x %d iterations\n",
           bench_median(on, 2 * groups), bench_median(off, 2 * groups), mid, bench_quantile_sorted(diff, groups, 0.25),
           bench_quantile_sorted(diff, groups, 0.75), lo, hi, mean, se2, groups, iters);
    for (int i = 0; iteration == PAGEABLE && i < PAGEABLE_BUFFERS; i++)
        free(pageable[i]);
    CHECK(d.mem_free(dev));
    CHECK(d.free_host(host));
    CHECK(d.stream_destroy(s));
    return 0;
}
