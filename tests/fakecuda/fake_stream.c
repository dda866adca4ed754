/* fake_stream.c: streams of the fake CUDA driver. Each stream (created, legacy default, per-thread
 * default) gets a lazily started worker thread that runs its operations strictly in order; legacy
 * default stream ordering against blocking streams is enforced with wait operations inserted at
 * enqueue time. Also events, host functions, stream write-value and synchronization. */
#include "fake_internal.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

__thread fk_stream *fk_tls_worker;

/* ---- ops ---------------------------------------------------------------------------------------- */

fk_op *fk_op_new(int kind)
{
  fk_op *op = calloc(1, sizeof *op);
  if (op)
    op->kind = kind;
  return op;
}

static void op_free_locked(fk_op *op)
{
  if (!op)
    return;
  switch (op->kind) {
  case FK_OP_COPY:
    fk_pages_free(op->u.copy.staging, op->u.copy.staging_len);
    break;
  case FK_OP_EVENT:
  case FK_OP_WAIT_EVENT:
    fk_event_unref(op->u.event.ev);
    break;
  case FK_OP_WAIT_STREAM:
    fk_stream_unref(op->u.wait.s);
    break;
  default:
    break;
  }
  free(op);
}

void fk_op_free(fk_op *op)
{
  if (!op)
    return;
  int refs = op->kind == FK_OP_EVENT || op->kind == FK_OP_WAIT_EVENT || op->kind == FK_OP_WAIT_STREAM;
  if (refs)
    pthread_mutex_lock(&fk_lock);
  op_free_locked(op);
  if (refs)
    pthread_mutex_unlock(&fk_lock);
}

/* ---- stream objects ------------------------------------------------------------------------------ */

fk_stream *fk_stream_new(fk_ctx *c, int kind, unsigned flags)
{
  fk_stream *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->ctx = c;
  s->kind = kind;
  s->flags = flags;
  s->refs = 1; /* the owner: a handle, the context (legacy) or a thread (per-thread) */
  pthread_cond_init(&s->work_cv, NULL);
  s->ctx_next = c->streams;
  c->streams = s;
  s->linked = 1;
  return s;
}

static void unlink_stream(fk_stream *s)
{
  if (!s->linked)
    return;
  for (fk_stream **pp = &s->ctx->streams; *pp; pp = &(*pp)->ctx_next)
    if (*pp == s) {
      *pp = s->ctx_next;
      break;
    }
  s->linked = 0;
}

void fk_stream_unref(fk_stream *s)
{
  if (--s->refs > 0)
    return;
  unlink_stream(s);
  while (s->head) {
    fk_op *op = s->head;
    s->head = op->next;
    op_free_locked(op);
  }
  if (s->capture)
    fk_graph_free(s->capture);
  pthread_cond_destroy(&s->work_cv);
  free(s);
}

void fk_stream_retire(fk_stream *s)
{
  if (s->retiring)
    return;
  s->retiring = 1;
  if (s->worker)
    pthread_cond_signal(&s->work_cv); /* it unlinks itself once drained */
  else
    unlink_stream(s);
  fk_stream_unref(s);
}

/* ---- per-thread default streams ---------------------------------------------------------------- */

#define FK_PTDS_MAX 16
struct ptds_list {
  int n;
  struct { fk_ctx *ctx; fk_stream *s; } e[FK_PTDS_MAX];
};
static __thread struct ptds_list *tls_ptds;
static pthread_key_t ptds_key;
static pthread_once_t ptds_once = PTHREAD_ONCE_INIT;

/* Thread exit: its per-thread streams drain in the background and then go away. */
static void ptds_thread_exit(void *arg)
{
  struct ptds_list *l = arg;
  pthread_mutex_lock(&fk_lock);
  for (int i = 0; i < l->n; i++)
    if (l->e[i].s)
      fk_stream_retire(l->e[i].s);
  pthread_mutex_unlock(&fk_lock);
  free(l);
}

static void ptds_key_init(void)
{
  pthread_key_create(&ptds_key, ptds_thread_exit);
}

