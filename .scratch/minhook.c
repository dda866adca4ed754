#include <stddef.h>
extern void *__libc_malloc(size_t); extern void __libc_free(void *);
void *malloc(size_t n) { return __libc_malloc(n); }
void free(void *p) { __libc_free(p); }
