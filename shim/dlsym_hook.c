/* dlsym_hook.c: the C half of the dlsym interposition (the entry is dlsym_entry.S).
 * For a wrapped driver name, dlsym answers with the shim's wrapper and remembers what the handle
 * really holds as that wrapper's real function; every other name goes to the real dlsym untouched. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "common.h"
#include "driver.h"
#include "policy.h"
#include "real.h"

int pinshim_dlsym_wrapped_index(const char *name);
void *pinshim_dlsym_answer(void *handle, const char *name, int index);

/* Called from dlsym_entry.S before anything else: also makes sure the real dlsym is known. */
int pinshim_dlsym_wrapped_index(const char *name)
{
    if (real_dlsym_ready() != 0)
        return -1;
    return driver_find_export(name);
}

void *pinshim_dlsym_answer(void *handle, const char *name, int index)
{
    void *real = pinshim_real_dlsym(handle, name);
    if (!real)
        return NULL; /* the handle does not have it: the real dlsym already set dlerror */
    if (driver_is_wrapper(real))
        return real; /* RTLD_DEFAULT found the shim itself; the wrapper resolves its real lazily */
    driver_set_real((enum driver_entry_id)index, real);
    return pinshim_policy.intercept ? driver_wrapper((enum driver_entry_id)index) : real;
}