static fk_stream *ptds_get(fk_ctx *c) /* fk_lock held */
{
  if (!tls_ptds) {
    pthread_once(&ptds_once, ptds_key_init);
    tls_ptds = calloc(1, sizeof *tls_ptds);
    if (!tls_ptds)
      return NULL;
    pthread_setspecific(ptds_key, tls_ptds);
  }
  struct ptds_list *l = tls_ptds;
  for (int i = 0; i < l->n; i++)
    if (l->e[i].ctx == c)
      return l->e[i].s;
  if (l->n == FK_PTDS_MAX)
    return NULL;
  fk_stream *s = fk_stream_new(c, FK_S_PTDS, 0);
  if (!s)
    return NULL;
  l->e[l->n].ctx = c;
  l->e[l->n].s = s;
  l->n++;
  return s;
}

CUresult fk_stream_resolve(CUstream h, int per_thread, fk_stream **out)
{
  int kind;
  if (h == NULL)
    kind = per_thread ? FK_S_PTDS : FK_S_LEGACY;
  else if (h == CU_STREAM_LEGACY)
    kind = FK_S_LEGACY;
  else if (h == CU_STREAM_PER_THREAD)
    kind = FK_S_PTDS;
  else {
    if (!fk_handle_is(h, FK_H_STREAM))
      return CUDA_ERROR_INVALID_HANDLE;
    *out = (fk_stream *)h;
    return CUDA_SUCCESS;
  }
  fk_ctx *c;
  CUresult r = fk_need_ctx(&c);
  if (r)
    return r;
  fk_stream *s = kind == FK_S_LEGACY ? c->legacy : ptds_get(c);
  if (!s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *out = s;
  return CUDA_SUCCESS;
}

/* ---- workers ------------------------------------------------------------------------------------ */

/* status: the context's first asynchronous error so far, what a stream callback is told. */
static CUresult run_op(fk_op *op, CUresult status)
{
  CUresult r = CUDA_SUCCESS;
  switch (op->kind) {
  case FK_OP_COPY: {
    fk_xfer x = op->u.copy.x;
    if (op->u.copy.staging) { /* staged source: packed rows in the fake's own pages */
      x.src = op->u.copy.staging;
      x.spitch = x.width;
      x.sslice = x.width * x.height;
    }
    r = fk_dma_copy(&x);
    fk_pages_free(op->u.copy.staging, op->u.copy.staging_len);
    op->u.copy.staging = NULL;
    break;
  }
  case FK_OP_MEMSET:
    r = fk_dma_memset(op->u.memset.dst, op->u.memset.val, op->u.memset.n);
    break;
  case FK_OP_HOSTFN:
    op->u.hostfn.fn(op->u.hostfn.arg);
    break;
  case FK_OP_CALLBACK:
    op->u.callback.cb(op->u.callback.h, status, op->u.callback.arg);
    break;
  case FK_OP_WRITE32:
    r = fk_dma_write32(op->u.w32.addr, op->u.w32.val);
    break;
  case FK_OP_WAIT_EVENT:
    pthread_mutex_lock(&fk_lock);
    while (op->u.event.ev->done_gen < op->u.event.gen)
      pthread_cond_wait(&fk_progress, &fk_lock);
    pthread_mutex_unlock(&fk_lock);
    break;
  case FK_OP_WAIT_STREAM:
    pthread_mutex_lock(&fk_lock);
    while (op->u.wait.s->completed < op->u.wait.seq)
      pthread_cond_wait(&fk_progress, &fk_lock);
    pthread_mutex_unlock(&fk_lock);
    break;
  default: /* FK_OP_EVENT completes under the lock in the worker loop */
    break;
  }
  return r;
}

static void *worker_main(void *arg)
{
  fk_stream *s = arg;
  fk_tls_worker = s;
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* microsecond sleeps must stay microseconds */
  prctl(PR_SET_NAME, "fakecuda-strm");      /* the real driver names its threads too (cuda-EvtHandlr) */
  pthread_mutex_lock(&fk_lock);
  for (;;) {
    while (!s->head && !s->retiring)
      pthread_cond_wait(&s->work_cv, &fk_lock);
    fk_op *op = s->head;
    if (!op)
      break; /* retiring and drained */
    s->head = op->next;
    if (!s->head)
      s->tail = NULL;
    CUresult status = s->ctx->sticky;
    pthread_mutex_unlock(&fk_lock);
    CUresult r = run_op(op, status);
    uint64_t now = fk_now_ns();
    pthread_mutex_lock(&fk_lock);
    if (r && !s->ctx->sticky)
      s->ctx->sticky = r;
    if (op->kind == FK_OP_EVENT && op->u.event.gen > op->u.event.ev->done_gen) {
      op->u.event.ev->done_gen = op->u.event.gen;
      op->u.event.ev->stamp_ns = now;
    }
    s->completed = op->seq;
    pthread_cond_broadcast(&fk_progress);
    op_free_locked(op);
  }
  unlink_stream(s);
  s->worker = 0;
  fk_stream_unref(s);
  pthread_mutex_unlock(&fk_lock);
  return NULL;
}

/* Workers block asynchronous signals (they belong to the program's threads) but keep the
 * synchronous ones, so a fault in a host function is reported as usual. */
static CUresult ensure_worker(fk_stream *s) /* fk_lock held */
{
  if (s->worker)
    return CUDA_SUCCESS;
  sigset_t all, old;
  sigfillset(&all);
  static const int sync_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS };
  for (size_t i = 0; i < sizeof sync_sigs / sizeof sync_sigs[0]; i++)
    sigdelset(&all, sync_sigs[i]);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t tid;
  int e = pthread_create(&tid, &attr, worker_main, s);
  if (!e) /* named at once too: a thread not yet run would be runnable under the program's name */
    pthread_setname_np(tid, "fakecuda-strm");
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (e) {
    fk_warn("cannot start a stream worker thread");
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  s->worker = 1;
  s->refs++;
  return CUDA_SUCCESS;
}

static void push(fk_stream *s, fk_op *op)
{
  op->next = NULL;
  op->seq = ++s->enqueued;
  if (s->tail)
    s->tail->next = op;
  else
    s->head = op;
  s->tail = op;
}

static void push_wait(fk_stream *s, fk_stream *t)
{
  fk_op *w = fk_op_new(FK_OP_WAIT_STREAM);
  if (!w) {
    fk_warn("out of memory: legacy stream ordering lost");
    return;
  }
  w->u.wait.s = t;
  w->u.wait.seq = t->enqueued;
  t->refs++;
  push(s, w);
}

/* Legacy default stream semantics: work on the legacy stream waits for all earlier work on the
 * context's blocking streams; work on a blocking stream waits for earlier legacy-stream work.
 * Non-blocking streams take part in neither. */
CUresult fk_enqueue_locked(fk_stream *s, fk_op *op)
{
  CUresult r = ensure_worker(s);
  if (r)
    return r;
  fk_ctx *c = s->ctx;
  if (s->kind == FK_S_LEGACY) {
    for (fk_stream *t = c->streams; t; t = t->ctx_next)
      if (t != s && !(t->flags & CU_STREAM_NON_BLOCKING) && t->enqueued > t->completed)
        push_wait(s, t);
  } else if (!(s->flags & CU_STREAM_NON_BLOCKING)) {
    fk_stream *l = c->legacy;
    if (l && l->enqueued > l->completed)
      push_wait(s, l);
  }
  push(s, op);
  pthread_cond_signal(&s->work_cv);
  return CUDA_SUCCESS;
}

CUresult fk_submit(CUstream h, int per_thread, fk_op *op, int flags, fk_ticket *t)
{
  if (t)
    t->s = NULL;
  pthread_mutex_lock(&fk_lock);
  fk_stream *s;
  CUresult r = fk_stream_resolve(h, per_thread, &s);
  if (r == CUDA_SUCCESS)
    r = fk_capture_legacy_use(s, 1);
  if (r == CUDA_SUCCESS) {
    if (s->capture) {
      if (s->capture_invalid) {
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
      } else if (flags & (FK_SUB_SYNC | FK_SUB_UNCAPTURABLE)) { /* a synchronous call, or work capture refuses */
        fk_capture_invalidate(s);
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
      } else {
        fk_graph_append(s->capture, op); /* recorded, not run */
      }
    } else if ((r = fk_enqueue_locked(s, op)) == CUDA_SUCCESS) {
      if (t) {
        t->s = s;
        t->seq = op->seq;
        s->refs++;
      }
    }
  }
  pthread_mutex_unlock(&fk_lock);
  return r;
}

CUresult fk_ticket_wait(fk_ticket *t)
{
  if (!t->s)
    return CUDA_SUCCESS;
  pthread_mutex_lock(&fk_lock);
  while (t->s->completed < t->seq)
    pthread_cond_wait(&fk_progress, &fk_lock);
  CUresult r = t->s->ctx->sticky;
  fk_stream_unref(t->s);
  pthread_mutex_unlock(&fk_lock);
  t->s = NULL;
  return r;
}

/* Waits until every stream of c (of all contexts when c is NULL) has finished what was enqueued
 * before the call. A worker thread never waits (a host function freeing memory must not deadlock). */
CUresult fk_sync_ctx(fk_ctx *c)
{
  if (fk_tls_worker)
    return CUDA_SUCCESS;
  pthread_mutex_lock(&fk_lock);
  size_t n = 0, cap = 16;
  struct { fk_stream *s; uint64_t seq; } *w = malloc(cap * sizeof *w);
  for (fk_ctx *x = c ? c : fk_all_ctxs; x && w; x = c ? NULL : x->all_next) {
    for (fk_stream *s = x->streams; s; s = s->ctx_next) {
      if (s->completed >= s->enqueued)
        continue;
      if (n == cap) {
        void *nw = realloc(w, 2 * cap * sizeof *w);
        if (!nw)
          break;
        w = nw;
        cap *= 2;
      }
      s->refs++;
      w[n].s = s;
      w[n].seq = s->enqueued;
      n++;
    }
  }
  for (size_t i = 0; i < n; i++) {
    while (w[i].s->completed < w[i].seq)
      pthread_cond_wait(&fk_progress, &fk_lock);
    fk_stream_unref(w[i].s);
  }
  free(w);
  CUresult r = c ? c->sticky : CUDA_SUCCESS;
  pthread_mutex_unlock(&fk_lock);
  return r;
}

/* Child of fork(): no worker threads exist; queued and running work is forgotten (counted as
 * done) so that nothing waits forever. No allocation or freeing happens here. */
void fk_streams_after_fork(void)
{
  for (fk_ctx *c = fk_all_ctxs; c; c = c->all_next)
    for (fk_stream *s = c->streams; s; s = s->ctx_next) {
      s->head = s->tail = NULL; /* leaked on purpose */
      s->completed = s->enqueued;
      s->worker = 0;
      pthread_cond_init(&s->work_cv, NULL);
    }
  fk_tls_worker = NULL;
}

/* ---- stream entry points ------------------------------------------------------------------------- */

static CUresult stream_create(CUstream *ph, unsigned int flags)
{
  fk_ctx *c;
  CUresult r = fk_need_ctx(&c);
  if (r)
    return r;
  if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fk_lock);
  fk_stream *s = fk_stream_new(c, FK_S_USER, flags);
  if (s)
    fk_handle_add(s, FK_H_STREAM);
  pthread_mutex_unlock(&fk_lock);
  if (!s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *ph = (CUstream)s;
  return CUDA_SUCCESS;
}

FK_ENTRY(cuStreamCreate, (CUstream *phStream, unsigned int Flags))
{
  FK_COUNT(cuStreamCreate);
  return stream_create(phStream, Flags);
}

FK_ENTRY(cuStreamCreateWithPriority, (CUstream *phStream, unsigned int flags, int priority))
{
  FK_COUNT(cuStreamCreateWithPriority);
  (void)priority; /* one engine: priorities change nothing */
  return stream_create(phStream, flags);
}

FK_ENTRY(cuStreamDestroy_v2, (CUstream hStream))
{
  FK_COUNT(cuStreamDestroy_v2);
  CUresult r = fk_check_init();
  if (r)
    return r;
  pthread_mutex_lock(&fk_lock);
  if (!fk_handle_is(hStream, FK_H_STREAM)) {
    pthread_mutex_unlock(&fk_lock);
    return CUDA_ERROR_INVALID_HANDLE;
  }
  fk_stream *s = (fk_stream *)hStream;
  fk_handle_del(s);
  if (s->capture) { /* destroying a capturing stream abandons the capture */
    fk_graph_free(s->capture);
    s->capture = NULL;
  }
  fk_stream_retire(s); /* queued work still runs, as documented */
  pthread_mutex_unlock(&fk_lock);
  return CUDA_SUCCESS;
}

static CUresult stream_sync(CUstream h, int pt)
{
  CUresult r = fk_check_init();
  if (r)
    return r;
  fk_ticket t = { NULL, 0 };
  pthread_mutex_lock(&fk_lock);
  fk_stream *s = NULL;
  r = fk_stream_resolve(h, pt, &s);
  if (r == CUDA_SUCCESS)
    r = fk_capture_legacy_use(s, 1);
  if (r == CUDA_SUCCESS && !s->capture) {
    /* synchronizing a stream that does not capture is a potentially unsafe call: refused, and the
     * global captures invalidated (measured on 2 x H200, driver 580) */
    pthread_mutex_unlock(&fk_lock);
    r = fk_capture_unsafe_call();
    pthread_mutex_lock(&fk_lock);
    if (r == CUDA_SUCCESS && fk_stream_resolve(h, pt, &s) != CUDA_SUCCESS)
      r = CUDA_ERROR_INVALID_HANDLE;
  }
  if (r == CUDA_SUCCESS && s->capture) {
    fk_capture_invalidate(s);
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  } else if (r == CUDA_SUCCESS && fk_tls_worker == s) {
    r = CUDA_ERROR_NOT_PERMITTED; /* a host function waiting for itself */
  } else if (r == CUDA_SUCCESS) {
    t.s = s;
    t.seq = s->enqueued;
    s->refs++;
  }
  pthread_mutex_unlock(&fk_lock);
  return r ? r : fk_ticket_wait(&t);
}

FK_ENTRY_PT(cuStreamSynchronize, cuStreamSynchronize_ptsz, (CUstream hStream), stream_sync(hStream, pt))

static CUresult stream_query(CUstream h, int pt)
{
  CUresult r = fk_check_init();
  if (r)
    return r;
  pthread_mutex_lock(&fk_lock);
  fk_stream *s;
  r = fk_stream_resolve(h, pt, &s);
  if (r == CUDA_SUCCESS)
    r = fk_capture_legacy_use(s, 1);
  if (r == CUDA_SUCCESS) {
    if (s->capture) {
      fk_capture_invalidate(s);
      r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    } else if (s->completed < s->enqueued)
      r = CUDA_ERROR_NOT_READY;
    else
      r = s->ctx->sticky;
  }
  pthread_mutex_unlock(&fk_lock);
  return r;
}

FK_ENTRY_PT(cuStreamQuery, cuStreamQuery_ptsz, (CUstream hStream), stream_query(hStream, pt))

/* ---- events ------------------------------------------------------------------------------------ */

/* An event whose context was destroyed or reset is gone in the real driver: a program using one
 * under an earlier shim died of a segfault on an H200 (driver 580; the shim queried its own event
 * of a destroyed context). The fake stops the process loudly rather than answer. fk_lock held. */
static void event_alive_or_die(CUevent h, const char *call)
{
  fk_event *e = (fk_event *)h;
  if (e->ctx && (e->ctx->destroyed || e->ctx->resets != e->ctx_resets)) {
    fk_warn("%s on an event whose context was destroyed or reset (the real driver crashes)", call);
    abort();
  }
}

void fk_event_unref(fk_event *e)
{
  if (--e->refs == 0)
    free(e);
}

FK_ENTRY(cuEventCreate, (CUevent *phEvent, unsigned int Flags))
{
  FK_COUNT(cuEventCreate);
  fk_ctx *c;
  CUresult r = fk_need_ctx(&c);
  if (r)
    return r;
  unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (!phEvent || (Flags & ~known) ||
      ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)))
    return CUDA_ERROR_INVALID_VALUE;
  fk_event *e = calloc(1, sizeof *e);
  if (!e)
    return CUDA_ERROR_OUT_OF_MEMORY;
  e->flags = Flags;
  e->refs = 1;
  pthread_mutex_lock(&fk_lock);
  e->ctx = c;
  e->ctx_resets = c->resets;
  fk_handle_add(e, FK_H_EVENT);
  pthread_mutex_unlock(&fk_lock);
  *phEvent = (CUevent)e;
  return CUDA_SUCCESS;
}

