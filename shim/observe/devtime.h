/* devtime.h: how long sampled copies took on the device, from a pair of events recorded around
 * the copy on its own stream (device_timing = on, one copy in device_timing_every).
 * The copy path only records the events; whether they completed is asked later, by the log's
 * writer, with cuEventQuery (never a synchronize), so no program thread ever waits for the GPU.
 * Event pairs are recycled per context (at most DEVTIME_MAX_PAIRS exist).
 * Contract: devtime_begin/devtime_end run on the copying thread and call the driver with the
 * reentrancy depth raised; devtime_poll/devtime_release may run on any thread. Nothing here calls
 * the driver in a forked child (devtime_fork_child forgets the pairs without destroying them). */
#ifndef PINSHIM_DEVTIME_H
#define PINSHIM_DEVTIME_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

struct devtime;

/* Before a copy on `stream`: a recorded start event when this copy is sampled, else NULL. */
struct devtime *devtime_begin(CUstream stream);

/* After the copy: records the end event and returns d, or recycles d and returns NULL when the
 * copy failed or the record did. d may be NULL. */
struct devtime *devtime_end(struct devtime *d, CUstream stream, bool copy_ok);

/* 1: done, *ns is the device duration; 0: not complete yet; -1: cannot be measured. */
int devtime_poll(struct devtime *d, uint64_t *ns);

/* Gives the pair back for reuse. */
void devtime_release(struct devtime *d);

/* Forked child: forget every pair (they belong to the parent's contexts) and stop sampling. */
void devtime_fork_child(void);

/* A context is about to be destroyed (ctx), or a primary context reset (ctx NULL: every free pair
 * goes): free pairs of events created there are destroyed while it exists. Pairs still waiting for
 * the writer are not covered (their copies ran in the dying context: rare, and documented). */
void devtime_forget_context(CUcontext ctx);

#endif
