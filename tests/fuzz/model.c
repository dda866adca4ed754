/* model.c: the fuzzer's contexts, streams, events and device buffers, and the bookkeeping that
 * keeps the program free of races (fuzz.h states the rule). Synchronizations the model needs are
 * ordinary driver calls and are printed like every other. */
#define _GNU_SOURCE
#include <unistd.h>

#include "fuzz.h"

int slot_index(int dev, enum slot_role role)
{
    return dev * FZ_SLOTS_PER_DEV + (int)role;
}

int slot_dev(int slot)
{
    return slot / FZ_SLOTS_PER_DEV;
}

static enum slot_role slot_role_of(int slot)
{
    return (enum slot_role)(slot % FZ_SLOTS_PER_DEV);
}

void use_dev(int dev)
{
    if (F.cur == dev)
        return;
    said(F.d.ctx_set(F.ctx[dev]), "ctx_set dev%d", dev);
    F.cur = dev;
}

static const struct test_driver *any_table(void)
{
    return chance(50) ? &F.d : &F.dp;
}

/* The stream of a slot, spelled one of the ways a program may spell it, with the table (legacy or
 * per-thread flavour) to call; makes the slot's context current. Not for SLOT_ORPHAN. */
CUstream slot_stream(int slot, const struct test_driver **t)
{
    use_dev(slot_dev(slot));
    switch (slot_role_of(slot)) {
    case SLOT_LEGACY:
        if (chance(50)) {
            *t = &F.d;
            return NULL;
        }
        *t = any_table();
        return CU_STREAM_LEGACY;
    case SLOT_PER_THREAD:
        if (chance(50)) {
            *t = &F.dp;
            return NULL;
        }
        *t = any_table();
        return CU_STREAM_PER_THREAD;
    default:
        *t = any_table();
        return F.s[slot].h;
    }
}

int pending(const uint32_t *last, int slot)
{
    return last[slot] > F.s[slot].done;
}

uint32_t enqueue(int slot)
{
    return ++F.s[slot].enq;
}

static void all_done(int dev)
{
    for (int k = 0; k < FZ_SLOTS_PER_DEV; k++) {
        struct slot *s = &F.s[slot_index(dev, (enum slot_role)k)];
        s->done = s->enq;
    }
}

static void ctx_sync(int dev)
{
    use_dev(dev);
    said(F.d.ctx_sync(NULL), "ctx_sync dev%d", dev);
    all_done(dev);
}

void sync_slot(int slot)
{
    if (slot_role_of(slot) == SLOT_ORPHAN) { /* work of destroyed streams: only the context covers it */
        ctx_sync(slot_dev(slot));
        return;
    }
    const struct test_driver *t;
    CUstream h = slot_stream(slot, &t);
    said(t->stream_sync(h), "stream_sync s%d%s", slot, t == &F.dp ? "p" : "");
    F.s[slot].done = F.s[slot].enq;
}

void settle(uint32_t *last, int except_slot)
{
    for (int s = 0; s < FZ_NSLOT; s++)
        if (s != except_slot && pending(last, s))
            sync_slot(s);
}

void settle_host(struct hbuf *b)
{
    settle(b->last, -1);
}

/* Polls until the answer is not CUDA_ERROR_NOT_READY (how long it took never shows). */
static CUresult poll_until_ready(CUresult (*query)(void *), void *arg)
{
    CUresult r;
    for (long spins = 0; (r = query(arg)) == CUDA_ERROR_NOT_READY && spins < 3000000; spins++)
        usleep(10);
    return r;
}

static const struct test_driver *query_table;
static CUstream query_stream;
static CUresult query_stream_fn(void *arg)
{
    (void)arg;
    return query_table->stream_query(query_stream);
}

static CUresult query_event_fn(void *arg)
{
    return F.d.event_query(*(CUevent *)arg);
}

static int random_stream_slot(int dev)
{
    return slot_index(dev, (enum slot_role)rnd(SLOT_ORPHAN));
}

void op_stream_sync(void)
{
    int dev = (int)rnd((size_t)F.ndev);
    sync_slot(chance(10) ? slot_index(dev, SLOT_ORPHAN) : random_stream_slot(dev));
}

