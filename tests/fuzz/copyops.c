/* copyops.c: the fuzzer's copies, through every entry point the shim wraps for them: HtoD/DtoH/DtoD
 * (sync and async), cuMemcpy/cuMemcpyAsync with host pointers, 2D copies (host, device or unified
 * memory types), peer copies between two devices. Each picks its buffers, range and stream, waits
 * for conflicting work (model.c), copies, records what stays pending, and reads back what it may. */
#include "fuzz.h"

enum dir { H2D, D2H, D2D };

/* Where a copy runs: an async copy on any stream; a sync copy on the legacy or per-thread default
 * stream, depending on the flavour of the call. */
struct call {
    int slot, async;
    const struct test_driver *t;
    CUstream h;
};

static void call_pick(struct call *c, int dev, int async)
{
    c->async = async;
    c->h = NULL;
    if (async) {
        c->slot = slot_index(dev, (enum slot_role)rnd(SLOT_ORPHAN));
        return;
    }
    c->t = chance(50) ? &F.d : &F.dp;
    c->slot = slot_index(dev, c->t == &F.d ? SLOT_LEGACY : SLOT_PER_THREAD);
}

/* After settling (which may switch contexts): the stream and the current context. */
static void call_ready(struct call *c, int dev)
{
    if (c->async)
        c->h = slot_stream(c->slot, &c->t);
    else
        use_dev(dev);
}

static const char *flavour(const struct call *c)
{
    return c->t == &F.dp ? "p" : "";
}

/* A random allocated device buffer of `dev` other than number `not_k`, or NULL. */
static struct dbuf *pick_dbuf(int dev, int *k, int not_k)
{
    int seen = 0;
    struct dbuf *chosen = NULL;
    for (int i = 0; i < FZ_DBUFS; i++)
        if (i != not_k && F.dv[dev][i].n && rnd((size_t)++seen) == 0) {
            chosen = &F.dv[dev][i];
            *k = i;
        }
    return chosen;
}

/* The program may overwrite or free a pageable source as soon as the copy returns. */
static void after_h2d(struct hbuf *b, size_t off, size_t len, const struct call *c, uint32_t seq)
{
    touch_host(b);
    if (host_pinned(b)) {
        if (c->async)
            b->last[c->slot] = seq;
        return;
    }
    if (chance(15)) {
        fz_fill(b->p + off, len, rnd64());
        say("overwrite h%d [%zu,+%zu] at once", b->id, off, len);
    } else if (chance(5)) {
        host_release(b);
    }
}

/* A D2H copy into pageable memory, and any sync one, is complete when it returns. */
static void after_d2h(struct hbuf *b, size_t off, size_t len, const struct call *c, uint32_t seq)
{
    touch_host(b);
    if (c->async && host_pinned(b)) {
        b->last[c->slot] = seq;
        if (chance(50))
            return;
        sync_slot(c->slot);
    }
    read_back("h", b->id, b->p, off, len);
}

static void copy_d2d(int dev, int unified)
{
    int ks = 0, kd = 0;
    struct dbuf *src = pick_dbuf(dev, &ks, -1), *dst = src ? pick_dbuf(dev, &kd, ks) : NULL;
    if (!dst)
        return;
    size_t soff, len;
    pick_range(src->n, dst->n, &soff, &len);
    size_t doff = rnd(dst->n - len + 1);
    struct call c;
    call_pick(&c, dev, chance(50));
    settle(src->last, c.slot);
    settle(dst->last, c.slot);
    call_ready(&c, dev);
    uint32_t seq = enqueue(c.slot);
    CUdeviceptr to = dst->p + doff, from = src->p + soff;
    CUresult r = unified ? (c.async ? c.t->memcpy_async(to, from, len, c.h) : c.t->memcpy(to, from, len))
                         : (c.async ? c.t->dtod_async(to, from, len, c.h) : c.t->dtod(to, from, len));
    said(r, "%s%s d%d.%d+%zu -> d%d.%d+%zu n=%zu s%d%s", unified ? "memcpy_d2d" : "dtod", c.async ? "_async" : "",
         dev, ks, soff, dev, kd, doff, len, c.slot, flavour(&c));
    src->last[c.slot] = dst->last[c.slot] = seq;
}

