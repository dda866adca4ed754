/* linkrate.c: the store behind linkrate.h: one pair of rates per device, as atomically written
 * doubles (bit patterns), written once by the pool's probe and read by the summary and the advice. */
#include "linkrate.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static uint64_t rates[LINKRATE_MAX_DEVICES][LINK_SIDES]; /* double bit patterns; 0 = not measured */

static uint64_t bits_of(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

void linkrate_set(int dev, double h2d_gbps, double d2h_gbps)
{
    if (dev < 0 || dev >= LINKRATE_MAX_DEVICES || !(h2d_gbps > 0) || !(d2h_gbps > 0))
        return;
    __atomic_store_n(&rates[dev][LINK_H2D], bits_of(h2d_gbps), __ATOMIC_RELEASE);
    __atomic_store_n(&rates[dev][LINK_D2H], bits_of(d2h_gbps), __ATOMIC_RELEASE);
}

double linkrate_get(int dev, enum link_side side)
{
    if (dev < 0 || dev >= LINKRATE_MAX_DEVICES)
        return 0;
    uint64_t b = __atomic_load_n(&rates[dev][side], __ATOMIC_ACQUIRE);
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

int linkrate_first_device(void)
{
    for (int d = 0; d < LINKRATE_MAX_DEVICES; d++)
        if (__atomic_load_n(&rates[d][LINK_D2H], __ATOMIC_ACQUIRE))
            return d;
    return -1;
}

void linkrate_forget(void) { memset(rates, 0, sizeof rates); }

/* Advances *used by what snprintf wrote (n); false once the text no longer fits in len. */
static bool fits(int n, size_t len, size_t *used)
{
    if (n < 0 || (size_t)n >= len - *used)
        return false;
    *used += (size_t)n;
    return true;
}

size_t linkrate_summary_json(char *buf, size_t len)
{
    size_t used = 0;
    for (int d = 0; d < LINKRATE_MAX_DEVICES; d++) {
        double h2d = linkrate_get(d, LINK_H2D), d2h = linkrate_get(d, LINK_D2H);
        if (h2d && !fits(snprintf(buf + used, len - used, "%s{\"device\":%d,\"h2d_gbps\":%.2f,\"d2h_gbps\":%.2f}",
                                  used ? "," : ",\"link\":[", d, h2d, d2h),
                         len, &used))
            return 0;
    }
    if (used && !fits(snprintf(buf + used, len - used, "]"), len, &used))
        return 0;
    return used;
}

size_t linkrate_summary_text(char *buf, size_t len)
{
    size_t used = 0;
    for (int d = 0; d < LINKRATE_MAX_DEVICES; d++) {
        double h2d = linkrate_get(d, LINK_H2D), d2h = linkrate_get(d, LINK_D2H);
        if (h2d && !fits(snprintf(buf + used, len - used,
                                  "==%d== link: device %d, pinned copies measured at %.2f GB/s H2D and %.2f GB/s D2H "
                                  "(link_probe, with the pool's memory)\n",
                                  (int)getpid(), d, h2d, d2h),
                         len, &used))
            return 0;
    }
    return used;
}
