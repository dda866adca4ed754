/* fake_mem.c: memory of the fake CUDA driver: the device arena (a reserved, never host-aliased
 * address range cut into one slice per device, first-fit with 256-byte alignment), managed memory,
 * pinned host allocations and host registrations, pointer classification and pointer attributes. */
#include "fake_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FK_ARENA_MAX (64ull << 30)
#define FK_ARENA_MIN (1ull << 30)
#define FK_DEV_ALIGN 256
#define FK_MAX_DEV 64

static pthread_rwlock_t mem_lock = PTHREAD_RWLOCK_INITIALIZER;

static uintptr_t arena;       /* [arena, arena + arena_len) */
static size_t arena_len, slice_len;

struct dalloc {               /* one device or managed allocation */
  uintptr_t base;
  size_t size, span;          /* requested and rounded size */
  int managed;
  unsigned long long id;
  fk_ctx *ctx;
};
static struct dheap { struct dalloc *v; size_t n, cap, used; } heaps[FK_MAX_DEV];

struct hrange {               /* one pinned allocation or registration, sorted, disjoint */
  uintptr_t base;
  size_t size;
  int kind;                   /* FK_MEM_PINNED or FK_MEM_REGISTERED */
  unsigned flags;
  unsigned long long id;
  fk_ctx *ctx;
  char *alias;                /* pinned: a second view of the same pages for the DMA engine */
  size_t maplen;
};
static struct hrange *hr;
static size_t hr_n, hr_cap;

static unsigned long long next_buffer_id = 1;

static size_t page_size(void)
{
  static size_t ps;
  if (!ps)
    ps = (size_t)sysconf(_SC_PAGESIZE);
  return ps;
}

/* Raw system calls: the fake's own mappings stay invisible to mmap/munmap/madvise interposers. */
static void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
  long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
  return r == -1 ? MAP_FAILED : (void *)r;
}

static void sys_munmap(void *p, size_t len)
{
  syscall(SYS_munmap, p, len);
}

/* Staging buffers: fresh pages cost a page fault each (milliseconds per 16 MiB), so freed
 * buffers are kept in a small cache, as a real driver keeps its pinned staging buffers. */
#define FK_STAGE_SLOTS 8
#define FK_STAGE_CACHE_MAX (256u << 20)
static pthread_mutex_t stage_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { void *p; size_t len; } stage_cache[FK_STAGE_SLOTS];
static size_t stage_cached;

void *fk_pages_alloc(size_t len, size_t *maplen)
{
  size_t ps = page_size();
  len = len ? (len + ps - 1) & ~(ps - 1) : ps;
  pthread_mutex_lock(&stage_mu);
  int best = -1;
  for (int i = 0; i < FK_STAGE_SLOTS; i++)
    if (stage_cache[i].p && stage_cache[i].len >= len && stage_cache[i].len / 2 <= len &&
        (best < 0 || stage_cache[i].len < stage_cache[best].len))
      best = i;
  void *p = NULL;
  if (best >= 0) {
    p = stage_cache[best].p;
    *maplen = stage_cache[best].len;
    stage_cached -= stage_cache[best].len;
    stage_cache[best].p = NULL;
  }
  pthread_mutex_unlock(&stage_mu);
  if (p)
    return p;
  p = sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  if (len >= (2u << 20))
    syscall(SYS_madvise, p, len, MADV_HUGEPAGE);
  *maplen = len;
  return p;
}

void fk_pages_free(void *p, size_t maplen)
{
  if (!p)
    return;
  pthread_mutex_lock(&stage_mu);
  for (int i = 0; i < FK_STAGE_SLOTS; i++)
    if (!stage_cache[i].p && stage_cached + maplen <= FK_STAGE_CACHE_MAX) {
      stage_cache[i].p = p;
      stage_cache[i].len = maplen;
      stage_cached += maplen;
      p = NULL;
      break;
    }
  pthread_mutex_unlock(&stage_mu);
  if (p)
    sys_munmap(p, maplen);
}

