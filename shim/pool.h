/* pool.h: the cached pool of pinned host chunks that staging copies through.
 * Slabs come from cuMemHostAlloc(PORTABLE) (milliseconds each, so never per copy), are cut into
 * chunks of stage_chunk_bytes and reused for the life of the process. A chunk goes back to the
 * pool with an event recorded behind its last DMA and is handed out again only once that event has
 * completed. Total pinned memory is capped by pool_max_bytes; at the cap, pool_acquire() waits for
 * the oldest chunk in flight. Slabs are allocated by a background thread (pool_grow_inline = off):
 * until the first one exists, pool_acquire() returns NULL and the copy passes through.
 * Contract: thread-safe. pool_acquire(wait=true) may block only when the caller holds no chunk,
 * which rules out deadlock between stagers. Driver calls are made with the reentrancy depth raised.
 * If pinned memory cannot be had at all the pool turns itself off with one warning. */
#ifndef PINSHIM_POOL_H
#define PINSHIM_POOL_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pool_chunk {
    void *ptr;
    size_t bytes;
    CUevent event;      /* recorded behind the chunk's last DMA (NULL until first needed) */
    CUcontext event_ctx;
    bool pending;       /* event recorded and maybe not complete */
    struct pool_chunk *next;
};

/* A free chunk, or NULL: with wait=false when none is free right now; with wait=true only when the
 * pool is unavailable (allocation refused, forked child). */
struct pool_chunk *pool_acquire(bool wait);

/* Returns a chunk whose DMA was enqueued on `stream`: records its event there. */
void pool_release_after(struct pool_chunk *c, CUstream stream);

/* Returns a chunk with no DMA outstanding (its event, if any, has completed). */
void pool_release_idle(struct pool_chunk *c);

/* Blocks until the DMA recorded behind c (by pool_record) has completed. 0 or a CUresult. */
CUresult pool_wait(struct pool_chunk *c);

/* Records c's event on stream without returning the chunk (D2H: the caller copies out later). */
CUresult pool_record(struct pool_chunk *c, CUstream stream);

/* True while the first slab is being allocated in the background (copies pass through meanwhile). */
bool pool_warming(void);

/* True while staging can use the pool (false after a refused allocation or in a forked child). */
bool pool_available(void);

/* Chunk size in bytes (stage_chunk_bytes, at least 64 KiB). */
size_t pool_chunk_bytes(void);

struct pool_stats {
    uint64_t pool_bytes, high_water_bytes, chunk_reuses, acquires, wait_ns;
};
void pool_get_stats(struct pool_stats *out);

/* Forked child: forget the parent's pool without any CUDA call; the child stages nothing. */
void pool_forget(void);

#endif
