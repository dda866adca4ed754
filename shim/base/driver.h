/* driver.h: the table of wrapped entry points at run time: each row's names and the real function
 * behind it, and the lookups by name the three routes use (exported symbol, dlsym, cuGetProcAddress).
 * The wrappers themselves are interpose/wrappers.h's.
 * Contract: all functions are thread-safe and lock-free. A real pointer, once known, never changes
 * (the first one found wins). driver_set_real() is never given one of the shim's own wrappers: the
 * interposition layer checks what dlsym and cuGetProcAddress answer (driver_is_wrapper()), and
 * libcuda's own lookup (driver_real()) cannot find them (it searches after the shim, then inside
 * libcuda). */
#ifndef PINSHIM_DRIVER_H
#define PINSHIM_DRIVER_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "driver_table.h"
#include "gate.h" /* pinshim_hot.driver: each row's real function and flavour */

struct driver_entry {
    const char *export_name;
    const char *query_name;
    int version_min, version_max; /* [min, max); max 0 = open */
    enum driver_flavour flavour;
};

extern const struct driver_entry driver_entries[ENTRY_COUNT];

/* The real function for a row, resolved from libcuda's export on first use; NULL if absent. */
void *driver_real(enum driver_entry_id id);

/* Remembers fn (never a wrapper of the shim) as the real function of a row. */
void driver_set_real(enum driver_entry_id id, void *fn);

/* The row exported under this exact symbol name, or -1. Cheap for names not starting "cu". */
int driver_find_export(const char *name);

/* The row cuGetProcAddress(name, version, flags) selects, or -1 (flags bit 2 = per-thread). */
int driver_find_query(const char *name, int version, uint64_t flags);

/* The stream a row's call runs on: NULL means the default stream of the row's flavour, which is
 * named explicitly (CU_STREAM_LEGACY or CU_STREAM_PER_THREAD). */
static inline CUstream driver_stream(enum driver_entry_id id, CUstream stream)
{
    if (stream)
        return stream;
    return pinshim_hot.driver[id].flavour == FLAVOUR_PTDS ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
}

#endif