void op_stream_query(void)
{
    int slot = random_stream_slot((int)rnd((size_t)F.ndev));
    query_stream = slot_stream(slot, &query_table);
    CUresult r = said(poll_until_ready(query_stream_fn, NULL), "stream_query s%d%s until ready", slot,
                      query_table == &F.dp ? "p" : "");
    if (r == CUDA_SUCCESS)
        F.s[slot].done = F.s[slot].enq;
}

void op_ctx_sync(void)
{
    ctx_sync((int)rnd((size_t)F.ndev));
}

/* Record an event on a stream, or wait for one recorded earlier (synchronize, or query until ready):
 * the work before the record is then complete. */
void op_event(void)
{
    int dev = (int)rnd((size_t)F.ndev), k = (int)rnd(FZ_EVENTS);
    struct event *e = &F.ev[dev][k];
    if (e->slot < 0 || chance(50)) {
        int slot = random_stream_slot(dev);
        const struct test_driver *t;
        CUstream h = slot_stream(slot, &t);
        if (said(t->event_record(e->h, h), "event_record e%d.%d s%d%s", dev, k, slot, t == &F.dp ? "p" : "") ==
            CUDA_SUCCESS) {
            e->slot = slot;
            e->seq = F.s[slot].enq;
        }
        if (chance(60))
            return;
    }
    use_dev(dev);
    CUresult r = chance(50) ? said(F.d.event_sync(e->h), "event_sync e%d.%d", dev, k)
                            : said(poll_until_ready(query_event_fn, &e->h), "event_query e%d.%d until ready", dev, k);
    if (r == CUDA_SUCCESS && e->slot >= 0 && F.s[e->slot].done < e->seq)
        F.s[e->slot].done = e->seq;
}

static unsigned int slot_flags(int slot)
{
    return slot_role_of(slot) >= SLOT_NONBLOCKING0 ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT;
}

static void create_stream(int slot)
{
    use_dev(slot_dev(slot));
    if (said(F.d.stream_create(&F.s[slot].h, slot_flags(slot)), "stream_create s%d flags=%u", slot,
             slot_flags(slot)) != CUDA_SUCCESS) {
        printf("fuzz: cannot continue without stream s%d\n", slot);
        exit(3);
    }
}

/* Destroy a created stream with its work still queued (the driver finishes it), and make a new one
 * in its place. The old work stays pending in the device's SLOT_ORPHAN until a context sync. */
void op_stream_recreate(void)
{
    int dev = (int)rnd((size_t)F.ndev);
    int slot = slot_index(dev, (enum slot_role)rnd_range(SLOT_BLOCKING0, SLOT_NONBLOCKING1));
    int orphan = slot_index(dev, SLOT_ORPHAN);
    use_dev(dev);
    said(F.d.stream_destroy(F.s[slot].h), "stream_destroy s%d", slot);
    uint32_t mark = enqueue(orphan);
    for (int i = 0; i < FZ_MAX_HOST; i++)
        if (F.h[i].live && pending(F.h[i].last, slot))
            F.h[i].last[orphan] = mark;
    for (int b = 0; b < FZ_DBUFS; b++)
        if (pending(F.dv[dev][b].last, slot))
            F.dv[dev][b].last[orphan] = mark;
    F.s[slot].done = F.s[slot].enq;
    create_stream(slot);
}

/* A device buffer of `n` bytes, its bytes set by a memset on the legacy stream. */
static void dev_alloc(int dev, int k, size_t n)
{
    struct dbuf *b = &F.dv[dev][k];
    memset(b, 0, sizeof *b);
    use_dev(dev);
    if (said(F.d.mem_alloc(&b->p, n), "mem_alloc d%d.%d n=%zu", dev, k, n) != CUDA_SUCCESS) {
        b->p = 0;
        return;
    }
    b->n = n;
    int legacy = slot_index(dev, SLOT_LEGACY);
    said(F.memset_d8(b->p, (unsigned char)(0x11 * (k + 1) + dev), n), "memset d%d.%d", dev, k);
    b->last[legacy] = enqueue(legacy);
}

static size_t dev_size(int k)
{
    static const size_t base[FZ_DBUFS] = {64 * FZ_MiB, 16 * FZ_MiB, 4 * FZ_MiB, FZ_MiB};
    return base[k] + (chance(50) ? rnd(base[k] / 2) : 0); /* odd sizes too */
}

