/* units.h: byte counts and durations as people read them ("64.0 MiB", "2.31 ms"), for the
 * summary table and the advice. Contract: writes at most len bytes into buf and returns buf;
 * thread-safe; not async-signal-safe (snprintf). */
#ifndef PINSHIM_UNITS_H
#define PINSHIM_UNITS_H

#include <stddef.h>
#include <stdint.h>

const char *units_bytes(uint64_t bytes, char *buf, size_t len);
const char *units_ns(uint64_t ns, char *buf, size_t len);

#endif
