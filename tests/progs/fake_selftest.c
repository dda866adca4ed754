/* fake_selftest.c: checks the fake CUDA driver (tests/fakecuda) against the behaviour the pinshim
 * tests rely on: errors, memory kinds, every copy family bit for bit, legacy and per-thread stream
 * ordering, events, host functions, write-value, capture and graph replay, cuGetProcAddress, the
 * call log and fork. Every function is taken with dlsym by its exact exported name, so the program
 * builds with or without -lcuda; run it with LD_LIBRARY_PATH=build/fakecuda.
 * Modes (argv[1]): none = the main suite, which re-runs itself as "timing" (FAKECUDA_GBPS=1),
 * "calllog" (FAKECUDA_CALL_LOG) and "fail" (FAKECUDA_FAIL), unless FAKE_SELFTEST_NO_CHILDREN is set.
 * Prints "fake_selftest: N passed, M failed" and exits nonzero on any failure. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the driver, by exported symbol ------------------------------------------------------------ */

typedef CUresult (*batch_v1_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *,
                                size_t, size_t *, CUstream);
typedef CUresult (*getproc_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*ctx_create_v2_fn)(CUcontext *, unsigned int, CUdevice);

/* X(symbol whose cuda.h prototype gives the type) */
#define SYMS(X)                                                                                         \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName)                 \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem_v2) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2) \
  X(cuCtxCreate_v4) X(cuCtxDestroy_v2) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxGetDevice)          \
  X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2) X(cuCtxSynchronize) X(cuGetErrorString) X(cuGetErrorName) \
  X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemAllocManaged) X(cuMemGetInfo_v2) X(cuMemGetAddressRange_v2)  \
  X(cuMemsetD8_v2) X(cuMemsetD8Async) X(cuMemAllocHost_v2) X(cuMemHostAlloc) X(cuMemFreeHost)          \
  X(cuMemHostRegister_v2) X(cuMemHostUnregister) X(cuMemHostGetDevicePointer_v2) X(cuMemHostGetFlags)  \
  X(cuPointerGetAttribute) X(cuPointerGetAttributes) X(cuStreamCreate) X(cuStreamCreateWithPriority)   \
  X(cuStreamDestroy_v2) X(cuStreamSynchronize) X(cuStreamQuery) X(cuStreamWaitEvent)                   \
  X(cuStreamIsCapturing) X(cuStreamBeginCapture_v2) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) \
  X(cuGraphLaunch) X(cuGraphDestroy) X(cuGraphExecDestroy) X(cuEventCreate) X(cuEventDestroy_v2)       \
  X(cuEventRecord) X(cuEventQuery) X(cuEventSynchronize) X(cuEventElapsedTime_v2) X(cuLaunchHostFunc)  \
  X(cuStreamWriteValue32_v2) X(cuMemcpy) X(cuMemcpyAsync) X(cuMemcpyHtoD_v2) X(cuMemcpyDtoH_v2)        \
  X(cuMemcpyDtoD_v2) X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoDAsync_v2)           \
  X(cuMemcpy2D_v2) X(cuMemcpy2DUnaligned_v2) X(cuMemcpy2DAsync_v2) X(cuMemcpy3D_v2) X(cuMemcpy3DAsync_v2) \
  X(cuMemcpyPeer) X(cuMemcpyPeerAsync) X(cuMemcpyBatchAsync_v2) X(cuGetProcAddress_v2)   \
  X(cuThreadExchangeStreamCaptureMode) X(cuDevicePrimaryCtxReset_v2)

/* X(member, exported name, symbol giving the type): per-thread variants */
#define PT_SYMS(X)                                                                                      \
  X(HtoD_ptds, "cuMemcpyHtoD_v2_ptds", cuMemcpyHtoD_v2)                                                 \
  X(DtoH_ptds, "cuMemcpyDtoH_v2_ptds", cuMemcpyDtoH_v2)                                                 \
  X(HtoDAsync_ptsz, "cuMemcpyHtoDAsync_v2_ptsz", cuMemcpyHtoDAsync_v2)                                  \
  X(DtoHAsync_ptsz, "cuMemcpyDtoHAsync_v2_ptsz", cuMemcpyDtoHAsync_v2)                                  \
  X(Memcpy_ptds, "cuMemcpy_ptds", cuMemcpy)                                                             \
  X(StreamSynchronize_ptsz, "cuStreamSynchronize_ptsz", cuStreamSynchronize)                            \
  X(StreamQuery_ptsz, "cuStreamQuery_ptsz", cuStreamQuery)                                              \
  X(LaunchHostFunc_ptsz, "cuLaunchHostFunc_ptsz", cuLaunchHostFunc)                                     \
  X(BeginCapture_ptsz, "cuStreamBeginCapture_v2_ptsz", cuStreamBeginCapture_v2)                         \
  X(EndCapture_ptsz, "cuStreamEndCapture_ptsz", cuStreamEndCapture)                                     \
  X(IsCapturing_ptsz, "cuStreamIsCapturing_ptsz", cuStreamIsCapturing)                                  \
  X(Batch_v2_ptsz, "cuMemcpyBatchAsync_v2_ptsz", cuMemcpyBatchAsync_v2)

static struct {
#define MEMBER(s) __typeof__(s) *s;
  SYMS(MEMBER)
#undef MEMBER
#define PT_MEMBER(m, name, t) __typeof__(t) *m;
  PT_SYMS(PT_MEMBER)
#undef PT_MEMBER
  batch_v1_fn Batch_v1;
  getproc_v1_fn GetProcAddress_v1;
  ctx_create_v2_fn CtxCreate_v2;
} D;
static void *lib;

static void load_driver(void)
{
  lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "fake_selftest: %s\n", dlerror());
    exit(2);
  }
#define LOAD(s) if (!(D.s = (__typeof__(D.s))dlsym(lib, #s))) { fprintf(stderr, "missing %s\n", #s); exit(2); }
  SYMS(LOAD)
#undef LOAD
#define PT_LOAD(m, name, t) if (!(D.m = (__typeof__(D.m))dlsym(lib, name))) { fprintf(stderr, "missing %s\n", name); exit(2); }
  PT_SYMS(PT_LOAD)
#undef PT_LOAD
  D.Batch_v1 = (batch_v1_fn)dlsym(lib, "cuMemcpyBatchAsync");
  D.GetProcAddress_v1 = (getproc_v1_fn)dlsym(lib, "cuGetProcAddress");
  D.CtxCreate_v2 = (ctx_create_v2_fn)dlsym(lib, "cuCtxCreate_v2");
  if (!D.Batch_v1 || !D.GetProcAddress_v1 || !D.CtxCreate_v2) {
    fprintf(stderr, "missing a v1 symbol\n");
    exit(2);
  }
}

/* ---- reporting -------------------------------------------------------------------------------- */

static int passed, failed;

#define EXPECT(cond, ...)                                                                               \
  do {                                                                                                  \
    if (cond) {                                                                                         \
      passed++;                                                                                         \
    } else {                                                                                            \
      failed++;                                                                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                              \
      fprintf(stderr, __VA_ARGS__);                                                                     \
      fprintf(stderr, "\n");                                                                            \
    }                                                                                                   \
  } while (0)
#define EXPECT_RC(call, want)                                                                           \
  do {                                                                                                  \
    CUresult got_ = (call);                                                                             \
    EXPECT(got_ == (want), "%s returned %d, expected %d (%s)", #call, (int)got_, (int)(want), #want);    \
  } while (0)
#define OK(call) EXPECT_RC(call, CUDA_SUCCESS)

static void fill(void *p, size_t n, unsigned seed)
{
  unsigned char *c = p;
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c[i] = (unsigned char)x;
  }
}

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
  struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
  nanosleep(&ts, NULL);
}

#define PTR(p) ((CUdeviceptr)(uintptr_t)(p))
#define MiB (1u << 20)

static CUcontext ctx0, ctx1;

/* ---- host functions used as probes ---------------------------------------------------------------- */

static int flag_a, flag_b; /* set by slow host functions, read by later ones (atomics) */
static int seen_a, seen_b;

