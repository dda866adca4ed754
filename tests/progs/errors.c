/* errors.c: calls the driver with bad arguments and prints each CUresult, so the output with and
 * without the shim can be compared: the shim must hand back the driver's error codes unchanged.
 * Also prints "expect failed <n>": the number of copy calls that failed. */
#include "testutil.h"

static int failed_copies;

static void report(const char *what, CUresult r, int is_copy)
{
    printf("%-44s -> %d\n", what, (int)r);
    if (is_copy && r != CUDA_SUCCESS)
        failed_copies++;
}

int main(int argc, char **argv)
{
    struct test_driver d;
    test_driver_load(&d, argc > 1 ? argv[1] : "getproc");
    char host[256];
    report("htod before cuInit", d.htod(0x1000, host, sizeof host), 1);
    CHECK(d.init(0));
    report("htod without a context", d.htod(0x1000, host, sizeof host), 1);
    CUdevice dev;
    CUcontext ctx;
    CHECK(d.device_get(&dev, 0));
    CHECK(d.primary_retain(&ctx, dev));
    CHECK(d.ctx_set(ctx));
    CUdeviceptr buf;
    CHECK(d.mem_alloc(&buf, 4096));
    CUstream bogus = (CUstream)(uintptr_t)0xdead0;
    report("htod to an invalid device pointer", d.htod(0x1234, host, sizeof host), 1);
    report("dtoh from an invalid device pointer", d.dtoh(host, 0x1234, sizeof host), 1);
    report("htod from NULL", d.htod(buf, NULL, 64), 1);
    report("dtoh into NULL", d.dtoh(NULL, buf, 64), 1);
    report("htod past the end of the allocation", d.htod(buf + 4000, host, 256), 1);
    report("htod of zero bytes", d.htod(buf, host, 0), 1);
    report("htod_async on an invalid stream", d.htod_async(buf, host, 64, bogus), 1);
    report("dtod with invalid source", d.dtod(buf, 0x1234, 64), 1);
    report("unified copy between invalid pointers", d.memcpy(0x10, 0x20, 64), 1);
    report("2D copy with a NULL descriptor", d.m2d(NULL), 1);
    CUDA_MEMCPY2D m = {0};
    m.srcMemoryType = CU_MEMORYTYPE_HOST, m.srcHost = host, m.srcPitch = 8;
    m.dstMemoryType = CU_MEMORYTYPE_DEVICE, m.dstDevice = buf, m.dstPitch = 16;
    m.WidthInBytes = 16, m.Height = 4;
    report("2D copy with pitch < width", d.m2d(&m), 1);
    CUdeviceptr dsts[1] = {buf}, srcs[1] = {(CUdeviceptr)host};
    size_t sizes[1] = {64};
    report("batch on the legacy stream", d.batch(dsts, srcs, sizes, 1, NULL, NULL, 0, CU_STREAM_LEGACY), 1);
    report("stream synchronize of an invalid stream", d.stream_sync(bogus), 0);
    report("stream query of an invalid stream", d.stream_query(bogus), 0);
    report("event query of an invalid event", d.event_query((CUevent)(uintptr_t)0xbad0), 0);
    report("event record of an invalid event", d.event_record((CUevent)(uintptr_t)0xbad0, NULL), 0);
    report("host unregister of an unknown range", d.host_unregister(host), 0);
    report("free host of an unknown pointer", d.free_host(host), 0);
    printf("expect failed %d\n", failed_copies);
    return 0;
}
