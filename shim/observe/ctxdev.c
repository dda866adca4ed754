/* ctxdev.c: the per-thread cache behind ctxdev.h. A global generation number, raised at every
 * context teardown, invalidates all threads' caches at once without touching them. */
#define _GNU_SOURCE
#include "ctxdev.h"

#include <cuda.h>
#include <stdbool.h>

#include "base/common.h"
#include "base/gate.h"
#include "base/real.h"

static unsigned generation = 1; /* a thread's cache is valid while it holds this number */
static bool allowed = true;      /* false in a forked child */

/* How many devices the process sees (pinshim_gate.devices, base/gate.h): DEVICES_UNASKED until the
 * driver answered cuDeviceGetCount (it refuses before cuInit), then the count, fixed for the
 * process's life (CUDA_VISIBLE_DEVICES is read once, at cuInit); DEVICES_UNKNOWN for good when the
 * driver lacks the call or fails it otherwise (each copy then asks for its context). */
enum { DEVICES_UNKNOWN = -1, DEVICES_UNASKED = 0 };

static __thread CUcontext tls_ctx __attribute__((tls_model("initial-exec")));
static __thread int32_t tls_dev __attribute__((tls_model("initial-exec")));
static __thread unsigned tls_gen __attribute__((tls_model("initial-exec")));

PINSHIM_HOT CUcontext ctxdev_current_context(void)
{
    typedef CUresult (*fn_ctx_current)(CUcontext *);
    static void *current_slot;
    if (!__atomic_load_n(&allowed, __ATOMIC_RELAXED))
        return NULL;
    fn_ctx_current current = (fn_ctx_current)real_driver_symbol_cached(&current_slot, "cuCtxGetCurrent");
    if (!current)
        return NULL;
    CUcontext ctx = NULL;
    pinshim_enter();
    CUresult r = current(&ctx);
    pinshim_leave();
    return r == CUDA_SUCCESS ? ctx : NULL;
}

/* Asks the driver how many devices the process sees (see DEVICES_UNASKED); in a forked child, or
 * before cuInit, DEVICES_UNASKED without remembering it. */
static int ask_device_count(void)
{
    typedef CUresult (*fn_device_count)(int *);
    static void *count_slot;
    if (!__atomic_load_n(&allowed, __ATOMIC_RELAXED))
        return DEVICES_UNASKED;
    fn_device_count count = (fn_device_count)real_driver_symbol_cached(&count_slot, "cuDeviceGetCount");
    int n = 0;
    CUresult r = CUDA_ERROR_NOT_FOUND;
    if (count) {
        pinshim_enter();
        r = count(&n);
        pinshim_leave();
    }
    if (r == CUDA_ERROR_NOT_INITIALIZED)
        return DEVICES_UNASKED;
    n = r == CUDA_SUCCESS && n >= 1 ? n : DEVICES_UNKNOWN;
    __atomic_store_n(&pinshim_gate.devices, n, __ATOMIC_RELAXED);
    return n;
}

int32_t ctxdev_current_asked(void)
{
    typedef CUresult (*fn_ctx_device)(CUdevice *);
    static void *device_slot;
    int devices = __atomic_load_n(&pinshim_gate.devices, __ATOMIC_RELAXED);
    if (PINSHIM_UNLIKELY(devices == DEVICES_UNASKED))
        devices = ask_device_count();
    if (devices == 1)
        return 0;
    CUcontext ctx = ctxdev_current_context();
    if (!ctx)
        return -1;
    unsigned gen = __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
    if (PINSHIM_UNLIKELY(ctx != tls_ctx || gen != tls_gen)) {
        fn_ctx_device device = (fn_ctx_device)real_driver_symbol_cached(&device_slot, "cuCtxGetDevice");
        CUdevice dev = -1;
        pinshim_enter();
        if (!device || device(&dev) != CUDA_SUCCESS)
            dev = -1;
        pinshim_leave();
        tls_ctx = ctx;
        tls_dev = (int32_t)dev;
        tls_gen = gen;
    }
    return tls_dev;
}

void ctxdev_forget(void) { __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE); }

void ctxdev_fork_child(void) { __atomic_store_n(&allowed, false, __ATOMIC_RELAXED); }