static void copy1d(enum dir dir, int unified)
{
    int dev = (int)rnd((size_t)F.ndev), k = 0;
    if (dir == D2D) {
        copy_d2d(dev, unified);
        return;
    }
    struct hbuf *b = pick_host();
    struct dbuf *db = pick_dbuf(dev, &k, -1);
    if (!b || !db) {
        op_alloc();
        return;
    }
    size_t off, len;
    pick_range(b->n, db->n, &off, &len);
    size_t doff = rnd(db->n - len + 1);
    struct call c;
    call_pick(&c, dev, chance(50));
    settle(b->last, c.slot);
    settle(db->last, c.slot);
    call_ready(&c, dev);
    uint32_t seq = enqueue(c.slot);
    unsigned char *hp = b->p + off;
    CUdeviceptr dp = db->p + doff, hu = (CUdeviceptr)(uintptr_t)hp;
    CUresult r;
    if (unified && dir == H2D)
        r = c.async ? c.t->memcpy_async(dp, hu, len, c.h) : c.t->memcpy(dp, hu, len);
    else if (unified)
        r = c.async ? c.t->memcpy_async(hu, dp, len, c.h) : c.t->memcpy(hu, dp, len);
    else if (dir == H2D)
        r = c.async ? c.t->htod_async(dp, hp, len, c.h) : c.t->htod(dp, hp, len);
    else
        r = c.async ? c.t->dtoh_async(hp, dp, len, c.h) : c.t->dtoh(hp, dp, len);
    said(r, "%s%s h%d[%zu,+%zu] d%d.%d+%zu s%d%s",
         unified ? (dir == H2D ? "memcpy_h2d" : "memcpy_d2h") : (dir == H2D ? "htod" : "dtoh"),
         c.async ? "_async" : "", b->id, off, len, dev, k, doff, c.slot, flavour(&c));
    db->last[c.slot] = seq;
    if (dir == H2D)
        after_h2d(b, off, len, &c, seq);
    else
        after_d2h(b, off, len, &c, seq);
}

void op_htod(void)
{
    copy1d(H2D, 0);
}

void op_dtoh(void)
{
    copy1d(D2H, 0);
}

void op_unified(void)
{
    copy1d((enum dir)rnd(3), 1);
}

void op_dtod(void)
{
    copy_d2d((int)rnd((size_t)F.ndev), chance(30));
}

/* One side of a 2D copy: rows of `w` bytes, `pitch` apart, starting `start` bytes into a buffer
 * of n bytes, spelled as a base pointer plus X and Y (or the base pointer alone). */
struct side {
    size_t n, pitch, start, base, x, y;
};

static void lay_out(struct side *s, size_t w, size_t h, int device)
{
    size_t pitch = device ? (chance(60) ? (w + 511) / 512 * 512 : w + rnd(300)) : w + (chance(50) ? 0 : rnd(1024));
    if ((h - 1) * pitch + w > s->n)
        pitch = w; /* always fits: w * h <= n */
    size_t extent = (h - 1) * pitch + w;
    s->pitch = pitch;
    s->start = rnd(s->n - extent + 1);
    s->base = s->start;
    s->x = s->y = 0;
    if (chance(50) && s->start % pitch + w <= pitch) {
        s->base = 0;
        s->y = s->start / pitch;
        s->x = s->start % pitch;
    }
}

static size_t extent_of(const struct side *s, size_t w, size_t h)
{
    return (h - 1) * s->pitch + w;
}

