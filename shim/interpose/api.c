/* api.c: the public API of include/pinshim.h: thin translations onto the stats; and, outside that
 * header, the switch the in-process benchmark uses (tests/bench/inprocess_ab.py). */
#include "pinshim.h"

#include <stddef.h>

#include "base/common.h"
#include "base/gate.h"
#include "guard/guard.h"
#include "hostmem/alloc_events.h"
#include "hostmem/regcache.h"
#include "observe/stats.h"
#include "policy.h"

PINSHIM_EXPORT const char *pinshim_version(void) { return PINSHIM_VERSION; }

PINSHIM_EXPORT int pinshim_stats_get(struct pinshim_stats *out)
{
    if (!out || out->struct_size < sizeof *out)
        return -1;
    stats_snapshot(out);
    return 0;
}

PINSHIM_EXPORT int pinshim_summary_write(int fd, int json)
{
    if (fd < 0)
        return -1;
    stats_write_summary(fd, json != 0);
    return 0;
}

/* For benchmarks only, not part of include/pinshim.h: 0 makes every wrapper forward its call
 * untouched (as with intercept off) and the allocation hooks track nothing new (as if every
 * allocation were below track_min_bytes; frees of what is tracked are still seen), 1 makes them
 * observe again, so that one process can time the same work both ways in alternating blocks,
 * free of the process-to-process spread. Returns 0, or -1 and changes nothing where forwarding
 * would change what the program sees (the guard is on: its protected pages would never be
 * released; the registration cache holds registrations: their async copies would no longer
 * complete on return) or where the wrappers were never handed out (intercept off from the start).
 * Copies and syncs made while forwarding are not counted, nor pinned memory or registrations the
 * program makes then recorded (a benchmark makes them before it switches), and the exit summary is
 * written only if the wrappers observe when the program exits. */
PINSHIM_EXPORT int pinshim_bench_observe(int on);
PINSHIM_EXPORT int pinshim_bench_observe(int on)
{
    static int observing_at_start = -1; /* the policy's intercept, before the first switch */
    if (observing_at_start < 0)
        observing_at_start = pinshim_policy.intercept;
    if (!observing_at_start || (!on && (pinshim_policy.guard != GUARD_OFF || regcache_holds_any())))
        return -1;
    __atomic_store_n(&pinshim_gate.observing, on != 0, __ATOMIC_RELAXED);
    alloc_events_pause_allocations(!on);
    return 0;
}
