/* driver_shapes.h: the signatures ("shapes") the wrapped entry points come in. For each shape S:
 * SHAPE_S_P is its parameter list, SHAPE_S_CA its argument list with a leading comma (empty when
 * there are no arguments), fn_S the type of the real function, and shape_S() the handler every
 * wrapper of that shape calls with its row id: the contract between the generated wrappers
 * (interpose/driver_wrappers.c) and the handlers, which are here in copy/ (copy_entry.c: copies,
 * sync_entry.c: sync points, hostmem_entry.c: pinned host memory,
 * ptrquery_entry.c: what the driver says of a host pointer, ctx_entry.c: context resets),
 * except cuGetProcAddress's (interpose/getproc.c). */
#ifndef PINSHIM_DRIVER_SHAPES_H
#define PINSHIM_DRIVER_SHAPES_H

#include <cuda.h>

#include "base/driver_table.h"

#define SHAPE_unified_P CUdeviceptr dst, CUdeviceptr src, size_t bytes
#define SHAPE_unified_CA , dst, src, bytes
#define SHAPE_unified_async_P CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream
#define SHAPE_unified_async_CA , dst, src, bytes, stream
#define SHAPE_htod_P CUdeviceptr dst, const void *src, size_t bytes
#define SHAPE_htod_CA , dst, src, bytes
#define SHAPE_htod_async_P CUdeviceptr dst, const void *src, size_t bytes, CUstream stream
#define SHAPE_htod_async_CA , dst, src, bytes, stream
#define SHAPE_dtoh_P void *dst, CUdeviceptr src, size_t bytes
#define SHAPE_dtoh_CA , dst, src, bytes
#define SHAPE_dtoh_async_P void *dst, CUdeviceptr src, size_t bytes, CUstream stream
#define SHAPE_dtoh_async_CA , dst, src, bytes, stream
#define SHAPE_dtod_P CUdeviceptr dst, CUdeviceptr src, size_t bytes
#define SHAPE_dtod_CA , dst, src, bytes
#define SHAPE_dtod_async_P CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream
#define SHAPE_dtod_async_CA , dst, src, bytes, stream
#define SHAPE_m2d_P const CUDA_MEMCPY2D *desc
#define SHAPE_m2d_CA , desc
#define SHAPE_m2d_async_P const CUDA_MEMCPY2D *desc, CUstream stream
#define SHAPE_m2d_async_CA , desc, stream
#define SHAPE_m3d_P const CUDA_MEMCPY3D *desc
#define SHAPE_m3d_CA , desc
#define SHAPE_m3d_async_P const CUDA_MEMCPY3D *desc, CUstream stream
#define SHAPE_m3d_async_CA , desc, stream
#define SHAPE_peer_P CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes
#define SHAPE_peer_CA , dst, dst_ctx, src, src_ctx, bytes
#define SHAPE_peer_async_P                                                                          \
    CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes, CUstream stream
#define SHAPE_peer_async_CA , dst, dst_ctx, src, src_ctx, bytes, stream
#define SHAPE_batch_v1_P                                                                            \
    CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,   \
        size_t *attr_idxs, size_t num_attrs, size_t *fail_idx, CUstream stream
#define SHAPE_batch_v1_CA , dsts, srcs, sizes, count, attrs, attr_idxs, num_attrs, fail_idx, stream
#define SHAPE_batch_v2_P                                                                            \
    CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,   \
        size_t *attr_idxs, size_t num_attrs, CUstream stream
