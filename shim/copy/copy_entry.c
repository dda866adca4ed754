/* copy_entry.c: the handlers of every copy shape. Each turns its arguments into a struct copy,
 * calls its own real function with the arguments unchanged, and records the result. The handlers
 * that differ only in their arguments are generated from tables, one row per shape (as the
 * wrappers are from base/driver_table.h); the batch handlers are written out.
 * Contract: the program sees the real function's return value and side effects, nothing else. */
#include <stdlib.h>

#include "base/clock.h"
#include "base/common.h"
#include "base/driver.h"
#include "base/real.h"
#include "copy.h"
#include "copy_split.h"
#include "driver_shapes.h"
#include "entry.h"
#include "hostmem/memkind.h"
#include "hostmem/plain_pages.h"
#include "hostmem/regcache.h"
#include "observe/ctxdev.h"
#include "observe/log.h"
#include "observe/stats.h"
#include "stage/stage.h"

/* A 1D copy going to the driver as it is: no registration of the cache may make it fail. */
PINSHIM_HOT static void clear_host_edges(const struct copy *c)
{
    if (!c->reg_overlap)
        return;
    if (memkind_is_host(c->src_kind))
        regcache_clear_edges(c->src, c->src + c->bytes);
    if (memkind_is_host(c->dst_kind))
        regcache_clear_edges(c->dst, c->dst + c->bytes);
}

/* What a copy's host time counts for (base/clock.h): a copy with a log record of its own is timed
 * on every call (weight 1), and so is one that staging may take or the driver may make wait (a
 * pageable or synchronous copy at or above a staging threshold). The rest, small copies and async
 * copies whose host side is not pageable (they return once queued), are timed one call in
 * PINSHIM_SAMPLE_EVERY: the clock reads cost about 60 ns in a PyTorch process, 0.5 % of a 4 KB
 * pageable .to("cuda"). */
static inline __attribute__((always_inline)) uint64_t counted_time_weight(bool small, bool async,
                                                                           enum host_kind host_kind)
{
    if (small || (async && host_kind != KIND_PAGEABLE))
        return pinshim_sample_weight();
    return 1;
}

PINSHIM_HOT static uint64_t unlogged_time_weight(const struct copy *c)
{
    return counted_time_weight(copy_is_small(c->bytes), c->async, c->host_kind);
}

PINSHIM_HOT static uint64_t copy_time_weight(const struct copy *c)
{
    return log_records(c->bytes) ? 1 : unlogged_time_weight(c);
}

/* copy_host_path(), its usual answers first, in line: a small copy from the thread's last pinned
 * range, or from a page known plain, with nothing following copies. The rest (and every other
 * case, asked again from the start) out of line. With count_direct() below, also in line, a
 * counted copy runs one stretch of its handler's code rather than several functions', its tests
 * joined into few branches: in a framework's loop those lines are cold at every call, and its
 * branches forgotten. A pinned 4 KiB copy runs about 9.5 lines of the shim's code, 126
 * instructions and 3.4 taken transfers (into the handler, the driver's call, the return; more on
 * the one call in 16 that is timed), a small pageable one 11.4 lines, 150 and 5.3, where at 955b2f0
 * they took 17, 180 and 10 and 18, 213 and 9 (null driver, tests/bench/footprint.py --mode h|p,
 * 2026-12-07). */
static inline __attribute__((always_inline)) enum host_path host_path(uintptr_t host, size_t bytes, bool small,
                                                                      bool h2d, enum host_kind *kind)
{
    if (PINSHIM_LIKELY(small)) {
        uint64_t plain_gen = plain_pages_generation();
        bool followed = copies_followed(); /* read once: an atomic load read for one test stays for the other */
        enum host_kind k = memkind_last_range(host);
        if (PINSHIM_LIKELY(((k == KIND_PINNED) | (k == KIND_REGISTERED)) & !followed)) {
            *kind = k;
            return HOST_OWN_PINNED;
        }
        if (k == KIND_UNKNOWN && plain_pages_hold(host, plain_gen) && !followed && no_registrations()) {
            *kind = KIND_PAGEABLE;
            return HOST_SMALL_PAGEABLE;
        }
    }
    return copy_host_path(host, bytes, h2d, kind);
}

