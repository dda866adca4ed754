/* fake_copy.c: every copy and memset entry point of the fake CUDA driver (legacy and per-thread
 * variants). Each call becomes one transfer descriptor, classified by memory kind, then staged,
 * enqueued and waited for according to CUDA's "API synchronization behavior". */
#include "fake_internal.h"

#include <string.h>

enum { SIDE_HOST, SIDE_DEVICE, SIDE_ANY }; /* what the API says a pointer is */

static int is_host_kind(int k)
{
  return k == FK_MEM_PAGEABLE || k == FK_MEM_PINNED || k == FK_MEM_REGISTERED;
}

/* Kind of one side of a copy, or -1 when it is invalid (NULL, a device range not inside one live
 * allocation, host memory where the API wants device memory, or pageable memory not mapped). */
static int side_kind(const void *p, size_t extent, int side)
{
  if (!p || extent == SIZE_MAX)
    return -1;
  int k = fk_mem_kind(p, extent);
  if (k == FK_MEM_BAD || (side == SIDE_DEVICE && !fk_mem_is_device_side(k)))
    return -1;
  if (k == FK_MEM_PAGEABLE && !fk_mem_mapped(p, extent))
    return -1;
  return k;
}

static void stage_rows(char *dst, const fk_xfer *x)
{
  for (size_t z = 0; z < x->depth; z++)
    for (size_t y = 0; y < x->height; y++) {
      memcpy(dst, x->src + z * x->sslice + y * x->spitch, x->width);
      dst += x->width;
    }
}

/* Builds the op for one copy. The rules (CUDA "API synchronization behavior"):
 *  - a pageable source is first copied into staging memory by the calling thread; the call may
 *    then return while the DMA runs (sync and async alike);
 *  - a pageable destination: the call returns only when the copy is complete;
 *  - otherwise synchronous calls wait for completion, asynchronous ones do not;
 *  - a synchronous copy into host-accessible memory (host or managed) always waits.
 * *op is NULL for an empty copy. */
