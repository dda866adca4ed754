/* libc_alloc.h: glibc's own allocator entry points (exported, undocumented: __libc_malloc and
 * the rest), for the benchmark preloads that interpose the malloc family and forward to glibc
 * without dlsym (alloc_count.c, alloc_forward.c). */
#ifndef BENCH_LIBC_ALLOC_H
#define BENCH_LIBC_ALLOC_H

#include <stddef.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);
void *__libc_memalign(size_t align, size_t n);

#endif
