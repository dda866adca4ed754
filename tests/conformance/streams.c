/* streams.c: the ordering the shim must keep when it stages or registers behind the program's back:
 * event and stream queries before and after completion, the legacy default stream waiting for a
 * blocking stream (and not for a non-blocking one), the per-thread default stream, a host function
 * running after the stream's earlier copy (what the guard relies on). No timing: a
 * gate (a host function that waits) holds a stream; a helper thread opens it after GATE_MS so that
 * a copy that waits returns "after the gate opened" and one that does not returns "before". */
#include "conform.h"

#define GATE_MS 300
#define N (256u * 1024) /* above the shim's staging and registration thresholds in the tiny policy */

static const char *when(struct gate *g)
{
    return gate_is_open(g) ? "after_gate" : "before_gate";
}

void case_streams_events(void)
{
    CUstream s;
    CUevent ev;
    NEED(d.stream_create(&s, 0));
    NEED(d.event_create(&ev, 0));
    say("never_recorded.query", "%s", rcs(d.event_query(ev)));
    say("idle_stream.query", "%s", rcs(d.stream_query(s)));
    struct gate g;
    gate_init(&g);
    NEED(gate_enqueue(&d, &g, s));
    CUdeviceptr dev;
    void *pinned;
    NEED(d.mem_alloc(&dev, N));
    NEED(d.host_alloc(&pinned, N, 0));
    test_fill(pinned, N, 3);
    say("copy_behind_gate", "%s", rcs(d.htod_async(dev, pinned, N, s)));
    say("record", "%s", rcs(d.event_record(ev, s)));
    say("behind_gate.event_query", "%s", rcs(d.event_query(ev)));
    say("behind_gate.stream_query", "%s", rcs(d.stream_query(s)));
    gate_open(&g);
    say("event_sync", "%s", rcs(d.event_sync(ev)));
    say("done.event_query", "%s", rcs(d.event_query(ev)));
    say("done.stream_query", "%s", rcs(d.stream_query(s)));
    say("done.device", "%s", dev_digest(dev, N));
    /* an event recorded on the legacy stream after a synchronous copy */
    unsigned char *h = malloc(N);
    test_fill(h, N, 4);
    say("sync_copy", "%s", rcs(d.htod(dev, h, N)));
    say("legacy_record", "%s", rcs(d.event_record(ev, NULL)));
    say_dev("legacy_event_sync", d.event_sync(ev), dev, N);
    gate_finish(&g);
}

/* One check: stream s (blocking or not) holds a gate then writes pattern B into dev; the calling
 * thread then makes a synchronous pageable copy through `drv` (legacy or per-thread flavour).
 * Prints whether that copy returned before or after the gate opened, and what it read or what
 * the device ends up holding. */
static void ordering(const char *key, struct test_driver *drv, CUstream s, int d2h)
{
    CUdeviceptr dev;
    void *pinned;
    unsigned char *h = malloc(N);
    NEED(d.mem_alloc(&dev, N));
    NEED(d.host_alloc(&pinned, N, 0));
    dev_fill(dev, N, 10);            /* pattern A */
    test_fill(pinned, N, 11);        /* pattern B, written by s behind the gate */
    test_fill(h, N, 12);             /* pattern C, the synchronous H2D's source */
    struct gate g;
    gate_init(&g);
    NEED(gate_enqueue(&d, &g, s));
    NEED(d.htod_async(dev, pinned, N, s));
    gate_open_later(&g, GATE_MS);
    CUresult r = d2h ? drv->dtoh(h, dev, N) : drv->htod(dev, h, N);
    const char *w = when(&g);
    /* let the copy's own stream drain before the gate opens early: an H2D from pageable memory may
     * return while its DMA still runs, and must not race with s's write */
    CUresult rs = drv->stream_sync(drv == &pt ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY);
    gate_finish(&g);
    NEED(d.stream_sync(s));
    NEED(d.ctx_sync(NULL));
    unsigned char *a = malloc(N), *b = malloc(N), *c = malloc(N), *now = malloc(N);
    test_fill(a, N, 10);
    test_fill(b, N, 11);
    test_fill(c, N, 12);
    const char *what;
    if (d2h) { /* what the copy read: A (it ran before s's write) or B (after) */
        what = !memcmp(h, b, N) ? "read_B_written_by_s" : !memcmp(h, a, N) ? "read_A_from_before_s" : "read_other";
    } else { /* what the device holds: C (the copy ran after s's write) or B (before) */
        NEED(d.dtoh(now, dev, N));
        what = !memcmp(now, c, N)   ? "device_has_C_copy_ran_last"
               : !memcmp(now, b, N) ? "device_has_B_copy_ran_first"
                                    : "device_has_other";
    }
    say(key, "%s; returned %s; own stream sync %s; %s", rcs(r), w, rcs(rs), what);
    free(a), free(b), free(c), free(now), free(h);
    NEED(d.free_host(pinned));
    NEED(d.mem_free(dev));
}