/* Counts a copy host_path() found HOST_OWN_PINNED or HOST_SMALL_PAGEABLE (k its kind), as
 * copy_record_counted() would have its description, in the stats' one cell for such copies
 * (observe/stats.h). In line too, and the same instructions for either path: the two share their
 * timing, real call and count. */
static inline __attribute__((always_inline)) void count_direct(enum copy_dir dir, enum host_kind k, bool async,
                                                               size_t bytes, CUresult result, uint64_t host_ns)
{
    if (PINSHIM_UNLIKELY(result != CUDA_SUCCESS))
        stats_add_failed_copy();
    else
        stats_add_counted(ctxdev_current(), dir, stats_counted_class(k, async), bytes, host_ns);
}

/* A copy the shim only counts (copy_only_counted): timed, run as it is, counted. */
#define COUNTED_COPY(c, call)                                                                       \
    do {                                                                                            \
        uint64_t w_ = unlogged_time_weight(&(c)), t0_ = pinshim_ticks_if(w_);                       \
        result = (call);                                                                            \
        copy_record_counted(&(c), result, pinshim_ticks_weighted(t0_, w_));                         \
    } while (0)

#define TIMED_COPY(c, call)                                                                         \
    do {                                                                                            \
        log_copy_begin(&(c)); /* device timing of sampled copies (observe/log.h) */                 \
        uint64_t w_ = copy_time_weight(&(c)), t0_ = pinshim_ticks_if(w_);                           \
        result = (call);                                                                            \
        regcache_after_copy(&(c), result); /* memory the cache pinned: complete an async copy */    \
        copy_record(&(c), result, pinshim_ticks_weighted(t0_, w_));                                 \
    } while (0)

/* Sends the copy directly when the registration cache has (just) pinned its host memory (cut at
 * the registration's edges when it lies only partly inside), except that an async H2D on a busy
 * stream is staged if staging wants it (no wait behind other work); otherwise stages it or runs
 * `pass`, which may first make the cache drop a registration the copy would run out of.
 * The shim's own ways (direct, staged) run in relaxed capture mode: the driver refuses a pinned
 * sync copy or a stream synchronize during another thread's global capture, where the program's
 * pageable copy was allowed (measured on 2 x H200). `pass` keeps the program's own mode.
 * Times (copy_time_weight) and records every way. */
#define TIMED_STAGED_COPY(c, stage_call, pass)                                                      \
    do {                                                                                            \
        log_copy_begin(&(c)); /* device timing of sampled copies (observe/log.h) */                 \
        uint64_t w_ = copy_time_weight(&(c)), t0_ = pinshim_ticks_if(w_);                           \
        CUstreamCaptureMode mode_;                                                                  \
        bool done_ = false;                                                                         \
        if (regcache_direct(&(c))) {                                                                \
            real_relaxed_begin(&mode_);                                                             \
            (c).instead_of_direct =                                                                 \
                (c).async && (c).dir == DIR_H2D && !regcache_stream_idle(&(c)) && stage_wanted(&(c));   \
            if (!((c).instead_of_direct && (stage_call))) {                                         \
                (c).action = ACTION_REGISTERED;                                                     \
                (c).unstaged = UNSTAGED_NONE;                                                       \
                result = regcache_direct_whole(&(c)) ? (pass) : copy_split_at_registration(&(c));   \
            }                                                                                       \
            real_relaxed_end(mode_);                                                                \
            done_ = true;                                                                           \
        } else if (stage_wanted(&(c))) {                                                            \
            real_relaxed_begin(&mode_);                                                             \
            done_ = (stage_call);                                                                   \
            real_relaxed_end(mode_);                                                                \
        }                                                                                           \
        if (!done_) {                                                                               \
            clear_host_edges(&(c));                                                                 \
            result = (pass);                                                                        \
        }                                                                                           \
        regcache_after_copy(&(c), result);                                                          \
        copy_record(&(c), result, pinshim_ticks_weighted(t0_, w_));                                 \
    } while (0)

