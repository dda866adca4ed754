/* register.c: cuMemHostRegister and cuMemHostUnregister error codes the shim's registration cache
 * depends on: overlapping, nested, repeated and same-page registrations; unregistering inside a
 * registration, outside every one, twice, and around two touching ones; a buffer made of several
 * mappings. */
#define _GNU_SOURCE /* mremap */
#include <sys/mman.h>

#include "conform.h"

#define HOST_PAGES 64u

/* Registers [first, first + n) pages of h; prints the code and, on success, unregisters again
 * unless `keep`. */
static CUresult reg(const char *key, unsigned char *h, double first, double n, int keep)
{
    void *p = h + (size_t)(first * (double)PS);
    size_t len = (size_t)(n * (double)PS);
    CUresult r = d.host_register(p, len, 0);
    if (r == CUDA_SUCCESS && !keep) {
        CUresult u = d.host_unregister(p);
        say(key, "%s; unregister %s", rcs(r), rcs(u));
    } else {
        say(key, "%s", rcs(r));
    }
    return r;
}

void case_register_overlap(void)
{
    unsigned char *h = page_alloc(HOST_PAGES * PS);
    reg("a", h, 8, 8, 1); /* pages [8, 16) stay registered while the others are tried */
    reg("same_range", h, 8, 8, 0);
    reg("overlaps_end", h, 12, 8, 0);
    reg("overlaps_start", h, 4, 8, 0);
    reg("nested", h, 10, 2, 0);
    reg("nested_at_base", h, 8, 1, 0);
    reg("nested_at_end", h, 15, 1, 0);
    reg("contains", h, 4, 16, 0);
    reg("touches_below", h, 4, 4, 0);
    reg("touches_above", h, 16, 4, 0);
    reg("nested_subpage", h, 15.5, 0.25, 0);
    say("unregister_a", "%s", rcs(d.host_unregister(h + 8 * PS)));

    /* sub-page registrations: two disjoint ranges on one page, then one touching both */
    unsigned char *p = h + 24 * PS;
    CUresult r1 = d.host_register(p + 100, 200, 0);
    say("subpage_first", "%s", rcs(r1));
    CUresult r2 = d.host_register(p + 400, 200, 0);
    say("subpage_same_page_disjoint", "%s", rcs(r2));
    CUresult r3 = d.host_register(p + PS + 100, 200, 0);
    say("subpage_next_page", "%s", rcs(r3));
    say("subpage_unregister_inside", "%s", rcs(d.host_unregister(p + 150)));
    if (r1 == CUDA_SUCCESS)
        say("subpage_unregister_first", "%s", rcs(d.host_unregister(p + 100)));
    if (r2 == CUDA_SUCCESS)
        say("subpage_unregister_second", "%s", rcs(d.host_unregister(p + 400)));
    if (r3 == CUDA_SUCCESS)
        say("subpage_unregister_next_page", "%s", rcs(d.host_unregister(p + PS + 100)));

    /* an unaligned pointer and size (register_probe.c asked the H200 once) */
    CUresult r = d.host_register(h + 32 * PS + 1, 3 * PS, 0);
    say("unaligned", "%s", rcs(r));
    if (r == CUDA_SUCCESS) {
        say("unaligned_unregister_page", "%s", rcs(d.host_unregister(h + 32 * PS)));
        say("unaligned_unregister_given", "%s", rcs(d.host_unregister(h + 32 * PS + 1)));
    }
    say("zero_bytes", "%s", rcs(d.host_register(h + 40 * PS, 0, 0)));
    say("null", "%s", rcs(d.host_register(NULL, PS, 0)));

    /* pinned memory cannot be registered again */
    void *pinned = NULL;
    NEED(d.host_alloc(&pinned, 4 * PS, 0));
    r = d.host_register(pinned, 4 * PS, 0);
    say("pinned", "%s", rcs(r));
    if (r == CUDA_SUCCESS)
        d.host_unregister(pinned);
    say("pinned_unregister", "%s", rcs(d.host_unregister(pinned)));
    say("pinned_free", "%s", rcs(d.free_host(pinned)));
}