#define SHAPE_batch_v2_CA , dsts, srcs, sizes, count, attrs, attr_idxs, num_attrs, stream
#define SHAPE_stream_sync_P CUstream stream
#define SHAPE_stream_sync_CA , stream
#define SHAPE_stream_query_P CUstream stream
#define SHAPE_stream_query_CA , stream
#define SHAPE_ctx_sync_P void
#define SHAPE_ctx_sync_CA
#define SHAPE_ctx_sync_v2_P CUcontext ctx
#define SHAPE_ctx_sync_v2_CA , ctx
#define SHAPE_event_sync_P CUevent event
#define SHAPE_event_sync_CA , event
#define SHAPE_event_query_P CUevent event
#define SHAPE_event_query_CA , event
#define SHAPE_event_record_P CUevent event, CUstream stream
#define SHAPE_event_record_CA , event, stream
#define SHAPE_event_record_flags_P CUevent event, CUstream stream, unsigned int flags
#define SHAPE_event_record_flags_CA , event, stream, flags
#define SHAPE_launch_host_func_P CUstream stream, CUhostFn fn, void *data
#define SHAPE_launch_host_func_CA , stream, fn, data
#define SHAPE_stream_add_callback_P CUstream stream, CUstreamCallback callback, void *data, unsigned int flags
#define SHAPE_stream_add_callback_CA , stream, callback, data, flags
#define SHAPE_host_alloc_P void **pp, size_t bytes, unsigned int flags
#define SHAPE_host_alloc_CA , pp, bytes, flags
#define SHAPE_alloc_host_P void **pp, size_t bytes
#define SHAPE_alloc_host_CA , pp, bytes
#define SHAPE_free_host_P void *p
#define SHAPE_free_host_CA , p
#define SHAPE_host_register_P void *p, size_t bytes, unsigned int flags
#define SHAPE_host_register_CA , p, bytes, flags
#define SHAPE_host_unregister_P void *p
#define SHAPE_host_unregister_CA , p
#define SHAPE_ptr_attr_P void *data, CUpointer_attribute attribute, CUdeviceptr ptr
#define SHAPE_ptr_attr_CA , data, attribute, ptr
#define SHAPE_ptr_attrs_P unsigned int count, CUpointer_attribute *attributes, void **data, CUdeviceptr ptr
#define SHAPE_ptr_attrs_CA , count, attributes, data, ptr
#define SHAPE_ptr_set_attr_P const void *value, CUpointer_attribute attribute, CUdeviceptr ptr
#define SHAPE_ptr_set_attr_CA , value, attribute, ptr
#define SHAPE_host_get_flags_P unsigned int *flags, void *p
#define SHAPE_host_get_flags_CA , flags, p
#define SHAPE_host_get_devptr_P CUdeviceptr *dptr, void *p, unsigned int flags
#define SHAPE_host_get_devptr_CA , dptr, p, flags
#define SHAPE_primary_retain_P CUcontext *pctx, CUdevice dev
#define SHAPE_primary_retain_CA , pctx, dev
#define SHAPE_primary_reset_P CUdevice dev
#define SHAPE_primary_reset_CA , dev
#define SHAPE_ctx_destroy_P CUcontext ctx
#define SHAPE_ctx_destroy_CA , ctx
#define SHAPE_getproc_v1_P const char *symbol, void **pfn, int version, cuuint64_t flags
#define SHAPE_getproc_v1_CA , symbol, pfn, version, flags
#define SHAPE_getproc_v2_P                                                                          \
    const char *symbol, void **pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult *status
#define SHAPE_getproc_v2_CA , symbol, pfn, version, flags, status

/* SHAPE_ARGS(S): shape S's argument list without the leading comma (for S with arguments). */
#define SHAPE_ARGS(shape) SHAPE_ARGS_(SHAPE_##shape##_CA)
#define SHAPE_ARGS_(...) SHAPE_ARGS_DROP_FIRST_(__VA_ARGS__)
#define SHAPE_ARGS_DROP_FIRST_(empty, ...) __VA_ARGS__

/* Every shape with arguments (cuCtxSynchronize, the one without, is declared by hand below). */
#define PINSHIM_SHAPES(S)                                                                           \
    S(unified) S(unified_async) S(htod) S(htod_async) S(dtoh) S(dtoh_async) S(dtod) S(dtod_async)   \
    S(m2d) S(m2d_async) S(m3d) S(m3d_async) S(peer) S(peer_async) S(batch_v1) S(batch_v2)           \
    S(stream_sync) S(stream_query) S(ctx_sync_v2) S(event_sync) S(event_query) S(event_record) S(event_record_flags) \
    S(launch_host_func) S(stream_add_callback)                                                      \
    S(host_alloc) S(alloc_host) S(free_host) S(host_register) S(host_unregister) S(primary_retain) \
    S(primary_reset)                                                                                \
    S(ptr_attr) S(ptr_attrs) S(ptr_set_attr) S(host_get_flags) S(host_get_devptr) S(ctx_destroy)   \
    S(getproc_v1) S(getproc_v2)

#define SHAPE_DECLARE(name)                                                                         \
    typedef CUresult (*fn_##name)(SHAPE_##name##_P);                                                \
    CUresult shape_##name(enum driver_entry_id id, SHAPE_##name##_P);
PINSHIM_SHAPES(SHAPE_DECLARE)
#undef SHAPE_DECLARE

typedef CUresult (*fn_ctx_sync)(void);
CUresult shape_ctx_sync(enum driver_entry_id id);

#endif
