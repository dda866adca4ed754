/* edges_nd.c: 2D, 3D and batch copies at a registration's end. The interesting shape: every row
 * lies inside the registration but the copy's extent (pitch x height, slice x depth) runs past its
 * end. Which of the two the driver checks decides whether a strided copy is refused. */
#include "conform.h"

#define HOST_BYTES (2u << 20)
#define W 256u     /* bytes per row */
#define PITCH 1024u

struct shape {
    const char *name;
    uintptr_t first; /* the first byte of the first row */
    int xy;          /* address the rows as (buffer base, X, Y) rather than (first row, 0, 0) */
};

static void setup(struct world *w, uintptr_t *rs, uintptr_t *re)
{
    unsigned char *h = page_alloc(HOST_BYTES);
    world_init(w, h, HOST_BYTES);
    *rs = (uintptr_t)h + HOST_BYTES / 4;
    *re = *rs + HOST_BYTES / 2;
    say("register", "%s", rcs(d.host_register((void *)*rs, *re - *rs, 0)));
}

/* ---- 2D ------------------------------------------------------------------------------------------ */

enum { OP2_H2D, OP2_H2D_ASYNC, OP2_H2D_UNALIGNED, OP2_D2H, OP2_D2H_ASYNC, OP2_COUNT };
static const char *const op2_names[OP2_COUNT] = {"h2d", "h2d_async", "h2d_unaligned", "d2h", "d2h_async"};

static void copy2d(struct world *w, const char *key, int op, const struct shape *sh, size_t rows)
{
    world_window(w, sh->first, sh->first + rows * PITCH);
    world_refill(w);
    CUDA_MEMCPY2D m;
    memset(&m, 0, sizeof m);
    size_t off = sh->first - (uintptr_t)w->host;
    int to_dev = op <= OP2_H2D_UNALIGNED;
    /* the host side as the shape says; the device side at the same offsets */
    size_t hx = sh->xy ? off % PITCH : 0, hy = sh->xy ? off / PITCH : 0;
    uintptr_t hbase = sh->xy ? (uintptr_t)w->host : sh->first;
    CUdeviceptr dbase = w->dev + off;
    if (to_dev) {
        m.srcMemoryType = CU_MEMORYTYPE_HOST, m.srcHost = (void *)hbase, m.srcXInBytes = hx, m.srcY = hy;
        m.srcPitch = PITCH;
        m.dstMemoryType = CU_MEMORYTYPE_DEVICE, m.dstDevice = dbase, m.dstPitch = PITCH;
    } else {
        m.srcMemoryType = CU_MEMORYTYPE_DEVICE, m.srcDevice = dbase, m.srcPitch = PITCH;
        m.dstMemoryType = CU_MEMORYTYPE_HOST, m.dstHost = (void *)hbase, m.dstXInBytes = hx, m.dstY = hy;
        m.dstPitch = PITCH;
    }
    m.WidthInBytes = W;
    m.Height = rows;
    CUresult r;
    switch (op) {
    case OP2_H2D: r = d.m2d(&m); break;
    case OP2_H2D_ASYNC: r = d.m2d_async(&m, w->s); break;
    case OP2_H2D_UNALIGNED: r = d.m2d_unaligned(&m); break;
    case OP2_D2H: r = d.m2d(&m); break;
    default: r = d.m2d_async(&m, w->s); break;
    }
    world_report(w, key, r, op == OP2_H2D_ASYNC || op == OP2_D2H_ASYNC, to_dev);
}

void case_edges_2d(void)
{
    struct world w;
    uintptr_t rs, re;
    setup(&w, &rs, &re);
    const size_t rows = 4;
    const struct shape shapes[] = {
        {"rows_inside", rs + 64, 0},
        {"rows_inside_xy", rs + 64, 1},
        {"rows_inside_extent_crosses", re - 3 * PITCH - W, 0}, /* last row ends at the end */
        {"rows_inside_extent_crosses_xy", re - 3 * PITCH - W, 1},
        {"last_row_crosses", re - 3 * PITCH - W / 2, 0},
        {"first_row_before", rs - 512, 0},
        {"rows_after_end", re + 64, 0},
    };
    char key[160];
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int op = 0; op < OP2_COUNT; op++) {
            snprintf(key, sizeof key, "%s.%s", shapes[i].name, op2_names[op]);
            copy2d(&w, key, op, &shapes[i], rows);
        }
    say("unregister", "%s", rcs(d.host_unregister((void *)rs)));
}

/* ---- 3D: 2 slices of 4 rows (pitch 1024), copying 2 rows of 256 bytes from each ---------------- */

enum { SLICE_ROWS = 4, ROWS = 2, DEPTH = 2 };

