/* fake_internal.h: types and internal interfaces shared by the files of the fake CUDA driver,
 * a CPU-only test double for libcuda (not a driver). Everything declared here is hidden; only the
 * cu* entry points defined with FK_ENTRY are exported, each under its exact libcuda symbol name. */
#ifndef FAKE_INTERNAL_H
#define FAKE_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "fake_symbols.h"

#pragma GCC visibility push(hidden)

/* ---- Exported entry points and call accounting ---------------------------------------------- */

enum fk_sym_id {
#define FK_GEN_ID(s) FK_ID_##s,
  FK_SYMBOLS(FK_GEN_ID)
#undef FK_GEN_ID
  FK_NSYMS
};
extern unsigned long fk_calls[FK_NSYMS];
#define FK_COUNT(sym) FK_COUNT_ID_(FK_ID_##sym)
#define FK_COUNT_ID_(id) __atomic_fetch_add(&fk_calls[id], 1, __ATOMIC_RELAXED)

/* Defines the exported entry point `sym` under the internal C name fk_<sym>; the asm label gives
 * it the exact libcuda symbol name, even where cuda.h #defines `sym` to something else.
 * The body must start with FK_COUNT(sym). Entry points never call other entry points.
 * (`sym` is only ever pasted or stringized, never passed on, so cuda.h's #defines never expand it.) */
#define FK_ENTRY(sym, params) FK_ENTRY_AS_(fk_##sym, #sym, params)
#define FK_ENTRY_AS_(fn, name, params)                                         \
  __attribute__((visibility("default"))) CUresult fn params __asm__(name); \
  __attribute__((visibility("default"))) CUresult fn params

/* An entry point and its per-thread default stream variant `ptsym` (its _ptds/_ptsz symbol), whose
 * bodies differ only in their call count and in `pt`: each counts its call and returns `call`, an
 * expression that uses `pt`, which is 0 in `sym` and 1 in `ptsym`. */
