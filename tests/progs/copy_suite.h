/* copy_suite.h: one program's worth of copies through every wrapped copy entry point, each
 * memory kind and direction, with bit-for-bit checks. Prints hashes of every result (so runs with
 * and without the shim can be diffed) and, last, "expect <dir> <host_kind> <count>" lines giving
 * exactly the copies made, which the tests compare with the shim's JSON summary. */
#ifndef PINSHIM_COPY_SUITE_H
#define PINSHIM_COPY_SUITE_H

#include <unistd.h>

#include "testutil.h"

enum { SUITE_MAX_EXPECT = 32 };
static struct {
    const char *dir, *kind;
    int count;
} suite_expect[SUITE_MAX_EXPECT];

static void expect(const char *dir, const char *kind)
{
    for (int i = 0; i < SUITE_MAX_EXPECT; i++) {
        if (!suite_expect[i].dir) {
            suite_expect[i].dir = dir;
            suite_expect[i].kind = kind;
        }
        if (strcmp(suite_expect[i].dir, dir) == 0 && strcmp(suite_expect[i].kind, kind) == 0) {
            suite_expect[i].count++;
            return;
        }
    }
}

static void same(const char *what, const void *a, const void *b, size_t n)
{
    if (memcmp(a, b, n) != 0) {
        fprintf(stderr, "MISMATCH: %s\n", what);
        exit(1);
    }
    printf("%-40s %zu bytes hash %016llx\n", what, n, (unsigned long long)test_hash(a, n));
}

