/* workers.c: the parallel memcpy behind staging (see workers.h). A copy is one job split into
 * parts of at least WORKERS_MIN_PART bytes (into huge pages: whole 2 MiB blocks, whose later units
 * threads with nothing else to do take once the block is begun: "stealing" below); jobs wait in a
 * FIFO queue; workers and the caller claim parts with an atomic counter. A job lives in its caller's
 * memory: the caller leaves workers_finish only when every byte is copied and no other thread still
 * holds a reference to it, and takes the job out of the queue then; while it waits it copies parts
 * of later jobs (its own next chunks in a pipeline). A job without a source faults its destination
 * in instead (workers_populate). */
#define _GNU_SOURCE
#include "workers.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "base/common.h"
#include "hostmem/hugepage.h"
#include "omp_team.h"
#include "policy.h"
#include "stream_copy.h"

/* Parts smaller than this are not worth a thread hand-off (a wake-up costs microseconds). */
#define WORKERS_MIN_PART (256u << 10)
/* Parts per thread into resident memory: several, so that a thread the scheduler preempts in the
 * middle of a part (the cores are often busy with the program's own threads, e.g. OpenMP threads
 * spinning after a parallel region) holds back only a small piece while the others take the rest. */
#define WORKERS_PARTS_PER_THREAD 4
/* A destination that may fault in huge pages is cut at the boundaries of its 2 MiB blocks
 * (HUGEPAGE_BYTES), each part whole blocks, so that no thread waits on the zeroing of a huge page
 * another thread faulted in. Cut in equal parts instead (a timeline of 24 staged 64 MiB D2H copies
 * into fresh PyTorch tensors on an H200), the 2 MiB first piece went to 8 threads meeting in one
 * block's fault, 0.35-0.4 ms for each 256 KiB part, and each 16 MiB chunk's last part, two blocks
 * where the tensor did not start on a boundary, took twice as long as the others. (Cutting
 * 4 KiB-page destinations at these boundaries too, for the page-table lock, made 8 staged D2H
 * copies of 64 MiB into fresh tensors take 62-69 ms against 32-42 on an H200: fewer, larger parts
 * leave threads idle while the last part of a chunk ends.) */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_ready = PTHREAD_COND_INITIALIZER;     /* where workers that copy no H2D wait */
static pthread_cond_t resident_ready = PTHREAD_COND_INITIALIZER; /* where the others wait */
static struct workers_job *queue_head, *queue_tail;
static unsigned started;
#define WORKERS_DEFAULT_MAX 32     /* stage_threads = 0: one per usable core, at most this many */
#define WORKERS_H2D_DEFAULT_MAX 16 /* stage_h2d_threads = 0: likewise, at most this many */
static unsigned parallelism, resident_threads; /* resolved together, once: see workers_parallelism() */
static bool start_failed;

/* The cores this process may run on: its CPU affinity (a rank of a job bound to some cores by
 * Slurm, numactl or taskset gets threads for those, not for the whole host), else the online ones. */
static long usable_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    return sysconf(_SC_NPROCESSORS_ONLN);
}

/* A thread-count key's value: 0 = the usable cores, at most `cap`; never above WORKERS_MAX. */
static unsigned threads_from(uint64_t want, uint64_t cap)
{
    if (want == 0) {
        long cores = usable_cores();
        want = cores < 1 ? 1 : (uint64_t)cores;
        if (want > cap)
            want = cap;
    }
    return want > WORKERS_MAX ? WORKERS_MAX : (unsigned)want;
}

/* Both thread counts, resolved on first use and kept: they are read for every copy and by every
 * worker looking at the queue (resolving them each time called sysconf, which reads a sysfs file). */
unsigned workers_parallelism(void)
{
    unsigned p = __atomic_load_n(&parallelism, __ATOMIC_ACQUIRE);
    if (p)
        return p;
    /* measured: 16 threads beat 4 and 8 on 16 cores (tests/bench/run_staging.sh); on 32 cores (an
     * H200 host) 32 threads took D2H copies into fresh memory from 32-39 ms to 24-26 */
    p = threads_from(pinshim_policy.stage_threads, WORKERS_DEFAULT_MAX);
    unsigned resident = threads_from(pinshim_policy.stage_h2d_threads, WORKERS_H2D_DEFAULT_MAX);
    __atomic_store_n(&resident_threads, resident < p ? resident : p, __ATOMIC_RELAXED);
    __atomic_store_n(&parallelism, p, __ATOMIC_RELEASE);
    return p;
}

