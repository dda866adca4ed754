/* driver_wrappers.c: one exported wrapper per row of driver_table.h, generated. A wrapper only
 * forwards to its shape's handler with its row id. Its exported name comes from an asm label, so
 * cuda.h's renaming macros (cuMemcpyHtoD -> cuMemcpyHtoD_v2, ...) cannot interfere. */
#include "driver.h"
#include "driver_shapes.h"

#define X(id, exp, query, vmin, vmax, flavour, shape)                                                  \
    __attribute__((visibility("default"))) CUresult wrap_##id(SHAPE_##shape##_P) __asm__(exp);        \
    CUresult wrap_##id(SHAPE_##shape##_P) { return shape_##shape(ENTRY_##id SHAPE_##shape##_CA); }
PINSHIM_DRIVER_ENTRIES(X)
#undef X

void *const driver_wrapper_fns[ENTRY_COUNT] = {
#define X(id, exp, query, vmin, vmax, flavour, shape) (void *)wrap_##id,
    PINSHIM_DRIVER_ENTRIES(X)
#undef X
};
