/* multidev.c: two devices. A registration made while device 0 is current, used from device 1's
 * context (portable and not, inside and across its end); a non-primary context created, used and
 * destroyed; a primary context reset; peer copies. What survives a context's end decides what the
 * shim may keep in its tables. With one device each case prints "skipped". */
#include "conform.h"

#define N (64u * 1024)
#define HOST_BYTES (2u << 20)

static CUcontext retain(int ordinal)
{
    CUdevice dev;
    CUcontext c;
    NEED(d.device_get(&dev, ordinal));
    NEED(d.primary_retain(&c, dev));
    return c;
}

static const char *ctx_rel(CUcontext c, CUcontext one)
{
    return !c ? "null" : c == ctx0 ? "ctx0" : c == one ? "ctx1" : "other";
}

static void attrs(const char *key, const void *p, CUcontext one)
{
    unsigned int type = 0;
    int ordinal = -99;
    CUcontext c = NULL;
    CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_CONTEXT};
    void *data[] = {&type, &ordinal, &c};
    CUresult r = ex.ptr_attrs ? ex.ptr_attrs(3, which, data, (CUdeviceptr)(uintptr_t)p) : CUDA_ERROR_NOT_FOUND;
    say(key, "%s; type %u; ordinal %d; context %s", rcs(r), type, ordinal, ctx_rel(c, one));
}

void case_multidev_registered(void)
{
    if (!need_two_devices())
        return;
    CUcontext ctx1 = retain(1);
    static const struct {
        const char *name;
        unsigned flags;
    } kinds[] = {{"portable", CU_MEMHOSTREGISTER_PORTABLE}, {"default", 0}};
    for (size_t k = 0; k < 2; k++) {
        char key[160];
        NEED(d.ctx_set(ctx0));
        unsigned char *h = page_alloc(HOST_BYTES);
        uintptr_t s = (uintptr_t)h + HOST_BYTES / 4, e = s + HOST_BYTES / 2;
        snprintf(key, sizeof key, "%s.register_on_device0", kinds[k].name);
        say(key, "%s", rcs(d.host_register((void *)s, e - s, kinds[k].flags)));
        NEED(d.ctx_set(ctx1));
        snprintf(key, sizeof key, "%s.attrs_from_device1", kinds[k].name);
        attrs(key, (void *)(s + 100), ctx1);
        struct world w;
        world_init(&w, h, HOST_BYTES);
        const struct {
            const char *name;
            uintptr_t lo, hi;
        } r[] = {{"inside", s + 64, e - 64}, {"starts_inside_ends_after", e - 64, e + 64},
                 {"starts_before_ends_after", s - 64, e + 64}};
        for (size_t i = 0; i < 3; i++)
            for (int op = 0; op < 4; op++) {
                snprintf(key, sizeof key, "%s.device1.%s.%s", kinds[k].name, r[i].name, op_names[op]);
                world_copy(&w, key, op, r[i].lo, r[i].hi);
            }
        snprintf(key, sizeof key, "%s.unregister_from_device1", kinds[k].name);
        say(key, "%s", rcs(d.host_unregister((void *)s)));
        NEED(d.ctx_set(ctx0));
        snprintf(key, sizeof key, "%s.unregister_from_device0", kinds[k].name);
        say(key, "%s", rcs(d.host_unregister((void *)s)));
    }
}

