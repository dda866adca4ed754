/* copyops.c: the fuzzer's linear copies, through every entry point the shim wraps for them:
 * HtoD/DtoH/DtoD (sync and async), cuMemcpy/cuMemcpyAsync with host pointers, batches, peer copies
 * between two devices. Each picks its buffers, range and stream, waits for conflicting work
 * (model.c), copies, records what stays pending, and reads back what it may. 2D/3D: pitched.c. */
#include "fuzz.h"

void call_pick(struct call *c, int dev, int async)
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
void call_ready(struct call *c, int dev)
{
    if (c->async)
        c->h = slot_stream(c->slot, &c->t);
    else
        use_dev(dev);
}

const char *flavour(const struct call *c)
{
    return c->t == &F.dp ? "p" : "";
}

/* A random allocated device buffer of `dev` other than number `not_k`, or NULL. */
struct dbuf *pick_dbuf(int dev, int *k, int not_k)
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
void after_h2d(struct hbuf *b, size_t off, size_t len, const struct call *c, uint32_t seq)
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
void after_d2h(struct hbuf *b, size_t off, size_t len, const struct call *c, uint32_t seq)
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

/* One copy of a batch; its ranges must not overlap another's (a batch's copies run in any order). */
struct batch_item {
    enum dir dir;
    struct hbuf *hb;
    struct dbuf *dst, *src; /* device ends, NULL where the end is hb */
    int kd, ks;
    size_t hoff, doff, soff, len;
};

#define BATCH_MAX 8

static int overlaps(const struct batch_item *it, int n, const struct dbuf *b, size_t off, size_t len)
{
    for (int i = 0; i < n; i++) {
        const struct dbuf *ends[2] = {it[i].dst, it[i].src};
        const size_t offs[2] = {it[i].doff, it[i].soff};
        for (int e = 0; e < 2; e++)
            if (ends[e] == b && off < offs[e] + it[i].len && offs[e] < off + len)
                return 1;
    }
    return 0;
}

static int host_taken(const struct batch_item *it, int n, const struct hbuf *b)
{
    for (int i = 0; i < n; i++)
        if (it[i].hb == b)
            return 1;
    return 0;
}

/* Adds one random copy to it[n] (returns 0 when the pick collides with an earlier one). */
static int batch_pick(struct batch_item *it, int n, int dev)
{
    struct batch_item *x = &it[n];
    memset(x, 0, sizeof *x);
    x->dir = (enum dir)rnd(3);
    struct dbuf *a = pick_dbuf(dev, &x->kd, -1);
    if (!a)
        return 0;
    if (x->dir == D2D) {
        x->dst = a;
        x->src = pick_dbuf(dev, &x->ks, -1); /* may be the same buffer: the ranges stay apart */
        pick_range(x->src->n, a->n, &x->soff, &x->len);
        x->doff = rnd(a->n - x->len + 1);
        if (x->src == a && x->soff < x->doff + x->len && x->doff < x->soff + x->len)
            return 0;
        return !overlaps(it, n, a, x->doff, x->len) && !overlaps(it, n, x->src, x->soff, x->len);
    }
    x->hb = pick_host();
    if (!x->hb || host_taken(it, n, x->hb))
        return 0;
    pick_range(x->hb->n, a->n, &x->hoff, &x->len);
    x->doff = rnd(a->n - x->len + 1);
    if (x->dir == H2D)
        x->dst = a;
    else
        x->src = a, x->ks = x->kd, x->soff = x->doff;
    return !overlaps(it, n, a, x->doff, x->len);
}

/* cuMemcpyBatchAsync: up to 8 copies in any direction, on a stream other than the legacy one (a few
 * on the legacy one, which the driver refuses), with one or two attribute sets. The documentation
 * promises nothing about the host memory before the stream is synchronized, so the model treats
 * every host buffer in it as pending, and waits for all earlier work on every buffer first (source
 * orders other than "stream" require that no earlier work touches the source). */
void op_batch(void)
{
    int dev = (int)rnd((size_t)F.ndev), n = 0, want = (int)rnd_range(1, BATCH_MAX);
    struct batch_item it[BATCH_MAX];
    for (int tries = 0; n < want && tries < 3 * BATCH_MAX; tries++)
        n += batch_pick(it, n, dev);
    if (!n)
        return;
    int slot = slot_index(dev, chance(5) ? SLOT_LEGACY : (enum slot_role)rnd_range(SLOT_PER_THREAD, SLOT_NONBLOCKING1));
    CUdeviceptr dsts[BATCH_MAX], srcs[BATCH_MAX];
    size_t sizes[BATCH_MAX];
    for (int i = 0; i < n; i++) {
        struct batch_item *x = &it[i];
        if (x->hb)
            settle(x->hb->last, -1);
        settle((x->dst ? x->dst : x->src)->last, -1);
        if (x->dir == D2D)
            settle(x->src->last, -1);
        CUdeviceptr host = x->hb ? (CUdeviceptr)(uintptr_t)(x->hb->p + x->hoff) : 0;
        dsts[i] = x->dir == D2H ? host : x->dst->p + x->doff;
        srcs[i] = x->dir == H2D ? host : x->src->p + x->soff;
        sizes[i] = x->len;
    }
    const struct test_driver *t;
    CUstream h = slot_stream(slot, &t);
    CUmemcpyAttributes attrs[2];
    size_t idxs[2] = {0, n > 1 ? rnd_range(1, (size_t)n - 1) : 0}, nattrs = n > 1 && chance(50) ? 2 : 1;
    memset(attrs, 0, sizeof attrs);
    for (int k = 0; k < 2; k++) {
        attrs[k].srcAccessOrder = (CUmemcpySrcAccessOrder)rnd_range(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
                                                                    CU_MEMCPY_SRC_ACCESS_ORDER_ANY);
        attrs[k].flags = chance(30) ? CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE : 0;
    }
    for (int i = 0; i < n; i++) {
        struct batch_item *x = &it[i];
        if (x->hb)
            say("batch item %d %s h%d[%zu,+%zu] d%d.%d+%zu", i, x->dir == H2D ? "h2d" : "d2h", x->hb->id, x->hoff,
                x->len, dev, x->kd, x->doff);
        else
            say("batch item %d d2d d%d.%d+%zu -> d%d.%d+%zu n=%zu", i, dev, x->ks, x->soff, dev, x->kd, x->doff,
                x->len);
    }
    uint32_t seq = enqueue(slot);
    said(t->batch(dsts, srcs, sizes, (size_t)n, attrs, idxs, nattrs, h), "batch n=%d attrs=%zu order=%d,%d s%d%s",
         n, nattrs, (int)attrs[0].srcAccessOrder, nattrs > 1 ? (int)attrs[1].srcAccessOrder : 0, slot,
         t == &F.dp ? "p" : "");
    for (int i = 0; i < n; i++) {
        struct batch_item *x = &it[i];
        if (x->hb) {
            x->hb->last[slot] = seq;
            touch_host(x->hb);
        }
        if (x->dst)
            x->dst->last[slot] = seq;
        if (x->src)
            x->src->last[slot] = seq;
    }
    if (chance(50))
        return;
    sync_slot(slot);
    for (int i = 0; i < n; i++)
        if (it[i].dir == D2H)
            read_back("h", it[i].hb->id, it[i].hb->p, it[i].hoff, it[i].len);
}