static void copy3d(struct world *w, const char *key, int op, uintptr_t first)
{
    world_window(w, first, first + DEPTH * SLICE_ROWS * PITCH);
    world_refill(w);
    CUDA_MEMCPY3D m;
    memset(&m, 0, sizeof m);
    size_t off = first - (uintptr_t)w->host;
    int to_dev = op < 2;
    if (to_dev) {
        m.srcMemoryType = CU_MEMORYTYPE_HOST, m.srcHost = (void *)first;
        m.dstMemoryType = CU_MEMORYTYPE_DEVICE, m.dstDevice = w->dev + off;
    } else {
        m.srcMemoryType = CU_MEMORYTYPE_DEVICE, m.srcDevice = w->dev + off;
        m.dstMemoryType = CU_MEMORYTYPE_HOST, m.dstHost = (void *)first;
    }
    m.srcPitch = m.dstPitch = PITCH;
    m.srcHeight = m.dstHeight = SLICE_ROWS;
    m.WidthInBytes = W;
    m.Height = ROWS;
    m.Depth = DEPTH;
    CUresult r = (op & 1) ? d.m3d_async(&m, w->s) : d.m3d(&m);
    world_report(w, key, r, op & 1, to_dev);
}

void case_edges_3d(void)
{
    struct world w;
    uintptr_t rs, re;
    setup(&w, &rs, &re);
    const size_t last_row_end = (DEPTH - 1) * SLICE_ROWS * PITCH + (ROWS - 1) * PITCH + W;
    const struct shape shapes[] = {
        {"rows_inside", rs + 64, 0},
        {"rows_inside_extent_crosses", re - last_row_end, 0},
        {"last_row_crosses", re - last_row_end + 128, 0},
        {"first_row_before", rs - 512, 0},
    };
    static const char *const names[] = {"h2d", "h2d_async", "d2h", "d2h_async"};
    char key[160];
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int op = 0; op < 4; op++) {
            snprintf(key, sizeof key, "%s.%s", shapes[i].name, names[op]);
            copy3d(&w, key, op, shapes[i].first);
        }
    say("unregister", "%s", rcs(d.host_unregister((void *)rs)));
}

/* ---- cuMemcpyBatchAsync ------------------------------------------------------------------------ */

typedef CUresult (*batch_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *,
                             size_t, CUstream);

struct bcopy {
    uintptr_t lo, hi;
    int to_dev;
};

static void batch(struct world *w, batch_fn fn, const char *key, const struct bcopy *c, size_t n,
                  CUmemcpySrcAccessOrder order, size_t nattrs, CUstream s)
{
    world_window(w, (uintptr_t)w->host, (uintptr_t)w->host + w->len);
    world_refill(w);
    CUdeviceptr dsts[4], srcs[4];
    size_t sizes[4], idx[1] = {0};
    for (size_t i = 0; i < n; i++) {
        CUdeviceptr dv = w->dev + (c[i].lo - (uintptr_t)w->host);
        dsts[i] = c[i].to_dev ? dv : (CUdeviceptr)c[i].lo;
        srcs[i] = c[i].to_dev ? (CUdeviceptr)c[i].lo : dv;
        sizes[i] = c[i].hi - c[i].lo;
    }
    CUmemcpyAttributes at;
    memset(&at, 0, sizeof at);
    at.srcAccessOrder = order;
    CUresult r = fn(dsts, srcs, sizes, n, nattrs ? &at : NULL, nattrs ? idx : NULL, nattrs, s);
    CUresult rs = d.stream_sync(w->s);
    say(key, "%s; sync %s; device %s; host %s", rcs(r), rcs(rs), dev_digest(w->dev, w->len),
        digest(w->host, w->len));
}

void case_edges_batch(void)
{
    batch_fn fn = (batch_fn)test_driver_extra(&d, "cuMemcpyBatchAsync_v2", "cuMemcpyBatchAsync", 13000);
    if (!fn) {
        say("lookup", "absent");
        return;
    }
    say("lookup", "present");
    struct world w;
    uintptr_t rs, re;
    setup(&w, &rs, &re);
    const CUmemcpySrcAccessOrder stream = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, any = CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
    const struct bcopy inside = {rs + 64, rs + 64 + 8192, 1}, crossing = {re - 64, re + 64, 1},
                       crossing_d2h = {re - 64, re + 64, 0}, before = {rs - 64, re + 64, 1},
                       inside_d2h = {rs + 64, rs + 64 + 8192, 0};
    batch(&w, fn, "h2d_inside", &inside, 1, stream, 1, w.s);
    batch(&w, fn, "h2d_crossing", &crossing, 1, stream, 1, w.s);
    batch(&w, fn, "h2d_crossing_order_any", &crossing, 1, any, 1, w.s);
    batch(&w, fn, "d2h_inside", &inside_d2h, 1, stream, 1, w.s);
    batch(&w, fn, "d2h_crossing", &crossing_d2h, 1, stream, 1, w.s);
    batch(&w, fn, "h2d_starts_before_ends_after", &before, 1, stream, 1, w.s);
    const struct bcopy pair[2] = {inside, crossing};
    batch(&w, fn, "inside_then_crossing", pair, 2, stream, 1, w.s);
    batch(&w, fn, "no_attributes", &inside, 1, stream, 0, w.s);
    batch(&w, fn, "legacy_stream", &inside, 1, stream, 1, CU_STREAM_LEGACY);
    say("unregister", "%s", rcs(d.host_unregister((void *)rs)));
}
