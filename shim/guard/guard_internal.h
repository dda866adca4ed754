/* guard_internal.h: what the guard's files share, behind guard.h (the door the other layers use).
 *   guard.c        guarding a copy: set-up at the first one, protecting its pages; pinned memory
 *                  released; fork; the guard's state word for the sync side
 *   guard_sync.c   releasing: what a completed host synchronization covers (a stream, a context,
 *                  a recorded event, a synchronous copy) and unprotecting it
 *   guard_ranges.c the slot table: claiming, taking and freeing slots, released ranges, the pages'
 *                  original protection
 *   guard_marker.c the driver functions and the completion markers (flag words in a pinned page)
 *   guard_fault.c  a fault or an I/O call on guarded pages: report, repair, abort or unprotect;
 *                  the summary section and the exit line
 * The slot table is a fixed array whose state word is the only synchronization the signal handler
 * relies on: FREE -> SETUP (a guarding thread owns it) -> ACTIVE (pages protected) -> BUSY (one
 * thread releases or reports it) -> FREE. */
#ifndef PINSHIM_GUARD_INTERNAL_H
#define PINSHIM_GUARD_INTERNAL_H

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/gate.h"
#include "guard.h"

struct callsite;

enum { SLOT_FREE, SLOT_SETUP, SLOT_ACTIVE, SLOT_BUSY };

struct guard_slot {
    int state;
    uint32_t marker;         /* the flag word reads this once the copy (and the marker) are done */
    uintptr_t lo, hi;        /* the protected pages */
    uintptr_t dst;           /* the copy's destination */
    size_t bytes;
    int prot;                /* the pages' protection before guarding */
    uint64_t order;          /* guard order: an event covers the slots ordered before its record */
    uint64_t copy_no;        /* the guarded copy's number in this process (from 1) */
    CUstream stream;
    int32_t tid;             /* the guarding thread: CU_STREAM_PER_THREAD is per thread */
    bool blocking;           /* the stream synchronizes with the legacy default stream */
    CUcontext ctx;
    enum driver_entry_id entry;
    const struct callsite *site;
};

/* Counters (relaxed atomics; the handler updates them too). Printed by guard_fault.c. */
struct guard_counters {
    uint64_t guarded, guarded_bytes, protected_bytes, races, reads, writes, io_races, reports, rate_limited,
        completed_before_access, repaired, repair_timeouts, released_sync, released_free, released_race,
        table_full, too_small, not_tracked, capture, marker_hostfn, marker_failed, protect_failed, mixed_prot;
};
extern struct guard_counters guard_n;

static inline void guard_count(uint64_t *c, uint64_t v) { __atomic_fetch_add(c, v, __ATOMIC_RELAXED); }
static inline uint64_t guard_get(const uint64_t *c) { return __atomic_load_n(c, __ATOMIC_RELAXED); }

/* --- guard_ranges.c: the slot table --- */

extern struct guard_slot guard_slots[GUARD_SLOTS];
extern uint64_t guard_order_counter; /* the last guard order handed out */

static inline bool guard_any_live(void)
{
    /* the gate first: with the guard off, a synchronize reads no line of the guard's */
    return (__atomic_load_n(&pinshim_gate.follow, __ATOMIC_RELAXED) & GATE_FOLLOW_GUARD) &&
           __atomic_load_n(&guard_live, __ATOMIC_ACQUIRE) > 0;
}

/* A free slot whose previous marker has landed (claimed: SETUP), or -1. */
int guard_claim_slot(void);
/* ACTIVE -> BUSY: true when this thread now owns s. */
bool guard_take(struct guard_slot *s);
/* The caller owns s (BUSY): restore the pages, remember them, free the slot. Signal-safe. */
void guard_unprotect_and_free(struct guard_slot *s);
/* addr lies in a range released lately (a fault that raced the release finds it here). */
bool guard_recently_released(uintptr_t addr);
/* The protection [lo, hi) had before any slot guarded it, -1 when unmapped or mixed. The caller
 * holds the set-up lock (guard.c), as for guard_prot_forget() (a mapping went away). */
int guard_original_prot(uintptr_t lo, uintptr_t hi);
void guard_prot_forget(void);
size_t guard_page_size(void);
/* Forked child (one thread): restore every inherited range's protection, free every slot. */
void guard_ranges_fork_child(void);

/* --- guard_marker.c: the driver functions and the completion markers --- */

typedef CUresult (*guard_fn_stream_flags)(CUstream, unsigned int *);
typedef CUresult (*guard_fn_ctx_current)(CUcontext *);

struct guard_driver {
    bool ready;                      /* set once the set-up is complete */
    guard_fn_stream_flags stream_flags;
    guard_fn_ctx_current ctx_current;
};
extern struct guard_driver guard_drv;

/* Once, under the set-up lock: resolves the driver functions and maps the flag page (falling back
 * to host-function markers). True when some completion marker can be enqueued. */
bool guard_marker_setup(void);
/* Enqueues "flag word of slot i := marker" behind the copy on its stream; *host_fn: it is a host
 * function (cuStreamWriteValue32 is missing or failed). */
bool guard_marker_enqueue(unsigned i, uint32_t marker, CUstream stream, bool *host_fn);
/* The copy guarded by slot i (and its marker) has completed. Signal-safe. */
bool guard_marker_done(const struct guard_slot *s, unsigned i);

/* --- guard_sync.c --- */

/* The calling thread's id (CU_STREAM_PER_THREAD is per thread). */
int32_t guard_tid(void);
/* Releases the ACTIVE slots a completed synchronization of `stream` (from thread tid, in context
 * ctx, of slots up to order_max) covers. */
void guard_release_covered(CUstream stream, uint64_t order_max, int32_t tid, CUcontext ctx);
/* The calling thread's context (NULL before the set-up or when the driver cannot say). */
CUcontext guard_current_ctx(void);
/* Forked child (one thread): fresh locks. */
void guard_sync_fork_child(void);

#endif
