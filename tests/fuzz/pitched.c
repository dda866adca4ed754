/* pitched.c: the fuzzer's 2D and 3D copies: boxes of rows (and slices of rows) inside a host or
 * device buffer, with pitches and slice heights that leave gaps or none, spelled as a base pointer
 * plus X/Y/Z or as a pointer alone, memory types host, device or unified. */
#include "fuzz.h"

/* One side of a pitched copy: rows of w bytes `pitch` apart, slices of `height` rows; the box's
 * first byte is `start` bytes into an n-byte buffer, spelled base + (z * height + y) * pitch + x;
 * it spans `extent` bytes. */
struct side {
    size_t n, pitch, height, base, x, y, z, start, extent;
};

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static void lay_out(struct side *s, size_t w, size_t h, size_t d, int device)
{
    size_t pitch = device ? (chance(60) ? (w + 511) / 512 * 512 : w + rnd(300)) : w + (chance(50) ? 0 : rnd(1024));
    size_t height = d > 1 && chance(50) ? h + rnd_range(1, 3) : h;
    if (((d - 1) * height + h - 1) * pitch + w > s->n) {
        pitch = w; /* always fits: w * h * d <= n */
        height = h;
    }
    s->pitch = pitch;
    s->height = height;
    s->extent = ((d - 1) * height + h - 1) * pitch + w;
    size_t room = s->n - s->extent;
    s->x = rnd_range(0, min_size(pitch - w, room));
    room -= s->x;
    s->y = d > 1 ? rnd_range(0, min_size(height - h, room / pitch)) : rnd(room / pitch + 1);
    room -= s->y * pitch;
    s->z = d > 1 ? rnd(room / (height * pitch) + 1) : 0;
    room -= s->z * height * pitch;
    s->base = rnd(room + 1);
    s->start = s->base + (s->z * height + s->y) * pitch + s->x;
    if (chance(50)) { /* the same box, spelled as a pointer to its first byte */
        s->base = s->start;
        s->x = s->y = s->z = 0;
    }
}

/* What both descriptors need of one end of the copy. */
struct end {
    CUmemorytype type;
    const struct side *s;
    unsigned char *host;
    CUdeviceptr dev;
};

static void set_2d(CUDA_MEMCPY2D *m, const struct end *src, const struct end *dst, size_t w, size_t h)
{
    memset(m, 0, sizeof *m);
    m->srcMemoryType = src->type, m->srcXInBytes = src->s->x, m->srcY = src->s->y, m->srcPitch = src->s->pitch;
    m->dstMemoryType = dst->type, m->dstXInBytes = dst->s->x, m->dstY = dst->s->y, m->dstPitch = dst->s->pitch;
    if (src->type == CU_MEMORYTYPE_HOST)
        m->srcHost = src->host;
    else
        m->srcDevice = src->dev;
    if (dst->type == CU_MEMORYTYPE_HOST)
        m->dstHost = dst->host;
    else
        m->dstDevice = dst->dev;
    m->WidthInBytes = w;
    m->Height = h;
}

static void set_3d(CUDA_MEMCPY3D *m, const struct end *src, const struct end *dst, size_t w, size_t h, size_t d)
{
    memset(m, 0, sizeof *m);
    m->srcMemoryType = src->type, m->srcXInBytes = src->s->x, m->srcY = src->s->y, m->srcZ = src->s->z;
    m->srcPitch = src->s->pitch, m->srcHeight = src->s->height;
    m->dstMemoryType = dst->type, m->dstXInBytes = dst->s->x, m->dstY = dst->s->y, m->dstZ = dst->s->z;
    m->dstPitch = dst->s->pitch, m->dstHeight = dst->s->height;
    if (src->type == CU_MEMORYTYPE_HOST)
        m->srcHost = src->host;
    else
        m->srcDevice = src->dev;
    if (dst->type == CU_MEMORYTYPE_HOST)
        m->dstHost = dst->host;
    else
        m->dstDevice = dst->dev;
    m->WidthInBytes = w;
    m->Height = h;
    m->Depth = d;
}

/* H2D: host -> da; D2H: da -> host; D2D: db -> da. */
static void pitched(int three_d)
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
    struct side os = {.n = hb ? hb->n : db->n}, ds = {.n = da->n}; /* the other side, and da's */
    size_t cap = min_size(os.n, ds.n);
    size_t h = min_size(rnd_range(1, three_d ? 16 : 32), cap);
    size_t d = three_d ? min_size(rnd_range(1, 4), cap / h) : 1;
    size_t per_row = cap / (h * d);
    size_t w = chance(50) ? rnd_range(1, min_size(per_row, 4096)) : rnd_range(1, per_row);
    lay_out(&os, w, h, d, hb == NULL);
    lay_out(&ds, w, h, d, 1);
    struct call c;
    call_pick(&c, dev, chance(40));
    settle(hb ? hb->last : db->last, c.slot);
    settle(da->last, c.slot);
    call_ready(&c, dev);

    struct end other = {hb ? (chance(25) ? CU_MEMORYTYPE_UNIFIED : CU_MEMORYTYPE_HOST)
                           : (chance(25) ? CU_MEMORYTYPE_UNIFIED : CU_MEMORYTYPE_DEVICE),
                        &os, NULL, 0};
    struct end mine = {chance(25) ? CU_MEMORYTYPE_UNIFIED : CU_MEMORYTYPE_DEVICE, &ds, NULL, da->p + ds.base};
    if (hb) {
        other.host = hb->p + os.base;
        other.dev = (CUdeviceptr)(uintptr_t)other.host;
    } else {
        other.dev = db->p + os.base;
    }
    const struct end *src = dir == D2H ? &mine : &other, *dst = dir == D2H ? &other : &mine;
    uint32_t seq = enqueue(c.slot);
    int unaligned = !three_d && !c.async && chance(50);
    CUresult r;
    if (three_d) {
        CUDA_MEMCPY3D m;
        set_3d(&m, src, dst, w, h, d);
        r = c.async ? c.t->m3d_async(&m, c.h) : c.t->m3d(&m);
    } else {
        CUDA_MEMCPY2D m;
        set_2d(&m, src, dst, w, h);
        r = c.async ? c.t->m2d_async(&m, c.h) : unaligned ? c.t->m2d_unaligned(&m) : c.t->m2d(&m);
    }
    said(r, "%s%s %s %s%d[%zu,+%zu pitch %zu height %zu] d%d.%d[%zu,+%zu pitch %zu height %zu] "
            "w=%zu h=%zu d=%zu types=%d,%d s%d%s",
         three_d ? "memcpy3d" : unaligned ? "memcpy2d_unaligned" : "memcpy2d", c.async ? "_async" : "",
         dir == H2D ? "h2d" : dir == D2H ? "d2h" : "d2d", hb ? "h" : "d", hb ? hb->id : dev * FZ_DBUFS + kb,
         os.start, os.extent, os.pitch, os.height, dev, ka, ds.start, ds.extent, ds.pitch, ds.height, w, h, d,
         (int)src->type, (int)dst->type, c.slot, flavour(&c));
    da->last[c.slot] = seq;
    if (!hb)
        db->last[c.slot] = seq;
    else if (dir == H2D)
        after_h2d(hb, os.start, os.extent, &c, seq);
    else
        after_d2h(hb, os.start, os.extent, &c, seq);
}

void op_2d(void)
{
    pitched(0);
}

void op_3d(void)
{
    pitched(1);
}
