/* getproc.c: the cuGetProcAddress handlers (route 3). The real lookup runs first; if it found a row
 * the shim wraps, the answer is swapped for that row's wrapper. A lookup of "cuGetProcAddress"
 * itself thus returns the shim's own, so every later lookup passes here too. */
#include "base/driver.h"
#include "base/real.h"
#include "copy/driver_shapes.h"
#include "copy/entry.h"
#include "wrappers.h"

/* cuGetProcAddress answered *pfn for (symbol, version, flags): swaps in the wrapper when the row is
 * known and interception is on. Shared by the v1 and v2 handlers. */
static void answer_query(const char *symbol, void **pfn, int version, uint64_t flags)
{
    if (!pfn || !*pfn || !pinshim_policy.intercept)
        return;
    int id = driver_find_query(symbol, version, flags);
    if (id < 0 || driver_is_wrapper(*pfn))
        return;
    /* A version may carry a new ABI under the same name (driver 580 answers "cuCtxSynchronize" at
     * 13000 with cuCtxSynchronize_v2(CUcontext), which a cuda.h of 13000 declares too): wrap it only
     * if the driver answered with the very symbol the row is for, else pass the answer through. */
    if (*pfn != real_driver_symbol(driver_entries[id].export_name))
        return;
    /* If another route already fixed the row's real pointer, the wrapper keeps calling that one:
     * both are the driver's function for the same (name, version, flavour). */
    driver_set_real((enum driver_entry_id)id, *pfn);
    *pfn = driver_wrapper((enum driver_entry_id)id);
}

CUresult shape_getproc_v1(enum driver_entry_id id, SHAPE_getproc_v1_P)
{
    fn_getproc_v1 real = (fn_getproc_v1)driver_real(id);
    if (PINSHIM_UNLIKELY(!real))
        return entry_missing(id);
    CUresult result = real(symbol, pfn, version, flags);
    if (result == CUDA_SUCCESS && pinshim_thread.depth == 0)
        answer_query(symbol, pfn, version, flags);
    return result;
}

CUresult shape_getproc_v2(enum driver_entry_id id, SHAPE_getproc_v2_P)
{
    fn_getproc_v2 real = (fn_getproc_v2)driver_real(id);
    if (PINSHIM_UNLIKELY(!real))
        return entry_missing(id);
    CUresult result = real(symbol, pfn, version, flags, status);
    if (result == CUDA_SUCCESS && pinshim_thread.depth == 0)
        answer_query(symbol, pfn, version, flags);
    return result;
}
