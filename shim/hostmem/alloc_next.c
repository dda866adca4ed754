/* alloc_next.c: finding the next allocator, the bootstrap arena, and the untracked allocation
 * functions the shim's own tables use (see alloc_next.h). */
#define _GNU_SOURCE
#include "alloc_next.h"

#include <dlfcn.h>
#include <string.h>

#include "base/real.h"

/* Until the next allocator is known, malloc, calloc and free point at these, which resolve it or
 * fall back to the arena: the hooks' fast paths call through the pointers with no check. */
static void *unresolved_malloc(size_t n);
static void *unresolved_calloc(size_t count, size_t size);
static void unresolved_free(void *p);

struct next_allocator alloc_next = {.malloc = unresolved_malloc, .calloc = unresolved_calloc, .free = unresolved_free};
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

#define NEXT(name) found.name = (__typeof__(found.name))pinshim_real_dlsym(RTLD_NEXT, #name)

/* Found all at once, then published, malloc, calloc and free last (replacing the stubs): a hook
 * never calls a pointer that is still missing, and never a real free before the real malloc. */
bool alloc_next_resolve(void)
{
    if (PINSHIM_LIKELY(__atomic_load_n(&alloc_next_resolved, __ATOMIC_ACQUIRE)))
        return true;
    if (resolving)
        return false;
    resolving++;
    struct next_allocator found = {0};
    if (real_dlsym_ready() == 0) {
        NEXT(malloc); NEXT(calloc); NEXT(realloc); NEXT(free); NEXT(posix_memalign); NEXT(aligned_alloc);
        NEXT(memalign); NEXT(valloc); NEXT(pvalloc); NEXT(mmap); NEXT(munmap); NEXT(mremap); NEXT(madvise);
    }
    if (found.malloc && found.calloc && found.realloc && found.free) {
        alloc_next.realloc = found.realloc;
        alloc_next.posix_memalign = found.posix_memalign;
        alloc_next.aligned_alloc = found.aligned_alloc;
        alloc_next.memalign = found.memalign;
        alloc_next.valloc = found.valloc;
        alloc_next.pvalloc = found.pvalloc;
        alloc_next.mmap = found.mmap;
        alloc_next.munmap = found.munmap;
        alloc_next.mremap = found.mremap;
        alloc_next.madvise = found.madvise;
        __atomic_store_n(&alloc_next.malloc, found.malloc, __ATOMIC_RELEASE);
        __atomic_store_n(&alloc_next.calloc, found.calloc, __ATOMIC_RELEASE);
        __atomic_store_n(&alloc_next.free, found.free, __ATOMIC_RELEASE);
        __atomic_store_n(&alloc_next_resolved, 1, __ATOMIC_RELEASE);
    }
    resolving--;
    return __atomic_load_n(&alloc_next_resolved, __ATOMIC_ACQUIRE);
}

static void *unresolved_malloc(size_t n)
{
    return alloc_next_resolve() ? alloc_next.malloc(n) : alloc_boot_alloc(n, 16);
}

static void *unresolved_calloc(size_t count, size_t size)
{
    size_t n;
    if (alloc_next_resolve())
        return alloc_next.calloc(count, size);
    return __builtin_mul_overflow(count, size, &n) ? NULL : alloc_boot_alloc(n, 16);
}

static void unresolved_free(void *p)
{
    if (!alloc_in_boot(p) && alloc_next_resolve())
        alloc_next.free(p); /* else a block from nowhere the shim knows: kept, as before it resolved */
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