void op_2d(void)
{
    enum dir dir = (enum dir)rnd(3);
    int dev = (int)rnd((size_t)F.ndev), ka = 0, kb = -1;
    struct hbuf *hb = NULL;
    struct dbuf *da = pick_dbuf(dev, &ka, -1), *db = NULL;
    if (dir == D2D)
        db = da ? pick_dbuf(dev, &kb, ka) : NULL;
    else
        hb = pick_host();
    if (!da || (dir == D2D ? !db : !hb))
        return;
    /* src/dst sides: the host buffer (if any) is the source of H2D and the target of D2H */
    struct side hs = {hb ? hb->n : db->n, 0, 0, 0, 0, 0}, ds = {da->n, 0, 0, 0, 0, 0};
    size_t cap = hs.n < ds.n ? hs.n : ds.n;
    size_t h = rnd_range(1, 32);
    if (h > cap)
        h = cap;
    size_t w = chance(50) ? rnd_range(1, cap / h < 4096 ? cap / h : 4096) : rnd_range(1, cap / h);
    lay_out(&hs, w, h, hb == NULL);
    lay_out(&ds, w, h, 1);
    struct call c;
    call_pick(&c, dev, chance(40));
    if (hb)
        settle(hb->last, c.slot);
    else
        settle(db->last, c.slot);
    settle(da->last, c.slot);
    call_ready(&c, dev);

    CUDA_MEMCPY2D m;
    memset(&m, 0, sizeof m);
    CUmemorytype other_type = hb ? (chance(25) ? CU_MEMORYTYPE_UNIFIED : CU_MEMORYTYPE_HOST)
                                 : (chance(25) ? CU_MEMORYTYPE_UNIFIED : CU_MEMORYTYPE_DEVICE);
    CUmemorytype dev_type = chance(25) ? CU_MEMORYTYPE_UNIFIED : CU_MEMORYTYPE_DEVICE;
    unsigned char *host = hb ? hb->p + hs.base : NULL;
    CUdeviceptr other = hb ? (CUdeviceptr)(uintptr_t)host : db->p + hs.base, dptr = da->p + ds.base;
    int from_other = dir != D2H; /* H2D: host -> da; D2D: db -> da; D2H: da -> host */
    if (from_other) {
        m.srcMemoryType = other_type, m.srcHost = host, m.srcDevice = other, m.srcPitch = hs.pitch;
        m.srcXInBytes = hs.x, m.srcY = hs.y;
        m.dstMemoryType = dev_type, m.dstDevice = dptr, m.dstPitch = ds.pitch;
        m.dstXInBytes = ds.x, m.dstY = ds.y;
    } else {
        m.srcMemoryType = dev_type, m.srcDevice = dptr, m.srcPitch = ds.pitch;
        m.srcXInBytes = ds.x, m.srcY = ds.y;
        m.dstMemoryType = other_type, m.dstHost = host, m.dstDevice = other, m.dstPitch = hs.pitch;
        m.dstXInBytes = hs.x, m.dstY = hs.y;
    }
    if (m.srcMemoryType != CU_MEMORYTYPE_HOST)
        m.srcHost = NULL;
    if (m.dstMemoryType != CU_MEMORYTYPE_HOST)
        m.dstHost = NULL;
    m.WidthInBytes = w;
    m.Height = h;
    uint32_t seq = enqueue(c.slot);
    int unaligned = !c.async && chance(50);
    CUresult r = c.async ? c.t->m2d_async(&m, c.h) : unaligned ? c.t->m2d_unaligned(&m) : c.t->m2d(&m);
    said(r, "%s%s %s %s%d[%zu,+%zu pitch %zu] d%d.%d[%zu,+%zu pitch %zu] w=%zu h=%zu types=%d,%d s%d%s",
         unaligned ? "memcpy2d_unaligned" : "memcpy2d", c.async ? "_async" : "",
         dir == H2D ? "h2d" : dir == D2H ? "d2h" : "d2d", hb ? "h" : "d", hb ? hb->id : dev * FZ_DBUFS + kb,
         hs.start, extent_of(&hs, w, h), hs.pitch, dev, ka, ds.start, extent_of(&ds, w, h), ds.pitch, w, h,
         (int)m.srcMemoryType, (int)m.dstMemoryType, c.slot, flavour(&c));
    da->last[c.slot] = seq;
    if (!hb)
        db->last[c.slot] = seq;
    else if (dir == H2D)
        after_h2d(hb, hs.start, extent_of(&hs, w, h), &c, seq);
    else
        after_d2h(hb, hs.start, extent_of(&hs, w, h), &c, seq);
}

/* A copy between the two devices' buffers, then a wait for it in the issuing context. */
void op_peer(void)
{
    if (F.ndev < 2) {
        copy_d2d(0, 0);
        return;
    }
    int sdev = (int)rnd(2), ddev = 1 - sdev, ks = 0, kd = 0;
    struct dbuf *src = pick_dbuf(sdev, &ks, -1), *dst = pick_dbuf(ddev, &kd, -1);
    if (!src || !dst)
        return;
    size_t soff, len;
    pick_range(src->n, dst->n, &soff, &len);
    size_t doff = rnd(dst->n - len + 1);
    settle(src->last, -1);
    settle(dst->last, -1);
    struct call c;
    call_pick(&c, sdev, chance(50));
    call_ready(&c, sdev);
    CUresult r = c.async ? c.t->peer_async(dst->p + doff, F.ctx[ddev], src->p + soff, F.ctx[sdev], len, c.h)
                         : c.t->peer(dst->p + doff, F.ctx[ddev], src->p + soff, F.ctx[sdev], len);
    said(r, "peer%s d%d.%d+%zu -> d%d.%d+%zu n=%zu s%d%s", c.async ? "_async" : "", sdev, ks, soff, ddev, kd, doff,
         len, c.slot, flavour(&c));
    if (c.async) {
        enqueue(c.slot);
        sync_slot(c.slot);
    } else {
        sync_slot(slot_index(sdev, SLOT_ORPHAN));
        sync_slot(slot_index(ddev, SLOT_ORPHAN));
    }
}