void case_register_unregister(void)
{
    unsigned char *h = page_alloc(HOST_PAGES * PS);
    unsigned char *a = h + 8 * PS, *b = h + 16 * PS; /* A = [8, 16), B = [16, 24) */
    say("register_a", "%s", rcs(d.host_register(a, 8 * PS, 0)));
    say("register_b", "%s", rcs(d.host_register(b, 8 * PS, 0)));
    say("inside_a", "%s", rcs(d.host_unregister(a + PS)));
    say("last_byte_of_a", "%s", rcs(d.host_unregister(b - 1)));
    say("never_registered", "%s", rcs(d.host_unregister(h)));
    say("just_after_b", "%s", rcs(d.host_unregister(b + 8 * PS)));
    say("null", "%s", rcs(d.host_unregister(NULL)));
    say("a", "%s", rcs(d.host_unregister(a)));
    say("a_again", "%s", rcs(d.host_unregister(a)));
    /* B is still registered; a copy from former A into B starts pageable and runs into B */
    unsigned int type = 0;
    CUresult r = ex.ptr_attr ? ex.ptr_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)b)
                             : CUDA_ERROR_NOT_FOUND;
    say("b_memory_type", "%s; type %u", rcs(r), type);
    CUdeviceptr dv;
    NEED(d.mem_alloc(&dv, 2 * PS));
    test_fill(b - PS, 2 * PS, 5);
    r = d.htod(dv, b - PS, 2 * PS);
    say("copy_across_former_seam", "%s; device %s", rcs(r), dev_digest(dv, 2 * PS));
    say("b", "%s", rcs(d.host_unregister(b)));
    say("b_again", "%s", rcs(d.host_unregister(b)));
    say("reregister_a_and_b_as_one", "%s", rcs(d.host_register(a, 16 * PS, 0)));
    say("unregister_at_former_b", "%s", rcs(d.host_unregister(b)));
    say("unregister_one", "%s", rcs(d.host_unregister(a)));
}

/* cuMemHostRegister of a device address: never host memory. */
void case_register_device_ptr(void)
{
    CUdeviceptr dv;
    NEED(d.mem_alloc(&dv, 16 * PS));
    CUresult r = d.host_register((void *)(uintptr_t)dv, 16 * PS, 0);
    say("device_memory", "%s", rcs(r));
    if (r == CUDA_SUCCESS)
        say("device_memory_unregister", "%s", rcs(d.host_unregister((void *)(uintptr_t)dv)));
    say("device_memory_unregister_never", "%s", rcs(d.host_unregister((void *)(uintptr_t)(dv + PS))));
}

/* The program registers a buffer it has already copied several times (which the shim may have
 * registered behind its back), copies, unregisters. */
void case_register_after_copies(void)
{
    const size_t n = 4u << 20;
    unsigned char *h = malloc(n);
    CUdeviceptr dv;
    NEED(d.mem_alloc(&dv, n));
    char key[64];
    for (int i = 0; i < 4; i++) {
        test_fill(h, n, (uint32_t)(90 + i));
        snprintf(key, sizeof key, "copy%d", i);
        say_dev(key, d.htod(dv, h, n), dv, n);
    }
    say("register", "%s", rcs(d.host_register(h, n, 0)));
    test_fill(h, n, 95);
    say_dev("copy_registered", d.htod(dv, h, n), dv, n);
    say("register_again", "%s", rcs(d.host_register(h, n, 0)));
    say("unregister", "%s", rcs(d.host_unregister(h)));
    say("unregister_again", "%s", rcs(d.host_unregister(h)));
    test_fill(h, n, 96);
    say_dev("copy_after", d.htod(dv, h, n), dv, n);
    free(h);
}

/* A buffer made of three mappings, as stage_recycle leaves the destination of a staged D2H (pages
 * of another mapping moved into its middle with mremap), then registered by pin-on-reuse when the
 * program copies it again: registering it whole, copies both ways through the registration,
 * unregistering. */
void case_register_mappings(void)
{
    const size_t n = 16 * PS, moved = 4 * PS;
    unsigned char *h = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *donor = mmap(NULL, moved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (h == MAP_FAILED || donor == MAP_FAILED) {
        say("setup", "mmap failed");
        exit(1);
    }
    memset(donor, 7, moved);
    memset(h, 9, n);
    if (mremap(donor, moved, moved, MREMAP_MAYMOVE | MREMAP_FIXED, h + 6 * PS) == MAP_FAILED) {
        say("setup", "mremap failed");
        exit(1);
    }
    CUdeviceptr dv;
    NEED(d.mem_alloc(&dv, n));
    test_fill(h, n, 31);
    say("register", "%s", rcs(d.host_register(h, n, 0)));
    say_dev("h2d", d.htod(dv, h, n), dv, n);
    memset(h, 0, n);
    CUresult r = d.dtoh(h, dv, n);
    say("d2h", "%s; host %s", rcs(r), digest(h, n));
    say("unregister", "%s", rcs(d.host_unregister(h)));
    test_fill(h, n, 32);
    say_dev("h2d_after", d.htod(dv, h, n), dv, n);
    munmap(h, n);
}
