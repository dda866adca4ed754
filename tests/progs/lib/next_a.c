/* next_a.c: a library loaded after the shim that looks up "the next" definitions with
 * dlsym(RTLD_NEXT, ...). It defines probe_target itself; the next one is next_b's. If the shim's
 * dlsym resolved RTLD_NEXT relative to the shim instead of this library, it would find this
 * library's own probe_target. */
#define _GNU_SOURCE
#include <dlfcn.h>

char probe_target(void);
char probe_target(void) { return 'A'; }

char probe_next_target(void);
char probe_next_target(void)
{
    char (*next)(void) = (char (*)(void))dlsym(RTLD_NEXT, "probe_target");
    return next ? next() : '?';
}

void *probe_next(const char *name);
void *probe_next(const char *name) { return dlsym(RTLD_NEXT, name); }