FK_ENTRY(cuEventDestroy_v2, (CUevent hEvent))
{
  FK_COUNT(cuEventDestroy_v2);
  CUresult r = fk_check_init();
  if (r)
    return r;
  pthread_mutex_lock(&fk_lock);
  if (fk_handle_is(hEvent, FK_H_EVENT)) {
    event_alive_or_die(hEvent, "cuEventDestroy");
    fk_handle_del(hEvent);
    fk_event_unref((fk_event *)hEvent); /* queued records/waits keep it alive */
  } else {
    r = CUDA_ERROR_INVALID_HANDLE;
  }
  pthread_mutex_unlock(&fk_lock);
  return r;
}

/* Records the stream's current position into the event. While the stream captures, a record
 * only serves capture dependencies in CUDA; the fake treats it as a no-op. */
static CUresult event_record(CUevent hEvent, CUstream h, int pt)
{
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  fk_op *op = fk_op_new(FK_OP_EVENT);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&fk_lock);
  fk_stream *s = NULL;
  if (!fk_handle_is(hEvent, FK_H_EVENT))
    r = CUDA_ERROR_INVALID_HANDLE;
  else {
    event_alive_or_die(hEvent, "cuEventRecord");
    r = fk_stream_resolve(h, pt, &s);
  }
  if (r == CUDA_SUCCESS)
    r = fk_capture_legacy_use(s, 1);
  if (r == CUDA_SUCCESS && !s->capture) {
    fk_event *e = (fk_event *)hEvent;
    op->u.event.ev = e;
    op->u.event.gen = e->rec_gen + 1;
    if ((r = fk_enqueue_locked(s, op)) == CUDA_SUCCESS) {
      e->rec_gen++;
      e->refs++;
      op = NULL;
    }
  }
  pthread_mutex_unlock(&fk_lock);
  free(op); /* not enqueued: holds no reference */
  return r;
}

