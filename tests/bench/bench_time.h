/* bench_time.h: what the C benchmarks that time rounds share: a clock read in nanoseconds and the
 * median of a set of times (observe_ab.c, wrapcost.c, guard_cost.c, multidev_bench.c,
 * reuse_bench.c, malloc_cost.c). Header-only; benchmark code, never part of the shim. */
#ifndef PINSHIM_BENCH_TIME_H
#define PINSHIM_BENCH_TIME_H

#include <stdlib.h>
#include <time.h>

/* clock's time in nanoseconds (CLOCK_MONOTONIC, or a CPU-time clock). */
static inline double bench_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int bench_by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (n > 0); sorts v. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The q-quantile (0 <= q <= 1) of v[0..n) (n > 0), linear between order statistics; v sorted. */
static inline double bench_quantile_sorted(const double *v, int n, double q)
{
    double at = q * (n - 1);
    int i = (int)at;
    return i + 1 < n ? v[i] + (at - i) * (v[i + 1] - v[i]) : v[n - 1];
}

#endif
