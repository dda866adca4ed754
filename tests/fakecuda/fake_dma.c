/* fake_dma.c: the fake's DMA engine, run on stream worker threads. It moves a 1D/2D/3D copy in
 * pieces of at most 1 MiB, sleeping so that the copy takes FAKECUDA_LATENCY_US + bytes/FAKECUDA_GBPS,
 * and reaches registered host memory through fault-free system calls so that, like a real DMA
 * engine, it writes through pages the program has mprotect()ed. */
#include "fake_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define FK_PIECE (1u << 20)

static pthread_mutex_t procmem_mu = PTHREAD_MUTEX_INITIALIZER;
static int procmem_fd = -1;

void fk_dma_reset_after_fork(void)
{
  /* The inherited descriptor still names the parent's memory: never use it here. */
  if (procmem_fd >= 0)
    close(procmem_fd);
  procmem_fd = -1;
  pthread_mutex_init(&procmem_mu, NULL);
}

static int get_procmem(void)
{
  pthread_mutex_lock(&procmem_mu);
  if (procmem_fd < 0)
    procmem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
  int fd = procmem_fd;
  pthread_mutex_unlock(&procmem_mu);
  return fd;
}

/* Copies n bytes between the program's memory at `host` and the fake's `local` buffer without
 * ever faulting: process_vm_{readv,writev} first, /proc/self/mem (which, like a debugger, writes
 * through PROT_NONE) for what those refuse. Returns 0, or -1 when the memory is not mapped. */
static int safe_rw(int to_host, char *host, char *local, size_t n)
{
  pid_t me = getpid();
  while (n) {
    struct iovec l = { local, n }, r = { host, n };
    ssize_t k = to_host ? process_vm_writev(me, &l, 1, &r, 1, 0) : process_vm_readv(me, &l, 1, &r, 1, 0);
    if (k <= 0) {
      int fd = get_procmem();
      if (fd < 0)
        return -1;
      k = to_host ? pwrite(fd, local, n, (off_t)(uintptr_t)host) : pread(fd, local, n, (off_t)(uintptr_t)host);
      if (k <= 0) {
        if (k < 0 && errno == EINTR)
          continue;
        return -1;
      }
    }
    host += k;
    local += k;
    n -= (size_t)k;
  }
  return 0;
}