FK_ENTRY_PT(cuEventRecord, cuEventRecord_ptsz, (CUevent hEvent, CUstream hStream), event_record(hEvent, hStream, pt))

FK_ENTRY_PT(cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz,
            (CUevent hEvent, CUstream hStream, unsigned int flags),
            (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL) ? CUDA_ERROR_INVALID_VALUE : event_record(hEvent, hStream, pt))

FK_ENTRY(cuEventQuery, (CUevent hEvent))
{
  FK_COUNT(cuEventQuery);
  CUresult r = fk_check_init();
  if (r)
    return r;
  pthread_mutex_lock(&fk_lock);
  if (!fk_handle_is(hEvent, FK_H_EVENT))
    r = CUDA_ERROR_INVALID_HANDLE;
  else if ((event_alive_or_die(hEvent, "cuEventQuery"), 0))
    ;
  else if (((fk_event *)hEvent)->done_gen < ((fk_event *)hEvent)->rec_gen)
    r = CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&fk_lock);
  return r;
}

FK_ENTRY(cuEventSynchronize, (CUevent hEvent))
{
  FK_COUNT(cuEventSynchronize);
  CUresult r = fk_check_init();
  if (r)
    return r;
  pthread_mutex_lock(&fk_lock);
  if (!fk_handle_is(hEvent, FK_H_EVENT)) {
    r = CUDA_ERROR_INVALID_HANDLE;
  } else {
    event_alive_or_die(hEvent, "cuEventSynchronize");
    fk_event *e = (fk_event *)hEvent;
    uint64_t gen = e->rec_gen;
    e->refs++;
    while (e->done_gen < gen)
      pthread_cond_wait(&fk_progress, &fk_lock);
    fk_event_unref(e);
  }
  pthread_mutex_unlock(&fk_lock);
  return r;
}

