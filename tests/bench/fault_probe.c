/* fault_probe.c: how fast fresh host memory can be written, the bound on a D2H copy into a buffer
 * the program just allocated (issue #13). For a fresh anonymous mapping of S bytes written by T
 * threads (each its own slice), GB/s of: touch (first-touch page faults, 4 KiB pages unless the
 * system's THP setting is "always"), populate (madvise(MADV_POPULATE_WRITE) per slice, then the
 * write), huge (madvise(MADV_HUGEPAGE) on the whole mapping first, then the write), and warm (the
 * same mapping written again: memory bandwidth); then the same with memcpy from a resident source
 * instead of memset, as a staged D2H's copy-out writes: copy-huge (into a fresh mapping advised
 * MADV_HUGEPAGE), copy-warm (into resident memory), copy-4k (into a fresh mapping faulted in 4 KiB
 * pages, MADV_NOHUGEPAGE) and copy-uffd (into a fresh mapping registered with userfaultfd, each thread
 * filling its slice with UFFDIO_COPY: the kernel allocates each page and copies into it, no zeroing; 0
 * where userfaultfd is refused) and copy-huge-nt (copy-huge written with the staging threads'
 * streaming stores, shim/stage/stream_copy.c: no read for ownership of the destination). Prints the
 * system's THP setting. No CUDA.
 * Usage: fault_probe [MiB...]   (default 64 256).
 * Build: gcc -O2 -pthread -Ishim/stage tests/bench/fault_probe.c shim/stage/stream_copy.c */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "stream_copy.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum mode { TOUCH, POPULATE, HUGE, WARM, COPY_HUGE, COPY_WARM, COPY_4K, COPY_UFFD, COPY_HUGE_NT, MODES };
static const char *const names[MODES] = {"touch",     "populate",  "huge",      "warm",        "copy-huge",
                                         "copy-warm", "copy-4k",   "copy-uffd", "copy-huge-nt"};
static int uffd = -1; /* copy-uffd's userfaultfd, made once */

struct slice {
    char *p;
    const char *src; /* the copy modes' source, resident */
    size_t n;
    enum mode mode;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *write_slice(void *arg)
{
    struct slice *s = arg;
    if (s->mode == POPULATE)
        madvise(s->p, s->n, MADV_POPULATE_WRITE);
    if (s->mode == COPY_UFFD) {
        for (size_t done = 0; done < s->n;) {
            struct uffdio_copy c = {.dst = (uintptr_t)(s->p + done), .src = (uintptr_t)(s->src + done),
                                    .len = s->n - done, .mode = 0};
            if (ioctl(uffd, UFFDIO_COPY, &c) == 0)
                break;
            if (c.copy <= 0 && c.copy != -EAGAIN) { /* refused: the rest by memcpy (counted) */
                memcpy(s->p + done, s->src + done, s->n - done);
                break;
            }
            done += c.copy > 0 ? (size_t)c.copy : 0;
        }
        return NULL;
    }
    if (s->src && s->mode == COPY_HUGE_NT)
        stream_copy(s->p, s->src, s->n);
    else if (s->src)
        memcpy(s->p, s->src, s->n);
    else
        memset(s->p, 1, s->n);
    return NULL;
}

static double run(size_t bytes, int threads, enum mode mode, const char *src)
{
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    if (mode == HUGE || mode == COPY_HUGE || mode == COPY_HUGE_NT)
        madvise(p, bytes, MADV_HUGEPAGE);
    if (mode == COPY_4K)
        madvise(p, bytes, MADV_NOHUGEPAGE);
    if (mode == COPY_UFFD) {
        struct uffdio_register reg = {.range = {(uintptr_t)p, bytes}, .mode = UFFDIO_REGISTER_MODE_MISSING};
        if (uffd < 0 || ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) {
            munmap(p, bytes);
            return 0;
        }
    }
    if (mode == WARM || mode == COPY_WARM)
        memset(p, 2, bytes);
    bool copy = mode >= COPY_HUGE;
    pthread_t t[64];
    struct slice s[64];
    size_t part = (bytes / (size_t)threads + 4095) & ~(size_t)4095;
    double t0 = now_s();
    for (int i = 0; i < threads; i++) {
        size_t off = (size_t)i * part;
        size_t n = off >= bytes ? 0 : (bytes - off < part ? bytes - off : part);
        s[i] = (struct slice){p + off, copy ? src + off : NULL, n, mode};
        pthread_create(&t[i], NULL, write_slice, &s[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    if (mode == COPY_UFFD) {
        struct uffdio_range range = {(uintptr_t)p, bytes};
        ioctl(uffd, UFFDIO_UNREGISTER, &range);
    }
    double dt = now_s() - t0;
    if (copy && memcmp(p, src, bytes) != 0) {
        fprintf(stderr, "fault_probe: %s copied wrong bytes\n", names[mode]);
        exit(1);
    }
    munmap(p, bytes);
    return (double)bytes / dt / 1e9;
}

int main(int argc, char **argv)
{
    char thp[128] = "unknown";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (!fgets(thp, sizeof thp, f))
            strcpy(thp, "unreadable\n");
        fclose(f);
    }
    printf("fault_probe: THP %s", thp);
    uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
    struct uffdio_api api = {.api = UFFD_API};
    if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) != 0)
        printf("fault_probe: userfaultfd refused (%s): copy-uffd reads 0\n", strerror(errno));
    static const int thread_counts[] = {1, 4, 8, 16};
    for (int a = argc > 1 ? 1 : 0; a < (argc > 1 ? argc : 2); a++) {
        size_t mib = argc > 1 ? (size_t)atol(argv[a]) : (a == 0 ? 64 : 256);
        char *src = malloc(mib << 20);
        if (!src)
            return 1;
        memset(src, 3, mib << 20);
        for (size_t k = 0; k < sizeof thread_counts / sizeof *thread_counts; k++) {
            printf("fault_probe %4zu MiB %2d threads:", mib, thread_counts[k]);
            for (int m = 0; m < MODES; m++) {
                double best = 0;
                for (int rep = 0; rep < 3; rep++) {
                    double g = run(mib << 20, thread_counts[k], (enum mode)m, src);
                    best = g > best ? g : best;
                }
                printf(" %s %.1f GB/s%s", names[m], best, m + 1 < MODES ? "," : "\n");
            }
        }
        free(src);
    }
    return 0;
}
