/* guard_marker.c: the driver functions the guard calls, resolved at the first guarded copy, and
 * the completion markers (see guard_internal.h). A slot's completion flag word lives in a mapped
 * pinned page; the marker enqueued behind the copy (cuStreamWriteValue32, or a host function when
 * that is missing or fails) writes the slot's marker value there. */
#define _GNU_SOURCE
#include "guard_internal.h"

#include <string.h>

#include "base/common.h"
#include "base/driver.h"
#include "base/real.h"

typedef CUresult (*fn_host_alloc)(void **, size_t, unsigned int);
typedef CUresult (*fn_host_dev_ptr)(CUdeviceptr *, void *, unsigned int);
typedef CUresult (*fn_write_value)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*fn_launch_host)(CUstream, CUhostFn, void *);

struct guard_driver guard_drv;

static struct {
    fn_write_value write_value;
    fn_launch_host launch_host;
    bool write_value_failed; /* once it fails, host functions only */
} markers;

static volatile uint32_t *flag_words;  /* GUARD_SLOTS words in a mapped pinned page */
static CUdeviceptr flag_words_dev;
static uint32_t flag_words_fallback[GUARD_SLOTS]; /* host functions only (no pinned page) */

bool guard_marker_setup(void)
{
    markers.write_value = (fn_write_value)real_driver_symbol("cuStreamWriteValue32_v2");
    if (!markers.write_value)
        markers.write_value = (fn_write_value)real_driver_symbol("cuStreamWriteValue32");
    markers.launch_host = (fn_launch_host)real_driver_symbol("cuLaunchHostFunc");
    guard_drv.stream_flags = (guard_fn_stream_flags)real_driver_symbol("cuStreamGetFlags");
    guard_drv.ctx_current = (guard_fn_ctx_current)real_driver_symbol("cuCtxGetCurrent");
    fn_host_alloc host_alloc = (fn_host_alloc)driver_real(ENTRY_host_alloc);
    fn_host_dev_ptr dev_ptr = (fn_host_dev_ptr)real_driver_symbol("cuMemHostGetDevicePointer_v2");
    void *page = NULL;
    pinshim_enter();
    if (host_alloc && dev_ptr &&
        host_alloc(&page, GUARD_SLOTS * sizeof(uint32_t), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) ==
            CUDA_SUCCESS) {
        memset(page, 0, GUARD_SLOTS * sizeof(uint32_t));
        if (dev_ptr(&flag_words_dev, page, 0) == CUDA_SUCCESS)
            flag_words = page;
    }
    pinshim_leave();
    if (!flag_words) {
        flag_words = flag_words_fallback;
        markers.write_value_failed = true;
        pinshim_warn("guard: no mapped pinned flag page (cuMemHostAlloc or cuMemHostGetDevicePointer failed); "
                     "completion markers are host functions");
    }
    return markers.write_value || markers.launch_host;
}

static void CUDA_CB marker_host_fn(void *arg)
{
    uint64_t v = (uint64_t)(uintptr_t)arg;
    __atomic_store_n(&flag_words[v >> 32], (uint32_t)v, __ATOMIC_RELEASE);
}

bool guard_marker_enqueue(unsigned i, uint32_t marker, CUstream stream, bool *host_fn)
{
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    *host_fn = false;
    pinshim_enter();
    if (markers.write_value && !__atomic_load_n(&markers.write_value_failed, __ATOMIC_RELAXED)) {
        r = markers.write_value(stream, flag_words_dev + i * sizeof(uint32_t), marker, 0);
        if (r != CUDA_SUCCESS)
            __atomic_store_n(&markers.write_value_failed, true, __ATOMIC_RELAXED);
    }
    if (r != CUDA_SUCCESS && markers.launch_host) {
        r = markers.launch_host(stream, marker_host_fn, (void *)(uintptr_t)(((uint64_t)i << 32) | marker));
        *host_fn = r == CUDA_SUCCESS;
    }
    pinshim_leave();
    return r == CUDA_SUCCESS;
}

bool guard_marker_done(const struct guard_slot *s, unsigned i)
{
    return __atomic_load_n(&flag_words[i], __ATOMIC_ACQUIRE) == s->marker;
}
