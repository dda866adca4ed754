/* stage.c: the staging pipelines (see stage.h). The DMAs use the real cuMemcpyHtoDAsync_v2 /
 * cuMemcpyDtoHAsync_v2 on the program's stream, named explicitly (CU_STREAM_LEGACY or
 * CU_STREAM_PER_THREAD for the default streams), so stream order is exactly the program's. */
#include "stage.h"

#include "base/common.h"
#include "base/driver.h"
#include "base/gate.h"
#include "base/real.h"
#include "earlier_work.h"
#include "hostmem/hugepage.h"
#include "hostmem/recycle.h"
#include "omp_team.h"
#include "policy.h"
#include "pool.h"
#include "spinners.h"
#include "workers.h"

/* The real cuMemcpyHtoDAsync_v2 / cuMemcpyDtoHAsync_v2 rows (the shapes of copy/driver_shapes.h). */
typedef CUresult (*fn_htod_async)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*fn_dtoh_async)(void *, CUdeviceptr, size_t, CUstream);

static bool forked_child;

void stage_forget(void)
{
    forked_child = true;
    __atomic_store_n(&pinshim_gate.prewarm_pending, false, __ATOMIC_RELAXED); /* no CUDA in a forked child */
}

void stage_context_retained(CUdevice dev)
{
    if (pinshim_policy.stage && pinshim_policy.pool_prewarm == POOL_PREWARM_CONTEXT && !forked_child)
        pool_prewarm(dev);
}

/* A pageable copy's share of the pool's start (pool_prewarm = copy, or a program that made no
 * primary context): the first one asks for the first slab. Whether that is still to do is a word
 * of the gate (set from the policy at load): the copies after the first read neither the policy
 * nor the pool. */
static void prewarm_at_copy(void)
{
    if (PINSHIM_LIKELY(!__atomic_load_n(&pinshim_gate.prewarm_pending, __ATOMIC_RELAXED)))
        return;
    __atomic_store_n(&pinshim_gate.prewarm_pending, false, __ATOMIC_RELAXED);
    if (!forked_child)
        pool_prewarm(-1);
}

PINSHIM_HOT void stage_small_copy(void) { prewarm_at_copy(); }

PINSHIM_HOT bool stage_declines_size(bool h2d, size_t bytes)
{
    return !pinshim_policy.stage || bytes < (h2d ? pinshim_policy.stage_min_bytes : pinshim_policy.stage_d2h_min_bytes);
}

PINSHIM_HOT bool stage_wanted(struct copy *c)
{
    bool h2d = c->dir == DIR_H2D && c->src_kind == KIND_PAGEABLE && c->dst_kind == KIND_DEVICE;
    bool d2h = c->dir == DIR_D2H && c->dst_kind == KIND_PAGEABLE && c->src_kind == KIND_DEVICE;
    if (!h2d && !d2h)
        return false;
    prewarm_at_copy();
    if (stage_declines_size(h2d, c->bytes))
        c->unstaged = pinshim_policy.stage ? UNSTAGED_SMALL : UNSTAGED_DISABLED;
    else if (forked_child)
        c->unstaged = UNSTAGED_CHILD;
    else if (!pool_available())
        c->unstaged = UNSTAGED_POOL;
    else
        return true;
    return false;
}

void stage_mark_unsupported(struct copy *c)
{
    if (stage_wanted(c))
        c->unstaged = UNSTAGED_SHAPE;
}

/* Declines copies the driver would treat specially or reject: stream capture (a captured copy
 * from a reused chunk would replay wrong data); a device side that is not plain device memory
 * holding the whole range (managed or pinned memory passed as a device pointer must see a sync copy
 * complete on return; an invalid range must get the driver's error, with nothing written). */
static bool stage_safe(struct copy *c, CUdeviceptr dev, size_t bytes, CUstream stream)
{
    if (real_stream_capturing(stream)) {
        c->unstaged = UNSTAGED_CAPTURE;
        return false;
    }
    if (!real_device_range_whole(dev, bytes)) {
        c->unstaged = UNSTAGED_RANGE;
        return false;
    }
    return true;
}

static enum unstaged_reason miss_reason(enum pool_miss why)
{
    switch (why) {
    case POOL_MISS_WARMING: return UNSTAGED_WARMUP;
    case POOL_MISS_BUSY: return UNSTAGED_BUSY;
    default: return UNSTAGED_POOL;
    }
}

