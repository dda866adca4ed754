/* workers.h: a persistent pool of threads that memcpy large buffers in parallel, for staging.
 * The calling thread always takes part in its own copy, so a copy completes even when every worker
 * is busy with other program threads' copies (no deadlock, FIFO fairness between callers).
 * Threads start on first use; the count is the stage_threads key (calling thread included).
 * Contract: workers_memcpy() is thread-safe and returns when all bytes are copied. It never calls
 * CUDA. After fork() the child has no workers: workers_forget() makes it copy alone. */
#ifndef PINSHIM_WORKERS_H
#define PINSHIM_WORKERS_H

#include <stddef.h>

void workers_memcpy(void *dst, const void *src, size_t bytes);

/* Threads that share a copy, the caller included (resolved from the policy on first use). */
unsigned workers_parallelism(void);

/* Forked child: the parent's threads do not exist here; forget them (no locks taken). */
void workers_forget(void);

#endif
