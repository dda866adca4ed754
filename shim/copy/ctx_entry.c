/* ctx_entry.c: the handlers of cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxReset (cudaDeviceReset
 * reaches it) and cuCtxDestroy. A retain that succeeds lets staging start its pool (pool_prewarm =
 * context). A reset frees every allocation of the primary context: the pool forgets its slabs
 * there, and the range table forgets the program's pinned and registered ranges (all of them: which
 * device held a range is not recorded; a forgotten range is classified by the driver again). Both
 * free the context's events: the shim's own events there are destroyed first, while the context
 * still exists (the real driver crashed on an event of a destroyed context), and the registration
 * cache forgets what it registered there (the driver drops those registrations). The program sees
 * the real result. */
#include "observe/ctxdev.h"
#include "observe/devtime.h"
#include "driver_shapes.h"
#include "entry.h"
#include "base/real.h"
#include "hostmem/memkind.h"
#include "hostmem/regcache.h"
#include "stage/pool.h"
#include "stage/stage.h"

/* The handle of dev's primary context (retained and released at once: a reset is about to destroy it
 * anyway), or NULL. */
static CUcontext primary_handle(CUdevice dev)
{
    static void *retain_slot, *release_slot;
    CUresult (*retain)(CUcontext *, CUdevice) =
        (CUresult(*)(CUcontext *, CUdevice))real_driver_symbol_cached(&retain_slot, "cuDevicePrimaryCtxRetain");
    CUresult (*release)(CUdevice) = (CUresult(*)(CUdevice))real_driver_symbol_cached(&release_slot, "cuDevicePrimaryCtxRelease_v2");
    CUcontext ctx = NULL;
    if (!retain || !release)
        return NULL;
    pinshim_enter();
    if (retain(&ctx, dev) == CUDA_SUCCESS)
        release(dev);
    else
        ctx = NULL;
    pinshim_leave();
    return ctx;
}

CUresult shape_primary_retain(enum driver_entry_id id, SHAPE_primary_retain_P)
{
    ENTRY_PROLOGUE(primary_retain, pctx, dev);
    CUresult result = real(pctx, dev);
    if (result == CUDA_SUCCESS)
        stage_context_retained(dev);
    return result;
}

CUresult shape_primary_reset(enum driver_entry_id id, SHAPE_primary_reset_P)
{
    ENTRY_PROLOGUE(primary_reset, dev);
    regcache_forget_context(primary_handle(dev));
    pool_forget_context(NULL, dev);
    devtime_forget_context(NULL);
    pool_drop_device(dev);
    CUresult result = real(dev);
    ctxdev_forget();
    memkind_clear();
    return result;
}

CUresult shape_ctx_destroy(enum driver_entry_id id, SHAPE_ctx_destroy_P)
{
    ENTRY_PROLOGUE(ctx_destroy, ctx);
    regcache_forget_context(ctx);
    pool_forget_context(ctx, -1);
    devtime_forget_context(ctx);
    CUresult result = real(ctx);
    ctxdev_forget(); /* after: a context made later may reuse this one's address */
    return result;
}
