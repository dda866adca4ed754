/* sync_entry.c: handlers of the synchronization points (stream/context/event synchronize, queries,
 * event records). They are counted and timed (the calls that cannot block, records and queries,
 * one call in PINSHIM_SAMPLE_EVERY; the blocking ones every call, or by sync_timing = adaptive:
 * base/clock.h), and a successful one releases the guard's ranges it covers (guard/guard.h); a
 * host function's launch lets the guard wrap it. The program sees the real result. */
#include "base/clock.h"
#include "driver_shapes.h"
#include "entry.h"
#include "guard/guard.h"
#include "observe/ctxdev.h"

/* Runs call, timed for `weight` (0: not timed; see base/clock.h); `blocking` feeds the duration of
 * a timed call back to the thread's choice of weights (pinshim_wait_timed). A polling call not
 * timed (15 in 16) adds nothing more, the prologue having counted it, so its path ends at the call
 * (an event record + query: 25 lines and 127 instructions where adding zeros took 28 and 155,
 * tests/bench/footprint.py --mode e). A blocking call adds on both paths, which then share one tail
 * (its timed path, 1 call in 4, given a tail of its own grew the footprint of a D2H + stream
 * synchronize by a line, --mode d). */
#define TIMED_SYNC(call, weight, blocking)                                                          \
    do {                                                                                            \
        uint64_t w_ = (weight), t0_ = pinshim_ticks_if(w_), ns_ = 0;                                \
        result = (call);                                                                            \
        if (w_) {                                                                                   \
            ns_ = pinshim_ticks_since(t0_);                                                         \
            if (blocking)                                                                           \
                pinshim_wait_timed(ns_);                                                            \
        }                                                                                           \
        if (blocking || w_)                                                                         \
            stats_add_sync(id, w_ != 0, ns_ * w_);                                                  \
    } while (0)

/* The weight of a blocking call: every call with sync_timing = all, adaptive otherwise. */
static inline uint64_t wait_weight(void)
{
    return pinshim_wait_weight(__atomic_load_n(&pinshim_gate.sync_adaptive, __ATOMIC_RELAXED));
}

/* One handler: counted and timed; on success, `released` tells the guard what the call covered.
 * BLOCKING_SYNC_HANDLER times by wait_weight(), POLLING_SYNC_HANDLER (calls that return at once)
 * one call in PINSHIM_SAMPLE_EVERY. */
#define SYNC_HANDLER(shape, weight, blocking, released)                                            \
    PINSHIM_LINE_START CUresult shape_##shape(enum driver_entry_id id, SHAPE_##shape##_P)           \
    {                                                                                               \
        ENTRY_PROLOGUE(shape, SHAPE_ARGS(shape));                                                   \
        CUresult result;                                                                            \
        TIMED_SYNC(real(SHAPE_ARGS(shape)), weight, blocking);                                      \
        if (result == CUDA_SUCCESS)                                                                 \
            released;                                                                               \
        return result;                                                                              \
    }
#define BLOCKING_SYNC_HANDLER(shape, released) SYNC_HANDLER(shape, wait_weight(), true, released)
#define POLLING_SYNC_HANDLER(shape, released) SYNC_HANDLER(shape, pinshim_sample_weight(), false, released)

BLOCKING_SYNC_HANDLER(stream_sync, guard_on_stream_done(id, stream))
POLLING_SYNC_HANDLER(stream_query, guard_on_stream_done(id, stream))

CUresult shape_ctx_sync(enum driver_entry_id id)
{
    fn_ctx_sync real = (fn_ctx_sync)driver_real(id);
    if (PINSHIM_UNLIKELY(!real))
        return entry_missing(id);
    if (!entry_observing())
        return real();
    stats_add_call(id);
    CUresult result;
    TIMED_SYNC(real(), wait_weight(), true);
    if (result == CUDA_SUCCESS)
        guard_on_ctx_done();
    return result;
}

/* The CUDA 13 form names its context (NULL: the current one); only a synchronize of the calling
 * thread's own context covers what guard_on_ctx_done releases. */
static bool is_current_context(CUcontext ctx) { return ctx == NULL || ctx == ctxdev_current_context(); }

BLOCKING_SYNC_HANDLER(ctx_sync_v2, if (is_current_context(ctx)) guard_on_ctx_done())
BLOCKING_SYNC_HANDLER(event_sync, guard_on_event_done(event))
POLLING_SYNC_HANDLER(event_query, guard_on_event_done(event))
POLLING_SYNC_HANDLER(event_record, guard_on_event_record(id, event, stream))
POLLING_SYNC_HANDLER(event_record_flags, guard_on_event_record(id, event, stream))

/* Counted, not timed (the launch returns at once); with something guarded the driver gets the
 * guard's wrapper of fn, which releases what fn may read (guard/guard.h). */
CUresult shape_launch_host_func(enum driver_entry_id id, SHAPE_launch_host_func_P)
{
    ENTRY_PROLOGUE(launch_host_func, SHAPE_ARGS(launch_host_func));
    struct guard_hostfn *wrapper = guard_hostfn_wrap(id, stream, fn, data);
    if (!wrapper)
        return real(stream, fn, data);
    CUresult result = real(stream, guard_hostfn_run, wrapper);
    if (result != CUDA_SUCCESS)
        guard_hostfn_discard(wrapper);
    return result;
}

/* The older form (cuStreamAddCallback), the same way; flags other than 0 reach the driver with the
 * program's own callback, as does everything during capture (which does not support it). */
CUresult shape_stream_add_callback(enum driver_entry_id id, SHAPE_stream_add_callback_P)
{
    ENTRY_PROLOGUE(stream_add_callback, SHAPE_ARGS(stream_add_callback));
    struct guard_hostfn *wrapper = flags == 0 ? guard_callback_wrap(id, stream, callback, data) : NULL;
    if (!wrapper)
        return real(stream, callback, data, flags);
    CUresult result = real(stream, guard_callback_run, wrapper, flags);
    if (result != CUDA_SUCCESS)
        guard_hostfn_discard(wrapper);
    return result;
}
