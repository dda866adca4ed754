/* workers.h: a persistent pool of threads that memcpy large buffers in parallel, for staging.
 * The calling thread always takes part in its own copy, so a copy completes even when every worker
 * is busy with other program threads' copies (no deadlock, FIFO fairness between callers). A staged
 * copy may also be run with the caller's spinning OpenMP team (omp_team.h, workers_with_team): its
 * threads then take parts of the queued jobs in place of as many workers, which are not woken.
 * Threads start on first use, each asking for the scheduler slice of the stage_slice_us key (if
 * set); the count is the stage_threads key (calling thread included); a copy
 * into a pool chunk (WORKERS_DST_RESIDENT) is shared by at most stage_h2d_threads of them, all such
 * copies together.
 * Contract: workers_memcpy() and workers_finish() are thread-safe and return when all bytes are copied. They never call
 * CUDA. After fork() the child has no workers: workers_forget() makes it copy alone. */
#ifndef PINSHIM_WORKERS_H
#define PINSHIM_WORKERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* The most threads a copy is shared by (a thread-count key's value is capped to it). */
#define WORKERS_MAX 64

/* One copy shared by the threads; lives in the caller's memory from workers_start() until
 * workers_finish() returns. Fields are workers.c's. */
struct workers_job {
    char *dst;
    const char *src;
    size_t bytes, part;
    unsigned parts;
    bool streaming;   /* stores that bypass the cache (stream_copy.h) */
    bool aligned;     /* parts start at 2 MiB boundaries of dst (WORKERS_DST_MAY_FAULT_HUGE) */
    bool stealing;    /* an aligned copy: the parts' units may be taken by other threads (workers.c) */
    unsigned next;    /* next part to claim (atomic) */
    unsigned units;   /* what done counts up to: the parts, or with stealing their units */
    unsigned done;    /* units finished (under the lock) */
    unsigned holders; /* threads other than the owner holding a pointer to this job (under the lock) */
    bool resident;    /* WORKERS_DST_RESIDENT: only the workers that serve pool chunks take part */
    unsigned team;    /* threads of the program's OpenMP team serving as workers (workers_with_team), or 0 */
    unsigned worker_room; /* with a team: the workers that may join beside it, the copy's threads less the team */
    unsigned workers_in;  /* workers copying it now (under the lock) */
    struct workers_job *queue_next;
    pthread_cond_t finished;
    unsigned unit_next[WORKERS_MAX]; /* with stealing: each part's next unit to take (atomic) */
};

/* What the destination is, which decides the size of the parts: memory the copy may fault in
 * (the program's destination of a D2H, possibly fresh) is cut into at most one part per thread
 * (with four parts per thread, 8 staged D2H copies of 64 MiB into fresh tensors took 42-46 ms
 * against 34-36 ms in an earlier run on an H100); where it may fault in huge pages (advised by
 * hostmem/hugepage.h), at its 2 MiB block boundaries, whole blocks per part, so that no two threads
 * wait on the zeroing of one huge page; memory already resident (a pool chunk) into several parts
 * per thread. */
enum workers_dst { WORKERS_DST_RESIDENT, WORKERS_DST_MAY_FAULT, WORKERS_DST_MAY_FAULT_HUGE };

/* Values of the stage_stores key: how a copy into a pool chunk (WORKERS_DST_RESIDENT) is written. */
enum { STAGE_STORES_NORMAL, STAGE_STORES_STREAMING };

/* Copies bytes from src to dst with the workers and the calling thread; returns when done. */
void workers_memcpy(void *dst, const void *src, size_t bytes, enum workers_dst dst_kind);

/* The same in two steps, so that a caller can keep several copies going (a pipeline): start queues
 * the copy and returns at once; finish makes the caller take part (in this copy, then in other
 * queued ones while workers end theirs) and returns when every byte of j is copied. Every started
 * job must be finished, in any order. team: the threads of the caller's spinning OpenMP team that
 * may copy (workers_team_share) when the caller runs inside workers_with_team (they copy j in place
 * of as many workers, which are not woken for it), else 0. */
void workers_start(struct workers_job *j, void *dst, const void *src, size_t bytes, enum workers_dst dst_kind,
                   unsigned team);
void workers_finish(struct workers_job *j);

/* Runs body(arg) on the caller, the main thread of a spinning OpenMP team, in one parallel region
 * of the whole team whose other threads, `team` - 1 of them (workers_team_share; the caller
 * included in `team`), take parts of queued jobs as workers do until body returns, the rest
 * returning at once; body starts and finishes its jobs with `team`.
 * One region for a whole staged copy rather than one per job: a region waits for all its threads
 * to start and end, and one the scheduler kept off its core for a slice (3-4 ms on an H100 host)
 * held every region of a copy back (64 MiB fresh tensors .to("cuda"): 7-9 copies in 300 took
 * 6-31 ms against a median of 2.1, one region per 16 MiB piece). With team < 2, body(arg) alone. */
void workers_with_team(unsigned team, void (*body)(void *), void *arg);

/* How many threads of a spinning OpenMP team of `team` (the caller included) a staged copy whose
 * jobs copy into dst_kind may borrow: the team, but no more than the copy threads the keys allow
 * for such copies (stage_h2d_threads into pool chunks, stage_threads otherwise), as the workers
 * themselves are capped. Pass the result to workers_with_team and workers_start. */
unsigned workers_team_share(unsigned team, enum workers_dst dst_kind);

/* Faults [mem, mem+bytes) in for writing with the workers and the calling thread, each taking whole
 * 2 MiB blocks (a huge page where the mapping has them): for a pool slab, which one thread faulted in
 * at 2.3-4.4 GB/s (tests/bench/fault_probe.c on a 32-core H200 host; 16 threads: 4.3-43.5), while
 * the program's first large copies passed through. Returns when done. */
void workers_populate(void *mem, size_t bytes);

/* Threads that share a copy, the caller included (resolved from the policy on first use). */
unsigned workers_parallelism(void);

/* Forked child: the parent's threads do not exist here; forget them (no locks taken). */
void workers_forget(void);

#endif
