/* hooks_off.c: linked into the measurement builds of `make bench-hook-variants` only
 * (build/bench/libpinshim-no-*-hooks.so, the library with some of its allocation hooks kept
 * local): sets PINSHIM_INTERCEPT=off before the shim's constructor reads the policy, so such a
 * build never observes a copy. Without its hooks the shim would not hear of frees and unmappings
 * and could not keep its registrations coherent; with interception off it registers nothing.
 * What those builds measure: the shim present with interception off, less the hooks left out
 * (tests/bench/workloads/README.md, "What the allocation hooks cost"). */
#include <stdlib.h>

__attribute__((constructor(101))) static void interception_off(void) { setenv("PINSHIM_INTERCEPT", "off", 1); }