void fk_mem_fork_prepare(void)
{
  pthread_rwlock_wrlock(&mem_lock);
  pthread_mutex_lock(&stage_mu);
}

void fk_mem_fork_release(void)
{
  pthread_mutex_unlock(&stage_mu);
  pthread_rwlock_unlock(&mem_lock);
}

/* In the child, a read-write lock whose waiters (parent threads) do not exist here is not safely
 * unlockable: start both locks afresh. Host ranges whose pages did not come across the fork (the
 * program mapped them MADV_DONTFORK, as the shim does its pool) are forgotten: the child may map
 * new memory at those addresses, and it is pageable there. No allocation (mincore only). */
void fk_mem_fork_child(void)
{
  pthread_mutex_t fresh_mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_rwlock_t fresh_rw = PTHREAD_RWLOCK_INITIALIZER;
  stage_mu = fresh_mu;
  mem_lock = fresh_rw;
  size_t kept = 0;
  for (size_t i = 0; i < hr_n; i++) {
    if (fk_mem_mapped((void *)hr[i].base, hr[i].size)) {
      hr[kept++] = hr[i];
      continue;
    }
    if (hr[i].alias)
      sys_munmap(hr[i].alias, hr[i].maplen);
  }
  hr_n = kept;
}

void fk_mem_init(void)
{
  size_t want = fk_cfg.arena_bytes ? fk_cfg.arena_bytes : FK_ARENA_MAX;
  for (size_t len = want; len >= FK_ARENA_MIN; len /= 2) {
    void *p = sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      arena = (uintptr_t)p;
      arena_len = len;
      slice_len = (len / (size_t)fk_cfg.ndev) & ~((size_t)(2u << 20) - 1);
      return;
    }
  }
  fk_warn("cannot reserve a device arena of at least %llu bytes", (unsigned long long)FK_ARENA_MIN);
}

size_t fk_mem_dev_total(void)
{
  return slice_len;
}

static int in_arena(uintptr_t p)
{
  return p >= arena && p - arena < (uintptr_t)slice_len * (uintptr_t)fk_cfg.ndev;
}

/* ---- lookups (mem_lock held) ------------------------------------------------------------------ */