/* Unified copies: stage whichever direction the pointers turned out to be. */
static bool stage_unified(struct copy *c, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream,
                          CUresult *result)
{
    if (c->dir == DIR_H2D)
        return stage_h2d(c, dst, (const void *)src, bytes, stream, result);
    return stage_d2h(c, (void *)dst, src, bytes, stream, result);
}

/* The 1D copy shapes, one row each: X(shape, dst address, its kind, src address, its kind,
 * stream, async, how staging takes it). A kind of KIND_UNKNOWN means the side is classified
 * (copy_describe); a stream of NULL means the default stream of the entry's flavour. */
#define COPY_1D_SHAPES(X)                                                                           \
    X(unified,       dst,            KIND_UNKNOWN, src,            KIND_UNKNOWN, NULL,   false, unified)\
    X(unified_async, dst,            KIND_UNKNOWN, src,            KIND_UNKNOWN, stream, true,  unified)\
    X(htod,          dst,            KIND_DEVICE,  (uintptr_t)src, KIND_UNKNOWN, NULL,   false, h2d)    \
    X(htod_async,    dst,            KIND_DEVICE,  (uintptr_t)src, KIND_UNKNOWN, stream, true,  h2d)    \
    X(dtoh,          (uintptr_t)dst, KIND_UNKNOWN, src,            KIND_DEVICE,  NULL,   false, d2h)    \
    X(dtoh_async,    (uintptr_t)dst, KIND_UNKNOWN, src,            KIND_DEVICE,  stream, true,  d2h)

/* Each shape's handler: a copy the shim only counts goes to the driver at once; the others (staged,
 * registered, logged, guarded) take shape_S_followed(), kept out of line so that the counted
 * copies' path, run on every small or pinned copy, stays on few cache lines. A shape whose other
 * side is device memory classifies its host side first: the program's own pinned memory, or a
 * pageable side staging declines for its size (a fresh tensor's copy counted for the registration
 * cache in the same lookup), with nothing following copies (copy_host_path) is counted without a
 * description, the fewest instructions the shim spends on a copy; otherwise the kind found goes
 * into the description. */
#define X(shape, dst_addr, dst_kind, src_addr, src_kind, stream_arg, async, staged_as)               \
    static __attribute__((noinline)) CUresult shape_##shape##_followed(struct copy *cp, fn_##shape real, \
                                                                        SHAPE_##shape##_P)          \
    {                                                                                               \
        CUresult result;                                                                            \
        TIMED_STAGED_COPY(*cp, stage_##staged_as(cp, dst, src, bytes, cp->stream, &result),         \
                          real(SHAPE_ARGS(shape)));                                                 \
        return result;                                                                              \
    }                                                                                               \
    PINSHIM_LINE_START CUresult shape_##shape(enum driver_entry_id id, SHAPE_##shape##_P)           \
    {                                                                                               \
        ENTRY_PROLOGUE(shape, SHAPE_ARGS(shape));                                                   \
        CUresult result;                                                                            \
        enum host_kind dst_kind_ = dst_kind, src_kind_ = src_kind;                                  \
        if (dst_kind == KIND_DEVICE || src_kind == KIND_DEVICE) { /* constant per shape */          \
            bool h2d_ = dst_kind == KIND_DEVICE;                                                    \
            uintptr_t host_ = h2d_ ? (uintptr_t)(src_addr) : (uintptr_t)(dst_addr);                 \
            enum host_kind k_;                                                                      \
            bool small_ = copy_is_small(bytes); /* one read of the gate's threshold */              \
            enum host_path path_ = host_path(host_, bytes, small_, h2d_, &k_);                      \
            if (PINSHIM_LIKELY(path_ != HOST_DESCRIBE)) {                                           \
                if (path_ == HOST_SMALL_PAGEABLE)                                                   \
                    stage_small_copy(); /* the first may start the pool */                          \
                uint64_t w_ = counted_time_weight(small_, async, k_), t0_ = pinshim_ticks_if(w_);   \
                result = real(SHAPE_ARGS(shape));                                                   \
                count_direct(h2d_ ? DIR_H2D : DIR_D2H, k_, async, bytes, result,                    \
                             pinshim_ticks_weighted(t0_, w_));                                      \
                return result;                                                                      \
            }                                                                                       \
            *(h2d_ ? &src_kind_ : &dst_kind_) = k_;                                                 \
        }                                                                                           \
        struct copy c;                                                                              \
        copy_describe(&c, id, dst_addr, dst_kind_, src_addr, src_kind_, bytes,                      \
                      driver_stream(id, stream_arg), async);                                        \
        if (PINSHIM_LIKELY(copy_only_counted(&c))) {                                                \
            COUNTED_COPY(c, real(SHAPE_ARGS(shape)));                                               \
            return result;                                                                          \
        }                                                                                           \
        return shape_##shape##_followed(&c, real, SHAPE_ARGS(shape));                               \
    }
