/* log_internal.h: what the log's files share, behind log.h.
 *   log.c          the copy side (a record per copy), configuration, exit and fork
 *   log_ring.c     the bounded lock-free ring the records travel through, and the consumer lock
 *   log_writer.c   the consumer: the writer thread, the file, the exit and signal-time flushes
 *   log_records.c  the lines: header, driver, transfer and summary records
 * Arrows: log.c -> log_writer.c -> log_records.c -> log_ring.c; log.c and log_writer.c also use
 * the ring. What the writer needs of the process (start times, whether the driver may be called)
 * it gets from log.c as a struct log_process, at log_writer_configure(). */
#ifndef PINSHIM_LOG_INTERNAL_H
#define PINSHIM_LOG_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "jbuf.h"
#include "log.h"

struct callsite;
struct devtime;

/* One transfer, as the copy path leaves it for the writer. */
struct log_rec {
    uint64_t seq, t_ns, host_ns, bytes;
    uintptr_t stream;
    const struct callsite *site;
    struct devtime *dt;
    int32_t tid, device; /* device -1: unknown */
    uint8_t entry, dir, src_kind, dst_kind, host_kind, action, async;
};

/* This process as the log sees it: set by log_init() and again in a forked child. */
struct log_process {
    time_t start_time;
    uint64_t start_wall_ns, start_mono_ns;
    bool driver_allowed; /* false in a forked child: no driver calls */
};

/* --- log_ring.c: a bounded multi-producer single-consumer queue of records --- */

/* Maps the ring (log_buffer_bytes) at the first copy; without it every record is dropped. */
void log_ring_map(void);
/* Producers: false when the ring is full (or not mapped); *half_full tells the caller to wake the
 * writer. Lock-free. */
bool log_ring_put(const struct log_rec *r, bool *half_full);
/* A record lost (ring full, or the log being finished). */
void log_ring_drop(void);
/* Records dropped plus those still in the ring: what the summary calls "dropped". */
uint64_t log_ring_lost(void);
/* The consumer (whoever holds the consumer lock: the writer, the exit path, the signal handler). */
bool log_ring_take(struct log_rec *out);
void log_consumer_lock(void);
/* The consumer lock for a signal handler: gives up after wait_ms (the holder may be the
 * interrupted thread). */
bool log_consumer_lock_within(int wait_ms);
void log_consumer_unlock(void);
/* Forked child (one thread): an empty, unmapped ring. */
void log_ring_fork_child(void);

/* --- log_records.c: each record is one complete line appended to jb (jb->full: do not write) --- */

void log_record_transfer(struct jbuf *jb, const struct log_rec *r, bool has_device_ns, uint64_t device_ns);
void log_record_header(struct jbuf *jb, const struct log_process *p);
/* Asks the driver for its version and device names; false (nothing appended) without them. */
bool log_record_driver(struct jbuf *jb);
/* The summary record; false when the stats' summary could not be had (with may_wait false: another
 * thread is formatting it). Async-signal-safe as far as stats_summary_json() is. */
bool log_record_summary(struct jbuf *jb, bool may_wait);

/* --- log_writer.c --- */

enum { LOG_STATE_IDLE, LOG_STATE_RUNNING, LOG_STATE_FINISHED };

/* Where the writer finds the process's facts (log.c's, for the life of the process). */
void log_writer_configure(const struct log_process *p);
/* LOG_STATE_*: records are made only while RUNNING. */
int log_writer_state(void);
/* At the first copy: the ring, the SIGTERM/SIGINT flush, the atexit flush and the writer thread. */
void log_writer_start(void);
/* Wakes the writer (the ring is half full). */
void log_writer_wake(void);
/* The file could not be opened: no more records. */
bool log_writer_failed(void);
/* log_finish() once configured: the last records and the summary record, the file closed. */
bool log_writer_finish(void);
/* Forked child (one thread): the parent's file, writer and held-back records forgotten. */
void log_writer_fork_child(void);

#endif
