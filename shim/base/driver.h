/* driver.h: the table of wrapped entry points at run time: each row's real pointer, its wrapper,
 * and the lookups the three routes use (exported symbol, dlsym, cuGetProcAddress).
 * Contract: all functions are thread-safe and lock-free. A real pointer, once known, never changes
 * (the first one found wins); the shim's own wrappers are never stored as real pointers. */
#ifndef PINSHIM_DRIVER_H
#define PINSHIM_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "driver_table.h"

struct driver_entry {
    const char *export_name;
    const char *query_name;
    int version_min, version_max; /* [min, max); max 0 = open */
    enum driver_flavour flavour;
};

extern const struct driver_entry driver_entries[ENTRY_COUNT];

/* The real function for a row, resolved from libcuda's export on first use; NULL if absent. */
void *driver_real(enum driver_entry_id id);

/* Remembers fn as the real function of a row (from dlsym or cuGetProcAddress). */
void driver_set_real(enum driver_entry_id id, void *fn);

/* The shim's wrapper for a row. */
void *driver_wrapper(enum driver_entry_id id);

/* True if fn is one of the shim's wrappers. */
bool driver_is_wrapper(const void *fn);

/* The row exported under this exact symbol name, or -1. Cheap for names not starting "cu". */
int driver_find_export(const char *name);

/* The row cuGetProcAddress(name, version, flags) selects, or -1 (flags bit 2 = per-thread). */
int driver_find_query(const char *name, int version, uint64_t flags);

/* cuGetProcAddress answered *pfn for (symbol, version, flags): swaps in the wrapper when the
 * row is known and interception is on. Shared by the v1 and v2 wrappers. */
void driver_answer_query(const char *symbol, void **pfn, int version, uint64_t flags);

#endif
