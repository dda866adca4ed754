/* ctxdev.h: the device ordinal of the calling thread's current context, for splitting copies by
 * device (summary rows, log records, the report). Cheap enough for every copy: in a process that
 * sees one device, no driver call at all (every context is on device 0: the count is asked once,
 * after the driver is initialized); otherwise one cuCtxGetCurrent, then the ordinal cached per
 * thread for that context (cuCtxGetDevice only when the thread's context changed, or after a
 * context was destroyed or reset: a new context may get an old one's address).
 * Contract: ctxdev_current() is thread-safe and lock-free, and calls the driver with the
 * reentrancy depth raised; -1 means unknown (no context in a process of several devices, no
 * driver, a forked child that had not asked). With one device it answers 0 even while no context
 * is current: a copy made then fails, and its device is never counted.
 * ctxdev_forget() from the context teardown handlers; ctxdev_fork_child() from the atfork child
 * handler (no driver calls from then on). */
#ifndef PINSHIM_CTXDEV_H
#define PINSHIM_CTXDEV_H

#include <cuda.h>
#include <stdint.h>

#include "base/common.h"
#include "base/gate.h"

/* ctxdev_current() where the process may see several devices (or has not asked yet). */
int32_t ctxdev_current_asked(void);

/* In line: a process of one device (the usual case) answers without a call, in every copy
 * handler's own lines. */
static inline __attribute__((always_inline)) int32_t ctxdev_current(void)
{
    if (PINSHIM_LIKELY(__atomic_load_n(&pinshim_gate.devices, __ATOMIC_RELAXED) == 1))
        return 0;
    return ctxdev_current_asked();
}

/* The calling thread's current context (one cuCtxGetCurrent), or NULL: none, no driver, or a
 * forked child. */
CUcontext ctxdev_current_context(void);

/* A context is about to be destroyed or a primary context reset: every thread's cache is stale. */
void ctxdev_forget(void);

void ctxdev_fork_child(void);

#endif
