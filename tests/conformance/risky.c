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

/* A device range running from one 4 KiB allocation into the next one, right after it, copied from
 * and to host memory of each kind: pageable (page-aligned, 16 KiB), pinned (cuMemHostAlloc),
 * registered (the same pageable size, cuMemHostRegister'ed). Whether the driver's answer depends on
 * the host side's kind decides whether memory the shim pins for the program (the registration
 * cache, staging) may change a copy's return code; the device bytes of the second allocation
 * after each copy show whether anything was written there. Then the same range from host ranges
 * that cross the edge of a registration: the program's own, and one the shim's cache makes. */
void case_device_span(void)
{
    const size_t n = 4096;
    CUdeviceptr a, b;
    CUstream s;
    NEED(d.stream_create(&s, 0));
    NEED(d.mem_alloc(&a, n));
    NEED(d.mem_alloc(&b, n));
    say("second_follows_first", "%s", b == a + n ? "yes" : "no");
    void *pinned = NULL, *registered = aligned_alloc(PS, 4 * n), *pageable = aligned_alloc(PS, 4 * n);
    NEED(d.host_alloc(&pinned, 4 * n, 0));
    NEED(d.host_register(registered, 4 * n, 0));
    const struct {
        const char *kind;
        unsigned char *h;
    } sides[] = {{"pageable", pageable}, {"pinned", pinned}, {"registered", registered}};
    char key[64];
    for (size_t i = 0; i < sizeof sides / sizeof *sides; i++) {
        unsigned char *h = sides[i].h;
        test_fill(h, 4 * n, 90 + (uint32_t)i);
        dev_fill(a, n, 95);
        dev_fill(b, n, 96);
        snprintf(key, sizeof key, "%s.h2d_into_next", sides[i].kind);
        say(key, "%s; next %s", rcs(d.htod(a + n - 64, h, 128)), dev_digest(b, 64));
        snprintf(key, sizeof key, "%s.h2d_both_whole", sides[i].kind);
        say(key, "%s; next %s", rcs(d.htod(a, h, 2 * n)), dev_digest(b, n));
        snprintf(key, sizeof key, "%s.h2d_async_into_next", sides[i].kind);
        dev_fill(b, n, 96);
        CUresult r = d.htod_async(a + n - 64, h, 128, s);
        say(key, "%s; sync %s; next %s", rcs(r), rcs(d.stream_sync(s)), dev_digest(b, 64));
        snprintf(key, sizeof key, "%s.d2h_from_next", sides[i].kind);
        memset(h, 0, 4 * n);
        say(key, "%s; host %s", rcs(d.dtoh(h, a + n - 64, 128)), digest(h, 128));
        snprintf(key, sizeof key, "%s.d2h_async_from_next", sides[i].kind);
        memset(h, 0, 4 * n);
        r = d.dtoh_async(h, a + n - 64, 128, s);
        say(key, "%s; sync %s; host %s", rcs(r), rcs(d.stream_sync(s)), digest(h, 128));
    }
    /* Pages 1 and 2 of four registered by the program: a range from 64 bytes before them, and one
     * from 64 bytes before their end, into the next allocation. */
    unsigned char *four = aligned_alloc(PS, 4 * PS);
    test_fill(four, 4 * PS, 98);
    NEED(d.host_register(four + PS, 2 * PS, 0));
    say("edge_before.h2d_into_next", "%s", rcs(d.htod(a + n - 64, four + PS - 64, 128)));
    say("edge_inside.h2d_into_next", "%s", rcs(d.htod(a + n - 64, four + 3 * PS - 64, 128)));
    /* A heap buffer copied whole once (with register_after = 1 the shim's cache pins its whole
     * pages), then a range from 64 bytes before its first whole page into the next allocation:
     * cut at the registration's edge, each piece alone would succeed. */
    const size_t big = 16 * n;
    unsigned char *t = malloc(big);
    CUdeviceptr scratch;
    NEED(d.mem_alloc(&scratch, big));
    test_fill(t, big, 99);
    say("tracked.h2d_whole", "%s", rcs(d.htod(scratch, t, big)));
    unsigned char *edge = (unsigned char *)(((uintptr_t)t + 64 + PS - 1) & ~(uintptr_t)(PS - 1)) - 64;
    dev_fill(b, n, 96);
    say("tracked.h2d_edge_into_next", "%s; next %s", rcs(d.htod(a + n - 64, edge, 128)), dev_digest(b, 64));
    CUresult r = d.htod_async(a + n - 64, edge, 128, s);
    say("tracked.h2d_async_edge_into_next", "%s; sync %s; next %s", rcs(r), rcs(d.stream_sync(s)), dev_digest(b, 64));
    test_fill(edge, 128, 100); /* the window's bytes, whatever its offset in t */
    say("tracked.d2h_edge_from_next", "%s; host %s", rcs(d.dtoh(edge, a + n - 64, 128)), digest(edge, 128));
    test_fill(edge, 128, 100);
    r = d.dtoh_async(edge, a + n - 64, 128, s);
    say("tracked.d2h_async_edge_from_next", "%s; sync %s; host %s", rcs(r), rcs(d.stream_sync(s)), digest(edge, 128));
    memset(t, 0, big);
    say("tracked.d2h_whole", "%s; host %s", rcs(d.dtoh(t, scratch, big)), digest(t, big));
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
