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
 * before describing them (copy_own_pinned, copy_small_pageable below); this asks it of the others
 * (the unified shapes). */
bool copy_only_counted(struct copy *c);

/* copy_record() for a copy_only_counted() copy: the same counters, without the steps it skipped. */
void copy_record_counted(const struct copy *c, CUresult result, uint64_t host_ns);

/* The kind of one host side of a copy of `bytes`, as copy_describe() classifies it (before the
 * registration cache's view), for a handler that knows the other side is device memory. */
enum host_kind copy_host_kind(uintptr_t p, size_t bytes);

/* Whether a copy between device memory and host memory of kind k needs nothing but counting
 * without being described: k is the program's own pinned or registered memory, and no log, guard
 * or registration follows copies (the gate). What copy_only_counted() says of such a copy. */
static inline bool copy_own_pinned(enum host_kind k)
{
    return (k == KIND_PINNED || k == KIND_REGISTERED) && !__atomic_load_n(&pinshim_gate.follow, __ATOMIC_RELAXED) &&
           !__atomic_load_n(&pinshim_gate.registrations, __ATOMIC_RELAXED);
}

/* Counts a copy_own_pinned() copy, as copy_record_counted() would have its description. */
void copy_count_own_pinned(enum copy_dir dir, enum host_kind k, size_t bytes, CUresult result, uint64_t host_ns);

/* Whether a copy between device memory and host memory of kind k at `host` needs nothing but
 * counting without being described: pageable and too small to stage, no log or guard following
 * copies, and the registration cache neither holding nor counting it. What copy_only_counted()
 * says of such a copy (it also asks stage_small_copy(), which the caller does before the copy). */
bool copy_small_pageable(enum host_kind k, uintptr_t host, size_t bytes);

/* Counts a copy_small_pageable() copy (why: stage_small_copy()'s answer), as copy_record_counted()
 * would have its description. */
void copy_count_small_pageable(enum copy_dir dir, bool async, size_t bytes, enum unstaged_reason why,
                               CUresult result, uint64_t host_ns);

#endif
