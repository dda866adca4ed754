/* capture.c: stream capture as the shim meets it. Copies during capture must pass through (a graph
 * replays from the program's buffers); the shim's own driver calls (registering, allocating pinned
 * memory, events on the legacy stream) must never break a capture the program is making. Each
 * check prints the call's code and cuStreamEndCapture's (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
 * when a rule was broken). */
#include "conform.h"

#define N (256u * 1024)

static const char *status_name(CUstreamCaptureStatus st)
{
    switch (st) {
    case CU_STREAM_CAPTURE_STATUS_NONE: return "none";
    case CU_STREAM_CAPTURE_STATUS_ACTIVE: return "active";
    case CU_STREAM_CAPTURE_STATUS_INVALIDATED: return "invalidated";
    default: return "unknown";
    }
}

static void status(const char *key, struct test_driver *drv, CUstream s)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult (*is)(CUstream, CUstreamCaptureStatus *) =
        drv == &pt ? (CUresult(*)(CUstream, CUstreamCaptureStatus *))test_driver_extra(
                         &pt, "cuStreamIsCapturing_ptsz", "cuStreamIsCapturing", 13000)
                   : ex.is_capturing;
    CUresult r = is ? is(s, &st) : CUDA_ERROR_NOT_FOUND;
    say(key, "%s%s%s", rcs(r), r == CUDA_SUCCESS ? "; " : "", r == CUDA_SUCCESS ? status_name(st) : "");
}

/* Ends the capture on s and prints the result; returns the graph (NULL when none). */
static CUgraph end(const char *key, struct test_driver *drv, CUstream s)
{
    CUgraph g = NULL;
    CUresult r = drv->end_capture(s, &g);
    say(key, "%s; graph %s", rcs(r), g ? "yes" : "no");
    return g;
}

static void drop(CUgraph g)
{
    if (g && ex.graph_destroy)
        ex.graph_destroy(g);
}

