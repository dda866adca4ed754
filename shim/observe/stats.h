/* stats.h: the per-process counters and the exit summary, the one printer for all of them.
 * Transfers are counted by device x direction x host memory kind x size bucket x action (count,
 * bytes, host time); sync points and entry-point calls by row. What a call the shim only counts
 * adds to lies on one page of the thread's counters (stats.c). Buckets are powers of 4 from 4 KiB:
 * [0,4K) [4K,16K) ... [1G,4G) [4G,inf). Devices are the ordinals 0 to STATS_DEVICES - 1 of the
 * copy's context; an unknown device, or a higher ordinal, is counted as device unknown (null).
 * Layers above contribute their own part of the summary (staging, the registration cache, the
 * guard) as sections registered from the constructor: the printer calls them, never their
 * internals, so the counters here know nothing of the subsystems that count.
 * Contract: the stats_add_* functions are lock-free and thread-safe (per-thread counters,
 * base/tally.h; a thread's first add may allocate its copy); the writers read a snapshot that may
 * miss calls still in flight on other threads. */
#ifndef PINSHIM_STATS_H
#define PINSHIM_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/copy_desc.h"
#include "base/driver_table.h"

#define STATS_BUCKETS 12
#define STATS_DEVICES 16

unsigned stats_bucket(size_t bytes);
uint64_t stats_bucket_min(unsigned bucket);

/* device: the ordinal (struct copy's device), -1 when unknown. */
void stats_add_transfer(int32_t device, enum copy_dir dir, enum host_kind kind, size_t bytes,
                        enum copy_action action, uint64_t host_ns);

/* Copies, bytes and host time of one direction, host kind and action in one size bucket, over
 * every device (for the advice's estimates). */
void stats_cell(enum copy_dir dir, enum host_kind kind, unsigned bucket, enum copy_action action, uint64_t *count,
                uint64_t *bytes, uint64_t *host_ns);
void stats_add_failed_copy(void);
void stats_add_unstaged(enum unstaged_reason why, size_t bytes);

/* The copies copy/copy_entry.c's counted path finds without a description, by what they are: a
 * pageable copy too small to stage, sync or async, passed with nothing following it, or one of the
 * program's own pinned or registered memory, passed (H2D or D2H). Each class's cells have the same
 * shape and lie side by side, so that either is counted by the same instructions. */
enum counted_class {
    COUNTED_PAGEABLE_SYNC,
    COUNTED_PAGEABLE_ASYNC,
    COUNTED_PINNED,
    COUNTED_REGISTERED,
    COUNTED_CLASSES
};

/* The class of a counted copy whose host side is of kind k (KIND_PAGEABLE, KIND_PINNED or
 * KIND_REGISTERED). */
static inline enum counted_class stats_counted_class(enum host_kind k, bool async)
{
    /* the kind plus one, but a sync pageable copy's 0: an add where tests were a branch or two (async
     * is constant in each handler) */
    return (enum counted_class)(k + (async | (k != KIND_PAGEABLE)));
}
_Static_assert(KIND_PAGEABLE == 0 && KIND_PINNED == 1 && KIND_REGISTERED == 2 && COUNTED_PAGEABLE_SYNC == 0 &&
                   COUNTED_PAGEABLE_ASYNC == 1 && COUNTED_PINNED == 2 && COUNTED_REGISTERED == 3,
               "stats_counted_class() adds one to the kind");

/* Counts such a copy (dir: DIR_H2D or DIR_D2H) in one cell where a described one takes three: a
 * small pageable one is read back as a transfer (pageable, passed), as passed for the gate's
 * small_unstaged reason (stats_unstaged) and in the advice's pageable class of its direction and
 * flavour (stats_small_pageable); an own pinned one as the transfer stats_add_transfer counts for
 * ACTION_PASS, in the same cell. */
void stats_add_counted(int32_t device, enum copy_dir dir, enum counted_class cls, size_t bytes, uint64_t host_ns);

/* Those copies of one direction and flavour, over every device and size (observe/advice.c). */
void stats_small_pageable(enum copy_dir dir, bool async, uint64_t *count, uint64_t *bytes, uint64_t *host_ns);
/* One synchronization call; timed: 1 when its time was read (host_ns is then its time times its
 * weight, base/clock.h), 0 when not (host_ns 0). */
void stats_add_sync(enum driver_entry_id entry, uint64_t timed, uint64_t host_ns);

/* Counts one call of a wrapped entry point (every wrapper calls it once per program call). */
void stats_add_call(enum driver_entry_id entry);

/* True once the program has called any wrapped entry point. */
bool stats_any_activity(void);

/* Staged copies and bytes, summed over the transfer table. */
void stats_staged(uint64_t *count, uint64_t *bytes);

/* Copies (and their bytes) passed through for a reason (stats_add_unstaged). */
void stats_unstaged(enum unstaged_reason why, uint64_t *count, uint64_t *bytes);

/* A part of the summary that a subsystem writes itself. Each function formats into buf (NUL-ended)
 * and returns the length, or 0 when it has nothing to say or does not fit: json the text that
 * follows "failed_copies" (`,"name":{...}`), text complete "==pid== ..." lines after the table.
 * Neither may allocate, and json must not block (the log's signal-time flush calls it). */
struct stats_section {
    size_t (*json)(char *buf, size_t len);
    size_t (*text)(char *buf, size_t len);
};

#define STATS_SECTION_MAX 8
#define STATS_SECTION_BYTES 2048 /* room each section gets (on the writer's stack) */

/* Appends a section; the summary shows them in this order. From the constructor only (no thread of
 * the shim exists yet), at most STATS_SECTION_MAX. */
void stats_add_section(const struct stats_section *section);

/* Zeroes everything (a forked child starts its own account). */
void stats_reset(void);

struct pinshim_stats;
void stats_snapshot(struct pinshim_stats *out);

/* Writes the summary (text table or one JSON line) to fd. Not async-signal-safe. */
void stats_write_summary(int fd, bool json);

/* The JSON summary line (newline included) into buf, for the log's summary record. Returns its
 * length, or 0 when it does not fit or, with wait false, when another thread is formatting it
 * (the signal-time flush must not block). No allocation; uses vsnprintf. */
size_t stats_summary_json(char *buf, size_t len, bool wait);

#endif