void case_streams_legacy(void)
{
    CUstream blocking, nonblocking;
    NEED(d.stream_create(&blocking, 0));
    NEED(d.stream_create(&nonblocking, CU_STREAM_NON_BLOCKING));
    ordering("blocking.sync_d2h", &d, blocking, 1);
    ordering("blocking.sync_h2d", &d, blocking, 0);
    ordering("nonblocking.sync_d2h", &d, nonblocking, 1);
    ordering("nonblocking.sync_h2d", &d, nonblocking, 0);
}

void case_streams_ptds(void)
{
    CUstream blocking;
    NEED(d.stream_create(&blocking, 0));
    /* the per-thread default stream does not wait for other blocking streams */
    ordering("ptds_copy_after_blocking.sync_d2h", &pt, blocking, 1);
    ordering("ptds_copy_after_blocking.sync_h2d", &pt, blocking, 0);
    /* work on the per-thread stream, then a legacy-stream copy: the legacy stream waits for it */
    ordering("legacy_copy_after_ptds.sync_d2h", &d, CU_STREAM_PER_THREAD, 1);
    ordering("legacy_copy_after_ptds.sync_h2d", &d, CU_STREAM_PER_THREAD, 0);
}

/* A pageable async H2D queued behind a held stream: whether the call returns before the gate
 * opens, by size, stream and entry point. CUDA's API synchronization behavior says only that the
 * driver "may synchronize with the stream" when it stages pageable memory; the real driver does
 * above a threshold (stage/earlier_work.h), which staging keeps and relies on when a copy's own
 * queued DMAs fill the pool (stage/pool.c). The sizes bracket the threshold; the legacy and
 * per-thread default streams, cuMemcpyAsync and cuMemcpy2DAsync are checked on either side of it.
 * The source is overwritten right after the call: the device must still receive what it held at
 * the call. The gate stays shut for GATE_LONG_MS, far longer than staging 384 MiB takes, so
 * "before_gate" means the call did not wait for the stream. */
#define GATE_LONG_MS 1000
enum gate_copy { GC_HTOD, GC_UNIFIED, GC_2D };
enum gate_stream { GS_CREATED, GS_LEGACY, GS_PER_THREAD };

static CUresult gate_copy(enum gate_copy how, struct test_driver *drv, CUdeviceptr dev, const void *src, size_t n,
                          CUstream s)
{
    if (how == GC_UNIFIED)
        return drv->memcpy_async(dev, (CUdeviceptr)src, n, s);
    if (how == GC_2D) { /* rows of 64 KiB, packed on both sides */
        CUDA_MEMCPY2D m = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src, .srcPitch = 64u << 10,
                           .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dev, .dstPitch = 64u << 10,
                           .WidthInBytes = 64u << 10, .Height = n / (64u << 10)};
        return drv->m2d_async(&m, s);
    }
    return drv->htod_async(dev, src, n, s);
}

