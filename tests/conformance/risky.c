/* risky.c: the cases a real driver might answer with a crash or a sticky error rather than a return
 * code; they run last, each in its own process like every case. Copies touching freed device
 * memory, device ranges past an allocation's end, a range running past a pinned allocation onto
 * whatever follows it. After each, a synchronization shows whether an error stuck to the context. */
#include "conform.h"

#define N (64u * 1024)

static void sticky(const char *key)
{
    say(key, "ctx_sync %s", rcs(d.ctx_sync(NULL)));
}

/* The copies go to the last 64 KiB of a freed 64 MiB allocation: a later allocation of someone
 * else's (the shim's link probe allocates 16 MiB) may reuse the start of the range. */
void case_device_freed(void)
{
    const size_t big = 64u << 20;
    CUdeviceptr base, dv, other;
    CUstream s;
    unsigned char *h = malloc(N);
    test_fill(h, N, 80);
    NEED(d.stream_create(&s, 0));
    NEED(d.mem_alloc(&other, N));
    NEED(d.mem_alloc(&base, big));
    dv = base + big - N;
    say("free_inside", "%s", rcs(d.mem_free(base + 256)));
    say("free", "%s", rcs(d.mem_free(base)));
    say("free_again", "%s", rcs(d.mem_free(base)));
    say("h2d", "%s", rcs(d.htod(dv, h, N)));
    say_async("h2d_async", d.htod_async(dv, h, N, s), s);
    CUresult r = d.dtoh(h, dv, N);
    say("d2h", "%s; host %s", rcs(r), digest(h, N));
    say_async("d2h_async", d.dtoh_async(h, dv, N, s), s);
    say("dtod_from_freed", "%s", rcs(d.dtod(other, dv, N)));
    say("dtod_into_freed", "%s", rcs(d.dtod(dv, other, N)));
    say("memcpy_h2d", "%s", rcs(d.memcpy(dv, (CUdeviceptr)(uintptr_t)h, N)));
    sticky("after");
}

/* Two 4 KiB allocations; ranges past the first one's end by a byte, a page, into the second. */
void case_device_past_end(void)
{
    CUdeviceptr a, b;
    const size_t n = 4096;
    unsigned char *h = malloc(4 * n);
    test_fill(h, 4 * n, 81);
    NEED(d.mem_alloc(&a, n));
    NEED(d.mem_alloc(&b, n));
    say("second_follows_first", "%s", b == a + n ? "yes" : "no");
    say("h2d_exact", "%s", rcs(d.htod(a, h, n)));
    say("h2d_one_byte_past", "%s", rcs(d.htod(a, h, n + 1)));
    say("h2d_a_page_past", "%s", rcs(d.htod(a, h, 2 * n)));
    say("h2d_inside_to_past", "%s", rcs(d.htod(a + n - 64, h, 128)));
    say("d2h_one_byte_past", "%s", rcs(d.dtoh(h, a, n + 1)));
    say("d2h_a_page_past", "%s", rcs(d.dtoh(h, a, 2 * n)));
    say("dtod_one_byte_past", "%s", rcs(d.dtod(b, a, n + 1)));
    say("memset_past", "%s", ex.memset_d8 ? rcs(ex.memset_d8(a, 1, n + 1)) : "absent");
    sticky("after");
}

/* A range starting inside a cuMemHostAlloc allocation of whole pages and running 64 bytes past its
 * end: the next page may be unmapped, another allocation, or the driver's. */
void case_pinned_past_mapping(void)
{
    void *p = NULL;
    NEED(d.host_alloc(&p, 2 * PS, 0));
    CUdeviceptr dv;
    NEED(d.mem_alloc(&dv, 4 * PS));
    dev_fill(dv, 4 * PS, 82);
    unsigned char *e = (unsigned char *)p + 2 * PS;
    say("h2d", "%s", rcs(d.htod(dv, e - 64, 128)));
    say("d2h", "%s", rcs(d.dtoh(e - 64, dv, 128)));
    CUstream s;
    NEED(d.stream_create(&s, 0));
    say_async("h2d_async", d.htod_async(dv, e - 64, 128, s), s);
    sticky("after");
}
