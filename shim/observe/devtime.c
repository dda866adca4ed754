/* devtime.c: event pairs around sampled copies (see devtime.h). The driver functions are found
 * through real_driver_symbol (never the shim's wrappers); the free list is a short mutex-protected
 * list touched only by sampled copies and by the writer. */
#define _GNU_SOURCE
#include "devtime.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/common.h"
#include "base/real.h"
#include "policy.h"

#define DEVTIME_MAX_PAIRS 1024

struct devtime {
    CUevent start, end;
    CUcontext ctx;
    struct devtime *next;
};

typedef CUresult (*fn_event_create)(CUevent *, unsigned int);
typedef CUresult (*fn_event_record)(CUevent, CUstream);
typedef CUresult (*fn_event_query)(CUevent);
typedef CUresult (*fn_event_destroy)(CUevent);
typedef CUresult (*fn_event_elapsed)(float *, CUevent, CUevent);
typedef CUresult (*fn_ctx_get)(CUcontext *);
typedef CUresult (*fn_ctx_push)(CUcontext);
typedef CUresult (*fn_ctx_pop)(CUcontext *);
typedef CUresult (*fn_is_capturing)(CUstream, CUstreamCaptureStatus *);

static struct {
    int state; /* 0 unresolved, 1 usable, -1 missing */
    fn_event_create create;
    fn_event_record record;
    fn_event_query query;
    fn_event_destroy destroy; /* optional */
    fn_event_elapsed elapsed;
    fn_ctx_get ctx_get;
    fn_ctx_push ctx_push;
    fn_ctx_pop ctx_pop;
    fn_is_capturing is_capturing;
} drv;

static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct devtime *free_pairs;
static unsigned pair_count;
static uint64_t sample_counter;
static bool allowed = true;

static bool resolve(void)
{
    int s = __atomic_load_n(&drv.state, __ATOMIC_ACQUIRE);
    if (s)
        return s > 0;
    drv.create = (fn_event_create)real_driver_symbol("cuEventCreate");
    drv.record = (fn_event_record)real_driver_symbol("cuEventRecord");
    drv.query = (fn_event_query)real_driver_symbol("cuEventQuery");
    drv.elapsed = (fn_event_elapsed)real_driver_symbol("cuEventElapsedTime_v2");
    if (!drv.elapsed)
        drv.elapsed = (fn_event_elapsed)real_driver_symbol("cuEventElapsedTime");
    drv.ctx_get = (fn_ctx_get)real_driver_symbol("cuCtxGetCurrent");
    drv.ctx_push = (fn_ctx_push)real_driver_symbol("cuCtxPushCurrent_v2");
    drv.ctx_pop = (fn_ctx_pop)real_driver_symbol("cuCtxPopCurrent_v2");
    drv.is_capturing = (fn_is_capturing)real_driver_symbol("cuStreamIsCapturing");
    drv.destroy = (fn_event_destroy)real_driver_symbol("cuEventDestroy_v2");
    bool ok = drv.create && drv.record && drv.query && drv.elapsed && drv.ctx_get;
    __atomic_store_n(&drv.state, ok ? 1 : -1, __ATOMIC_RELEASE);
    return ok;
}

/* A free pair of this context, or a new one; NULL at the cap or when creation fails. */
static struct devtime *take_pair(CUcontext ctx)
{
    pthread_mutex_lock(&free_lock);
    for (struct devtime **p = &free_pairs; *p; p = &(*p)->next)
        if ((*p)->ctx == ctx) {
            struct devtime *d = *p;
            *p = d->next;
            pthread_mutex_unlock(&free_lock);
            return d;
        }
    bool may_create = pair_count < DEVTIME_MAX_PAIRS;
    if (may_create)
        pair_count++;
    pthread_mutex_unlock(&free_lock);
    if (!may_create)
        return NULL;
    struct devtime *d = calloc(1, sizeof *d);
    if (d && drv.create(&d->start, CU_EVENT_DEFAULT) == CUDA_SUCCESS) {
        if (drv.create(&d->end, CU_EVENT_DEFAULT) == CUDA_SUCCESS) {
            d->ctx = ctx;
            return d;
        }
        /* the start event stays allocated: destroying it would need one more entry point */
    }
    free(d);
    pthread_mutex_lock(&free_lock);
    pair_count--;
    pthread_mutex_unlock(&free_lock);
    return NULL;
}