void case_streams_async_behind_gate(void)
{
    static const struct {
        const char *key;
        enum gate_copy how;
        enum gate_stream on;
        size_t bytes;
    } checks[] = {
        {"pageable_256k", GC_HTOD, GS_CREATED, 256u << 10},
        {"pageable_2m", GC_HTOD, GS_CREATED, 2u << 20},
        {"pageable_2304k", GC_HTOD, GS_CREATED, 2304u << 10},
        {"pageable_2560k", GC_HTOD, GS_CREATED, 2560u << 10},
        {"pageable_2816k", GC_HTOD, GS_CREATED, 2816u << 10},
        {"pageable_3m", GC_HTOD, GS_CREATED, 3u << 20},
        {"pageable_4m", GC_HTOD, GS_CREATED, 4u << 20},
        {"pageable_64m", GC_HTOD, GS_CREATED, 64u << 20},
        {"pageable_384m", GC_HTOD, GS_CREATED, 384u << 20},
        {"legacy_stream_256k", GC_HTOD, GS_LEGACY, 256u << 10},
        {"legacy_stream_4m", GC_HTOD, GS_LEGACY, 4u << 20},
        {"per_thread_stream_256k", GC_HTOD, GS_PER_THREAD, 256u << 10},
        {"per_thread_stream_4m", GC_HTOD, GS_PER_THREAD, 4u << 20},
        {"memcpy_async_256k", GC_UNIFIED, GS_CREATED, 256u << 10},
        {"memcpy_async_4m", GC_UNIFIED, GS_CREATED, 4u << 20},
        {"memcpy2d_async_256k", GC_2D, GS_CREATED, 256u << 10},
        {"memcpy2d_async_4m", GC_2D, GS_CREATED, 4u << 20},
    };
    CUstream created;
    NEED(d.stream_create(&created, CU_STREAM_NON_BLOCKING)); /* nothing else waits for it */
    const CUstream streams[] = {[GS_CREATED] = created, [GS_LEGACY] = CU_STREAM_LEGACY,
                                [GS_PER_THREAD] = CU_STREAM_PER_THREAD};
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        size_t n = checks[i].bytes;
        struct test_driver *drv = checks[i].on == GS_PER_THREAD ? &pt : &d;
        CUstream s = streams[checks[i].on];
        unsigned char *src = malloc(n);
        CUdeviceptr dev;
        if (!src)
            need(CUDA_ERROR_OUT_OF_MEMORY, "malloc");
        NEED(d.mem_alloc(&dev, n));
        test_fill(src, n, 30 + (unsigned)i);
        struct gate g;
        gate_init(&g);
        NEED(gate_enqueue(drv, &g, s));
        gate_open_later(&g, GATE_LONG_MS);
        CUresult r = gate_copy(checks[i].how, drv, dev, src, n, s);
        const char *w = when(&g);
        memset(src, 0xee, n); /* the program may reuse its source at once */
        gate_finish(&g);
        CUresult rs = drv->stream_sync(s);
        say(checks[i].key, "%s; returned %s; stream sync %s; device %s", rcs(r), w, rcs(rs), dev_digest(dev, n));
        NEED(d.mem_free(dev));
        free(src);
    }
}

/* What the guard relies on to release a copy at a host function's start: a host function launched
 * on a stream after an async D2H runs only once the copy is done, so it reads the copy's bytes.
 * The gate holds the stream until the launch has returned, so the copy cannot be done earlier. */
struct host_reader {
    const unsigned char *host;
    const unsigned char *want;
    struct gate *g;
    const char *seen;
};

static void CUDA_CB read_from_host_fn(void *arg)
{
    struct host_reader *r = arg;
    r->seen = !gate_is_open(r->g)              ? "ran_before_gate"
              : memcmp(r->host, r->want, N) == 0 ? "ran_after_gate; read_the_copy"
                                                 : "ran_after_gate; read_stale_bytes";
}

/* An async D2H of N bytes (device bytes of `seed`) into zeroed pinned memory, on a new stream a
 * gate holds, so that what is launched behind it runs only once the gate opens. */
