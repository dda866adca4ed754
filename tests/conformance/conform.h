/* conform.h: the driver conformance suite's shared pieces. One binary (build/conformance/conform)
 * runs on whatever libcuda.so.1 the loader finds: the fake (LD_LIBRARY_PATH=build/fakecuda) or the
 * real driver. Each case runs in a process of its own and prints lines "<case>.<key> = <value>":
 * return codes as "<number> <enum name>", digests of the bytes that arrived, positions relative
 * to a known base; never an address, a time or anything else that varies from run to run.
 * Lines starting with '#' are informational and never compared. */
#ifndef PINSHIM_CONFORM_H
#define PINSHIM_CONFORM_H

#include <pthread.h>

#include "testutil.h"

/* Functions outside testutil's table, found through the same route (NULL when absent). */
#define CONF_EXTRA_FUNCS(X)                                                                            \
    X(memset_d8, "cuMemsetD8_v2", "cuMemsetD8", 13000, (CUdeviceptr, unsigned char, size_t))           \
    X(ptr_attr, "cuPointerGetAttribute", "cuPointerGetAttribute", 13000,                               \
      (void *, CUpointer_attribute, CUdeviceptr))                                                      \
    X(ptr_attrs, "cuPointerGetAttributes", "cuPointerGetAttributes", 13000,                            \
      (unsigned int, CUpointer_attribute *, void **, CUdeviceptr))                                     \
    X(ptr_set_attr, "cuPointerSetAttribute", "cuPointerSetAttribute", 13000,                           \
      (const void *, CUpointer_attribute, CUdeviceptr))                                                \
    X(host_get_flags, "cuMemHostGetFlags", "cuMemHostGetFlags", 13000, (unsigned int *, void *))       \
    X(host_get_devptr, "cuMemHostGetDevicePointer_v2", "cuMemHostGetDevicePointer", 13000,             \
      (CUdeviceptr *, void *, unsigned int))                                                           \
    X(is_capturing, "cuStreamIsCapturing", "cuStreamIsCapturing", 13000,                               \
      (CUstream, CUstreamCaptureStatus *))                                                             \
    X(exchange_mode, "cuThreadExchangeStreamCaptureMode", "cuThreadExchangeStreamCaptureMode", 13000, \
      (CUstreamCaptureMode *))                                                                         \
    X(graph_destroy, "cuGraphDestroy", "cuGraphDestroy", 13000, (CUgraph))                             \
    X(graph_exec_destroy, "cuGraphExecDestroy", "cuGraphExecDestroy", 13000, (CUgraphExec))            \
    X(ctx_create, "cuCtxCreate_v2", "cuCtxCreate", 3020, (CUcontext *, unsigned int, CUdevice))        \
    X(ctx_destroy, "cuCtxDestroy_v2", "cuCtxDestroy", 13000, (CUcontext))                              \
    X(ctx_get_current, "cuCtxGetCurrent", "cuCtxGetCurrent", 13000, (CUcontext *))                     \
    X(ctx_get_device, "cuCtxGetDevice", "cuCtxGetDevice", 2000, (CUdevice *))                          \
    X(primary_reset, "cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxReset", 13000, (CUdevice))       \
    X(event_destroy, "cuEventDestroy_v2", "cuEventDestroy", 13000, (CUevent))                          \
    X(driver_version, "cuDriverGetVersion", "cuDriverGetVersion", 13000, (int *))                      \
    X(device_name, "cuDeviceGetName", "cuDeviceGetName", 13000, (char *, int, CUdevice))

struct conf_extra {
#define X(field, exp, query, version, params) CUresult(*field) params;
    CONF_EXTRA_FUNCS(X)
#undef X
};

/* The driver, loaded by conf_start: legacy-stream flavour (d), per-thread flavour (pt). */
extern struct test_driver d, pt;
extern struct conf_extra ex;
extern CUcontext ctx0;
extern size_t PS; /* the host page size */

/* Loads the driver through cuGetProcAddress (as the CUDA runtime does), initializes it, makes
 * device 0's primary context current. Exits with a message when that fails. */
void conf_start(void);
int conf_devices(void);

/* ---- output ------------------------------------------------------------------------------------ */

