/* regcache.h: pin-on-reuse. Copies that touch a tracked allocation (alloc_table.h) are counted;
 * at register_after copies its pages are registered (cuMemHostRegister, portable), and from then on
 * copies inside it go to the driver directly, at pinned speed (action "registered").
 * What the program was promised for memory it believes pageable is kept: an async H2D from, or an
 * async D2H into, a registration of the cache returns only once the copy is complete (an async H2D
 * on a busy stream is staged instead when staging wants it). Before memory is given back (free,
 * realloc, munmap, mremap, madvise DONTNEED/FREE/REMOVE, a MAP_FIXED mapping over it) or the program
 * registers it itself, the cache's registration on it is removed. Over register_max_bytes, the least
 * recently used registrations go first; a refused registration is never retried for that allocation.
 * It learns of allocations and of memory given back as a subscriber of the allocation events
 * (alloc_events.h), never called by the hooks directly.
 * Contract: thread-safe. Its event handlers never call the driver with the table lock held and
 * ignore events raised inside the cache's own driver calls or table work; nothing here calls the
 * driver in a forked child (regcache_fork_child) or from inside its own driver calls. */
#ifndef PINSHIM_REGCACHE_H
#define PINSHIM_REGCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc_events.h"
#include "alloc_table.h"
#include "base/copy_desc.h"

/* From the policy, once, by the constructor: the subscriber to register for the allocation events
 * (with pin_on_reuse on), or NULL. Until it is registered nothing is tracked. */
const struct alloc_subscriber *regcache_configure(void);

/* The program registers [p, p + bytes) itself: the cache's registrations there go first. */
void regcache_on_program_register(uintptr_t p, size_t bytes);

/* Whether p lies inside a registration the cache made (memory the program believes pageable: the
 * pointer queries answer for it as for pageable memory, copy/ptrquery_entry.c). Cheap when nothing
 * is registered; takes the table's lock otherwise. */
bool regcache_covers(uintptr_t p);

/* Whether a copy's host side [p, p + bytes) starts in a tracked allocation of the malloc family:
 * memory the hooks saw the C library hand out after the shim started, pageable unless the program
 * has registered it since (which memkind's table knows first). MALLOC_SIDE_NONE: it does not (ask
 * the driver). MALLOC_SIDE_PAGEABLE: it does. MALLOC_SIDE_COUNTED (only when `count` is set): it
 * does, and the copy is counted against the allocation as regcache_direct() would count it, since
 * it neither registers the allocation nor finds it registered: the cache wants nothing more of this
 * copy (a caller that sets `count` must not describe the copy to regcache_direct() after this
 * answer). Lock-free when p's page is remembered untracked; one lookup under the lock otherwise. */
enum malloc_side { MALLOC_SIDE_NONE, MALLOC_SIDE_PAGEABLE, MALLOC_SIDE_COUNTED };
enum malloc_side regcache_malloc_side(uintptr_t p, size_t bytes, bool count);

/* Whether the cache holds any registration now. */
bool regcache_holds_any(void);

/* --- from the copy path --- */
/* In copy_describe: a side inside a registration of the cache is pageable to the program. */
void regcache_view(struct copy *c);
/* Whether the cache has nothing to do with a described copy: its host side is not pageable (after
 * regcache_view, a side inside one of the cache's registrations is), or the cache holds no
 * registration and the side is not pageable memory it counts copies of (a tracked allocation's). */
bool regcache_ignores(const struct copy *c);
/* The same for a copy not described, from its host side's address and kind: only while the cache
 * holds no registration (a pinned kind the driver gave may be one of them). */
bool regcache_ignores_host(uintptr_t host, enum host_kind kind);
/* Counts the copy against its allocation and may register it; true when the copy can go to the
 * driver directly: its host range overlaps a registration of the cache, held until after_copy. */
bool regcache_direct(struct copy *c);
/* After regcache_direct() said yes: whether the copy's host range lies wholly inside the registration
 * (one driver call), or only partly (the copy is cut at its edges: copy/copy_split.h), and its bounds. */
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

/* The cache's section of the summary (observe/stats.h, struct stats_section): `,"registration":{...}`
 * and the "pin-on-reuse:" line. Return the length written into buf, 0 for nothing to say. */
size_t regcache_summary_json(char *buf, size_t len);
size_t regcache_summary_text(char *buf, size_t len);

/* Forked child: forget every registration and record, no CUDA calls, track nothing (unsubscribes). */
void regcache_fork_child(void);

/* The context ctx (a CUcontext) is about to be destroyed or, a primary context, reset: the driver
 * drops the registrations made in it, so the cache forgets them (without unregistering). */
void regcache_forget_context(void *ctx);

#endif
