/* earlier_work.c: the mark of a stream's earlier work (see earlier_work.h): cuStreamQuery first,
 * so that a stream with nothing queued costs no event; otherwise an event of the thread's own,
 * recorded on the stream and synchronized once the copy's DMAs are queued. */
#include "earlier_work.h"

#include <pthread.h>
#include <unistd.h>

#include "base/common.h"
#include "base/real.h"

static struct {
    CUresult (*stream_query)(CUstream);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*event_create)(CUevent *, unsigned int);
    CUresult (*event_destroy)(CUevent);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*event_sync)(CUevent);
} fns;
static pthread_once_t resolved = PTHREAD_ONCE_INIT;
static pthread_key_t thread_event_key; /* destroys a thread's event when the thread ends */

static __thread CUevent thread_event;
static __thread CUcontext thread_event_ctx;

static pid_t owner; /* the process whose threads made the events: a forked child calls no CUDA */

static void destroy_event(void *event)
{
    if (getpid() != owner)
        return;
    pinshim_enter();
    fns.event_destroy((CUevent)event); /* an error: its context is gone, and the event with it */
    pinshim_leave();
}

static void resolve(void)
{
    owner = getpid();
    fns.stream_query = (__typeof__(fns.stream_query))real_driver_symbol("cuStreamQuery");
    fns.ctx_get_current = (__typeof__(fns.ctx_get_current))real_driver_symbol("cuCtxGetCurrent");
    fns.event_create = (__typeof__(fns.event_create))real_driver_symbol("cuEventCreate");
    fns.event_destroy = (__typeof__(fns.event_destroy))real_driver_symbol("cuEventDestroy_v2");
    fns.event_record = (__typeof__(fns.event_record))real_driver_symbol("cuEventRecord");
    fns.event_sync = (__typeof__(fns.event_sync))real_driver_symbol("cuEventSynchronize");
    if (pthread_key_create(&thread_event_key, destroy_event) != 0)
        fns.event_create = NULL; /* no way to free a thread's event: callers synchronize instead */
}

/* This thread's event in the current context, created on first need. Depth raised. */
static CUresult thread_event_here(void)
{
    CUcontext ctx = NULL;
    CUresult r = fns.ctx_get_current(&ctx);
    if (r != CUDA_SUCCESS || (thread_event && thread_event_ctx == ctx))
        return r;
    if (thread_event)
        fns.event_destroy(thread_event);
    thread_event = NULL;
    r = fns.event_create(&thread_event, CU_EVENT_DISABLE_TIMING);
    thread_event_ctx = r == CUDA_SUCCESS ? ctx : NULL;
    if (r == CUDA_SUCCESS)
        pthread_setspecific(thread_event_key, thread_event);
    else
        thread_event = NULL;
    return r;
}

CUresult earlier_work_mark(CUstream stream, bool *marked)
{
    *marked = false;
    pthread_once(&resolved, resolve);
    if (!fns.stream_query || !fns.ctx_get_current || !fns.event_create || !fns.event_destroy ||
        !fns.event_record || !fns.event_sync)
        return CUDA_ERROR_NOT_FOUND;
    pinshim_enter();
    CUresult r = fns.stream_query(stream);
    if (r == CUDA_ERROR_NOT_READY) {
        r = thread_event_here();
        if (r == CUDA_SUCCESS)
            r = fns.event_record(thread_event, stream);
        *marked = r == CUDA_SUCCESS;
    }
    pinshim_leave();
    return r;
}

CUresult earlier_work_wait(void)
{
    pinshim_enter();
    CUresult r = fns.event_sync(thread_event);
    pinshim_leave();
    return r;
}
