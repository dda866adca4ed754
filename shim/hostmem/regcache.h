/* regcache.h: pin-on-reuse. Copies that touch a tracked allocation (alloc_table.h) are counted;
 * at register_after copies its pages are registered (cuMemHostRegister, portable), and from then on
 * copies inside it go to the driver directly, at pinned speed (action "registered").
 * What the program was promised for memory it believes pageable is kept: an async H2D from, or an
 * async D2H into, a registration of the cache returns only once the copy is complete (an async H2D
 * on a busy stream is staged instead when staging wants it). Before memory is given back (free,
 * realloc, munmap, mremap, madvise DONTNEED/FREE/REMOVE, a MAP_FIXED mapping over it) or the program
 * registers it itself, the cache's registration on it is removed. Over register_max_bytes, the least
 * recently used registrations go first; a refused registration is never retried for that allocation.
 * Contract: thread-safe. The alloc hooks never call the driver with the table lock held; nothing
 * here calls the driver in a forked child (regcache_fork_child) or from inside its own driver calls. */
#ifndef PINSHIM_REGCACHE_H
#define PINSHIM_REGCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc_table.h"
#include "copy/copy.h"

/* From the policy: called once by the constructor. Until then nothing is tracked. */
void regcache_configure(void);

/* Smallest allocation tracked (SIZE_MAX: tracking off). Read by the alloc hooks on every call. */
extern size_t regcache_track_min;

/* True on a thread inside the cache's own driver calls or table work: alloc hooks only forward. */
bool regcache_busy_here(void);

/* --- from the allocation hooks (alloc.c) --- */
void regcache_on_alloc(uintptr_t base, size_t size, enum alloc_origin origin);
void regcache_on_free(uintptr_t base);                /* free, realloc: before the allocator has it */
void regcache_on_unmap(uintptr_t lo, uintptr_t hi);   /* munmap, mremap's old range, MAP_FIXED */
void regcache_on_remap(uintptr_t base, size_t size);  /* mremap's new mapping of a tracked region */
bool regcache_tracked_mapping(uintptr_t base);        /* a tracked mmap region starts at base */
void regcache_on_discard(uintptr_t lo, uintptr_t hi); /* madvise that drops the pages' contents */

/* The program registers [p, p + bytes) itself: the cache's registrations there go first. */
void regcache_on_program_register(uintptr_t p, size_t bytes);

/* --- from the copy path --- */
/* In copy_describe: a side inside a registration of the cache is pageable to the program. */
void regcache_view(struct copy *c);
/* Counts the copy against its allocation and may register it; true when the copy can go to the
 * driver directly: its host range overlaps a registration of the cache, held until after_copy. */
bool regcache_direct(struct copy *c);
/* After regcache_direct() said yes: whether the copy's host range lies wholly inside the registration
 * (one driver call), or only partly (the copy is cut at its edges: copy_split.h), and its bounds. */
bool regcache_direct_whole(const struct copy *c);
void regcache_direct_range(const struct copy *c, uintptr_t *lo, uintptr_t *hi);
/* A copy whose host range is [lo, hi) is about to go to the driver as it is: if it starts inside a
 * registration of the cache and runs past its end (which the real driver refuses), that
 * registration is dropped first and never made again. Cheap when nothing is registered. */
void regcache_clear_edges(uintptr_t lo, uintptr_t hi);
/* For an async H2D about to go direct: whether its stream is idle (otherwise staging is preferred). */
bool regcache_stream_idle(const struct copy *c);
/* After the driver call: completes what the program believes pageable, releases the registration. */
void regcache_after_copy(struct copy *c, CUresult result);

/* Summary pieces (",\"registration\":{...}" and text lines); false when nothing to say. */
bool regcache_summary_json(char *buf, size_t len);
bool regcache_summary_text(char *buf, size_t len);

/* Forked child: forget every registration and record, no CUDA calls, track nothing. */
void regcache_fork_child(void);

#endif