static struct dalloc *dfind(uintptr_t p)
{
  if (!in_arena(p))
    return NULL;
  struct dheap *h = &heaps[(p - arena) / slice_len];
  size_t lo = 0, hi = h->n;
  while (lo < hi) { /* first allocation with base > p */
    size_t mid = (lo + hi) / 2;
    if (h->v[mid].base <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0)
    return NULL;
  struct dalloc *a = &h->v[lo - 1];
  return p - a->base < a->size ? a : NULL;
}

static size_t hupper(uintptr_t p) /* index of the first range with base > p */
{
  size_t lo = 0, hi = hr_n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (hr[mid].base <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static struct hrange *hfind(uintptr_t p)
{
  size_t i = hupper(p);
  if (i == 0)
    return NULL;
  struct hrange *r = &hr[i - 1];
  return p - r->base < r->size ? r : NULL;
}

static int kind_locked(uintptr_t p, size_t len)
{
  if (in_arena(p)) {
    struct dalloc *a = dfind(p);
    if (!a || len > a->size - (p - a->base))
      return FK_MEM_BAD;
    return a->managed ? FK_MEM_MANAGED : FK_MEM_DEVICE;
  }
  struct hrange *r = hfind(p);
  if (r && len <= r->size - (p - r->base))
    return r->kind;
  /* Measured on an H100 and an H200 (driver 580): a host range that starts inside a registration
   * and runs past its end is refused with CUDA_ERROR_INVALID_VALUE, sync and async, both
   * directions. One that starts before a registration and runs into or across it is accepted.
   * The fake applies the same rule to cuMemHostAlloc'd memory (the conformance suite's
   * edges.pinned cases check it on the real driver). */
  if (r)
    return FK_MEM_BAD;
  return FK_MEM_PAGEABLE;
}

int fk_mem_kind(const void *p, size_t len)
{
  pthread_rwlock_rdlock(&mem_lock);
  int k = kind_locked((uintptr_t)p, len);
  pthread_rwlock_unlock(&mem_lock);
  return k;
}

int fk_mem_is_device_side(int kind)
{
  return kind == FK_MEM_DEVICE || kind == FK_MEM_MANAGED || kind == FK_MEM_PINNED || kind == FK_MEM_REGISTERED;
}

char *fk_mem_dma_ptr(const void *p, size_t len, int *safe)
{
  (void)len;
  *safe = 0;
  uintptr_t a = (uintptr_t)p;
  if (in_arena(a))
    return (char *)p;
  pthread_rwlock_rdlock(&mem_lock);
  char *out = (char *)p;
  struct hrange *r = hfind(a);
  if (r) {
    if (r->alias)
      out = r->alias + (a - r->base);
    else
      *safe = 1;
  }
  pthread_rwlock_unlock(&mem_lock);
  return out;
}

/* ---- device memory -------------------------------------------------------------------------- */

static CUresult dalloc_new(fk_ctx *c, size_t size, int managed, CUdeviceptr *out)
{
  if (size == 0 || size > slice_len)
    return size ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
  size_t span = (size + FK_DEV_ALIGN - 1) & ~(size_t)(FK_DEV_ALIGN - 1);
  uintptr_t lo = arena + (uintptr_t)c->dev * slice_len, hi = lo + slice_len;
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_rwlock_wrlock(&mem_lock);
  struct dheap *h = &heaps[c->dev];
  uintptr_t cur = lo;
  size_t i;
  for (i = 0; i <= h->n; i++) { /* first fit: the gap before allocation i (or the tail) */
    uintptr_t end = i < h->n ? h->v[i].base : hi;
    if (end - cur >= span)
      break;
    if (i < h->n)
      cur = h->v[i].base + h->v[i].span;
  }
  if (i <= h->n) {
    if (h->n == h->cap) {
      size_t ncap = h->cap ? h->cap * 2 : 64;
      struct dalloc *nv = realloc(h->v, ncap * sizeof *nv);
      if (!nv)
        goto out;
      h->v = nv;
      h->cap = ncap;
    }
    memmove(&h->v[i + 1], &h->v[i], (h->n - i) * sizeof *h->v);
    h->v[i] = (struct dalloc){ cur, size, span, managed,
                               __atomic_fetch_add(&next_buffer_id, 1, __ATOMIC_RELAXED), c };
    h->n++;
    h->used += span;
    *out = (CUdeviceptr)cur;
    r = CUDA_SUCCESS;
  }
out:
  pthread_rwlock_unlock(&mem_lock);
  return r;
}

FK_ENTRY(cuMemAlloc_v2, (CUdeviceptr *dptr, size_t bytesize))
{
  FK_COUNT(cuMemAlloc_v2);
  fk_ctx *c;
  CUresult r = fk_need_ctx(&c);
  if (r || (r = fk_capture_unsafe_call()))
    return r;
  if (!dptr)
    return CUDA_ERROR_INVALID_VALUE;
  return dalloc_new(c, bytesize, 0, dptr);
}

FK_ENTRY(cuMemAllocManaged, (CUdeviceptr *dptr, size_t bytesize, unsigned int flags))
{
  FK_COUNT(cuMemAllocManaged);
  fk_ctx *c;
  CUresult r = fk_need_ctx(&c);
  if (r || (r = fk_capture_unsafe_call()))
    return r;
  if (!dptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
    return CUDA_ERROR_INVALID_VALUE;
  return dalloc_new(c, bytesize, 1, dptr);
}

FK_ENTRY(cuMemFree_v2, (CUdeviceptr dptr))
{
  FK_COUNT(cuMemFree_v2);
  CUresult r = fk_need_ctx(NULL);
  if (r || (r = fk_capture_unsafe_call()))
    return r;
  uintptr_t p = (uintptr_t)dptr;
  pthread_rwlock_rdlock(&mem_lock);
  struct dalloc *a = dfind(p);
  int ok = a && a->base == p;
  pthread_rwlock_unlock(&mem_lock);
  if (!ok)
    return CUDA_ERROR_INVALID_VALUE;
  fk_sync_ctx(NULL); /* like cudaFree: no queued copy may still touch the memory */
  pthread_rwlock_wrlock(&mem_lock);
  a = dfind(p);
  if (!a || a->base != p) {
    pthread_rwlock_unlock(&mem_lock);
    return CUDA_ERROR_INVALID_VALUE;
  }
  struct dheap *h = &heaps[(p - arena) / slice_len];
  size_t i = (size_t)(a - h->v), span = a->span;
  /* Give the fully owned pages back (neighbours may share the edge pages) while the allocation is
   * still in the table: once it leaves, another thread's cuMemAlloc may take the address and write
   * there, and a late MADV_DONTNEED would zero those bytes (the shim's link probe frees its buffer
   * while the program allocates; the fuzz caught a 16 KiB hole). */
  size_t ps = page_size();
  uintptr_t lo = (p + ps - 1) & ~(ps - 1), hi = (p + span) & ~(ps - 1);
  if (hi > lo)
    syscall(SYS_madvise, (void *)lo, hi - lo, MADV_DONTNEED);
  h->used -= span;
  memmove(&h->v[i], &h->v[i + 1], (h->n - i - 1) * sizeof *h->v);
  h->n--;
  pthread_rwlock_unlock(&mem_lock);
  return CUDA_SUCCESS;
}

FK_ENTRY(cuMemGetInfo_v2, (size_t *free_b, size_t *total))
{
  FK_COUNT(cuMemGetInfo_v2);
  fk_ctx *c;
  CUresult r = fk_need_ctx(&c);
  if (r)
    return r;
  if (!free_b || !total)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_rwlock_rdlock(&mem_lock);
  *total = slice_len;
  *free_b = slice_len - heaps[c->dev].used;
  pthread_rwlock_unlock(&mem_lock);
  return CUDA_SUCCESS;
}

FK_ENTRY(cuMemGetAddressRange_v2, (CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr))
{
  FK_COUNT(cuMemGetAddressRange_v2);
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  uintptr_t p = (uintptr_t)dptr, base = 0;
  size_t size = 0;
  pthread_rwlock_rdlock(&mem_lock);
  struct dalloc *a = dfind(p);
  struct hrange *h = a ? NULL : hfind(p);
  if (a) {
    base = a->base;
    size = a->size;
  } else if (h && h->kind == FK_MEM_PINNED) {
    base = h->base;
    size = h->size;
  }
  pthread_rwlock_unlock(&mem_lock);
  if (!base)
    return CUDA_ERROR_INVALID_VALUE;
  if (pbase)
    *pbase = (CUdeviceptr)base;
  if (psize)
    *psize = size;
  return CUDA_SUCCESS;
}

/* ---- host memory ------------------------------------------------------------------------------ */

/* Inserts a host range unless it overlaps one already known; mem_lock held for writing. */
static CUresult hr_insert(struct hrange *n)
{
  size_t i = hupper(n->base);
  /* Overlapping a registration: already registered; overlapping pinned memory (cuMemHostAlloc):
   * an invalid value (measured on 2 x H200, driver 580). */
  if (i > 0 && hr[i - 1].base + hr[i - 1].size > n->base)
    return hr[i - 1].kind == FK_MEM_PINNED ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  if (i < hr_n && hr[i].base < n->base + n->size)
    return hr[i].kind == FK_MEM_PINNED ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  if (hr_n == hr_cap) {
    size_t ncap = hr_cap ? hr_cap * 2 : 64;
    struct hrange *nv = realloc(hr, ncap * sizeof *nv);
    if (!nv)
      return CUDA_ERROR_OUT_OF_MEMORY;
    hr = nv;
    hr_cap = ncap;
  }
  memmove(&hr[i + 1], &hr[i], (hr_n - i) * sizeof *hr);
  n->id = __atomic_fetch_add(&next_buffer_id, 1, __ATOMIC_RELAXED);
  hr[i] = *n;
  hr_n++;
  return CUDA_SUCCESS;
}

/* Removes the range based exactly at p of the given kind; returns it in *out. */
static int hr_remove(uintptr_t p, int kind, struct hrange *out)
{
  pthread_rwlock_wrlock(&mem_lock);
  struct hrange *r = hfind(p);
  int ok = r && r->base == p && r->kind == kind;
  if (ok) {
    *out = *r;
    size_t i = (size_t)(r - hr);
    memmove(&hr[i], &hr[i + 1], (hr_n - i - 1) * sizeof *hr);
    hr_n--;
  }
  pthread_rwlock_unlock(&mem_lock);
  return ok;
}

static int hr_has_base(uintptr_t p, int kind)
{
  pthread_rwlock_rdlock(&mem_lock);
  struct hrange *r = hfind(p);
  int ok = r && r->base == p && r->kind == kind;
  pthread_rwlock_unlock(&mem_lock);
  return ok;
}

/* What cuMemHostGetFlags reports for a new pinned allocation. Measured on an H100, driver 580
 * (tests/conformance attrs.host_flags): DEVICEMAP is always reported (unified addressing), and
 * allocations under 2 MiB are carved from shared 2 MiB blocks whose flags are those of the
 * allocation that opened the block (a PORTABLE 64 KiB allocation after a cuMemAllocHost reports 2,
 * a cuMemAllocHost after a PORTABLE one reports 3). The fake never reuses a block's space: a block
 * is full once its allocations add up to 2 MiB, and the next small allocation opens a new one.
 * Caller holds mem_lock for writing. */
#define FK_SUBALLOC_BLOCK ((size_t)2 << 20)
static unsigned reported_flags(size_t len, unsigned flags)
{
  static size_t block_used = FK_SUBALLOC_BLOCK;
  static unsigned block_flags;
  flags |= CU_MEMHOSTALLOC_DEVICEMAP;
  if (len >= FK_SUBALLOC_BLOCK)
    return flags;
  if (block_used + len > FK_SUBALLOC_BLOCK) {
    block_used = 0;
    block_flags = flags;
  }
  block_used += len;
  return block_flags;
}

/* Pinned memory is a memfd mapped twice: the program's view and an alias through which the DMA
 * engine reads and writes, so the program's mprotect() never stops a transfer (as with a real
 * DMA engine). Without memfd it falls back to one anonymous view reached with safe syscalls. */
static CUresult host_alloc(void **pp, size_t bytesize, unsigned int flags)
{
  fk_ctx *c;
  CUresult r = fk_need_ctx(&c);
  if (r || (r = fk_capture_unsafe_call()))
    return r;
  if (!pp || bytesize == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED))
    return CUDA_ERROR_INVALID_VALUE;
  if (fk_cfg.fail & FK_FAIL_HOSTALLOC)
    return CUDA_ERROR_OUT_OF_MEMORY;
  size_t ps = page_size(), len = (bytesize + ps - 1) & ~(ps - 1);
  char *user = MAP_FAILED, *alias = NULL;
  int fd = (int)syscall(SYS_memfd_create, "fakecuda-pinned", 1u /* MFD_CLOEXEC */);
  if (fd >= 0 && ftruncate(fd, (off_t)len) == 0) {
    user = sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (user != MAP_FAILED) {
      alias = sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (alias == MAP_FAILED) {
        sys_munmap(user, len);
        user = MAP_FAILED;
        alias = NULL;
      }
    }
  }
  if (fd >= 0)
    close(fd);
  if (user == MAP_FAILED)
    user = sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (user == MAP_FAILED)
    return CUDA_ERROR_OUT_OF_MEMORY;
  struct hrange n = { (uintptr_t)user, bytesize, FK_MEM_PINNED, 0, 0, c, alias, len };
  pthread_rwlock_wrlock(&mem_lock);
  n.flags = reported_flags(len, flags);
  r = hr_insert(&n);
  pthread_rwlock_unlock(&mem_lock);
  if (r) {
    sys_munmap(user, len);
    if (alias)
      sys_munmap(alias, len);
    return r;
  }
  *pp = user;
  return CUDA_SUCCESS;
}

FK_ENTRY(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags))
{
  FK_COUNT(cuMemHostAlloc);
  return host_alloc(pp, bytesize, Flags);
}

FK_ENTRY(cuMemAllocHost_v2, (void **pp, size_t bytesize))
{
  FK_COUNT(cuMemAllocHost_v2);
  return host_alloc(pp, bytesize, 0);
}

FK_ENTRY(cuMemFreeHost, (void *p))
{
  FK_COUNT(cuMemFreeHost);
  CUresult r = fk_check_init();
  if (r || (r = fk_capture_unsafe_call()))
    return r;
  if (!hr_has_base((uintptr_t)p, FK_MEM_PINNED))
    return CUDA_ERROR_INVALID_VALUE;
  fk_sync_ctx(NULL); /* no queued copy may still touch the pages */
  struct hrange old;
  if (!hr_remove((uintptr_t)p, FK_MEM_PINNED, &old))
    return CUDA_ERROR_INVALID_VALUE;
  sys_munmap((void *)old.base, old.maplen);
  if (old.alias)
    sys_munmap(old.alias, old.maplen);
  return CUDA_SUCCESS;
}

/* Whether [p, p+len) is mapped: mincore() fails with ENOMEM on any unmapped page. */
int fk_mem_mapped(const void *p, size_t len)
{
  size_t ps = page_size();
  uintptr_t a = (uintptr_t)p;
  if (len > UINTPTR_MAX - a - ps)
    return 0;
  uintptr_t lo = a & ~(ps - 1), hi = (a + len + ps - 1) & ~(ps - 1);
  unsigned char vec[4096];
  while (lo < hi) {
    size_t pages = (hi - lo) / ps;
    if (pages > sizeof vec)
      pages = sizeof vec;
    if (mincore((void *)lo, pages * ps, vec) != 0)
      return 0;
    lo += pages * ps;
  }
  return 1;
}

static CUresult host_register(void *p, size_t bytesize, unsigned int flags)
{
  fk_ctx *c;
  CUresult r = fk_need_ctx(&c);
  if (r || (r = fk_capture_unsafe_call()))
    return r;
  if (!p || bytesize == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                          CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY))
    return CUDA_ERROR_INVALID_VALUE;
  if (flags & CU_MEMHOSTREGISTER_IOMEMORY)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (in_arena((uintptr_t)p) || in_arena((uintptr_t)p + bytesize - 1))
    return CUDA_ERROR_INVALID_VALUE;
  if (fk_cfg.fail & FK_FAIL_REGISTER)
    return CUDA_ERROR_OUT_OF_MEMORY;
  if (!fk_mem_mapped(p, bytesize))
    return CUDA_ERROR_INVALID_VALUE;
  /* cuMemHostGetFlags reports DEVICEMAP for registrations too (an H100, driver 580) */
  struct hrange n = { (uintptr_t)p, bytesize, FK_MEM_REGISTERED, flags | CU_MEMHOSTREGISTER_DEVICEMAP, 0, c, NULL, 0 };
  pthread_rwlock_wrlock(&mem_lock);
  r = hr_insert(&n);
  pthread_rwlock_unlock(&mem_lock);
  return r;
}

FK_ENTRY(cuMemHostRegister_v2, (void *p, size_t bytesize, unsigned int Flags))
{
  FK_COUNT(cuMemHostRegister_v2);
  return host_register(p, bytesize, Flags);
}

FK_ENTRY(cuMemHostRegister, (void *p, size_t bytesize, unsigned int Flags))
{
  FK_COUNT(cuMemHostRegister);
  return host_register(p, bytesize, Flags);
}

FK_ENTRY(cuMemHostUnregister, (void *p))
{
  FK_COUNT(cuMemHostUnregister);
  CUresult r = fk_check_init();
  if (r || (r = fk_capture_unsafe_call()))
    return r;
  if (!hr_has_base((uintptr_t)p, FK_MEM_REGISTERED)) {
    /* Measured on the H200: an address inside a registration that is not its base is rejected as
     * an invalid value; one outside every registration as not registered. On 2 x H200 (driver
     * 580): NULL, pinned memory (cuMemHostAlloc) and device memory are invalid values too. */
    pthread_rwlock_rdlock(&mem_lock);
    struct hrange *inside = hfind((uintptr_t)p);
    int invalid = !p || in_arena((uintptr_t)p) || (inside && (inside->kind == FK_MEM_REGISTERED ||
                                                              inside->kind == FK_MEM_PINNED));
    pthread_rwlock_unlock(&mem_lock);
    return invalid ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  fk_sync_ctx(NULL); /* unregister waits for in-flight copies touching the memory */
  struct hrange old;
  if (!hr_remove((uintptr_t)p, FK_MEM_REGISTERED, &old))
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  return CUDA_SUCCESS;
}

FK_ENTRY(cuMemHostGetDevicePointer_v2, (CUdeviceptr *pdptr, void *p, unsigned int Flags))
{
  FK_COUNT(cuMemHostGetDevicePointer_v2);
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  if (!pdptr || Flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_rwlock_rdlock(&mem_lock);
  int ok = hfind((uintptr_t)p) != NULL;
  pthread_rwlock_unlock(&mem_lock);
  if (!ok)
    return CUDA_ERROR_INVALID_VALUE;
  *pdptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing: the same address */
  return CUDA_SUCCESS;
}

FK_ENTRY(cuMemHostGetFlags, (unsigned int *pFlags, void *p))
{
  FK_COUNT(cuMemHostGetFlags);
  CUresult r = fk_need_ctx(NULL);
  if (r)
    return r;
  if (!pFlags)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_rwlock_rdlock(&mem_lock);
  struct hrange *h = hfind((uintptr_t)p);
  unsigned f = h ? h->flags : 0;
  pthread_rwlock_unlock(&mem_lock);
  if (!h)
    return CUDA_ERROR_INVALID_VALUE;
  *pFlags = f;
  return CUDA_SUCCESS;
}

/* ---- context teardown ------------------------------------------------------------------------- */

void fk_mem_drop_ctx(fk_ctx *c)
{
  size_t ps = page_size();
  pthread_rwlock_wrlock(&mem_lock);
  for (int d = 0; d < FK_MAX_DEV; d++) {
    struct dheap *h = &heaps[d];
    size_t keep = 0;
    for (size_t i = 0; i < h->n; i++) {
      struct dalloc *a = &h->v[i];
      if (a->ctx != c) {
        h->v[keep++] = *a;
        continue;
      }
      h->used -= a->span;
      uintptr_t lo = (a->base + ps - 1) & ~(ps - 1), hi = (a->base + a->span) & ~(ps - 1);
      if (hi > lo)
        syscall(SYS_madvise, (void *)lo, hi - lo, MADV_DONTNEED);
    }
    h->n = keep;
  }
  /* Registrations go with the context that made them, portable or not (measured on 2 x H200,
   * driver 580: the pointer reads as pageable afterwards and cuMemHostUnregister returns 713);
   * the pages themselves are the program's and stay. Pinned allocations are freed. */
  size_t keep = 0;
  for (size_t i = 0; i < hr_n; i++) {
    struct hrange *r = &hr[i];
    if (r->ctx != c) {
      hr[keep++] = *r;
      continue;
    }
    if (r->kind != FK_MEM_PINNED)
      continue;
    sys_munmap((void *)r->base, r->maplen); /* freed: the program's view goes too */
    if (r->alias)
      sys_munmap(r->alias, r->maplen);
  }
  hr_n = keep;
  pthread_rwlock_unlock(&mem_lock);
}

/* ---- pointer attributes ------------------------------------------------------------------------ */

struct ptrinfo {
  int kind;           /* FK_MEM_PAGEABLE when unknown to the fake */
  uintptr_t base;
  size_t size;
  fk_ctx *ctx;
  unsigned long long id;
};

static void ptr_info(uintptr_t p, struct ptrinfo *pi)
{
  memset(pi, 0, sizeof *pi);
  pthread_rwlock_rdlock(&mem_lock);
  struct dalloc *a = dfind(p);
  struct hrange *h = a ? NULL : hfind(p);
  if (a)
    *pi = (struct ptrinfo){ a->managed ? FK_MEM_MANAGED : FK_MEM_DEVICE, a->base, a->size, a->ctx, a->id };
  else if (h)
    *pi = (struct ptrinfo){ h->kind, h->base, h->size, h->ctx, h->id };
  pthread_rwlock_unlock(&mem_lock);
}

/* Writes one attribute; returns CUDA_ERROR_INVALID_VALUE for an unsupported one, or, when
 * `strict` (cuPointerGetAttribute), for one that has no value for this pointer. */
static CUresult put_attr(void *data, CUpointer_attribute attr, uintptr_t p, const struct ptrinfo *pi, int strict)
{
  int known = pi->kind != FK_MEM_PAGEABLE;
  int host_kind = pi->kind == FK_MEM_PINNED || pi->kind == FK_MEM_REGISTERED;
  if (strict && !known)
    return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    *(CUcontext *)data = (CUcontext)pi->ctx;
    break;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned int *)data = !known ? 0u : host_kind ? (unsigned)CU_MEMORYTYPE_HOST : (unsigned)CU_MEMORYTYPE_DEVICE;
    break;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    *(CUdeviceptr *)data = known ? (CUdeviceptr)p : 0;
    break;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    if (strict && pi->kind == FK_MEM_DEVICE)
      return CUDA_ERROR_INVALID_VALUE;
    /* pageable memory too: measured on 2 x H200, driver 580 (cuPointerGetAttributes) */
    *(void **)data = pi->kind != FK_MEM_DEVICE ? (void *)p : NULL;
    break;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    *(unsigned int *)data = pi->kind == FK_MEM_MANAGED;
    break;
  case CU_POINTER_ATTRIBUTE_MAPPED:
    *(unsigned int *)data = known;
    break;
  case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
  case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    *(unsigned int *)data = 0;
    break;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    *(int *)data = known ? pi->ctx->dev : -2;
    break;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    *(CUdeviceptr *)data = (CUdeviceptr)pi->base;
    break;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    *(size_t *)data = pi->size;
    break;
  case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    *(unsigned long long *)data = pi->id;
    break;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

FK_ENTRY(cuPointerGetAttribute, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr))
{
  FK_COUNT(cuPointerGetAttribute);
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (!data)
    return CUDA_ERROR_INVALID_VALUE;
  struct ptrinfo pi;
  ptr_info((uintptr_t)ptr, &pi);
  return put_attr(data, attribute, (uintptr_t)ptr, &pi, 1);
}

/* Only CU_POINTER_ATTRIBUTE_SYNC_MEMOPS can be set, and only on memory the driver knows (memory it
 * has no record of, pageable memory, is refused). The fake keeps no value: nothing it does depends
 * on it. */
FK_ENTRY(cuPointerSetAttribute, (const void *value, CUpointer_attribute attribute, CUdeviceptr ptr))
{
  FK_COUNT(cuPointerSetAttribute);
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (!value || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
    return CUDA_ERROR_INVALID_VALUE;
  struct ptrinfo pi;
  ptr_info((uintptr_t)ptr, &pi);
  return pi.kind == FK_MEM_PAGEABLE ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

FK_ENTRY(cuPointerGetAttributes, (unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                   CUdeviceptr ptr))
{
  FK_COUNT(cuPointerGetAttributes);
  CUresult r = fk_check_init();
  if (r)
    return r;
  if (numAttributes && (!attributes || !data))
    return CUDA_ERROR_INVALID_VALUE;
  struct ptrinfo pi;
  ptr_info((uintptr_t)ptr, &pi);
  for (unsigned i = 0; i < numAttributes; i++) {
    if (!data[i])
      return CUDA_ERROR_INVALID_VALUE;
    r = put_attr(data[i], attributes[i], (uintptr_t)ptr, &pi, 0);
    if (r)
      return r;
  }
  return CUDA_SUCCESS;
}
