/* alloc_next.c: finding the next allocator, the bootstrap arena, and the untracked allocation
 * functions the shim's own tables use (see alloc_next.h). */
#define _GNU_SOURCE
#include "alloc_next.h"

#include <dlfcn.h>
#include <string.h>

#include "base/real.h"

struct next_allocator alloc_next;
int alloc_next_resolved;
static __thread int resolving __attribute__((tls_model("initial-exec")));

_Alignas(64) unsigned char alloc_boot_arena[ALLOC_BOOT_BYTES];
static size_t boot_used;

/* Blocks carry their size in the 16 bytes before them (for realloc). Never freed. */
void *alloc_boot_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    size_t used = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start;
    do {
        start = (used + 16 + align - 1) / align * align;
        if (n > ALLOC_BOOT_BYTES || start + n > ALLOC_BOOT_BYTES)
            return NULL;
    } while (!__atomic_compare_exchange_n(&boot_used, &used, start + n, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    memcpy(&alloc_boot_arena[start - sizeof n], &n, sizeof n);
    return &alloc_boot_arena[start]; /* static memory: already zero */
}

size_t alloc_boot_size(const void *p)
{
    size_t n;
    memcpy(&n, (const unsigned char *)p - sizeof n, sizeof n);
    return n;
}

#define NEXT(name) alloc_next.name = (__typeof__(alloc_next.name))pinshim_real_dlsym(RTLD_NEXT, #name)

bool alloc_next_resolve(void)
{
    if (PINSHIM_LIKELY(__atomic_load_n(&alloc_next_resolved, __ATOMIC_ACQUIRE)))
        return true;
    if (resolving)
        return false;
    resolving++;
    if (real_dlsym_ready() == 0) {
        NEXT(malloc); NEXT(calloc); NEXT(realloc); NEXT(free); NEXT(posix_memalign); NEXT(aligned_alloc);
        NEXT(memalign); NEXT(valloc); NEXT(pvalloc); NEXT(mmap); NEXT(munmap); NEXT(mremap); NEXT(madvise);
        if (alloc_next.malloc && alloc_next.calloc && alloc_next.realloc && alloc_next.free)
            __atomic_store_n(&alloc_next_resolved, 1, __ATOMIC_RELEASE);
    }
    resolving--;
    return __atomic_load_n(&alloc_next_resolved, __ATOMIC_ACQUIRE);
}

void *alloc_next_malloc(size_t n)
{
    if (PINSHIM_UNLIKELY(!alloc_next_ready()))
        return alloc_boot_alloc(n, 16);
    return alloc_next.malloc(n);
}

void *alloc_next_calloc(size_t count, size_t size)
{
    size_t n;
    if (PINSHIM_UNLIKELY(!alloc_next_ready()))
        return __builtin_mul_overflow(count, size, &n) ? NULL : alloc_boot_alloc(n, 16);
    return alloc_next.calloc(count, size);
}

void *alloc_next_realloc(void *p, size_t n)
{
    if (PINSHIM_UNLIKELY(alloc_in_boot(p) || !alloc_next_ready())) {
        void *q = alloc_next_ready() ? alloc_next.malloc(n) : alloc_boot_alloc(n, 16);
        if (q && p) {
            size_t old = alloc_boot_size(p);
            memcpy(q, p, old < n ? old : n);
        }
        return q;
    }
    return alloc_next.realloc(p, n);
}

void alloc_next_free(void *p)
{
    if (PINSHIM_UNLIKELY(!p || alloc_in_boot(p)))
        return;
    if (PINSHIM_LIKELY(alloc_next_ready()))
        alloc_next.free(p);
}