/* A context of its own on device 1, with memory of every kind, destroyed; then what is left. */
void case_multidev_context(void)
{
    if (!need_two_devices() || !ex.ctx_create || !ex.ctx_destroy || !ex.ctx_get_current) {
        if (!ex.ctx_create || !ex.ctx_destroy)
            say("lookup", "absent");
        return;
    }
    CUdevice dev1;
    NEED(d.device_get(&dev1, 1));
    CUcontext own = NULL, cur = NULL;
    NEED(ex.ctx_create(&own, 0, dev1));
    NEED(ex.ctx_get_current(&cur));
    say("create_makes_current", "%s", cur == own ? "yes" : "no");
    CUdeviceptr dv;
    void *pinned = NULL;
    unsigned char *portable = page_alloc(N), *plain = page_alloc(N), *h = malloc(N);
    NEED(d.mem_alloc(&dv, N));
    NEED(d.host_alloc(&pinned, N, 0));
    say("register_portable", "%s", rcs(d.host_register(portable, N, CU_MEMHOSTREGISTER_PORTABLE)));
    say("register_default", "%s", rcs(d.host_register(plain, N, 0)));
    test_fill(portable, N, 50);
    say_dev("copy", d.htod(dv, portable, N), dv, N);
    attrs("own.device", (void *)(uintptr_t)dv, own);
    attrs("own.pinned", pinned, own);
    attrs("own.registered", portable, own);

    say("destroy", "%s", rcs(ex.ctx_destroy(own)));
    NEED(ex.ctx_get_current(&cur));
    say("current_after_destroy", "%s", !cur ? "null" : cur == ctx0 ? "ctx0" : "other");
    NEED(d.ctx_set(ctx0));
    attrs("after.device", (void *)(uintptr_t)dv, own);
    attrs("after.pinned", pinned, own);
    attrs("after.registered_portable", portable, own);
    attrs("after.registered_default", plain, own);
    test_fill(h, N, 51);
    CUdeviceptr mine;
    NEED(d.mem_alloc(&mine, N));
    say("after.copy_into_freed_device", "%s", rcs(d.htod(dv, h, N)));
    say_dev("after.copy_from_portable", d.htod(mine, portable, N), mine, N);
    say("after.unregister_portable", "%s", rcs(d.host_unregister(portable)));
    say("after.unregister_default", "%s", rcs(d.host_unregister(plain)));
    say("after.register_again", "%s", rcs(d.host_register(portable, N, 0)));
    say("after.unregister_again", "%s", rcs(d.host_unregister(portable)));
    say("after.free_host", "%s", rcs(d.free_host(pinned)));
}

/* Device 1's primary context reset while it holds memory of every kind. */
void case_multidev_reset(void)
{
    if (!need_two_devices() || !ex.primary_reset) {
        if (!ex.primary_reset)
            say("lookup", "absent");
        return;
    }
    CUcontext ctx1 = retain(1);
    NEED(d.ctx_set(ctx1));
    CUdeviceptr dv;
    void *pinned = NULL;
    unsigned char *reg = page_alloc(N), *h = malloc(N);
    test_fill(reg, N, 59); /* copied below: its bytes must not depend on the heap's history */
    NEED(d.mem_alloc(&dv, N));
    NEED(d.host_alloc(&pinned, N, 0));
    say("register", "%s", rcs(d.host_register(reg, N, CU_MEMHOSTREGISTER_PORTABLE)));
    NEED(d.ctx_set(ctx0));
    CUdevice dev1;
    NEED(d.device_get(&dev1, 1));
    say("reset", "%s", rcs(ex.primary_reset(dev1)));
    attrs("after.device", (void *)(uintptr_t)dv, ctx1);
    attrs("after.pinned", pinned, ctx1);
    attrs("after.registered", reg, ctx1);
    CUcontext again = retain(1);
    say("retain_again", "%s", again == ctx1 ? "same handle" : "new handle");
    NEED(d.ctx_set(again));
    test_fill(h, N, 60);
    say("after.copy_into_old_device", "%s", rcs(d.htod(dv, h, N)));
    CUdeviceptr fresh;
    say("after.alloc", "%s", rcs(d.mem_alloc(&fresh, N)));
    say_dev("after.copy_from_registered", d.htod(fresh, reg, N), fresh, N);
    say("after.unregister", "%s", rcs(d.host_unregister(reg)));
    say("after.register_again", "%s", rcs(d.host_register(reg, N, 0)));
    say("after.unregister_again", "%s", rcs(d.host_unregister(reg)));
    say("after.free_host", "%s", rcs(d.free_host(pinned)));
}

void case_multidev_peer(void)
{
    if (!need_two_devices())
        return;
    CUcontext ctx1 = retain(1);
    CUdeviceptr a, b;
    CUstream s;
    NEED(d.ctx_set(ctx1));
    NEED(d.mem_alloc(&b, N));
    NEED(d.ctx_set(ctx0));
    NEED(d.mem_alloc(&a, N));
    NEED(d.stream_create(&s, 0));
    dev_fill(a, N, 70);
    say_dev("peer", d.peer(b, ctx1, a, ctx0, N), b, N);
    dev_fill(a, N, 71);
    CUresult r = d.peer_async(b, ctx1, a, ctx0, N, s);
    CUresult rs = d.stream_sync(s);
    say("peer_async", "%s; sync %s; device %s", rcs(r), rcs(rs), dev_digest(b, N));
    dev_fill(a, N, 72);
    say_dev("dtod_across_devices", d.dtod(b, a, N), b, N);
    dev_fill(a, N, 73);
    say_dev("memcpy_across_devices", d.memcpy(b, a, N), b, N);
    dev_fill(b, N, 74);
    say_dev("peer_back", d.peer(a, ctx0, b, ctx1, N), a, N);
}
