/* pool.h: the cached pool of pinned host chunks that staging copies through.
 * Slabs are the shim's own mappings registered with cuMemHostRegister(PORTABLE) (pool_pin=register;
 * cuMemHostAlloc(PORTABLE) with pool_pin=alloc or where registering fails; milliseconds each, so
 * never per copy), are cut into
 * chunks of stage_chunk_bytes and reused for the life of the process. They are allocated in the
 * shim's own retained primary context of the copy's device, so a program destroying its contexts
 * does not free them under the shim (cuDevicePrimaryCtxReset does: pool_drop_device() first).
 * A chunk goes back to the pool with an event recorded behind its last DMA and is handed out again
 * only once that event has completed. Total pinned memory is capped by pool_max_bytes.
 * Slabs are allocated by a background thread (pool_grow_inline = off): until the first exists,
 * pool_acquire() returns NULL and the copy passes through.
 * Contract: thread-safe. pool_acquire() blocks on a chunk whose last DMA was on the caller's own
 * stream (the driver may synchronize with that stream), and for a bounded time on chunks other
 * copies give back (never unboundedly on another stream's work: that could deadlock); otherwise it
 * returns NULL and the caller lets the driver copy. The shim's driver calls
 * here run with the reentrancy depth raised and in relaxed stream-capture mode, so they never
 * disturb another thread's capture. If pinned memory cannot be had at all the pool turns itself
 * off with one warning. pool_get_stats() takes no lock (safe from the log's signal flush). */
#ifndef PINSHIM_POOL_H
#define PINSHIM_POOL_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/ctx_event.h"

struct pool_chunk {
    void *ptr;
    size_t bytes;
    struct ctx_event mark; /* recorded behind the chunk's last DMA (no event until first needed) */
    CUdevice event_dev;  /* the device of the event's context */
    CUstream stream;    /* where that DMA ran */
    bool pending;       /* event recorded and maybe not complete */
    CUdevice device;    /* whose primary context holds the slab */
    unsigned generation; /* the device's reset generation when the slab was made */
    struct slab *slab;   /* the pinned allocation it is part of */
    struct pool_chunk *next;
};

/* pool_pin's choices, in policy/keys.h's order. */
enum { POOL_PIN_REGISTER, POOL_PIN_ALLOC };

/* Why pool_acquire() returned NULL. */
enum pool_miss { POOL_MISS_NONE, POOL_MISS_UNAVAILABLE, POOL_MISS_WARMING, POOL_MISS_BUSY };

/* The first chunk of a copy on `stream`, or NULL with *why set. A chunk free now; else, with
 * patience_ns > 0, the chunk whose last DMA was on this stream once that DMA is done, or one that
 * another copy gives back within patience_ns (chunks of other streams are never waited for longer:
 * that could deadlock). patience_ns = 0: only a chunk free now. wait_warming: while the first slab
 * is being pinned, wait for it (half a second at most) instead of returning POOL_MISS_WARMING. The
 * pool is not grown for a copy whose own stream's queued DMAs hold every chunk not idle: it waits
 * for them. */
struct pool_chunk *pool_acquire(CUstream stream, uint64_t patience_ns, bool wait_warming, enum pool_miss *why);

/* One more chunk for a copy that holds some (a pipeline's next piece): only a chunk free now, and
 * only while another stays free and no copy waits for its first, so that concurrent copies (other
 * threads, other devices) share the pool instead of passing through. Starts growing the pool when
 * it may. */
struct pool_chunk *pool_acquire_more(CUstream stream, enum pool_miss *why);

/* Returns a chunk whose DMA was enqueued on `stream`: records its event there. */
void pool_release_after(struct pool_chunk *c, CUstream stream);

/* Returns a chunk with no DMA outstanding. */
void pool_release_idle(struct pool_chunk *c);

/* Records c's event on stream without returning the chunk (D2H: the caller copies out later).
 * If no event can be recorded, waits for the stream instead; returns that wait's result. */
CUresult pool_record(struct pool_chunk *c, CUstream stream);

/* Blocks until the DMA recorded behind c has completed. CUDA_SUCCESS or the driver's error. */
CUresult pool_wait(struct pool_chunk *c);

/* Starts allocating the first slab in the background on device dev (-1: the current context's),
 * so that the first copy large enough to stage finds the pool ready instead of passing through
 * while it is allocated: called when the program retains its first primary context or makes its
 * first pageable copy (stage.c, by the pool_prewarm key). Once per process; nothing if the pool
 * already has memory, is growing, or is off (a forked child). */
void pool_prewarm(int dev);

/* Values of the pool_prewarm key: when pool_prewarm() is first called. */
enum { POOL_PREWARM_CONTEXT, POOL_PREWARM_COPY, POOL_PREWARM_OFF };

/* True while staging can use the pool (false after a refused allocation or in a forked child). */
bool pool_available(void);

/* Chunk size in bytes (stage_chunk_bytes, at least 64 KiB). */
size_t pool_chunk_bytes(void);

/* The program resets a device's primary context: waits until the shim's own work in it ends (a slab
 * being pinned, the link probe), then forgets the slabs it holds (freed by the reset; registered
 * ones are unregistered and unmapped once all their chunks are back). */
void pool_drop_device(CUdevice dev);

/* A context is about to be destroyed (ctx), or device dev's primary context reset (ctx NULL): the
 * events of free chunks created there are waited for and destroyed while it still exists (the
 * real driver crashed on an event of a destroyed context: H200, driver 580). A chunk in use at that
 * moment keeps its event (a program destroying a context another thread copies in is wrong). */
void pool_forget_context(CUcontext ctx, CUdevice dev);


struct pool_stats {
    uint64_t pool_bytes, high_water_bytes, chunk_reuses, acquires;
    uint64_t wait_ns;       /* waiting for the DMA behind a chunk (pool_wait: a D2H's own, a chunk's before reuse) */
    uint64_t chunk_wait_ns; /* blocked until another copy gave a chunk back (or the pool grew) */
    uint64_t slabs, pin_ns; /* slabs pinned, and the time spent in the driver's pinning calls */
};
void pool_get_stats(struct pool_stats *out);

/* Forked child: forget the parent's pool without any CUDA call; the child stages nothing. */
void pool_forget(void);

#endif
