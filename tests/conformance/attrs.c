/* attrs.c: what cuPointerGetAttributes and cuPointerGetAttribute say about each kind of memory the
 * shim classifies (pageable, pinned, registered, managed, device; at the base, inside, just outside,
 * after a free), and what the pointer queries say of a pageable buffer copied again and again (which
 * the shim's pin-on-reuse cache registers behind the program's back: it must still read pageable). Addresses are printed relative to the allocation ("base+N") or the pointer asked
 * about ("ptr+N"); contexts as current, null or other. */
#include "conform.h"

static const char *ctx_rel(CUcontext c)
{
    return !c ? "null" : c == ctx0 ? "current" : "other";
}

static void attrs(const char *key, const void *ptr, const void *base)
{
    unsigned int type = 0, managed = 0, mapped = 0;
    int ordinal = -99;
    CUdeviceptr start = 0, dptr = 0;
    size_t size = 0;
    void *hptr = NULL;
    CUcontext c = NULL;
    CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,      CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE,       CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                   CU_POINTER_ATTRIBUTE_DEVICE_POINTER,   CU_POINTER_ATTRIBUTE_CONTEXT,
                                   CU_POINTER_ATTRIBUTE_MAPPED};
    void *data[] = {&type, &managed, &ordinal, &start, &size, &hptr, &dptr, &c, &mapped};
    uintptr_t p = (uintptr_t)ptr, b = (uintptr_t)base;
    CUresult r = ex.ptr_attrs ? ex.ptr_attrs(sizeof which / sizeof which[0], which, data, (CUdeviceptr)p)
                              : CUDA_ERROR_NOT_FOUND;
    say(key, "%s; type %u; managed %u; ordinal %d; start %s; size %zu; host %s; device %s; context %s; mapped %u",
        rcs(r), type, managed & 0xff, ordinal, rel(start, b, "base"), size, rel((uintptr_t)hptr, p, "ptr"),
        rel(dptr, p, "ptr"), ctx_rel(c), mapped & 0xff);

    /* the single-attribute call, which refuses memory it does not know */
    char k[128];
    unsigned int t1 = 0;
    snprintf(k, sizeof k, "%s.single_type", key);
    r = ex.ptr_attr ? ex.ptr_attr(&t1, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)p) : CUDA_ERROR_NOT_FOUND;
    say(k, "%s; type %u", rcs(r), t1);
    void *h1 = NULL;
    snprintf(k, sizeof k, "%s.single_host_pointer", key);
    r = ex.ptr_attr ? ex.ptr_attr(&h1, CU_POINTER_ATTRIBUTE_HOST_POINTER, (CUdeviceptr)p) : CUDA_ERROR_NOT_FOUND;
    say(k, "%s; host %s", rcs(r), rel((uintptr_t)h1, p, "ptr"));
    CUdeviceptr s1 = 0;
    snprintf(k, sizeof k, "%s.single_range_start", key);
    r = ex.ptr_attr ? ex.ptr_attr(&s1, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, (CUdeviceptr)p) : CUDA_ERROR_NOT_FOUND;
    say(k, "%s; start %s", rcs(r), rel(s1, b, "base"));
}

void case_attrs(void)
{
    const size_t n = 64 * 1024;
    unsigned char *pageable = malloc(n);
    memset(pageable, 0, n);
    attrs("pageable", pageable, pageable);
    attrs("pageable_inside", pageable + 100, pageable);

    void *pinned = NULL;
    NEED(d.host_alloc(&pinned, 3 * PS + 10, 0));
    attrs("pinned", pinned, pinned);
    attrs("pinned_inside", (char *)pinned + 5000, pinned);
    attrs("pinned_last_byte", (char *)pinned + 3 * PS + 9, pinned);

    unsigned char *h = page_alloc(16 * PS), *r0 = h + 4 * PS;
    NEED(d.host_register(r0, 8 * PS, 0));
    attrs("registered", r0, r0);
    attrs("registered_inside", r0 + 5000, r0);
    attrs("registered_last_byte", r0 + 8 * PS - 1, r0);
    attrs("registered_byte_before", r0 - 1, r0);
    attrs("registered_byte_after", r0 + 8 * PS, r0);

    unsigned char *s0 = h + 13 * PS + 100; /* a sub-page registration: bytes [100, 5100) of page 13 on */
    CUresult r = d.host_register(s0, 5000, 0);
    say("register_subpage", "%s", rcs(r));
    attrs("subpage", s0, s0);
    attrs("subpage_byte_before_same_page", s0 - 50, s0);
    attrs("subpage_byte_after_same_page", s0 + 5000 + 10, s0);
    if (r == CUDA_SUCCESS)
        NEED(d.host_unregister(s0));

    CUdeviceptr managed = 0, dev = 0, freed = 0;
    NEED(d.alloc_managed(&managed, n, CU_MEM_ATTACH_GLOBAL));
    attrs("managed", (void *)(uintptr_t)managed, (void *)(uintptr_t)managed);
    attrs("managed_inside", (void *)(uintptr_t)(managed + 5000), (void *)(uintptr_t)managed);
    NEED(d.mem_alloc(&dev, n));
    attrs("device", (void *)(uintptr_t)dev, (void *)(uintptr_t)dev);
    attrs("device_inside", (void *)(uintptr_t)(dev + 5000), (void *)(uintptr_t)dev);

    NEED(d.host_unregister(r0));
    attrs("registered_after_unregister", r0, r0);
    NEED(d.free_host(pinned));
    attrs("pinned_after_free", pinned, pinned);
    NEED(d.mem_alloc(&freed, n));
    NEED(d.mem_free(freed));
    attrs("device_after_free", (void *)(uintptr_t)freed, (void *)(uintptr_t)freed);
}

