/* dlnext.c: checks that dlsym(RTLD_NEXT, ...) from a library loaded after the shim resolves
 * relative to that library (prints the letters and whether malloc/getenv are libc's). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

char probe_next_target(void);
void *probe_next(const char *name);

int main(void)
{
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    printf("next probe_target from next_a: %c\n", probe_next_target());
    printf("next malloc is libc's: %s\n", probe_next("malloc") == dlsym(libc, "malloc") ? "yes" : "no");
    printf("next getenv is libc's: %s\n", probe_next("getenv") == dlsym(libc, "getenv") ? "yes" : "no");
    printf("next of a missing name: %s\n", probe_next("no_such_symbol_xyz") ? "found" : "NULL");
    return 0;
}
