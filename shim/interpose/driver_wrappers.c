/* driver_wrappers.c: one exported wrapper per row of base/driver_table.h, generated. A wrapper only
 * forwards to its shape's handler (copy/driver_shapes.h) with its row id. Each is defined under a
 * hidden name and exported as an alias carrying the libcuda symbol name (an asm label, so cuda.h's
 * renaming macros cannot interfere). The table below takes the hidden names' addresses: another
 * preloaded library that defines the same symbols cannot make the shim mistake its functions for
 * the shim's own. */
#include "wrappers.h"

#include "copy/driver_shapes.h"

/* A wrapper of a 1D copy or a sync point is a few moves and a jump, under 32 bytes on x86-64 (where
 * link-time optimization keeps its handler apart): aligned so, it never straddles two cache lines,
 * each a miss where the program's work evicts the shim between calls (at 16 bytes a build put
 * cuMemcpyHtoDAsync_v2's on two: tests/bench/footprint.py --mode p). */
#define WRAPPER_ALIGN 32

#define X(id, exp, query, vmin, vmax, flavour, shape)                                                  \
    static __attribute__((aligned(WRAPPER_ALIGN))) CUresult wrap_##id(SHAPE_##shape##_P)               \
    {                                                                                                  \
        return shape_##shape(ENTRY_##id SHAPE_##shape##_CA);                                           \
    }                                                                                                  \
    __attribute__((visibility("default"), alias("wrap_" #id))) CUresult export_##id(SHAPE_##shape##_P) __asm__(exp);
PINSHIM_DRIVER_ENTRIES(X)
#undef X

static void *const wrapper_fns[ENTRY_COUNT] = {
#define X(id, exp, query, vmin, vmax, flavour, shape) (void *)wrap_##id,
    PINSHIM_DRIVER_ENTRIES(X)
#undef X
};

void *driver_wrapper(enum driver_entry_id id) { return wrapper_fns[id]; }

int driver_wrapper_row(const void *fn)
{
    for (int i = 0; i < ENTRY_COUNT; i++)
        if (wrapper_fns[i] == fn)
            return i;
    return -1;
}

bool driver_is_wrapper(const void *fn) { return driver_wrapper_row(fn) >= 0; }
