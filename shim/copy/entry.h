/* entry.h: the prologue every shape handler starts with: find its real function, and forward
 * untouched when the shim is not observing (its own driver calls, or interception off).
 * Contract: a missing real function (libcuda lacks the symbol) is CUDA_ERROR_NOT_FOUND, warned once. */
#ifndef PINSHIM_ENTRY_H
#define PINSHIM_ENTRY_H

#include <cuda.h>

#include "base/common.h"
#include "base/driver.h"
#include "base/gate.h"
#include "observe/stats.h"
#include "policy.h"

static inline bool entry_observing(void)
{
    return pinshim_thread.depth == 0 && __atomic_load_n(&pinshim_gate.observing, __ATOMIC_RELAXED);
}

CUresult entry_missing(enum driver_entry_id id);

#define ENTRY_PROLOGUE(shape, ...)                                                                     \
    fn_##shape real = (fn_##shape)driver_real(id);                                                     \
    if (PINSHIM_UNLIKELY(!real))                                                                       \
        return entry_missing(id);                                                                      \
    if (!entry_observing())                                                                            \
        return real(__VA_ARGS__);                                                                      \
    pinshim_thread.caller = (uintptr_t)__builtin_return_address(0);                                    \
    stats_add_call(id)

#endif
