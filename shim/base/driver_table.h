/* driver_table.h: every driver entry point the shim wraps, one row each.
 * X(id, export name, name asked of cuGetProcAddress, first version, last version (0 = open),
 *   stream flavour, shape)
 * The export name is the libcuda symbol (route 1 and dlsym, route 2); the query name plus the
 * version range and flavour select the row for cuGetProcAddress (route 3). Each row gets its own
 * wrapper and its own real pointer, so a wrapper always calls exactly its own variant.
 * Flavour: ANY (no per-thread variant), LEGACY, PTDS (the _ptds/_ptsz variant).
 * Shapes are defined in copy/driver_shapes.h. Anything not listed here is never touched. */
#ifndef PINSHIM_DRIVER_TABLE_H
#define PINSHIM_DRIVER_TABLE_H

#define PINSHIM_DRIVER_ENTRIES(X)                                                                   \
    /* copies */                                                                                    \
    X(memcpy,               "cuMemcpy",                   "cuMemcpy",            4000, 0, LEGACY, unified) \
    X(memcpy_ptds,          "cuMemcpy_ptds",              "cuMemcpy",            4000, 0, PTDS,   unified) \
    X(memcpy_async,         "cuMemcpyAsync",              "cuMemcpyAsync",       4000, 0, LEGACY, unified_async) \
    X(memcpy_async_ptsz,    "cuMemcpyAsync_ptsz",         "cuMemcpyAsync",       4000, 0, PTDS,   unified_async) \
    X(htod,                 "cuMemcpyHtoD_v2",            "cuMemcpyHtoD",        3020, 0, LEGACY, htod) \
    X(htod_ptds,            "cuMemcpyHtoD_v2_ptds",       "cuMemcpyHtoD",        3020, 0, PTDS,   htod) \
    X(dtoh,                 "cuMemcpyDtoH_v2",            "cuMemcpyDtoH",        3020, 0, LEGACY, dtoh) \
    X(dtoh_ptds,            "cuMemcpyDtoH_v2_ptds",       "cuMemcpyDtoH",        3020, 0, PTDS,   dtoh) \
    X(dtod,                 "cuMemcpyDtoD_v2",            "cuMemcpyDtoD",        3020, 0, LEGACY, dtod) \
    X(dtod_ptds,            "cuMemcpyDtoD_v2_ptds",       "cuMemcpyDtoD",        3020, 0, PTDS,   dtod) \
    X(htod_async,           "cuMemcpyHtoDAsync_v2",       "cuMemcpyHtoDAsync",   3020, 0, LEGACY, htod_async) \
    X(htod_async_ptsz,      "cuMemcpyHtoDAsync_v2_ptsz",  "cuMemcpyHtoDAsync",   3020, 0, PTDS,   htod_async) \
    X(dtoh_async,           "cuMemcpyDtoHAsync_v2",       "cuMemcpyDtoHAsync",   3020, 0, LEGACY, dtoh_async) \
    X(dtoh_async_ptsz,      "cuMemcpyDtoHAsync_v2_ptsz",  "cuMemcpyDtoHAsync",   3020, 0, PTDS,   dtoh_async) \
    X(dtod_async,           "cuMemcpyDtoDAsync_v2",       "cuMemcpyDtoDAsync",   3020, 0, LEGACY, dtod_async) \
    X(dtod_async_ptsz,      "cuMemcpyDtoDAsync_v2_ptsz",  "cuMemcpyDtoDAsync",   3020, 0, PTDS,   dtod_async) \
    X(m2d,                  "cuMemcpy2D_v2",              "cuMemcpy2D",          3020, 0, LEGACY, m2d) \
    X(m2d_ptds,             "cuMemcpy2D_v2_ptds",         "cuMemcpy2D",          3020, 0, PTDS,   m2d) \
    X(m2d_unaligned,        "cuMemcpy2DUnaligned_v2",     "cuMemcpy2DUnaligned", 3020, 0, LEGACY, m2d) \
    X(m2d_unaligned_ptds,   "cuMemcpy2DUnaligned_v2_ptds","cuMemcpy2DUnaligned", 3020, 0, PTDS,   m2d) \
    X(m2d_async,            "cuMemcpy2DAsync_v2",         "cuMemcpy2DAsync",     3020, 0, LEGACY, m2d_async) \
    X(m2d_async_ptsz,       "cuMemcpy2DAsync_v2_ptsz",    "cuMemcpy2DAsync",     3020, 0, PTDS,   m2d_async) \
    X(m3d,                  "cuMemcpy3D_v2",              "cuMemcpy3D",          3020, 0, LEGACY, m3d) \
    X(m3d_ptds,             "cuMemcpy3D_v2_ptds",         "cuMemcpy3D",          3020, 0, PTDS,   m3d) \
    X(m3d_async,            "cuMemcpy3DAsync_v2",         "cuMemcpy3DAsync",     3020, 0, LEGACY, m3d_async) \
    X(m3d_async_ptsz,       "cuMemcpy3DAsync_v2_ptsz",    "cuMemcpy3DAsync",     3020, 0, PTDS,   m3d_async) \
    X(peer,                 "cuMemcpyPeer",               "cuMemcpyPeer",        4000, 0, LEGACY, peer) \
    X(peer_ptds,            "cuMemcpyPeer_ptds",          "cuMemcpyPeer",        4000, 0, PTDS,   peer) \
    X(peer_async,           "cuMemcpyPeerAsync",          "cuMemcpyPeerAsync",   4000, 0, LEGACY, peer_async) \
    X(peer_async_ptsz,      "cuMemcpyPeerAsync_ptsz",     "cuMemcpyPeerAsync",   4000, 0, PTDS,   peer_async) \
    X(batch_v1,             "cuMemcpyBatchAsync",         "cuMemcpyBatchAsync", 12080, 13000, LEGACY, batch_v1) \
    X(batch_v1_ptsz,        "cuMemcpyBatchAsync_ptsz",    "cuMemcpyBatchAsync", 12080, 13000, PTDS,   batch_v1) \
    X(batch_v2,             "cuMemcpyBatchAsync_v2",      "cuMemcpyBatchAsync", 13000, 0, LEGACY, batch_v2) \
    X(batch_v2_ptsz,        "cuMemcpyBatchAsync_v2_ptsz", "cuMemcpyBatchAsync", 13000, 0, PTDS,   batch_v2) \
    /* synchronization points */                                                                    \
    X(stream_sync,          "cuStreamSynchronize",        "cuStreamSynchronize", 2000, 0, LEGACY, stream_sync) \
    X(stream_sync_ptsz,     "cuStreamSynchronize_ptsz",   "cuStreamSynchronize", 2000, 0, PTDS,   stream_sync) \
    X(stream_query,         "cuStreamQuery",              "cuStreamQuery",       2000, 0, LEGACY, stream_query) \
    X(stream_query_ptsz,    "cuStreamQuery_ptsz",         "cuStreamQuery",       2000, 0, PTDS,   stream_query) \
    /* cuGetProcAddress("cuCtxSynchronize", 13000) answers cuCtxSynchronize_v2(CUcontext): driver 580 */ \
    X(ctx_sync,             "cuCtxSynchronize",           "cuCtxSynchronize",    2000, 13000, ANY, ctx_sync) \
    X(ctx_sync_v2,          "cuCtxSynchronize_v2",        "cuCtxSynchronize",   13000, 0, ANY,    ctx_sync_v2) \
    X(event_sync,           "cuEventSynchronize",         "cuEventSynchronize",  2000, 0, ANY,    event_sync) \
    X(event_query,          "cuEventQuery",               "cuEventQuery",        2000, 0, ANY,    event_query) \
    X(event_record,         "cuEventRecord",              "cuEventRecord",       2000, 0, LEGACY, event_record) \
    X(event_record_ptsz,    "cuEventRecord_ptsz",         "cuEventRecord",       2000, 0, PTDS,   event_record) \
    X(event_record_flags,   "cuEventRecordWithFlags",     "cuEventRecordWithFlags", 11010, 0, LEGACY, event_record_flags) \
    X(event_record_flags_ptsz, "cuEventRecordWithFlags_ptsz", "cuEventRecordWithFlags", 11010, 0, PTDS, event_record_flags) \
    /* a host function runs after its stream's earlier work: the guard counts it as their sync */  \
    X(launch_host_func,     "cuLaunchHostFunc",           "cuLaunchHostFunc",   10000, 0, LEGACY, launch_host_func) \
    X(launch_host_func_ptsz, "cuLaunchHostFunc_ptsz",     "cuLaunchHostFunc",   10000, 0, PTDS,   launch_host_func) \
    X(stream_add_callback,  "cuStreamAddCallback",        "cuStreamAddCallback",  5000, 0, LEGACY, stream_add_callback) \
    X(stream_add_callback_ptsz, "cuStreamAddCallback_ptsz", "cuStreamAddCallback", 5000, 0, PTDS, stream_add_callback) \
    /* pinned host memory the program allocates or registers (classifies its copies) */             \
    X(host_alloc,           "cuMemHostAlloc",             "cuMemHostAlloc",      2020, 0, ANY,    host_alloc) \
    X(alloc_host,           "cuMemAllocHost_v2",          "cuMemAllocHost",      3020, 0, ANY,    alloc_host) \
    X(free_host,            "cuMemFreeHost",              "cuMemFreeHost",       2000, 0, ANY,    free_host) \
    X(host_register,        "cuMemHostRegister_v2",       "cuMemHostRegister",   6050, 0, ANY,    host_register) \
    X(host_register_v1,     "cuMemHostRegister",          "cuMemHostRegister",   4000, 6050, ANY, host_register) \
    X(host_unregister,      "cuMemHostUnregister",        "cuMemHostUnregister", 4000, 0, ANY,    host_unregister) \
    /* what the driver says of a host pointer: the cache's registrations must read as pageable */   \
    X(ptr_attr,             "cuPointerGetAttribute",      "cuPointerGetAttribute", 4000, 0, ANY,  ptr_attr) \
    X(ptr_attrs,            "cuPointerGetAttributes",     "cuPointerGetAttributes", 7000, 0, ANY, ptr_attrs) \
    X(ptr_set_attr,         "cuPointerSetAttribute",      "cuPointerSetAttribute", 6000, 0, ANY,  ptr_set_attr) \
    X(host_get_flags,       "cuMemHostGetFlags",          "cuMemHostGetFlags",   2030, 0, ANY,    host_get_flags) \
    X(host_get_devptr,      "cuMemHostGetDevicePointer_v2", "cuMemHostGetDevicePointer", 3020, 0, ANY, host_get_devptr) \
    /* the program's first primary context: the pool's first slab can be made before any copy */   \
    X(primary_retain,       "cuDevicePrimaryCtxRetain",   "cuDevicePrimaryCtxRetain", 7000, 0, ANY, primary_retain) \
    /* a primary context reset frees its pinned memory: the pool and the range table must know; it  \
     * and a context's destruction free its events: the shim's own events there must go first */    \
    X(primary_reset,        "cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxReset", 11000, 0, ANY, primary_reset) \
    X(ctx_destroy,          "cuCtxDestroy_v2",            "cuCtxDestroy",        4000, 0, ANY,    ctx_destroy)    \
    /* the lookup itself: the runtime asks for "cuGetProcAddress" and uses the answer for all else */ \
    X(getproc_v1,           "cuGetProcAddress",           "cuGetProcAddress",   11030, 12000, ANY, getproc_v1) \
    X(getproc_v2,           "cuGetProcAddress_v2",        "cuGetProcAddress",   12000, 0, ANY,    getproc_v2)

enum driver_entry_id {
#define X(id, exp, query, vmin, vmax, flavour, shape) ENTRY_##id,
    PINSHIM_DRIVER_ENTRIES(X)
#undef X
    ENTRY_COUNT
};

enum driver_flavour { FLAVOUR_ANY, FLAVOUR_LEGACY, FLAVOUR_PTDS };

#endif
