/* driver.c: run-time state of the entry-point table (see driver.h), and the one definition of the
 * page every wrapped call reads: the gate and the rows' real functions (gate.h). */
#include "driver.h"

#include <string.h>

#include "common.h"
#include "real.h"

const struct driver_entry driver_entries[ENTRY_COUNT] = {
#define X(id, exp, query, vmin, vmax, flavour, shape) {exp, query, vmin, vmax, FLAVOUR_##flavour},
    PINSHIM_DRIVER_ENTRIES(X)
#undef X
};

/* The gate's page (gate.h), with each row's flavour known from the start. */
struct pinshim_hot pinshim_hot = {
    .driver = {
#define X(id, exp, query, vmin, vmax, flavour, shape) {NULL, FLAVOUR_##flavour},
        PINSHIM_DRIVER_ENTRIES(X)
#undef X
    },
};

void driver_set_real(enum driver_entry_id id, void *fn)
{
    if (!fn)
        return;
    void *expected = NULL;
    __atomic_compare_exchange_n(&pinshim_hot.driver[id].real, &expected, fn, false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE);
}

PINSHIM_HOT void *driver_real(enum driver_entry_id id)
{
    void *fn = __atomic_load_n(&pinshim_hot.driver[id].real, __ATOMIC_ACQUIRE);
    if (PINSHIM_LIKELY(fn != NULL))
        return fn;
    driver_set_real(id, real_driver_symbol(driver_entries[id].export_name));
    return __atomic_load_n(&pinshim_hot.driver[id].real, __ATOMIC_ACQUIRE);
}

int driver_find_export(const char *name)
{
    if (!name || name[0] != 'c' || name[1] != 'u')
        return -1;
    for (int i = 0; i < ENTRY_COUNT; i++)
        if (strcmp(driver_entries[i].export_name, name) == 0)
            return i;
    return -1;
}

int driver_find_query(const char *name, int version, uint64_t flags)
{
    if (!name || name[0] != 'c' || name[1] != 'u')
        return -1;
    enum driver_flavour want =
        (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? FLAVOUR_PTDS : FLAVOUR_LEGACY;
    for (int i = 0; i < ENTRY_COUNT; i++) {
        const struct driver_entry *e = &driver_entries[i];
        if (strcmp(e->query_name, name) != 0 || version < e->version_min)
            continue;
        if (e->version_max && version >= e->version_max)
            continue;
        if (e->flavour == FLAVOUR_ANY || e->flavour == want)
            return i;
    }
    return -1;
}