static CUresult prepare(const fk_xfer *x, int dside, int sside, int async, fk_op **op, int *wait)
{
  *op = NULL;
  *wait = 0;
  size_t bytes = fk_xfer_bytes(x);
  if (bytes == 0)
    return CUDA_SUCCESS;
  int dk = side_kind(x->dst, fk_xfer_dst_extent(x), dside);
  int sk = side_kind(x->src, fk_xfer_src_extent(x), sside);
  if (dk < 0 || sk < 0 || bytes == SIZE_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  int staged = sk == FK_MEM_PAGEABLE;
  *wait = dk == FK_MEM_PAGEABLE || (!async && (!staged || is_host_kind(dk) || dk == FK_MEM_MANAGED));
  fk_op *o = fk_op_new(FK_OP_COPY);
  if (!o)
    return CUDA_ERROR_OUT_OF_MEMORY;
  o->u.copy.x = *x;
  if (staged) {
    o->u.copy.staging = fk_pages_alloc(bytes, &o->u.copy.staging_len);
    if (!o->u.copy.staging) {
      fk_op_free(o);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    stage_rows(o->u.copy.staging, x);
  }
  *op = o;
  return CUDA_SUCCESS;
}

static void CUDA_CB fence_noop(void *arg) { (void)arg; }

/* "For transfers from pageable host memory to device memory, a stream sync is performed before the
 * copy is initiated": a synchronous call from pageable memory first waits for its stream (and so
 * does a large asynchronous one: waits_for_stream). */
static CUresult presync_pageable(const fk_xfer *x, int sside, CUstream h, int pt)
{
  if (fk_xfer_bytes(x) == 0 || side_kind(x->src, fk_xfer_src_extent(x), sside) != FK_MEM_PAGEABLE)
    return CUDA_SUCCESS;
  fk_op *fence = fk_op_new(FK_OP_HOSTFN);
  if (!fence)
    return CUDA_ERROR_OUT_OF_MEMORY;
  fence->u.hostfn.fn = fence_noop;
  fence->u.hostfn.arg = NULL;
  fk_ticket t;
  CUresult r = fk_submit(h, pt, fence, FK_SUB_SYNC, &t);
  if (r) {
    fk_op_free(fence);
    return r;
  }
  return fk_ticket_wait(&t);
}

/* The real driver holds up to this much of an async pageable H2D in its staging memory and returns
 * at once; from a larger one it returns only once the stream's earlier work is done (an H100,
 * driver 580: 2 MiB returned before a held stream was let go, 2.25 MiB after, on every stream kind,
 * 1D and 2D alike; tests/conformance, streams.async_behind_gate). */
#define FK_ASYNC_STAGING_BYTES ((size_t)2 << 20)

/* Whether stream h is being captured: a captured copy runs at replay, so nothing is waited for. */
static int stream_capturing(CUstream h, int pt)
{
  pthread_mutex_lock(&fk_lock);
  fk_stream *s = NULL;
  int capturing = fk_stream_resolve(h, pt, &s) == CUDA_SUCCESS && s->capture != NULL;
  pthread_mutex_unlock(&fk_lock);
  return capturing;
}

/* Whether the call waits for its stream before copying: a synchronous one from pageable memory
 * (presync_pageable), and an asynchronous pageable H2D larger than the driver's staging, unless
 * the stream is being captured. */
static int waits_for_stream(const fk_xfer *x, int dside, CUstream h, int pt, int async)
{
  if (!async)
    return 1;
  return fk_xfer_bytes(x) > FK_ASYNC_STAGING_BYTES &&
         side_kind(x->dst, fk_xfer_dst_extent(x), dside) == FK_MEM_DEVICE && !stream_capturing(h, pt);
}

static CUresult run_copy(const fk_xfer *x, int dside, int sside, CUstream h, int pt, int async)
{
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  if (waits_for_stream(x, dside, h, pt, async) && (r = presync_pageable(x, sside, h, pt)) != CUDA_SUCCESS)
    return r;
  fk_op *op;
  int wait;
  r = prepare(x, dside, sside, async, &op, &wait);
  if (r || !op)
    return r;
  fk_ticket t;
  r = fk_submit(h, pt, op, async ? 0 : FK_SUB_SYNC, wait ? &t : NULL);
  if (r) {
    fk_op_free(op);
    return r;
  }
  return wait ? fk_ticket_wait(&t) : CUDA_SUCCESS;
}

static fk_xfer xfer1d(uintptr_t dst, uintptr_t src, size_t n)
{
  fk_xfer x = { (char *)dst, (const char *)src, n, 1, 1, n, n, n, n };
  return x;
}

#define P(v) ((uintptr_t)(v))

/* ---- 1D copies ------------------------------------------------------------------------------- */

static CUresult copy1d(CUdeviceptr dst, CUdeviceptr src, size_t n, int dside, int sside, CUstream h, int pt,
                       int async)
{
  fk_xfer x = xfer1d(dst, src, n);
  return run_copy(&x, dside, sside, h, pt, async);
}

FK_ENTRY_PT(cuMemcpy, cuMemcpy_ptds,
            (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount),
            copy1d(dst, src, ByteCount, SIDE_ANY, SIDE_ANY, NULL, pt, 0))

FK_ENTRY_PT(cuMemcpyAsync, cuMemcpyAsync_ptsz,
            (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),
            copy1d(dst, src, ByteCount, SIDE_ANY, SIDE_ANY, hStream, pt, 1))

FK_ENTRY_PT(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds,
            (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),
            copy1d(dstDevice, P(srcHost), ByteCount, SIDE_DEVICE, SIDE_HOST, NULL, pt, 0))

FK_ENTRY_PT(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds,
            (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),
            copy1d(P(dstHost), srcDevice, ByteCount, SIDE_HOST, SIDE_DEVICE, NULL, pt, 0))

FK_ENTRY_PT(cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds,
            (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),
            copy1d(dstDevice, srcDevice, ByteCount, SIDE_DEVICE, SIDE_DEVICE, NULL, pt, 0))

FK_ENTRY_PT(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz,
            (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),
            copy1d(dstDevice, P(srcHost), ByteCount, SIDE_DEVICE, SIDE_HOST, hStream, pt, 1))

FK_ENTRY_PT(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz,
            (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
            copy1d(P(dstHost), srcDevice, ByteCount, SIDE_HOST, SIDE_DEVICE, hStream, pt, 1))

FK_ENTRY_PT(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz,
            (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
            copy1d(dstDevice, srcDevice, ByteCount, SIDE_DEVICE, SIDE_DEVICE, hStream, pt, 1))

/* ---- peer copies: D2D between contexts ----------------------------------------------------- */

static CUresult peer_copy(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n,
                          CUstream h, int pt, int async)
{
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  pthread_mutex_lock(&fk_lock);
  int ok = fk_handle_is(dctx, FK_H_CTX) && fk_handle_is(sctx, FK_H_CTX);
  pthread_mutex_unlock(&fk_lock);
  if (!ok)
    return CUDA_ERROR_INVALID_CONTEXT;
  return copy1d(dst, src, n, SIDE_DEVICE, SIDE_DEVICE, h, pt, async);
}

FK_ENTRY_PT(cuMemcpyPeer, cuMemcpyPeer_ptds,
            (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount),
            peer_copy(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL, pt, 0))

FK_ENTRY_PT(cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz,
            (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount, CUstream hStream),
            peer_copy(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, pt, 1))

/* ---- 2D and 3D copies ---------------------------------------------------------------------- */

static CUresult side_of(CUmemorytype t, const void *host, CUdeviceptr dev, uintptr_t *base, int *side)
{
  switch (t) {
  case CU_MEMORYTYPE_HOST: *base = P(host); *side = SIDE_HOST; return CUDA_SUCCESS;
  case CU_MEMORYTYPE_DEVICE: *base = dev; *side = SIDE_DEVICE; return CUDA_SUCCESS;
  case CU_MEMORYTYPE_UNIFIED: *base = dev; *side = SIDE_ANY; return CUDA_SUCCESS;
  case CU_MEMORYTYPE_ARRAY: return CUDA_ERROR_NOT_SUPPORTED; /* the fake has no CUDA arrays */
  default: return CUDA_ERROR_INVALID_VALUE;
  }
}

/* A pitch, when given (or needed: several rows), must hold the row: pitch >= X + width. */
static int pitch_ok(size_t pitch, size_t x, size_t width, int multi)
{
  if (!pitch && !multi)
    return 1;
  return x <= SIZE_MAX - width && pitch >= x + width;
}

struct box { /* the common part of CUDA_MEMCPY2D and CUDA_MEMCPY3D */
  size_t sx, sy, sz, spitch, sheight, dx, dy, dz, dpitch, dheight, w, h, d;
  CUmemorytype st, dt;
  const void *shost; void *dhost;
  CUdeviceptr sdev, ddev;
};

static CUresult box_to_xfer(const struct box *b, fk_xfer *x, int *dside, int *sside)
{
  uintptr_t sb, db;
  CUresult r = side_of(b->st, b->shost, b->sdev, &sb, sside);
  if (r == CUDA_SUCCESS)
    r = side_of(b->dt, b->dhost, b->ddev, &db, dside);
  if (r)
    return r;
  memset(x, 0, sizeof *x);
  if (!b->w || !b->h || !b->d)
    return CUDA_SUCCESS; /* an empty copy */
  int multi = b->h > 1 || b->d > 1;
  if (!pitch_ok(b->spitch, b->sx, b->w, multi) || !pitch_ok(b->dpitch, b->dx, b->w, multi))
    return CUDA_ERROR_INVALID_VALUE;
  if (b->d > 1 && (b->sheight < b->sy + b->h || b->dheight < b->dy + b->h))
    return CUDA_ERROR_INVALID_VALUE;
  size_t sp = b->spitch ? b->spitch : b->sx + b->w, dp = b->dpitch ? b->dpitch : b->dx + b->w;
  size_t ss = sp * b->sheight, ds = dp * b->dheight;
  if (!sb || !db)
    return CUDA_ERROR_INVALID_VALUE;
  x->src = (const char *)(sb + b->sz * ss + b->sy * sp + b->sx);
  x->dst = (char *)(db + b->dz * ds + b->dy * dp + b->dx);
  x->width = b->w;
  x->height = b->h;
  x->depth = b->d;
  x->spitch = sp;
  x->dpitch = dp;
  x->sslice = ss;
  x->dslice = ds;
  return CUDA_SUCCESS;
}

static CUresult copy2d(const CUDA_MEMCPY2D *p, CUstream h, int pt, int async)
{
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  if (!p)
    return CUDA_ERROR_INVALID_VALUE;
  struct box b = { p->srcXInBytes, p->srcY, 0, p->srcPitch, p->Height, p->dstXInBytes, p->dstY, 0,
                   p->dstPitch, p->Height, p->WidthInBytes, p->Height, 1, p->srcMemoryType, p->dstMemoryType,
                   p->srcHost, p->dstHost, p->srcDevice, p->dstDevice };
  fk_xfer x;
  int ds, ss;
  r = box_to_xfer(&b, &x, &ds, &ss);
  return r ? r : run_copy(&x, ds, ss, h, pt, async);
}

static CUresult copy3d(const CUDA_MEMCPY3D *p, CUstream h, int pt, int async)
{
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  if (!p || p->reserved0 || p->reserved1 || p->srcLOD || p->dstLOD)
    return CUDA_ERROR_INVALID_VALUE;
  struct box b = { p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch, p->srcHeight, p->dstXInBytes, p->dstY,
                   p->dstZ, p->dstPitch, p->dstHeight, p->WidthInBytes, p->Height, p->Depth,
                   p->srcMemoryType, p->dstMemoryType, p->srcHost, p->dstHost, p->srcDevice, p->dstDevice };
  fk_xfer x;
  int ds, ss;
  r = box_to_xfer(&b, &x, &ds, &ss);
  return r ? r : run_copy(&x, ds, ss, h, pt, async);
}

FK_ENTRY_PT(cuMemcpy2D_v2, cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *pCopy), copy2d(pCopy, NULL, pt, 0))

FK_ENTRY_PT(cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds,
            (const CUDA_MEMCPY2D *pCopy),
            copy2d(pCopy, NULL, pt, 0))

FK_ENTRY_PT(cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz,
            (const CUDA_MEMCPY2D *pCopy, CUstream hStream),
            copy2d(pCopy, hStream, pt, 1))

FK_ENTRY_PT(cuMemcpy3D_v2, cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *pCopy), copy3d(pCopy, NULL, pt, 0))

FK_ENTRY_PT(cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz,
            (const CUDA_MEMCPY3D *pCopy, CUstream hStream),
            copy3d(pCopy, hStream, pt, 1))

/* ---- batch copies ------------------------------------------------------------------------------ */

/* Both ABIs: CUDA 12.8 (with failIdx) and 13.0 (failIdx == NULL here). Each copy is classified
 * like cuMemcpyAsync, in order; the copies before the first refused one are enqueued all the same
 * and the call returns the refusal; the legacy NULL stream is refused. */
static CUresult batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                      CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                      CUstream h, int pt)
{
  if (failIdx)
    *failIdx = SIZE_MAX;
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  if (h == CU_STREAM_LEGACY || (h == NULL && !pt))
    return CUDA_ERROR_INVALID_VALUE;
  /* every copy needs an attribute set: numAttrs 0 is an invalid value (documented; measured on
   * 2 x H200, driver 580) */
  if (count == 0 || !dsts || !srcs || !sizes || numAttrs == 0 || numAttrs > count || !attrs || !attrsIdxs)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t k = 0; k < numAttrs; k++)
    if ((k == 0 && attrsIdxs[0] != 0) || (k > 0 && attrsIdxs[k] <= attrsIdxs[k - 1]) || attrsIdxs[k] >= count)
      return CUDA_ERROR_INVALID_VALUE;
  fk_op **ops = calloc(count, sizeof *ops);
  if (!ops)
    return CUDA_ERROR_OUT_OF_MEMORY;
  int any_wait = 0;
  size_t i;
  for (i = 0; i < count; i++) {
    fk_xfer x = xfer1d(dsts[i], srcs[i], sizes[i]);
    int wait;
    r = prepare(&x, SIDE_ANY, SIDE_ANY, 1, &ops[i], &wait);
    if (r) {
      if (failIdx)
        *failIdx = i;
      break;
    }
    any_wait |= wait;
  }
  /* A refused copy does not undo the ones before it: they run, and the call returns the refusal
   * (measured on 2 x H200, driver 580: edges.batch.inside_then_crossing) */
  CUresult refused = r;
  size_t nrun = r ? i : count;
  r = CUDA_SUCCESS;
  size_t last = count;
  for (size_t k = 0; k < nrun; k++)
    if (ops[k])
      last = k;
  fk_ticket t = { NULL, 0 };
  for (i = 0; r == CUDA_SUCCESS && i < nrun; i++) {
    if (!ops[i])
      continue;
    /* One stream: waiting for the last copy covers all of them. */
    r = fk_submit(h, pt, ops[i], 0, (any_wait && i == last) ? &t : NULL);
    if (r == CUDA_SUCCESS)
      ops[i] = NULL;
  }
  for (i = 0; i < count; i++)
    fk_op_free(ops[i]);
  free(ops);
  if (r)
    return r;
  r = fk_ticket_wait(&t);
  return refused ? refused : r;
}

