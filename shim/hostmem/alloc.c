/* alloc.c: the host allocation hooks. malloc, calloc, realloc, reallocarray, free, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc, mmap, mmap64, munmap, mremap and madvise forward to the
 * next definition (glibc's, or jemalloc's/tcmalloc's when those are loaded) and tell the
 * registration cache (regcache.h) about allocations of at least track_min_bytes and about memory
 * given back. Small allocations pay one comparison (malloc) or one table load (free).
 * Before the next allocator is found (dlsym itself may call calloc) requests are served from a small
 * static bootstrap arena, whose blocks are never given to the real free.
 * Contract: the program gets exactly what the next allocator returns, with errno as it left it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/common.h"
#include "base/real.h"
#include "regcache.h"

struct next_allocator {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void (*free)(void *);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    int (*madvise)(void *, size_t, int);
};
static struct next_allocator next;
static int resolved;
static __thread int resolving __attribute__((tls_model("initial-exec")));

/* --- the bootstrap arena --- */

#define BOOT_BYTES (256u << 10)
static _Alignas(64) unsigned char boot_arena[BOOT_BYTES];
static size_t boot_used;

static inline bool in_boot(const void *p)
{
    return (uintptr_t)p - (uintptr_t)boot_arena < BOOT_BYTES;
}

/* Blocks carry their size in the 16 bytes before them (for realloc). Never freed. */
static void *boot_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    size_t used = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start;
    do {
        start = (used + 16 + align - 1) / align * align;
        if (n > BOOT_BYTES || start + n > BOOT_BYTES)
            return NULL;
    } while (!__atomic_compare_exchange_n(&boot_used, &used, start + n, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    memcpy(&boot_arena[start - sizeof n], &n, sizeof n);
    return &boot_arena[start]; /* static memory: already zero */
}

static size_t boot_size(const void *p)
{
    size_t n;
    memcpy(&n, (const unsigned char *)p - sizeof n, sizeof n);
    return n;
}

#define NEXT(name) next.name = (__typeof__(next.name))pinshim_real_dlsym(RTLD_NEXT, #name)

static bool resolve(void)
{
    if (PINSHIM_LIKELY(__atomic_load_n(&resolved, __ATOMIC_ACQUIRE)))
        return true;
    if (resolving)
        return false;
    resolving++;
    if (real_dlsym_ready() == 0) {
        NEXT(malloc); NEXT(calloc); NEXT(realloc); NEXT(free); NEXT(posix_memalign); NEXT(aligned_alloc);
        NEXT(memalign); NEXT(valloc); NEXT(pvalloc); NEXT(mmap); NEXT(munmap); NEXT(mremap); NEXT(madvise);
        if (next.malloc && next.calloc && next.realloc && next.free)
            __atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
    }
    resolving--;
    return __atomic_load_n(&resolved, __ATOMIC_ACQUIRE);
}

static inline void track(void *p, size_t n)
{
    if (PINSHIM_UNLIKELY(n >= __atomic_load_n(&regcache_track_min, __ATOMIC_RELAXED)) && p) {
        int e = errno;
        regcache_on_alloc((uintptr_t)p, n, ORIGIN_MALLOC);
        errno = e;
    }
}

static inline void untrack(void *p)
{
    if (PINSHIM_UNLIKELY(alloc_table_maybe_base((uintptr_t)p))) {
        int e = errno;
        regcache_on_free((uintptr_t)p);
        errno = e;
    }
}

/* --- the malloc family --- */

PINSHIM_EXPORT void *malloc(size_t n)
{
    if (PINSHIM_UNLIKELY(!resolve()))
        return boot_alloc(n, 16);
    void *p = next.malloc(n);
    track(p, n);
    return p;
}

PINSHIM_EXPORT void *calloc(size_t count, size_t size)
{
    size_t n;
    if (PINSHIM_UNLIKELY(!resolve()))
        return __builtin_mul_overflow(count, size, &n) ? NULL : boot_alloc(n, 16);
    void *p = next.calloc(count, size);
    if (!__builtin_mul_overflow(count, size, &n))
        track(p, n);
    return p;
}

PINSHIM_EXPORT void free(void *p)
{
    if (PINSHIM_UNLIKELY(!p || in_boot(p)))
        return;
    untrack(p);
    if (PINSHIM_LIKELY(resolve()))
        next.free(p);
}

PINSHIM_EXPORT void *realloc(void *p, size_t n)
{
    if (PINSHIM_UNLIKELY(in_boot(p) || !resolve())) {
        void *q = resolve() ? next.malloc(n) : boot_alloc(n, 16);
        if (q && p) {
            size_t old = boot_size(p);
            memcpy(q, p, old < n ? old : n);
        }
        track(q, n);
        return q;
    }
    if (p)
        untrack(p); /* the block may move or shrink: its registration goes first */
    void *q = next.realloc(p, n);
    track(q, n);
    return q;
}

PINSHIM_EXPORT void *reallocarray(void *p, size_t count, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(count, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n);
}

PINSHIM_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (PINSHIM_UNLIKELY(!resolve() || !next.posix_memalign)) {
        void *p = boot_alloc(n, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    int r = next.posix_memalign(out, align, n);
    if (r == 0)
        track(*out, n);
    return r;
}

#define ALIGNED_ENTRY(name, params, args, boot_align, size)                                            \
    PINSHIM_EXPORT void *name params                                                                   \
    {                                                                                                  \
        if (PINSHIM_UNLIKELY(!resolve() || !next.name))                                                \
            return boot_alloc(size, boot_align);                                                       \
        void *p = next.name args;                                                                      \
        track(p, size);                                                                                \
        return p;                                                                                      \
    }

ALIGNED_ENTRY(aligned_alloc, (size_t align, size_t n), (align, n), align, n)
ALIGNED_ENTRY(memalign, (size_t align, size_t n), (align, n), align, n)
ALIGNED_ENTRY(valloc, (size_t n), (n), 4096, n)
ALIGNED_ENTRY(pvalloc, (size_t n), (n), 4096, n)

/* --- the mmap family --- */

static bool tracked_mapping(int prot, int flags)
{
    return (flags & MAP_ANONYMOUS) && (flags & MAP_PRIVATE) && (prot & PROT_READ) && (prot & PROT_WRITE);
}

static void *next_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (resolve() && next.mmap)
        return next.mmap(addr, len, prot, flags, fd, off);
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

PINSHIM_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (PINSHIM_UNLIKELY(flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE)) {
        int e = errno;
        regcache_on_unmap((uintptr_t)addr, (uintptr_t)addr + len); /* the new mapping replaces these pages */
        errno = e;
    }
    void *p = next_mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && tracked_mapping(prot, flags) &&
        PINSHIM_UNLIKELY(len >= __atomic_load_n(&regcache_track_min, __ATOMIC_RELAXED))) {
        int e = errno;
        regcache_on_alloc((uintptr_t)p, len, ORIGIN_MMAP);
        errno = e;
    }
    return p;
}

