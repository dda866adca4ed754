/* workers_check.c: shim/stage/workers.c (compiled in here, with stream_copy.c) against memcpy.
 * For 1, 2, 3 and 16 threads, both destination kinds, destinations at offsets around 2 MiB
 * boundaries and sizes around the part thresholds: the bytes equal memcpy's, the bytes around the
 * destination are untouched, and the parts cover [0, bytes) once, in order, each part of a job cut
 * at 2 MiB boundaries (WORKERS_DST_MAY_FAULT_HUGE, large enough) starting on such a boundary. Several
 * jobs are kept started at once, finished oldest first, as stage.c does; workers_populate faults in
 * exactly its range. Prints "workers: N cases identical" or the first problem and exits 1. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <unistd.h>

/* The workers' streaming copy, wrapped to count the threads inside it at once (the cap on threads
 * sharing copies into pool chunks, stage_h2d_threads). */
#define stream_copy stream_copy_real
#include "../../shim/stage/stream_copy.c"
#undef stream_copy
static unsigned copying_now, copying_most;
void stream_copy(void *dst, const void *src, size_t n);
void stream_copy(void *dst, const void *src, size_t n)
{
    unsigned now = __atomic_add_fetch(&copying_now, 1, __ATOMIC_RELAXED);
    for (unsigned most = __atomic_load_n(&copying_most, __ATOMIC_RELAXED); now > most;)
        if (__atomic_compare_exchange_n(&copying_most, &most, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            break;
    usleep(500); /* long enough for every thread allowed in to be in at once */
    stream_copy_real(dst, src, n);
    __atomic_sub_fetch(&copying_now, 1, __ATOMIC_RELAXED);
}

/* The core count's sources, counted: the thread counts are resolved once, not per copy */
#include <sched.h>
static unsigned sysconf_calls;
static long counting_sysconf(int name)
{
    sysconf_calls++;
    return sysconf(name);
}
static int counting_getaffinity(pid_t pid, size_t size, cpu_set_t *set)
{
    sysconf_calls++;
    return sched_getaffinity(pid, size, set);
}
#define sysconf counting_sysconf
#define sched_getaffinity counting_getaffinity
#include "../../shim/stage/workers.c"
#undef sysconf
#undef sched_getaffinity

struct policy pinshim_policy;
__thread int pinshim_depth;

void pinshim_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

#define MiB ((size_t)1 << 20)
#define GUARD 256

/* The parts of a started job tile [0, bytes) in order; aligned ones start on 2 MiB boundaries. */
static int check_parts(const struct workers_job *j)
{
    if (j->parts == 0)
        return 0;
    size_t prev = 0;
    for (unsigned i = 0; i <= j->parts; i++) {
        size_t at = part_offset(j, i);
        if (at < prev || (i == j->parts && at != j->bytes)) {
            printf("workers: part %u of %u starts at %zu after %zu (bytes %zu)\n", i, j->parts, at, prev, j->bytes);
            return 1;
        }
        if (j->aligned && i > 0 && i < j->parts && ((uintptr_t)j->dst + at) % FAULT_BLOCK != 0) {
            printf("workers: aligned part %u starts %zu bytes past a 2 MiB boundary\n", i,
                   (size_t)(((uintptr_t)j->dst + at) % FAULT_BLOCK));
            return 1;
        }
        prev = at;
    }
    return 0;
}

int main(void)
{
    const size_t span = 40 * MiB;
    /* 2 MiB-aligned destination area, so that offsets below place dst relative to a boundary */
    unsigned char *area = mmap(NULL, span + 4 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *src = malloc(span), *want = malloc(span + 2 * GUARD);
    if (area == MAP_FAILED || !src || !want)
        return 2;
    unsigned char *base = (unsigned char *)(((uintptr_t)area + 2 * MiB - 1) & ~(uintptr_t)(2 * MiB - 1));
    for (size_t i = 0; i < span; i++)
        src[i] = (unsigned char)(i * 151 + (i >> 11));
    static const size_t sizes[] = {0, 1, 4095, 256 << 10, 1 * MiB, 2 * MiB - 1, 2 * MiB, 3 * MiB + 17,
                                   16 * MiB, 16 * MiB + 4096, 33 * MiB + 5};
    static const size_t offsets[] = {GUARD, GUARD + 1, 1 * MiB, 2 * MiB - 64, 2 * MiB};
    static const unsigned thread_counts[] = {1, 2, 3, 16};
    unsigned cases = 0;
    for (size_t t = 0; t < sizeof thread_counts / sizeof *thread_counts; t++) {
        /* workers.c resolves its thread count once: reset it per round (no job is queued here) */
        pinshim_policy.stage_threads = thread_counts[t];
        __atomic_store_n(&parallelism, 0, __ATOMIC_RELEASE);
        for (int kind = WORKERS_DST_RESIDENT; kind <= WORKERS_DST_MAY_FAULT_HUGE; kind++)
            for (int streaming = 0; streaming < 2; streaming++) {
                pinshim_policy.stage_stores = streaming ? STAGE_STORES_STREAMING : STAGE_STORES_NORMAL;
                for (size_t o = 0; o < sizeof offsets / sizeof *offsets; o++)
                    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++, cases++) {
                        size_t n = sizes[k], off = offsets[o];
                        if (off + n + GUARD > span + 2 * MiB)
                            continue;
                        unsigned char *dst = base + off;
                        memset(dst - GUARD, 0xA5, n + 2 * GUARD);
                        memset(want, 0xA5, n + 2 * GUARD);
                        memcpy(want + GUARD, src, n);
                        /* three jobs at once over thirds of the copy, finished oldest first */
                        struct workers_job jobs[3];
                        size_t third = n / 3, at[4] = {0, third, 2 * third, n};
                        for (int q = 0; q < 3; q++) {
                            workers_start(&jobs[q], dst + at[q], src + at[q], at[q + 1] - at[q], kind);
                            if (check_parts(&jobs[q]))
                                return 1;
                        }
                        for (int q = 0; q < 3; q++)
                            workers_finish(&jobs[q]);
                        if (memcmp(dst - GUARD, want, n + 2 * GUARD) != 0) {
                            printf("workers: differs from memcpy: %u threads, kind %d, streaming %d, dst offset %zu, "
                                   "%zu bytes\n", thread_counts[t], kind, streaming, off, n);
                            return 1;
                        }
                    }
            }
    }
    printf("workers: %u cases identical\n", cases);

    /* Three 12 MiB copies into resident memory at once, with 8 threads: at most stage_h2d_threads
     * copy at once (the caller included); with 8, more than 3 do. */
    static const unsigned h2d_caps[] = {3, 8};
    pinshim_policy.stage_threads = 8;
    __atomic_store_n(&parallelism, 0, __ATOMIC_RELEASE);
    pinshim_policy.stage_stores = STAGE_STORES_STREAMING;
    for (size_t c = 0; c < sizeof h2d_caps / sizeof *h2d_caps; c++) {
        pinshim_policy.stage_h2d_threads = h2d_caps[c];
        __atomic_store_n(&parallelism, 0, __ATOMIC_RELEASE); /* resolved again with this cap */
        /* Which workers serve pool chunks is fixed for a process; changed here, it takes effect
         * as each worker next waits: a copy into fault-prone memory wakes them all first. */
        workers_memcpy(base, src, 4 * MiB, WORKERS_DST_MAY_FAULT);
        __atomic_store_n(&copying_most, 0, __ATOMIC_RELAXED);
        struct workers_job jobs[3];
        for (int q = 0; q < 3; q++)
            workers_start(&jobs[q], base + (size_t)q * 12 * MiB, src, 12 * MiB, WORKERS_DST_RESIDENT);
        for (int q = 0; q < 3; q++)
            workers_finish(&jobs[q]);
        unsigned most = __atomic_load_n(&copying_most, __ATOMIC_RELAXED);
        if (most > h2d_caps[c] || most < (h2d_caps[c] > 3 ? 4 : 2)) { /* the cap, and threads did join */
            printf("workers: %u threads copied into resident memory at once with stage_h2d_threads = %u\n", most,
                   h2d_caps[c]);
            return 1;
        }
        printf("workers: at most %u of 8 threads at once into resident memory with stage_h2d_threads = %u\n", most,
               h2d_caps[c]);
    }

    /* Default thread counts (0: from the cores): resolved once for any number of copies. */
    pinshim_policy.stage_threads = 0;
    pinshim_policy.stage_h2d_threads = 0;
    __atomic_store_n(&parallelism, 0, __ATOMIC_RELEASE);
    unsigned before = sysconf_calls;
    for (int round = 0; round < 20; round++) {
        struct workers_job jobs[3];
        for (int q = 0; q < 3; q++)
            workers_start(&jobs[q], base + (size_t)q * 12 * MiB, src, 12 * MiB, WORKERS_DST_RESIDENT);
        for (int q = 0; q < 3; q++)
            workers_finish(&jobs[q]);
    }
    if (sysconf_calls - before > 2) {
        printf("workers: %u core-count calls for 60 copies (the thread counts are not kept)\n", sysconf_calls - before);
        return 1;
    }
    printf("workers: thread counts resolved once for 60 copies\n");

    /* The default counts follow the process's CPU affinity, not the host's core count. */
    cpu_set_t all, one;
    if (sched_getaffinity(0, sizeof all, &all) != 0)
        return 2;
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &all)) {
            CPU_SET(cpu, &one);
            break;
        }
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        return 2;
    __atomic_store_n(&parallelism, 0, __ATOMIC_RELEASE);
    unsigned bound = workers_parallelism(), bound_h2d = resident_parallelism();
    sched_setaffinity(0, sizeof all, &all);
    __atomic_store_n(&parallelism, 0, __ATOMIC_RELEASE);
    printf("workers: default threads on one allowed CPU: %u and %u for copies into the pool (%u allowed now: %u)\n",
           bound, bound_h2d, (unsigned)CPU_COUNT(&all), workers_parallelism());

    /* workers_populate with 16 threads, over a range that starts and ends inside 2 MiB blocks: every
     * page of it resident after (mincore), its bytes still zero, the pages just outside it not
     * faulted (huge pages off on the test mapping, so that residency is per page) */
    pinshim_policy.stage_threads = 16;
    __atomic_store_n(&parallelism, 0, __ATOMIC_RELEASE);
    const size_t page = 4096, map_bytes = 40 * MiB, pop_off = 3 * page, pop_bytes = 33 * MiB + 5 * page;
    unsigned char *fresh = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *resident = malloc(map_bytes / page);
    if (fresh == MAP_FAILED || !resident)
        return 2;
    madvise(fresh, map_bytes, MADV_NOHUGEPAGE);
    workers_populate(fresh + pop_off, pop_bytes);
    if (mincore(fresh, map_bytes, resident) != 0)
        return 2;
    for (size_t i = 0; i < map_bytes / page; i++) {
        bool inside = i * page >= pop_off && i * page < pop_off + pop_bytes;
        if ((resident[i] & 1) != inside) {
            printf("workers: populate left page %zu %s\n", i, inside ? "not resident" : "resident (outside the range)");
            return 1;
        }
    }
    for (size_t i = pop_off; i < pop_off + pop_bytes; i++)
        if (fresh[i] != 0) {
            printf("workers: populate wrote byte %zu\n", i);
            return 1;
        }
    printf("workers: populate faulted in %zu pages, no more\n", pop_bytes / page);
    return 0;
}
