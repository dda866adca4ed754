/* sync_entry.c: handlers of the synchronization points (stream/context/event synchronize, queries,
 * event records). They are counted and timed, and a successful one releases the guard's ranges it
 * covers (guard/guard.h); the pool's chunk recycling may hook in here later. The program sees the real
 * result. */
#include "driver_shapes.h"
#include "entry.h"
#include "guard/guard.h"

#define TIMED_SYNC(call)                                                                            \
    do {                                                                                            \
        uint64_t t0_ = pinshim_now_ns();                                                            \
        result = (call);                                                                            \
        stats_add_sync(id, pinshim_now_ns() - t0_);                                                 \
    } while (0)

CUresult shape_stream_sync(enum driver_entry_id id, SHAPE_stream_sync_P)
{
    ENTRY_PROLOGUE(stream_sync, stream);
    CUresult result;
    TIMED_SYNC(real(stream));
    if (result == CUDA_SUCCESS)
        guard_on_stream_done(id, stream);
    return result;
}

CUresult shape_stream_query(enum driver_entry_id id, SHAPE_stream_query_P)
{
    ENTRY_PROLOGUE(stream_query, stream);
    CUresult result;
    TIMED_SYNC(real(stream));
    if (result == CUDA_SUCCESS)
        guard_on_stream_done(id, stream);
    return result;
}

CUresult shape_ctx_sync(enum driver_entry_id id)
{
    fn_ctx_sync real = (fn_ctx_sync)driver_real(id);
    if (PINSHIM_UNLIKELY(!real))
        return entry_missing(id);
    if (!entry_observing())
        return real();
    stats_add_call(id);
    CUresult result;
    TIMED_SYNC(real());
    if (result == CUDA_SUCCESS)
        guard_on_ctx_done();
    return result;
}

CUresult shape_event_sync(enum driver_entry_id id, SHAPE_event_sync_P)
{
    ENTRY_PROLOGUE(event_sync, event);
    CUresult result;
    TIMED_SYNC(real(event));
    if (result == CUDA_SUCCESS)
        guard_on_event_done(event);
    return result;
}

CUresult shape_event_query(enum driver_entry_id id, SHAPE_event_query_P)
{
    ENTRY_PROLOGUE(event_query, event);
    CUresult result;
    TIMED_SYNC(real(event));
    if (result == CUDA_SUCCESS)
        guard_on_event_done(event);
    return result;
}

CUresult shape_event_record(enum driver_entry_id id, SHAPE_event_record_P)
{
    ENTRY_PROLOGUE(event_record, event, stream);
    CUresult result;
    TIMED_SYNC(real(event, stream));
    if (result == CUDA_SUCCESS)
        guard_on_event_record(id, event, stream);
    return result;
}

CUresult shape_event_record_flags(enum driver_entry_id id, SHAPE_event_record_flags_P)
{
    ENTRY_PROLOGUE(event_record_flags, event, stream, flags);
    CUresult result;
    TIMED_SYNC(real(event, stream, flags));
    if (result == CUDA_SUCCESS)
        guard_on_event_record(id, event, stream);
    return result;
}
