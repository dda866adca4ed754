/* dlsym_hook.c: the C half of the dlsym interposition (the entry is dlsym_entry.S).
 * For a wrapped driver name, dlsym answers with the shim's wrapper and remembers what the handle
 * really holds as that wrapper's real function; every other name goes to the real dlsym untouched. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "base/common.h"
#include "base/driver.h"
#include "base/real.h"
#include "policy.h"
#include "wrappers.h"

int pinshim_dlsym_wrapped_index(void *handle, const char *name);
void *pinshim_dlsym_answer(void *handle, const char *name, int index);

/* Called from dlsym_entry.S before anything else: also makes sure the real dlsym is known.
 * RTLD_NEXT is never answered here: that is how another interposer finds the definition after its
 * own, and only the real dlsym, reached with the caller's frame, knows who the caller is. */
int pinshim_dlsym_wrapped_index(void *handle, const char *name)
{
    if (real_dlsym_ready() != 0 || handle == RTLD_NEXT)
        return -1;
    return driver_find_export(name);
}

void *pinshim_dlsym_answer(void *handle, const char *name, int index)
{
    void *real = pinshim_real_dlsym(handle, name);
    if (!real)
        return NULL; /* the handle does not have it: the real dlsym already set dlerror */
    if (driver_is_wrapper(real)) {
        /* RTLD_DEFAULT found the shim's own export. Without the shim the lookup would find libcuda's
         * function, or nothing when libcuda is not loaded: answer likewise. */
        if (!driver_real((enum driver_entry_id)index))
            return NULL;
        return pinshim_policy.intercept ? driver_wrapper((enum driver_entry_id)index)
                                        : driver_real((enum driver_entry_id)index);
    }
    driver_set_real((enum driver_entry_id)index, real);
    return pinshim_policy.intercept ? driver_wrapper((enum driver_entry_id)index) : real;
}
