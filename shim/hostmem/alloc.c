/* alloc.c: the host allocation hooks. malloc, calloc, realloc, reallocarray, free, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc, mmap, mmap64, munmap, mremap and madvise forward to the
 * next definition (alloc_next.h) and publish what happened to memory as events (alloc_events.h):
 * allocations of at least alloc_events_min_bytes, blocks about to be freed or released, ranges
 * about to be unmapped or discarded, mappings that move. Who listens is not this file's business.
 * Small allocations pay one comparison (malloc) or one filter load (free), and a tail call.
 * Before the next allocator is found (dlsym itself may call calloc) requests are served from the
 * bootstrap arena, whose blocks are never given to the real free.
 * Contract: the program gets exactly what the next allocator returns, with errno as it left it. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc_events.h"
#include "alloc_next.h"
#include "base/common.h"
#include "hugepage.h"

static inline void track(void *p, size_t n)
{
    if (alloc_events_wanted(n) && p)
        alloc_events_allocated((uintptr_t)p, n, ORIGIN_MALLOC);
}

static inline void untrack(void *p)
{
    if (PINSHIM_UNLIKELY(alloc_events_watched((uintptr_t)p)))
        alloc_events_releasing((uintptr_t)p);
}

static inline void untrack_freed(void *p)
{
    if (PINSHIM_UNLIKELY(alloc_events_watched((uintptr_t)p))) {
        alloc_events_freeing((uintptr_t)p);
        alloc_events_releasing((uintptr_t)p);
    }
}

/* --- the malloc family --- */

/* malloc, calloc and free are called tens of thousands of times a training step (29,400 calls in
 * the MLP step of tests/bench/workloads/train_phases.py): their usual case, a resolved allocator
 * and a small or unwatched block, is a few loads and compares and a tail call to the next
 * allocator, with no stack frame; everything else is in the out-of-line *_rest functions. */

static __attribute__((noinline, cold)) void *malloc_rest(size_t n)
{
    if (PINSHIM_UNLIKELY(!alloc_next_ready()))
        return alloc_boot_alloc(n, 16);
    void *p = alloc_next.malloc(n);
    track(p, n);
    return p;
}

PINSHIM_EXPORT void *malloc(size_t n)
{
    if (PINSHIM_LIKELY(!alloc_events_wanted(n) && alloc_next_resolved_now()))
        return alloc_next.malloc(n);
    return malloc_rest(n);
}

static __attribute__((noinline, cold)) void *calloc_rest(size_t count, size_t size)
{
    size_t n;
    if (PINSHIM_UNLIKELY(!alloc_next_ready()))
        return __builtin_mul_overflow(count, size, &n) ? NULL : alloc_boot_alloc(n, 16);
    void *p = alloc_next.calloc(count, size);
    if (!__builtin_mul_overflow(count, size, &n))
        track(p, n);
    return p;
}

PINSHIM_EXPORT void *calloc(size_t count, size_t size)
{
    size_t n;
    if (PINSHIM_LIKELY(!__builtin_mul_overflow(count, size, &n) && !alloc_events_wanted(n) &&
                       alloc_next_resolved_now()))
        return alloc_next.calloc(count, size);
    return calloc_rest(count, size);
}

static __attribute__((noinline, cold)) void free_rest(void *p)
{
    if (alloc_in_boot(p))
        return;
    untrack_freed(p);
    if (PINSHIM_LIKELY(alloc_next_ready()))
        alloc_next.free(p);
}

PINSHIM_EXPORT void free(void *p)
{
    if (PINSHIM_UNLIKELY(!p))
        return;
    if (PINSHIM_LIKELY(!alloc_in_boot(p) && !alloc_events_watched((uintptr_t)p) && alloc_next_resolved_now()))
        return alloc_next.free(p);
    free_rest(p);
}

PINSHIM_EXPORT void *realloc(void *p, size_t n)
{
    if (PINSHIM_UNLIKELY(alloc_in_boot(p) || !alloc_next_ready())) {
        void *q = alloc_next_ready() ? alloc_next.malloc(n) : alloc_boot_alloc(n, 16);
        if (q && p) {
            size_t old = alloc_boot_size(p);
            memcpy(q, p, old < n ? old : n);
        }
        track(q, n);
        return q;
    }
    if (p)
        untrack(p); /* the block may move or shrink: its registration goes first */
    void *q = alloc_next.realloc(p, n);
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
    if (PINSHIM_UNLIKELY(!alloc_next_ready() || !alloc_next.posix_memalign)) {
        void *p = alloc_boot_alloc(n, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    int r = alloc_next.posix_memalign(out, align, n);
    if (r == 0)
        track(*out, n);
    return r;
}

#define ALIGNED_ENTRY(name, params, args, boot_align, size)                                         \
    PINSHIM_EXPORT void *name params                                                                \
    {                                                                                               \
        if (PINSHIM_UNLIKELY(!alloc_next_ready() || !alloc_next.name))                              \
            return alloc_boot_alloc(size, boot_align);                                              \
        void *p = alloc_next.name args;                                                             \
        track(p, size);                                                                             \
        return p;                                                                                   \
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
    if (alloc_next_ready() && alloc_next.mmap)
        return alloc_next.mmap(addr, len, prot, flags, fd, off);
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

PINSHIM_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (PINSHIM_UNLIKELY(flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE))
        alloc_events_unmapping((uintptr_t)addr, (uintptr_t)addr + len); /* the new mapping replaces these pages */
    void *p = next_mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && tracked_mapping(prot, flags) && alloc_events_wanted(len))
        alloc_events_allocated((uintptr_t)p, len, ORIGIN_MMAP);
    return p;
}

PINSHIM_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap(addr, len, prot, flags, fd, off);
}

PINSHIM_EXPORT int munmap(void *addr, size_t len)
{
    alloc_events_unmapping((uintptr_t)addr, (uintptr_t)addr + len);
    if (alloc_next_ready() && alloc_next.munmap)
        return alloc_next.munmap(addr, len);
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
    unsigned followers = alloc_events_moving((uintptr_t)old);
    alloc_events_unmapping((uintptr_t)old, (uintptr_t)old + old_len);
    if (flags & MREMAP_FIXED)
        alloc_events_unmapping((uintptr_t)want, (uintptr_t)want + new_len);
    void *p = (alloc_next_ready() && alloc_next.mremap)
                  ? alloc_next.mremap(old, old_len, new_len, flags, want)
                  : (void *)syscall(SYS_mremap, old, old_len, new_len, flags, want);
    if (p != MAP_FAILED)
        alloc_events_moved(followers, (uintptr_t)p, new_len);
    return p;
}

PINSHIM_EXPORT int madvise(void *addr, size_t len, int advice)
{
    if (advice == MADV_HUGEPAGE || advice == MADV_NOHUGEPAGE) /* the program manages huge pages */
        hugepage_note_program_advice((uintptr_t)addr, (uintptr_t)addr + len, advice == MADV_HUGEPAGE);
    if (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE)
        alloc_events_discarding((uintptr_t)addr, (uintptr_t)addr + len); /* the pages' contents go away */
    if (alloc_next_ready() && alloc_next.madvise)
        return alloc_next.madvise(addr, len, advice);
    return (int)syscall(SYS_madvise, addr, len, advice);
}
