/* malloc_cost.c: what the shim's allocator hooks add to small allocations. Times N pairs of a
 * small allocation (16..1528 bytes) and its free, best of 15 runs, and prints ns per pair. KIND
 * picks the allocation: malloc (the default), calloc, realloc (a block grown then freed, two
 * calls), posix_memalign, aligned_alloc or memalign (64-byte aligned, as PyTorch's CPU tensors and
 * C++'s over-aligned new ask), or new: C++'s operator new(size_t) and operator delete(void *),
 * looked up as a C++ caller's call binds them (the first definition in the global scope: the
 * shim's when it is preloaded, else libstdc++'s, which calls malloc itself). Run it with and
 * without the shim (tests/bench/run_reuse.sh does, alternately, for malloc) or a bare forwarder
 * (tests/bench/alloc_forward.c) and subtract; never asserts timing.
 * Usage: malloc_cost [N [KIND]]   (default 5 million, malloc) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"

static const char *const KINDS[] = {"malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign", "new"};
enum { KIND_COUNT = sizeof KINDS / sizeof KINDS[0], KIND_NEW = KIND_COUNT - 1 };

static void *(*operator_new)(size_t);
static void (*operator_delete)(void *);

/* Loads the C++ runtime into the global scope and finds the operator new and delete a C++ caller
 * would bind to; false when there is none. */
static int find_operator_new(void)
{
    if (!dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL))
        return 0;
    operator_new = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "_Znwm");
    operator_delete = (void (*)(void *))dlsym(RTLD_DEFAULT, "_ZdlPv");
    return operator_new && operator_delete;
}

static unsigned char *allocate(int kind, size_t n)
{
    void *p = NULL;
    switch (kind) {
    case 0: return malloc(n);
    case 1: return calloc(1, n);
    case 2: p = malloc(16); return p ? realloc(p, n) : NULL;
    case 3: return posix_memalign(&p, 64, n) == 0 ? p : NULL;
    case 4: return aligned_alloc(64, (n + 63) / 64 * 64);
    case 5: return memalign(64, n);
    default: return operator_new(n);
    }
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 5000000;
    int kind = 0;
    if (argc > 2)
        for (kind = 0; kind < KIND_COUNT && strcmp(argv[2], KINDS[kind]); kind++)
            ;
    if (n < 1 || kind == KIND_COUNT || argc > 3) {
        fprintf(stderr, "usage: malloc_cost [N [malloc|calloc|realloc|posix_memalign|aligned_alloc|memalign|new]]\n");
        return 2;
    }
    if (kind == KIND_NEW && !find_operator_new()) {
        fprintf(stderr, "malloc_cost: no C++ runtime (libstdc++.so.6) to take operator new from: %s\n", dlerror());
        return 2;
    }
    double best = 1e30;
    volatile unsigned sink = 0;
    for (int run = 0; run < 15; run++) {
        double t0 = bench_ns(CLOCK_MONOTONIC);
        for (long i = 0; i < n; i++) {
            unsigned char *p = allocate(kind, 16 + (size_t)(i & 63) * 24);
            if (!p)
                return 1;
            p[0] = (unsigned char)i;
            sink += p[0];
            if (kind == KIND_NEW)
                operator_delete(p);
            else
                free(p);
        }
        double ns = (bench_ns(CLOCK_MONOTONIC) - t0) / (double)n;
        if (ns < best)
            best = ns;
    }
    printf("%.2f ns per small %s/%s pair (best of 15 runs of %ld)\n", best, KINDS[kind],
           kind == KIND_NEW ? "delete" : "free", n);
    return sink == 12345 ? 1 : 0;
}
