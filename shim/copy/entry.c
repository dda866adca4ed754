/* entry.c: what a handler does when the driver lacks its real function (see entry.h). */
#include "entry.h"

CUresult entry_missing(enum driver_entry_id id)
{
    static bool warned[ENTRY_COUNT];
    if (!__atomic_exchange_n(&warned[id], true, __ATOMIC_RELAXED))
        pinshim_warn("warning: %s was called but no CUDA driver providing it is loaded; returning "
                     "CUDA_ERROR_NOT_FOUND", driver_entries[id].export_name);
    return CUDA_ERROR_NOT_FOUND;
}