COPY_1D_SHAPES(X)
#undef X

/* Device-to-device and peer copies: described, passed and timed, never staged.
 * X(shape, stream, async, describe) */
#define DEVICE_COPY_SHAPES(X)                                                                       \
    X(dtod,       NULL,   false, describe_device)                                                   \
    X(dtod_async, stream, true,  describe_device)                                                   \
    X(peer,       NULL,   false, describe_peer)                                                     \
    X(peer_async, stream, true,  describe_peer)

static void describe_device(struct copy *c, enum driver_entry_id id, CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                            CUstream stream, bool async)
{
    copy_describe(c, id, dst, KIND_DEVICE, src, KIND_DEVICE, bytes, driver_stream(id, stream), async);
}

static void describe_peer(struct copy *c, enum driver_entry_id id, CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                          CUstream stream, bool async)
{
    describe_device(c, id, dst, src, bytes, stream, async);
    c->dir = DIR_PEER;
}

#define X(shape, stream_arg, async, describe)                                                       \
    PINSHIM_HOT CUresult shape_##shape(enum driver_entry_id id, SHAPE_##shape##_P)                  \
    {                                                                                               \
        ENTRY_PROLOGUE(shape, SHAPE_ARGS(shape));                                                   \
        struct copy c;                                                                              \
        CUresult result;                                                                            \
        describe(&c, id, dst, src, bytes, stream_arg, async);                                       \
        TIMED_COPY(c, real(SHAPE_ARGS(shape)));                                                     \
        return result;                                                                              \
    }
DEVICE_COPY_SHAPES(X)
#undef X

/* One side of a 2D/3D copy: its first byte, and its kind when the memory type already says it. */
static void pitched_side(CUmemorytype type, const void *host, CUdeviceptr dev, size_t offset, uintptr_t *addr,
                         enum host_kind *kind)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST: *addr = (uintptr_t)host + offset; *kind = KIND_UNKNOWN; break;
    case CU_MEMORYTYPE_UNIFIED: *addr = (uintptr_t)dev + offset; *kind = KIND_UNKNOWN; break;
    default: *addr = (uintptr_t)dev + offset; *kind = KIND_DEVICE; break; /* device or array */
    }
}

static void describe_2d(struct copy *c, enum driver_entry_id id, const CUDA_MEMCPY2D *d, CUstream stream, bool async)
{
    uintptr_t src, dst;
    enum host_kind src_kind, dst_kind;
    pitched_side(d->srcMemoryType, d->srcHost, d->srcDevice, d->srcXInBytes + d->srcY * d->srcPitch, &src, &src_kind);
    pitched_side(d->dstMemoryType, d->dstHost, d->dstDevice, d->dstXInBytes + d->dstY * d->dstPitch, &dst, &dst_kind);
    copy_describe(c, id, dst, dst_kind, src, src_kind, d->WidthInBytes * d->Height, stream, async);
}

