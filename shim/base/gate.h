/* gate.h: the words every copy and call the shim only counts reads, together on one cache line.
 * In a framework's loop the shim's state is cold at each call (the framework's and the driver's own
 * work evict it between calls), so each separate line such a call reads is a cache miss: the gate
 * holds what the counted path asks of the policy, the log, the guard, the registration cache, the
 * device count, the counters and the clock, in one line where they were in a dozen.
 * Contract: written rarely (at load, by the benchmark switch, at a registration made or dropped, at
 * the first call, when the clock is chosen and calibrated, at each change of the host memory tables:
 * pinned ranges, unmappings, tracked allocations; at the first pageable copy) by the layer that owns
 * each word, always
 * with relaxed atomics; read with relaxed loads from any thread. A reader may see a change late, as
 * it would a plain flag. */
#ifndef PINSHIM_GATE_H
#define PINSHIM_GATE_H

#include <stdbool.h>
#include <stdint.h>

#include "driver_table.h"

/* Bits of follow: what makes every copy leave the counted path. */
enum {
    GATE_FOLLOW_LOG = 1u << 0,   /* the per-transfer log is configured (observe/log.c) */
    GATE_FOLLOW_GUARD = 1u << 1, /* the guard is on (guard/guard.c) */
};

struct pinshim_gate {
    bool observing;        /* the wrappers observe: the policy's intercept, then the benchmark switch */
    bool active;           /* a wrapped entry point has been called (observe/stats.c) */
    bool sync_adaptive;    /* sync_timing = adaptive (copy/sync_entry.c) */
    uint8_t follow;        /* GATE_FOLLOW_* */
    int32_t clock_mode;    /* base/clock.h: its enum clock_mode, chosen at the first read */
    int32_t devices;       /* devices the process sees; 0 not asked yet, -1 unknown (observe/ctxdev.c) */
    int32_t registrations; /* the registration cache's live registrations (hostmem/regcache.c) */
    uint64_t small_below;  /* a copy below this many bytes is too small to stage (copy/copy.h) */
    uint64_t ns_per_tick_q32; /* base/clock.h: nanoseconds per tick << 32, once calibrated (0 before) */
    uint64_t plain_pages;     /* the generation of hostmem/plain_pages.c's memo: host tables' changes */
    uint64_t page_kinds;      /* the generation of hostmem/memkind.c's page memo and of each thread's
                               * last range (base/thread.h): its table's changes */
    uint8_t small_unstaged;   /* why a pageable copy too small to stage is not staged: enum unstaged_reason
                               * (the stats read it back for the copies they count in one cell) */
    bool prewarm_pending;     /* the next pageable copy starts the staging pool (stage/stage.c) */
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct pinshim_gate) == 64, "the gate is one cache line");

/* What every call of a driver row reads, side by side on one line: its real function (driver_real)
 * and its flavour (driver_stream). Apart, the two were two misses per call. */
struct driver_hot {
    void *real; /* NULL until known */
    enum driver_flavour flavour;
};

/* The one page of the shim's own data that every wrapped call reads: the gate, then each driver
 * row's real function and flavour (base/driver.c defines it). A framework's work between two calls
 * pushes the shim's page translations out of the TLBs as it pushes its lines out of the caches;
 * the gate (in .bss) and the rows (in .data) were a page each. */
struct pinshim_hot {
    struct pinshim_gate gate;
    struct driver_hot driver[ENTRY_COUNT];
} __attribute__((aligned(4096)));
_Static_assert(sizeof(struct pinshim_hot) == 4096, "the gate and the driver rows are one page");

extern struct pinshim_hot pinshim_hot;

/* The gate's words are read as pinshim_gate.WORD. */
#define pinshim_gate (pinshim_hot.gate)

#endif
