/* fake_symbols.h: the one list of every entry point the fake CUDA driver exports.
 * It generates the call counters (FAKECUDA_CALL_LOG) and the symbol-name table; a symbol missing
 * here cannot be counted, so every FK_ENTRY must have its row. Use only with # and ## (cuda.h
 * #defines several of these names to other names). */
#ifndef FAKE_SYMBOLS_H
#define FAKE_SYMBOLS_H

#define FK_SYMBOLS(X) \
  /* fake_core.c */ \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem_v2) X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease_v2) X(cuDevicePrimaryCtxReset_v2) X(cuCtxCreate_v2) X(cuCtxCreate_v4) \
  X(cuCtxDestroy_v2) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxGetDevice) X(cuCtxPushCurrent_v2) \
  X(cuCtxPopCurrent_v2) X(cuCtxSynchronize) X(cuCtxSynchronize_v2) X(cuGetErrorString) X(cuGetErrorName) \
  /* fake_mem.c */ \
  X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemAllocManaged) X(cuMemGetInfo_v2) X(cuMemGetAddressRange_v2) \
  X(cuMemAllocHost_v2) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemHostRegister_v2) X(cuMemHostRegister) \
  X(cuMemHostUnregister) X(cuMemHostGetDevicePointer_v2) X(cuMemHostGetFlags) \
  X(cuPointerGetAttribute) X(cuPointerGetAttributes) X(cuPointerSetAttribute) \
  /* fake_stream.c */ \
  X(cuStreamCreate) X(cuStreamCreateWithPriority) X(cuStreamDestroy_v2) \
  X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz) X(cuStreamQuery) X(cuStreamQuery_ptsz) \
  X(cuStreamWaitEvent) X(cuStreamWaitEvent_ptsz) X(cuEventCreate) X(cuEventDestroy_v2) \
  X(cuEventRecord) X(cuEventRecord_ptsz) X(cuEventRecordWithFlags) X(cuEventRecordWithFlags_ptsz) \
  X(cuEventQuery) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventElapsedTime_v2) \
  X(cuLaunchHostFunc) X(cuLaunchHostFunc_ptsz) X(cuStreamAddCallback) X(cuStreamAddCallback_ptsz) \
  X(cuStreamWriteValue32) X(cuStreamWriteValue32_ptsz) X(cuStreamWriteValue32_v2) X(cuStreamWriteValue32_v2_ptsz) \
  /* fake_graph.c */ \
  X(cuStreamIsCapturing) X(cuStreamIsCapturing_ptsz) X(cuStreamBeginCapture_v2) \
  X(cuStreamBeginCapture_v2_ptsz) X(cuStreamEndCapture) X(cuStreamEndCapture_ptsz) \
  X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphLaunch_ptsz) X(cuGraphDestroy) \
  X(cuGraphExecDestroy) X(cuThreadExchangeStreamCaptureMode) \
  /* fake_copy.c */ \
  X(cuMemsetD8_v2) X(cuMemsetD8_v2_ptds) X(cuMemsetD8Async) X(cuMemsetD8Async_ptsz) \
  X(cuMemcpy) X(cuMemcpy_ptds) X(cuMemcpyAsync) X(cuMemcpyAsync_ptsz) \
  X(cuMemcpyHtoD_v2) X(cuMemcpyHtoD_v2_ptds) X(cuMemcpyDtoH_v2) X(cuMemcpyDtoH_v2_ptds) \
  X(cuMemcpyDtoD_v2) X(cuMemcpyDtoD_v2_ptds) X(cuMemcpyHtoDAsync_v2) X(cuMemcpyHtoDAsync_v2_ptsz) \
  X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoHAsync_v2_ptsz) X(cuMemcpyDtoDAsync_v2) \
  X(cuMemcpyDtoDAsync_v2_ptsz) X(cuMemcpy2D_v2) X(cuMemcpy2D_v2_ptds) X(cuMemcpy2DUnaligned_v2) \
  X(cuMemcpy2DUnaligned_v2_ptds) X(cuMemcpy2DAsync_v2) X(cuMemcpy2DAsync_v2_ptsz) \
  X(cuMemcpy3D_v2) X(cuMemcpy3D_v2_ptds) X(cuMemcpy3DAsync_v2) X(cuMemcpy3DAsync_v2_ptsz) \
  X(cuMemcpyPeer) X(cuMemcpyPeer_ptds) X(cuMemcpyPeerAsync) X(cuMemcpyPeerAsync_ptsz) \
  X(cuMemcpyBatchAsync) X(cuMemcpyBatchAsync_ptsz) X(cuMemcpyBatchAsync_v2) \
  X(cuMemcpyBatchAsync_v2_ptsz) \
  /* fake_procaddr.c */ \
  X(cuGetProcAddress) X(cuGetProcAddress_v2)

#endif
