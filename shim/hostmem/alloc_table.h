/* alloc_table.h: the program's large host allocations (malloc family and anonymous mmap at or above
 * track_min_bytes), each with its copy count and the registration the cache made on it.
 * Two views of one set of records: an array of (base, record) slots sorted by base (exact base:
 * free, realloc; containment: which record holds an address, for copies and munmap), and the
 * watched bases of the allocation events (alloc_events_watch: a free of an untracked pointer
 * decides in one load, without the lock, and publishes nothing).
 * Contract: every function except alloc_table_maybe_base(), alloc_table_may_hold() and
 * alloc_table_forget_all() is called with the table lock held (alloc_table_lock). The table's own
 * memory comes from the next allocator directly (alloc_next.h), never through the hooks; events
 * raised on a thread that holds the lock are ignored by the cache (alloc_table_held()). Nothing
 * here ever calls the driver. Records are owned by the table until alloc_table_remove() hands one
 * back. */
#ifndef PINSHIM_ALLOC_TABLE_H
#define PINSHIM_ALLOC_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc_events.h" /* enum alloc_origin, the watched bases */

/* Where a record's registration stands. Only the cache (regcache.c) moves it. */
enum reg_state {
    REG_NONE,          /* not registered (yet) */
    REG_REGISTERING,   /* cuMemHostRegister in progress on another thread */
    REG_REGISTERED,    /* [reg_lo, reg_hi) is registered by the cache */
    REG_UNREGISTERING, /* being unregistered (eviction) */
    REG_REFUSED        /* the driver refused: never tried again for this allocation */
};

/* What every copy and free reads comes first (one cache line when the record starts one). */
struct alloc_rec {
    uintptr_t base;
    size_t size;
    uintptr_t reg_lo, reg_hi; /* the registered range, when state is REGISTERING..UNREGISTERING */
    enum reg_state state;
    enum alloc_origin origin;
    uint32_t copies;          /* copies that touched it while not registered */
    int busy;                 /* copies and registrations in progress that use this record */
    bool detached;            /* removed from the table; the last user frees it */
    bool huge_advised;        /* the program's last huge-page advice over it was MADV_HUGEPAGE */
    uint64_t seq;             /* allocation order, for the log and for telling reuses of one address apart */
    uint64_t last_use;        /* registration-cache clock at the last copy: least recently used first */
    void *reg_ctx;            /* the context current at the registration (CUcontext): it ends with it */
};

void alloc_table_lock(void);
void alloc_table_unlock(void);
bool alloc_table_held(void); /* this thread holds the lock */
/* Waits on the table's condition (lock held); alloc_table_broadcast() wakes every waiter. */
void alloc_table_wait(void);
void alloc_table_broadcast(void);

/* Adds a record for [base, base + size); the caller has released any record overlapping it.
 * Returns false when out of memory (the allocation is then simply not tracked). */
bool alloc_table_add(uintptr_t base, size_t size, enum alloc_origin origin);

/* The record whose base is exactly `base`, or NULL. */
struct alloc_rec *alloc_table_find_base(uintptr_t base);

/* The record whose allocation [base, base + size) holds p, or NULL. A NULL for a page holding no
 * part of any record is remembered until a record is added (alloc_table_may_hold). */
struct alloc_rec *alloc_table_containing(uintptr_t p);

/* Without the lock: false when p's page held no part of any record at its last lookup and no
 * record was added since (a record added meanwhile is as if added just after); else true. */
bool alloc_table_may_hold(uintptr_t p);

/* Calls fn on each record whose allocation or registered range overlaps [lo, hi). fn must not add
 * or remove records. */
void alloc_table_each_overlapping(uintptr_t lo, uintptr_t hi, void (*fn)(struct alloc_rec *, void *), void *arg);

/* The record whose registered range (state REGISTERING..UNREGISTERING) overlaps [lo, hi), or NULL. */
struct alloc_rec *alloc_table_registration_overlapping(uintptr_t lo, uintptr_t hi);

/* Calls fn on every record (eviction's scan for the least recently used); fn must not add or
 * remove records. */
void alloc_table_each(void (*fn)(struct alloc_rec *, void *), void *arg);

/* Takes the record out of every view and marks it detached; the caller now owns it. */
void alloc_table_remove(struct alloc_rec *r);

/* Gives back a detached record that nothing uses any more (kept for a later record, or freed to
 * the next allocator). */
void alloc_table_free_rec(struct alloc_rec *r);

/* Lock-free: false means `p` is certainly not a tracked base (most frees stop here). */
static inline bool alloc_table_maybe_base(uintptr_t p) { return alloc_events_watched(p); }

/* Forked child (one thread): forgets every record without touching the parent's structures,
 * which another thread may have been changing at the fork. */
void alloc_table_forget_all(void);

#endif
