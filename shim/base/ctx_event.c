/* ctx_event.c: the holder's event in the current context (see ctx_event.h). */
#include "ctx_event.h"

#include <stddef.h>

#include "real.h"

static void *ctx_get_current_fn, *event_create_fn, *event_destroy_fn;

CUresult ctx_event_destroy(struct ctx_event *e)
{
    CUresult (*destroy)(CUevent) =
        (CUresult(*)(CUevent))real_driver_symbol_cached(&event_destroy_fn, "cuEventDestroy_v2");
    CUresult r = CUDA_SUCCESS;
    if (e->event)
        r = destroy ? destroy(e->event) : CUDA_ERROR_NOT_FOUND;
    e->event = NULL;
    e->ctx = NULL;
    return r;
}

CUresult ctx_event_here(struct ctx_event *e, bool *made)
{
    CUresult (*get_current)(CUcontext *) =
        (CUresult(*)(CUcontext *))real_driver_symbol_cached(&ctx_get_current_fn, "cuCtxGetCurrent");
    CUresult (*create)(CUevent *, unsigned int) =
        (CUresult(*)(CUevent *, unsigned int))real_driver_symbol_cached(&event_create_fn, "cuEventCreate");
    *made = false;
    if (!get_current || !create)
        return CUDA_ERROR_NOT_FOUND;
    CUcontext ctx = NULL;
    CUresult r = get_current(&ctx);
    if (r != CUDA_SUCCESS || (e->event && e->ctx == ctx))
        return r;
    ctx_event_destroy(e);
    r = create(&e->event, CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) {
        e->event = NULL;
        return r;
    }
    e->ctx = ctx;
    *made = true;
    return CUDA_SUCCESS;
}