static void describe_3d(struct copy *c, enum driver_entry_id id, const CUDA_MEMCPY3D *d, CUstream stream, bool async)
{
    uintptr_t src, dst;
    enum host_kind src_kind, dst_kind;
    size_t src_off = d->srcXInBytes + d->srcY * d->srcPitch + d->srcZ * d->srcPitch * d->srcHeight;
    size_t dst_off = d->dstXInBytes + d->dstY * d->dstPitch + d->dstZ * d->dstPitch * d->dstHeight;
    pitched_side(d->srcMemoryType, d->srcHost, d->srcDevice, src_off, &src, &src_kind);
    pitched_side(d->dstMemoryType, d->dstHost, d->dstDevice, dst_off, &dst, &dst_kind);
    copy_describe(c, id, dst, dst_kind, src, src_kind, d->WidthInBytes * d->Height * d->Depth, stream, async);
}

/* Bytes from the first to the last byte a pitched side touches (0 for an empty copy). */
static size_t pitched_extent(size_t width, size_t height, size_t depth, size_t pitch, size_t slice_rows)
{
    if (!width || !height || !depth)
        return 0;
    return ((depth - 1) * slice_rows + (height - 1)) * pitch + width;
}

/* Host sides of a pitched copy going to the driver as it is (see clear_host_edges). */
static void clear_pitched_edges(CUmemorytype type, const void *host, CUdeviceptr unified, size_t first,
                                size_t extent)
{
    if (type == CU_MEMORYTYPE_HOST && host)
        regcache_clear_edges((uintptr_t)host + first, (uintptr_t)host + first + extent);
    else if (type == CU_MEMORYTYPE_UNIFIED && unified)
        regcache_clear_edges((uintptr_t)unified + first, (uintptr_t)unified + first + extent);
}

static void clear_edges_2d(const CUDA_MEMCPY2D *d)
{
    clear_pitched_edges(d->srcMemoryType, d->srcHost, d->srcDevice, d->srcXInBytes + d->srcY * d->srcPitch,
                        pitched_extent(d->WidthInBytes, d->Height, 1, d->srcPitch, 0));
    clear_pitched_edges(d->dstMemoryType, d->dstHost, d->dstDevice, d->dstXInBytes + d->dstY * d->dstPitch,
                        pitched_extent(d->WidthInBytes, d->Height, 1, d->dstPitch, 0));
}

static void clear_edges_3d(const CUDA_MEMCPY3D *d)
{
    clear_pitched_edges(d->srcMemoryType, d->srcHost, d->srcDevice,
                        d->srcXInBytes + d->srcY * d->srcPitch + d->srcZ * d->srcPitch * d->srcHeight,
                        pitched_extent(d->WidthInBytes, d->Height, d->Depth, d->srcPitch, d->srcHeight));
    clear_pitched_edges(d->dstMemoryType, d->dstHost, d->dstDevice,
                        d->dstXInBytes + d->dstY * d->dstPitch + d->dstZ * d->dstPitch * d->dstHeight,
                        pitched_extent(d->WidthInBytes, d->Height, d->Depth, d->dstPitch, d->dstHeight));
}

/* A NULL descriptor is the driver's to reject: pass it through and count a failed copy. */
#define PITCHED_COPY(describe, clear_edges, call, stream_arg, async_flag)                           \
    do {                                                                                            \
        if (!desc) {                                                                                \
            result = (call);                                                                        \
            if (result != CUDA_SUCCESS)                                                             \
                stats_add_failed_copy();                                                            \
            return result;                                                                          \
        }                                                                                           \
        struct copy c;                                                                              \
        describe(&c, id, desc, driver_stream(id, stream_arg), async_flag);                          \
        stage_mark_unsupported(&c);                                                                 \
        if (c.reg_overlap)                                                                          \
            clear_edges(desc);                                                                      \
        TIMED_COPY(c, call);                                                                        \
    } while (0)