/* Threads sharing the copies into pool chunks (H2D): fewer than into fresh destinations, whose
 * page faults scale with threads. A copy into resident memory is bound by memory bandwidth, and
 * where the program's threads are busy (OpenMP threads spinning after a parallel region) more
 * threads of ours mostly get preempted holding parts. Fresh PyTorch tensors .to("cuda") on the
 * 32-core H200 host, one run, 5 rounds (ms, 64 MiB / 1 GiB): 8 threads 2.89 / 36.2, 32 threads
 * 6.68 / 30.4, before the cap (31 workers) 3.58 / 58.9; another run: 8 threads 2.97 / 26.4, 16
 * threads 3.0 / 26.2, 32 threads 4.85 / 27.8. On the 16-core H100 host (compare_builds.py, 3
 * rounds, 2026-11-25), 8 against 16 threads: 64 MiB 3.71 / 3.58, 1 GiB 30.9 / 27.8; with
 * OMP_WAIT_POLICY=passive 2.09 / 1.83 and 27.1 / 23.6. Hence at most 16. */
static unsigned resident_parallelism(void)
{
    workers_parallelism();
    return __atomic_load_n(&resident_threads, __ATOMIC_RELAXED);
}

/* A populate job's part (src NULL): one madvise where the kernel has MADV_POPULATE_WRITE, else a
 * write per page. The system call itself: the shim's hook on madvise watches the program's advice. */
static void populate_bytes(char *mem, size_t n)
{
    if (syscall(SYS_madvise, mem, n, MADV_POPULATE_WRITE) == 0)
        return;
    for (size_t off = 0; off < n; off += 4096)
        ((volatile char *)mem)[off] = 0;
}

static void copy_bytes(const struct workers_job *j, char *dst, const char *src, size_t n)
{
    if (!j->src)
        populate_bytes(dst, n);
    else if (j->streaming)
        stream_copy(dst, src, n);
    else
        memcpy(dst, src, n);
}

/* The first 2 MiB block boundary at or below p. */
static uintptr_t block_floor(uintptr_t p) { return p & ~(HUGEPAGE_BYTES - 1); }

/* Where part `index` starts: index * part from dst, or, when the job has aligned parts, from the
 * block boundary at or below dst (so every later part starts on a boundary); part 0 starts at 0 and
 * the last ends at bytes either way. */
static size_t part_offset(const struct workers_job *j, unsigned index)
{
    if (index == 0)
        return 0;
    if (index >= j->parts)
        return j->bytes;
    size_t offset = (size_t)index * j->part;
    if (j->aligned)
        offset -= (uintptr_t)j->dst - block_floor((uintptr_t)j->dst);
    return offset < j->bytes ? offset : j->bytes;
}

/* Stealing. A copy into huge pages is cut into whole blocks (above) so that no two threads meet in
 * one block's fault; but then a part is long (a 2 MiB block into a fresh huge page took 0.5-1 ms
 * with 16 threads copying) and the last parts of a copy end one by one while the other threads
 * idle. So each part is copied in units of STEAL_UNIT: the thread that claims a part takes its units
 * in order, and once it has taken its second unit (its first, which faulted the block in, is done)
 * a thread with nothing else to do may take the part's next unit. */
#define STEAL_UNIT WORKERS_MIN_PART
static unsigned sleepers; /* workers waiting for work (atomic; changed under the lock) */
static unsigned posted;   /* jobs queued and parts opened to stealing in a team's jobs (atomic): what
                           * team helpers watch (workers_with_team) */

static unsigned part_units(const struct workers_job *j, unsigned index)
{
    if (!j->stealing)
        return 1;
    size_t bytes = part_offset(j, index + 1) - part_offset(j, index);
    return (unsigned)((bytes + STEAL_UNIT - 1) / STEAL_UNIT);
}

static void copy_unit(struct workers_job *j, unsigned index, unsigned unit)
{
    size_t from = part_offset(j, index), to = part_offset(j, index + 1);
    if (j->stealing) {
        from += (size_t)unit * STEAL_UNIT;
        if (to - from > STEAL_UNIT)
            to = from + STEAL_UNIT;
    }
    copy_bytes(j, j->dst + from, j->src + from, to - from);
}

