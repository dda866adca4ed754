/* fake_procaddr.c: cuGetProcAddress (v1) and cuGetProcAddress_v2 of the fake CUDA driver. One
 * table maps each base name, as the CUDA runtime asks for it, and the CUDA version that introduced
 * an ABI, to the legacy-stream and per-thread-stream functions; selection follows the real driver. */
#include "fake_internal.h"

#include <string.h>

/* Addresses of the exported entry points, by their exact symbol names (no calls are made). */
#define FK_GEN_DECL(s) extern void fk_pa_##s(void) __asm__(#s);
FK_SYMBOLS(FK_GEN_DECL)
#undef FK_GEN_DECL

#define F(s) ((void *)fk_pa_##s)

struct row {
  const char *name; /* base name, e.g. "cuMemcpyHtoD" */
  int version;      /* first CUDA version (1000*major + 10*minor) with this ABI */
  void *legacy;     /* NULL: an ABI the fake does not provide */
  void *per_thread; /* the _ptds/_ptsz variant, or NULL when there is none */
};

static const struct row rows[] = {
  { "cuInit", 2000, F(cuInit), NULL },
  { "cuDriverGetVersion", 2020, F(cuDriverGetVersion), NULL },
  { "cuDeviceGet", 2000, F(cuDeviceGet), NULL },
  { "cuDeviceGetCount", 2000, F(cuDeviceGetCount), NULL },
  { "cuDeviceGetName", 2000, F(cuDeviceGetName), NULL },
  { "cuDeviceGetAttribute", 2000, F(cuDeviceGetAttribute), NULL },
  { "cuDeviceTotalMem", 3020, F(cuDeviceTotalMem_v2), NULL },
  { "cuDevicePrimaryCtxRetain", 7000, F(cuDevicePrimaryCtxRetain), NULL },
  { "cuDevicePrimaryCtxRelease", 7000, NULL, NULL },
  { "cuDevicePrimaryCtxRelease", 11000, F(cuDevicePrimaryCtxRelease_v2), NULL },
  { "cuDevicePrimaryCtxReset", 7000, NULL, NULL },
  { "cuDevicePrimaryCtxReset", 11000, F(cuDevicePrimaryCtxReset_v2), NULL },
  { "cuCtxCreate", 3020, F(cuCtxCreate_v2), NULL },
  { "cuCtxCreate", 11040, NULL, NULL }, /* cuCtxCreate_v3 */
  { "cuCtxCreate", 12050, F(cuCtxCreate_v4), NULL },
  { "cuCtxDestroy", 4000, F(cuCtxDestroy_v2), NULL },
  { "cuCtxSetCurrent", 4000, F(cuCtxSetCurrent), NULL },
  { "cuCtxGetCurrent", 4000, F(cuCtxGetCurrent), NULL },
  { "cuCtxGetDevice", 2000, F(cuCtxGetDevice), NULL },
  { "cuCtxPushCurrent", 4000, F(cuCtxPushCurrent_v2), NULL },
  { "cuCtxPopCurrent", 4000, F(cuCtxPopCurrent_v2), NULL },
  { "cuCtxSynchronize", 2000, F(cuCtxSynchronize), NULL },
  { "cuCtxSynchronize", 13000, F(cuCtxSynchronize_v2), NULL },
  { "cuGetErrorString", 6000, F(cuGetErrorString), NULL },
  { "cuGetErrorName", 6000, F(cuGetErrorName), NULL },

  { "cuMemAlloc", 3020, F(cuMemAlloc_v2), NULL },
  { "cuMemFree", 3020, F(cuMemFree_v2), NULL },
  { "cuMemAllocManaged", 6000, F(cuMemAllocManaged), NULL },
  { "cuMemGetInfo", 3020, F(cuMemGetInfo_v2), NULL },
  { "cuMemGetAddressRange", 3020, F(cuMemGetAddressRange_v2), NULL },
  { "cuMemAllocHost", 3020, F(cuMemAllocHost_v2), NULL },
  { "cuMemHostAlloc", 2020, F(cuMemHostAlloc), NULL },
  { "cuMemFreeHost", 2000, F(cuMemFreeHost), NULL },
  { "cuMemHostRegister", 4000, F(cuMemHostRegister), NULL },
  { "cuMemHostRegister", 6050, F(cuMemHostRegister_v2), NULL },
  { "cuMemHostUnregister", 4000, F(cuMemHostUnregister), NULL },
  { "cuMemHostGetDevicePointer", 3020, F(cuMemHostGetDevicePointer_v2), NULL },
  { "cuMemHostGetFlags", 2030, F(cuMemHostGetFlags), NULL },
  { "cuPointerGetAttribute", 4000, F(cuPointerGetAttribute), NULL },
  { "cuPointerGetAttributes", 7000, F(cuPointerGetAttributes), NULL },
  { "cuPointerSetAttribute", 6000, F(cuPointerSetAttribute), NULL },
  { "cuMemsetD8", 3020, F(cuMemsetD8_v2), F(cuMemsetD8_v2_ptds) },
  { "cuMemsetD8Async", 3020, F(cuMemsetD8Async), F(cuMemsetD8Async_ptsz) },

  { "cuStreamCreate", 2000, F(cuStreamCreate), NULL },
  { "cuStreamCreateWithPriority", 5050, F(cuStreamCreateWithPriority), NULL },
  { "cuStreamDestroy", 4000, F(cuStreamDestroy_v2), NULL },
  { "cuStreamSynchronize", 2000, F(cuStreamSynchronize), F(cuStreamSynchronize_ptsz) },
  { "cuStreamQuery", 2000, F(cuStreamQuery), F(cuStreamQuery_ptsz) },
  { "cuStreamWaitEvent", 3020, F(cuStreamWaitEvent), F(cuStreamWaitEvent_ptsz) },
  { "cuStreamIsCapturing", 10000, F(cuStreamIsCapturing), F(cuStreamIsCapturing_ptsz) },
  { "cuStreamBeginCapture", 10000, NULL, NULL }, /* v1, without a capture mode */
  { "cuStreamBeginCapture", 10010, F(cuStreamBeginCapture_v2), F(cuStreamBeginCapture_v2_ptsz) },
  { "cuStreamEndCapture", 10000, F(cuStreamEndCapture), F(cuStreamEndCapture_ptsz) },
  { "cuThreadExchangeStreamCaptureMode", 10010, F(cuThreadExchangeStreamCaptureMode), NULL },
  { "cuGraphInstantiate", 10000, NULL, NULL }, /* v1, with error-node outputs */
  { "cuGraphInstantiate", 12000, F(cuGraphInstantiateWithFlags), NULL },
  { "cuGraphInstantiateWithFlags", 11040, F(cuGraphInstantiateWithFlags), NULL },
  { "cuGraphLaunch", 10000, F(cuGraphLaunch), F(cuGraphLaunch_ptsz) },
  { "cuGraphDestroy", 10000, F(cuGraphDestroy), NULL },
  { "cuGraphExecDestroy", 10000, F(cuGraphExecDestroy), NULL },
  { "cuEventCreate", 2000, F(cuEventCreate), NULL },
  { "cuEventDestroy", 4000, F(cuEventDestroy_v2), NULL },
  { "cuEventRecord", 2000, F(cuEventRecord), F(cuEventRecord_ptsz) },
  { "cuEventRecordWithFlags", 11010, F(cuEventRecordWithFlags), F(cuEventRecordWithFlags_ptsz) },
  { "cuEventQuery", 2000, F(cuEventQuery), NULL },
  { "cuEventSynchronize", 2000, F(cuEventSynchronize), NULL },
  { "cuEventElapsedTime", 2000, F(cuEventElapsedTime), NULL },
  { "cuEventElapsedTime", 12080, F(cuEventElapsedTime_v2), NULL },
  { "cuLaunchHostFunc", 10000, F(cuLaunchHostFunc), F(cuLaunchHostFunc_ptsz) },
  { "cuStreamAddCallback", 5000, F(cuStreamAddCallback), F(cuStreamAddCallback_ptsz) },
  { "cuStreamWriteValue32", 8000, F(cuStreamWriteValue32), F(cuStreamWriteValue32_ptsz) },
  { "cuStreamWriteValue32", 12000, F(cuStreamWriteValue32_v2), F(cuStreamWriteValue32_v2_ptsz) },

  { "cuMemcpy", 4000, F(cuMemcpy), F(cuMemcpy_ptds) },
  { "cuMemcpyAsync", 4000, F(cuMemcpyAsync), F(cuMemcpyAsync_ptsz) },
  { "cuMemcpyHtoD", 3020, F(cuMemcpyHtoD_v2), F(cuMemcpyHtoD_v2_ptds) },
  { "cuMemcpyDtoH", 3020, F(cuMemcpyDtoH_v2), F(cuMemcpyDtoH_v2_ptds) },
  { "cuMemcpyDtoD", 3020, F(cuMemcpyDtoD_v2), F(cuMemcpyDtoD_v2_ptds) },
  { "cuMemcpyHtoDAsync", 3020, F(cuMemcpyHtoDAsync_v2), F(cuMemcpyHtoDAsync_v2_ptsz) },
  { "cuMemcpyDtoHAsync", 3020, F(cuMemcpyDtoHAsync_v2), F(cuMemcpyDtoHAsync_v2_ptsz) },
  { "cuMemcpyDtoDAsync", 3020, F(cuMemcpyDtoDAsync_v2), F(cuMemcpyDtoDAsync_v2_ptsz) },
  { "cuMemcpy2D", 3020, F(cuMemcpy2D_v2), F(cuMemcpy2D_v2_ptds) },
  { "cuMemcpy2DUnaligned", 3020, F(cuMemcpy2DUnaligned_v2), F(cuMemcpy2DUnaligned_v2_ptds) },
  { "cuMemcpy2DAsync", 3020, F(cuMemcpy2DAsync_v2), F(cuMemcpy2DAsync_v2_ptsz) },
  { "cuMemcpy3D", 3020, F(cuMemcpy3D_v2), F(cuMemcpy3D_v2_ptds) },
  { "cuMemcpy3DAsync", 3020, F(cuMemcpy3DAsync_v2), F(cuMemcpy3DAsync_v2_ptsz) },
  { "cuMemcpyPeer", 4000, F(cuMemcpyPeer), F(cuMemcpyPeer_ptds) },
  { "cuMemcpyPeerAsync", 4000, F(cuMemcpyPeerAsync), F(cuMemcpyPeerAsync_ptsz) },
  { "cuMemcpyBatchAsync", 12080, F(cuMemcpyBatchAsync), F(cuMemcpyBatchAsync_ptsz) },
  { "cuMemcpyBatchAsync", 13000, F(cuMemcpyBatchAsync_v2), F(cuMemcpyBatchAsync_v2_ptsz) },

  { "cuGetProcAddress", 11030, F(cuGetProcAddress), NULL },
  { "cuGetProcAddress", 12000, F(cuGetProcAddress_v2), NULL },
};

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
  if (status)
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (!symbol || !pfn)
    return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
    return CUDA_ERROR_INVALID_VALUE;
  const struct row *best = NULL;
  int named = 0;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (strcmp(rows[i].name, symbol) != 0)
      continue;
    named = 1;
    if (rows[i].version <= version && (!best || rows[i].version > best->version))
      best = &rows[i];
  }
  if (named && !best) {
    if (status)
      *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  if (!best)
    return CUDA_ERROR_NOT_FOUND;
  void *fn = ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->per_thread) ? best->per_thread
                                                                                         : best->legacy;
  if (!fn) /* an ABI version the fake does not implement */
    return CUDA_ERROR_NOT_FOUND;
  *pfn = fn;
  if (status)
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

FK_ENTRY(cuGetProcAddress, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags))
{
  FK_COUNT(cuGetProcAddress);
  return lookup(symbol, pfn, cudaVersion, flags, NULL);
}

FK_ENTRY(cuGetProcAddress_v2, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                               CUdriverProcAddressQueryResult *symbolStatus))
{
  FK_COUNT(cuGetProcAddress_v2);
  return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}
