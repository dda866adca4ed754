/* observe_ab.c: what the shim costs the suite's C loop (issue #12: a 4-byte cuMemcpyDtoHAsync into
 * pinned memory + cuStreamSynchronize, at most 100 ns more per iteration), measured inside one
 * process. Across fresh processes the loop spreads by about a microsecond (some processes run it
 * near 6.3 us, others near 7.2 on the same host), ten times the bound; here three sides take turns
 * in groups of six blocks, ordered in turn observe, forward, direct, direct, forward, observe, then
 * direct, observe, forward, forward, observe, direct, then forward, direct, observe, observe,
 * direct, forward (group_orders: each side in each position once every three groups, so a
 * position's own bias cancels; until 2026-12-07 the first order alone):
 *   observe - the program's own route to the driver (cuGetProcAddress, as the CUDA runtime) and its
 *             own malloc and free, the shim observing;
 *   forward - the same calls, the shim's benchmark switch (pinshim_bench_observe, outside
 *             include/pinshim.h) making its wrappers forward each call untouched and its allocation
 *             hooks track nothing new;
 *   direct  - no shim at all in the timed calls: the driver's own functions (found with the C
 *             library's dlsym on libcuda's handle, past the shim's dlsym), the C library's own
 *             allocator (__libc_malloc, __libc_free) and, for C++'s new and delete, what a program
 *             without the shim reaches: a C++ runtime's operator new and delete are functions that
 *             call the C library's malloc and free through their PLT (libstdc++'s: new loops on
 *             the new-handler while malloc fails), modelled here by runtime_new and runtime_delete
 *             (the shim defines both and goes from the caller to the allocator in one step). Until
 *             2026-12-07 direct called __libc_malloc and __libc_free for them, a call fewer than a
 *             program without the shim makes, which priced the hooks of a C++ allocation too high.
 * Each group of six blocks gives two paired differences: observe - forward (what observing costs)
 * and forward - direct (what the preload costs while forwarding: the wrappers' call and branch, the
 * allocation hooks' comparison and tail call). Their sum is what the whole shim costs the loop.
 * Prints one line per group, then two closing lines: the medians (ns per iteration) of observe and
 * forward and of their paired differences, with their quartiles and range and the differences'
 * mean with two standard errors; the same for forward and direct, with how many driver and
 * allocator calls one iteration makes (what a per-call figure divides by).
 * Without the shim it prints one line saying so and exits 0. Never asserts a timing.
 * A third argument, evict KiB, writes one byte per line of a buffer that large before each iteration
 * (all sides alike): the shim's data then start cold in the caches, as between the calls of a
 * framework's hot loop, whose own work evicts them (0, the default: none). Its instructions stay
 * in the first-level instruction cache, which data writes do not reach.
 * A fourth argument names the iteration: `item` (the default, the loop above) or `pageable`: a
 * 4 KiB cuMemcpyHtoDAsync from the next of 1000 malloc'd 4 KiB buffers, round the list, as
 * PyTorch's 1000 small CPU tensors .to("cuda", non_blocking=True) (one such call per tensor), the
 * shim classifying a pageable page each time; the stream is synchronized after each block, untimed.
 * Or `fresh`: a 1 MiB malloc, the buffer written whole (the program's work, untimed: it also
 * leaves the shim's data cold), cuMemcpyHtoDAsync of all of it, cuStreamSynchronize and free, as
 * a fresh CPU tensor copied each step (the allocation tracked, the copy described and passed);
 * the malloc, and the copy through the free, are timed. Or `alloc`: no driver call, a small malloc
 * and its free, then C++'s operator new and delete of the same size (the program's: the shim's
 * when it is preloaded), sizes 64 and 512 bytes in turn: what the allocation hooks cost a call.
 * `malloc` and `new` are its two halves alone (a malloc and its free; a new and its delete), each
 * priced apart: a workload's allocator calls are mostly one kind or the other (PyTorch's are C++'s).
 * A fifth, code KiB, also runs that much generated code before each iteration (a chain of short
 * jumps, one per 16 bytes; x86-64 only), so that the shim's instructions start cold too: a
 * framework's own code between two calls evicts them as its data does (0, the default: none).
 * Each jump is a branch the predictors must hold, so a large chain also leaves the shim's branches
 * unpredicted, and one of more than a few MiB its code pages out of the TLBs.
 * A sixth, stride bytes, spaces the evicting writes that far apart (64, the default: every line):
 * 4096 writes once per page, so that the buffer pushes the shim's pages out of the TLBs at a
 * sixty-fourth of the writes. Another iteration, `pinned`, is `pageable` from the program's pinned
 * memory: PyTorch's pinned 4 KB .to("cuda", non_blocking=True).
 * Usage: LD_PRELOAD=build/libpinshim.so observe_ab [groups [iterations per block [evict KiB
 *            [item|pageable|fresh|alloc|pinned|malloc|new [code KiB [stride bytes]]]]]]
 *        (default 20 2000 0 item 0 64)
 * Build: gcc -std=gnu11 -O2 -I$CUDA_HOME/include tests/bench/observe_ab.c -o observe_ab -ldl -lm */