struct held_d2h {
    CUstream s;
    CUdeviceptr dev;
    void *pinned;
    unsigned char *want; /* the bytes the copy brings */
    struct gate g;
};

static void held_d2h_start(struct held_d2h *h, uint32_t seed)
{
    h->want = malloc(N);
    NEED(d.stream_create(&h->s, 0));
    NEED(d.mem_alloc(&h->dev, N));
    NEED(d.host_alloc(&h->pinned, N, 0));
    dev_fill(h->dev, N, seed);
    test_fill(h->want, N, seed);
    memset(h->pinned, 0, N);
    gate_init(&h->g);
    NEED(gate_enqueue(&d, &h->g, h->s));
    say("d2h_behind_gate", "%s", rcs(d.dtoh_async(h->pinned, h->dev, N, h->s)));
}

static void held_d2h_finish(struct held_d2h *h)
{
    gate_finish(&h->g);
    free(h->want);
    NEED(d.free_host(h->pinned));
    NEED(d.mem_free(h->dev));
}

void case_streams_host_fn(void)
{
    struct held_d2h h;
    held_d2h_start(&h, 20);
    struct host_reader r = {h.pinned, h.want, &h.g, "never_ran"};
    say("launch", "%s", rcs(d.launch_host_func(h.s, read_from_host_fn, &r)));
    gate_open(&h.g);
    say("stream_sync", "%s", rcs(d.stream_sync(h.s)));
    say("host_fn", "%s", r.seen);
    held_d2h_finish(&h);
}

/* The same ordering through cuStreamAddCallback, the older form the guard also counts as a sync:
 * the callback reads the copy's bytes and is told CUDA_SUCCESS and the stream it was added to.
 * Then its argument checks, and a capture (which CUDA documents it does not support). */
struct callback_reader {
    struct host_reader r;
    CUstream given, seen_stream;
    CUresult status;
    int calls;
};

static void CUDA_CB read_from_callback(CUstream s, CUresult status, void *arg)
{
    struct callback_reader *c = arg;
    read_from_host_fn(&c->r);
    c->seen_stream = s;
    c->status = status;
    c->calls++;
}

static void CUDA_CB count_callback(CUstream s, CUresult status, void *arg)
{
    (void)s, (void)status;
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_RELAXED);
}

void case_streams_callback(void)
{
    struct held_d2h h;
    held_d2h_start(&h, 21);
    struct callback_reader c = {{h.pinned, h.want, &h.g, "never_ran"}, h.s, NULL, CUDA_ERROR_UNKNOWN, 0};
    say("add", "%s", rcs(d.add_callback(h.s, read_from_callback, &c, 0)));
    gate_open(&h.g);
    say("stream_sync", "%s", rcs(d.stream_sync(h.s)));
    say("callback", "%s; calls %d; status %s; stream %s", c.r.seen, c.calls, rcs(c.status),
        c.seen_stream == h.s ? "as_given" : "other");

    int count = 0;
    say("flags_1", "%s", rcs(d.add_callback(h.s, count_callback, &count, 1)));
    say("null_callback", "%s", rcs(d.add_callback(h.s, NULL, &count, 0)));
    say("legacy_stream", "%s", rcs(d.add_callback(NULL, count_callback, &count, 0)));
    CUstream cs;
    NEED(d.stream_create(&cs, CU_STREAM_NON_BLOCKING));
    NEED(d.begin_capture(cs, CU_STREAM_CAPTURE_MODE_GLOBAL));
    say("capturing.add", "%s", rcs(d.add_callback(cs, count_callback, &count, 0)));
    CUgraph graph = NULL;
    CUresult r = d.end_capture(cs, &graph);
    say("capturing.end", "%s; graph %s", rcs(r), graph ? "yes" : "no");
    if (graph && ex.graph_destroy)
        ex.graph_destroy(graph);
    NEED(d.ctx_sync(NULL));
    say("calls_after_sync", "%d", __atomic_load_n(&count, __ATOMIC_RELAXED));
    held_d2h_finish(&h);
}
