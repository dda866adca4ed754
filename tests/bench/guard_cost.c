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
 * After each size's timed loop it writes to stderr what the loop met, for run.py's notes.rows and
 * row_levels.py (the CPU level a process lands at moves its time; HISTORY.md, the twenty-ninth stop):
 *   # level BYTES control_us=C wall_ms=W main_cpu_ms=M shim_threads_ms=S other_threads_ms=O cpu=A-B
 * C: the median of five runs of a fixed integer loop right after (a slower CPU: a larger C); W: the
 * timed iterations' time added up; M, S, O: the CPU time of the main thread, the shim's threads
 * (named pinshim-*) and the rest during the loop (/proc/self/task/.../schedstat); A-B: the CPU the
 * main thread was on before and after.
 * Environment: GUARD_COST_ITERS (default 200; a 64 MiB size uses a tenth, at least 10). */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
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

/* The control: a dependent integer chain of fixed length, in us (the speed of the CPU it ran on). */
static double control_us(void)
{
    double t[5];
    for (int k = 0; k < 5; k++) {
        double t0 = bench_ns(CLOCK_MONOTONIC);
        uint64_t x = (uint64_t)k;
        for (int i = 0; i < 1000000; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ volatile("" : : "r"(x));
        t[k] = (bench_ns(CLOCK_MONOTONIC) - t0) / 1e3;
    }
    return bench_median(t, 5);
}

/* A reading of this process's threads: id, kind (0 main, 1 the shim's, named pinshim-*, 2 the rest)
 * and CPU ns so far (/proc/self/task/.../schedstat); at most TASKS_MAX threads. */
#define TASKS_MAX 512
struct tasks { int n, tid[TASKS_MAX], kind[TASKS_MAX]; double ns[TASKS_MAX]; };
static struct tasks before, after; /* around each size's timed loop (12 KiB: not on the stack) */

static void read_tasks(struct tasks *t)
{
    t->n = 0;
    DIR *dir = opendir("/proc/self/task");
    struct dirent *e;
    while (dir && t->n < TASKS_MAX && (e = readdir(dir))) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], name[32] = "";
        unsigned long long ns = 0;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(name, sizeof name, f))
                name[0] = 0;
            fclose(f);
        }
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        int ok = fscanf(f, "%llu", &ns) == 1;
        fclose(f);
        if (!ok)
            continue;
        int tid = atoi(e->d_name);
        t->tid[t->n] = tid;
        t->kind[t->n] = tid == (int)getpid() ? 0 : strncmp(name, "pinshim-", 8) == 0 ? 1 : 2;
        t->ns[t->n++] = (double)ns;
    }
    if (dir)
        closedir(dir);
}

/* CPU ns used between two readings by kind, thread by thread (a thread new in the second counts
 * from zero; one that ended before it drops out: its share reads short). */
static void tasks_used(const struct tasks *a, const struct tasks *b, double out[3])
{
    out[0] = out[1] = out[2] = 0;
    for (int i = 0; i < b->n; i++) {
        double before = 0;
        for (int j = 0; j < a->n; j++)
            if (a->tid[j] == b->tid[i])
                before = a->ns[j];
        out[b->kind[i]] += b->ns[i] - before;
    }
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
        double used[3];
        int on0 = sched_getcpu();
        read_tasks(&before);
        for (int i = 0; i < iters; i++) {
            double t0 = bench_ns(CLOCK_MONOTONIC);
            CHECK(d.dtoh_async(host, dev, bytes, s));
            CHECK(d.stream_sync(s));
            t[i] = bench_ns(CLOCK_MONOTONIC) - t0;
        }
        read_tasks(&after);
        int on1 = sched_getcpu();
        tasks_used(&before, &after, used);
        double wall = 0;
        for (int i = 0; i < iters; i++)
            wall += t[i];
        printf("%12zu %8d %16.0f %16.0f %16.0f\n", bytes, iters, all, first, median(t, iters));
        fprintf(stderr, "# level %zu control_us=%.1f wall_ms=%.2f main_cpu_ms=%.2f shim_threads_ms=%.2f "
                "other_threads_ms=%.2f cpu=%d-%d\n", bytes, control_us(), wall / 1e6, used[0] / 1e6, used[1] / 1e6,
                used[2] / 1e6, on0, on1);
        free(t);
        CHECK(d.mem_free(dev));
        CHECK(d.free_host(host));
    }
    CHECK(d.stream_destroy(s));
    return 0;
}
