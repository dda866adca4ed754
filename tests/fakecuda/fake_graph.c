/* fake_graph.c: stream capture and graphs of the fake CUDA driver. While a stream captures, its
 * copies, memsets, host functions and write-values are recorded as graph nodes instead of run;
 * launching an instantiated graph enqueues the nodes again in order, reading host sources at
 * replay time as a real graph does. Event records and waits during capture are no-ops. The rules
 * of capture: thread capture modes, prohibited calls, the legacy stream's implicit dependency on
 * capturing blocking streams, and invalidation. */
#include "fake_internal.h"

#include <stdlib.h>
#include <string.h>

void fk_graph_append(fk_graph *g, fk_op *op)
{
  if (op->kind == FK_OP_COPY && op->u.copy.staging) {
    /* A graph copies from the program's buffer when it runs, never from a snapshot. */
    fk_pages_free(op->u.copy.staging, op->u.copy.staging_len);
    op->u.copy.staging = NULL;
  }
  if (g->n == g->cap) {
    size_t ncap = g->cap ? g->cap * 2 : 16;
    fk_op *nv = realloc(g->nodes, ncap * sizeof *nv);
    if (!nv) {
      fk_warn("out of memory: a captured operation is lost");
      free(op);
      return;
    }
    g->nodes = nv;
    g->cap = ncap;
  }
  g->nodes[g->n] = *op;
  g->nodes[g->n].next = NULL;
  g->n++;
  free(op);
}

void fk_graph_free(fk_graph *g)
{
  if (g) {
    free(g->nodes);
    free(g);
  }
}

static fk_graph *graph_clone(const fk_graph *g)
{
  fk_graph *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  if (g->n) {
    c->nodes = malloc(g->n * sizeof *c->nodes);
    if (!c->nodes) {
      free(c);
      return NULL;
    }
    memcpy(c->nodes, g->nodes, g->n * sizeof *c->nodes);
  }
  c->n = c->cap = g->n;
  return c;
}

/* ---- the rules of capture --------------------------------------------------------------------- */

static __thread int tls_capture_mode; /* CU_STREAM_CAPTURE_MODE_GLOBAL (0) until exchanged */

void fk_capture_invalidate(fk_stream *s)
{
  if (s->capture)
    s->capture_invalid = 1;
}

/* CUDA's rules for the calling thread's mode: GLOBAL is prohibited from unsafe calls while it has
 * a capture of its own not begun RELAXED, or another thread has a GLOBAL capture; THREAD_LOCAL only
 * by its own; RELAXED never. A prohibited call invalidates the captures that prohibit it. */