#define FK_ENTRY_PT(sym, ptsym, params, call)                    \
  FK_ENTRY_PT_(fk_##sym, #sym, FK_ID_##sym, 0, params, call)     \
  FK_ENTRY_PT_(fk_##ptsym, #ptsym, FK_ID_##ptsym, 1, params, call)
#define FK_ENTRY_PT_(fn, name, id, ptval, params, call) \
  FK_ENTRY_AS_(fn, name, params)                        \
  {                                                     \
    FK_COUNT_ID_(id);                                   \
    const int pt = ptval;                               \
    return call;                                        \
  }

/* ---- Configuration (read once by cuInit) ----------------------------------------------------- */

enum { FK_FAIL_HOSTALLOC = 1, FK_FAIL_REGISTER = 2, FK_FAIL_WRITEVALUE = 4 };
struct fk_config {
  int ndev;            /* FAKECUDA_DEVICES, default 2 */
  double bytes_per_ns; /* FAKECUDA_GBPS (GB/s == bytes/ns); 0 = no bandwidth sleeping */
  long latency_ns;     /* FAKECUDA_LATENCY_US */
  unsigned fail;       /* FAKECUDA_FAIL bits */
  size_t arena_bytes;  /* FAKECUDA_ARENA_GB, default 64: reserved device address space */
};
extern struct fk_config fk_cfg;

/* ---- Locks ------------------------------------------------------------------------------------
 * fk_lock guards contexts, streams, queues, events, graphs and the handle registry;
 * fk_progress is broadcast (under fk_lock) whenever any stream op completes.
 * The memory tables have their own rwlock (fake_mem.c), a leaf: it may be taken while holding
 * fk_lock, never the other way round. */
extern pthread_mutex_t fk_lock;
extern pthread_cond_t fk_progress;

/* ---- Handles ----------------------------------------------------------------------------------- */

enum fk_htype { FK_H_CTX = 1, FK_H_STREAM, FK_H_EVENT, FK_H_GRAPH, FK_H_GEXEC };
void fk_handle_add(const void *h, int type); /* all three: caller holds fk_lock */
void fk_handle_del(const void *h);
int fk_handle_is(const void *h, int type);

/* ---- Contexts and threads ---------------------------------------------------------------------- */

typedef struct fk_ctx fk_ctx;
typedef struct fk_stream fk_stream;
typedef struct fk_event fk_event;
typedef struct fk_op fk_op;
typedef struct fk_graph fk_graph;

struct fk_ctx {
  int dev;
  int primary;            /* the device's primary context */
  int retains;            /* primary: cuDevicePrimaryCtxRetain count */
  int destroyed;
  unsigned resets;        /* primary: cuDevicePrimaryCtxReset count (its events die at each) */
  fk_stream *streams;     /* every live stream of the context, legacy one included */
  fk_stream *legacy;      /* the legacy default stream */
  CUresult sticky;        /* first asynchronous error (a DMA fault), returned by synchronizations */
  fk_ctx *all_next;       /* list of all contexts ever made (never freed) */
};
extern fk_ctx *fk_all_ctxs; /* under fk_lock */

CUresult fk_check_init(void);            /* CUDA_ERROR_NOT_INITIALIZED before cuInit */
fk_ctx *fk_current_ctx(void);            /* the calling thread's current context or NULL */
CUresult fk_need_ctx(fk_ctx **out);      /* init + current context, else the driver's error code */
extern __thread fk_stream *fk_tls_worker; /* set on worker threads: the stream they serve */

/* ---- Memory (fake_mem.c) -------------------------------------------------------------------- */

enum fk_memkind {
  FK_MEM_PAGEABLE = 0, /* host memory the fake knows nothing about */
  FK_MEM_PINNED,       /* cuMemHostAlloc / cuMemAllocHost */
  FK_MEM_REGISTERED,   /* cuMemHostRegister */
  FK_MEM_DEVICE,       /* cuMemAlloc (arena) */
  FK_MEM_MANAGED,      /* cuMemAllocManaged (arena, host-accessible) */
  FK_MEM_BAD           /* inside the arena but not inside one live allocation */
};
void fk_mem_init(void);                               /* reserve the arena (cuInit) */
int fk_mem_kind(const void *p, size_t len);           /* classify [p, p+len) */
int fk_mem_is_device_side(int kind);                  /* usable where the API wants a device ptr */
int fk_mem_mapped(const void *p, size_t len);         /* every page of the range is mapped */
size_t fk_mem_dev_total(void);                        /* bytes of one device's arena slice */
/* How the DMA engine reaches [p, p+len): returns the address to use and sets *safe when host
 * memory must be accessed with fault-free system calls (registered ranges the program may have
 * mprotect()ed; a real DMA engine writes through page protection). */
char *fk_mem_dma_ptr(const void *p, size_t len, int *safe);
/* The fake's own staging buffers (raw mmap, invisible to allocation hooks, cached); free with
 * the *maplen that fk_pages_alloc returned. */
void *fk_pages_alloc(size_t len, size_t *maplen);
void fk_pages_free(void *p, size_t maplen);
void fk_mem_fork_prepare(void); /* write-lock the memory tables around fork() */
void fk_mem_fork_release(void);
void fk_mem_fork_child(void);   /* child: fresh memory-table locks */
/* A context destroyed or a primary context reset: its device, managed and pinned allocations are
 * freed and its registrations forgotten (the pages stay the program's). Caller has synchronized
 * the context; fk_lock not held. */
void fk_mem_drop_ctx(fk_ctx *c);

/* ---- Transfers and the DMA engine (fake_dma.c) ---------------------------------------------- */

/* A 1D/2D/3D copy: `depth` slices of `height` rows of `width` bytes. Pointers are the program's
 * (untranslated); the DMA engine resolves pinned aliases at execution time. */
typedef struct fk_xfer {
  char *dst;
  const char *src;
  size_t width, height, depth;
  size_t dpitch, dslice, spitch, sslice;
} fk_xfer;
size_t fk_xfer_bytes(const fk_xfer *x);
size_t fk_xfer_dst_extent(const fk_xfer *x);
size_t fk_xfer_src_extent(const fk_xfer *x);
/* Runs a copy at the configured speed; returns CUDA_SUCCESS or CUDA_ERROR_ILLEGAL_ADDRESS. */
CUresult fk_dma_copy(const fk_xfer *x);
CUresult fk_dma_memset(char *dst, unsigned char v, size_t n);
CUresult fk_dma_write32(uint32_t *addr, uint32_t v);
void fk_dma_reset_after_fork(void);

/* ---- Streams, ops, events (fake_stream.c) -------------------------------------------------- */

enum fk_op_kind { FK_OP_COPY = 1, FK_OP_MEMSET, FK_OP_HOSTFN, FK_OP_CALLBACK, FK_OP_WRITE32, FK_OP_EVENT,
                  FK_OP_WAIT_EVENT, FK_OP_WAIT_STREAM };
struct fk_op {
  fk_op *next;
  uint64_t seq;
  int kind;
  union {
    struct { fk_xfer x; void *staging; size_t staging_len; } copy; /* staging: src replaced by it */
    struct { char *dst; unsigned char val; size_t n; } memset;
    struct { CUhostFn fn; void *arg; } hostfn;
    struct { CUstreamCallback cb; void *arg; CUstream h; } callback; /* h: the handle as given */
    struct { uint32_t *addr; uint32_t val; } w32;
    struct { fk_event *ev; uint64_t gen; } event;   /* record or wait */
    struct { fk_stream *s; uint64_t seq; } wait;     /* wait for another stream's position */
  } u;
};

enum fk_skind { FK_S_USER = 0, FK_S_LEGACY, FK_S_PTDS };
struct fk_stream {
  fk_ctx *ctx;
  int kind;
  unsigned flags;          /* CU_STREAM_NON_BLOCKING */
  int refs;                /* owner + worker + waiters */
  fk_op *head, *tail;
  uint64_t enqueued, completed;
  pthread_cond_t work_cv;
  int worker;              /* a worker thread exists */
  int retiring;            /* owner gone: drain, unlink, free */
  int linked;              /* on ctx->streams */
  fk_stream *ctx_next;
  fk_graph *capture;       /* non-NULL while capturing */
  int capture_mode;        /* the CUstreamCaptureMode given to cuStreamBeginCapture */
  int capture_invalid;     /* a rule of capture was broken: cuStreamEndCapture fails */
  pthread_t capture_thread; /* the thread that began the capture */
};

struct fk_event {
  unsigned flags;
  int refs;
  fk_ctx *ctx;                /* current at creation: the event dies with it (destroy or reset) */
  unsigned ctx_resets;
  uint64_t rec_gen, done_gen; /* recorded generation, last generation the stream reached */
  uint64_t stamp_ns;          /* when done_gen was reached */
};

/* Resolves a stream handle (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a created stream)
 * the way a legacy (per_thread = 0) or _ptds/_ptsz (per_thread = 1) entry point does.
 * Caller holds fk_lock. */
CUresult fk_stream_resolve(CUstream h, int per_thread, fk_stream **out);

/* A position in a stream to wait for after fk_submit; s is NULL when there is nothing to wait for. */
typedef struct fk_ticket { fk_stream *s; uint64_t seq; } fk_ticket;
enum { FK_SUB_SYNC = 1,         /* a synchronous call: refuse a capturing stream */
       FK_SUB_UNCAPTURABLE = 2  /* work capture does not support (cuStreamAddCallback): refuse it too */ };
/* Enqueues `op` on the resolved stream (or records it while the stream captures) and, when t is
 * given, returns a ticket for it. On success the op is owned by the fake; on error the caller frees it. */
CUresult fk_submit(CUstream h, int per_thread, fk_op *op, int flags, fk_ticket *t);
CUresult fk_ticket_wait(fk_ticket *t); /* waits, drops the ticket, returns the ctx's sticky error */
fk_op *fk_op_new(int kind);
void fk_op_free(fk_op *op);            /* releases staging and references */
void fk_stream_unref(fk_stream *s);    /* caller holds fk_lock */
void fk_event_unref(fk_event *e);      /* caller holds fk_lock */
CUresult fk_sync_ctx(fk_ctx *c);       /* all streams of c (or of every context when c is NULL) */
fk_stream *fk_stream_new(fk_ctx *c, int kind, unsigned flags); /* caller holds fk_lock */
void fk_stream_retire(fk_stream *s);   /* drop the owner's reference; caller holds fk_lock */
void fk_streams_after_fork(void);      /* child: forget workers and queued work */
/* Starts the worker if needed and enqueues op with legacy-stream ordering; fk_lock held. */
CUresult fk_enqueue_locked(fk_stream *s, fk_op *op);

/* ---- Capture and graphs (fake_graph.c) ------------------------------------------------------ */

struct fk_graph {
  fk_op *nodes;   /* array of op templates: copy, memset, host function, write-value */
  size_t n, cap;
};
void fk_graph_append(fk_graph *g, fk_op *op); /* consumes op; caller holds fk_lock */
void fk_graph_free(fk_graph *g);
/* The rules of capture (CUDA's "prohibited and unhandled operations").
 * fk_capture_unsafe_call (takes fk_lock): a "potentially unsafe" call (allocating, freeing,
 * registering memory) by a thread whose capture mode prohibits it (cuThreadExchangeStreamCaptureMode)
 * invalidates the captures that prohibit it and returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
 * fk_capture_legacy_use (fk_lock held): work for the legacy stream s while a blocking stream of its
 * context captures returns CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and, when `invalidate`, invalidates
 * those captures. fk_capture_invalidate (fk_lock held): s's capture fails at cuStreamEndCapture. */
CUresult fk_capture_unsafe_call(void);
CUresult fk_capture_legacy_use(fk_stream *s, int invalidate);
void fk_capture_invalidate(fk_stream *s);

/* ---- Small helpers ------------------------------------------------------------------------------ */

uint64_t fk_now_ns(void);
void fk_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#pragma GCC visibility pop

#endif
