/* clock.h: the interval clock of the hot paths. Every wrapper times its real call; two
 * clock_gettime(CLOCK_MONOTONIC) reads cost 40-80 ns there (issue #12), two reads of the time-stamp
 * counter a quarter of that. So durations are taken in ticks: the TSC where the CPU says it is
 * invariant (constant rate, runs in every power state) and reading it is cheaper than the clock,
 * CLOCK_MONOTONIC nanoseconds otherwise (a TSC the kernel keeps time with counts as invariant when
 * the constructor chooses: hypervisors may hide the CPUID bit). Ticks become nanoseconds with a
 * factor calibrated against CLOCK_MONOTONIC: provisionally on each conversion until the first read
 * is 10 ms old, then once (32.32 fixed point: one integer multiply per conversion).
 * Absolute times (log timestamps) keep using pinshim_now_ns() (common.h).
 * Contract: thread-safe, lock-free, async-signal-safe (cpuid, rdtsc, clock_gettime only), usable
 * before the shim is initialized: the choice is made at the first read and never changes. */
#ifndef PINSHIM_CLOCK_H
#define PINSHIM_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "gate.h"

enum clock_mode { CLOCK_MODE_UNSET, CLOCK_MODE_MONO, CLOCK_MODE_TSC };

/* The mode chosen (CLOCK_MODE_UNSET until the first read) and the factor once calibrated (0 before),
 * read by every timed call, are pinshim_gate.clock_mode and .ns_per_tick_q32 (base/gate.h); here
 * what calibration starts from. */
struct pinshim_clock {
    uint64_t tsc0, mono0; /* the first read (valid once anchored) */
    int anchored;
};
extern struct pinshim_clock pinshim_clock;

/* Chooses the mode (first read only) and returns it: from CPUID alone (async-signal-safe). */
int pinshim_clock_choose(void);

/* The same from the constructor, which may also ask the kernel which clock it trusts (sysfs). */
int pinshim_clock_init(void);

static inline uint64_t pinshim_rdtsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    return 0;
#endif
}

/* Now, in ticks: only differences of two reads mean anything (pinshim_ticks_ns). */
static inline uint64_t pinshim_ticks(void)
{
    int mode = __atomic_load_n(&pinshim_gate.clock_mode, __ATOMIC_RELAXED);
    if (PINSHIM_UNLIKELY(mode == CLOCK_MODE_UNSET))
        mode = pinshim_clock_choose();
    return mode == CLOCK_MODE_TSC ? pinshim_rdtsc() : pinshim_now_ns();
}

/* The provisional factor (before calibration ends); calibrates when the first read is old enough. */
uint64_t pinshim_clock_calibrate(void);

/* Nanoseconds between two reads t0 <= t1 of pinshim_ticks() (0 if a migration between CPUs made
 * them run backwards). */
static inline uint64_t pinshim_ticks_ns(uint64_t t0, uint64_t t1)
{
    if (PINSHIM_UNLIKELY(t1 < t0))
        return 0;
    if (__atomic_load_n(&pinshim_gate.clock_mode, __ATOMIC_RELAXED) != CLOCK_MODE_TSC)
        return t1 - t0;
    uint64_t f = __atomic_load_n(&pinshim_gate.ns_per_tick_q32, __ATOMIC_RELAXED);
    if (PINSHIM_UNLIKELY(f == 0))
        f = pinshim_clock_calibrate();
    return (uint64_t)(((unsigned __int128)(t1 - t0) * f) >> 32);
}

/* Nanoseconds since t0, a read of pinshim_ticks(). */
static inline uint64_t pinshim_ticks_since(uint64_t t0) { return pinshim_ticks_ns(t0, pinshim_ticks()); }

/* Calls that cannot block (an async copy of pinned or device memory, an event record, a query) and
 * copies too small to stage are timed on one call in PINSHIM_SAMPLE_EVERY, that time counted
 * PINSHIM_SAMPLE_EVERY times: the two reads around a call cost 60-70 ns in a PyTorch process on an
 * H200 host, 1 % of an event record. Each thread times the last call of a run whose length is
 * drawn at random, 1 to 2 x PINSHIM_SAMPLE_EVERY - 1 calls (a fixed stride would alias with a
 * program's own period: a copy and an event record in turn would time only copies), so that the
 * calls in between only count down (where a draw on every call was 15 instructions of every
 * counted copy). pinshim_sample_weight() says what the call in hand counts for: 0 (not timed) or
 * PINSHIM_SAMPLE_EVERY. Counting stays exact; the time totals become estimates. */
