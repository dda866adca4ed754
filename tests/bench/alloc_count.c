/* alloc_count.c: a preload library that counts a program's allocator calls, to weigh what the
 * shim's allocation hooks cost a workload (a small malloc/free pair took 2.0-2.7 ns more under the
 * shim before their fast path became a tail call, about 1 ns since: tests/bench/malloc_cost.c). malloc, calloc, realloc, free, posix_memalign, aligned_alloc
 * and memalign are counted and forwarded to glibc's own (__libc_*), so it needs no dlsym; it
 * forwards past any later preload, so run it instead of the shim, not with it (the program's
 * calls are the same either way).
 * alloc_count_calls() reads the calls so far, alloc_count_large() those that asked for 1 MiB or
 * more (the shim's track_min_bytes default: what it tracks); a script finds them with ctypes
 * (tests/bench/workloads/train_phases.py reports both per step). ALLOC_COUNT_REPORT=1 prints the
 * totals on stderr at exit. Counts are relaxed atomics: exact once the threads counted are done.
 * Build: cc -O2 -shared -fPIC tests/bench/alloc_count.c -o liballoc_count.so (compare_builds.py
 * builds a LIBRARY given as a .c file so). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "libc_alloc.h"

#define LARGE_BYTES ((size_t)1 << 20)

static uint64_t calls, large;

static inline void note_call(size_t n)
{
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    if (n >= LARGE_BYTES)
        __atomic_add_fetch(&large, 1, __ATOMIC_RELAXED);
}

uint64_t alloc_count_calls(void) { return __atomic_load_n(&calls, __ATOMIC_RELAXED); }
uint64_t alloc_count_large(void) { return __atomic_load_n(&large, __ATOMIC_RELAXED); }

void *malloc(size_t n)
{
    note_call(n);
    return __libc_malloc(n);
}

void *calloc(size_t count, size_t size)
{
    note_call(count && size > SIZE_MAX / count ? SIZE_MAX : count * size);
    return __libc_calloc(count, size);
}

void *realloc(void *p, size_t n)
{
    note_call(n);
    return __libc_realloc(p, n);
}

void free(void *p)
{
    if (p)
        note_call(0);
    __libc_free(p);
}

void *memalign(size_t align, size_t n)
{
    note_call(n);
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    note_call(n);
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    note_call(n);
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

__attribute__((destructor)) static void report(void)
{
    const char *want = getenv("ALLOC_COUNT_REPORT");
    if (want && want[0] == '1') {
        char line[96];
        int len = snprintf(line, sizeof line, "alloc_count: %llu allocator calls, %llu of 1 MiB or more\n",
                           (unsigned long long)alloc_count_calls(), (unsigned long long)alloc_count_large());
        if (len > 0)
            (void)!write(STDERR_FILENO, line, (size_t)len);
    }
}
