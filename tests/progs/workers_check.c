/* workers_check.c: shim/stage/workers.c (compiled in here, with stream_copy.c) against memcpy.
 * For 1, 2, 3 and 16 threads, both destination kinds, destinations at offsets around 2 MiB
 * boundaries and sizes around the part thresholds: the bytes equal memcpy's, the bytes around the
 * destination are untouched, and the parts cover [0, bytes) once, in order, each part of a job cut
 * at 2 MiB boundaries (WORKERS_DST_MAY_FAULT_HUGE, two blocks or more) starting on such a boundary. Several
 * jobs are kept started at once, finished oldest first, as stage.c does; a copy into huge pages
 * has units of its blocks taken by other threads only after each block's first; workers_populate
 * faults in exactly its range; pipelines of copies, owners helping their next ones while they wait,
 * all end (a hang fails by alarm); the same copies run inside workers_with_team (one parallel
 * region of the program's OpenMP team, as stage.c runs a copy's pipeline) give the same bytes, the
 * team's other threads copying some parts. Built with -fopenmp. Prints
 * "workers: N cases identical" or the first problem and exits 1. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>

#include <omp.h>
#include <unistd.h>

/* The workers' streaming copy, wrapped to count the threads inside it at once (the cap on threads
 * sharing copies into pool chunks, stage_h2d_threads). */
