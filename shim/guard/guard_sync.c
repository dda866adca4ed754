/* guard_sync.c: releasing guarded ranges at host synchronizations (see guard.h): a successful
 * stream synchronize or query, a context synchronize, an event synchronize or successful query of
 * an event recorded while something was guarded, a synchronous copy (guard.c) and the start of a
 * host function launched behind the copies each release the slots they cover. The shim errs
 * towards releasing: a missed race is better than a false report. */
#define _GNU_SOURCE
#include "guard_internal.h"

#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/common.h"
#include "base/driver.h"
#include "base/real.h"

#define GUARD_EVENTS 1024 /* recorded events remembered (open addressing, power of 2) */

static __thread int32_t tls_tid __attribute__((tls_model("initial-exec")));

int32_t guard_tid(void)
{
    if (!tls_tid)
        tls_tid = (int32_t)syscall(SYS_gettid);
    return tls_tid;
}

/* Does a completed host synchronization of `stream` (seen from thread tid, context ctx) cover s?
 * The legacy default stream's work orders after all earlier work of the context's blocking
 * streams, so its synchronization covers their copies too (the shim errs towards releasing: a
 * missed race is better than a false report). */
static bool covers(const struct guard_slot *s, CUstream stream, int32_t tid, CUcontext ctx)
{
    if (s->stream == stream)
        return stream != CU_STREAM_PER_THREAD || s->tid == tid;
    return stream == CU_STREAM_LEGACY && s->blocking && (!ctx || !s->ctx || s->ctx == ctx);
}

CUcontext guard_current_ctx(void)
{
    CUcontext ctx = NULL;
    if (guard_drv.ready && guard_drv.ctx_current) {
        pinshim_enter();
        guard_drv.ctx_current(&ctx);
        pinshim_leave();
    }
    return ctx;
}

void guard_release_covered(CUstream stream, uint64_t order_max, int32_t tid, CUcontext ctx)
{
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        struct guard_slot *s = &guard_slots[i];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_ACTIVE || s->order > order_max ||
            !covers(s, stream, tid, ctx) || !guard_take(s))
            continue;
        if (s->order > order_max || !covers(s, stream, tid, ctx)) { /* reused meanwhile */
            __atomic_store_n(&s->state, SLOT_ACTIVE, __ATOMIC_RELEASE);
            continue;
        }
        guard_unprotect_and_free(s);
        guard_count(&guard_n.released_sync, 1);
    }
}

PINSHIM_HOT void guard_on_stream_done(enum driver_entry_id id, CUstream stream)
{
    if (!guard_any_live())
        return;
    stream = driver_stream(id, stream);
    guard_release_covered(stream, UINT64_MAX, guard_tid(),
                          stream == CU_STREAM_LEGACY ? guard_current_ctx() : NULL);
}

void guard_on_ctx_done(void)
{
    if (!guard_any_live())
        return;
    CUcontext ctx = guard_current_ctx();
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        struct guard_slot *s = &guard_slots[i];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_ACTIVE || (ctx && s->ctx && s->ctx != ctx) ||
            !guard_take(s))
            continue;
        guard_unprotect_and_free(s);
        guard_count(&guard_n.released_sync, 1);
    }
}

/* What a stream-ordered point enqueued now (an event record, a host function's launch) covers
 * once it is reached: the slots of its stream guarded before it. */
struct guard_cover {
    CUstream stream;
    int32_t tid;
    CUcontext ctx;
    uint64_t order; /* covers the slots with order <= this */
};

/* What a wait on `stream` (already resolved: driver_stream) would cover, now. */
static struct guard_cover cover_of(CUstream stream)
{
    CUcontext ctx = stream == CU_STREAM_LEGACY ? guard_current_ctx() : NULL;
    return (struct guard_cover){stream, guard_tid(), ctx, __atomic_load_n(&guard_order_counter, __ATOMIC_ACQUIRE)};
}

static struct guard_cover cover_now(enum driver_entry_id id, CUstream stream)
{
    return cover_of(driver_stream(id, stream));
}

static void release_cover(const struct guard_cover *c)
{
    guard_release_covered(c->stream, c->order, c->tid, c->ctx);
}

/* --- events: what each covers, recorded while something is guarded --- */

struct guard_event {
    CUevent ev;
    struct guard_cover cover;
};
static struct guard_event events[GUARD_EVENTS];
static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;
static bool events_overflow;