static CUresult elapsed(float *ms, CUevent a, CUevent b)
{
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (!ms)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fk_lock);
  fk_event *s = (fk_event *)a, *e = (fk_event *)b;
  if (!fk_handle_is(s, FK_H_EVENT) || !fk_handle_is(e, FK_H_EVENT))
    r = CUDA_ERROR_INVALID_HANDLE;
  else if ((s->flags | e->flags) & CU_EVENT_DISABLE_TIMING || !s->rec_gen || !e->rec_gen)
    r = CUDA_ERROR_INVALID_HANDLE;
  else if (s->done_gen < s->rec_gen || e->done_gen < e->rec_gen)
    r = CUDA_ERROR_NOT_READY;
  else
    *ms = (float)(((double)e->stamp_ns - (double)s->stamp_ns) / 1e6);
  pthread_mutex_unlock(&fk_lock);
  return r;
}

FK_ENTRY(cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd))
{
  FK_COUNT(cuEventElapsedTime);
  return elapsed(pMilliseconds, hStart, hEnd);
}

FK_ENTRY(cuEventElapsedTime_v2, (float *pMilliseconds, CUevent hStart, CUevent hEnd))
{
  FK_COUNT(cuEventElapsedTime_v2);
  return elapsed(pMilliseconds, hStart, hEnd);
}