/* How long a copy waits for chunks other copies hold before it passes through: the time the
 * driver's pageable path would take for it at 8 GB/s (what it reached for large H2D copies on an
 * H200: ../shared/FACTS.md), at least 2 ms, at most 20 ms. A waiting copy makes the others take no
 * more chunks, so one comes back within a chunk's time. */
static uint64_t patience_ns(size_t bytes)
{
    uint64_t ns = bytes / 8; /* 8 bytes per ns */
    return ns < 2000000 ? 2000000 : ns > 20000000 ? 20000000 : ns;
}

/* A pipeline's next chunk: its first may be waited for (patience_ns), the others are taken only
 * when pool_acquire_more allows. A first chunk that must be staged (wait_warming) waits for the
 * pool's first slab too. */
static struct pool_chunk *next_chunk(bool first, size_t bytes, CUstream stream, bool wait_warming,
                                     enum pool_miss *why)
{
    return first ? pool_acquire(stream, patience_ns(bytes), wait_warming, why) : pool_acquire_more(stream, why);
}

/* "For transfers from pageable host memory to device memory, a stream sync is performed before
 * the copy is initiated" (CUDA's API synchronization behavior): a sync H2D keeps that. */
static CUresult presync(CUstream stream)
{
    static void *sync_fn;
    CUresult (*stream_sync)(CUstream) = (CUresult(*)(CUstream))real_driver_symbol_cached(&sync_fn, "cuStreamSynchronize");
    if (!stream_sync)
        return CUDA_ERROR_NOT_FOUND;
    pinshim_enter();
    CUresult r = stream_sync(stream);
    pinshim_leave();
    return r;
}

/* Whether a staged H2D must synchronize its stream before its first DMA (presync): a sync one
 * always; an async one larger than the driver's own staging returns only once the stream's earlier
 * work is done (earlier_work.h), which is marked here (*marked) and waited for after the last DMA
 * is queued, or, where it cannot be marked, synchronized now. */
static bool needs_presync(const struct copy *c, size_t bytes, CUstream stream, bool *marked)
{
    if (!c->async)
        return true;
    return bytes > DRIVER_ASYNC_STAGING_BYTES && earlier_work_mark(stream, marked) != CUDA_SUCCESS;
}

/* H2D: up to H2D_WINDOW pieces at once: while one piece's DMA runs, the workers fill the next ones,
 * and a piece's DMA starts as soon as its own memcpy is done, so a slow part of one piece (a thread
 * preempted by the program's busy threads) does not stall the copying of the next. A copy that fits
 * in one pool chunk is cut into pieces inside that chunk, released after the last DMA; a larger one
 * takes a chunk per piece. The first chunk may be waited for, the others are taken only if free
 * right now and not wanted by another copy (a stager holding chunks never blocks on the pool: no
 * deadlock; concurrent copies share it). */
#define H2D_WINDOW 4

/* A copy is cut into at least H2D_WINDOW pieces where each is still this large: a copy of one
 * chunk would otherwise run its memcpy and its DMA one after the other. */
#define H2D_PIECE_MIN ((size_t)1 << 20)

static size_t h2d_piece_bytes(size_t bytes, size_t chunk)
{
    size_t piece = (bytes / H2D_WINDOW + 4095) & ~(size_t)4095;
    if (piece < H2D_PIECE_MIN)
        piece = H2D_PIECE_MIN;
    return piece < chunk ? piece : chunk;
}

struct h2d_slot {
    struct pool_chunk *ch;
    char *staged; /* where in ch this piece is copied */
    struct workers_job job;
    size_t off, n;
};

/* Gives back a chunk once its pieces are done: behind its DMAs if any was queued. */
static void h2d_release(struct pool_chunk *ch, bool dma_queued, CUstream stream)
{
    if (dma_queued)
        pool_release_after(ch, stream);
    else
        pool_release_idle(ch); /* no DMA was queued from it */
}

/* What stage_h2d and stage_d2h return once their pipeline ran: false where it did nothing (the
 * driver copies it); else true with the program's result in *result, the copy staged if that is a
 * success. */
static bool pipeline_outcome(struct copy *c, bool handled, CUresult r, CUresult *result)
{
    if (!handled)
        return false;
    if (r == CUDA_SUCCESS)
        c->action = ACTION_STAGED;
    *result = r;
    return true;
}

/* One staged H2D, for its pipeline (h2d_pipeline), which may run in a region of the program's
 * OpenMP team (workers_with_team). */
