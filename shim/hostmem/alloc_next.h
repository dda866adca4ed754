/* alloc_next.h: the allocator after the shim (glibc's, or jemalloc's/tcmalloc's when those are
 * loaded), found with dlsym(RTLD_NEXT) on first use, and the small static bootstrap arena that
 * serves requests before it is known (dlsym itself may call calloc). Bootstrap blocks are never
 * given to the next allocator's free.
 * The allocation hooks (alloc.c) forward to it; the tracking table (alloc_table.c) takes its own
 * memory from it directly (alloc_next_malloc/calloc/realloc/free), never through the hooks, so the
 * shim's bookkeeping is never itself an allocation event.
 * Contract: thread-safe; errno as the next allocator leaves it. alloc_next_ready() is one load once
 * resolved (the hooks' most frequent calls skip even that: alloc.c keeps the resolved malloc and
 * free where they jump); it returns false on a thread that is resolving (re-entered from dlsym), and
 * the caller then uses the arena. */
#ifndef PINSHIM_ALLOC_NEXT_H
#define PINSHIM_ALLOC_NEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/common.h"

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
extern struct next_allocator alloc_next;

extern int alloc_next_resolved;
bool alloc_next_resolve(void);

/* True once alloc_next's malloc, calloc, realloc and free are known; never resolves (the hooks'
 * fast paths: false sends them to their out-of-line path, which calls alloc_next_ready). */
static inline bool alloc_next_resolved_now(void)
{
    return PINSHIM_LIKELY(__atomic_load_n(&alloc_next_resolved, __ATOMIC_ACQUIRE));
}

/* True once alloc_next's malloc, calloc, realloc and free are known (resolving them if needed). */
static inline bool alloc_next_ready(void)
{
    return alloc_next_resolved_now() || alloc_next_resolve();
}

/* --- the bootstrap arena --- */

#define ALLOC_BOOT_BYTES (256u << 10)
extern unsigned char alloc_boot_arena[ALLOC_BOOT_BYTES];

static inline bool alloc_in_boot(const void *p)
{
    return (uintptr_t)p - (uintptr_t)alloc_boot_arena < ALLOC_BOOT_BYTES;
}

/* A zeroed block of n bytes aligned to align (at least 16), or NULL when the arena is full. */
void *alloc_boot_alloc(size_t n, size_t align);

/* The size a bootstrap block was allocated with (for realloc). */
size_t alloc_boot_size(const void *p);

/* --- for the shim's own bookkeeping: the hooks' behaviour without the events --- */

void *alloc_next_malloc(size_t n);
void *alloc_next_calloc(size_t count, size_t size);
void *alloc_next_realloc(void *p, size_t n);
void alloc_next_free(void *p);

#endif