PINSHIM_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap(addr, len, prot, flags, fd, off);
}

PINSHIM_EXPORT int munmap(void *addr, size_t len)
{
    int e = errno;
    regcache_on_unmap((uintptr_t)addr, (uintptr_t)addr + len);
    errno = e;
    if (resolve() && next.munmap)
        return next.munmap(addr, len);
    return (int)syscall(SYS_munmap, addr, len);
}

PINSHIM_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    int e = errno;
    bool was_tracked = regcache_tracked_mapping((uintptr_t)old);
    regcache_on_unmap((uintptr_t)old, (uintptr_t)old + old_len);
    if (flags & MREMAP_FIXED)
        regcache_on_unmap((uintptr_t)want, (uintptr_t)want + new_len);
    errno = e;
    void *p = (resolve() && next.mremap) ? next.mremap(old, old_len, new_len, flags, want)
                                         : (void *)syscall(SYS_mremap, old, old_len, new_len, flags, want);
    if (p != MAP_FAILED && was_tracked && new_len >= __atomic_load_n(&regcache_track_min, __ATOMIC_RELAXED)) {
        e = errno;
        regcache_on_remap((uintptr_t)p, new_len);
        errno = e;
    }
    return p;
}

PINSHIM_EXPORT int madvise(void *addr, size_t len, int advice)
{
    if (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE) {
        int e = errno;
        regcache_on_discard((uintptr_t)addr, (uintptr_t)addr + len); /* the pages' contents go away */
        errno = e;
    }
    if (resolve() && next.madvise)
        return next.madvise(addr, len, advice);
    return (int)syscall(SYS_madvise, addr, len, advice);
}
