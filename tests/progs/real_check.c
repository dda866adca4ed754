/* real_check.c: shim/base/real.c (compiled in here, with base/util.c) and its symbol cache. With the
 * libc dlsym replaced by a counting one: a symbol looked up before libcuda is loaded is NULL and is
 * looked up again later (the program may load libcuda after the shim first asks); once the fake
 * libcuda (argv[1]) is loaded, a symbol it exports is found and cached (no further lookup), and one
 * it lacks is NULL and never looked up again. Prints "real: symbol cache as specified" or the first
 * problem and exits 1. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../shim/base/real.c"
#include "../../shim/base/util.c" /* the reentrancy depth */

static unsigned lookups;

static void *counting_dlsym(void *handle, const char *name)
{
    lookups++;
    return dlsym(handle, name);
}

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok && !failures++)
        printf("real: %s\n", what);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: real_check PATH/libcuda.so.1 (the fake driver)\n");
        return 2;
    }
    pinshim_real_dlsym = counting_dlsym; /* real_dlsym_ready() keeps a dlsym already set */
    static void *init_slot, *absent_slot;

    expect(real_driver_symbol_cached(&init_slot, "cuInit") == NULL, "cuInit found before libcuda is loaded");
    expect(init_slot == NULL, "a symbol not found before libcuda is loaded was cached");

    if (!dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) {
        printf("real: cannot load %s: %s\n", argv[1], dlerror());
        return 1;
    }
    expect(real_libcuda() != NULL, "the loaded libcuda.so.1 not found by its name");

    void *init = real_driver_symbol_cached(&init_slot, "cuInit");
    expect(init != NULL, "cuInit not found once libcuda is loaded");
    unsigned before = lookups;
    expect(real_driver_symbol_cached(&init_slot, "cuInit") == init, "cuInit's cached address changed");
    expect(lookups == before, "cuInit looked up again once cached");

    expect(real_driver_symbol_cached(&absent_slot, "cuNoSuchEntryPoint") == NULL, "an absent symbol found");
    before = lookups;
    for (int i = 0; i < 1000; i++)
        expect(real_driver_symbol_cached(&absent_slot, "cuNoSuchEntryPoint") == NULL, "an absent symbol found later");
    expect(lookups == before, "a symbol the loaded libcuda lacks looked up again");

    if (failures)
        return 1;
    printf("real: symbol cache as specified\n");
    return 0;
}