void case_capture_status(void)
{
    CUstream blocking, nonblocking;
    NEED(d.stream_create(&blocking, 0));
    NEED(d.stream_create(&nonblocking, CU_STREAM_NON_BLOCKING));
    status("idle.blocking", &d, blocking);
    status("idle.legacy", &d, NULL);
    say("begin.blocking_global", "%s", rcs(d.begin_capture(blocking, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    status("capturing.blocking", &d, blocking);
    status("capturing.other_stream", &d, nonblocking);
    status("capturing.legacy", &d, NULL);
    status("capturing.legacy_handle", &d, CU_STREAM_LEGACY);
    status("capturing.blocking_after_legacy_query", &d, blocking);
    say("begin_again", "%s", rcs(d.begin_capture(blocking, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    drop(end("end.blocking", &d, blocking));
    say("end_again", "%s", rcs(d.end_capture(blocking, &(CUgraph){NULL})));
    say("begin.legacy", "%s", rcs(d.begin_capture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL)));

    say("begin.nonblocking_global", "%s", rcs(d.begin_capture(nonblocking, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    status("nonblocking_capturing.legacy", &d, NULL);
    drop(end("end.nonblocking", &d, nonblocking));

    /* the per-thread default stream is a blocking stream */
    say("begin.per_thread", "%s", rcs(pt.begin_capture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    status("per_thread_capturing.per_thread", &pt, NULL);
    status("per_thread_capturing.legacy", &d, NULL);
    drop(end("end.per_thread", &pt, NULL));
}

/* Pageable copies recorded during capture, in one mode; the graph replays them from the
 * program's buffers as they are when it runs. */
static void pageable(const char *mode_name, CUstreamCaptureMode mode)
{
    char key[128];
    CUstream s;
    CUdeviceptr dev;
    unsigned char *src = malloc(N), *dst = malloc(N);
    NEED(d.stream_create(&s, 0));
    NEED(d.mem_alloc(&dev, N));
    dev_fill(dev, N, 20);
    test_fill(src, N, 21);
    memset(dst, 0, N);
#define K(name) (snprintf(key, sizeof key, "%s.%s", mode_name, name), key)
    say(K("begin"), "%s", rcs(d.begin_capture(s, mode)));
    say(K("h2d_async"), "%s", rcs(d.htod_async(dev, src, N, s)));
    say(K("d2h_async"), "%s", rcs(d.dtoh_async(dst, dev, N, s)));
    status(K("status"), &d, s);
    CUgraph g = end(K("end"), &d, s);
    /* (not before the end: reading the device back on the legacy stream would break the capture) */
    say(K("nothing_ran"), "device %s; host %s", dev_digest(dev, N), digest(dst, N));
    if (g) {
        CUgraphExec ge = NULL;
        CUresult r = d.graph_instantiate(&ge, g, 0);
        say(K("instantiate"), "%s", rcs(r));
        test_fill(src, N, 22); /* the replay reads the source as it is now */
        if (r == CUDA_SUCCESS) {
            r = d.graph_launch(ge, s);
            CUresult rs = d.stream_sync(s);
            say(K("replay"), "%s; sync %s; host %s", rcs(r), rcs(rs), digest(dst, N));
            if (ex.graph_exec_destroy)
                ex.graph_exec_destroy(ge);
        }
        drop(g);
    }
#undef K
    free(src);
    free(dst);
}

void case_capture_pageable(void)
{
    pageable("global", CU_STREAM_CAPTURE_MODE_GLOBAL);
    pageable("thread_local", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    pageable("relaxed", CU_STREAM_CAPTURE_MODE_RELAXED);
}

/* Synchronous calls while a stream captures: on the legacy stream (implicitly ordered after a
 * blocking capturing stream) and on the capturing stream itself. */
void case_capture_sync(void)
{
    CUstream blocking, nonblocking;
    CUdeviceptr dev;
    unsigned char *h = malloc(N);
    test_fill(h, N, 30);
    NEED(d.stream_create(&blocking, 0));
    NEED(d.stream_create(&nonblocking, CU_STREAM_NON_BLOCKING));
    NEED(d.mem_alloc(&dev, N));

    say("legacy_sync_h2d.begin", "%s", rcs(d.begin_capture(blocking, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    say("legacy_sync_h2d.copy", "%s", rcs(d.htod(dev, h, N)));
    status("legacy_sync_h2d.status", &d, blocking);
    drop(end("legacy_sync_h2d.end", &d, blocking));

    say("legacy_sync_d2h.begin", "%s", rcs(d.begin_capture(blocking, CU_STREAM_CAPTURE_MODE_RELAXED)));
    say("legacy_sync_d2h.copy", "%s", rcs(d.dtoh(h, dev, N)));
    drop(end("legacy_sync_d2h.end", &d, blocking));

    say("legacy_async_h2d.begin", "%s", rcs(d.begin_capture(blocking, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    say("legacy_async_h2d.copy", "%s", rcs(d.htod_async(dev, h, N, NULL)));
    drop(end("legacy_async_h2d.end", &d, blocking));

    say("legacy_sync_h2d_nonblocking_capture.begin", "%s",
        rcs(d.begin_capture(nonblocking, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    say("legacy_sync_h2d_nonblocking_capture.copy", "%s", rcs(d.htod(dev, h, N)));
    drop(end("legacy_sync_h2d_nonblocking_capture.end", &d, nonblocking));

    say("stream_sync.begin", "%s", rcs(d.begin_capture(nonblocking, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    say("stream_sync.sync", "%s", rcs(d.stream_sync(nonblocking)));
    status("stream_sync.status", &d, nonblocking);
    say("stream_sync.copy_after", "%s", rcs(d.htod_async(dev, h, N, nonblocking)));
    drop(end("stream_sync.end", &d, nonblocking));

    say("stream_query.begin", "%s", rcs(d.begin_capture(nonblocking, CU_STREAM_CAPTURE_MODE_RELAXED)));
    say("stream_query.query", "%s", rcs(d.stream_query(nonblocking)));
    drop(end("stream_query.end", &d, nonblocking));

    say("per_thread_sync_copy.begin", "%s", rcs(pt.begin_capture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    say("per_thread_sync_copy.copy", "%s", rcs(pt.htod(dev, h, N)));
    drop(end("per_thread_sync_copy.end", &pt, NULL));
    free(h);
}

/* ---- registering, unregistering, allocating while a stream captures ---------------------------- */

struct other {
    unsigned char *buf;
    CUresult reg, unreg;
    CUcontext ctx;
};

static void *register_from_another_thread(void *arg)
{
    struct other *o = arg;
    d.ctx_set(o->ctx);
    o->reg = d.host_register(o->buf, N, 0);
    o->unreg = o->reg == CUDA_SUCCESS ? d.host_unregister(o->buf) : CUDA_ERROR_NOT_FOUND;
    return NULL;
}

/* Begins a capture of s in `mode`, registers and unregisters buf from this thread (relaxed around
 * the calls when `relax`) or from another thread, then ends the capture. */
static void reg_during(const char *key, CUstream s, CUstreamCaptureMode mode, int relax, int other_thread,
                       unsigned char *buf)
{
    char k[160];
    snprintf(k, sizeof k, "%s.begin", key);
    say(k, "%s", rcs(d.begin_capture(s, mode)));
    CUresult reg, unreg;
    if (other_thread) {
        struct other o = {buf, 0, 0, ctx0};
        pthread_t t;
        pthread_create(&t, NULL, register_from_another_thread, &o);
        pthread_join(t, NULL);
        reg = o.reg, unreg = o.unreg;
    } else {
        CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
        if (relax) {
            CUresult x = ex.exchange_mode ? ex.exchange_mode(&m) : CUDA_ERROR_NOT_FOUND;
            snprintf(k, sizeof k, "%s.exchange", key);
            say(k, "%s; previous mode %d", rcs(x), (int)m);
        }
        reg = d.host_register(buf, N, 0);
        unreg = reg == CUDA_SUCCESS ? d.host_unregister(buf) : CUDA_ERROR_NOT_FOUND;
        if (relax && ex.exchange_mode) {
            CUresult x = ex.exchange_mode(&m);
            snprintf(k, sizeof k, "%s.exchange_back", key);
            say(k, "%s; previous mode %d", rcs(x), (int)m);
        }
    }
    snprintf(k, sizeof k, "%s.register", key);
    say(k, "%s", rcs(reg));
    snprintf(k, sizeof k, "%s.unregister", key);
    say(k, "%s", reg == CUDA_SUCCESS ? rcs(unreg) : "not tried");
    snprintf(k, sizeof k, "%s.end", key);
    drop(end(k, &d, s));
    CUresult left = d.host_unregister(buf); /* nothing must be left registered */
    snprintf(k, sizeof k, "%s.left_registered", key);
    say(k, "%s", left == CUDA_SUCCESS ? "yes" : "no");
}

void case_capture_register(void)
{
    CUstream s;
    NEED(d.stream_create(&s, 0));
    unsigned char *buf = page_alloc(N);
    /* registering and unregistering with no capture anywhere */
    say("no_capture.register", "%s", rcs(d.host_register(buf, N, 0)));
    say("no_capture.unregister", "%s", rcs(d.host_unregister(buf)));
    reg_during("global", s, CU_STREAM_CAPTURE_MODE_GLOBAL, 0, 0, buf);
    reg_during("global_exchanged_relaxed", s, CU_STREAM_CAPTURE_MODE_GLOBAL, 1, 0, buf);
    reg_during("thread_local", s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, 0, 0, buf);
    reg_during("relaxed", s, CU_STREAM_CAPTURE_MODE_RELAXED, 0, 0, buf);
    reg_during("global.other_thread", s, CU_STREAM_CAPTURE_MODE_GLOBAL, 0, 1, buf);
    reg_during("thread_local.other_thread", s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, 0, 1, buf);

    /* the registration made before the capture, unregistered during it */
    say("unregister_during.register", "%s", rcs(d.host_register(buf, N, 0)));
    say("unregister_during.begin", "%s", rcs(d.begin_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    say("unregister_during.unregister", "%s", rcs(d.host_unregister(buf)));
    drop(end("unregister_during.end", &d, s));
    say("unregister_during.unregister_after", "%s", rcs(d.host_unregister(buf)));

    /* allocating during a global capture (the best-known prohibited call) */
    CUdeviceptr dev = 0;
    void *pinned = NULL;
    say("alloc.begin", "%s", rcs(d.begin_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    CUresult r = d.mem_alloc(&dev, N);
    say("alloc.mem_alloc", "%s", rcs(r));
    drop(end("alloc.end", &d, s));
    if (r == CUDA_SUCCESS)
        d.mem_free(dev);
    say("host_alloc.begin", "%s", rcs(d.begin_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    r = d.host_alloc(&pinned, N, 0);
    say("host_alloc.host_alloc", "%s", rcs(r));
    drop(end("host_alloc.end", &d, s));
    if (r == CUDA_SUCCESS)
        d.free_host(pinned);
}

/* While the program captures on s, it copies pageable memory on another, non-capturing stream:
 * a buffer copied again and again (pin-on-reuse material) and fresh 9 MiB buffers (staging
 * material at the default policy; the shim's pool grows meanwhile). The shim may register, stage
 * or allocate for those copies, but must leave the capture intact. */
void case_capture_other_stream(void)
{
    const size_t big = 9u << 20;
    CUstream s, t;
    CUdeviceptr dev;
    NEED(d.stream_create(&s, 0));
    NEED(d.stream_create(&t, CU_STREAM_NON_BLOCKING));
    NEED(d.mem_alloc(&dev, big));
    unsigned char *reused = malloc(4 * N), *back = malloc(big);
    for (int mode = 0; mode < 2; mode++) {
        const char *m = mode ? "relaxed" : "global";
        char k[128];
        snprintf(k, sizeof k, "%s.begin", m);
        say(k, "%s", rcs(d.begin_capture(s, mode ? CU_STREAM_CAPTURE_MODE_RELAXED : CU_STREAM_CAPTURE_MODE_GLOBAL)));
        for (int i = 0; i < 8; i++) {
            int fresh = i & 1;
            size_t n = fresh ? big : 4 * N;
            unsigned char *src = fresh ? malloc(big) : reused;
            test_fill(src, n, (uint32_t)(40 + 10 * mode + i));
            CUresult r1 = d.htod_async(dev, src, n, t);
            memset(back, 0, n);
            CUresult r2 = d.dtoh_async(back, dev, n, t);
            CUresult r3 = d.stream_sync(t);
            snprintf(k, sizeof k, "%s.%s%d", m, fresh ? "fresh" : "reused", i / 2);
            say(k, "h2d %s; d2h %s; sync %s; %s", rcs(r1), rcs(r2), rcs(r3),
                memcmp(src, back, n) ? "bytes differ" : "bytes identical");
            if (fresh)
                free(src);
        }
        status(mode ? "relaxed.status" : "global.status", &d, s);
        snprintf(k, sizeof k, "%s.end", m);
        drop(end(k, &d, s));
    }
    free(reused);
    free(back);
}

/* After the program's own pageable copies (which the shim stages or registers, with driver calls of
 * its own on this thread), the thread's capture mode is still the program's: global, so a
 * registration or an allocation during a global capture is still prohibited. */
void case_capture_mode_after_copies(void)
{
    const size_t big = 9u << 20;
    CUstream s;
    CUdeviceptr dev;
    NEED(d.stream_create(&s, 0));
    NEED(d.mem_alloc(&dev, big));
    unsigned char *reused = malloc(big);
    char k[64];
    for (int i = 0; i < 6; i++) {
        test_fill(reused, big, (uint32_t)(60 + i));
        CUresult r1 = d.htod(dev, reused, big);
        CUresult r2 = d.dtoh(reused, dev, big);
        snprintf(k, sizeof k, "copies%d", i);
        say(k, "h2d %s; d2h %s; host %s", rcs(r1), rcs(r2), digest(reused, big));
    }
    unsigned char *buf = page_alloc(N);
    say("global.begin", "%s", rcs(d.begin_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    CUresult reg = d.host_register(buf, N, 0);
    say("global.register", "%s", rcs(reg));
    CUdeviceptr more = 0;
    CUresult al = d.mem_alloc(&more, N);
    say("global.mem_alloc", "%s", rcs(al));
    drop(end("global.end", &d, s));
    if (reg == CUDA_SUCCESS)
        d.host_unregister(buf);
    if (al == CUDA_SUCCESS)
        d.mem_free(more);
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_GLOBAL;
    CUresult r = ex.exchange_mode ? ex.exchange_mode(&m) : CUDA_ERROR_NOT_FOUND;
    say("thread_mode", "%s; mode %d", rcs(r), (int)m);
    free(reused);
}
