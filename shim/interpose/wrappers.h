/* wrappers.h: the shim's wrapper for each row of the driver table (generated in driver_wrappers.c,
 * exported under the libcuda symbol names: route 1). Routes 2 and 3 (dlsym_hook.c, getproc.c) hand
 * them out in place of the driver's functions and use driver_is_wrapper() so that no wrapper is
 * ever taken for a real function (base/driver.h).
 * Contract: thread-safe, lock-free, constant after load. */
#ifndef PINSHIM_WRAPPERS_H
#define PINSHIM_WRAPPERS_H

#include <stdbool.h>

#include "base/driver_table.h"

/* The shim's wrapper for a row. */
void *driver_wrapper(enum driver_entry_id id);

/* The row whose wrapper fn is, or -1. */
int driver_wrapper_row(const void *fn);

/* True if fn is one of the shim's wrappers. */
bool driver_is_wrapper(const void *fn);

#endif
