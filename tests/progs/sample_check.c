/* sample_check.c: shim/base/clock.c's sampling (compiled in here, with clock.h): the calls
 * pinshim_sample_weight() times on one thread. Checks that the thread's first call is not timed,
 * that a timed call counts PINSHIM_SAMPLE_EVERY and the others 0, that no run between two timed
 * calls is longer than 2 x PINSHIM_SAMPLE_EVERY - 1 calls, that every run length from 1 to that
 * occurs, that the weights add up to the calls within 1 % (the time totals stay unbiased), and that
 * two calls in turn (a copy, an event record) are timed alike (a fixed stride would time only one).
 * Prints "sample: N calls, T timed as the model" or the first difference and exits 1. */
#include <stdio.h>
#include <stdlib.h>

#include "../../shim/base/clock.c"

__thread struct pinshim_thread pinshim_thread __attribute__((tls_model("initial-exec")));
struct pinshim_hot pinshim_hot;

#define CALLS 4000000u
#define LONGEST (2 * PINSHIM_SAMPLE_EVERY - 1)

static int fail(const char *what, unsigned long long a, unsigned long long b)
{
    printf("sample: %s (%llu, %llu)\n", what, a, b);
    return 1;
}

int main(void)
{
    if (pinshim_sample_weight() != 0)
        return fail("the thread's first call was timed", 0, 0);
    unsigned long long weights = 0, timed = 0, by_parity[2] = {0, 0}, run = 0;
    unsigned long long lengths[LONGEST + 1] = {0};
    for (unsigned i = 0; i < CALLS; i++) {
        uint64_t w = pinshim_sample_weight();
        run++;
        if (w != 0 && w != PINSHIM_SAMPLE_EVERY)
            return fail("a weight neither 0 nor PINSHIM_SAMPLE_EVERY", i, w);
        if (run > LONGEST)
            return fail("a run longer than 2 x PINSHIM_SAMPLE_EVERY - 1 calls", i, run);
        if (w) {
            weights += w;
            timed++;
            by_parity[i & 1]++;
            lengths[run]++;
            run = 0;
        }
    }
    for (unsigned n = 1; n <= LONGEST; n++)
        if (!lengths[n])
            return fail("no run of this length", n, 0);
    if (weights < CALLS / 100 * 99 || weights > CALLS / 100 * 101)
        return fail("the weights do not add up to the calls within 1 %", weights, CALLS);
    unsigned long long lo = by_parity[0] < by_parity[1] ? by_parity[0] : by_parity[1];
    if (lo < timed / 2 / 100 * 97)
        return fail("two calls in turn are not timed alike", by_parity[0], by_parity[1]);
    printf("sample: %u calls, %llu timed as the model\n", CALLS, timed);
    return 0;
}
