/* ctx_event.h: an event kept for reuse by a holder that may be used in several contexts (a pool
 * chunk, a thread), made in whichever context is current when it is wanted. An event belongs to
 * the context it was created in, so the holder's is remade when the current context changed.
 * Contract: the caller raised the reentrancy depth (pinshim_enter), serializes the uses of one
 * holder, and calls none of it in a forked child. */
#ifndef PINSHIM_CTX_EVENT_H
#define PINSHIM_CTX_EVENT_H

#include <cuda.h>
#include <stdbool.h>

struct ctx_event {
    CUevent event; /* NULL until first needed */
    CUcontext ctx; /* the context it was made in */
};

/* Makes e->event an event of the current context (timing disabled): kept when it is one already,
 * else created (the old one destroyed). CUDA_SUCCESS with *made = whether it was created now; else
 * the driver's error (CUDA_ERROR_NOT_FOUND where the driver lacks a function) and e->event NULL. */
CUresult ctx_event_here(struct ctx_event *e, bool *made);

/* Destroys e's event, if any: the driver's answer (an error: its context is gone, and it with it). */
CUresult ctx_event_destroy(struct ctx_event *e);

#endif