struct h2d_run {
    struct copy *c;
    CUdeviceptr dst;
    const char *src;
    size_t bytes;
    CUstream stream;
    fn_htod_async dma;
    unsigned team;   /* threads of the spinning OpenMP team serving as workers (workers_team_share), or 0 */
    bool handled;    /* false: nothing was done (c->unstaged says why); the driver copies it */
    CUresult result; /* when handled: what the program gets */
};

static void h2d_pipeline(void *arg)
{
    struct h2d_run *run = arg;
    struct copy *c = run->c;
    CUdeviceptr dst = run->dst;
    const char *src = run->src;
    size_t bytes = run->bytes;
    CUstream stream = run->stream;
    fn_htod_async dma = run->dma;
    unsigned team = run->team;
    size_t chunk = pool_chunk_bytes(), piece = h2d_piece_bytes(bytes, chunk);
    bool one_chunk = bytes <= chunk; /* every piece in `shared`, released once at the end */
    struct pool_chunk *shared = NULL;
    bool shared_queued = false;
    struct h2d_slot ring[H2D_WINDOW];
    unsigned head = 0, count = 0;
    size_t next_off = 0;
    CUresult status = CUDA_SUCCESS;
    bool marked = false; /* the stream's earlier work is marked, to wait for once the DMAs are queued */
    /* Staged in place of a direct copy that would wait behind its busy stream (copy_entry.c), and
     * small enough that the driver would return at once: it waits for the warming pool instead. */
    bool must_stage = c->instead_of_direct && bytes <= DRIVER_ASYNC_STAGING_BYTES;
    while (next_off < bytes || count > 0) {
        /* start as many memcpys as the window and the pool allow */
        while (status == CUDA_SUCCESS && next_off < bytes && count < H2D_WINDOW) {
            struct pool_chunk *ch = shared;
            if (!ch) {
                enum pool_miss why;
                ch = next_chunk(count == 0, bytes, stream, must_stage, &why);
                if (!ch) {
                    if (next_off == 0) {
                        c->unstaged = miss_reason(why);
                        return; /* not handled: the driver copies it */
                    }
                    break;
                }
                if (next_off == 0 && needs_presync(c, bytes, stream, &marked)) {
                    CUresult r = presync(stream);
                    if (r != CUDA_SUCCESS) {
                        pool_release_idle(ch);
                        run->handled = true;
                        run->result = r; /* the driver's pre-copy sync would have returned it too */
                        return;
                    }
                }
                if (one_chunk)
                    shared = ch;
            }
            struct h2d_slot *s = &ring[(head + count) % H2D_WINDOW];
            s->ch = ch, s->off = next_off;
            s->staged = (char *)ch->ptr + (one_chunk ? next_off : 0);
            s->n = bytes - next_off < piece ? bytes - next_off : piece;
            workers_start(&s->job, s->staged, (const char *)src + next_off, s->n, WORKERS_DST_RESIDENT, team);
            count++;
            next_off += s->n;
        }
        if (count == 0) {
            if (status == CUDA_SUCCESS && next_off < bytes) {
                /* the pool went away mid-copy: the rest goes through the driver, in stream order */
                pinshim_enter();
                status = dma(dst + next_off, (const char *)src + next_off, bytes - next_off, stream);
                pinshim_leave();
                next_off = bytes;
            }
            break;
        }
        /* the oldest piece: once its memcpy is done, its DMA */
        struct h2d_slot *s = &ring[head];
        workers_finish(&s->job);
        CUresult r = CUDA_ERROR_UNKNOWN;
        if (status == CUDA_SUCCESS) {
            pinshim_enter();
            r = dma(dst + s->off, s->staged, s->n, stream);
            pinshim_leave();
            if (r != CUDA_SUCCESS)
                status = r; /* the driver refused this piece: the program sees the driver's error */
        }
        if (one_chunk)
            shared_queued |= r == CUDA_SUCCESS;
        else
            h2d_release(s->ch, r == CUDA_SUCCESS, stream);
        head = (head + 1) % H2D_WINDOW;
        count--;
    }
    if (shared)
        h2d_release(shared, shared_queued, stream);
    if (marked && status == CUDA_SUCCESS)
        status = earlier_work_wait();
    run->handled = true;
    run->result = status;
}