/* A part became one whose units others may take: wake the workers waiting for work (best effort:
 * one that is about to wait misses it and waits for the next copy, as before stealing). All of
 * them, not one: waking one per part left a fresh 4 MiB copy (three parts) to fewer threads,
 * 0.85 ms against 0.61 before stealing (torch_fresh_d2h.py, 4 rounds on an H200), where waking all
 * made it 0.67 against 0.75; 8 x 64 MiB copies gained the same either way. */
static void announce_stealable(void)
{
    if (!__atomic_load_n(&sleepers, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&lock);
    pthread_cond_broadcast(&work_ready);
    pthread_cond_broadcast(&resident_ready);
    pthread_mutex_unlock(&lock);
}

/* Copies what is left of part `index`, which this thread claimed; returns the units it copied. */
static unsigned work_part(struct workers_job *j, unsigned index)
{
    if (!j->stealing) {
        copy_unit(j, index, 0);
        return 1;
    }
    unsigned n = part_units(j, index), mine = 0;
    for (unsigned unit; (unit = __atomic_fetch_add(&j->unit_next[index], 1, __ATOMIC_RELAXED)) < n; mine++) {
        if (unit == 1 && n > 2) {
            if (j->team) /* the team's threads watch the count, spinning */
                __atomic_add_fetch(&posted, 1, __ATOMIC_RELEASE);
            else
                announce_stealable();
        }
        copy_unit(j, index, unit);
    }
    return mine;
}

/* The claimed part of j with the most units left that others may take (its owner past its first
 * unit), or -1. */
static int part_to_steal(struct workers_job *j)
{
    if (!j->stealing)
        return -1;
    unsigned claimed = __atomic_load_n(&j->next, __ATOMIC_RELAXED), most = 0;
    int best = -1;
    for (unsigned p = 0; p < claimed && p < j->parts; p++) {
        unsigned taken = __atomic_load_n(&j->unit_next[p], __ATOMIC_RELAXED), n = part_units(j, p);
        if (taken >= 2 && taken < n && n - taken > most) {
            most = n - taken;
            best = (int)p;
        }
    }
    return best;
}

/* Takes and copies one unit of a part of j that others may take; false when there is none. */
static bool steal_unit(struct workers_job *j)
{
    for (int p; (p = part_to_steal(j)) >= 0;) {
        unsigned unit = __atomic_fetch_add(&j->unit_next[p], 1, __ATOMIC_RELAXED);
        if (unit < part_units(j, (unsigned)p)) {
            copy_unit(j, (unsigned)p, unit);
            return true;
        }
    }
    return false;
}

/* Whether j has bytes no thread has taken yet. */
static bool has_untaken(struct workers_job *j)
{
    if (__atomic_load_n(&j->next, __ATOMIC_RELAXED) < j->parts)
        return true;
    for (unsigned p = 0; j->stealing && p < j->parts; p++)
        if (__atomic_load_n(&j->unit_next[p], __ATOMIC_RELAXED) < part_units(j, p))
            return true;
    return false;
}

/* One part of j to claim, else one unit to take; returns the units copied (0: none was left; a
 * claimed part gives at least its first unit, which no other thread takes). */
static unsigned take_one(struct workers_job *j)
{
    unsigned index = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
    return index < j->parts ? work_part(j, index) : steal_unit(j);
}

/* Claims and copies parts until none is left, then takes units of others' parts; returns the
 * units this thread copied. */
static unsigned drain(struct workers_job *j)
{
    unsigned mine = 0;
    for (unsigned copied; (copied = take_one(j)) > 0;)
        mine += copied;
    return mine;
}

/* Removes j from the queue if it is still there. Caller holds the lock. */
static void unqueue(struct workers_job *j)
{
    struct workers_job **link = &queue_head, *prev = NULL;
    while (*link && *link != j) {
        prev = *link;
        link = &(*link)->queue_next;
    }
    if (!*link)
        return;
    *link = j->queue_next;
    if (queue_tail == j)
        queue_tail = prev;
}

/* Whether worker `index` copies into pool chunks: the first stage_h2d_threads - 1 workers do (the
 * caller of each copy makes up the count); the others never take such a copy and are never woken
 * for one, so a new H2D piece wakes no worker that could not take part in it. */
static bool serves_resident(unsigned index) { return index + 1 < resident_parallelism(); }

/* The first queued job this thread may join with a part left to claim, else the first with a
 * unit to take; jobs with nothing left to take leave the queue on the way. A worker (as_worker)
 * skips a team's job that has as many workers in it as its room beside the team: not waking workers
 * for it is not enough, since a worker still awake from an earlier copy would join it too (a team
 * of 3 with stage_h2d_threads = 3 had 4 or 5 threads copying at once in 5 of 60 runs of
 * tests/progs/workers_check.c). Lock held. */
static struct workers_job *job_to_join(bool resident_ok, bool as_worker)
{
    struct workers_job *j = queue_head, *steal = NULL;
    while (j) {
        struct workers_job *next = j->queue_next;
        if (!has_untaken(j))
            unqueue(j);
        else if ((j->resident && !resident_ok) || (as_worker && j->team && j->workers_in >= j->worker_room))
            ;
        else if (__atomic_load_n(&j->next, __ATOMIC_RELAXED) < j->parts)
            return j;
        else if (!steal && part_to_steal(j) >= 0)
            steal = j;
        j = next;
    }
    return steal;
}

/* A thread other than j's owner (a worker, or another job's owner helping while it waits) takes
 * hold of j, or lets go of it having copied `copied` of its units (parts, where it has no
 * stealing). Lock held. */
static void hold(struct workers_job *j) { j->holders++; }

static void let_go(struct workers_job *j, unsigned copied)
{
    j->done += copied;
    j->holders--;
    if (j->done == j->units && j->holders == 0)
        pthread_cond_signal(&j->finished);
}

/* Holds j, copies what `take` takes of it with the lock let go, and lets go of j. Lock held on
 * entry and on return. */
static void work_unlocked(struct workers_job *j, unsigned (*take)(struct workers_job *))
{
    hold(j);
    pthread_mutex_unlock(&lock);
    unsigned copied = take(j);
    pthread_mutex_lock(&lock);
    let_go(j, copied);
}

/* sched_setattr's argument, as the kernel defines it (its first version: 48 bytes); glibc before
 * 2.41 declares neither the call nor the structure. */
struct sched_attr_v0 {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
};

/* The calling worker asks for the scheduler slice of stage_slice_us, keeping its nice value; only
 * under the ordinary policy (a program run under SCHED_BATCH, SCHED_IDLE or a real-time policy
 * keeps its choice for our threads too). Refused: one warning, the kernel's slice. */
static void ask_for_slice(void)
{
    uint64_t us = pinshim_policy.stage_slice_us;
    if (!us || sched_getscheduler(0) != SCHED_OTHER)
        return;
    if (us > 100000)
        us = 100000; /* the kernel's own bound, before the multiplication below could wrap */
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    struct sched_attr_v0 attr = {.size = sizeof attr, .sched_policy = SCHED_OTHER,
                                 .sched_nice = errno ? 0 : nice, .sched_runtime = us * 1000};
    if (syscall(SYS_sched_setattr, 0, &attr, 0) == 0)
        return;
    static bool warned;
    if (!__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
        pinshim_warn("warning: stage_slice_us: the kernel refused a slice of %llu us for the staging threads (%s); "
                     "they keep its own", (unsigned long long)us, strerror(errno));
}

static void *worker_main(void *arg)
{
    unsigned index = (unsigned)(uintptr_t)arg;
    pinshim_enter(); /* a worker never makes a copy the shim should count */
    ask_for_slice();
    pthread_mutex_lock(&lock);
    for (;;) {
        struct workers_job *j;
        bool resident_ok;
        while (!(j = job_to_join(resident_ok = serves_resident(index), true))) {
            __atomic_add_fetch(&sleepers, 1, __ATOMIC_RELAXED);
            pthread_cond_wait(resident_ok ? &resident_ready : &work_ready, &lock);
            __atomic_sub_fetch(&sleepers, 1, __ATOMIC_RELAXED);
        }
        j->workers_in++;
        work_unlocked(j, drain);
        j->workers_in--; /* the lock held since let_go: j's owner has not seen it finished yet */
    }
    return NULL;
}

/* Starts the worker threads once (caller holds the lock). Failure leaves the caller copying alone. */
static void start_workers(void)
{
    unsigned want = workers_parallelism() - 1;
    while (started < want && !start_failed) {
        int r = pinshim_start_thread("pinshim-stage", worker_main, (void *)(uintptr_t)started, NULL);
        if (r != 0) {
            start_failed = true;
            pinshim_warn("warning: could not start staging worker threads (%d running); copying with fewer", started);
            break;
        }
        started++;
    }
}

/* Tries to copy one part or one unit of the job a worker would join (job_to_join), this caller's
 * own job included (its owner helps it end). Lock held on entry and on return. False when there was
 * nothing to try; true when it tried, copied or not: it let go of the lock meanwhile, so the
 * caller's condition may have changed and its wake-up been given (an owner that went on to wait
 * after a try that found its part taken waited for ever: a staged fresh tensor .to("cuda") hung in
 * 3 of 6 processes on an H200). */
static bool help_locked(void)
{
    struct workers_job *o = job_to_join(true, false);
    if (!o)
        return false;
    work_unlocked(o, take_one);
    return true;
}

/* A staged copy run with the caller's OpenMP team (workers_with_team). */
struct team_session {
    void (*body)(void *);
    void *arg;
    unsigned helpers;      /* the team's threads besides the owner that may take parts */
    unsigned helpers_seen; /* helpers that have started (atomic): those past `helpers` only return */
    bool over;             /* body returned (atomic) */
};

static void team_owner(void *arg)
{
    struct team_session *t = arg;
    t->body(t->arg);
    __atomic_store_n(&t->over, true, __ATOMIC_RELEASE);
}

/* While a helper finds nothing to take, it looks at the queue again when `posted` changes, and
 * at the latest after this many pauses (tens of microseconds: pinshim_pause), in case a change
 * was missed. */
#define TEAM_IDLE_SPINS 2000

/* Another thread of the team: takes parts of queued jobs, as a worker does, until the owner's body
 * has returned (by then the owner's own jobs are all done). Spins rather than sleeps: the program
 * left these threads spinning, and they spin on after the region anyway. */
static void team_helper(void *arg)
{
    struct team_session *t = arg;
    if (__atomic_fetch_add(&t->helpers_seen, 1, __ATOMIC_RELAXED) >= t->helpers)
        return; /* the team is larger than the copy threads allowed: this one waits out the region */
    pinshim_enter();
    while (!__atomic_load_n(&t->over, __ATOMIC_ACQUIRE)) {
        unsigned seen = __atomic_load_n(&posted, __ATOMIC_ACQUIRE);
        pthread_mutex_lock(&lock);
        for (struct workers_job *j; (j = job_to_join(true, false)) && !__atomic_load_n(&t->over, __ATOMIC_RELAXED);)
            work_unlocked(j, drain);
        pthread_mutex_unlock(&lock);
        for (int i = 0; i < TEAM_IDLE_SPINS && __atomic_load_n(&posted, __ATOMIC_ACQUIRE) == seen &&
                        !__atomic_load_n(&t->over, __ATOMIC_ACQUIRE);
             i++)
            pinshim_pause();
    }
    pinshim_leave();
}

void workers_with_team(unsigned team, void (*body)(void *), void *arg)
{
    if (team < 2) {
        body(arg);
        return;
    }
    struct team_session t = {body, arg, team - 1, 0, false};
    omp_team_run(team_owner, team_helper, &t);
}

unsigned workers_team_share(unsigned team, enum workers_dst dst_kind)
{
    unsigned most = dst_kind == WORKERS_DST_RESIDENT ? resident_parallelism() : workers_parallelism();
    return team < most ? team : most;
}

void workers_start(struct workers_job *j, void *dst, const void *src, size_t bytes, enum workers_dst dst_kind,
                   unsigned team)
{
    unsigned threads = dst_kind == WORKERS_DST_RESIDENT ? resident_parallelism() : workers_parallelism();
    /* the 2 MiB blocks [dst, dst + bytes) touches, whole or in part */
    size_t blocks = (block_floor((uintptr_t)dst + bytes - 1) - block_floor((uintptr_t)dst)) / HUGEPAGE_BYTES + 1;
    bool aligned = dst_kind == WORKERS_DST_MAY_FAULT_HUGE && bytes > 0 && blocks >= 2;
    size_t parts = aligned ? blocks : bytes / WORKERS_MIN_PART;
    size_t most = (size_t)threads * (dst_kind == WORKERS_DST_RESIDENT ? WORKERS_PARTS_PER_THREAD : 1);
    if (parts > most)
        parts = most;
    *j = (struct workers_job){.dst = dst, .src = src, .bytes = bytes, .resident = dst_kind == WORKERS_DST_RESIDENT,
                              .streaming = dst_kind == WORKERS_DST_RESIDENT &&
                                           pinshim_policy.stage_stores == STAGE_STORES_STREAMING,
                              .aligned = aligned};
    if (parts < 2 || threads < 2) {
        j->parts = 0; /* too small to share: the owner copies it alone in workers_finish */
        return;
    }
    if (aligned) /* whole blocks per part, counted from the block dst lies in (see part_offset) */
        j->part = (blocks + parts - 1) / parts * HUGEPAGE_BYTES;
    else
        j->part = ((bytes + parts - 1) / parts + 63) & ~(size_t)63; /* cache-line aligned part boundaries */
    j->parts = (unsigned)(aligned ? (blocks * HUGEPAGE_BYTES + j->part - 1) / j->part : (bytes + j->part - 1) / j->part);
    if (j->parts < 2) {
        j->parts = 0;
        return;
    }
    j->stealing = aligned && src; /* not a populate job: its first touch faults the whole block */
    j->units = j->stealing ? 0 : j->parts;
    for (unsigned p = 0; j->stealing && p < j->parts; p++) { /* parts <= threads <= WORKERS_MAX */
        j->unit_next[p] = 0;
        j->units += part_units(j, p);
    }
    pthread_cond_init(&j->finished, NULL);
    j->team = team;
    j->worker_room = team < threads ? threads - team : 0;

    pthread_mutex_lock(&lock);
    start_workers();
    if (queue_tail)
        queue_tail->queue_next = j;
    else
        queue_head = j;
    queue_tail = j;
    __atomic_add_fetch(&posted, 1, __ATOMIC_RELEASE);
    if (j->resident) { /* only the workers that copy into pool chunks, as many as may take part */
        unsigned wake = j->parts - 1 < threads - 1 ? j->parts - 1 : threads - 1;
        if (j->team) /* the team's threads besides the owner stand for as many workers */
            wake = wake > j->team - 1 ? wake - (j->team - 1) : 0;
        for (; wake > 0; wake--)
            pthread_cond_signal(&resident_ready);
    } else if (j->team < workers_parallelism()) { /* a team as large as the workers: none woken */
        pthread_cond_broadcast(&work_ready);
        pthread_cond_broadcast(&resident_ready);
    }
    pthread_mutex_unlock(&lock);
}

void workers_finish(struct workers_job *j)
{
    if (j->parts == 0) {
        copy_bytes(j, j->dst, j->src, j->bytes);
        return;
    }
    unsigned mine = drain(j);
    pthread_mutex_lock(&lock);
    j->done += mine;
    /* While workers end their parts of j, take parts of later copies (this caller's next chunks),
     * or units of begun parts, looking at the condition again after each try; wait only when there
     * is nothing to try. j stays queued for those who take its units until none is left. */
    while (j->done < j->units || j->holders > 0)
        if (!help_locked())
            pthread_cond_wait(&j->finished, &lock);
    unqueue(j);
    pthread_mutex_unlock(&lock);
    pthread_cond_destroy(&j->finished);
}

void workers_memcpy(void *dst, const void *src, size_t bytes, enum workers_dst dst_kind)
{
    struct workers_job j;
    workers_start(&j, dst, src, bytes, dst_kind, 0);
    workers_finish(&j);
}

void workers_populate(void *mem, size_t bytes)
{
    workers_memcpy(mem, NULL, bytes, WORKERS_DST_MAY_FAULT_HUGE);
}

void workers_forget(void)
{
    pthread_mutex_t fresh_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
    lock = fresh_lock;
    work_ready = fresh_cond;
    resident_ready = fresh_cond;
    queue_head = queue_tail = NULL;
    started = 0;
    start_failed = false;
    sleepers = 0;
}
