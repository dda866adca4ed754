/* alloc_count.c: a preload library that counts a program's calls to the functions the shim's
 * allocation hooks interpose (shim/hostmem/alloc.c), to weigh what those hooks cost a workload and
 * which of them it leans on (tests/bench/malloc_cost.c times a pair of each kind with and without
 * the shim). malloc, calloc, realloc, free, posix_memalign, aligned_alloc and memalign are counted
 * and forwarded to glibc's own (__libc_*), so it needs no dlsym; mmap, munmap, mremap and madvise
 * (the calls that reach them through the dynamic linker, not glibc's malloc's own) are counted
 * and made as system calls. It forwards past any later preload, so run it instead of the shim, not
 * with it (the program's calls are the same either way).
 * alloc_count_calls() reads the malloc family's calls so far (free(NULL) not counted),
 * alloc_count_large() those that asked for 1 MiB or more (the shim's track_min_bytes default: what
 * it tracks), alloc_count_name(i) and alloc_count_of(i) each function's name and calls (i from 0;
 * the name is NULL past the last). A script finds them with ctypes (tests/bench/workloads/
 * train_phases.py reports them per step). ALLOC_COUNT_REPORT=1 prints the totals on stderr at exit.
 * Counts are relaxed atomics: exact once the threads counted are done.
 * Build: cc -O2 -shared -fPIC tests/bench/alloc_count.c -o liballoc_count.so (compare_builds.py
 * builds a LIBRARY given as a .c file so). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libc_alloc.h"

#define LARGE_BYTES ((size_t)1 << 20)

enum fn { F_MALLOC, F_CALLOC, F_REALLOC, F_FREE, F_POSIX_MEMALIGN, F_ALIGNED_ALLOC, F_MEMALIGN,
          F_MMAP, F_MUNMAP, F_MREMAP, F_MADVISE, F_COUNT };
static const char *const NAMES[F_COUNT] = {"malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc",
                                           "memalign", "mmap", "munmap", "mremap", "madvise"};
#define MALLOC_FAMILY F_MMAP /* the functions before F_MMAP */

static uint64_t counts[F_COUNT], large;

static inline void note_call(enum fn f, size_t n)
{
    __atomic_add_fetch(&counts[f], 1, __ATOMIC_RELAXED);
    if (n >= LARGE_BYTES && f < MALLOC_FAMILY)
        __atomic_add_fetch(&large, 1, __ATOMIC_RELAXED);
}

uint64_t alloc_count_calls(void)
{
    uint64_t sum = 0;
    for (int f = 0; f < MALLOC_FAMILY; f++)
        sum += __atomic_load_n(&counts[f], __ATOMIC_RELAXED);
    return sum;
}
uint64_t alloc_count_large(void) { return __atomic_load_n(&large, __ATOMIC_RELAXED); }
const char *alloc_count_name(unsigned i) { return i < F_COUNT ? NAMES[i] : NULL; }
uint64_t alloc_count_of(unsigned i) { return i < F_COUNT ? __atomic_load_n(&counts[i], __ATOMIC_RELAXED) : 0; }

void *malloc(size_t n)
{
    note_call(F_MALLOC, n);
    return __libc_malloc(n);
}

void *calloc(size_t count, size_t size)
{
    note_call(F_CALLOC, count && size > SIZE_MAX / count ? SIZE_MAX : count * size);
    return __libc_calloc(count, size);
}

void *realloc(void *p, size_t n)
{
    note_call(F_REALLOC, n);
    return __libc_realloc(p, n);
}

void free(void *p)
{
    if (p)
        note_call(F_FREE, 0);
    __libc_free(p);
}

void *memalign(size_t align, size_t n)
{
    note_call(F_MEMALIGN, n);
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    note_call(F_ALIGNED_ALLOC, n);
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    note_call(F_POSIX_MEMALIGN, n);
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    note_call(F_MMAP, 0);
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) { return mmap(addr, len, prot, flags, fd, off); }

int munmap(void *addr, size_t len)
{
    note_call(F_MUNMAP, 0);
    return (int)syscall(SYS_munmap, addr, len);
}

void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    void *target = flags & MREMAP_FIXED ? va_arg(ap, void *) : NULL;
    va_end(ap);
    note_call(F_MREMAP, 0);
    return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, target);
}

int madvise(void *addr, size_t len, int advice)
{
    note_call(F_MADVISE, 0);
    return (int)syscall(SYS_madvise, addr, len, advice);
}

__attribute__((destructor)) static void report(void)
{
    const char *want = getenv("ALLOC_COUNT_REPORT");
    if (!want || want[0] != '1')
        return;
    char line[512];
    int len = snprintf(line, sizeof line, "alloc_count: %llu allocator calls, %llu of 1 MiB or more;",
                       (unsigned long long)alloc_count_calls(), (unsigned long long)alloc_count_large());
    for (int f = 0; f < F_COUNT && len > 0 && (size_t)len < sizeof line; f++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s %llu", NAMES[f],
                        (unsigned long long)alloc_count_of((unsigned)f));
    if (len > 0 && (size_t)len < sizeof line - 1) {
        line[len++] = '\n';
        (void)!write(STDERR_FILENO, line, (size_t)len);
    }
}
