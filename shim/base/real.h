/* real.h: finding the real functions behind the shim without ever linking libcuda.
 * Contract: thread-safe, lazy; a NULL result means "not loaded / not present", never an error
 * message. The real dlsym is resolved with dlvsym so the shim's own dlsym is not re-entered. */
#ifndef PINSHIM_REAL_H
#define PINSHIM_REAL_H

#include <cuda.h>
#include <stdbool.h>

/* The libc dlsym. Read by the assembly entry of dlsym (dlsym_entry.S): keep the name. */
extern void *(*pinshim_real_dlsym)(void *handle, const char *name);

/* Resolves pinshim_real_dlsym if needed. Returns 0 on success, -1 if libc has no dlsym. */
int real_dlsym_ready(void);

/* The already-loaded libcuda.so.1 (never loads it), or NULL. */
void *real_libcuda(void);

/* A symbol of libcuda (RTLD_NEXT first, then the libcuda handle), or NULL. */
void *real_driver_symbol(const char *name);

/* real_driver_symbol(name), looked up once and kept in *slot (thread-safe, slot starts NULL). A
 * symbol not found is looked up again while libcuda is not loaded, and never again once the loaded
 * libcuda lacks it (each call of a hot path would otherwise pay a failing dlsym, some 20,000
 * instructions). */
void *real_driver_symbol_cached(void **slot, const char *name);

/* Whether `stream` is capturing, asked with the reentrancy depth raised; an error counts as
 * capturing (the safe answer for callers that would add work or wait), a driver without
 * cuStreamIsCapturing as not. */
bool real_stream_capturing(CUstream stream);

/* Whether [dev, dev + bytes) lies inside one allocation of plain device memory (not managed, not
 * host memory seen through unified addressing), asked of the driver (cuPointerGetAttributes) with the
 * depth raised; false when the driver cannot say. The real driver refuses a copy whose device range
 * runs from one allocation into the next, whatever the host side's kind (conformance,
 * risky.device_span): a copy the shim cuts or stages in pieces must ask this first, since each piece
 * alone could lie inside one allocation and succeed. */
bool real_device_range_whole(CUdeviceptr dev, size_t bytes);

/* Around a driver call of the shim's own: the calling thread's stream-capture mode set to relaxed
 * (so the call never invalidates a capture the thread is making), then restored. */
void real_relaxed_begin(CUstreamCaptureMode *saved);
void real_relaxed_end(CUstreamCaptureMode saved);

#endif