#define stream_copy stream_copy_real
#include "../../shim/stage/stream_copy.c"
#undef stream_copy
static unsigned copying_now, copying_most;
static unsigned team_copies_seen; /* parts copied by threads of an OpenMP team other than its master */
void stream_copy(void *dst, const void *src, size_t n);
void stream_copy(void *dst, const void *src, size_t n)
{
    if (omp_get_thread_num() > 0)
        __atomic_add_fetch(&team_copies_seen, 1, __ATOMIC_RELAXED);
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
/* The workers' plain copies, logged while `logging` is set (each slowed down, so that every thread
 * takes part): which thread copied which bytes, when. */
#include <pthread.h>
#include <time.h>
struct copy_seen {
    const char *dst;
    size_t n;
    pthread_t thread;
    struct timespec began, ended;
};
static struct copy_seen seen[4096];
static unsigned seen_count;
static bool logging;
static void *logged_memcpy(void *dst, const void *src, size_t n)
{
    if (omp_get_thread_num() > 0)
        __atomic_add_fetch(&team_copies_seen, 1, __ATOMIC_RELAXED);
    if (!__atomic_load_n(&logging, __ATOMIC_ACQUIRE))
        return memcpy(dst, src, n);
    struct copy_seen c = {.dst = dst, .n = n, .thread = pthread_self()};
    clock_gettime(CLOCK_MONOTONIC, &c.began);
    usleep(300);
    memcpy(dst, src, n);
    clock_gettime(CLOCK_MONOTONIC, &c.ended);
    unsigned i = __atomic_fetch_add(&seen_count, 1, __ATOMIC_RELAXED);
    if (i < sizeof seen / sizeof *seen)
        seen[i] = c;
    return dst;
}
static bool before(struct timespec a, struct timespec b)
{
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

/* Unlocking, with a pause after it now and then while `jitter` is set: the windows in which
 * another thread may act between the workers' locked sections, widened (they are a few
 * instructions wide, which two cores seldom hit). */
static bool jitter;
static int jittery_unlock(pthread_mutex_t *m)
{
    int r = pthread_mutex_unlock(m);
    static __thread unsigned seed;
    if (__atomic_load_n(&jitter, __ATOMIC_RELAXED) && rand_r(&seed) % 3 == 0)
        usleep(rand_r(&seed) % 40);
    return r;
}

#define sysconf counting_sysconf
#define pthread_mutex_unlock jittery_unlock
#define sched_getaffinity counting_getaffinity
#define memcpy logged_memcpy
#include "../../shim/stage/workers.c"
#include "../../shim/stage/omp_team.c"
#undef memcpy
#undef pthread_mutex_unlock
#undef sysconf
#undef sched_getaffinity

#include "../../shim/base/util.c" /* pinshim_warn, pinshim_start_thread, the reentrancy depth */

struct policy pinshim_policy;

#define MiB ((size_t)1 << 20)
#define GUARD 256

/* The pipeline case: this many rounds, each given PIPELINE_SECONDS before it counts as hung (a
 * fixed amount of work, so a machine slowed by other load takes longer but passes alike). */
#define PIPELINE_ROUNDS 1000
#define PIPELINE_SECONDS 20
static void pipeline_hung(int sig)
{
    (void)sig;
    static const char msg[] = "workers: an owner still waits for a pipelined copy after 20 s (a lost wake-up)\n";
    write(1, msg, sizeof msg - 1);
    _exit(1);
}

/* The parts of a started job tile [0, bytes) in order; aligned ones start on 2 MiB boundaries, and
 * a job into huge pages that touches two blocks or more is aligned. */
static int check_parts(const struct workers_job *j, bool huge_kind)
{
    if (j->parts == 0)
        return 0;
    /* a job that may fault in huge pages and touches two blocks or more splits no block */
    size_t lead = (uintptr_t)j->dst % HUGEPAGE_BYTES;
    if (huge_kind && j->bytes > 0 && lead + j->bytes > HUGEPAGE_BYTES && !j->aligned) {
        printf("workers: a job of %zu bytes %zu past a 2 MiB boundary is not cut at block boundaries\n", j->bytes, lead);
        return 1;
    }
    size_t prev = 0;
    for (unsigned i = 0; i <= j->parts; i++) {
        size_t at = part_offset(j, i);
        if (at < prev || (i == j->parts && at != j->bytes)) {
            printf("workers: part %u of %u starts at %zu after %zu (bytes %zu)\n", i, j->parts, at, prev, j->bytes);
            return 1;
        }
        if (j->aligned && i > 0 && i < j->parts && ((uintptr_t)j->dst + at) % HUGEPAGE_BYTES != 0) {
            printf("workers: aligned part %u starts %zu bytes past a 2 MiB boundary\n", i,
                   (size_t)(((uintptr_t)j->dst + at) % HUGEPAGE_BYTES));
            return 1;
        }
        prev = at;
    }
    return 0;
}

/* One copy as three jobs at once over thirds of it, finished oldest first; bad: a job's parts were
 * cut wrong (said on stdout; every started job is still finished). */
struct thirds {
    unsigned char *dst;
    const unsigned char *src;
    size_t n;
    int kind;
    unsigned team;
    bool bad;
};

static void copy_in_thirds(void *arg)
{
    struct thirds *r = arg;
    struct workers_job jobs[3];
    size_t third = r->n / 3, at[4] = {0, third, 2 * third, r->n};
    for (int q = 0; q < 3; q++) {
        workers_start(&jobs[q], r->dst + at[q], r->src + at[q], at[q + 1] - at[q], r->kind, r->team);
        if (check_parts(&jobs[q], r->kind == WORKERS_DST_MAY_FAULT_HUGE))
            r->bad = true;
    }
    for (int q = 0; q < 3; q++)
        workers_finish(&jobs[q]);
}

/* Three 12 MiB copies into resident memory at once, started with `team` (0, or the
 * team's share inside workers_with_team). */
struct resident_copies {
    unsigned char *dst;
    const unsigned char *src;
    unsigned team;
};

static void copy_resident_thirds(void *arg)
{
    struct resident_copies *r = arg;
    struct workers_job jobs[3];
    for (int q = 0; q < 3; q++)
        workers_start(&jobs[q], r->dst + (size_t)q * 12 * MiB, r->src, 12 * MiB, WORKERS_DST_RESIDENT, r->team);
    for (int q = 0; q < 3; q++)
        workers_finish(&jobs[q]);
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
    /* the last round again with the program's OpenMP team copying (omp_team.h): this program is
     * built with -fopenmp, so libgomp is loaded and its team takes parts beside the workers */
    unsigned team = have_runtime() ? (unsigned)omp_get_max_threads() : 0;
    if (!team) {
        printf("workers: the OpenMP runtime this program links was not found\n");
        return 1;
    }
    for (size_t t = 0; t <= sizeof thread_counts / sizeof *thread_counts; t++) {
        bool with_team = t == sizeof thread_counts / sizeof *thread_counts;
        unsigned threads = thread_counts[with_team ? t - 1 : t];
        /* workers.c resolves its thread count once: reset it per round (no job is queued here) */
        pinshim_policy.stage_threads = threads;
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
                        struct thirds r = {dst, src, n, kind, with_team ? team : 0, false};
                        if (with_team) /* as stage.c runs a copy's pipeline with the team */
                            workers_with_team(team, copy_in_thirds, &r);
                        else
                            copy_in_thirds(&r);
                        if (r.bad)
                            return 1;
                        if (memcmp(dst - GUARD, want, n + 2 * GUARD) != 0) {
                            printf("workers: differs from memcpy: %u threads%s, kind %d, streaming %d, dst offset %zu, "
                                   "%zu bytes\n", threads, with_team ? " and the OpenMP team" : "", kind, streaming,
                                   off, n);
                            return 1;
                        }
                    }
            }
    }
    if (team > 1 && !__atomic_load_n(&team_copies_seen, __ATOMIC_RELAXED)) {
        printf("workers: the OpenMP team's threads copied no part (team of %u)\n", team);
        return 1;
    }
    printf("workers: %u cases identical (the last %u with an OpenMP team of %u)\n", cases, cases / 5, team);

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
        struct resident_copies alone = {base, src, 0};
        copy_resident_thirds(&alone);
        unsigned most = __atomic_load_n(&copying_most, __ATOMIC_RELAXED);
        if (most > h2d_caps[c] || most < (h2d_caps[c] > 3 ? 4 : 2)) { /* the cap, and threads did join */
            printf("workers: %u threads copied into resident memory at once with stage_h2d_threads = %u\n", most,
                   h2d_caps[c]);
            return 1;
        }
        printf("workers: at most %u of 8 threads at once into resident memory with stage_h2d_threads = %u\n", most,
               h2d_caps[c]);
    }

    /* The same three copies inside a region of an OpenMP team of 8 with stage_h2d_threads = 3: the
     * team's threads stand for workers, so no more of them copy at once than the key allows
     * (workers_team_share), and some besides the owner do. */
    omp_set_num_threads(8);
    pinshim_policy.stage_h2d_threads = 3;
    __atomic_store_n(&parallelism, 0, __ATOMIC_RELEASE);
    workers_memcpy(base, src, 4 * MiB, WORKERS_DST_MAY_FAULT); /* the workers see the new cap */
    __atomic_store_n(&copying_most, 0, __ATOMIC_RELAXED);
    unsigned seen_before = __atomic_load_n(&team_copies_seen, __ATOMIC_RELAXED);
    struct resident_copies rc = {base, src, workers_team_share(8, WORKERS_DST_RESIDENT)};
    workers_with_team(rc.team, copy_resident_thirds, &rc);
    unsigned most = __atomic_load_n(&copying_most, __ATOMIC_RELAXED);
    if (memcmp(base, src, 12 * MiB) != 0 || memcmp(base + 24 * MiB, src, 12 * MiB) != 0) {
        printf("workers: copies with a capped OpenMP team differ from memcpy\n");
        return 1;
    }
    if (rc.team != 3 || most > 3 || __atomic_load_n(&team_copies_seen, __ATOMIC_RELAXED) == seen_before) {
        printf("workers: an OpenMP team of 8 lent %u threads, %u copied into resident memory at once, with "
               "stage_h2d_threads = 3\n", rc.team, most);
        return 1;
    }
    printf("workers: an OpenMP team of 8 lends 3 threads with stage_h2d_threads = 3, at most %u copying at once\n",
           most);
    omp_set_num_threads(team);

    /* Stealing: 16 threads, one copy of 8 whole 2 MiB blocks into memory that may fault in huge
     * pages, each unit slowed down: 8 threads claim a block each and the others take units of
     * begun blocks, so some block is copied by more than one thread, yet no unit of a block starts
     * before the unit that begins the block has ended (that one faults the huge page in). */
    pinshim_policy.stage_threads = 16;
    __atomic_store_n(&parallelism, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&logging, true, __ATOMIC_RELEASE);
    workers_memcpy(base, src, 16 * MiB, WORKERS_DST_MAY_FAULT_HUGE);
    __atomic_store_n(&logging, false, __ATOMIC_RELEASE);
    if (memcmp(base, src, 16 * MiB) != 0) {
        printf("workers: a copy with stealing differs from memcpy\n");
        return 1;
    }
    unsigned shared_blocks = 0, seen_n = seen_count < 4096 ? seen_count : 4096;
    for (size_t b = 0; b < 8; b++) {
        const char *block = (const char *)base + b * 2 * MiB;
        struct copy_seen *first = NULL;
        for (unsigned i = 0; i < seen_n; i++)
            if (seen[i].dst == block)
                first = &seen[i];
        if (!first) {
            printf("workers: no copy began block %zu\n", b);
            return 1;
        }
        bool shared = false;
        for (unsigned i = 0; i < seen_n; i++) {
            if (seen[i].dst <= block || seen[i].dst >= block + 2 * MiB)
                continue;
            if (before(seen[i].began, first->ended)) {
                printf("workers: a unit of block %zu began before the block's first unit ended\n", b);
                return 1;
            }
            shared |= !pthread_equal(seen[i].thread, first->thread);
        }
        shared_blocks += shared;
    }
    if (shared_blocks == 0) {
        printf("workers: no block of a copy into huge pages was shared by two threads (no stealing)\n");
        return 1;
    }
    printf("workers: stealing: %u of 8 blocks copied by more than one thread, each after its first unit\n",
           shared_blocks);

    /* Default thread counts (0: from the cores): resolved once for any number of copies. */
    pinshim_policy.stage_threads = 0;
    pinshim_policy.stage_h2d_threads = 0;
    __atomic_store_n(&parallelism, 0, __ATOMIC_RELEASE);
    unsigned before = sysconf_calls;
    for (int round = 0; round < 20; round++) {
        struct resident_copies alone = {base, src, 0};
        copy_resident_thirds(&alone);
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

    /* Pipelines of short copies, 16 threads, pauses after unlocking: the owner waiting for its
     * oldest copy helps with its next ones, and may find the part it went for taken by a worker
     * meanwhile; it must not then wait for a wake-up already given (a staged fresh tensor
     * .to("cuda") hung in 3 of 6 processes on an H200 that way). Rounds alternate between copies
     * into resident memory (as H2D staging makes) and into huge pages (as a D2H's copy-out does:
     * whole blocks, units taken by idle threads). A hang ends in the alarm. */
    pinshim_policy.stage_threads = 16;
    pinshim_policy.stage_h2d_threads = 16;
    pinshim_policy.stage_stores = STAGE_STORES_NORMAL;
    __atomic_store_n(&parallelism, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&jitter, true, __ATOMIC_RELAXED);
    signal(SIGALRM, pipeline_hung);
    for (unsigned rounds = 0; rounds < PIPELINE_ROUNDS; rounds++) {
        alarm(PIPELINE_SECONDS);
        /* odd rounds: copies into huge pages, three blocks each (whole-block parts, units stolen) */
        bool huge = rounds % 2;
        size_t n = huge ? 4 * MiB : MiB, stride = huge ? 6 * MiB : MiB;
        unsigned char *at = huge ? base + 4096 : base + 24 * MiB;
        struct workers_job jobs[3];
        for (int q = 0; q < 3; q++)
            workers_start(&jobs[q], at + q * stride, src + q * n, n,
                          huge ? WORKERS_DST_MAY_FAULT_HUGE : WORKERS_DST_RESIDENT, 0);
        for (int q = 0; q < 3; q++)
            workers_finish(&jobs[q]);
    }
    alarm(0);
    __atomic_store_n(&jitter, false, __ATOMIC_RELAXED);
    for (int q = 0; q < 3; q++)
        if (memcmp(base + 4096 + (size_t)q * 6 * MiB, src + (size_t)q * 4 * MiB, 4 * MiB) != 0 ||
            memcmp(base + 24 * MiB + (size_t)q * MiB, src + (size_t)q * MiB, MiB) != 0) {
            printf("workers: a pipelined copy differs from memcpy\n");
            return 1;
        }
    printf("workers: pipelines of 3 copies with 16 threads, every one ended (%u rounds)\n", PIPELINE_ROUNDS);
    return 0;
}