bool stage_h2d(struct copy *c, CUdeviceptr dst, const void *src, size_t bytes, CUstream stream, CUresult *result)
{
    fn_htod_async dma = (fn_htod_async)driver_real(ENTRY_htod_async);
    struct omp_probe probe;
    omp_team_probe_begin(&probe);
    if (!dma || !stage_safe(c, dst, bytes, stream))
        return false;
    struct h2d_run run = {.c = c, .dst = dst, .src = src, .bytes = bytes, .stream = stream, .dma = dma,
                          /* whether the program's OpenMP team spins, and how much of it may copy */
                          .team = workers_team_share(omp_team_probe_end(&probe), WORKERS_DST_RESIDENT)};
    workers_with_team(run.team, h2d_pipeline, &run);
    if (run.handled && run.result == CUDA_SUCCESS && omp_team_may_compete(&probe))
        spinners_note_once(); /* an OpenMP runtime whose threads may compete with ours: advice */
    return pipeline_outcome(c, run.handled, run.result, result);
}

/* D2H: up to D2H_WINDOW chunks in flight. Chunk i+1's DMA runs while chunk i is copied out, and
 * up to D2H_COPYING copy-outs are queued at once, so a worker that ends its part of one chunk takes
 * a part of the next instead of waiting for the slowest part (into a fresh destination each part
 * runs at the speed of its page faults, which vary). The first chunk may be waited for, the others
 * are taken only if free right now and not wanted by another copy, so a stager holding chunks never
 * blocks on the pool (no deadlock) and concurrent copies share it. */
#define D2H_WINDOW 6
#define D2H_COPYING 4

struct d2h_slot {
    struct pool_chunk *ch;
    size_t off, n;
    CUresult waited;  /* the result of waiting for this chunk's DMA */
    bool copying;     /* job started */
    struct workers_job job;
};

/* Ends the oldest slot: its copy-out, then the chunk goes back (behind its DMA if the wait failed). */
static void d2h_retire(struct d2h_slot *s, CUstream stream)
{
    if (s->copying)
        workers_finish(&s->job);
    if (s->waited == CUDA_SUCCESS)
        pool_release_idle(s->ch);
    else
        pool_release_after(s->ch, stream);
}

/* The bytes of a staged D2H larger than a chunk that its first DMA moves: `first`, so that the
 * copy-out starts once this much has arrived (a copy of one chunk keeps one chunk: a second would
 * make the pool grow for it), or a whole chunk where `first` is 0. Into huge pages the piece ends on
 * a 2 MiB block boundary of the destination, so that every later piece (whole chunks) starts on one
 * (chunks being multiples of 2 MiB) and no block is written by the parts of two pieces, one of
 * them waiting for the other's fault. */
static size_t d2h_first_piece(void *dst, size_t first, size_t chunk, enum workers_dst dst_kind)
{
    if (first == 0 || first >= chunk)
        return chunk;
    if (dst_kind != WORKERS_DST_MAY_FAULT_HUGE)
        return first;
    uintptr_t end = ((uintptr_t)dst + first + HUGEPAGE_BYTES - 1) & ~(HUGEPAGE_BYTES - 1);
    return end - (uintptr_t)dst <= chunk ? end - (uintptr_t)dst : first;
}

/* One staged D2H, for its pipeline (d2h_pipeline), which may run in a region of the program's
 * OpenMP team (workers_with_team). */
struct d2h_run {
    struct copy *c;
    char *dst;
    CUdeviceptr src;
    size_t bytes;
    CUstream stream;
    fn_dtoh_async dma;
    enum workers_dst dst_kind;
    bool recycle;    /* the destination's blocks may be taken from freed allocations (recycle.h) */
    unsigned team;   /* threads of the spinning OpenMP team serving as workers (workers_team_share), or 0 */
    bool handled;    /* false: nothing was done (c->unstaged may say why); the driver copies it */
    CUresult result; /* when handled: what the program gets */
};

