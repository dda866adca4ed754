/* clock.c: choosing the interval clock and calibrating the TSC against CLOCK_MONOTONIC (see
 * clock.h). */
#include "clock.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#define CALIBRATE_AFTER_NS 10000000ull /* 10 ms: two clock reads' skew is then a few ppm */
#define PROBE_READS 8
#define PROBE_ROUNDS 5

struct pinshim_clock pinshim_clock;

static uint32_t sample_seed; /* 0: the TSC */

void pinshim_sample_set_seed(uint64_t seed)
{
    __atomic_store_n(&sample_seed, (uint32_t)seed | (seed ? 1u : 0u), __ATOMIC_RELAXED);
}

uint32_t pinshim_sample_first_state(void)
{
    uint32_t seed = __atomic_load_n(&sample_seed, __ATOMIC_RELAXED);
    return seed ? seed : (uint32_t)pinshim_rdtsc() | 1u;
}

uint64_t pinshim_sample_due(void)
{
    bool first = pinshim_thread.sample_left == 0;
    pinshim_thread.sample_left = 1 + pinshim_sample_draw() % (2 * PINSHIM_SAMPLE_EVERY - 1);
    return first ? 0 : PINSHIM_SAMPLE_EVERY;
}

/* CPUID 8000_0007h EDX bit 8: the TSC runs at a constant rate and does not stop in deep C-states. */
static bool tsc_invariant(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return false;
    return __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8));
#else
    return false;
#endif
}

/* The kernel itself keeps time with the TSC (it checked that it is stable and synchronized across
 * CPUs): some hypervisors hide the invariant bit from guests whose TSC is fine. */
static bool kernel_clock_is_tsc(void)
{
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[16];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    return n == 4 && memcmp(buf, "tsc\n", 4) == 0;
}

/* A TSC the CPU or the kernel vouches for, and reading it cheaper than clock_gettime (a hypervisor
 * may trap rdtsc). */
static bool tsc_wanted(bool may_read_files)
{
#if defined(__x86_64__) || defined(__i386__)
    if (!tsc_invariant() && !(may_read_files && kernel_clock_is_tsc()))
        return false;
    /* the fastest of a few rounds of each: a preemption in one round must not decide */
    volatile uint64_t sink = 0;
    uint64_t best_tsc = UINT64_MAX, best_clock = UINT64_MAX;
    for (int round = 0; round < PROBE_ROUNDS; round++) {
        uint64_t t0 = pinshim_now_ns();
        for (int i = 0; i < PROBE_READS; i++)
            sink += pinshim_rdtsc();
        uint64_t t1 = pinshim_now_ns();
        for (int i = 0; i < PROBE_READS; i++)
            sink += pinshim_now_ns();
        uint64_t t2 = pinshim_now_ns();
        if (t1 - t0 < best_tsc)
            best_tsc = t1 - t0;
        if (t2 - t1 < best_clock)
            best_clock = t2 - t1;
    }
    (void)sink;
    return best_tsc <= best_clock;
#else
    return false;
#endif
}

static int choose(bool may_read_files)
{
    int mode = __atomic_load_n(&pinshim_gate.clock_mode, __ATOMIC_ACQUIRE);
    if (mode != CLOCK_MODE_UNSET)
        return mode;
    int want = tsc_wanted(may_read_files) ? CLOCK_MODE_TSC : CLOCK_MODE_MONO;
    uint64_t tsc = pinshim_rdtsc(), mono = pinshim_now_ns();
    int expected = CLOCK_MODE_UNSET;
    if (__atomic_compare_exchange_n(&pinshim_gate.clock_mode, &expected, want, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        pinshim_clock.tsc0 = tsc;
        pinshim_clock.mono0 = mono;
        __atomic_store_n(&pinshim_clock.anchored, 1, __ATOMIC_RELEASE);
        return want;
    }
    return expected; /* another thread chose first: its choice holds for everyone */
}

int pinshim_clock_choose(void) { return choose(false); }

int pinshim_clock_init(void) { return choose(true); }

/* dm nanoseconds over dt ticks, as a 32.32 fixed-point factor (never 0). */
static uint64_t factor(uint64_t dm, uint64_t dt)
{
    uint64_t f = (uint64_t)(((unsigned __int128)dm << 32) / dt);
    return f ? f : 1;
}

/* The factor over a short spin of its own: for the moment between another thread's choice and its
 * anchor (no waiting on that thread: this may run in a signal handler that interrupted it). */
static uint64_t spin_factor(void)
{
    uint64_t m0 = pinshim_now_ns(), t0 = pinshim_rdtsc(), m1, t1;
    do {
        m1 = pinshim_now_ns();
        t1 = pinshim_rdtsc();
    } while (m1 - m0 < 2000 && t1 > t0);
    return t1 > t0 ? factor(m1 - m0, t1 - t0) : 1ull << 32;
}

uint64_t pinshim_clock_calibrate(void)
{
    if (!__atomic_load_n(&pinshim_clock.anchored, __ATOMIC_ACQUIRE))
        return spin_factor();
    uint64_t mono = pinshim_now_ns(), tsc = pinshim_rdtsc();
    if (mono <= pinshim_clock.mono0 || tsc <= pinshim_clock.tsc0)
        return spin_factor();
    uint64_t f = factor(mono - pinshim_clock.mono0, tsc - pinshim_clock.tsc0);
    if (mono - pinshim_clock.mono0 >= CALIBRATE_AFTER_NS) /* good for good: later conversions only multiply */
        __atomic_store_n(&pinshim_gate.ns_per_tick_q32, f, __ATOMIC_RELAXED);
    return f;
}