/* The stream waits for the event's last record; an event never recorded counts as complete. */
static CUresult stream_wait_event(CUstream h, CUevent hEvent, unsigned int flags, int pt)
{
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  fk_op *op = fk_op_new(FK_OP_WAIT_EVENT);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&fk_lock);
  fk_stream *s = NULL;
  if (!fk_handle_is(hEvent, FK_H_EVENT))
    r = CUDA_ERROR_INVALID_HANDLE;
  else {
    event_alive_or_die(hEvent, "cuEventRecord");
    r = fk_stream_resolve(h, pt, &s);
  }
  if (r == CUDA_SUCCESS)
    r = fk_capture_legacy_use(s, 1);
  fk_event *e = (fk_event *)hEvent;
  if (r == CUDA_SUCCESS && !s->capture && e->done_gen < e->rec_gen) {
    op->u.event.ev = e;
    op->u.event.gen = e->rec_gen;
    if ((r = fk_enqueue_locked(s, op)) == CUDA_SUCCESS) {
      e->refs++;
      op = NULL;
    }
  }
  pthread_mutex_unlock(&fk_lock);
  free(op);
  return r;
}

FK_ENTRY_PT(cuStreamWaitEvent, cuStreamWaitEvent_ptsz,
            (CUstream hStream, CUevent hEvent, unsigned int Flags),
            stream_wait_event(hStream, hEvent, Flags, pt))