void devtime_release(struct devtime *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&free_lock);
    d->next = free_pairs;
    free_pairs = d;
    pthread_mutex_unlock(&free_lock);
}

struct devtime *devtime_begin(CUstream stream)
{
    if (!pinshim_policy.device_timing || !__atomic_load_n(&allowed, __ATOMIC_RELAXED))
        return NULL;
    uint64_t every = pinshim_policy.device_timing_every ? pinshim_policy.device_timing_every : 1;
    if (__atomic_fetch_add(&sample_counter, 1, __ATOMIC_RELAXED) % every != 0 || !resolve())
        return NULL;
    struct devtime *d = NULL;
    CUcontext ctx = NULL;
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    pinshim_enter();
    if (drv.ctx_get(&ctx) == CUDA_SUCCESS && ctx &&
        (!drv.is_capturing || (drv.is_capturing(stream, &capture) == CUDA_SUCCESS &&
                               capture == CU_STREAM_CAPTURE_STATUS_NONE))) {
        d = take_pair(ctx);
        if (d && drv.record(d->start, stream) != CUDA_SUCCESS) {
            devtime_release(d);
            d = NULL;
        }
    }
    pinshim_leave();
    return d;
}

struct devtime *devtime_end(struct devtime *d, CUstream stream, bool copy_ok)
{
    if (!d)
        return NULL;
    pinshim_enter();
    bool recorded = copy_ok && drv.record(d->end, stream) == CUDA_SUCCESS;
    pinshim_leave();
    if (!recorded) {
        devtime_release(d);
        return NULL;
    }
    return d;
}

int devtime_poll(struct devtime *d, uint64_t *ns)
{
    if (!__atomic_load_n(&allowed, __ATOMIC_RELAXED))
        return -1;
    pinshim_enter();
    bool pushed = drv.ctx_push && drv.ctx_pop && drv.ctx_push(d->ctx) == CUDA_SUCCESS;
    int done = -1;
    CUresult r = drv.query(d->end);
    if (r == CUDA_ERROR_NOT_READY) {
        done = 0;
    } else if (r == CUDA_SUCCESS) {
        float ms = 0;
        if (drv.elapsed(&ms, d->start, d->end) == CUDA_SUCCESS && ms >= 0) {
            *ns = (uint64_t)((double)ms * 1e6);
            done = 1;
        }
    }
    if (pushed) {
        CUcontext popped;
        drv.ctx_pop(&popped);
    }
    pinshim_leave();
    return done;
}

void devtime_fork_child(void)
{
    pthread_mutex_init(&free_lock, NULL);
    free_pairs = NULL;
    pair_count = 0;
    sample_counter = 0;
    allowed = false;
}

void devtime_forget_context(CUcontext ctx)
{
    pthread_mutex_lock(&free_lock);
    struct devtime *gone = NULL;
    for (struct devtime **p = &free_pairs; *p;) {
        struct devtime *d = *p;
        if (!ctx || d->ctx == ctx) {
            *p = d->next;
            d->next = gone;
            gone = d;
            pair_count--;
        } else
            p = &d->next;
    }
    pthread_mutex_unlock(&free_lock);
    while (gone) {
        struct devtime *d = gone;
        gone = d->next;
        if (drv.destroy) {
            pinshim_enter();
            drv.destroy(d->start);
            drv.destroy(d->end);
            pinshim_leave();
        }
        free(d);
    }
}