static void slow_set_a(void *arg) { (void)arg; sleep_ms(60); __atomic_store_n(&flag_a, 1, __ATOMIC_SEQ_CST); }
static void probe_a(void *arg) { (void)arg; __atomic_store_n(&seen_a, __atomic_load_n(&flag_a, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST); }
static void probe_b(void *arg) { (void)arg; __atomic_store_n(&seen_b, __atomic_load_n(&flag_a, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST); }

static int order_log[64], order_n;
static void append_order(void *arg) { order_log[__atomic_fetch_add(&order_n, 1, __ATOMIC_SEQ_CST)] = (int)(intptr_t)arg; }

static void reset_flags(void)
{
  __atomic_store_n(&flag_a, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&flag_b, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&seen_a, -1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&seen_b, -1, __ATOMIC_SEQ_CST);
}

/* ---- tests ------------------------------------------------------------------------------------- */

static void test_init(void)
{
  CUdeviceptr d;
  int v = 0;
  EXPECT_RC(D.cuMemAlloc_v2(&d, 16), CUDA_ERROR_NOT_INITIALIZED);
  OK(D.cuDriverGetVersion(&v));
  EXPECT(v == 13000, "driver version %d", v);
  EXPECT_RC(D.cuInit(1), CUDA_ERROR_INVALID_VALUE);
  OK(D.cuInit(0));
  int n = 0;
  OK(D.cuDeviceGetCount(&n));
  EXPECT(n == 2, "device count %d", n);
  CUdevice dev;
  OK(D.cuDeviceGet(&dev, 1));
  EXPECT_RC(D.cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
  char name[64];
  OK(D.cuDeviceGetName(name, sizeof name, 0));
  EXPECT(!strcmp(name, "Fake CUDA Device"), "name %s", name);
  int a = -1;
  OK(D.cuDeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  EXPECT(a == 9, "cc major %d", a);
  OK(D.cuDeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
  EXPECT(a == 1, "uva %d", a);
  OK(D.cuDeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1));
  EXPECT(a == 1, "host ptr for registered %d", a);
  size_t total = 0;
  OK(D.cuDeviceTotalMem_v2(&total, 0));
  EXPECT(total >= (256ull << 20), "total mem %zu", total);

  /* no context yet */
  EXPECT_RC(D.cuMemAlloc_v2(&d, 16), CUDA_ERROR_INVALID_CONTEXT);
  char h[16];
  EXPECT_RC(D.cuMemcpyHtoD_v2(0x1000, h, 16), CUDA_ERROR_INVALID_CONTEXT);
  CUstream s;
  EXPECT_RC(D.cuStreamCreate(&s, 0), CUDA_ERROR_INVALID_CONTEXT);

  OK(D.cuDevicePrimaryCtxRetain(&ctx0, 0));
  OK(D.cuCtxSetCurrent(ctx0));
  CUcontext cur = NULL;
  OK(D.cuCtxGetCurrent(&cur));
  EXPECT(cur == ctx0, "current ctx");
  /* a second context on device 1, made with the CUDA 13 signature, pushed and popped */
  OK(D.cuCtxCreate_v4(&ctx1, NULL, 0, 1));
  OK(D.cuCtxGetDevice(&dev));
  EXPECT(dev == 1, "ctx1 device %d", dev);
  OK(D.cuCtxPopCurrent_v2(&cur));
  EXPECT(cur == ctx1, "popped ctx1");
  OK(D.cuCtxGetDevice(&dev));
  EXPECT(dev == 0, "back on device 0");
  CUcontext tmp;
  OK(D.CtxCreate_v2(&tmp, 0, 0));
  OK(D.cuCtxDestroy_v2(tmp));
  OK(D.cuCtxGetCurrent(&cur));
  EXPECT(cur == ctx0, "destroy popped the temporary context");
  EXPECT_RC(D.cuCtxSetCurrent(tmp), CUDA_ERROR_INVALID_CONTEXT);
  const char *str = NULL;
  OK(D.cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &str));
  EXPECT(str && !strcmp(str, "CUDA_ERROR_INVALID_VALUE"), "error name %s", str ? str : "(null)");
  OK(D.cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &str));
  EXPECT(str && !strcmp(str, "out of memory"), "error string");
}

struct attrs {
  CUcontext ctx;
  unsigned int type, managed, mapped;
  CUdeviceptr dptr, start;
  void *hptr;
  int ordinal;
  size_t size;
  unsigned long long id;
};

static CUresult get_attrs(const void *p, struct attrs *a)
{
  CUpointer_attribute at[] = { CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                               CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_HOST_POINTER,
                               CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                               CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                               CU_POINTER_ATTRIBUTE_MAPPED, CU_POINTER_ATTRIBUTE_BUFFER_ID };
  memset(a, 0x5a, sizeof *a);
  void *data[] = { &a->ctx, &a->type, &a->dptr, &a->hptr, &a->managed, &a->ordinal, &a->start, &a->size,
                   &a->mapped, &a->id };
  return D.cuPointerGetAttributes(10, at, data, PTR(p));
}

static void test_memory_kinds(void)
{
  struct attrs a;
  CUdeviceptr d, m, d1;
  OK(D.cuMemAlloc_v2(&d, MiB));
  OK(get_attrs((void *)(uintptr_t)(d + 100), &a));
  EXPECT(a.type == CU_MEMORYTYPE_DEVICE && !a.managed && a.ctx == ctx0 && a.ordinal == 0 && a.start == d &&
             a.size == MiB && a.dptr == d + 100 && a.hptr == NULL && a.mapped == 1 && a.id != 0,
         "device attributes");
  unsigned long long id_d = a.id;
  CUdeviceptr base;
  size_t sz;
  OK(D.cuMemGetAddressRange_v2(&base, &sz, d + 4000));
  EXPECT(base == d && sz == MiB, "address range");

  OK(D.cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
  OK(get_attrs((void *)(uintptr_t)m, &a));
  EXPECT(a.type == CU_MEMORYTYPE_DEVICE && a.managed == 1 && a.hptr == (void *)(uintptr_t)m && a.id != id_d,
         "managed attributes");
  memset((void *)(uintptr_t)m, 0x77, 4096); /* managed memory is host-accessible */
  unsigned char back[4096];
  OK(D.cuMemcpyDtoH_v2(back, m, 4096));
  EXPECT(back[0] == 0x77 && back[4095] == 0x77, "managed memory written by the host");

  OK(D.cuCtxPushCurrent_v2(ctx1));
  OK(D.cuMemAlloc_v2(&d1, 4096));
  OK(D.cuCtxPopCurrent_v2(NULL));
  OK(get_attrs((void *)(uintptr_t)d1, &a));
  EXPECT(a.ordinal == 1 && a.ctx == ctx1, "device 1 allocation ordinal %d", a.ordinal);

  void *pinned;
  OK(D.cuMemHostAlloc(&pinned, 3 * 4096 + 10, CU_MEMHOSTALLOC_PORTABLE));
  EXPECT(((uintptr_t)pinned & 4095) == 0, "pinned memory page aligned");
  OK(get_attrs((char *)pinned + 5, &a));
  EXPECT(a.type == CU_MEMORYTYPE_HOST && a.hptr == (char *)pinned + 5 && a.dptr == PTR(pinned) + 5 &&
             a.start == PTR(pinned) && a.size == 3 * 4096 + 10 && !a.managed,
         "pinned attributes");
  unsigned int fl = 99;
  OK(D.cuMemHostGetFlags(&fl, pinned));
  EXPECT(fl == (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP), "host flags %u", fl); /* DEVICEMAP: always reported */
  CUdeviceptr alias;
  OK(D.cuMemHostGetDevicePointer_v2(&alias, pinned, 0));
  EXPECT(alias == PTR(pinned), "device alias of pinned memory");
  EXPECT_RC(D.cuMemHostRegister_v2((char *)pinned + 4096, 100, 0), CUDA_ERROR_INVALID_VALUE); /* 2 x H200 */
  /* like a registration: a range that starts inside and runs past the end is refused */
  EXPECT_RC(D.cuMemcpyHtoD_v2(d, (char *)pinned + 3 * 4096, 100), CUDA_ERROR_INVALID_VALUE);
  OK(D.cuMemcpyHtoD_v2(d, (char *)pinned + 3 * 4096, 10));

  size_t rn = 8 * 4096;
  char *reg = aligned_alloc(4096, rn);
  OK(D.cuMemHostRegister_v2(reg + 4096, rn - 4096, CU_MEMHOSTREGISTER_PORTABLE));
  OK(get_attrs(reg + 5000, &a));
  EXPECT(a.type == CU_MEMORYTYPE_HOST && a.start == PTR(reg + 4096), "registered attributes");
  EXPECT_RC(D.cuMemHostRegister_v2(reg, 4097, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  EXPECT_RC(D.cuMemHostUnregister(reg + 5000), CUDA_ERROR_INVALID_VALUE); /* inside, not the base (H200) */
  EXPECT_RC(D.cuMemHostUnregister(reg + 1), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED); /* outside */
  EXPECT_RC(D.cuMemFreeHost(reg + 4096), CUDA_ERROR_INVALID_VALUE);

  /* pageable memory: no error from cuPointerGetAttributes, an error from cuPointerGetAttribute */
  char *pageable = malloc(1000);
  OK(get_attrs(pageable, &a));
  EXPECT(a.type == 0 && a.ctx == NULL && a.dptr == 0 && a.hptr == pageable && a.managed == 0 && a.id == 0,
         "pageable attributes"); /* the host pointer is the pointer itself (2 x H200) */
  EXPECT(get_attrs(reg, &a) == CUDA_SUCCESS && a.type == 0, "the unregistered first page is pageable");
  unsigned int t = 0;
  EXPECT_RC(D.cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, PTR(pageable)), CUDA_ERROR_INVALID_VALUE);
  OK(D.cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, PTR(pinned)));
  EXPECT(t == CU_MEMORYTYPE_HOST, "single attribute");

  /* device pointers never alias host memory */
  EXPECT(PTR(pageable) < d || PTR(pageable) >= d + MiB, "no aliasing");

  OK(D.cuMemHostUnregister(reg + 4096));
  OK(get_attrs(reg + 5000, &a));
  EXPECT(a.type == 0, "unregistered is pageable again");
  OK(D.cuMemFreeHost(pinned));
  EXPECT_RC(D.cuMemFreeHost(pinned), CUDA_ERROR_INVALID_VALUE);
  OK(D.cuMemFree_v2(m));
  OK(D.cuMemFree_v2(d1));
  OK(D.cuMemFree_v2(d));
  EXPECT_RC(D.cuMemFree_v2(d), CUDA_ERROR_INVALID_VALUE);
  OK(get_attrs((void *)(uintptr_t)d, &a));
  EXPECT(a.type == 0, "freed device memory is unknown");
  size_t fr, tot;
  OK(D.cuMemGetInfo_v2(&fr, &tot));
  EXPECT(fr <= tot && tot > 0, "mem info");
  free(pageable);
  free(reg);
}

static void test_copies(void)
{
  const size_t n = 3 * MiB + 123;
  unsigned char *src = malloc(n), *dst = malloc(n), *ref = malloc(n);
  void *pin_a, *pin_b;
  OK(D.cuMemAllocHost_v2(&pin_a, n));
  OK(D.cuMemHostAlloc(&pin_b, n, 0));
  CUdeviceptr d, d2, d1;
  OK(D.cuMemAlloc_v2(&d, n));
  OK(D.cuMemAlloc_v2(&d2, n));
  CUstream s;
  OK(D.cuStreamCreate(&s, 0));

  /* pageable H2D: the source may be overwritten right after the call */
  fill(src, n, 1);
  memcpy(ref, src, n);
  OK(D.cuMemcpyHtoD_v2(d, src, n));
  memset(src, 0, n);
  memset(dst, 0xee, n);
  OK(D.cuMemcpyDtoH_v2(dst, d, n));
  EXPECT(!memcmp(dst, ref, n), "pageable H2D + D2H bit for bit");

  /* pinned async both ways */
  fill(pin_a, n, 2);
  OK(D.cuMemcpyHtoDAsync_v2(d2, pin_a, n, s));
  OK(D.cuMemcpyDtoHAsync_v2(pin_b, d2, n, s));
  OK(D.cuStreamSynchronize(s));
  EXPECT(!memcmp(pin_a, pin_b, n), "pinned async H2D + D2H");

  /* D2D sync and async */
  OK(D.cuMemcpyDtoD_v2(d2, d, n));
  OK(D.cuMemcpyDtoH_v2(dst, d2, n));
  EXPECT(!memcmp(dst, ref, n), "D2D sync");
  fill(src, n, 3);
  OK(D.cuMemcpyHtoDAsync_v2(d, src, n, s)); /* pageable async: staged */
  OK(D.cuMemcpyDtoDAsync_v2(d2, d, n, s));
  OK(D.cuMemcpyDtoHAsync_v2(dst, d2, n, s)); /* pageable destination: complete on return */
  EXPECT(!memcmp(dst, src, n), "async chain H2D->D2D->D2H(pageable) complete on return");

  /* unified cuMemcpy / cuMemcpyAsync, all combinations */
  fill(src, n, 4);
  OK(D.cuMemcpy(d, PTR(src), n));
  OK(D.cuMemcpy(PTR(pin_a), d, n));
  EXPECT(!memcmp(pin_a, src, n), "unified H2D + D2H(pinned)");
  OK(D.cuMemcpy(PTR(dst), PTR(pin_a), n));
  EXPECT(!memcmp(dst, src, n), "unified host to host");
  OK(D.cuMemcpyAsync(d2, d, n, s));
  memset(dst, 0, n);
  OK(D.cuMemcpyAsync(PTR(dst), d2, n, s));
  EXPECT(!memcmp(dst, src, n), "unified async D2D + D2H(pageable)");
  OK(D.Memcpy_ptds(PTR(dst + 1), PTR(src), n - 1));
  EXPECT(!memcmp(dst + 1, src, n - 1), "cuMemcpy_ptds host to host, unaligned");

  /* managed as either side */
  CUdeviceptr m;
  OK(D.cuMemAllocManaged(&m, 65536, CU_MEM_ATTACH_GLOBAL));
  OK(D.cuMemcpyHtoD_v2(m, src, 65536));
  EXPECT(!memcmp((void *)(uintptr_t)m, src, 65536), "H2D into managed memory");
  OK(D.cuMemFree_v2(m));

  /* 2D: a 37 x 50 window at (5, 3) of a 64-pitch host image into a 128-pitch device image */
  {
    size_t hp = 64, dp = 128, w = 37, h = 50;
    unsigned char *img = malloc(hp * 60), *out = malloc(hp * 60);
    fill(img, hp * 60, 5);
    memset(out, 0, hp * 60);
    CUDA_MEMCPY2D c = { 0 };
    c.srcMemoryType = CU_MEMORYTYPE_HOST; c.srcHost = img; c.srcPitch = hp; c.srcXInBytes = 5; c.srcY = 3;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE; c.dstDevice = d; c.dstPitch = dp; c.dstXInBytes = 7; c.dstY = 2;
    c.WidthInBytes = w; c.Height = h;
    OK(D.cuMemcpy2D_v2(&c));
    CUDA_MEMCPY2D b = { 0 };
    b.srcMemoryType = CU_MEMORYTYPE_UNIFIED; b.srcDevice = d; b.srcPitch = dp; b.srcXInBytes = 7; b.srcY = 2;
    b.dstMemoryType = CU_MEMORYTYPE_UNIFIED; b.dstDevice = PTR(out); b.dstPitch = hp; b.dstXInBytes = 5; b.dstY = 3;
    b.WidthInBytes = w; b.Height = h;
    OK(D.cuMemcpy2DAsync_v2(&b, s));
    OK(D.cuStreamSynchronize(s));
    int ok = 1;
    for (size_t y = 0; y < 60; y++)
      for (size_t x = 0; x < hp; x++) {
        int inside = y >= 3 && y < 3 + h && x >= 5 && x < 5 + w;
        if (out[y * hp + x] != (inside ? img[y * hp + x] : 0))
          ok = 0;
      }
    EXPECT(ok, "2D window round trip");
    OK(D.cuMemcpy2DUnaligned_v2(&c));
    c.srcPitch = 20; /* < width */
    EXPECT_RC(D.cuMemcpy2D_v2(&c), CUDA_ERROR_INVALID_VALUE);
    c.srcPitch = hp;
    c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    EXPECT_RC(D.cuMemcpy2D_v2(&c), CUDA_ERROR_NOT_SUPPORTED);
    free(img);
    free(out);
  }

  /* 3D: a 10 x 6 x 4 box at (2, 1, 1) of a 16 x 8 x 6 host volume, through device memory and back */
  {
    size_t X = 16, Y = 8, Z = 6, vol = X * Y * Z;
    unsigned char *v = malloc(vol), *o = malloc(vol);
    fill(v, vol, 6);
    memset(o, 0, vol);
    CUDA_MEMCPY3D c = { 0 };
    c.srcMemoryType = CU_MEMORYTYPE_HOST; c.srcHost = v; c.srcPitch = X; c.srcHeight = Y;
    c.srcXInBytes = 2; c.srcY = 1; c.srcZ = 1;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE; c.dstDevice = d; c.dstPitch = 32; c.dstHeight = 10;
    c.WidthInBytes = 10; c.Height = 6; c.Depth = 4;
    OK(D.cuMemcpy3D_v2(&c));
    CUDA_MEMCPY3D b = { 0 };
    b.srcMemoryType = CU_MEMORYTYPE_DEVICE; b.srcDevice = d; b.srcPitch = 32; b.srcHeight = 10;
    b.dstMemoryType = CU_MEMORYTYPE_HOST; b.dstHost = o; b.dstPitch = X; b.dstHeight = Y;
    b.dstXInBytes = 2; b.dstY = 1; b.dstZ = 1;
    b.WidthInBytes = 10; b.Height = 6; b.Depth = 4;
    OK(D.cuMemcpy3DAsync_v2(&b, s));
    OK(D.cuStreamSynchronize(s));
    int ok = 1;
    for (size_t z = 0; z < Z; z++)
      for (size_t y = 0; y < Y; y++)
        for (size_t x = 0; x < X; x++) {
          size_t i = (z * Y + y) * X + x;
          int inside = z >= 1 && z < 5 && y >= 1 && y < 7 && x >= 2 && x < 12;
          if (o[i] != (inside ? v[i] : 0))
            ok = 0;
        }
    EXPECT(ok, "3D box round trip");
    c.dstHeight = 5; /* < Height with Depth > 1 */
    EXPECT_RC(D.cuMemcpy3D_v2(&c), CUDA_ERROR_INVALID_VALUE);
    free(v);
    free(o);
  }

  /* peer: device 0 -> device 1 -> device 0 */
  OK(D.cuCtxPushCurrent_v2(ctx1));
  OK(D.cuMemAlloc_v2(&d1, n));
  OK(D.cuCtxPopCurrent_v2(NULL));
  fill(src, n, 7);
  OK(D.cuMemcpyHtoD_v2(d, src, n));
  OK(D.cuMemcpyPeer(d1, ctx1, d, ctx0, n));
  OK(D.cuMemsetD8_v2(d, 0, n));
  OK(D.cuMemcpyPeerAsync(d, ctx0, d1, ctx1, n, s));
  OK(D.cuStreamSynchronize(s));
  OK(D.cuMemcpyDtoH_v2(dst, d, n));
  EXPECT(!memcmp(dst, src, n), "peer copies");
  EXPECT_RC(D.cuMemcpyPeer(d1, (CUcontext)(uintptr_t)0x1234, d, ctx0, n), CUDA_ERROR_INVALID_CONTEXT);

  /* memset */
  OK(D.cuMemsetD8Async(d, 0xab, 1000, s));
  OK(D.cuMemcpyDtoHAsync_v2(dst, d, 1001, s));
  EXPECT(dst[0] == 0xab && dst[999] == 0xab && dst[1000] == src[1000], "memset");

  /* batch, CUDA 12.8 ABI: pageable H2D, D2D, D2H into pinned */
  {
    fill(src, n, 8);
    CUdeviceptr dsts[3] = { d, d2, PTR(pin_b) }, srcs[3] = { PTR(src), d, d2 };
    size_t sizes[3] = { n, n, n }, fail = 0, idx0 = 0;
    CUmemcpyAttributes at = { 0 };
    at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    OK(D.Batch_v1(dsts, srcs, sizes, 3, &at, &idx0, 1, &fail, s));
    EXPECT(fail == SIZE_MAX, "failIdx ~0 on success");
    OK(D.cuStreamSynchronize(s));
    EXPECT(!memcmp(pin_b, src, n), "batch v1");
    EXPECT_RC(D.Batch_v1(dsts, srcs, sizes, 3, &at, &idx0, 1, &fail, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RC(D.Batch_v1(dsts, srcs, sizes, 3, &at, &idx0, 1, &fail, CU_STREAM_LEGACY), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RC(D.Batch_v1(dsts, srcs, sizes, 3, NULL, NULL, 0, &fail, s), CUDA_ERROR_INVALID_VALUE); /* no attributes */
    fill(src, n, 12);
    CUdeviceptr bad[3] = { d, d2 + n - 10, PTR(pin_b) };
    EXPECT_RC(D.Batch_v1(bad, srcs, sizes, 3, &at, &idx0, 1, &fail, s), CUDA_ERROR_INVALID_VALUE);
    EXPECT(fail == 1, "failIdx %zu", fail);
    OK(D.cuStreamSynchronize(s));
    OK(D.cuMemcpyDtoH_v2(dst, d, n));
    EXPECT(!memcmp(dst, src, n), "the copy before the refused one ran (2 x H200)");
    /* CUDA 13 ABI, and its per-thread variant on the per-thread stream (NULL) */
    fill(src, n, 9);
    CUdeviceptr d3[2] = { d, PTR(dst) }, s3[2] = { PTR(src), d };
    size_t z3[2] = { n, n };
    OK(D.cuMemcpyBatchAsync_v2(d3, s3, z3, 2, &at, &idx0, 1, s));
    EXPECT(!memcmp(dst, src, n), "batch v2 (pageable destination complete on return)");
    fill(src, n, 10);
    OK(D.Batch_v2_ptsz(d3, s3, z3, 2, &at, &idx0, 1, NULL));
    EXPECT(!memcmp(dst, src, n), "batch v2 ptsz on the per-thread stream");
  }

  /* per-thread sync copies */
  fill(src, n, 11);
  OK(D.HtoD_ptds(d, src, n));
  OK(D.DtoH_ptds(dst, d, n));
  EXPECT(!memcmp(dst, src, n), "ptds sync copies");
  OK(D.HtoDAsync_ptsz(d, pin_a, n, CU_STREAM_PER_THREAD));
  OK(D.DtoHAsync_ptsz(pin_b, d, n, NULL));
  OK(D.StreamSynchronize_ptsz(NULL));
  EXPECT(!memcmp(pin_a, pin_b, n), "ptsz async copies");

  OK(D.cuStreamDestroy_v2(s));
  OK(D.cuMemFree_v2(d1));
  OK(D.cuMemFree_v2(d));
  OK(D.cuMemFree_v2(d2));
  OK(D.cuMemFreeHost(pin_a));
  OK(D.cuMemFreeHost(pin_b));
  free(src);
  free(dst);
  free(ref);
}

static void test_copy_errors(void)
{
  CUdeviceptr d;
  char h[256];
  OK(D.cuMemAlloc_v2(&d, 4096));
  EXPECT_RC(D.cuMemcpyHtoD_v2(d + 4000, h, 200), CUDA_ERROR_INVALID_VALUE); /* past the end */
  EXPECT_RC(D.cuMemcpyHtoD_v2(d, NULL, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_RC(D.cuMemcpyDtoH_v2(NULL, d, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_RC(D.cuMemcpyHtoD_v2(PTR(h), h, 16), CUDA_ERROR_INVALID_VALUE); /* host memory as device */
  EXPECT_RC(D.cuMemcpy(0x10, 0x20, 64), CUDA_ERROR_INVALID_VALUE);        /* unmapped pageable */
  EXPECT_RC(D.cuMemcpyHtoD_v2(d, (void *)0x40, 64), CUDA_ERROR_INVALID_VALUE);
  OK(D.cuMemcpyHtoD_v2(d, NULL, 0));                                      /* size 0 */
  OK(D.cuMemcpyDtoD_v2(0, 0, 0));
  EXPECT_RC(D.cuMemcpyHtoDAsync_v2(d, h, 16, (CUstream)(uintptr_t)0x12345), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_RC(D.cuStreamSynchronize((CUstream)(uintptr_t)0x12345), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_RC(D.cuEventQuery((CUevent)(uintptr_t)0x12345), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_RC(D.cuStreamDestroy_v2(NULL), CUDA_ERROR_INVALID_HANDLE);
  CUdeviceptr e;
  OK(D.cuMemAlloc_v2(&e, 4096));
  OK(D.cuMemFree_v2(e));
  EXPECT_RC(D.cuMemcpyHtoD_v2(e, h, 16), CUDA_ERROR_INVALID_VALUE); /* freed */
  EXPECT_RC(D.cuMemsetD8_v2(d + 4090, 0, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_RC(D.cuMemAlloc_v2(&e, 0), CUDA_ERROR_INVALID_VALUE);
  OK(D.cuMemFree_v2(d));
}

static void test_stream_semantics(void)
{
  CUstream blocking, nonblocking;
  OK(D.cuStreamCreate(&blocking, 0));
  OK(D.cuStreamCreateWithPriority(&nonblocking, CU_STREAM_NON_BLOCKING, -1));

  /* legacy stream waits for earlier work on a blocking stream */
  reset_flags();
  OK(D.cuLaunchHostFunc(blocking, slow_set_a, NULL));
  OK(D.cuLaunchHostFunc(NULL, probe_a, NULL));
  OK(D.cuStreamSynchronize(NULL));
  EXPECT(__atomic_load_n(&seen_a, __ATOMIC_SEQ_CST) == 1, "legacy op waited for the blocking stream");
  /* ... but not for a non-blocking stream */
  reset_flags();
  OK(D.cuLaunchHostFunc(nonblocking, slow_set_a, NULL));
  OK(D.cuLaunchHostFunc(CU_STREAM_LEGACY, probe_a, NULL));
  OK(D.cuStreamSynchronize(CU_STREAM_LEGACY));
  EXPECT(__atomic_load_n(&seen_a, __ATOMIC_SEQ_CST) == 0, "legacy op did not wait for a non-blocking stream");
  EXPECT_RC(D.cuStreamQuery(nonblocking), CUDA_ERROR_NOT_READY);
  OK(D.cuStreamSynchronize(nonblocking));
  OK(D.cuStreamQuery(nonblocking));
  /* a blocking stream waits for earlier legacy work; a non-blocking one does not */
  reset_flags();
  OK(D.cuLaunchHostFunc(NULL, slow_set_a, NULL));
  OK(D.cuLaunchHostFunc(blocking, probe_a, NULL));
  OK(D.cuLaunchHostFunc(nonblocking, probe_b, NULL));
  OK(D.cuStreamSynchronize(nonblocking));
  OK(D.cuStreamSynchronize(blocking));
  EXPECT(__atomic_load_n(&seen_a, __ATOMIC_SEQ_CST) == 1, "blocking stream waited for legacy work");
  EXPECT(__atomic_load_n(&seen_b, __ATOMIC_SEQ_CST) == 0, "non-blocking stream did not wait");
  /* the per-thread default stream is a blocking stream: it waits for legacy work ... */
  reset_flags();
  OK(D.cuLaunchHostFunc(NULL, slow_set_a, NULL));
  OK(D.LaunchHostFunc_ptsz(NULL, probe_a, NULL));
  OK(D.StreamSynchronize_ptsz(NULL));
  EXPECT(__atomic_load_n(&seen_a, __ATOMIC_SEQ_CST) == 1, "per-thread stream waited for legacy work");
  /* ... and the legacy stream waits for it */
  reset_flags();
  OK(D.LaunchHostFunc_ptsz(CU_STREAM_PER_THREAD, slow_set_a, NULL));
  EXPECT_RC(D.StreamQuery_ptsz(NULL), CUDA_ERROR_NOT_READY);
  OK(D.cuLaunchHostFunc(CU_STREAM_LEGACY, probe_a, NULL));
  OK(D.cuStreamSynchronize(CU_STREAM_LEGACY));
  EXPECT(__atomic_load_n(&seen_a, __ATOMIC_SEQ_CST) == 1, "legacy stream waited for the per-thread stream");
  /* legacy cuStreamSynchronize(NULL) is not the per-thread stream */
  reset_flags();
  OK(D.LaunchHostFunc_ptsz(NULL, slow_set_a, NULL));
  OK(D.cuStreamSynchronize(nonblocking));
  EXPECT(__atomic_load_n(&flag_a, __ATOMIC_SEQ_CST) == 0, "per-thread work still running");
  OK(D.cuCtxSynchronize());
  EXPECT(__atomic_load_n(&flag_a, __ATOMIC_SEQ_CST) == 1, "cuCtxSynchronize waits for every stream");

  /* host functions run in order */
  order_n = 0;
  for (int i = 0; i < 40; i++)
    OK(D.cuLaunchHostFunc(blocking, append_order, (void *)(intptr_t)i));
  OK(D.cuStreamSynchronize(blocking));
  int ordered = order_n == 40;
  for (int i = 0; i < order_n; i++)
    ordered &= order_log[i] == i;
  EXPECT(ordered, "host functions in stream order");

  /* events */
  CUevent e1, e2, never;
  OK(D.cuEventCreate(&e1, 0));
  OK(D.cuEventCreate(&e2, 0));
  OK(D.cuEventCreate(&never, CU_EVENT_DISABLE_TIMING));
  OK(D.cuEventQuery(never));
  OK(D.cuEventSynchronize(never));
  reset_flags();
  OK(D.cuEventRecord(e1, blocking));
  OK(D.cuLaunchHostFunc(blocking, slow_set_a, NULL));
  OK(D.cuEventRecord(e2, blocking));
  EXPECT_RC(D.cuEventQuery(e2), CUDA_ERROR_NOT_READY);
  OK(D.cuStreamWaitEvent(nonblocking, e2, 0));
  OK(D.cuStreamWaitEvent(nonblocking, never, 0));
  OK(D.cuLaunchHostFunc(nonblocking, probe_b, NULL));
  OK(D.cuStreamSynchronize(nonblocking));
  EXPECT(__atomic_load_n(&seen_b, __ATOMIC_SEQ_CST) == 1, "cuStreamWaitEvent ordered the streams");
  OK(D.cuEventSynchronize(e2));
  OK(D.cuEventQuery(e2));
  float ms = -1;
  OK(D.cuEventElapsedTime_v2(&ms, e1, e2));
  EXPECT(ms >= 50.0f && ms < 5000.0f, "elapsed %.3f ms around a 60 ms host function", ms);
  EXPECT_RC(D.cuEventElapsedTime_v2(&ms, e1, never), CUDA_ERROR_INVALID_HANDLE);
  OK(D.cuEventDestroy_v2(e1));
  OK(D.cuEventDestroy_v2(e2));
  OK(D.cuEventDestroy_v2(never));
  EXPECT_RC(D.cuEventDestroy_v2(never), CUDA_ERROR_INVALID_HANDLE);

  /* write-value into pinned memory, by host pointer and by device alias, in stream order */
  uint32_t *flagw;
  OK(D.cuMemHostAlloc((void **)&flagw, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
  CUdeviceptr flag_dev;
  OK(D.cuMemHostGetDevicePointer_v2(&flag_dev, flagw, 0));
  flagw[0] = 0;
  flagw[1] = 0;
  reset_flags();
  OK(D.cuLaunchHostFunc(blocking, slow_set_a, NULL));
  OK(D.cuStreamWriteValue32_v2(blocking, PTR(flagw), 7, 0));
  OK(D.cuStreamWriteValue32_v2(blocking, flag_dev + 4, 9, 0));
  EXPECT(__atomic_load_n(&flagw[0], __ATOMIC_ACQUIRE) == 0, "write-value waits its turn");
  OK(D.cuStreamSynchronize(blocking));
  EXPECT(__atomic_load_n(&flagw[0], __ATOMIC_ACQUIRE) == 7 && flagw[1] == 9, "write-value landed");
  EXPECT_RC(D.cuStreamWriteValue32_v2(blocking, PTR(flagw) + 2, 1, 0), CUDA_ERROR_INVALID_VALUE);
  uint32_t stackword = 0;
  EXPECT_RC(D.cuStreamWriteValue32_v2(blocking, PTR(&stackword), 1, 0), CUDA_ERROR_INVALID_VALUE);
  /* registered memory, written although the program made it read-only (a DMA writes through) */
  uint32_t *regw = aligned_alloc(4096, 8192);
  memset(regw, 0, 8192);
  OK(D.cuMemHostRegister_v2(regw, 8192, 0));
  OK(D.cuStreamWriteValue32_v2(blocking, PTR(regw + 1024), 5, 0));
  OK(D.cuStreamSynchronize(blocking));
  EXPECT(regw[1024] == 5, "write-value into registered memory");
  OK(D.cuMemHostUnregister(regw));
  free(regw);
  OK(D.cuMemFreeHost(flagw));

  OK(D.cuStreamDestroy_v2(blocking));
  OK(D.cuStreamDestroy_v2(nonblocking));
  EXPECT_RC(D.cuStreamQuery(blocking), CUDA_ERROR_INVALID_HANDLE);
}

static void test_capture(void)
{
  const size_t n = 256 * 1024;
  CUstream s;
  OK(D.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  unsigned char *hb = malloc(n), *out = malloc(n);
  CUdeviceptr d;
  OK(D.cuMemAlloc_v2(&d, n));
  OK(D.cuMemsetD8_v2(d, 0x11, n));
  memset(hb, 0xa1, n);
  memset(out, 0, n);
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  OK(D.cuStreamIsCapturing(s, &st));
  EXPECT(st == CU_STREAM_CAPTURE_STATUS_NONE, "not capturing");
  OK(D.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(D.cuStreamIsCapturing(s, &st));
  EXPECT(st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "capturing");
  EXPECT_RC(D.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
  OK(D.cuMemcpyHtoDAsync_v2(d, hb, n, s));
  OK(D.cuMemcpyDtoHAsync_v2(out, d, n, s));
  CUgraph g;
  OK(D.cuStreamEndCapture(s, &g));
  OK(D.cuStreamIsCapturing(s, &st));
  EXPECT(st == CU_STREAM_CAPTURE_STATUS_NONE, "capture ended");
  unsigned char probe[4];
  OK(D.cuMemcpyDtoH_v2(probe, d, 4));
  EXPECT(probe[0] == 0x11 && out[0] == 0, "captured copies did not run");
  memset(hb, 0xb2, n); /* the graph reads the host source when it runs */
  CUgraphExec ge;
  OK(D.cuGraphInstantiateWithFlags(&ge, g, 0));
  OK(D.cuGraphLaunch(ge, s));
  OK(D.cuStreamSynchronize(s));
  EXPECT(out[0] == 0xb2 && out[n - 1] == 0xb2, "graph replay copied current host data");
  memset(hb, 0xc3, n);
  OK(D.cuGraphLaunch(ge, s));
  OK(D.cuStreamSynchronize(s));
  EXPECT(out[n / 2] == 0xc3, "second replay");
  OK(D.cuGraphExecDestroy(ge));
  OK(D.cuGraphDestroy(g));
  EXPECT_RC(D.cuGraphDestroy(g), CUDA_ERROR_INVALID_VALUE);
  /* the legacy stream cannot capture; sync copies refuse a capturing per-thread stream */
  EXPECT_RC(D.cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  OK(D.BeginCapture_ptsz(NULL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  OK(D.IsCapturing_ptsz(CU_STREAM_PER_THREAD, &st));
  EXPECT(st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "per-thread stream capturing");
  EXPECT_RC(D.HtoD_ptds(d, hb, 16), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  OK(D.IsCapturing_ptsz(CU_STREAM_PER_THREAD, &st));
  EXPECT(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED, "a sync copy invalidated the capture");
  EXPECT_RC(D.HtoDAsync_ptsz(d, hb, 16, NULL), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  g = (CUgraph)&g;
  EXPECT_RC(D.EndCapture_ptsz(NULL, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT(g == NULL, "an invalidated capture ends without a graph");
  OK(D.IsCapturing_ptsz(CU_STREAM_PER_THREAD, &st));
  EXPECT(st == CU_STREAM_CAPTURE_STATUS_NONE, "invalidated capture ended");

  /* a blocking stream captures: the legacy stream is unusable (and its use invalidates) */
  CUstream b;
  OK(D.cuStreamCreate(&b, 0));
  OK(D.cuStreamBeginCapture_v2(b, CU_STREAM_CAPTURE_MODE_RELAXED));
  EXPECT_RC(D.cuStreamIsCapturing(NULL, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  OK(D.cuStreamIsCapturing(b, &st));
  EXPECT(st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "querying the legacy stream does not invalidate");
  EXPECT_RC(D.cuMemcpyHtoD_v2(d, hb, 16), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  EXPECT_RC(D.cuStreamEndCapture(b, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  /* a prohibited call (registering) in global mode; allowed once the thread is relaxed */
  OK(D.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  OK(D.cuThreadExchangeStreamCaptureMode(&mode));
  EXPECT(mode == CU_STREAM_CAPTURE_MODE_GLOBAL, "threads start in global mode");
  OK(D.cuMemHostRegister_v2(hb, n, 0));
  OK(D.cuMemHostUnregister(hb));
  OK(D.cuThreadExchangeStreamCaptureMode(&mode));
  EXPECT_RC(D.cuMemHostRegister_v2(hb, n, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_RC(D.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  OK(D.cuMemHostRegister_v2(hb, n, 0));
  OK(D.cuMemHostUnregister(hb));
  /* synchronizing another stream is prohibited during a global capture, not a relaxed one; async
   * copies on it are not (2 x H200) */
  OK(D.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(D.cuMemcpyHtoDAsync_v2(d, hb, 16, b));
  EXPECT_RC(D.cuStreamSynchronize(b), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  OK(D.cuStreamIsCapturing(s, &st));
  EXPECT(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED, "synchronizing another stream invalidated the capture");
  EXPECT_RC(D.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  OK(D.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  OK(D.cuStreamSynchronize(b));
  OK(D.cuStreamEndCapture(s, &g));
  OK(D.cuGraphDestroy(g));
  OK(D.cuStreamDestroy_v2(b));
  OK(D.cuStreamDestroy_v2(s));
  OK(D.cuMemFree_v2(d));
  free(hb);
  free(out);
}

static void test_getprocaddress(void)
{
  void *fn = NULL;
  CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  OK(D.cuGetProcAddress_v2("cuGetProcAddress", &fn, 12000, 0, &qs));
  EXPECT(fn == dlsym(lib, "cuGetProcAddress_v2") && qs == CU_GET_PROC_ADDRESS_SUCCESS, "self lookup 12000");
  OK(D.cuGetProcAddress_v2("cuGetProcAddress", &fn, 11030, 0, &qs));
  EXPECT(fn == dlsym(lib, "cuGetProcAddress"), "self lookup 11030 gives v1");
  EXPECT_RC(D.cuGetProcAddress_v2("cuGetProcAddress", &fn, 11000, 0, &qs), CUDA_ERROR_NOT_FOUND);
  EXPECT(fn == NULL && qs == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, "too old a version");
  EXPECT_RC(D.cuGetProcAddress_v2("cuNoSuchFunction", &fn, 13000, 0, &qs), CUDA_ERROR_NOT_FOUND);
  EXPECT(fn == NULL && qs == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "unknown name");
  OK(D.GetProcAddress_v1("cuMemcpyHtoD", &fn, 12000, 0));
  EXPECT(fn == dlsym(lib, "cuMemcpyHtoD_v2"), "v1 ABI lookup");

  static const struct { const char *name; int ver; int flags; const char *sym; } want[] = {
    { "cuMemcpyHtoD", 12000, 0, "cuMemcpyHtoD_v2" },
    { "cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemcpyHtoD_v2_ptds" },
    { "cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemcpyHtoD_v2" },
    { "cuMemcpyDtoHAsync", 13000, 2, "cuMemcpyDtoHAsync_v2_ptsz" },
    { "cuMemcpyAsync", 13000, 2, "cuMemcpyAsync_ptsz" },
    { "cuMemcpy", 13000, 2, "cuMemcpy_ptds" },
    { "cuMemcpy3DAsync", 13000, 0, "cuMemcpy3DAsync_v2" },
    { "cuMemcpyPeerAsync", 13000, 2, "cuMemcpyPeerAsync_ptsz" },
    { "cuMemcpyBatchAsync", 12080, 0, "cuMemcpyBatchAsync" },
    { "cuMemcpyBatchAsync", 12090, 2, "cuMemcpyBatchAsync_ptsz" },
    { "cuMemcpyBatchAsync", 13000, 0, "cuMemcpyBatchAsync_v2" },
    { "cuMemcpyBatchAsync", 13000, 2, "cuMemcpyBatchAsync_v2_ptsz" },
    { "cuMemHostRegister", 12000, 0, "cuMemHostRegister_v2" },
    { "cuMemHostRegister", 6000, 0, "cuMemHostRegister" },
    { "cuStreamWriteValue32", 12000, 0, "cuStreamWriteValue32_v2" },
    { "cuStreamWriteValue32", 11000, 2, "cuStreamWriteValue32_ptsz" },
    { "cuStreamSynchronize", 13000, 2, "cuStreamSynchronize_ptsz" },
    { "cuStreamBeginCapture", 12000, 2, "cuStreamBeginCapture_v2_ptsz" },
    { "cuEventElapsedTime", 13000, 0, "cuEventElapsedTime_v2" },
    { "cuEventElapsedTime", 12000, 0, "cuEventElapsedTime" },
    { "cuCtxCreate", 13000, 0, "cuCtxCreate_v4" },
    { "cuGraphInstantiate", 12000, 0, "cuGraphInstantiateWithFlags" },
    { "cuInit", 13000, 2, "cuInit" },
    { "cuMemAlloc", 13000, 2, "cuMemAlloc_v2" },
    { "cuPointerGetAttributes", 13000, 0, "cuPointerGetAttributes" },
    { "cuMemsetD8", 13000, 2, "cuMemsetD8_v2_ptds" },
    { "cuDevicePrimaryCtxRelease", 13000, 0, "cuDevicePrimaryCtxRelease_v2" },
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    fn = NULL;
    CUresult r = D.cuGetProcAddress_v2(want[i].name, &fn, want[i].ver, (cuuint64_t)want[i].flags, &qs);
    void *exp = dlsym(lib, want[i].sym);
    EXPECT(r == CUDA_SUCCESS && exp && fn == exp, "cuGetProcAddress(%s, %d, %d) -> %s", want[i].name,
           want[i].ver, want[i].flags, want[i].sym);
  }
  /* call through the answer */
  __typeof__(cuMemcpyHtoD_v2) *htod = NULL;
  __typeof__(cuMemcpyDtoH_v2) *dtoh = NULL;
  OK(D.cuGetProcAddress_v2("cuMemcpyHtoD", (void **)&htod, 13000, 2, NULL));
  OK(D.cuGetProcAddress_v2("cuMemcpyDtoH", (void **)&dtoh, 13000, 0, NULL));
  CUdeviceptr d;
  char a[100], b[100];
  fill(a, sizeof a, 12);
  OK(D.cuMemAlloc_v2(&d, sizeof a));
  OK(htod(d, a, sizeof a));
  OK(dtoh(b, d, sizeof b));
  EXPECT(!memcmp(a, b, sizeof a), "copy through cuGetProcAddress pointers");
  OK(D.cuMemFree_v2(d));
}

/* Several threads, each with its own stream and its own per-thread stream, copying and checking. */
static void *worker(void *arg)
{
  unsigned seed = (unsigned)(uintptr_t)arg;
  if (D.cuCtxSetCurrent(ctx0) != CUDA_SUCCESS)
    return (void *)1;
  const size_t n = 300 * 1024 + seed;
  unsigned char *src = malloc(n), *dst = malloc(n);
  void *pin;
  CUdeviceptr d;
  CUstream s;
  uintptr_t bad = 0;
  if (D.cuMemHostAlloc(&pin, n, 0) || D.cuMemAlloc_v2(&d, n) || D.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
    return (void *)1;
  for (int it = 0; it < 20; it++) {
    fill(src, n, seed * 100 + (unsigned)it);
    if (it & 1) {
      bad |= D.HtoDAsync_ptsz(d, src, n, NULL);
      bad |= D.DtoHAsync_ptsz(pin, d, n, NULL);
      bad |= D.StreamSynchronize_ptsz(NULL);
      bad |= (uintptr_t)(memcmp(pin, src, n) != 0);
    } else {
      bad |= D.cuMemcpyHtoDAsync_v2(d, src, n, s);
      bad |= D.cuMemcpyDtoHAsync_v2(dst, d, n, s);
      bad |= (uintptr_t)(memcmp(dst, src, n) != 0);
    }
  }
  bad |= D.cuStreamDestroy_v2(s);
  bad |= D.cuMemFree_v2(d);
  bad |= D.cuMemFreeHost(pin);
  free(src);
  free(dst);
  return (void *)bad;
}

/* A destroyed context, or a reset primary context, takes its allocations and streams along. */
static void test_teardown(void)
{
  struct attrs a;
  char *reg = aligned_alloc(4096, 2 * 4096);
  for (int reset = 0; reset < 2; reset++) {
    CUcontext c = ctx0;
    if (reset)
      OK(D.cuCtxSetCurrent(ctx0));
    else
      OK(D.CtxCreate_v2(&c, 0, 1));
    CUdeviceptr d;
    void *pinned;
    CUstream s;
    OK(D.cuMemAlloc_v2(&d, 4096));
    OK(D.cuMemHostAlloc(&pinned, 4096, 0));
    OK(D.cuMemHostRegister_v2(reg, 2 * 4096, 0));
    OK(D.cuStreamCreate(&s, 0));
    if (reset)
      OK(D.cuDevicePrimaryCtxReset_v2(0));
    else
      OK(D.cuCtxDestroy_v2(c));
    OK(get_attrs((void *)(uintptr_t)d, &a));
    EXPECT(a.type == 0, "device memory gone with the context (reset %d)", reset);
    OK(get_attrs(pinned, &a));
    EXPECT(a.type == 0, "pinned memory gone with the context (reset %d)", reset);
    /* registrations go with their context (2 x H200, driver 580) */
    EXPECT_RC(D.cuMemHostUnregister(reg), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    EXPECT_RC(D.cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
  }
  OK(D.cuCtxSetCurrent(ctx0));
  free(reg);
}

static void test_threads(void)
{
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
  int ok = 1;
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    ok &= r == NULL;
  }
  EXPECT(ok, "four threads copying concurrently");
}

/* A registration whose pages did not come across the fork (MADV_DONTFORK, as the shim maps its pool)
 * is forgotten in the child, which may map fresh memory there (pageable); one whose pages came
 * across stays registered. The real driver cannot be used in a forked child at all; this is the
 * fake's model of the memory a child sees, and the stale table made the child's copies fail. */
static void test_fork_registrations(void)
{
  const size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  char *gone = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char *kept = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CUdeviceptr d;
  /* 4 pages not inherited, the first 2 registered: a 4-page copy from there in the child starts
   * inside the stale registration and runs past its end, which the fake refuses while it remembers */
  EXPECT(gone != MAP_FAILED && kept != MAP_FAILED && madvise(gone, 4 * ps, MADV_DONTFORK) == 0,
         "two mappings, one MADV_DONTFORK");
  OK(D.cuMemAlloc_v2(&d, 4 * ps));
  OK(D.cuMemHostRegister_v2(gone, 2 * ps, 0));
  OK(D.cuMemHostRegister_v2(kept, 2 * ps, 0));
  pid_t pid = fork();
  if (pid == 0) {
    int bad = 0;
    char *fresh = mmap(gone, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (fresh != gone)
      _exit(100); /* the hole is not free: the test cannot place its mapping */
    unsigned flags;
    bad |= D.cuMemcpyHtoD_v2(d, fresh, 4 * ps) != CUDA_SUCCESS;                      /* 1: pageable now */
    bad |= (D.cuMemHostUnregister(fresh) != CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED) << 1; /* 2: forgotten */
    bad |= (D.cuMemHostGetFlags(&flags, kept) != CUDA_SUCCESS) << 2;                  /* 4: still known */
    _exit(bad);
  }
  int status = -1;
  waitpid(pid, &status, 0);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  EXPECT(code == 0, "forked child: a DONTFORK registration is forgotten, a copied one kept (child code %d:"
         " 1 copy into a fresh mapping at the old address failed, 2 still registered, 4 kept one lost)", code);
  OK(D.cuMemHostUnregister(gone));
  OK(D.cuMemHostUnregister(kept));
  OK(D.cuMemFree_v2(d));
  munmap(gone, 4 * ps);
  munmap(kept, 2 * ps);
}

static void test_fork(void)
{
  CUstream s;
  OK(D.cuStreamCreate(&s, 0));
  OK(D.cuLaunchHostFunc(s, slow_set_a, NULL)); /* a worker is busy while we fork */
  pid_t pid = fork();
  if (pid == 0)
    _exit(0); /* a child that never calls the fake */
  int status = -1;
  waitpid(pid, &status, 0);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked child exits cleanly");
  pid = fork();
  if (pid == 0)
    exit(0); /* with exit handlers (the call-log destructor) */
  waitpid(pid, &status, 0);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked child runs exit handlers cleanly");
  OK(D.cuStreamSynchronize(s));
  OK(D.cuStreamDestroy_v2(s));
  test_fork_registrations();
}

/* ---- modes run in a child process with their own environment ------------------------------------- */

static int run_self(const char *mode, const char *envname, const char *envval)
{
  pid_t pid = fork();
  if (pid == 0) {
    setenv(envname, envval, 1);
    execl("/proc/self/exe", "fake_selftest", mode, (char *)NULL);
    _exit(127);
  }
  int status = -1;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void setup_ctx(void)
{
  if (D.cuInit(0) || D.cuDevicePrimaryCtxRetain(&ctx0, 0) || D.cuCtxSetCurrent(ctx0)) {
    fprintf(stderr, "fake_selftest: cannot set up a context\n");
    exit(2);
  }
}

/* FAKECUDA_GBPS=1: a 16 MiB async D2H into pinned memory takes ~16.8 ms and lands in pieces. */
static void mode_timing(void)
{
  setup_ctx();
  const size_t n = 16 * MiB;
  unsigned char *pin, *src = malloc(n), *pg = malloc(n);
  CUdeviceptr d;
  CUstream s;
  OK(D.cuMemHostAlloc((void **)&pin, n, 0));
  OK(D.cuMemAlloc_v2(&d, n));
  OK(D.cuStreamCreate(&s, 0));
  memset(src, 0x3c, n);
  OK(D.cuMemcpyHtoD_v2(d, src, n));
  OK(D.cuCtxSynchronize());
  memset(pin, 0, n);
  CUevent a, b;
  OK(D.cuEventCreate(&a, 0));
  OK(D.cuEventCreate(&b, 0));
  OK(D.cuEventRecord(a, s));
  uint64_t t0 = now_ns();
  OK(D.cuMemcpyDtoHAsync_v2(pin, d, n, s));
  uint64_t t1 = now_ns();
  OK(D.cuEventRecord(b, s));
  EXPECT(pin[n - 1] == 0 && pin[n / 2] == 0, "async D2H into pinned incomplete right after the call");
  EXPECT(t1 - t0 < 5000000ull, "async call returned in %.3f ms", (double)(t1 - t0) / 1e6);
  EXPECT_RC(D.cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  /* watch it arrive: some time it is partly there */
  int partial = 0;
  while (D.cuStreamQuery(s) == CUDA_ERROR_NOT_READY) {
    if (__atomic_load_n(&pin[0], __ATOMIC_RELAXED) == 0x3c && __atomic_load_n(&pin[n - 1], __ATOMIC_RELAXED) == 0)
      partial = 1;
    struct timespec nap = { 0, 100000 };
    nanosleep(&nap, NULL);
  }
  EXPECT(partial, "partially written data observed");
  OK(D.cuStreamSynchronize(s));
  int all = 1;
  for (size_t i = 0; i < n; i++)
    all &= pin[i] == 0x3c;
  EXPECT(all, "complete after cuStreamSynchronize");
  float ms = 0;
  OK(D.cuEventElapsedTime_v2(&ms, a, b));
  EXPECT(ms > 15.0f && ms < 10000.0f, "16 MiB at 1 GB/s took %.2f ms", ms);

  /* sync pageable H2D returns after staging, before the DMA finishes */
  t0 = now_ns();
  OK(D.cuMemcpyHtoD_v2(d, src, n));
  t1 = now_ns();
  EXPECT_RC(D.cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
  printf("  sync pageable H2D of 16 MiB at 1 GB/s returned after %.2f ms\n", (double)(t1 - t0) / 1e6);
  /* sync D2H into pageable memory returns complete */
  memset(pg, 0, n);
  t0 = now_ns();
  OK(D.cuMemcpyDtoH_v2(pg, d, n));
  t1 = now_ns();
  EXPECT(pg[0] == 0x3c && pg[n - 1] == 0x3c, "sync D2H into pageable complete on return");
  EXPECT(t1 - t0 > 15000000ull, "sync D2H took %.2f ms", (double)(t1 - t0) / 1e6);
  /* sync pinned H2D waits */
  OK(D.cuCtxSynchronize());
  t0 = now_ns();
  OK(D.cuMemcpyHtoD_v2(d, pin, n));
  t1 = now_ns();
  OK(D.cuStreamQuery(NULL));
  EXPECT(t1 - t0 > 15000000ull, "sync pinned H2D took %.2f ms", (double)(t1 - t0) / 1e6);

  /* a DMA writes through pages the program protected (the shim's guard relies on this) */
  char *reg = aligned_alloc(4096, MiB);
  memset(reg, 0, MiB);
  OK(D.cuMemHostRegister_v2(reg, MiB, 0));
  OK(D.cuMemcpyDtoHAsync_v2(pin, d, MiB, s)); /* pinned first: write through its alias */
  {
    EXPECT(mprotect(pin, MiB, PROT_NONE) == 0 && mprotect(reg, MiB, PROT_NONE) == 0, "mprotect");
    OK(D.cuMemcpyDtoHAsync_v2(reg, d, MiB, s));
    OK(D.cuStreamSynchronize(s));
    EXPECT(mprotect(pin, MiB, PROT_READ | PROT_WRITE) == 0 && mprotect(reg, MiB, PROT_READ | PROT_WRITE) == 0, "unprotect");
    EXPECT(pin[MiB - 1] == 0x3c && reg[0] == 0x3c && reg[MiB - 1] == 0x3c, "DMA wrote through PROT_NONE");
  }
  OK(D.cuMemHostUnregister(reg));
  free(reg);
  OK(D.cuEventDestroy_v2(a));
  OK(D.cuEventDestroy_v2(b));
  OK(D.cuStreamDestroy_v2(s));
  OK(D.cuMemFreeHost(pin));
  OK(D.cuMemFree_v2(d));
  free(src);
  free(pg);
}

/* FAKECUDA_CALL_LOG: counted per exported symbol; a forked child adds nothing. */
static void mode_calllog(void)
{
  setup_ctx();
  CUdeviceptr d;
  char h[64] = { 0 };
  OK(D.cuMemAlloc_v2(&d, 64));
  OK(D.cuMemcpyHtoD_v2(d, h, 64));
  OK(D.cuMemcpyHtoD_v2(d, h, 64));
  OK(D.HtoD_ptds(d, h, 64));
  pid_t pid = fork();
  if (pid == 0)
    exit(0);
  waitpid(pid, NULL, 0);
}

static void check_calllog(const char *path)
{
  FILE *f = fopen(path, "r");
  EXPECT(f != NULL, "call log written");
  if (!f)
    return;
  char name[128];
  unsigned long cnt;
  int init = 0, legacy = 0, ptds = 0, lines = 0;
  while (fscanf(f, "%127s %lu", name, &cnt) == 2) {
    lines++;
    if (!strcmp(name, "cuInit")) {
      init++;
      EXPECT(cnt == 1, "cuInit %lu", cnt);
    } else if (!strcmp(name, "cuMemcpyHtoD_v2")) {
      legacy++;
      EXPECT(cnt == 2, "cuMemcpyHtoD_v2 %lu", cnt);
    } else if (!strcmp(name, "cuMemcpyHtoD_v2_ptds")) {
      ptds++;
      EXPECT(cnt == 1, "cuMemcpyHtoD_v2_ptds %lu", cnt);
    }
  }
  fclose(f);
  EXPECT(init == 1 && legacy == 1 && ptds == 1 && lines == 6, "call log lines: %d (cuInit %d)", lines, init);
}

/* FAKECUDA_FAIL=hostalloc,register,writevalue */
static void mode_fail(void)
{
  setup_ctx();
  void *p;
  EXPECT_RC(D.cuMemHostAlloc(&p, 4096, 0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_RC(D.cuMemAllocHost_v2(&p, 4096), CUDA_ERROR_OUT_OF_MEMORY);
  char *m = aligned_alloc(4096, 8192);
  EXPECT_RC(D.cuMemHostRegister_v2(m, 8192, 0), CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr d;
  OK(D.cuMemAlloc_v2(&d, 64));
  EXPECT_RC(D.cuStreamWriteValue32_v2(NULL, d, 1, 0), CUDA_ERROR_NOT_SUPPORTED);
  free(m);
}

int main(int argc, char **argv)
{
  load_driver();
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "timing"))
    mode_timing();
  else if (!strcmp(mode, "calllog"))
    mode_calllog();
  else if (!strcmp(mode, "fail"))
    mode_fail();
  if (*mode) {
    printf("fake_selftest %s: %d passed, %d failed\n", mode, passed, failed);
    return failed ? 1 : 0;
  }

  test_init();
  test_memory_kinds();
  test_copies();
  test_copy_errors();
  test_stream_semantics();
  test_capture();
  test_getprocaddress();
  test_teardown();
  test_threads();
  test_fork();

  if (getenv("FAKE_SELFTEST_NO_CHILDREN")) { /* e.g. under valgrind, where re-exec is awkward */
    printf("fake_selftest: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
  }
  EXPECT(run_self("timing", "FAKECUDA_GBPS", "1") == 0, "timing mode (FAKECUDA_GBPS=1)");
  EXPECT(run_self("fail", "FAKECUDA_FAIL", "hostalloc,register,writevalue") == 0, "fail mode");
  char path[] = "/tmp/fake_selftest_calllog_XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0)
    close(fd);
  EXPECT(run_self("calllog", "FAKECUDA_CALL_LOG", path) == 0, "calllog mode");
  check_calllog(path);
  unlink(path);

  printf("fake_selftest: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
