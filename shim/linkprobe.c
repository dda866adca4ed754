/* linkprobe.c: the link bandwidth probe (see linkprobe.h). Events bracket LINKPROBE_COPIES copies
 * in each direction after one warm-up copy each; rate = bytes / event time. */
#include "linkprobe.h"

#include <cuda.h>

#include "common.h"
#include "linkrate.h"
#include "real.h"

#define LINKPROBE_COPIES 4
#define LINKPROBE_MAX_BYTES (16u << 20)

typedef CUresult (*fn_alloc)(CUdeviceptr *, size_t);
typedef CUresult (*fn_free)(CUdeviceptr);
typedef CUresult (*fn_stream_create)(CUstream *, unsigned int);
typedef CUresult (*fn_stream)(CUstream);
typedef CUresult (*fn_event_create)(CUevent *, unsigned int);
typedef CUresult (*fn_event)(CUevent);
typedef CUresult (*fn_event_record)(CUevent, CUstream);
typedef CUresult (*fn_elapsed)(float *, CUevent, CUevent);
typedef CUresult (*fn_htod)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*fn_dtoh)(void *, CUdeviceptr, size_t, CUstream);

#define SYM(type, name) ((type)real_driver_symbol(name))

void linkprobe_run(int dev, void *pinned, size_t bytes)
{
    fn_alloc alloc = SYM(fn_alloc, "cuMemAlloc_v2");
    fn_free mem_free = SYM(fn_free, "cuMemFree_v2");
    fn_stream_create stream_create = SYM(fn_stream_create, "cuStreamCreate");
    fn_stream stream_destroy = SYM(fn_stream, "cuStreamDestroy_v2"), stream_sync = SYM(fn_stream, "cuStreamSynchronize");
    fn_event_create event_create = SYM(fn_event_create, "cuEventCreate");
    fn_event event_destroy = SYM(fn_event, "cuEventDestroy_v2");
    fn_event_record record = SYM(fn_event_record, "cuEventRecord");
    fn_elapsed elapsed = SYM(fn_elapsed, "cuEventElapsedTime_v2");
    if (!elapsed)
        elapsed = SYM(fn_elapsed, "cuEventElapsedTime");
    fn_htod htod = SYM(fn_htod, "cuMemcpyHtoDAsync_v2");
    fn_dtoh dtoh = SYM(fn_dtoh, "cuMemcpyDtoHAsync_v2");
    if (!alloc || !mem_free || !stream_create || !stream_destroy || !stream_sync || !event_create ||
        !event_destroy || !record || !elapsed || !htod || !dtoh)
        return;
    if (bytes > LINKPROBE_MAX_BYTES)
        bytes = LINKPROBE_MAX_BYTES;
    CUdeviceptr buf = 0;
    CUstream s = NULL;
    CUevent ev[3] = {NULL, NULL, NULL};
    if (alloc(&buf, bytes) != CUDA_SUCCESS)
        return;
    bool ok = stream_create(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
    for (int i = 0; i < 3 && ok; i++)
        ok = event_create(&ev[i], CU_EVENT_DEFAULT) == CUDA_SUCCESS;
    ok = ok && htod(buf, pinned, bytes, s) == CUDA_SUCCESS && dtoh(pinned, buf, bytes, s) == CUDA_SUCCESS; /* warm-up */
    ok = ok && record(ev[0], s) == CUDA_SUCCESS;
    for (int i = 0; i < LINKPROBE_COPIES && ok; i++)
        ok = htod(buf, pinned, bytes, s) == CUDA_SUCCESS;
    ok = ok && record(ev[1], s) == CUDA_SUCCESS;
    for (int i = 0; i < LINKPROBE_COPIES && ok; i++)
        ok = dtoh(pinned, buf, bytes, s) == CUDA_SUCCESS;
    ok = ok && record(ev[2], s) == CUDA_SUCCESS && stream_sync(s) == CUDA_SUCCESS;
    float h2d_ms = 0, d2h_ms = 0;
    ok = ok && elapsed(&h2d_ms, ev[0], ev[1]) == CUDA_SUCCESS && elapsed(&d2h_ms, ev[1], ev[2]) == CUDA_SUCCESS;
    if (ok && h2d_ms > 0 && d2h_ms > 0) {
        double total = (double)bytes * LINKPROBE_COPIES;
        linkrate_set(dev, total / (h2d_ms * 1e6), total / (d2h_ms * 1e6));
    }
    for (int i = 0; i < 3; i++)
        if (ev[i])
            event_destroy(ev[i]);
    if (s)
        stream_destroy(s);
    mem_free(buf);
}
