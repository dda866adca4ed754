/* driver_wrappers.c: one exported wrapper per row of driver_table.h, generated. A wrapper only
 * forwards to its shape's handler with its row id. Each is defined under a hidden name and exported
 * as an alias carrying the libcuda symbol name (an asm label, so cuda.h's renaming macros cannot
 * interfere). The table below takes the hidden names' addresses: another preloaded library that
 * defines the same symbols cannot make the shim mistake its functions for the shim's own. */
#include "base/driver.h"
#include "copy/driver_shapes.h"

#define X(id, exp, query, vmin, vmax, flavour, shape)                                                  \
    static CUresult wrap_##id(SHAPE_##shape##_P) { return shape_##shape(ENTRY_##id SHAPE_##shape##_CA); } \
    __attribute__((visibility("default"), alias("wrap_" #id))) CUresult export_##id(SHAPE_##shape##_P) __asm__(exp);
PINSHIM_DRIVER_ENTRIES(X)
#undef X

void *const driver_wrapper_fns[ENTRY_COUNT] = {
#define X(id, exp, query, vmin, vmax, flavour, shape) (void *)wrap_##id,
    PINSHIM_DRIVER_ENTRIES(X)
#undef X
};