/* The 2D and 3D shapes: X(shape, stream, async, dimensions). */
#define PITCHED_COPY_SHAPES(X)                                                                      \
    X(m2d,       NULL,   false, 2d)                                                                 \
    X(m2d_async, stream, true,  2d)                                                                 \
    X(m3d,       NULL,   false, 3d)                                                                 \
    X(m3d_async, stream, true,  3d)

#define X(shape, stream_arg, async, dims)                                                           \
    CUresult shape_##shape(enum driver_entry_id id, SHAPE_##shape##_P)                              \
    {                                                                                               \
        ENTRY_PROLOGUE(shape, SHAPE_ARGS(shape));                                                   \
        CUresult result;                                                                            \
        PITCHED_COPY(describe_##dims, clear_edges_##dims, real(SHAPE_ARGS(shape)), stream_arg,      \
                     async);                                                                        \
        return result;                                                                              \
    }
PITCHED_COPY_SHAPES(X)
#undef X

/* A batch is `count` copies: each is classified and counted on its own, the call's host time
 * shared among them by bytes. Arrays are read only after the driver accepted them. */
static void record_batch(enum driver_entry_id id, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                         CUstream stream, CUresult result, uint64_t host_ns)
{
    if (result != CUDA_SUCCESS) {
        for (size_t i = 0; i < count; i++)
            stats_add_failed_copy();
        return;
    }
    size_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += sizes[i];
    for (size_t i = 0; i < count; i++) {
        struct copy c;
        copy_describe(&c, id, dsts[i], KIND_UNKNOWN, srcs[i], KIND_UNKNOWN, sizes[i], driver_stream(id, stream), true);
        stage_mark_unsupported(&c);
        regcache_after_copy(&c, result); /* memory the cache pinned: the batch completes before return */
        uint64_t share = total ? (uint64_t)((double)host_ns * (double)sizes[i] / (double)total) : host_ns / count;
        copy_record(&c, result, share);
    }
}

/* Every element of a batch goes to the driver as it is (see clear_host_edges). Arrays the driver
 * would reject (NULL) are left to it. */
static void clear_batch_edges(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count)
{
    if (!dsts || !srcs || !sizes)
        return;
    for (size_t i = 0; i < count; i++) {
        regcache_clear_edges(srcs[i], srcs[i] + sizes[i]);
        regcache_clear_edges(dsts[i], dsts[i] + sizes[i]);
    }
}

CUresult shape_batch_v1(enum driver_entry_id id, SHAPE_batch_v1_P)
{
    ENTRY_PROLOGUE(batch_v1, dsts, srcs, sizes, count, attrs, attr_idxs, num_attrs, fail_idx, stream);
    clear_batch_edges(dsts, srcs, sizes, count);
    uint64_t t0 = pinshim_ticks();
    CUresult result = real(dsts, srcs, sizes, count, attrs, attr_idxs, num_attrs, fail_idx, stream);
    record_batch(id, dsts, srcs, sizes, count, stream, result, pinshim_ticks_since(t0));
    return result;
}

CUresult shape_batch_v2(enum driver_entry_id id, SHAPE_batch_v2_P)
{
    ENTRY_PROLOGUE(batch_v2, dsts, srcs, sizes, count, attrs, attr_idxs, num_attrs, stream);
    clear_batch_edges(dsts, srcs, sizes, count);
    uint64_t t0 = pinshim_ticks();
    CUresult result = real(dsts, srcs, sizes, count, attrs, attr_idxs, num_attrs, stream);
    record_batch(id, dsts, srcs, sizes, count, stream, result, pinshim_ticks_since(t0));
    return result;
}
