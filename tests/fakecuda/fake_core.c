/* fake_core.c: initialization and configuration, devices, contexts and the per-thread context
 * stack, the handle registry, error strings, FAKECUDA_CALL_LOG accounting and fork handling of
 * the fake CUDA driver (a test double, not a driver). */
#include "fake_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FK_MAX_DEV 64
#define FK_CTX_STACK 64

struct fk_config fk_cfg;
pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t fk_progress = PTHREAD_COND_INITIALIZER;
unsigned long fk_calls[FK_NSYMS];
fk_ctx *fk_all_ctxs;

static const char *const sym_names[FK_NSYMS] = {
#define FK_GEN_NAME(s) #s,
  FK_SYMBOLS(FK_GEN_NAME)
#undef FK_GEN_NAME
};

static int initialized;          /* atomic; set once cuInit succeeded */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CUresult init_result;
static fk_ctx *primary_ctx[FK_MAX_DEV];

static __thread fk_ctx *tls_stack[FK_CTX_STACK];
static __thread int tls_depth;

/* ---- helpers ---------------------------------------------------------------------------------- */

uint64_t fk_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fk_warn(const char *fmt, ...)
{
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if (n > (int)sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  char out[540];
  int m = snprintf(out, sizeof out, "fakecuda: %.*s", n, buf);
  if (m > 0 && write(2, out, (size_t)(m < (int)sizeof out ? m : (int)sizeof out - 1)) < 0)
    return;
}

/* ---- handle registry: open-addressing set of live handles, keyed by address ------------------ */

struct hslot { const void *h; int type; }; /* type 0: empty, -1: deleted */
static struct hslot *htab;
static size_t hcap, hused;

static size_t hhash(const void *h)
{
  uint64_t x = (uint64_t)(uintptr_t)h;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x;
}

static void hgrow(void)
{
  size_t ncap = hcap ? hcap * 2 : 256;
  struct hslot *n = calloc(ncap, sizeof *n);
  if (!n) {
    fk_warn("out of memory in the handle table");
    abort();
  }
  size_t live = 0;
  for (size_t i = 0; i < hcap; i++) {
    if (htab[i].type <= 0)
      continue;
    size_t j = hhash(htab[i].h) & (ncap - 1);
    while (n[j].type != 0)
      j = (j + 1) & (ncap - 1);
    n[j] = htab[i];
    live++;
  }
  free(htab);
  htab = n;
  hcap = ncap;
  hused = live;
}

void fk_handle_add(const void *h, int type)
{
  if ((hused + 1) * 2 > hcap)
    hgrow();
  size_t j = hhash(h) & (hcap - 1);
  while (htab[j].type > 0)
    j = (j + 1) & (hcap - 1);
  if (htab[j].type == 0)
    hused++;
  htab[j].h = h;
  htab[j].type = type;
}

static struct hslot *hfind(const void *h)
{
  if (!hcap || !h)
    return NULL;
  size_t j = hhash(h) & (hcap - 1);
  for (size_t k = 0; k < hcap; k++) {
    if (htab[j].type == 0)
      return NULL;
    if (htab[j].type > 0 && htab[j].h == h)
      return &htab[j];
    j = (j + 1) & (hcap - 1);
  }
  return NULL;
}

void fk_handle_del(const void *h)
{
  struct hslot *s = hfind(h);
  if (s) {
    s->type = -1; /* a tombstone; counted in hused until the next grow */
    s->h = NULL;
  }
}

int fk_handle_is(const void *h, int type)
{
  struct hslot *s = hfind(h);
  return s && s->type == type;
}

/* ---- configuration and init -------------------------------------------------------------------- */

static double env_double(const char *name, double dflt, double lo, double hi)
{
  const char *v = getenv(name);
  if (!v || !*v)
    return dflt;
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  if (errno || *end || d < lo || d > hi) {
    fk_warn("ignoring %s=%s (expected a number in [%g, %g])", name, v, lo, hi);
    return dflt;
  }
  return d;
}

static unsigned parse_fail(const char *v)
{
  unsigned bits = 0;
  while (v && *v) {
    size_t n = strcspn(v, ",");
    if (n == 9 && !strncmp(v, "hostalloc", n))
      bits |= FK_FAIL_HOSTALLOC;
    else if (n == 8 && !strncmp(v, "register", n))
      bits |= FK_FAIL_REGISTER;
    else if (n == 10 && !strncmp(v, "writevalue", n))
      bits |= FK_FAIL_WRITEVALUE;
    else if (n)
      fk_warn("FAKECUDA_FAIL: unknown item '%.*s' (known: hostalloc, register, writevalue)", (int)n, v);
    v += n;
    if (*v == ',')
      v++;
  }
  return bits;
}

static void do_init(void)
{
  fk_cfg.ndev = (int)env_double("FAKECUDA_DEVICES", 2, 0, FK_MAX_DEV);
  fk_cfg.bytes_per_ns = env_double("FAKECUDA_GBPS", 20, 0, 1e6);
  fk_cfg.latency_ns = (long)(env_double("FAKECUDA_LATENCY_US", 2, 0, 1e7) * 1000.0);
  fk_cfg.fail = parse_fail(getenv("FAKECUDA_FAIL"));
  fk_cfg.arena_bytes = (size_t)(env_double("FAKECUDA_ARENA_GB", 64, 1, 1024) * (double)(1ull << 30));
  if (fk_cfg.ndev == 0) {
    init_result = CUDA_ERROR_NO_DEVICE;
    return;
  }
  fk_mem_init();
  if (fk_mem_dev_total() == 0) {
    init_result = CUDA_ERROR_OUT_OF_MEMORY;
    return;
  }
  init_result = CUDA_SUCCESS;
  __atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
}

CUresult fk_check_init(void)
{
  return __atomic_load_n(&initialized, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

fk_ctx *fk_current_ctx(void)
{
  return tls_depth ? tls_stack[tls_depth - 1] : NULL;
}

CUresult fk_need_ctx(fk_ctx **out)
{
  CUresult r = fk_check_init();
  if (r)
    return r;
  fk_ctx *c = fk_current_ctx();
  if (!c || __atomic_load_n(&c->destroyed, __ATOMIC_ACQUIRE))
    return CUDA_ERROR_INVALID_CONTEXT;
  if (out)
    *out = c;
  return CUDA_SUCCESS;
}

static CUresult check_dev(CUdevice dev)
{
  CUresult r = fk_check_init();
  if (r)
    return r;
  return (dev < 0 || dev >= fk_cfg.ndev) ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

FK_ENTRY(cuInit, (unsigned int flags))
{
  FK_COUNT(cuInit);
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_once(&init_once, do_init);
  return init_result;
}

FK_ENTRY(cuDriverGetVersion, (int *version))
{
  FK_COUNT(cuDriverGetVersion);
  if (!version)
    return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

/* ---- devices ------------------------------------------------------------------------------------ */

FK_ENTRY(cuDeviceGet, (CUdevice *device, int ordinal))
{
  FK_COUNT(cuDeviceGet);
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= fk_cfg.ndev)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

FK_ENTRY(cuDeviceGetCount, (int *count))
{
  FK_COUNT(cuDeviceGetCount);
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  *count = fk_cfg.ndev;
  return CUDA_SUCCESS;
}

FK_ENTRY(cuDeviceGetName, (char *name, int len, CUdevice dev))
{
  FK_COUNT(cuDeviceGetName);
  CUresult r = check_dev(dev);
  if (r)
    return r;
  if (!name || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "%s", "Fake CUDA Device");
  return CUDA_SUCCESS;
}

FK_ENTRY(cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev))
{
  FK_COUNT(cuDeviceGetAttribute);
  CUresult r = check_dev(dev);
  if (r)
    return r;
  if (!pi || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  int v = 0;
  switch (attrib) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = 0; break;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
  case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: v = 1; break;
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
  case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: v = 1; break;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = 2; break;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: v = 1; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = 132; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = dev; break;
  default: v = 0; break;
  }
  *pi = v;
  return CUDA_SUCCESS;
}

FK_ENTRY(cuDeviceTotalMem_v2, (size_t *bytes, CUdevice dev))
{
  FK_COUNT(cuDeviceTotalMem_v2);
  CUresult r = check_dev(dev);
  if (r)
    return r;
  if (!bytes)
    return CUDA_ERROR_INVALID_VALUE;
  *bytes = fk_mem_dev_total();
  return CUDA_SUCCESS;
}

/* ---- contexts ----------------------------------------------------------------------------------- */

static fk_ctx *ctx_new(int dev, int primary) /* fk_lock held */
{
  fk_ctx *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->dev = dev;
  c->primary = primary;
  c->legacy = fk_stream_new(c, FK_S_LEGACY, 0);
  if (!c->legacy) {
    free(c);
    return NULL;
  }
  c->all_next = fk_all_ctxs;
  fk_all_ctxs = c;
  fk_handle_add(c, FK_H_CTX);
  return c;
}

static CUresult push_ctx(fk_ctx *c)
{
  if (tls_depth >= FK_CTX_STACK)
    return CUDA_ERROR_OUT_OF_MEMORY;
  tls_stack[tls_depth++] = c;
  return CUDA_SUCCESS;
}

static int ctx_valid(CUcontext h)
{
  pthread_mutex_lock(&fk_lock);
  int ok = fk_handle_is(h, FK_H_CTX);
  pthread_mutex_unlock(&fk_lock);
  return ok;
}

/* Retires the context's created streams (and its legacy stream too when `legacy`); their
 * structures go once drained. fk_lock held. */
static void retire_streams(fk_ctx *c, int legacy)
{
  fk_stream *next;
  for (fk_stream *s = c->streams; s; s = next) {
    next = s->ctx_next;
    if (s->kind == FK_S_USER && fk_handle_is(s, FK_H_STREAM)) {
      fk_handle_del(s);
      fk_stream_retire(s);
    } else if (s->kind == FK_S_LEGACY && legacy) {
      fk_stream_retire(s);
    }
  }
}

FK_ENTRY(cuDevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice dev))
{
  FK_COUNT(cuDevicePrimaryCtxRetain);
  CUresult r = check_dev(dev);
  if (r)
    return r;
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fk_lock);
  if (!primary_ctx[dev])
    primary_ctx[dev] = ctx_new(dev, 1);
  fk_ctx *c = primary_ctx[dev];
  if (c)
    c->retains++;
  pthread_mutex_unlock(&fk_lock);
  if (!c)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pctx = (CUcontext)c;
  return CUDA_SUCCESS;
}

FK_ENTRY(cuDevicePrimaryCtxRelease_v2, (CUdevice dev))
{
  FK_COUNT(cuDevicePrimaryCtxRelease_v2);
  CUresult r = check_dev(dev);
  if (r)
    return r;
  pthread_mutex_lock(&fk_lock);
  fk_ctx *c = primary_ctx[dev];
  if (!c || c->retains == 0)
    r = CUDA_ERROR_INVALID_CONTEXT;
  else
    c->retains--; /* the fake keeps an unretained primary context alive (documented) */
  pthread_mutex_unlock(&fk_lock);
  return r;
}

FK_ENTRY(cuDevicePrimaryCtxReset_v2, (CUdevice dev))
{
  FK_COUNT(cuDevicePrimaryCtxReset_v2);
  CUresult r = check_dev(dev);
  if (r)
    return r;
  pthread_mutex_lock(&fk_lock);
  fk_ctx *c = primary_ctx[dev];
  if (c) {
    c->retains = 0;
    c->resets++;
  }
  pthread_mutex_unlock(&fk_lock);
  if (!c)
    return CUDA_SUCCESS;
  /* "Destroys all allocations and resets all state on the primary context": its memory,
   * registrations and created streams go; the handle stays valid (documented deviation). */
  fk_sync_ctx(c);
  pthread_mutex_lock(&fk_lock);
  retire_streams(c, 0);
  pthread_mutex_unlock(&fk_lock);
  fk_mem_drop_ctx(c);
  return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
  CUresult r = check_dev(dev);
  if (r)
    return r;
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  (void)flags; /* scheduling and mapping flags mean nothing to the fake */
  if (tls_depth >= FK_CTX_STACK)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&fk_lock);
  fk_ctx *c = ctx_new(dev, 0);
  pthread_mutex_unlock(&fk_lock);
  if (!c)
    return CUDA_ERROR_OUT_OF_MEMORY;
  push_ctx(c);
  *pctx = (CUcontext)c;
  return CUDA_SUCCESS;
}

FK_ENTRY(cuCtxCreate_v2, (CUcontext *pctx, unsigned int flags, CUdevice dev))
{
  FK_COUNT(cuCtxCreate_v2);
  return ctx_create(pctx, flags, dev);
}

FK_ENTRY(cuCtxCreate_v4, (CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev))
{
  FK_COUNT(cuCtxCreate_v4);
  (void)params; /* execution affinity / CIG parameters are ignored */
  return ctx_create(pctx, flags, dev);
}

FK_ENTRY(cuCtxDestroy_v2, (CUcontext h))
{
  FK_COUNT(cuCtxDestroy_v2);
  CUresult r = fk_check_init();
  if (r)
    return r;
  fk_ctx *c = (fk_ctx *)h;
  if (!ctx_valid(h) || c->primary)
    return CUDA_ERROR_INVALID_CONTEXT;
  fk_sync_ctx(c);
  pthread_mutex_lock(&fk_lock);
  if (!fk_handle_is(c, FK_H_CTX)) { /* destroyed concurrently */
    pthread_mutex_unlock(&fk_lock);
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  fk_handle_del(c);
  __atomic_store_n(&c->destroyed, 1, __ATOMIC_RELEASE);
  /* Its streams go once drained. The context itself is never freed, so stale pointers to it
   * (other threads' stacks) stay harmless. */
  retire_streams(c, 1);
  pthread_mutex_unlock(&fk_lock);
  fk_mem_drop_ctx(c);
  if (tls_depth && tls_stack[tls_depth - 1] == c)
    tls_depth--;
  return CUDA_SUCCESS;
}

FK_ENTRY(cuCtxSetCurrent, (CUcontext h))
{
  FK_COUNT(cuCtxSetCurrent);
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (!h) {
    if (tls_depth)
      tls_depth--;
    return CUDA_SUCCESS;
  }
  if (!ctx_valid(h))
    return CUDA_ERROR_INVALID_CONTEXT;
  if (tls_depth)
    tls_stack[tls_depth - 1] = (fk_ctx *)h;
  else
    push_ctx((fk_ctx *)h);
  return CUDA_SUCCESS;
}

FK_ENTRY(cuCtxGetCurrent, (CUcontext *pctx))
{
  FK_COUNT(cuCtxGetCurrent);
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  *pctx = (CUcontext)fk_current_ctx();
  return CUDA_SUCCESS;
}

FK_ENTRY(cuCtxGetDevice, (CUdevice *dev))
{
  FK_COUNT(cuCtxGetDevice);
  fk_ctx *c;
  CUresult r = fk_need_ctx(&c);
  if (r)
    return r;
  if (!dev)
    return CUDA_ERROR_INVALID_VALUE;
  *dev = c->dev;
  return CUDA_SUCCESS;
}

FK_ENTRY(cuCtxPushCurrent_v2, (CUcontext h))
{
  FK_COUNT(cuCtxPushCurrent_v2);
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (!h || !ctx_valid(h))
    return CUDA_ERROR_INVALID_CONTEXT;
  return push_ctx((fk_ctx *)h);
}

FK_ENTRY(cuCtxPopCurrent_v2, (CUcontext *pctx))
{
  FK_COUNT(cuCtxPopCurrent_v2);
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (!tls_depth)
    return CUDA_ERROR_INVALID_CONTEXT;
  fk_ctx *c = tls_stack[--tls_depth];
  if (pctx)
    *pctx = (CUcontext)c;
  return CUDA_SUCCESS;
}

FK_ENTRY(cuCtxSynchronize, (void))
{
  FK_COUNT(cuCtxSynchronize);
  fk_ctx *c;
  CUresult r = fk_need_ctx(&c);
  if (r)
    return r;
  if (fk_tls_worker) /* a host function may not synchronize */
    return CUDA_ERROR_NOT_PERMITTED;
  return fk_sync_ctx(c);
}

/* CUDA 13's form, what cuGetProcAddress("cuCtxSynchronize", 13000) returns (driver 580): the
 * context is named; NULL means the current one. */
FK_ENTRY(cuCtxSynchronize_v2, (CUcontext h))
{
  FK_COUNT(cuCtxSynchronize_v2);
  fk_ctx *c;
  CUresult r = h ? fk_check_init() : fk_need_ctx(&c);
  if (r)
    return r;
  if (h && !ctx_valid(h))
    return CUDA_ERROR_INVALID_CONTEXT;
  if (fk_tls_worker) /* a host function may not synchronize */
    return CUDA_ERROR_NOT_PERMITTED;
  return fk_sync_ctx(h ? (fk_ctx *)h : c);
}

/* ---- error strings ------------------------------------------------------------------------------ */

static const struct { CUresult code; const char *name, *text; } errors[] = {
#define E(c, t) { c, #c, t }
  E(CUDA_SUCCESS, "no error"),
  E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
  E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
  E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
  E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
  E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
  E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
  E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
  E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
  E(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
  E(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
  E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
  E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
  E(CUDA_ERROR_NOT_READY, "device not ready"),
  E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
  E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"),
  E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
  E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
  E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
  E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
  E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"),
  E(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not initiated in this stream"),
  E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread"),
  E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "operation would make the legacy stream depend on a capturing blocking stream"),
  E(CUDA_ERROR_UNKNOWN, "unknown error"),
#undef E
};

FK_ENTRY(cuGetErrorString, (CUresult error, const char **pStr))
{
  FK_COUNT(cuGetErrorString);
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == error) {
      *pStr = errors[i].text;
      return CUDA_SUCCESS;
    }
  *pStr = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

FK_ENTRY(cuGetErrorName, (CUresult error, const char **pStr))
{
  FK_COUNT(cuGetErrorName);
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == error) {
      *pStr = errors[i].name;
      return CUDA_SUCCESS;
    }
  *pStr = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

/* ---- call log, fork ----------------------------------------------------------------------------- */

/* Appends "<symbol> <count>" for every entry point called at least once, in one write. */
__attribute__((destructor)) static void write_call_log(void)
{
  const char *path = getenv("FAKECUDA_CALL_LOG");
  if (!path || !*path)
    return;
  size_t cap = 64 * FK_NSYMS, len = 0;
  char *buf = malloc(cap);
  if (!buf)
    return;
  for (int i = 0; i < FK_NSYMS; i++) {
    unsigned long n = __atomic_load_n(&fk_calls[i], __ATOMIC_RELAXED);
    if (n) {
      int k = snprintf(buf + len, cap - len, "%s %lu\n", sym_names[i], n);
      if (k > 0 && (size_t)k < cap - len)
        len += (size_t)k;
    }
  }
  if (len) {
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
      if (write(fd, buf, len) != (ssize_t)len)
        fk_warn("short write to FAKECUDA_CALL_LOG %s", path);
      close(fd);
    }
  }
  free(buf);
}

static void fork_prepare(void)
{
  pthread_mutex_lock(&fk_lock);
  fk_mem_fork_prepare();
}

static void fork_parent(void)
{
  fk_mem_fork_release();
  pthread_mutex_unlock(&fk_lock);
}

/* The child has no worker threads: queued work is forgotten (counted as done), counters restart
 * at zero so the child's call log holds only its own calls. No allocation, no CUDA. */
static void fork_child(void)
{
  fk_mem_fork_child();
  pthread_cond_init(&fk_progress, NULL); /* its parent-side waiters do not exist here */
  fk_streams_after_fork();
  for (int i = 0; i < FK_NSYMS; i++)
    __atomic_store_n(&fk_calls[i], 0, __ATOMIC_RELAXED);
  fk_dma_reset_after_fork();
  pthread_mutex_unlock(&fk_lock);
}

__attribute__((constructor)) static void fake_ctor(void)
{
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}