/* "<case>.<key> = <printf result>", one line, flushed. */
void say(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Short-lived strings for say()'s arguments (a ring of buffers, valid for a few calls):
 * rcs(r) "<n> <NAME>", digest(p, n) 16 hex digits, rel(v, base, name) "name+N", "name-N", "null",
 * or "elsewhere" beyond 64 MiB (another mapping, whose distance varies). */
const char *rcs(CUresult r);
const char *digest(const void *p, size_t n);
const char *rel(uintptr_t v, uintptr_t base, const char *name);
const char *rc_name(CUresult r);
/* "<rc>; device <digest of n device bytes>", the digest taken after the call returned. */
void say_dev(const char *key, CUresult r, CUdeviceptr dev, size_t n);
/* "<rc>; sync <rc of cuStreamSynchronize(s)>", the synchronization made after the call. */
void say_async(const char *key, CUresult r, CUstream s);
/* A failed setup step: prints "<case>.<key> = setup failed: <rc>" and exits 1. */
void need(CUresult r, const char *key);
#define NEED(call) need((call), #call)

/* ---- memory helpers ---------------------------------------------------------------------------- */

void *page_alloc(size_t bytes);                            /* page-aligned pageable (malloc family) */
void dev_fill(CUdeviceptr dev, size_t n, uint32_t seed);    /* device bytes from test_fill */
const char *dev_digest(CUdeviceptr dev, size_t n);          /* digest of device bytes */

/* A copy world: a host buffer and a device buffer of the same length. world_copy copies host
 * [lo, hi) to or from the same offsets of the device buffer by one of the OP_* entry points, after
 * refilling both sides in its window (the range and two pages either side, so every line starts
 * from the same bytes), and prints the call's return code, the stream's (async ones), and the
 * digest of the receiving side's window. world_window sets the window for the other helpers. */
enum conf_op { OP_H2D, OP_H2D_ASYNC, OP_D2H, OP_D2H_ASYNC, OP_MEMCPY_H2D, OP_MEMCPY_D2H, OP_MEMCPY_ASYNC_H2D,
               OP_MEMCPY_ASYNC_D2H, OP_COUNT };
extern const char *const op_names[OP_COUNT];
struct world {
    unsigned char *host;
    size_t len;
    CUdeviceptr dev;
    CUstream s;
    uint32_t seed;
    size_t win_lo, win_hi; /* offsets: what world_refill fills and world_report digests */
};
void world_init(struct world *w, unsigned char *host, size_t len); /* allocates dev, creates s */
void world_window(struct world *w, uintptr_t lo, uintptr_t hi);
void world_refill(struct world *w);
void world_copy(struct world *w, const char *key, int op, uintptr_t lo, uintptr_t hi);
void world_report(struct world *w, const char *key, CUresult r, int async, int to_dev);

/* A gate: a host function that blocks its stream until the gate opens, so that work queued
 * behind it is certainly not done (no timing involved). gate_open_later opens it from a helper
 * thread after `ms`, so a call that wrongly waits for the stream still returns. */
struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
    pthread_t timer;
    int has_timer;
    unsigned ms;
};
void gate_init(struct gate *g);
CUresult gate_enqueue(struct test_driver *drv, struct gate *g, CUstream s);
void gate_open(struct gate *g);
int gate_is_open(struct gate *g);
void gate_open_later(struct gate *g, unsigned ms);
void gate_finish(struct gate *g); /* opens it and joins the helper thread */

/* ---- cases ------------------------------------------------------------------------------------- */

/* X(name, function): in the order they run; the risky ones (a real driver might crash or leave a
 * sticky error) come last. Each runs in a fresh process. */
#define CONF_CASES(X)                                                                                  \
    X("devices", case_devices)                                                                         \
    X("devices.ordinals", case_devices_ordinals)                                                       \
    X("edges.reg_pages", case_edges_reg_pages)                                                         \
    X("edges.reg_subpage", case_edges_reg_subpage)                                                     \
    X("edges.pinned", case_edges_pinned)                                                               \
    X("edges.adjacent", case_edges_adjacent)                                                           \
    X("edges.memcpy2d", case_edges_2d)                                                                 \
    X("edges.memcpy3d", case_edges_3d)                                                                 \
    X("edges.batch", case_edges_batch)                                                                 \
    X("edges.host_to_host", case_edges_h2h)                                                            \
    X("edges.heap_neighbours", case_edges_heap_neighbours)                                             \
    X("register.overlap", case_register_overlap)                                                       \
    X("register.unregister", case_register_unregister)                                                 \
    X("register.after_copies", case_register_after_copies)                                             \
    X("register.mappings", case_register_mappings)                                                     \
    X("attrs.kinds", case_attrs)                                                                       \
    X("attrs.reused", case_attrs_reused)                                                               \
    X("attrs.host_flags", case_attrs_host_flags)                                                       \
    X("streams.events", case_streams_events)                                                           \
    X("streams.legacy", case_streams_legacy)                                                           \
    X("streams.per_thread", case_streams_ptds)                                                         \
    X("streams.host_fn", case_streams_host_fn)                                                         \
    X("streams.callback", case_streams_callback)                                                       \
    X("streams.async_behind_gate", case_streams_async_behind_gate)                                     \
    X("memory.free_reuse", case_memory_free_reuse)                                                     \
    X("capture.status", case_capture_status)                                                           \
    X("capture.pageable", case_capture_pageable)                                                       \
    X("capture.sync_calls", case_capture_sync)                                                         \
    X("capture.register", case_capture_register)                                                       \
    X("capture.other_stream", case_capture_other_stream)                                               \
    X("capture.mode_after_copies", case_capture_mode_after_copies)                                     \
    X("multidev.registered", case_multidev_registered)                                                 \
    X("multidev.context", case_multidev_context)                                                       \
    X("multidev.reset", case_multidev_reset)                                                           \
    X("multidev.peer", case_multidev_peer)                                                             \
    X("risky.device_freed", case_device_freed)                                                         \
    X("risky.device_past_end", case_device_past_end)                                                   \
    X("risky.device_span", case_device_span)                                                           \
    X("risky.register_device_ptr", case_register_device_ptr)                                           \
    X("risky.pinned_past_mapping", case_pinned_past_mapping)

#define X(name, fn) void fn(void);
CONF_CASES(X)
#undef X

/* Two devices or more, else prints "<case>.devices = skipped: 1 device" and returns 0. */
int need_two_devices(void);

#endif