void op_dev_realloc(void)
{
    int dev = (int)rnd((size_t)F.ndev), k = (int)rnd(FZ_DBUFS);
    struct dbuf *b = &F.dv[dev][k];
    if (b->n) {
        settle(b->last, -1);
        use_dev(dev);
        said(F.d.mem_free(b->p), "mem_free d%d.%d", dev, k);
    }
    dev_alloc(dev, k, dev_size((int)rnd(FZ_DBUFS)));
}

static void *driver_symbol(const char *name)
{
    void *p = dlsym(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), name);
    if (!p) {
        fprintf(stderr, "fuzzprog: no %s in libcuda.so.1\n", name);
        exit(2);
    }
    return p;
}

/* Loads both flavours of every call (through dlsym or cuGetProcAddress, as the seed says), starts
 * each device's primary context, its streams, events and device buffers. */
void model_start(void)
{
    int getproc = chance(50);
    test_driver_load(&F.d, getproc ? "getproc" : "dlsym");
    test_driver_load(&F.dp, getproc ? "getproc_ptds" : "dlsym_ptds");
    say("route %s", getproc ? "getproc" : "dlsym");
    F.memset_d8 = (fn_memset_d8)driver_symbol("cuMemsetD8_v2");
    F.event_destroy = (fn_event_destroy)driver_symbol("cuEventDestroy_v2");
    F.ptr_attr = (fn_ptr_attr)driver_symbol("cuPointerGetAttribute");
    F.host_get_flags = (fn_host_get_flags)driver_symbol("cuMemHostGetFlags");
    if (said(F.d.init(0), "init") != CUDA_SUCCESS)
        exit(3);
    int count = 0;
    said(F.d.device_count(&count), "device_count"); /* the count itself differs between machines */
    if (count < F.ndev)
        F.ndev = count;
    if (F.ndev < 1) {
        printf("fuzz: no device\n");
        exit(3);
    }
    F.cur = -1;
    for (int dev = 0; dev < F.ndev; dev++) {
        CUdevice device;
        said(F.d.device_get(&device, dev), "device_get %d", dev);
        said(F.d.primary_retain(&F.ctx[dev], device), "primary_retain %d", dev);
        use_dev(dev);
        for (int r = SLOT_BLOCKING0; r <= SLOT_NONBLOCKING1; r++)
            create_stream(slot_index(dev, (enum slot_role)r));
        for (int k = 0; k < FZ_EVENTS; k++) {
            unsigned int flags = chance(50) ? CU_EVENT_DISABLE_TIMING : CU_EVENT_DEFAULT;
            said(F.d.event_create(&F.ev[dev][k].h, flags), "event_create e%d.%d flags=%u", dev, k, flags);
            F.ev[dev][k].slot = -1;
        }
        for (int k = 0; k < FZ_DBUFS; k++)
            dev_alloc(dev, k, dev_size(k));
    }
}

/* Synchronizes everything, reads every device buffer back, gives everything back. */
void model_finish(void)
{
    for (int dev = 0; dev < F.ndev; dev++)
        ctx_sync(dev);
    for (int dev = 0; dev < F.ndev; dev++)
        for (int k = 0; k < FZ_DBUFS; k++) {
            struct dbuf *b = &F.dv[dev][k];
            if (!b->n)
                continue;
            unsigned char *tmp = malloc(b->n);
            use_dev(dev);
            if (said(F.d.dtoh(tmp, b->p, b->n), "final dtoh d%d.%d", dev, k) == CUDA_SUCCESS)
                read_back("d", dev * FZ_DBUFS + k, tmp, 0, b->n);
            free(tmp);
        }
    host_release_all();
    for (int dev = 0; dev < F.ndev; dev++) {
        use_dev(dev);
        for (int r = SLOT_BLOCKING0; r <= SLOT_NONBLOCKING1; r++)
            said(F.d.stream_destroy(F.s[slot_index(dev, (enum slot_role)r)].h), "stream_destroy s%d",
                 slot_index(dev, (enum slot_role)r));
        for (int k = 0; k < FZ_EVENTS; k++)
            said(F.event_destroy(F.ev[dev][k].h), "event_destroy e%d.%d", dev, k);
        for (int k = 0; k < FZ_DBUFS; k++)
            if (F.dv[dev][k].n)
                said(F.d.mem_free(F.dv[dev][k].p), "mem_free d%d.%d", dev, k);
    }
}
