/* memkind.h: what a pointer given to a copy is: pageable, pinned (cuMemHostAlloc/cuMemAllocHost),
 * registered (cuMemHostRegister), managed, device, or unknown.
 * The shim's own table of the program's pinned and registered ranges answers first (a thread-local
 * last-hit cache makes the common case a few loads); otherwise cuPointerGetAttributes decides (the
 * copy path may instead know a side pageable from the allocation hooks: copy/copy.c).
 * Contract: thread-safe. memkind_of_driver() and memkind_of_small() call the driver only when driver
 * calls are allowed (not in a forked child) and then with the reentrancy depth raised. */
#ifndef PINSHIM_MEMKIND_H
#define PINSHIM_MEMKIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/copy_desc.h" /* enum host_kind, memkind_is_host() */

/* An address's kind, in two steps: the program's pinned or registered range holding p (the shim's
 * table only), else KIND_UNKNOWN; and the driver's answer (KIND_UNKNOWN when it cannot be asked). */
enum host_kind memkind_of_table(uintptr_t p);
enum host_kind memkind_of_driver(uintptr_t p);

/* The same for a side of a copy whose kind changes only what the summary says of it (too small to
 * be staged), answered from a memory of pages until the table changes or the allocation hooks see
 * memory unmapped (munmap, mremap, MAP_FIXED): a page wholly inside one of the table's ranges keeps
 * that range's kind; a page the driver called pageable, holding no part of a range, stays pageable.
 * A page pinned by a route the shim does not see, or unmapped where the hooks do not see it
 * (glibc's own munmap inside free) or while it is being asked about, may be miscounted as
 * pageable, so nothing but counting may rely on a pageable answer. */
enum host_kind memkind_of_small(uintptr_t p);

/* The kind of the range this thread found last, when it holds p and the table has not changed
 * since; else KIND_UNKNOWN. The thread's own line (base/thread.h) and the table's generation only:
 * what memkind_of_small() asks first. */
enum host_kind memkind_last_range(uintptr_t p);

/* The program allocated pinned memory / registered a range (after the driver said yes). */
void memkind_add_range(uintptr_t base, size_t bytes, enum host_kind kind);

/* The program's pinned or registered range holding p, as [*base, *end); false when p is in none.
 * The shim's own table only (never the driver). */
bool memkind_range_of(uintptr_t p, uintptr_t *base, uintptr_t *end);

/* The program freed or unregistered the range starting at base (after the driver said yes). */
void memkind_remove_range(uintptr_t base);

/* Forget every range (a device reset freed the program's pinned memory). Thread-safe. */
void memkind_clear(void);

/* Forget everything (forked child). Not thread-safe: call only with one thread alive. */
void memkind_forget_all(void);

/* The allocation-event subscriber that raises the page memo's generation on every unmapping
 * (subscribed by the constructor). */
struct alloc_subscriber;
const struct alloc_subscriber *memkind_subscriber(void);

/* Allow or forbid the driver query (false in a forked child: no CUDA calls there). */
void memkind_allow_driver(bool allow);

#endif
