/* alloc_forward.c: a preload library that interposes the malloc family and does nothing else: each
 * call goes straight on to glibc's own (__libc_*). Preloaded as a variant of
 * tests/bench/workloads/compare_builds.py (which builds a LIBRARY given as a .c file), it shows
 * what interposing the allocator costs a workload by itself, apart from what the shim's hooks do
 * in their fast path (one comparison in malloc, one filter load in free: shim/hostmem/alloc.c).
 * It forwards past any later preload, so run it instead of the shim, not with it.
 * Build: cc -O2 -shared -fPIC tests/bench/alloc_forward.c -o liballoc_forward.so */
#define _GNU_SOURCE
#include <stddef.h>

#include "libc_alloc.h"

void *malloc(size_t n) { return __libc_malloc(n); }
void *calloc(size_t count, size_t size) { return __libc_calloc(count, size); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t align, size_t n) { return __libc_memalign(align, n); }
