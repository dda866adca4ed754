/* alloc_events.h: what the allocation hooks (alloc.c) tell the rest of the shim, as events, in the
 * manner of UCX's memory hooks (ucm): memory was allocated; a block is about to be released (free,
 * realloc; a free, whose bytes nobody reads again, is also told as such) or a range unmapped
 * (munmap, mremap's old range, a MAP_FIXED mapping over it); a mapping moves (mremap); the
 * contents of a range are about to be discarded (madvise DONTNEED, FREE, REMOVE). The hooks never
 * know who listens: subscribers (memkind's page kinds, the registration cache, the freed-page
 * reserve, wired in interpose/init.c) register at start-up and do their own work in their callbacks.
 * What a free costs is kept small: an `allocated` event is published only for sizes of at least
 * alloc_events_min_bytes (one comparison in malloc), and a `releasing` event only for a base some
 * subscriber watches (alloc_events_watch(); a lock-free counting filter, one load in free).
 * Contract: subscribe and unsubscribe only from the constructor or a forked child (no other thread
 * publishing). Publishing is thread-safe; each publish saves and restores errno around the
 * callbacks, which run on the allocating thread, before (releases, discards) or after
 * (allocations, moves) the next allocator's call, and may allocate (their own allocations are
 * events too: subscribers guard against re-entry). */
#ifndef PINSHIM_ALLOC_EVENTS_H
#define PINSHIM_ALLOC_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

enum alloc_origin { ORIGIN_MALLOC, ORIGIN_MMAP };

struct alloc_subscriber {
    size_t min_bytes; /* smallest allocation it wants to hear of */
    void (*allocated)(uintptr_t base, size_t size, enum alloc_origin origin);
    void (*freeing)(uintptr_t base);              /* free only, before `releasing`: bytes given up */
    void (*releasing)(uintptr_t base);            /* free, realloc: before the allocator has it */
    void (*unmapping)(uintptr_t lo, uintptr_t hi); /* munmap, mremap's old range, MAP_FIXED */
    bool (*moving)(uintptr_t old_base);           /* mremap, before: true = tell me where it went */
    void (*moved)(uintptr_t base, size_t size);   /* mremap, after: the new mapping of old_base */
    void (*discarding)(uintptr_t lo, uintptr_t hi); /* madvise that drops the pages' contents */
};

#define ALLOC_EVENTS_MAX_SUBSCRIBERS 4

/* Adds a subscriber (false when there are ALLOC_EVENTS_MAX_SUBSCRIBERS already), or removes one. */
bool alloc_events_subscribe(const struct alloc_subscriber *s);
void alloc_events_unsubscribe(const struct alloc_subscriber *s);

/* The benchmark switch (interpose/api.c): while paused, no allocation is published (as if all were
 * below every subscriber's min_bytes); frees, unmappings and the rest still are. Any thread. */
void alloc_events_pause_allocations(bool paused);

/* The smallest min_bytes of the subscribers (SIZE_MAX: none, or paused). Read by the hooks on every
 * call. */
extern size_t alloc_events_min_bytes;

static inline bool alloc_events_wanted(size_t bytes)
{
    return PINSHIM_UNLIKELY(bytes >= __atomic_load_n(&alloc_events_min_bytes, __ATOMIC_RELAXED));
}

/* --- the watched bases: `releasing` is published only for these --- */

#define ALLOC_EVENTS_FILTER_SLOTS (1u << 16)
extern uint16_t alloc_events_filter[ALLOC_EVENTS_FILTER_SLOTS]; /* 64-byte aligned */

/* A slot per 4 KiB page (the bases in one page share it), 32 neighbouring pages to a 64-byte line of
 * slots, the line chosen by a hash of their group: a run of frees of small blocks lying near each
 * other (a framework freeing the objects of a thousand tensors) reads a few lines of the filter.
 * With a slot per 16 bytes, each hashed on its own, such a run read a line a free, up to all 2048
 * (tests/bench/footprint.py --mode t). The price: a block sharing a page with a watched base (the
 * few small blocks next to the start of a tracked allocation) takes the slow path when freed. */
#define ALLOC_EVENTS_PAGE_SHIFT 12
#define ALLOC_EVENTS_GROUP_BITS 5 /* 32 slots of 2 bytes: one line */
#define ALLOC_EVENTS_LINE_BITS 11
_Static_assert(ALLOC_EVENTS_FILTER_SLOTS == 1u << (ALLOC_EVENTS_GROUP_BITS + ALLOC_EVENTS_LINE_BITS),
               "slots = lines x group");

static inline size_t alloc_events_slot(uintptr_t p)
{
    uint64_t page = (uint64_t)p >> ALLOC_EVENTS_PAGE_SHIFT;
    uint64_t line = ((page >> ALLOC_EVENTS_GROUP_BITS) * 0x9E3779B97F4A7C15ull) >> (64 - ALLOC_EVENTS_LINE_BITS);
    return (size_t)(line << ALLOC_EVENTS_GROUP_BITS | (page & ((1u << ALLOC_EVENTS_GROUP_BITS) - 1)));
}

/* Lock-free: false means no subscriber watches base p (most frees stop here). */
static inline bool alloc_events_watched(uintptr_t p)
{
    return __atomic_load_n(&alloc_events_filter[alloc_events_slot(p)], __ATOMIC_RELAXED) != 0;
}

/* A subscriber starts or stops watching base p (counted: one base may be watched twice). The
 * caller serializes its own calls (the filter is exact only for one writer at a time). */
void alloc_events_watch(uintptr_t p);
void alloc_events_unwatch(uintptr_t p);

/* Forked child (one thread): forget every watched base. */
void alloc_events_unwatch_all(void);

/* --- publishing (the hooks) --- */

void alloc_events_allocated(uintptr_t base, size_t size, enum alloc_origin origin);
void alloc_events_freeing(uintptr_t base);
void alloc_events_releasing(uintptr_t base);
void alloc_events_unmapping(uintptr_t lo, uintptr_t hi);
/* mremap of the mapping at old_base: before the call, a mask of the subscribers that want its new
 * place; after it, alloc_events_moved() with that mask. */
unsigned alloc_events_moving(uintptr_t old_base);
void alloc_events_moved(unsigned mask, uintptr_t base, size_t size);
void alloc_events_discarding(uintptr_t lo, uintptr_t hi);

#endif