static size_t event_home(CUevent e)
{
    return (size_t)(((uintptr_t)e * 0x9E3779B97F4A7C15ull) >> 32) & (GUARD_EVENTS - 1);
}

PINSHIM_HOT void guard_on_event_record(enum driver_entry_id id, CUevent event, CUstream stream)
{
    if (!guard_any_live() || !event)
        return;
    struct guard_cover cover = cover_now(id, stream);
    pthread_mutex_lock(&events_lock);
    size_t h = event_home(event), free_at = GUARD_EVENTS;
    for (size_t k = 0; k < GUARD_EVENTS; k++) {
        size_t j = (h + k) & (GUARD_EVENTS - 1);
        if (events[j].ev == event) {
            free_at = j;
            break;
        }
        if (!events[j].ev && free_at == GUARD_EVENTS)
            free_at = j;
        if (!events[j].ev)
            break;
    }
    if (free_at == GUARD_EVENTS)
        events_overflow = true;
    else
        events[free_at] = (struct guard_event){event, cover};
    pthread_mutex_unlock(&events_lock);
}

PINSHIM_HOT void guard_on_event_done(CUevent event)
{
    if (!guard_any_live())
        return;
    bool found = false, overflow;
    struct guard_cover cover;
    pthread_mutex_lock(&events_lock);
    size_t h = event_home(event);
    for (size_t k = 0; k < GUARD_EVENTS && events[(h + k) & (GUARD_EVENTS - 1)].ev; k++) {
        size_t j = (h + k) & (GUARD_EVENTS - 1);
        if (events[j].ev == event) {
            cover = events[j].cover;
            found = true;
            break;
        }
    }
    overflow = events_overflow;
    pthread_mutex_unlock(&events_lock);
    if (found)
        release_cover(&cover);
    else if (overflow) /* the event may cover anything: release rather than report falsely */
        guard_on_ctx_done();
}

/* --- host functions: what the stream's work before their launch covers --- */

struct guard_hostfn {
    CUhostFn fn;               /* cuLaunchHostFunc's, or NULL ... */
    CUstreamCallback callback; /* ... for cuStreamAddCallback's */
    void *data;
    struct guard_cover cover; /* as an event recorded at the launch */
};

/* A wrapper for a host function or callback (fn_given: whether the program gave one), or NULL. */
static struct guard_hostfn *wrap(enum driver_entry_id id, CUstream stream, bool fn_given)
{
    /* a NULL fn must reach the driver as it is: its error is the program's */
    if (!guard_any_live() || !fn_given)
        return NULL;
    CUstream resolved = driver_stream(id, stream);
    if (real_stream_capturing(resolved))
        return NULL;
    struct guard_hostfn *h = malloc(sizeof *h);
    if (h)
        *h = (struct guard_hostfn){.cover = cover_of(resolved)};
    return h;
}

struct guard_hostfn *guard_hostfn_wrap(enum driver_entry_id id, CUstream stream, CUhostFn fn, void *data)
{
    struct guard_hostfn *h = wrap(id, stream, fn != NULL);
    if (h)
        h->fn = fn, h->data = data;
    return h;
}

struct guard_hostfn *guard_callback_wrap(enum driver_entry_id id, CUstream stream, CUstreamCallback callback,
                                         void *data)
{
    struct guard_hostfn *h = wrap(id, stream, callback != NULL);
    if (h)
        h->callback = callback, h->data = data;
    return h;
}

/* On the driver's thread: no CUDA call here (host functions may make none). */
void CUDA_CB guard_hostfn_run(void *wrapper)
{
    struct guard_hostfn h = *(struct guard_hostfn *)wrapper;
    free(wrapper);
    if (guard_any_live())
        release_cover(&h.cover);
    h.fn(h.data);
}

void CUDA_CB guard_callback_run(CUstream stream, CUresult status, void *wrapper)
{
    struct guard_hostfn h = *(struct guard_hostfn *)wrapper;
    free(wrapper);
    if (status == CUDA_SUCCESS && guard_any_live())
        release_cover(&h.cover);
    h.callback(stream, status, h.data);
}

void guard_hostfn_discard(struct guard_hostfn *wrapper) { free(wrapper); }

void guard_sync_fork_child(void) { pthread_mutex_init(&events_lock, NULL); }
