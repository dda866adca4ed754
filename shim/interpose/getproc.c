/* getproc.c: the cuGetProcAddress handlers (route 3). The real lookup runs first; if it found a row
 * the shim wraps, the answer is swapped for that row's wrapper (driver_answer_query). A lookup of
 * "cuGetProcAddress" itself thus returns the shim's own, so every later lookup passes here too. */
#include "copy/driver_shapes.h"
#include "copy/entry.h"

CUresult shape_getproc_v1(enum driver_entry_id id, SHAPE_getproc_v1_P)
{
    fn_getproc_v1 real = (fn_getproc_v1)driver_real(id);
    if (PINSHIM_UNLIKELY(!real))
        return entry_missing(id);
    CUresult result = real(symbol, pfn, version, flags);
    if (result == CUDA_SUCCESS && pinshim_depth == 0)
        driver_answer_query(symbol, pfn, version, flags);
    return result;
}

CUresult shape_getproc_v2(enum driver_entry_id id, SHAPE_getproc_v2_P)
{
    fn_getproc_v2 real = (fn_getproc_v2)driver_real(id);
    if (PINSHIM_UNLIKELY(!real))
        return entry_missing(id);
    CUresult result = real(symbol, pfn, version, flags, status);
    if (result == CUDA_SUCCESS && pinshim_depth == 0)
        driver_answer_query(symbol, pfn, version, flags);
    return result;
}