#define _GNU_SOURCE
#include <math.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <time.h>

#include "../progs/testutil.h"
#include "bench_time.h"

typedef int (*bench_observe_fn)(int);

/* What one side calls: the driver's three functions the loops use and the allocator. */
struct side {
    CUresult (*dtoh_async)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*htod_async)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*stream_sync)(CUstream);
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*new_)(size_t); /* C++'s operator new(size_t) and operator delete(void *) */
    void (*delete_)(void *);
};

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

static volatile unsigned char *evict_buf;
static size_t evict_bytes, evict_stride = 64; /* one write per stride bytes */
static bool evicting; /* data or code, before each iteration */

#define PAGEABLE_BUFFERS 1000
#define PAGEABLE_BYTES 4096
#define FRESH_BYTES (1 << 20)
static enum { ITEM, PAGEABLE, FRESH, ALLOC, PINNED, MALLOC, NEW } iteration; /* what one iteration does */
static const char *const iteration_names[] = {"item",   "pageable", "fresh", "alloc",
                                              "pinned", "malloc",   "new"}; /* the enum's order */
#define ITERATIONS ((int)(sizeof iteration_names / sizeof *iteration_names))
/* The blocks of a group, in turn (g % GROUP_ORDERS): o observe, f forward, d direct; the sides
 * rotate through the mirrored pairs of positions (tests/bench/inprocess_ab.py's GROUP_ORDERS). */
static const char *const group_orders[] = {"ofddfo", "doffod", "fdoodf"};
#define GROUP_ORDERS ((int)(sizeof group_orders / sizeof *group_orders))
static const int driver_calls[] = {2, 1, 2, 0, 1, 0, 0};    /* per iteration, timed */
static const int allocator_calls[] = {0, 0, 2, 4, 0, 2, 2}; /* likewise */
static void *pageable[PAGEABLE_BUFFERS];            /* PAGEABLE's buffers */

static void (*evict_code)(void); /* generated code, run before each iteration (NULL: none) */

/* Pushes the caches' earlier contents out: one write per line (or per stride) of the buffer, then
 * the generated code. */
