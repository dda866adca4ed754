/* copy.h: the two steps every copy handler takes with its struct copy (base/copy_desc.h): describe
 * (classify its memory, find its direction) and record (count it, log it, guard it).
 * Contract: thread-safe; copy_describe() may call the driver (pointer attributes) with the
 * reentrancy depth raised; copy_record() never calls the driver. */
#ifndef PINSHIM_COPY_H
#define PINSHIM_COPY_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/copy_desc.h"
#include "base/gate.h"

/* A copy too small for staging to take in either direction (below both staging thresholds): its
 * kind and its time only feed the summary, so they may be remembered (memkind_of_small) or sampled
 * (copy_entry.c). */
static inline bool copy_is_small(size_t bytes)
{
    return bytes < __atomic_load_n(&pinshim_gate.small_below, __ATOMIC_RELAXED);
}

/* Whether a log or the guard follows every copy: the gate's flag. */
static inline bool copies_followed(void) { return __atomic_load_n(&pinshim_gate.follow, __ATOMIC_RELAXED); }

/* Whether the registration cache holds no registration (the gate's count). */
static inline bool no_registrations(void) { return !__atomic_load_n(&pinshim_gate.registrations, __ATOMIC_RELAXED); }

/* Whether no log, guard or registration follows copies: one line, the gate's. */
static inline bool nothing_follows(void) { return !copies_followed() && no_registrations(); }

/* Kinds known from the entry point itself (cuMemcpyHtoD: dst is device) skip classification:
 * pass KIND_UNKNOWN for a side that must be classified, or the known kind. */
void copy_describe(struct copy *c, enum driver_entry_id entry, uintptr_t dst, enum host_kind dst_kind,
                   uintptr_t src, enum host_kind src_kind, size_t bytes, CUstream stream, bool async);

/* Counts a finished call: a success is one transfer of c->bytes, a failure one failed copy. */
void copy_record(const struct copy *c, CUresult result, uint64_t host_ns);

/* A described 1D host<->device copy the shim has nothing to do with but count: no per-transfer
 * log or call-site totals follow it, the guard is off, the registration cache holds nothing and
 * would not count it, and its host side is the program's own pinned or registered memory, or
 * pageable and too small to stage (copy_is_small). Most copies of a program that pins its
 * memory, and every small one, are such copies: they skip the staging, registration, logging and
 * guard steps (each of which would decline them) and their hooks, which in a framework's hot loop
 * cost their code's cache lines on every call. The 1D shapes with a device side find such copies
 * before describing them (copy_host_path below); this asks it of the others
 * (the unified shapes). */
bool copy_only_counted(struct copy *c);

/* copy_record() for a copy_only_counted() copy: the same counters, without the steps it skipped. */
void copy_record_counted(const struct copy *c, CUresult result, uint64_t host_ns);

/* What a 1D copy between device memory and the host memory at `host` needs, for a handler that
 * knows the other side is device memory (h2d: the copy's direction): only counting, without a
 * description, when no log, guard or registration follows copies (the gate) and the host side is
 * the program's own pinned or registered memory (HOST_OWN_PINNED), or pageable, declined by staging
 * for its size and of no further interest to the registration cache (HOST_SMALL_PAGEABLE, which
 * also asks stage_small_copy() before the copy): a copy too small for either staging threshold
 * whose memory the cache does not track, or a larger one whose allocation the cache tracks, in
 * which case this has counted it against the allocation (regcache_malloc_side); else a description
 * (HOST_DESCRIBE). *kind is the host side's kind as copy_describe() would classify it (before the
 * registration cache's view): KIND_PINNED or KIND_REGISTERED for HOST_OWN_PINNED, KIND_PAGEABLE for
 * HOST_SMALL_PAGEABLE (the count's class follows from it: observe/stats.h, stats_counted_class).
 * What copy_only_counted() says of the described copy, and the same count the cache would have
 * made of it. A small copy's page is looked for among the plain pages
 * (hostmem/plain_pages.h) after the thread's last pinned range, and noted there when found plain. */
enum host_path { HOST_OWN_PINNED, HOST_SMALL_PAGEABLE, HOST_DESCRIBE };
enum host_path copy_host_path(uintptr_t host, size_t bytes, bool h2d, enum host_kind *kind);

#endif