static int run_copy_suite(struct test_driver *d)
{
    const size_t n = (1u << 20) + 3; /* odd on purpose */
    CUdevice dev0;
    CUcontext ctx0, ctx1 = NULL;
    int devices = 0;
    CHECK(d->init(0));
    CHECK(d->device_count(&devices));
    CHECK(d->device_get(&dev0, 0));
    CHECK(d->primary_retain(&ctx0, dev0));
    CHECK(d->ctx_set(ctx0));
    CUstream s;
    CHECK(d->stream_create(&s, 0));

    unsigned char *src = malloc(n), *back = malloc(n);
    void *pinned, *pinned2;
    CHECK(d->host_alloc(&pinned, n, CU_MEMHOSTALLOC_PORTABLE));
    CHECK(d->alloc_host(&pinned2, n));
    CUdeviceptr a, b, c, e;
    CHECK(d->mem_alloc(&a, n));
    CHECK(d->mem_alloc(&b, n));
    CHECK(d->mem_alloc(&c, n));
    CHECK(d->mem_alloc(&e, n));
    test_fill(src, n, 1);

    /* explicit direction, sync and async, each host memory kind */
    CHECK(d->htod(a, src, n));                              expect("h2d", "pageable");
    memset(back, 0, n);
    CHECK(d->dtoh(back, a, n));                             expect("d2h", "pageable");
    same("htod/dtoh pageable", src, back, n);

    test_fill(pinned, n, 2);
    CHECK(d->htod_async(b, pinned, n, s));                  expect("h2d", "pinned");
    CHECK(d->dtoh_async(pinned2, b, n, s));                 expect("d2h", "pinned");
    CHECK(d->stream_sync(s));
    same("htod/dtoh async pinned", pinned, pinned2, n);

    /* the default stream of the route's flavour (legacy, or per-thread for the ptds routes) */
    test_fill(pinned, n, 3);
    CHECK(d->htod_async(b, pinned, n, NULL));               expect("h2d", "pinned");
    CHECK(d->dtoh_async(pinned2, b, n, NULL));              expect("d2h", "pinned");
    CHECK(d->stream_sync(NULL));
    same("async on the default stream", pinned, pinned2, n);

    void *reg;
    const size_t reg_n = 1u << 20;
    if (posix_memalign(&reg, 4096, reg_n) != 0)
        return 1;
    test_fill(reg, reg_n, 4);
    CHECK(d->host_register(reg, reg_n, CU_MEMHOSTREGISTER_PORTABLE));
    CHECK(d->htod(c, reg, reg_n));                          expect("h2d", "registered");
    memset(back, 0, reg_n);
    CHECK(d->dtoh(back, c, reg_n));                         expect("d2h", "pageable");
    same("registered source", reg, back, reg_n);
    CHECK(d->dtoh(reg, a, reg_n));                          expect("d2h", "registered");
    same("registered destination", reg, src, reg_n);
    CHECK(d->host_unregister(reg));
    CHECK(d->htod(c, reg, reg_n));                          expect("h2d", "pageable"); /* no longer registered */

    /* device to device */
    CHECK(d->dtod(c, a, n));                                expect("d2d", "device");
    CHECK(d->stream_sync(NULL)); /* a per-thread default stream does not order with stream s */
    CHECK(d->dtod_async(e, c, n, s));                       expect("d2d", "device");
    CHECK(d->stream_sync(s));
    memset(back, 0, n);
    CHECK(d->dtoh(back, e, n));                             expect("d2h", "pageable");
    same("dtod chain", src, back, n);

    /* unified copies: the direction comes from the pointers */
    test_fill(src, n, 5);
    CHECK(d->memcpy(a, (CUdeviceptr)src, n));               expect("h2d", "pageable");
    CHECK(d->stream_sync(NULL)); /* pageable H2D returns once staged; order it before stream s */
    CHECK(d->memcpy_async((CUdeviceptr)pinned2, a, n, s));  expect("d2h", "pinned");
    CHECK(d->stream_sync(s));
    same("unified h2d/d2h", src, pinned2, n);
    memset(back, 0, n);
    CHECK(d->memcpy((CUdeviceptr)back, (CUdeviceptr)src, n)); expect("h2h", "pageable");
    same("unified h2h", src, back, n);
    CUdeviceptr managed;
    CHECK(d->alloc_managed(&managed, n, CU_MEM_ATTACH_GLOBAL));
    CHECK(d->memcpy(managed, a, n));                        expect("d2d", "managed");
    same("managed contents", src, (void *)(uintptr_t)managed, n);

    /* 2D and 3D: 64 rows of 1000 bytes out of a 1024-byte pitch */
    const size_t width = 1000, height = 64, pitch = 1024;
    test_fill(src, pitch * height, 6);
    CUDA_MEMCPY2D m = {0};
    m.srcMemoryType = CU_MEMORYTYPE_HOST, m.srcHost = src, m.srcPitch = pitch;
    m.dstMemoryType = CU_MEMORYTYPE_DEVICE, m.dstDevice = a, m.dstPitch = width;
    m.WidthInBytes = width, m.Height = height;
    CHECK(d->m2d(&m));                                      expect("h2d", "pageable");
    memset(pinned2, 0, width * height);
    CUDA_MEMCPY2D back2d = {0};
    back2d.srcMemoryType = CU_MEMORYTYPE_DEVICE, back2d.srcDevice = a, back2d.srcPitch = width;
    back2d.dstMemoryType = CU_MEMORYTYPE_UNIFIED, back2d.dstDevice = (CUdeviceptr)pinned2, back2d.dstPitch = width;
    back2d.WidthInBytes = width, back2d.Height = height;
    CHECK(d->m2d_unaligned(&back2d));                       expect("d2h", "pinned");
    for (size_t row = 0; row < height; row++)
        if (memcmp((char *)pinned2 + row * width, src + row * pitch, width) != 0) {
            fprintf(stderr, "MISMATCH: 2D row %zu\n", row);
            return 1;
        }
    printf("%-40s hash %016llx\n", "2D pitched round trip", (unsigned long long)test_hash(pinned2, width * height));
    memcpy(pinned, src, pitch * height);
    m.srcHost = pinned;
    CHECK(d->m2d_async(&m, s));                             expect("h2d", "pinned");
    CHECK(d->stream_sync(s));

    CUDA_MEMCPY3D m3 = {0};
    m3.srcMemoryType = CU_MEMORYTYPE_DEVICE, m3.srcDevice = a, m3.srcPitch = width, m3.srcHeight = 8;
    m3.dstMemoryType = CU_MEMORYTYPE_HOST, m3.dstHost = back, m3.dstPitch = width, m3.dstHeight = 8;
    m3.WidthInBytes = width, m3.Height = 8, m3.Depth = 8;
    memset(back, 0, width * 64);
    CHECK(d->m3d(&m3));                                     expect("d2h", "pageable");
    printf("%-40s hash %016llx\n", "3D d2h", (unsigned long long)test_hash(back, width * 64));
    CUDA_MEMCPY3D up3 = m3;
    up3.srcMemoryType = CU_MEMORYTYPE_HOST, up3.srcHost = pinned, up3.srcDevice = 0;
    up3.dstMemoryType = CU_MEMORYTYPE_DEVICE, up3.dstDevice = c, up3.dstHost = NULL;
    CHECK(d->m3d_async(&up3, s));                           expect("h2d", "pinned");
    CHECK(d->stream_sync(s));

    /* peer, when a second device exists */
    if (devices >= 2) {
        CUdevice dev1;
        CHECK(d->device_get(&dev1, 1));
        CHECK(d->primary_retain(&ctx1, dev1));
        CUdeviceptr f;
        CHECK(d->ctx_set(ctx1));
        CHECK(d->mem_alloc(&f, n));
        CHECK(d->ctx_set(ctx0));
        CHECK(d->peer(f, ctx1, a, ctx0, n));                expect("peer", "device");
        CHECK(d->stream_sync(NULL));
        CHECK(d->peer_async(e, ctx0, f, ctx1, n, s));       expect("peer", "device");
        CHECK(d->stream_sync(s));
        memset(back, 0, n);
        CHECK(d->dtoh(back, e, n));                         expect("d2h", "pageable");
        printf("%-40s hash %016llx\n", "peer round trip", (unsigned long long)test_hash(back, n));
    }

    /* a batch of three copies, each counted on its own */
    test_fill(src, 4096, 7);
    CUdeviceptr dsts[3] = {a, (CUdeviceptr)pinned2, c}, srcs[3] = {(CUdeviceptr)src, b, a};
    size_t sizes[3] = {4096, 8192, 100};
    CUmemcpyAttributes attr = {0};
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM; /* one attribute set for all: the driver needs one */
    size_t attr_idx = 0;
    CHECK(d->batch(dsts, srcs, sizes, 3, &attr, &attr_idx, 1, s));
    expect("h2d", "pageable"), expect("d2h", "pinned"), expect("d2d", "device");
    CHECK(d->stream_sync(s));
    printf("%-40s hash %016llx\n", "batch", (unsigned long long)test_hash(pinned2, 8192));

    /* sync points */
    CUevent ev;
    CHECK(d->event_create(&ev, 0));
    CHECK(d->event_record(ev, s));
    CHECK(d->event_sync(ev));
    CHECK(d->event_query(ev));
    CHECK(d->stream_query(s));
    CHECK(d->ctx_sync(NULL));

    CHECK(d->free_host(pinned));
    CHECK(d->free_host(pinned2));
    for (int i = 0; i < SUITE_MAX_EXPECT && suite_expect[i].dir; i++)
        printf("expect %s %s %d\n", suite_expect[i].dir, suite_expect[i].kind, suite_expect[i].count);
    free(src);
    free(back);
    free(reg);
    return 0;
}

#endif