static void evict(void)
{
    for (size_t i = 0; i < evict_bytes; i += evict_stride)
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

/* The C library's own dlsym, past any preloaded one (the shim answers its wrappers for driver
 * names): looked up in libc's handle alone, by version. */
static void *libc_dlsym(void *handle, const char *name)
{
    static void *(*real)(void *, const char *);
    if (!real) {
        void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
        if (libc && !(real = (void *(*)(void *, const char *))dlvsym(libc, "dlsym", "GLIBC_2.34")))
            real = (void *(*)(void *, const char *))dlvsym(libc, "dlsym", "GLIBC_2.2.5");
        if (!real) {
            fprintf(stderr, "observe_ab: cannot find the C library's dlsym\n");
            exit(1);
        }
    }
    return real(handle, name);
}

static void *need(void *f, const char *name)
{
    if (!f) {
        fprintf(stderr, "observe_ab: cannot find %s\n", name);
        exit(1);
    }
    return f;
}

/* The program's side: its route to the driver and the allocator as it binds them. */
static struct side program_side(const struct test_driver *d)
{
    return (struct side){d->dtoh_async, d->htod_async, d->stream_sync, malloc, free,
                         (void *(*)(size_t))need(dlsym(RTLD_DEFAULT, "_Znwm"), "operator new"),
                         (void (*)(void *))need(dlsym(RTLD_DEFAULT, "_ZdlPv"), "operator delete")};
}

/* A C++ runtime's operator new(size_t) and operator delete(void *) without the shim: out of line,
 * reaching the C library's malloc and free through the PLT (no new-handler is installed here, so
 * where libstdc++ would throw std::bad_alloc this exits). */
static __attribute__((noinline)) void *runtime_new(size_t n)
{
    void *p = __libc_malloc(n ? n : 1);
    if (!p)
        exit(1);
    return p;
}

static __attribute__((noinline)) void runtime_delete(void *p) { __libc_free(p); }

/* The direct side: the driver's own functions, the C library's allocator, a runtime's new and delete. */
static struct side direct_side(const struct test_driver *d)
{
    return (struct side){
        (CUresult(*)(void *, CUdeviceptr, size_t, CUstream))need(libc_dlsym(d->lib, "cuMemcpyDtoHAsync_v2"),
                                                                 "cuMemcpyDtoHAsync_v2"),
        (CUresult(*)(CUdeviceptr, const void *, size_t, CUstream))need(libc_dlsym(d->lib, "cuMemcpyHtoDAsync_v2"),
                                                                       "cuMemcpyHtoDAsync_v2"),
        (CUresult(*)(CUstream))need(libc_dlsym(d->lib, "cuStreamSynchronize"), "cuStreamSynchronize"),
        __libc_malloc, __libc_free, runtime_new, runtime_delete};
}

/* FRESH's iteration: ns in the malloc and in the copy, synchronize and free (not the writing). */
static double fresh_copy(const struct side *sd, CUdeviceptr dev, CUstream s, int i)
{
    double t0 = bench_ns(CLOCK_MONOTONIC);
    unsigned char *buf = sd->malloc(FRESH_BYTES);
    double t1 = bench_ns(CLOCK_MONOTONIC);
    if (!buf)
        exit(1);
    memset(buf, i, FRESH_BYTES);
    double t2 = bench_ns(CLOCK_MONOTONIC);
    CHECK(sd->htod_async(dev, buf, FRESH_BYTES, s));
    CHECK(sd->stream_sync(s));
    sd->free(buf);
    return t1 - t0 + bench_ns(CLOCK_MONOTONIC) - t2;
}

/* ALLOC's iteration: a malloc and its free, then a new and its delete (MALLOC's: the first pair
 * alone; NEW's: the second). */
static void alloc_pairs(const struct side *sd, int i)
{
    size_t n = i & 1 ? 512 : 64;
    volatile unsigned char *p;
    if (iteration != NEW) {
        if (!(p = sd->malloc(n)))
            exit(1);
        p[0] = (unsigned char)i;
        sd->free((void *)p);
    }
    if (iteration != MALLOC) {
        p = sd->new_(n);
        p[0] = (unsigned char)i;
        sd->delete_((void *)p);
    }
}

/* One block: `iters` iterations, ns per iteration. With eviction, only the calls are timed. */
static double block(const struct side *sd, void *host, CUdeviceptr dev, CUstream s, int iters)
{
    double total = 0, t0 = bench_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < iters; i++) {
        if (evicting) {
            evict();
            t0 = bench_ns(CLOCK_MONOTONIC);
        }
        if (iteration == FRESH) {
            total += fresh_copy(sd, dev, s, i);
            continue;
        }
        if (iteration == ALLOC || iteration == MALLOC || iteration == NEW) {
            alloc_pairs(sd, i);
        } else if (iteration == PAGEABLE) {
            CHECK(sd->htod_async(dev, pageable[i % PAGEABLE_BUFFERS], PAGEABLE_BYTES, s));
        } else if (iteration == PINNED) {
            CHECK(sd->htod_async(dev, host, PAGEABLE_BYTES, s));
        } else {
            CHECK(sd->dtoh_async(host, dev, 4, s));
            CHECK(sd->stream_sync(s));
        }
        if (evicting)
            total += bench_ns(CLOCK_MONOTONIC) - t0;
    }
    if (!evicting && iteration != FRESH)
        total = bench_ns(CLOCK_MONOTONIC) - t0;
    if (iteration == PAGEABLE || iteration == PINNED)
        CHECK(sd->stream_sync(s));
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

/* Paired differences summarized: median, quartiles, range, mean and two standard errors. Sorts d. */
struct spread {
    double median, q1, q3, lo, hi, mean, se2;
};

static struct spread spread_of(double *d, int n)
{
    struct spread r = {.lo = d[0], .hi = d[0]};
    double sum = 0, sq = 0;
    for (int g = 0; g < n; g++) {
        r.lo = d[g] < r.lo ? d[g] : r.lo, r.hi = d[g] > r.hi ? d[g] : r.hi;
        sum += d[g];
    }
    r.mean = sum / n;
    for (int g = 0; g < n; g++)
        sq += (d[g] - r.mean) * (d[g] - r.mean);
    r.se2 = n > 1 ? 2 * sqrt(sq / (n - 1) / n) : 0;
    r.median = bench_median(d, n);
    r.q1 = bench_quantile_sorted(d, n, 0.25), r.q3 = bench_quantile_sorted(d, n, 0.75);
    return r;
}

int main(int argc, char **argv)
{
    int groups = positive_arg(argc, argv, 1, 20), iters = positive_arg(argc, argv, 2, 2000);
    groups = (groups + GROUP_ORDERS - 1) / GROUP_ORDERS * GROUP_ORDERS; /* whole cycles of the orders */
    if (argc > 3 && strcmp(argv[3], "0") != 0) {
        evict_bytes = (size_t)positive_arg(argc, argv, 3, 0) << 10;
        evict_buf = calloc(evict_bytes, 1);
        if (!evict_buf)
            return 1;
    }
    if (argc > 4) {
        int k = 0;
        while (k < ITERATIONS && strcmp(argv[4], iteration_names[k]) != 0)
            k++;
        if (k == ITERATIONS) {
            fprintf(stderr,
                    "observe_ab: argument 4 is '%s': expected item, pageable, fresh, alloc, pinned, malloc or new\n",
                    argv[4]);
            return 2;
        }
        iteration = k;
    }
    if (argc > 5 && strcmp(argv[5], "0") != 0) {
        if (!(evict_code = code_to_evict((size_t)positive_arg(argc, argv, 5, 0)))) {
            fprintf(stderr, "observe_ab: cannot run generated code here (x86-64 only, and mmap/mprotect must allow it)\n");
            return 2;
        }
    }
    if (argc > 6)
        evict_stride = (size_t)positive_arg(argc, argv, 6, 64);
    evicting = evict_bytes || evict_code;
    bench_observe_fn observe = (bench_observe_fn)dlsym(RTLD_DEFAULT, "pinshim_bench_observe");
    if (!observe) {
        printf("observe_ab: pinshim_bench_observe not found (run it with LD_PRELOAD=build/libpinshim.so); nothing measured\n");
        return 0;
    }
    struct test_driver d;
    test_driver_start(&d, "getproc");
    struct side program = program_side(&d), direct = direct_side(&d);
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
    block(&program, host, dev, s, iters); /* warm-up, observing */
    block(&direct, host, dev, s, iters);
    double *on = malloc(sizeof *on * (size_t)groups * 2), *off = malloc(sizeof *off * (size_t)groups * 2),
           *bare = malloc(sizeof *bare * (size_t)groups * 2), *diff = malloc(sizeof *diff * (size_t)groups),
           *preload = malloc(sizeof *preload * (size_t)groups), *whole = malloc(sizeof *whole * (size_t)groups);
    if (!on || !off || !bare || !diff || !preload || !whole)
        return 1;
    printf("%6s %12s %12s %12s %10s %10s\n", "group", "observe_ns", "forward_ns", "direct_ns", "diff_ns", "preload_ns");
    for (int g = 0; g < groups; g++) {
        double *side[3] = {&on[2 * g], &off[2 * g], &bare[2 * g]}; /* observe, forward, direct: 2 blocks each */
        const char *order = group_orders[g % GROUP_ORDERS];
        for (int b = 0; b < 6; b++) {
            int k = order[b] == 'o' ? 0 : order[b] == 'f' ? 1 : 2;
            observe(k == 0);
            *side[k]++ = block(k == 2 ? &direct : &program, host, dev, s, iters);
        }
        double o = (on[2 * g] + on[2 * g + 1]) / 2, f = (off[2 * g] + off[2 * g + 1]) / 2,
               b = (bare[2 * g] + bare[2 * g + 1]) / 2;
        diff[g] = o - f;
        preload[g] = f - b;
        whole[g] = diff[g] + preload[g];
        printf("%6d %12.0f %12.0f %12.0f %+10.0f %+10.0f\n", g, o, f, b, diff[g], preload[g]);
    }
    observe(1);
    struct spread o = spread_of(diff, groups), p = spread_of(preload, groups), w = spread_of(whole, groups);
    double observing_ns = bench_median(on, 2 * groups), forwarding_ns = bench_median(off, 2 * groups),
           direct_ns = bench_median(bare, 2 * groups);
    printf("median: observe %.0f ns, forward %.0f ns, observe - forward %+.0f ns per iteration (quartiles %+.1f to "
           "%+.1f, groups %+.0f to %+.0f), mean %+.1f +- %.1f (2 standard errors), %d groups of 6 x %d iterations\n",
           observing_ns, forwarding_ns, o.median, o.q1, o.q3, o.lo, o.hi, o.mean, o.se2, groups, iters);
    printf("median: forward %.0f ns, direct %.0f ns, forward - direct %+.1f ns per iteration (quartiles %+.1f to "
           "%+.1f, groups %+.0f to %+.0f), mean %+.1f +- %.1f (2 standard errors); observe - direct %+.1f "
           "(quartiles %+.1f to %+.1f); %d driver and %d allocator calls per iteration (%s)\n",
           forwarding_ns, direct_ns, p.median, p.q1, p.q3, p.lo, p.hi, p.mean, p.se2, w.median, w.q1, w.q3,
           driver_calls[iteration], allocator_calls[iteration], iteration_names[iteration]);
    for (int i = 0; iteration == PAGEABLE && i < PAGEABLE_BUFFERS; i++)
        free(pageable[i]);
    CHECK(d.mem_free(dev));
    CHECK(d.free_host(host));
    CHECK(d.stream_destroy(s));
    return 0;
}
