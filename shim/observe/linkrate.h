/* linkrate.h: the pinned bandwidth each device's link reached, measured once per device when the
 * staging pool got its first pinned memory there (pool.c, policy key link_probe), for the advice's
 * estimates and the summary. Observation only: nothing here calls the driver.
 * Contract: lock-free and thread-safe; a rate of 0 means "not measured". */
#ifndef PINSHIM_LINKRATE_H
#define PINSHIM_LINKRATE_H

#include <stdbool.h>
#include <stddef.h>

#define LINKRATE_MAX_DEVICES 64

enum link_side { LINK_H2D, LINK_D2H, LINK_SIDES };

void linkrate_set(int dev, double h2d_gbps, double d2h_gbps);

/* The measured rate of one device and side, 0 when not measured. */
double linkrate_get(int dev, enum link_side side);

/* The lowest device ordinal measured, or -1. */
int linkrate_first_device(void);

/* Forked child: what the parent measured describes the same links, but the child has no pool. */
void linkrate_forget(void);

/* The summary's section (observe/stats.h): ,"link":[{"device":..,"h2d_gbps":..,"d2h_gbps":..},..]
 * and one "==pid== link: ..." line per measured device. */
size_t linkrate_summary_json(char *buf, size_t len);
size_t linkrate_summary_text(char *buf, size_t len);

#endif
