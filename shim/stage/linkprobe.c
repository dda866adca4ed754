/* linkprobe.c: the link bandwidth probe (see linkprobe.h). Events bracket LINKPROBE_COPIES copies
 * in each direction after one warm-up copy each; rate = bytes / event time. The calls run in relaxed
 * capture mode: allocating on this thread must not invalidate a global capture on another. The
 * stream is synchronized before anything is freed, whichever call failed. */
#include "linkprobe.h"

#include <cuda.h>
#include <stdbool.h>

#include "base/common.h"
#include "observe/linkrate.h"
#include "base/real.h"

#define LINKPROBE_COPIES 4
#define LINKPROBE_MAX_BYTES (16u << 20)

static struct {
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*stream_create)(CUstream *, unsigned int);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*stream_sync)(CUstream);
    CUresult (*event_create)(CUevent *, unsigned int);
    CUresult (*event_destroy)(CUevent);
    CUresult (*record)(CUevent, CUstream);
    CUresult (*elapsed)(float *, CUevent, CUevent);
    CUresult (*htod)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t, CUstream);
} drv;

#define RESOLVE(field, name) ((drv.field = (__typeof__(drv.field))real_driver_symbol(name)) != NULL)

static bool resolve(void)
{
    if (!RESOLVE(elapsed, "cuEventElapsedTime_v2"))
        drv.elapsed = (__typeof__(drv.elapsed))real_driver_symbol("cuEventElapsedTime");
    return RESOLVE(alloc, "cuMemAlloc_v2") && RESOLVE(mem_free, "cuMemFree_v2") &&
           RESOLVE(stream_create, "cuStreamCreate") && RESOLVE(stream_destroy, "cuStreamDestroy_v2") &&
           RESOLVE(stream_sync, "cuStreamSynchronize") && RESOLVE(event_create, "cuEventCreate") &&
           RESOLVE(event_destroy, "cuEventDestroy_v2") && RESOLVE(record, "cuEventRecord") &&
           RESOLVE(htod, "cuMemcpyHtoDAsync_v2") && RESOLVE(dtoh, "cuMemcpyDtoHAsync_v2") && drv.elapsed;
}

static void measure(int dev, void *pinned, size_t bytes)
{
    CUdeviceptr buf = 0;
    CUstream s = NULL;
    CUevent ev[3] = {NULL, NULL, NULL};
    if (drv.alloc(&buf, bytes) != CUDA_SUCCESS)
        return;
    bool ok = drv.stream_create(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
    for (int i = 0; i < 3 && ok; i++)
        ok = drv.event_create(&ev[i], CU_EVENT_DEFAULT) == CUDA_SUCCESS;
    ok = ok && drv.htod(buf, pinned, bytes, s) == CUDA_SUCCESS && drv.dtoh(pinned, buf, bytes, s) == CUDA_SUCCESS;
    ok = ok && drv.record(ev[0], s) == CUDA_SUCCESS;
    for (int i = 0; i < LINKPROBE_COPIES && ok; i++)
        ok = drv.htod(buf, pinned, bytes, s) == CUDA_SUCCESS;
    ok = ok && drv.record(ev[1], s) == CUDA_SUCCESS;
    for (int i = 0; i < LINKPROBE_COPIES && ok; i++)
        ok = drv.dtoh(pinned, buf, bytes, s) == CUDA_SUCCESS;
    ok = ok && drv.record(ev[2], s) == CUDA_SUCCESS;
    /* On every path, failed calls included: a copy still queued must not land in the buffer after
     * it is freed (another thread may own the address by then) or in the pool's chunk after the
     * slab is handed out. */
    if (s && drv.stream_sync(s) != CUDA_SUCCESS)
        ok = false;
    float h2d_ms = 0, d2h_ms = 0;
    ok = ok && drv.elapsed(&h2d_ms, ev[0], ev[1]) == CUDA_SUCCESS && drv.elapsed(&d2h_ms, ev[1], ev[2]) == CUDA_SUCCESS;
    if (ok && h2d_ms > 0 && d2h_ms > 0) {
        double total = (double)bytes * LINKPROBE_COPIES;
        linkrate_set(dev, total / ((double)h2d_ms * 1e6), total / ((double)d2h_ms * 1e6));
    }
    for (int i = 0; i < 3; i++)
        if (ev[i])
            drv.event_destroy(ev[i]);
    if (s)
        drv.stream_destroy(s);
    drv.mem_free(buf);
}

void linkprobe_run(int dev, void *pinned, size_t bytes)
{
    if (!resolve())
        return;
    CUstreamCaptureMode saved;
    real_relaxed_begin(&saved);
    measure(dev, pinned, bytes < LINKPROBE_MAX_BYTES ? bytes : LINKPROBE_MAX_BYTES);
    real_relaxed_end(saved);
}