static void d2h_pipeline(void *arg)
{
    struct d2h_run *run = arg;
    struct copy *c = run->c;
    char *dst = run->dst;
    CUdeviceptr src = run->src;
    size_t bytes = run->bytes;
    CUstream stream = run->stream;
    fn_dtoh_async dma = run->dma;
    enum workers_dst dst_kind = run->dst_kind;
    bool recycle = run->recycle;
    unsigned team = run->team;
    size_t chunk = pool_chunk_bytes(), first = pinshim_policy.stage_d2h_first_bytes;
    struct d2h_slot ring[D2H_WINDOW];
    unsigned head = 0, count = 0, waited = 0; /* ring[head .. head+waited) have had their DMA waited for */
    size_t next_off = 0;
    CUresult status = CUDA_SUCCESS;
    while (next_off < bytes || count > 0) {
        /* enqueue as many DMAs as the window and the pool allow */
        while (status == CUDA_SUCCESS && next_off < bytes && count < D2H_WINDOW) {
            enum pool_miss why;
            struct pool_chunk *ch = next_chunk(count == 0, bytes, stream, false, &why);
            if (!ch) {
                if (next_off == 0)
                    c->unstaged = miss_reason(why);
                break;
            }
            size_t n = bytes - next_off < chunk ? bytes - next_off : chunk;
            if (next_off == 0 && bytes > chunk)
                n = d2h_first_piece(dst, first, chunk, dst_kind);
            pinshim_enter();
            CUresult r = dma(ch->ptr, src + next_off, n, stream);
            pinshim_leave();
            if (r != CUDA_SUCCESS) { /* the driver refused the copy: the program gets its error */
                pool_release_idle(ch);
                status = r;
                break;
            }
            r = pool_record(ch, stream); /* without an event it waits for the stream instead */
            if (r != CUDA_SUCCESS) {      /* that wait failed: a genuine stream error */
                pool_release_idle(ch);
                status = r;
                break;
            }
            struct d2h_slot *s = &ring[(head + count) % D2H_WINDOW];
            s->ch = ch, s->off = next_off, s->n = n, s->copying = false;
            count++;
            next_off += n;
        }
        if (count == 0) {
            if (status == CUDA_SUCCESS && next_off == 0)
                return; /* no chunk at all: nothing done yet, let the driver copy */
            if (status == CUDA_SUCCESS && next_off < bytes) {
                /* no chunk for the rest: the driver copies it on the same stream (into pageable
                 * memory that returns when complete) */
                pinshim_enter();
                status = dma((char *)dst + next_off, src + next_off, bytes - next_off, stream);
                pinshim_leave();
                next_off = bytes;
            }
            break;
        }
        /* start the copy-out of the next chunk once its DMA is done, keeping D2H_COPYING queued */
        if (waited < count) {
            struct d2h_slot *s = &ring[(head + waited) % D2H_WINDOW];
            s->waited = pool_wait(s->ch);
            if (s->waited == CUDA_SUCCESS && status == CUDA_SUCCESS) {
                if (recycle) /* this piece arrived: its blocks are written in full from now on */
                    recycle_fill((char *)dst + s->off, s->n);
                workers_start(&s->job, (char *)dst + s->off, s->ch->ptr, s->n, dst_kind, team);
                s->copying = true;
            } else if (status == CUDA_SUCCESS) {
                status = s->waited;
            }
            waited++;
            if (waited < D2H_COPYING && waited < count)
                continue;
        }
        /* the oldest chunk: its copy-out done, the chunk goes back */
        d2h_retire(&ring[head], stream);
        head = (head + 1) % D2H_WINDOW;
        count--;
        waited--;
    }
    run->handled = true;
    run->result = status;
}

bool stage_d2h(struct copy *c, void *dst, CUdeviceptr src, size_t bytes, CUstream stream, CUresult *result)
{
    fn_dtoh_async dma = (fn_dtoh_async)driver_real(ENTRY_dtoh_async);
    struct omp_probe probe;
    omp_team_probe_begin(&probe);
    if (!dma || !stage_safe(c, src, bytes, stream))
        return false;
    struct d2h_run run = {.c = c, .dst = dst, .src = src, .bytes = bytes, .stream = stream, .dma = dma};
    /* fresh destinations: fewer first-touch faults, each a huge page one thread zeroes */
    run.dst_kind = hugepage_advise_write(dst, bytes) ? WORKERS_DST_MAY_FAULT_HUGE : WORKERS_DST_MAY_FAULT;
    /* and, where freed allocations' pages are kept, those instead of new ones (recycle.h) */
    run.recycle = run.dst_kind == WORKERS_DST_MAY_FAULT_HUGE && recycle_wanted(dst, bytes);
    run.team = workers_team_share(omp_team_probe_end(&probe), run.dst_kind); /* as in stage_h2d */
    workers_with_team(run.team, d2h_pipeline, &run);
    return pipeline_outcome(c, run.handled, run.result, result);
}