CUresult fk_capture_unsafe_call(void)
{
  if (tls_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_SUCCESS;
  pthread_t me = pthread_self();
  int prohibited = 0;
  pthread_mutex_lock(&fk_lock);
  for (fk_ctx *c = fk_all_ctxs; c; c = c->all_next)
    for (fk_stream *s = c->streams; s; s = s->ctx_next) {
      if (!s->capture)
        continue;
      int mine = pthread_equal(s->capture_thread, me);
      if ((mine && s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
          (!mine && tls_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
           s->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
        fk_capture_invalidate(s);
        prohibited = 1;
      }
    }
  pthread_mutex_unlock(&fk_lock);
  return prohibited ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult fk_capture_legacy_use(fk_stream *s, int invalidate)
{
  if (s->kind != FK_S_LEGACY)
    return CUDA_SUCCESS;
  CUresult r = CUDA_SUCCESS;
  for (fk_stream *t = s->ctx->streams; t; t = t->ctx_next)
    if (t->capture && !(t->flags & CU_STREAM_NON_BLOCKING)) {
      r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      if (invalidate)
        fk_capture_invalidate(t);
    }
  return r;
}

FK_ENTRY(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode *mode))
{
  FK_COUNT(cuThreadExchangeStreamCaptureMode);
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (!mode || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
    return CUDA_ERROR_INVALID_VALUE;
  int old = tls_capture_mode;
  tls_capture_mode = (int)*mode;
  *mode = (CUstreamCaptureMode)old;
  return CUDA_SUCCESS;
}

/* ---- capture ------------------------------------------------------------------------------------ */

static CUresult begin_capture(CUstream h, CUstreamCaptureMode mode, int pt)
{
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fk_lock);
  fk_stream *s = NULL;
  r = fk_stream_resolve(h, pt, &s);
  if (r == CUDA_SUCCESS) {
    if (s->kind == FK_S_LEGACY)
      r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    else if (s->capture)
      r = CUDA_ERROR_ILLEGAL_STATE;
    else if (!(s->capture = calloc(1, sizeof *s->capture)))
      r = CUDA_ERROR_OUT_OF_MEMORY;
    else {
      s->capture_mode = (int)mode;
      s->capture_invalid = 0;
      s->capture_thread = pthread_self();
    }
  }
  pthread_mutex_unlock(&fk_lock);
  return r;
}

FK_ENTRY_PT(cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz,
            (CUstream hStream, CUstreamCaptureMode mode),
            begin_capture(hStream, mode, pt))

static CUresult end_capture(CUstream h, CUgraph *pg, int pt)
{
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (!pg)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fk_lock);
  fk_stream *s = NULL;
  r = fk_stream_resolve(h, pt, &s);
  if (r == CUDA_SUCCESS && !s->capture)
    r = CUDA_ERROR_ILLEGAL_STATE;
  else if (r == CUDA_SUCCESS && s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
           !pthread_equal(s->capture_thread, pthread_self()))
    r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  if (r == CUDA_SUCCESS) {
    fk_graph *g = s->capture;
    s->capture = NULL;
    if (s->capture_invalid) { /* capture ends, without a graph */
      fk_graph_free(g);
      *pg = NULL;
      r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else {
      fk_handle_add(g, FK_H_GRAPH);
      *pg = (CUgraph)g;
    }
  }
  pthread_mutex_unlock(&fk_lock);
  return r;
}

FK_ENTRY_PT(cuStreamEndCapture, cuStreamEndCapture_ptsz,
            (CUstream hStream, CUgraph *phGraph),
            end_capture(hStream, phGraph, pt))

static CUresult is_capturing(CUstream h, CUstreamCaptureStatus *st, int pt)
{
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (!st)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fk_lock);
  fk_stream *s = NULL;
  r = fk_stream_resolve(h, pt, &s);
  if (r == CUDA_SUCCESS)
    r = fk_capture_legacy_use(s, 0); /* documented: the blocking capture is not invalidated */
  if (r == CUDA_SUCCESS)
    *st = !s->capture ? CU_STREAM_CAPTURE_STATUS_NONE
          : s->capture_invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  pthread_mutex_unlock(&fk_lock);
  return r;
}

FK_ENTRY_PT(cuStreamIsCapturing, cuStreamIsCapturing_ptsz,
            (CUstream hStream, CUstreamCaptureStatus *captureStatus),
            is_capturing(hStream, captureStatus, pt))

FK_ENTRY(cuGraphInstantiateWithFlags, (CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags))
{
  FK_COUNT(cuGraphInstantiateWithFlags);
  CUresult r = fk_check_init();
  if (r)
    return r;
  (void)flags;
  if (!phGraphExec)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fk_lock);
  fk_graph *e = NULL;
  if (!fk_handle_is(hGraph, FK_H_GRAPH))
    r = CUDA_ERROR_INVALID_VALUE;
  else if (!(e = graph_clone((fk_graph *)hGraph)))
    r = CUDA_ERROR_OUT_OF_MEMORY;
  else
    fk_handle_add(e, FK_H_GEXEC);
  pthread_mutex_unlock(&fk_lock);
  if (r == CUDA_SUCCESS)
    *phGraphExec = (CUgraphExec)e;
  return r;
}

static CUresult graph_launch(CUgraphExec h, CUstream hs, int pt)
{
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  pthread_mutex_lock(&fk_lock);
  fk_stream *s = NULL;
  if (!fk_handle_is(h, FK_H_GEXEC))
    r = CUDA_ERROR_INVALID_HANDLE;
  else
    r = fk_stream_resolve(hs, pt, &s);
  if (r == CUDA_SUCCESS)
    r = fk_capture_legacy_use(s, 1);
  if (r == CUDA_SUCCESS && s->capture && s->capture_invalid)
    r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  fk_graph *g = (fk_graph *)h;
  for (size_t i = 0; r == CUDA_SUCCESS && i < g->n; i++) {
    fk_op *op = malloc(sizeof *op);
    if (!op) {
      r = CUDA_ERROR_OUT_OF_MEMORY;
      break;
    }
    *op = g->nodes[i];
    op->next = NULL;
    if (s->capture) {
      fk_graph_append(s->capture, op);
    } else if ((r = fk_enqueue_locked(s, op)) != CUDA_SUCCESS) {
      free(op);
    }
  }
  pthread_mutex_unlock(&fk_lock);
  return r;
}

FK_ENTRY_PT(cuGraphLaunch, cuGraphLaunch_ptsz,
            (CUgraphExec hGraphExec, CUstream hStream),
            graph_launch(hGraphExec, hStream, pt))

static CUresult graph_destroy(void *h, int type)
{
  CUresult r = fk_check_init();
  if (r)
    return r;
  pthread_mutex_lock(&fk_lock);
  if (fk_handle_is(h, type)) {
    fk_handle_del(h);
    fk_graph_free((fk_graph *)h);
  } else {
    r = CUDA_ERROR_INVALID_VALUE;
  }
  pthread_mutex_unlock(&fk_lock);
  return r;
}

FK_ENTRY(cuGraphDestroy, (CUgraph hGraph))
{
  FK_COUNT(cuGraphDestroy);
  return graph_destroy(hGraph, FK_H_GRAPH);
}

FK_ENTRY(cuGraphExecDestroy, (CUgraphExec hGraphExec))
{
  FK_COUNT(cuGraphExecDestroy);
  return graph_destroy(hGraphExec, FK_H_GEXEC);
}
