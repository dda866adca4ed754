/* copy_split.c: cutting a copy at the edges of a registration of the cache (see copy_split.h).
 * The pieces are async copies on the program's stream (named explicitly: CU_STREAM_LEGACY or
 * CU_STREAM_PER_THREAD for the default streams), the registered piece first: a pageable D2H piece
 * waits for its stream, so issuing it last lets it wait behind the long DMA instead of before it. */
#include "copy_split.h"

#include "base/common.h"
#include "base/real.h"
#include "hostmem/regcache.h"

typedef CUresult (*fn_htod_async)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*fn_dtoh_async)(void *, CUdeviceptr, size_t, CUstream);
typedef CUresult (*fn_stream)(CUstream);

/* One piece [off, off + n) of the copy, with the shim's depth raised so it is not counted again. */
static CUresult copy_piece(const struct copy *c, size_t off, size_t n)
{
    static void *htod_slot, *dtoh_slot;
    if (!n)
        return CUDA_SUCCESS;
    CUresult r = CUDA_ERROR_NOT_FOUND;
    pinshim_enter();
    if (c->dir == DIR_H2D) {
        fn_htod_async f = (fn_htod_async)real_driver_symbol_cached(&htod_slot, "cuMemcpyHtoDAsync_v2");
        if (f)
            r = f((CUdeviceptr)(c->dst + off), (const void *)(c->src + off), n, c->stream);
    } else {
        fn_dtoh_async f = (fn_dtoh_async)real_driver_symbol_cached(&dtoh_slot, "cuMemcpyDtoHAsync_v2");
        if (f)
            r = f((void *)(c->dst + off), (CUdeviceptr)(c->src + off), n, c->stream);
    }
    pinshim_leave();
    return r;
}

/* A piece outside the registration: if it starts inside another registration of the cache (an
 * adjacent allocation) and runs past it, that registration goes first, as for any passed copy. */
static CUresult copy_outside_piece(const struct copy *c, uintptr_t host, size_t off, size_t n)
{
    regcache_clear_edges(host + off, host + off + n);
    return copy_piece(c, off, n);
}

CUresult copy_split_at_registration(struct copy *c)
{
    static void *sync_slot;
    uintptr_t host = c->dir == DIR_H2D ? c->src : c->dst, end = host + c->bytes, reg_lo, reg_hi;
    regcache_direct_range(c, &reg_lo, &reg_hi);
    uintptr_t in_lo = host > reg_lo ? host : reg_lo, in_hi = end < reg_hi ? end : reg_hi;

    CUresult r = copy_piece(c, in_lo - host, in_hi - in_lo);
    if (r == CUDA_SUCCESS)
        r = copy_outside_piece(c, host, 0, in_lo - host);
    if (r == CUDA_SUCCESS)
        r = copy_outside_piece(c, host, in_hi - host, end - in_hi);
    /* Wait even after an error: pieces already queued read or write the program's memory. */
    fn_stream sync = (fn_stream)real_driver_symbol_cached(&sync_slot, "cuStreamSynchronize");
    if (sync) {
        pinshim_enter();
        CUresult s = sync(c->stream);
        pinshim_leave();
        if (r == CUDA_SUCCESS)
            r = s;
    }
    c->completed = true;
    return r;
}
