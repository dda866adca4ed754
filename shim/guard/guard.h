/* guard.h: the unsynchronized-read guard. After an async D2H copy into the program's pinned or
 * registered memory, a completion marker is enqueued behind it on its stream and the destination's
 * whole pages are protected (PROT_NONE) until a host synchronization covers the copy; an access
 * before that faults, is reported (sanitizer style) and, by mode, let through (warn), made correct
 * by waiting for the copy (repair) or ends the process (abort). See README "The guard".
 *
 * Events in (from the entry handlers): a finished copy (copy/copy.c), a successful sync point and
 * a host function's launch (copy/sync_entry.c), pinned memory about to be freed or unregistered
 * (copy/hostmem_entry.c), fork, exit. The files behind this door are listed in guard_internal.h.
 * Contract: the guard_on_*, guard_hostfn_* and guard_after_copy functions are thread-safe, cost
 * one atomic load when nothing is guarded, and call the driver (with the reentrancy depth raised)
 * only from the program's thread: guard_after_copy, guard_hostfn_wrap and the sync handlers'
 * current-context lookups; never from guard_hostfn_run (a host function may make no CUDA call).
 * guard_fault() and guard_io() are async-signal-safe: no CUDA, no malloc, no
 * stdio, no lock; the ranges live in a fixed table of GUARD_SLOTS slots (a full table means the
 * copy is not guarded, and counted). */
#ifndef PINSHIM_GUARD_H
#define PINSHIM_GUARD_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/copy_desc.h"
#include "base/driver_table.h"
#include "guard_signal.h" /* enum guard_access */
#include "policy.h"

/* Values of the guard and guard_pages keys, in the order of their choices. */
enum { GUARD_OFF, GUARD_WARN, GUARD_REPAIR, GUARD_ABORT };
enum { GUARD_PAGES_ALL, GUARD_PAGES_FIRST };
enum { GUARD_STACK_FOLDED, GUARD_STACK_FULL };

#define GUARD_SLOTS 256 /* ranges guarded at once; more copies in flight are not guarded */

/* Constructor: with the guard on, prepares the call-site unwinder and the real signal functions,
 * and raises GATE_FOLLOW_GUARD (base/gate.h): every copy then leaves the counted path. */
void guard_init(void);

/* After a copy's real call (every copy, from copy_record): guards an async D2H into pinned or
 * registered memory; a successful synchronous copy with a host side releases what it orders after. */
void guard_after_copy(const struct copy *c, CUresult result);

/* After a successful cuStreamSynchronize or cuStreamQuery (id gives the default-stream flavour). */
void guard_on_stream_done(enum driver_entry_id id, CUstream stream);

/* After a successful cuCtxSynchronize: every range of the calling thread's context. */
void guard_on_ctx_done(void);

/* After a successful cuEventRecord / cuEventRecordWithFlags: the event covers what is guarded now. */
void guard_on_event_record(enum driver_entry_id id, CUevent event, CUstream stream);

/* After a successful cuEventSynchronize or a cuEventQuery that returned CUDA_SUCCESS. */
void guard_on_event_done(CUevent event);

/* Host functions (cuLaunchHostFunc): the driver calls one after its stream's earlier work is done,
 * so what it reads of copies enqueued before it is no race. Before the launch, with something
 * guarded, fn not NULL and the stream not capturing (a graph's host node runs many times),
 * guard_hostfn_wrap returns a wrapper to launch instead: guard_hostfn_run(wrapper), on the driver's
 * thread, releases what the stream's earlier work covers, calls fn(data) and frees the wrapper; a
 * launch that failed gives it to guard_hostfn_discard. NULL: launch fn as it is. */
struct guard_hostfn;
struct guard_hostfn *guard_hostfn_wrap(enum driver_entry_id id, CUstream stream, CUhostFn fn, void *data);
void CUDA_CB guard_hostfn_run(void *wrapper);
void guard_hostfn_discard(struct guard_hostfn *wrapper);
/* The same for a stream callback (cuStreamAddCallback): guard_callback_run(stream, status, wrapper)
 * releases only when the driver reports CUDA_SUCCESS (as a synchronization's error releases
 * nothing), then calls callback(stream, status, data); a failed add discards it likewise. */
struct guard_hostfn *guard_callback_wrap(enum driver_entry_id id, CUstream stream, CUstreamCallback callback,
                                         void *data);
void CUDA_CB guard_callback_run(CUstream stream, CUresult status, void *wrapper);

/* Before cuMemFreeHost / cuMemHostUnregister of the allocation at base: unprotect its ranges. */
void guard_on_host_release(uintptr_t base);

/* Forked child (one thread alive): unprotect every inherited range; never guard again. */
void guard_fork_child(void);

/* `,"guard":{...}` for the JSON summary into buf; 0 when the guard is off or it does not fit. */
size_t guard_summary_json(char *buf, size_t len);

/* The summary table's guard line (with its "==pid== " prefix and newline); 0 when off. */
size_t guard_summary_text(char *buf, size_t len);

/* At the very end (library destructor): the SUMMARY line on stderr when races were seen, then
 * _exit(guard_exitcode) when that key is set and a race was reported. */
void guard_at_exit(void);

/* --- for the fault handler (guard.c gives guard_fault to guard_signal_install) and io_hooks.c --- */

/* Number of slots now guarding pages: the I/O hooks' one-load fast path. */
extern int guard_live;

/* A fault at addr: 1 when it was the guard's (handled: the access may be retried), 0 when not.
 * uc is the handler's ucontext (the access's stack is unwound from it for the report).
 * Async-signal-safe. Given to guard_signal_install(). */
int guard_fault(uintptr_t addr, enum guard_access access, const void *uc);

/* The kernel is about to read (GUARD_READ, e.g. write(2)) or write (read(2)) [buf, buf+len) for
 * the I/O call `via`: races are reported and the buffer unprotected (or repaired) first. */
void guard_io(uintptr_t buf, size_t len, enum guard_access access, const char *via);

#endif