/* ---- host functions and write-value ------------------------------------------------------------ */

/* Queues op (without a ticket) or, when the stream refuses it, frees it; the stream's answer. */
static CUresult submit_or_free(CUstream h, int pt, fk_op *op, int flags)
{
  CUresult r = fk_submit(h, pt, op, flags, NULL);
  if (r)
    fk_op_free(op);
  return r;
}

static CUresult launch_host_func(CUstream h, CUhostFn fn, void *data, int pt)
{
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  if (!fn)
    return CUDA_ERROR_INVALID_VALUE;
  fk_op *op = fk_op_new(FK_OP_HOSTFN);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.hostfn.fn = fn;
  op->u.hostfn.arg = data;
  return submit_or_free(h, pt, op, 0);
}

FK_ENTRY_PT(cuLaunchHostFunc, cuLaunchHostFunc_ptsz,
            (CUstream hStream, CUhostFn fn, void *userData),
            launch_host_func(hStream, fn, userData, pt))

/* The older form of a host function: called with the stream as given, the context's first
 * asynchronous error (CUDA_SUCCESS while there is none) and the data; flags must be 0; capture
 * does not support it (CUDA's documentation), so it is refused and the capture invalidated, as a
 * synchronous call on a capturing stream is. */
static CUresult add_callback(CUstream h, CUstreamCallback cb, void *data, unsigned int flags, int pt)
{
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  if (!cb || flags)
    return CUDA_ERROR_INVALID_VALUE;
  fk_op *op = fk_op_new(FK_OP_CALLBACK);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.callback.cb = cb;
  op->u.callback.arg = data;
  op->u.callback.h = h;
  return submit_or_free(h, pt, op, FK_SUB_UNCAPTURABLE);
}

FK_ENTRY_PT(cuStreamAddCallback, cuStreamAddCallback_ptsz,
            (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags),
            add_callback(hStream, callback, userData, flags, pt))

/* Writes `value` to addr (device memory, or pinned/registered host memory by either of its
 * addresses) in stream order, with a release store. */
static CUresult write_value32(CUstream h, CUdeviceptr addr, cuuint32_t value, unsigned int flags, int pt)
{
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  if (fk_cfg.fail & FK_FAIL_WRITEVALUE)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
    return CUDA_ERROR_INVALID_VALUE;
  if (!addr || (addr & 3) || !fk_mem_is_device_side(fk_mem_kind((void *)(uintptr_t)addr, 4)))
    return CUDA_ERROR_INVALID_VALUE;
  fk_op *op = fk_op_new(FK_OP_WRITE32);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.w32.addr = (uint32_t *)(uintptr_t)addr;
  op->u.w32.val = value;
  return submit_or_free(h, pt, op, 0);
}

FK_ENTRY_PT(cuStreamWriteValue32, cuStreamWriteValue32_ptsz,
            (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),
            write_value32(stream, addr, value, flags, pt))

FK_ENTRY_PT(cuStreamWriteValue32_v2, cuStreamWriteValue32_v2_ptsz,
            (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),
            write_value32(stream, addr, value, flags, pt))
