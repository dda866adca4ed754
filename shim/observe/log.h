/* log.h: the per-transfer log (PINSHIM_LOG, JSON Lines): a header record, a driver record, one
 * record per transfer, and the summary record as the last line. See README "Per-transfer logs".
 *
 * How records travel: the copying thread fills a fixed-size binary record and puts it into one
 * bounded lock-free ring (log_buffer_bytes of memory, allocated at the first copy); a writer thread,
 * started at the first copy, formats and appends them to the file. The copy path never touches the
 * file, never takes a lock the writer holds and never waits: when the ring is full the record is
 * dropped and counted ("dropped" in the summary record).
 * Lines are complete at exit() or return from main (an atexit handler registered at the first copy,
 * so it runs before the CUDA runtime's own teardown, plus the library destructor), and at SIGTERM /
 * SIGINT when the program left them at their default action (the handler flushes, restores the
 * default and re-raises, so the process dies of the signal as it would have). _exit() and SIGKILL
 * lose what the writer had not written yet.
 * fork: the child forgets the parent's ring, file, writer and totals, and opens its own file
 * (%p expanded again) at its first copy or at exit; it never calls the driver.
 * Contract: log_init() once from the constructor; log_copy_begin/log_copy from the copy handlers
 * (thread-safe, lock-free after the first copy); log_finish() from exit paths; log_fork_child()
 * from the atfork child handler. */
#ifndef PINSHIM_LOG_H
#define PINSHIM_LOG_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "base/copy_desc.h"

/* Values of the log_level key, in the order of its choices. */
enum { LOG_LEVEL_SUMMARY, LOG_LEVEL_TRANSFERS };

/* Checks the log pattern (a bad one is reported now and the summary goes to stderr); when logging
 * is on, prepares the call-site unwinder and raises GATE_FOLLOW_LOG (base/gate.h): every copy then
 * leaves the counted path (call-site totals, per-transfer records). */
void log_init(time_t process_start);

/* Before a copy's real call: starts device timing when this copy is sampled. */
void log_copy_begin(const struct copy *c);

/* Whether a copy of this size gets a record of its own (then its host time must be its own). */
bool log_records(size_t bytes);

/* After a copy's real call: feeds the advice counters and, when logging, the call-site totals and
 * the record queue. */
void log_copy(const struct copy *c, CUresult result, uint64_t host_ns);

/* Ends the log: stops the writer, writes what is left and the summary record, closes the file.
 * Returns true when the log file received the summary (the stderr summary is then not printed),
 * false when no log is configured or it could not be opened. Idempotent. */
bool log_finish(void);

/* Forked child (one thread alive): forget the parent's log state; no driver calls from now on. */
void log_fork_child(void);

#endif
