/* common.h: small pieces every shim file uses: symbol visibility, the clock, the
 * thread-local reentrancy depth, the shim's own threads, and the one place diagnostics are written.
 * Contract: everything here is safe to call before the shim is initialized. */
#ifndef PINSHIM_COMMON_H
#define PINSHIM_COMMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "thread.h"

#define PINSHIM_EXPORT __attribute__((visibility("default")))
#define PINSHIM_LIKELY(x) __builtin_expect(!!(x), 1)
#define PINSHIM_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* A function every observed copy or synchronize runs: gcc puts these in the hot text subsection,
 * which the linker lays out together, so such a call touches a few code pages instead of one or two
 * per source file (in a PyTorch process the shim's code is cold at every call). */
#define PINSHIM_HOT __attribute__((hot))
/* A handler every counted copy or synchronize enters: it starts on a cache line of its own, so that
 * its path's first instructions do not share a line with whatever the linker put before it (one
 * line more per call, come and gone with unrelated changes: tests/bench/footprint.py). */
#define PINSHIM_LINE_START __attribute__((hot, aligned(64)))

/* One pause of a spin-wait loop (the CPU's hint that this thread waits on memory; 10-150 cycles
 * depending on the CPU); nothing where there is no such instruction. */
static inline void pinshim_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* For readers of a lock-free table whose slots another thread fills after claiming them: spins
 * (at most `spins` pauses) while *state == filling; returns the state seen last, which is still
 * `filling` when the filler did not finish in time (the reader then treats the slot as unusable). */
static inline int pinshim_spin_while(const int *state, int filling, int spins)
{
    int st = __atomic_load_n(state, __ATOMIC_ACQUIRE);
    for (int i = 0; st == filling && i < spins; i++) {
        pinshim_pause();
        st = __atomic_load_n(state, __ATOMIC_ACQUIRE);
    }
    return st;
}

static inline uint64_t pinshim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* pinshim_thread.depth > 0 means "the shim is calling the driver itself": wrappers then forward
 * without classifying or counting (base/thread.h).
 * pinshim_thread.caller is the return address into the program (or the CUDA runtime) of the wrapper
 * call being handled: wrappers tail-call their handlers, so the handler's return address is the
 * caller's. A cheap hint for the call site; observe/callsite.c unwinds only when it points into
 * CUDA's own libraries. */
static inline void pinshim_enter(void) { pinshim_thread.depth++; }
static inline void pinshim_leave(void) { pinshim_thread.depth--; }

/* pthread_cond_timedwait for at most `ns` on a condition variable made with its default clock
 * (PTHREAD_COND_INITIALIZER: CLOCK_REALTIME, so the deadline is taken from that clock). */
void pinshim_cond_wait_ns(pthread_cond_t *cond, pthread_mutex_t *mutex, uint64_t ns);

/* Starts a thread of the shim's own, named `name` (a string that outlives it, at most 15 chars,
 * "pinshim-*": stage/omp_team.c tells the program's threads from the shim's by name) before
 * main_fn runs, with every signal blocked (the program's signals are not for the shim's threads).
 * Detached when `joinable` is NULL, else joinable and its handle stored there. pthread_create's
 * result (ENOMEM when the start record cannot be allocated). */
int pinshim_start_thread(const char *name, void *(*main_fn)(void *), void *arg, pthread_t *joinable);

/* Diagnostics go to stderr with the sanitizer-style "==pid== pinshim:" prefix.
 * Thread-safe (one write(2) per message); not async-signal-safe (uses vsnprintf). */
void pinshim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
