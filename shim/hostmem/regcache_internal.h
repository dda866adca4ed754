/* regcache_internal.h: what regcache.c (the life of a registration: made, evicted, released on the
 * allocation events) shares with regcache_copy.c (what copies ask of it). Everything marked "lock
 * held" runs under the tracking table's lock (alloc_table_lock). */
#ifndef PINSHIM_REGCACHE_INTERNAL_H
#define PINSHIM_REGCACHE_INTERNAL_H

#include <cuda.h>

#include "regcache.h"

/* Why a registration was dropped (counted by cause in the summary). */
enum release_why { WHY_FREE, WHY_UNMAP, WHY_DISCARD, WHY_EVICT, WHY_PROGRAM, WHY_STALE, WHY_EDGE, WHY_CONTEXT, WHY_COUNT };

extern bool regcache_enabled;           /* pin_on_reuse and interception on, not a forked child */
extern uint32_t regcache_register_after; /* copies before an allocation is registered */
extern uint64_t regcache_lru_clock;     /* lock held: the clock of the last use */

/* True on a thread inside the cache's own driver calls or table work. */
bool regcache_busy_here(void);
/* Whether [lo, hi) overlaps a registration the cache made (takes the table's lock). */
bool regcache_owns(uintptr_t lo, uintptr_t hi);

/* A copy ending at hi, of r's memory, that neither registers r nor finds it registered: counted
 * against r when it stays inside it and r is not registered in any way; true. False, counting
 * nothing, when the copy registers r (its register_after-th) or r is registered. Lock held. */
bool regcache_count_only(struct alloc_rec *r, uintptr_t hi);

/* Registers r (lock held, r busy, state REG_NONE); returns with the lock held. */
void regcache_register_locked(struct alloc_rec *r);

/* Drops r's registration but keeps the record (lock held on entry, released on return). */
void regcache_drop_locked(struct alloc_rec *r, enum release_why why);

/* A stream call of the driver's (cuStreamQuery, cuStreamSynchronize), depth raised. */
CUresult regcache_stream_call(const char *name, void **slot, CUstream s);

/* An async copy of memory the cache pinned was completed before returning. */
void regcache_count_wait(void);

#endif
