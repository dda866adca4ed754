/* earlier_work.h: a staged async H2D larger than the driver's own pageable staging returns, as the
 * driver's does, only once the work queued on its stream before it is done. The real driver holds
 * up to 2 MiB of a pageable async H2D in its staging memory and returns at once; a larger one
 * returns only after the stream's earlier work (an H100, driver 580: 2 MiB before, 2.25 MiB after,
 * on every stream kind and 1D or 2D; tests/conformance, streams.async_behind_gate). A program may
 * lean on that wait (reading what an earlier async D2H wrote), so the shim keeps it; its memcpys
 * still overlap that work.
 * Contract: earlier_work_mark() before the copy's first DMA is queued, earlier_work_wait() after
 * its last; both on the copying thread, outside capture, never in a forked child. The event is the
 * thread's own, kept for the thread's life (one per context it stages in at a time). */
#ifndef PINSHIM_EARLIER_WORK_H
#define PINSHIM_EARLIER_WORK_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

/* The largest pageable async H2D the driver returns from without waiting for its stream. */
#define DRIVER_ASYNC_STAGING_BYTES ((size_t)2 << 20)

/* Marks the end of the work queued on `stream` so far. CUDA_SUCCESS and *marked = whether there was
 * any (an idle stream needs no wait); else the driver's error, and the caller waits for the
 * stream instead (cuStreamSynchronize). */
CUresult earlier_work_mark(CUstream stream, bool *marked);

/* Waits for the work marked last on this thread: CUDA_SUCCESS or the driver's error. */
CUresult earlier_work_wait(void);

#endif
