/* routes_linked.c: the copy suite calling the driver's exported symbols, linked with -lcuda
 * (route 1: what a program built against libcuda directly does). */
#include "copy_suite.h"

int main(void)
{
    struct test_driver d = {
#define X(field, exp, query, version, params) .field = (CUresult(*) params)LINKED_##field,
#define LINKED_init cuInit
#define LINKED_device_get cuDeviceGet
#define LINKED_device_count cuDeviceGetCount
#define LINKED_primary_retain cuDevicePrimaryCtxRetain
#define LINKED_ctx_set cuCtxSetCurrent
#define LINKED_mem_alloc cuMemAlloc_v2
#define LINKED_mem_free cuMemFree_v2
#define LINKED_host_alloc cuMemHostAlloc
#define LINKED_alloc_host cuMemAllocHost_v2
#define LINKED_free_host cuMemFreeHost
#define LINKED_host_register cuMemHostRegister_v2
#define LINKED_host_unregister cuMemHostUnregister
#define LINKED_alloc_managed cuMemAllocManaged
#define LINKED_stream_create cuStreamCreate
#define LINKED_stream_destroy cuStreamDestroy_v2
#define LINKED_stream_sync cuStreamSynchronize
#define LINKED_stream_query cuStreamQuery
#define LINKED_ctx_sync cuCtxSynchronize_v2
#define LINKED_event_create cuEventCreate
#define LINKED_event_record cuEventRecord
#define LINKED_event_sync cuEventSynchronize
#define LINKED_event_query cuEventQuery
#define LINKED_memcpy cuMemcpy
#define LINKED_memcpy_async cuMemcpyAsync
#define LINKED_htod cuMemcpyHtoD_v2
#define LINKED_dtoh cuMemcpyDtoH_v2
#define LINKED_dtod cuMemcpyDtoD_v2
#define LINKED_htod_async cuMemcpyHtoDAsync_v2
#define LINKED_dtoh_async cuMemcpyDtoHAsync_v2
#define LINKED_dtod_async cuMemcpyDtoDAsync_v2
#define LINKED_m2d cuMemcpy2D_v2
#define LINKED_m2d_unaligned cuMemcpy2DUnaligned_v2
#define LINKED_m2d_async cuMemcpy2DAsync_v2
#define LINKED_m3d cuMemcpy3D_v2
#define LINKED_m3d_async cuMemcpy3DAsync_v2
#define LINKED_peer cuMemcpyPeer
#define LINKED_peer_async cuMemcpyPeerAsync
#define LINKED_batch cuMemcpyBatchAsync_v2
#define LINKED_launch_host_func cuLaunchHostFunc
#define LINKED_add_callback cuStreamAddCallback
#define LINKED_begin_capture cuStreamBeginCapture_v2
#define LINKED_end_capture cuStreamEndCapture
#define LINKED_graph_instantiate cuGraphInstantiateWithFlags
#define LINKED_graph_launch cuGraphLaunch
        TEST_DRIVER_FUNCS(X)
#undef X
    };
    return run_copy_suite(&d);
}