static void sleep_until(uint64_t deadline_ns)
{
  struct timespec ts = { (time_t)(deadline_ns / 1000000000ull), (long)(deadline_ns % 1000000000ull) };
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

static int paced(void)
{
  return fk_cfg.bytes_per_ns > 0;
}

/* Start of an operation: the fixed latency. Returns the start time. */
static uint64_t op_start(void)
{
  uint64_t t0 = fk_now_ns();
  if (paced() && fk_cfg.latency_ns > 0) {
    t0 += (uint64_t)fk_cfg.latency_ns;
    sleep_until(t0);
  }
  return t0;
}

static size_t mul_sat(size_t a, size_t b)
{
  size_t r;
  return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

static size_t add_sat(size_t a, size_t b)
{
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t fk_xfer_bytes(const fk_xfer *x)
{
  return mul_sat(mul_sat(x->width, x->height), x->depth);
}

static size_t extent(const fk_xfer *x, size_t pitch, size_t slice)
{
  if (!x->width || !x->height || !x->depth)
    return 0;
  return add_sat(add_sat(mul_sat(x->depth - 1, slice), mul_sat(x->height - 1, pitch)), x->width);
}

size_t fk_xfer_dst_extent(const fk_xfer *x) { return extent(x, x->dpitch, x->dslice); }
size_t fk_xfer_src_extent(const fk_xfer *x) { return extent(x, x->spitch, x->sslice); }

static int copy_seg(char *d, int dsafe, const char *s, int ssafe, size_t n, char **bounce)
{
  if (!dsafe && !ssafe) {
    memmove(d, s, n);
    return 0;
  }
  if (dsafe && !ssafe)
    return safe_rw(1, d, (char *)s, n);
  if (!dsafe)
    return safe_rw(0, (char *)s, d, n);
  if (!*bounce && !(*bounce = malloc(FK_PIECE)))
    return -1;
  while (n) {
    size_t k = n < FK_PIECE ? n : FK_PIECE;
    if (safe_rw(0, (char *)s, *bounce, k) || safe_rw(1, d, *bounce, k))
      return -1;
    d += k;
    s += k;
    n -= k;
  }
  return 0;
}

/* Position inside a transfer: slice z, row y, byte off in the row. */
struct pos { size_t z, y, off; };

static size_t seg_len(const fk_xfer *x, const struct pos *p, size_t limit)
{
  size_t left = x->width - p->off;
  return left < limit ? left : limit;
}

static void advance(const fk_xfer *x, struct pos *p, size_t n)
{
  p->off += n;
  if (p->off == x->width) {
    p->off = 0;
    if (++p->y == x->height) {
      p->y = 0;
      p->z++;
    }
  }
}

CUresult fk_dma_copy(const fk_xfer *x)
{
  size_t total = fk_xfer_bytes(x);
  if (!total)
    return CUDA_SUCCESS;
  int dsafe, ssafe;
  char *d = fk_mem_dma_ptr(x->dst, fk_xfer_dst_extent(x), &dsafe);
  const char *s = fk_mem_dma_ptr(x->src, fk_xfer_src_extent(x), &ssafe);
  char *bounce = NULL;
  CUresult r = CUDA_SUCCESS;
  uint64_t t0 = op_start();
  struct pos p = { 0, 0, 0 };
  size_t done = 0;
  while (done < total) {
    /* Measure the next piece (whole rows while they fit, long rows cut at 1 MiB) ... */
    struct pos q = p;
    size_t piece = 0;
    while (piece < FK_PIECE && q.z < x->depth) {
      size_t k = seg_len(x, &q, FK_PIECE - piece);
      piece += k;
      advance(x, &q, k);
    }
    /* ... let its transfer time pass, then land it, so a reader sees the data arrive in pieces. */
    if (paced())
      sleep_until(t0 + (uint64_t)((double)(done + piece) / fk_cfg.bytes_per_ns));
    for (size_t left = piece; left;) {
      size_t k = seg_len(x, &p, left);
      size_t doff = p.z * x->dslice + p.y * x->dpitch + p.off;
      size_t soff = p.z * x->sslice + p.y * x->spitch + p.off;
      if (r == CUDA_SUCCESS && copy_seg(d + doff, dsafe, s + soff, ssafe, k, &bounce)) {
        fk_warn("DMA fault: copy of %zu bytes from %p to %p touches unmapped memory",
                total, (const void *)x->src, (void *)x->dst);
        r = CUDA_ERROR_ILLEGAL_ADDRESS;
      }
      advance(x, &p, k);
      left -= k;
    }
    done += piece;
  }
  free(bounce);
  return r;
}

CUresult fk_dma_memset(char *dst, unsigned char v, size_t n)
{
  int safe;
  char *d = fk_mem_dma_ptr(dst, n, &safe);
  op_start();
  if (!safe) {
    memset(d, v, n);
    return CUDA_SUCCESS;
  }
  size_t chunk = n < FK_PIECE ? n : FK_PIECE;
  char *pat = malloc(chunk);
  if (!pat)
    return CUDA_ERROR_OUT_OF_MEMORY;
  memset(pat, v, chunk);
  CUresult r = CUDA_SUCCESS;
  for (size_t off = 0; off < n; off += chunk) {
    size_t k = n - off < chunk ? n - off : chunk;
    if (safe_rw(1, d + off, pat, k)) {
      r = CUDA_ERROR_ILLEGAL_ADDRESS;
      break;
    }
  }
  free(pat);
  return r;
}

CUresult fk_dma_write32(uint32_t *addr, uint32_t v)
{
  int safe;
  char *d = fk_mem_dma_ptr(addr, sizeof v, &safe);
  if (!safe) {
    __atomic_store_n((uint32_t *)(void *)d, v, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
  }
  __atomic_thread_fence(__ATOMIC_RELEASE);
  return safe_rw(1, d, (char *)&v, sizeof v) ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS;
}