/* A pageable buffer copied often enough for pin-on-reuse to register it (the default policy registers
 * on the third copy of an allocation of 1 MiB or more), then asked about: pageable, as without the
 * shim. cuMemHostGetFlags, cuMemHostGetDevicePointer and cuPointerSetAttribute too. */
void case_attrs_reused(void)
{
    const size_t n = 4u << 20;
    unsigned char *buf = malloc(n);
    CUdeviceptr dev = 0;
    NEED(buf ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY);
    test_fill(buf, n, 7);
    NEED(d.mem_alloc(&dev, n));
    for (int i = 0; i < 4; i++)
        NEED(d.htod(dev, buf, n));
    NEED(d.dtoh(buf, dev, n));
    attrs("reused", buf, buf);
    attrs("reused_interior", buf + 2 * PS + 8, buf);

    unsigned int flags = 12345;
    CUresult r = ex.host_get_flags ? ex.host_get_flags(&flags, buf + 2 * PS) : CUDA_ERROR_NOT_FOUND;
    say("reused.host_get_flags", "%s; flags %u", rcs(r), r == CUDA_SUCCESS ? flags : 0u);
    CUdeviceptr mapped = 0;
    r = ex.host_get_devptr ? ex.host_get_devptr(&mapped, buf + 2 * PS, 0) : CUDA_ERROR_NOT_FOUND;
    say("reused.host_get_device_pointer", "%s; device %s", rcs(r), rel(mapped, (uintptr_t)(buf + 2 * PS), "ptr"));
    unsigned int sync_memops = 1;
    r = ex.ptr_set_attr ? ex.ptr_set_attr(&sync_memops, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, (CUdeviceptr)(uintptr_t)(buf + 2 * PS))
                        : CUDA_ERROR_NOT_FOUND;
    say("reused.set_sync_memops", "%s", rcs(r));

    /* the buffer still copies as before, both ways */
    NEED(d.htod(dev, buf, n));
    memset(buf, 0, n);
    NEED(d.dtoh(buf, dev, n));
    say("reused.bytes", "%s", digest(buf, n));
    NEED(d.mem_free(dev));
    free(buf);
}

/* What cuMemHostGetFlags says of pinned and registered memory: every flag combination the shim or a
 * program uses, and the driver's habit of carving small pinned allocations out of shared blocks
 * (a small allocation reports the flags of the one that opened its block). The shim's pool must
 * never open such a block (its slabs are 2 MiB or more), or the program's flags would change. */
static void host_flags(const char *key, size_t bytes, unsigned int flags, int use_alloc_host, void **keep)
{
    void *p = NULL;
    CUresult r = use_alloc_host ? d.alloc_host(&p, bytes) : d.host_alloc(&p, bytes, flags);
    unsigned int got = 0;
    CUresult q = r == CUDA_SUCCESS && ex.host_get_flags ? ex.host_get_flags(&got, p) : CUDA_ERROR_NOT_FOUND;
    say(key, "%s; get %s; flags %u", rcs(r), rcs(q), q == CUDA_SUCCESS ? got : 0u);
    *keep = p;
}

void case_attrs_host_flags(void)
{
    void *a, *b, *c, *e, *f, *g, *h, *k;
    host_flags("alloc_host_64k", 64 << 10, 0, 1, &a);
    host_flags("portable_64k_after_alloc_host", 64 << 10, CU_MEMHOSTALLOC_PORTABLE, 0, &b);
    host_flags("portable_4m", 4 << 20, CU_MEMHOSTALLOC_PORTABLE, 0, &c);
    host_flags("plain_4m", 4 << 20, 0, 0, &e);
    host_flags("devicemap_4m", 4 << 20, CU_MEMHOSTALLOC_DEVICEMAP, 0, &f);
    host_flags("portable_1m", 1 << 20, CU_MEMHOSTALLOC_PORTABLE, 0, &g);
    host_flags("alloc_host_64k_after_portable_1m", 64 << 10, 0, 1, &h);
    host_flags("alloc_host_2m", 2 << 20, 0, 1, &k);

    unsigned char *mem = page_alloc(32 * PS);
    unsigned int got = 0;
    CUresult r = d.host_register(mem, 8 * PS, 0);
    CUresult q = ex.host_get_flags ? ex.host_get_flags(&got, mem) : CUDA_ERROR_NOT_FOUND;
    say("registered_plain", "%s; get %s; flags %u", rcs(r), rcs(q), q == CUDA_SUCCESS ? got : 0u);
    got = 0;
    r = d.host_register(mem + 16 * PS, 8 * PS, CU_MEMHOSTREGISTER_PORTABLE);
    q = ex.host_get_flags ? ex.host_get_flags(&got, mem + 16 * PS + 100) : CUDA_ERROR_NOT_FOUND;
    say("registered_portable_inside", "%s; get %s; flags %u", rcs(r), rcs(q), q == CUDA_SUCCESS ? got : 0u);
    NEED(d.host_unregister(mem));
    NEED(d.host_unregister(mem + 16 * PS));
    void *all[] = {a, b, c, e, f, g, h, k};
    for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            NEED(d.free_host(all[i]));
}