FK_ENTRY_PT(cuMemcpyBatchAsync, cuMemcpyBatchAsync_ptsz,
            (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream hStream),
            batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, pt))

FK_ENTRY_PT(cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync_v2_ptsz,
            (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream hStream),
            batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, hStream, pt))

/* ---- memset ------------------------------------------------------------------------------------- */

static CUresult memset_d8(CUdeviceptr dst, unsigned char uc, size_t n, CUstream h, int pt, int async)
{
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  if (n == 0)
    return CUDA_SUCCESS;
  if (!dst || !fk_mem_is_device_side(fk_mem_kind((void *)(uintptr_t)dst, n)))
    return CUDA_ERROR_INVALID_VALUE;
  fk_op *op = fk_op_new(FK_OP_MEMSET);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.memset.dst = (char *)(uintptr_t)dst;
  op->u.memset.val = uc;
  op->u.memset.n = n;
  fk_ticket t;
  r = fk_submit(h, pt, op, async ? 0 : FK_SUB_SYNC, async ? NULL : &t);
  if (r) {
    fk_op_free(op);
    return r;
  }
  return async ? CUDA_SUCCESS : fk_ticket_wait(&t);
}

FK_ENTRY_PT(cuMemsetD8_v2, cuMemsetD8_v2_ptds,
            (CUdeviceptr dstDevice, unsigned char uc, size_t N),
            memset_d8(dstDevice, uc, N, NULL, pt, 0))

FK_ENTRY_PT(cuMemsetD8Async, cuMemsetD8Async_ptsz,
            (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream),
            memset_d8(dstDevice, uc, N, hStream, pt, 1))
