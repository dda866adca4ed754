/* allocprog.c: the malloc family's contract at its edges, printed one line a case, so a run under
 * the shim can be compared with a run without it (the shim's hooks forward to the next allocator
 * and must leave results and errno as it does): sizes 0, small, at and above the shim's tracking
 * size, impossible sizes and overflowing counts (NULL and ENOMEM), bad alignments (EINVAL),
 * contents kept by realloc and zeroed by calloc (also when it gets back a block freed dirty),
 * errno left as it was by free (also of a tracked block). Each line: the case, whether a pointer came back, errno, and what the case checks. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report(const char *what, const void *p, int err, int ok)
{
    printf("%-34s %-8s errno=%-3d %s\n", what, p ? "pointer" : "NULL", err, ok ? "ok" : "WRONG");
}

static int zeroed(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

static int filled(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

int main(void)
{
    static const size_t sizes[] = {0, 1, 24, 4096, (1u << 20) - 1, 1u << 20, 3u << 20};
    char what[64];
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        errno = 0;
        unsigned char *p = malloc(n);
        int err = errno;
        if (p && n)
            memset(p, 0x5a, n);
        snprintf(what, sizeof what, "malloc(%zu)", n);
        report(what, p, err, n == 0 || p != NULL);
        unsigned char *dirty = malloc(n); /* freed dirty: calloc may get its block back */
        if (dirty && n)
            memset(dirty, 0xa5, n);
        free(dirty);
        errno = 0;
        unsigned char *q = calloc(n, 1);
        err = errno;
        snprintf(what, sizeof what, "calloc(%zu, 1) zeroed", n);
        report(what, q, err, n == 0 || (q && zeroed(q, n)));
        errno = 0;
        unsigned char *r = realloc(p, n * 2 + 8); /* grows: the first n bytes kept */
        err = errno;
        snprintf(what, sizeof what, "realloc grow from %zu kept", n);
        report(what, r, err, r && filled(r, n, 0x5a));
        errno = 0;
        unsigned char *s = realloc(r, n / 2 + 1); /* shrinks */
        err = errno;
        snprintf(what, sizeof what, "realloc shrink from %zu kept", n);
        report(what, s, err, s && filled(s, n / 2 < n ? n / 2 : 0, 0x5a));
        errno = 1234;
        free(s);
        free(q);
        snprintf(what, sizeof what, "free after %zu keeps errno", n);
        report(what, NULL, errno, errno == 1234);
    }
    volatile size_t most = SIZE_MAX, half = SIZE_MAX / 2; /* not constants: gcc would warn */
    errno = 0;
    void *p = malloc(most);
    report("malloc(SIZE_MAX)", p, errno, !p && errno == ENOMEM);
    errno = 0;
    p = calloc(half, 3);
    report("calloc overflowing count", p, errno, !p && errno == ENOMEM);
    errno = 0;
    p = reallocarray(NULL, half, 3);
    report("reallocarray overflowing count", p, errno, !p && errno == ENOMEM);
    errno = 0;
    p = realloc(NULL, 100);
    report("realloc(NULL, 100)", p, errno, p != NULL);
    free(p);
    errno = 1234;
    free(NULL);
    report("free(NULL) keeps errno", NULL, errno, errno == 1234);
    void *aligned = NULL;
    int r = posix_memalign(&aligned, 3, 64);
    report("posix_memalign(align 3)", aligned, r, r == EINVAL && !aligned);
    r = posix_memalign(&aligned, 4096, 2u << 20);
    report("posix_memalign(4096, 2 MiB)", aligned, r, r == 0 && aligned && (uintptr_t)aligned % 4096 == 0);
    free(aligned);
    errno = 0;
    p = aligned_alloc(64, 256);
    report("aligned_alloc(64, 256)", p, errno, p && (uintptr_t)p % 64 == 0);
    free(p);
    errno = 0;
    p = memalign(1u << 16, 1u << 20);
    report("memalign(64 KiB, 1 MiB)", p, errno, p && (uintptr_t)p % (1u << 16) == 0);
    free(p);
    errno = 0;
    p = valloc(100);
    report("valloc(100)", p, errno, p && (uintptr_t)p % 4096 == 0);
    free(p);
    return 0;
}
