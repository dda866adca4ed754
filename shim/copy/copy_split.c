/* copy_split.c: cutting a copy at the edges of a registration of the cache (see copy_split.h).
 * The piece inside the registration goes directly. The pieces outside it (under a page at each
 * end of the usual whole-buffer copy) go through one pinned pool chunk when staging is on and a
 * chunk is free now (a pageable piece costs a driver round trip of its own, measured on an H100 at
 * 10 us for a 4 MB copy's two edges, and a pageable D2H piece waits for its stream first); otherwise
 * through the driver's pageable path. All pieces are async copies on the program's stream (named
 * explicitly: CU_STREAM_LEGACY or CU_STREAM_PER_THREAD for the default streams), then one stream
 * synchronize; the registered piece is issued first so nothing waits in front of the long DMA. */
#include "copy_split.h"

#include <string.h>

#include "base/common.h"
#include "base/real.h"
#include "hostmem/regcache.h"
#include "policy.h"
#include "stage/pool.h"

typedef CUresult (*fn_htod_async)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*fn_dtoh_async)(void *, CUdeviceptr, size_t, CUstream);
typedef CUresult (*fn_stream)(CUstream);

/* The copy's bytes [off, off + n), its host side at `host` instead of the program's own when the
 * piece is bounced through pinned memory. Depth raised: the shim's own call is not counted again. */
static CUresult copy_piece(const struct copy *c, size_t off, size_t n, void *host)
{
    static void *htod_slot, *dtoh_slot;
    if (!n)
        return CUDA_SUCCESS;
    CUresult r = CUDA_ERROR_NOT_FOUND;
    pinshim_enter();
    if (c->dir == DIR_H2D) {
        fn_htod_async f = (fn_htod_async)real_driver_symbol_cached(&htod_slot, "cuMemcpyHtoDAsync_v2");
        if (f)
            r = f((CUdeviceptr)(c->dst + off), host ? host : (const void *)(c->src + off), n, c->stream);
    } else {
        fn_dtoh_async f = (fn_dtoh_async)real_driver_symbol_cached(&dtoh_slot, "cuMemcpyDtoHAsync_v2");
        if (f)
            r = f(host ? host : (void *)(c->dst + off), (CUdeviceptr)(c->src + off), n, c->stream);
    }
    pinshim_leave();
    return r;
}

/* One piece outside the registration. Through the pinned chunk at `bounce` when there is one (an
 * H2D's bytes are copied in now: the program may overwrite its buffer once the call returns);
 * otherwise through the driver's pageable path, after the cache dropped any other registration the
 * piece would run out of (an adjacent allocation's), as for any copy passed as it is. */
static CUresult copy_outside_piece(const struct copy *c, uintptr_t host, size_t off, size_t n, char *bounce)
{
    if (!n)
        return CUDA_SUCCESS;
    if (bounce) {
        if (c->dir == DIR_H2D)
            memcpy(bounce, (const void *)(host + off), n);
        return copy_piece(c, off, n, bounce);
    }
    regcache_clear_edges(host + off, host + off + n);
    return copy_piece(c, off, n, NULL);
}

/* A pinned chunk for the edge pieces, free now, or NULL (the pieces then go pageable). */
static struct pool_chunk *edge_chunk(const struct copy *c, size_t edge_bytes)
{
    enum pool_miss why;
    if (!edge_bytes || !pinshim_policy.stage || !pool_available())
        return NULL;
    struct pool_chunk *chunk = pool_acquire(c->stream, 0, false, &why);
    if (chunk && chunk->bytes < edge_bytes) {
        pool_release_idle(chunk);
        return NULL;
    }
    return chunk;
}

CUresult copy_split_at_registration(struct copy *c)
{
    static void *sync_slot;
    uintptr_t host = c->dir == DIR_H2D ? c->src : c->dst, end = host + c->bytes, reg_lo, reg_hi;
    regcache_direct_range(c, &reg_lo, &reg_hi);
    uintptr_t in_lo = host > reg_lo ? host : reg_lo, in_hi = end < reg_hi ? end : reg_hi;
    size_t head = in_lo - host, tail = end - in_hi;
    struct pool_chunk *chunk = edge_chunk(c, head + tail);
    char *bounce = chunk ? chunk->ptr : NULL;

    CUresult r = copy_piece(c, head, in_hi - in_lo, NULL);
    if (r == CUDA_SUCCESS)
        r = copy_outside_piece(c, host, 0, head, bounce);
    if (r == CUDA_SUCCESS)
        r = copy_outside_piece(c, host, in_hi - host, tail, bounce ? bounce + head : NULL);
    /* Wait even after an error: pieces already queued read or write memory. */
    fn_stream sync = (fn_stream)real_driver_symbol_cached(&sync_slot, "cuStreamSynchronize");
    CUresult s = CUDA_ERROR_NOT_FOUND;
    if (sync) {
        pinshim_enter();
        s = sync(c->stream);
        pinshim_leave();
    }
    if (r == CUDA_SUCCESS)
        r = s;
    if (chunk) {
        if (r == CUDA_SUCCESS && c->dir == DIR_D2H) {
            memcpy((void *)host, bounce, head);
            memcpy((void *)in_hi, bounce + head, tail);
        }
        if (s == CUDA_SUCCESS)
            pool_release_idle(chunk);
        else
            pool_release_after(chunk, c->stream); /* reused only once its DMAs are known done */
    }
    c->completed = true;
    return r;
}
