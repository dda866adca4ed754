/* alloc.c: the host allocation hooks. malloc, calloc, realloc, reallocarray, free, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc, C++'s operator new(size_t) and operator delete(void *),
 * mmap, mmap64, munmap, mremap and madvise forward to the next definition (alloc_next.h) and
 * publish what happened to memory as events (alloc_events.h): allocations of at least alloc_events_min_bytes, blocks about to be freed or released, ranges
 * about to be unmapped or discarded, mappings that move. Who listens is not this file's business.
 * Small allocations pay one comparison (malloc) or one filter load (free), and a tail call.
 * Before the next allocator is found (dlsym itself may call calloc) requests are served from the
 * bootstrap arena, whose blocks are never given to the real free.
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

#include "alloc_events.h"
#include "alloc_next.h"
#include "base/common.h"
#include "base/real.h"
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

static void *malloc_rest(size_t n);
static void free_rest(void *p);

/* Where malloc, operator new, free and operator delete go in their usual case: the next allocator's
 * malloc and free once it is known, until then their out-of-line paths (which find it, or serve the
 * bootstrap arena, and then publish it here). One load and a jump, with no test that the allocator
 * is known: that test was a load and a branch more on every call, 16 calls per small tensor copied
 * in PyTorch. */
static struct {
    void *(*malloc)(size_t);
    void (*free)(void *);
} usual = {malloc_rest, free_rest};

/* Once the next allocator is known: its malloc, then its free (so a free already published means
 * both are; a large allocation's or a watched block's every later call skips the stores). */
static void publish_usual(void)
{
    if (__atomic_load_n(&usual.free, __ATOMIC_RELAXED) != free_rest)
        return;
    __atomic_store_n(&usual.malloc, alloc_next.malloc, __ATOMIC_RELAXED);
    __atomic_store_n(&usual.free, alloc_next.free, __ATOMIC_RELAXED);
}

static __attribute__((noinline, cold)) void *malloc_rest(size_t n)
{
    if (PINSHIM_UNLIKELY(!alloc_next_ready()))
        return alloc_boot_alloc(n, 16);
    publish_usual();
    void *p = alloc_next.malloc(n);
    track(p, n);
    return p;
}

PINSHIM_EXPORT void *malloc(size_t n)
{
    if (PINSHIM_LIKELY(!alloc_events_wanted(n)))
        return __atomic_load_n(&usual.malloc, __ATOMIC_RELAXED)(n);
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
    if (PINSHIM_LIKELY(alloc_next_ready())) {
        publish_usual();
        alloc_next.free(p);
    }
}

PINSHIM_EXPORT void free(void *p)
{
    if (PINSHIM_UNLIKELY(!p))
        return;
    if (PINSHIM_LIKELY(!alloc_in_boot(p) && !alloc_events_watched((uintptr_t)p)))
        return __atomic_load_n(&usual.free, __ATOMIC_RELAXED)(p);
    free_rest(p);
}

/* --- C++'s operator new and delete --- */

/* C++ code allocates through operator new and delete: in train_phases.py's MLP step,
 * libtorch_python.so and libstdc++'s own strings make 14,150 of the 14,694 mallocs a step
 * (tests/bench/alloc_count.c). libstdc++'s operator new calls malloc through its PLT, so under a
 * preload of malloc each of them took a second indirect call; a preloaded forwarder of the malloc
 * family alone cost that step 1.1 % on one CPU. Defined here, operator new(size_t) and operator
 * delete(void *) go from the caller to the next allocator in one step, with malloc's and free's
 * checks. libstdc++'s array, sized and nothrow forms call these two through its PLT, so they
 * reach them too; the aligned forms stay libstdc++'s (and reach aligned_alloc and free). A program
 * that defines its own operator new keeps it: the dynamic linker looks in the executable before a
 * preload. When the allocator fails, the C++ runtime's own operator new takes over: it runs the
 * new-handler loop and throws std::bad_alloc, as without the shim. */

void *_Znwm(size_t n);
void _ZdlPv(void *p);
typedef void *(*operator_new_fn)(size_t);

/* The C++ runtime's operator new(size_t): after this library in the search, or, when the runtime
 * came in with a library dlopened RTLD_LOCAL (a Python extension's), found by its name. */
static operator_new_fn runtime_operator_new(void)
{
    static operator_new_fn found;
    operator_new_fn f = __atomic_load_n(&found, __ATOMIC_ACQUIRE);
    if (f || real_dlsym_ready() != 0)
        return f;
    f = (operator_new_fn)pinshim_real_dlsym(RTLD_NEXT, "_Znwm");
    static const char *const runtimes[] = {"libstdc++.so.6", "libc++.so.1"};
    for (size_t i = 0; !f && i < sizeof runtimes / sizeof *runtimes; i++) {
        void *h = dlopen(runtimes[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            f = (operator_new_fn)pinshim_real_dlsym(h, "_Znwm");
            dlclose(h);
        }
    }
    __atomic_store_n(&found, f, __ATOMIC_RELEASE);
    return f;
}

static __attribute__((noinline, cold)) void *operator_new_rest(size_t n)
{
    size_t want = n ? n : 1;
    void *p = alloc_next_ready() ? alloc_next.malloc(want) : alloc_boot_alloc(want, 16);
    track(p, want);
    if (p)
        return p;
    operator_new_fn runtime = runtime_operator_new();
    if (runtime)
        return runtime(n); /* fails again there, then the new-handler loop, then std::bad_alloc */
    pinshim_warn("operator new: out of memory, and no C++ runtime's operator new to throw std::bad_alloc: aborting");
    abort();
}

PINSHIM_EXPORT void *_Znwm(size_t n)
{
    if (PINSHIM_LIKELY(!alloc_events_wanted(n))) {
        void *p = __atomic_load_n(&usual.malloc, __ATOMIC_RELAXED)(n ? n : 1);
        if (PINSHIM_LIKELY(p != NULL))
            return p;
    }
    return operator_new_rest(n);
}

/* operator delete(void *) is free, whose null and bootstrap cases it shares. */
PINSHIM_EXPORT void _ZdlPv(void *p) __attribute__((copy(free), alias("free")));

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
