/* earlier_work.c: the mark of a stream's earlier work (see earlier_work.h): cuStreamQuery first,
 * so that a stream with nothing queued costs no event; otherwise an event of the thread's own,
 * recorded on the stream and synchronized once the copy's DMAs are queued. */
#include "earlier_work.h"

#include <pthread.h>
#include <unistd.h>

#include "base/common.h"
#include "base/ctx_event.h"
#include "base/real.h"

static struct {
    CUresult (*stream_query)(CUstream);
    CUresult (*event_destroy)(CUevent);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*event_sync)(CUevent);
} fns;
static pthread_once_t resolved = PTHREAD_ONCE_INIT;
static pthread_key_t thread_event_key; /* destroys a thread's event when the thread ends */

static __thread struct ctx_event thread_mark;

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
    fns.event_destroy = (__typeof__(fns.event_destroy))real_driver_symbol("cuEventDestroy_v2");
    fns.event_record = (__typeof__(fns.event_record))real_driver_symbol("cuEventRecord");
    fns.event_sync = (__typeof__(fns.event_sync))real_driver_symbol("cuEventSynchronize");
    if (pthread_key_create(&thread_event_key, destroy_event) != 0)
        fns.event_record = NULL; /* no way to free a thread's event: callers synchronize instead */
}

/* This thread's event in the current context, created on first need (and then handed to the
 * thread-exit destructor). Depth raised. */
static CUresult thread_event_here(void)
{
    bool made;
    CUresult r = ctx_event_here(&thread_mark, &made);
    if (made || !thread_mark.event) /* a new event, or the old one destroyed and none made */
        pthread_setspecific(thread_event_key, thread_mark.event);
    return r;
}

CUresult earlier_work_mark(CUstream stream, bool *marked)
{
    *marked = false;
    pthread_once(&resolved, resolve);
    if (!fns.stream_query || !fns.event_destroy || !fns.event_record || !fns.event_sync)
        return CUDA_ERROR_NOT_FOUND;
    pinshim_enter();
    CUresult r = fns.stream_query(stream);
    if (r == CUDA_ERROR_NOT_READY) {
        r = thread_event_here();
        if (r == CUDA_SUCCESS)
            r = fns.event_record(thread_mark.event, stream);
        *marked = r == CUDA_SUCCESS;
    }
    pinshim_leave();
    return r;
}

CUresult earlier_work_wait(void)
{
    pinshim_enter();
    CUresult r = fns.event_sync(thread_mark.event);
    pinshim_leave();
    return r;
}