#define PINSHIM_SAMPLE_EVERY 16u

/* Seeds every thread's draws from now on: 0 from the TSC at each thread's first draw (the default),
 * else this number's low 32 bits (policy key sample_seed, set at load). */
void pinshim_sample_set_seed(uint64_t seed);

/* A thread's first state: the seed set, else the TSC; never 0. Out of line (clock.c). */
uint32_t pinshim_sample_first_state(void);

/* The thread's next random draw (xorshift32, seeded at its first draw). */
static inline uint32_t pinshim_sample_draw(void)
{
    uint32_t x = pinshim_thread.sample_state;
    if (PINSHIM_UNLIKELY(x == 0)) /* the thread's first draw */
        x = pinshim_sample_first_state();
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    pinshim_thread.sample_state = x;
    return x;
}

/* `every` (a power of two) for one call in `every`, drawn at random; 0 for the others. */
static inline uint64_t pinshim_one_in(uint32_t every)
{
    return (pinshim_sample_draw() & (every - 1)) == 0 ? every : 0;
}

/* The end of the thread's run (or its first sampled call): draws the next run; PINSHIM_SAMPLE_EVERY
 * at a run's end, 0 on the thread's first call. Out of line (clock.c). */
uint64_t pinshim_sample_due(void);

static inline uint64_t pinshim_sample_weight(void)
{
    uint32_t left = pinshim_thread.sample_left;
    if (PINSHIM_LIKELY(left > 1)) {
        pinshim_thread.sample_left = left - 1;
        return 0;
    }
    return pinshim_sample_due();
}

/* Blocking calls (a synchronize, which waits for the device) are timed on every call: their time
 * is what the summary's sync points report. Where that costs more than it tells, on a thread whose
 * last PINSHIM_SHORT_WAITS timed blocking calls each returned within PINSHIM_SHORT_WAIT_NS (a loop of
 * .item() calls: 5-10 us each), one call in PINSHIM_WAIT_SAMPLE_EVERY is timed, counted that many
 * times, until a timed one takes longer. The two reads cost 25-35 ns per synchronize (an H200 host,
 * 2026-11-27: 0.4 % of an .item()). Whether a call is timed, and its weight, are drawn before the
 * call, so the totals stay unbiased; but the first long waits after a long run of short ones are
 * estimated from the one among them that is timed, counted 4-fold (1 in 4 rather than 1 in 16:
 * that estimate is 4 times less wrong, at a quarter of the reads' cost rather than a sixteenth).
 * pinshim_wait_weight(adaptive) says what the call in hand counts for (1, PINSHIM_WAIT_SAMPLE_EVERY,
 * or 0: not timed); pinshim_wait_timed(ns) feeds a timed call's duration back. */
#define PINSHIM_SHORT_WAIT_NS 20000u
#define PINSHIM_SHORT_WAITS 256u
#define PINSHIM_WAIT_SAMPLE_EVERY 4u

static inline uint64_t pinshim_wait_weight(bool adaptive)
{
    if (!adaptive || pinshim_thread.short_waits < PINSHIM_SHORT_WAITS)
        return 1;
    return pinshim_one_in(PINSHIM_WAIT_SAMPLE_EVERY);
}

static inline void pinshim_wait_timed(uint64_t ns)
{
    if (ns >= PINSHIM_SHORT_WAIT_NS)
        pinshim_thread.short_waits = 0;
    else if (pinshim_thread.short_waits < PINSHIM_SHORT_WAITS)
        pinshim_thread.short_waits++;
}

/* A read of pinshim_ticks() when weight is not 0; 0 otherwise. */
static inline uint64_t pinshim_ticks_if(uint64_t weight) { return weight ? pinshim_ticks() : 0; }

/* weight times the nanoseconds since t0 (0 for weight 0, without reading the clock). */
static inline uint64_t pinshim_ticks_weighted(uint64_t t0, uint64_t weight)
{
    return weight ? pinshim_ticks_since(t0) * weight : 0;
}

#endif
