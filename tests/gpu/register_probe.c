/* register_probe.c: what cuMemHostRegister does to a malloc'd buffer that the registration cache
 * needs to know, measured on the real driver (no shim):
 *   1. fork after registering: can the child read the buffer (a driver that marks registered pages
 *      MADV_DONTFORK would leave the child a hole, and a program's child would fault)?
 *   2. after fork, the parent writes the buffer and copies it H2D and back: are the bytes right
 *      (a copy-on-write break of a pinned page would send the DMA to the old page)?
 *   3. cuMemHostRegister / cuMemHostUnregister of 4 MiB and 64 MiB: median microseconds.
 *   4. registering a range that overlaps a registered one, and unregistering a base that is not
 *      registered: the driver's error codes (the fake driver must fail the same way).
 * Prints one line per finding. Build: gcc -I$CUDA_HOME/include register_probe.c -ldl */
#define _GNU_SOURCE
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../progs/testutil.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void timing(struct test_driver *d, size_t bytes)
{
    enum { N = 9 };
    double reg[N], unreg[N];
    char *p = aligned_alloc(4096, bytes);
    memset(p, 1, bytes);
    for (int i = 0; i < N; i++) {
        uint64_t t0 = now_ns();
        CHECK(d->host_register(p, bytes, CU_MEMHOSTREGISTER_PORTABLE));
        uint64_t t1 = now_ns();
        CHECK(d->host_unregister(p));
        reg[i] = (double)(t1 - t0) / 1e3;
        unreg[i] = (double)(now_ns() - t1) / 1e3;
    }
    for (int i = 1; i < N; i++)
        for (int j = i; j > 0 && reg[j - 1] > reg[j]; j--) {
            double t = reg[j]; reg[j] = reg[j - 1]; reg[j - 1] = t;
        }
    for (int i = 1; i < N; i++)
        for (int j = i; j > 0 && unreg[j - 1] > unreg[j]; j--) {
            double t = unreg[j]; unreg[j] = unreg[j - 1]; unreg[j - 1] = t;
        }
    printf("register %zu bytes: %.0f us, unregister %.0f us (median of %d)\n", bytes, reg[N / 2], unreg[N / 2], N);
    free(p);
}

int main(void)
{
    struct test_driver d;
    test_driver_start(&d, "dlsym");
    size_t bytes = 4u << 20;
    unsigned char *p = aligned_alloc(4096, bytes);
    test_fill(p, bytes, 7);
    uint64_t h = test_hash(p, bytes);
    CHECK(d.host_register(p, bytes, CU_MEMHOSTREGISTER_PORTABLE));

    pid_t child = fork();
    if (child == 0) {
        _exit(test_hash(p, bytes) == h ? 0 : 3); /* reads every page; a DONTFORK hole faults */
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("fork after register: child %s\n",
           WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "read the buffer correctly"
           : WIFSIGNALED(status)                         ? "killed by a signal (the pages were not inherited)"
                                                         : "read wrong bytes");

    child = fork();
    if (child == 0) {
        sleep(1); /* keeps the child's copy of the pages alive while the parent writes */
        _exit(0);
    }
    test_fill(p, bytes, 8); /* parent writes after fork: copy-on-write while the child lives */
    uint64_t h2 = test_hash(p, bytes);
    CUdeviceptr dev;
    CHECK(d.mem_alloc(&dev, bytes));
    CHECK(d.htod(dev, p, bytes));
    unsigned char *back = malloc(bytes);
    CHECK(d.dtoh(back, dev, bytes));
    printf("parent writes after fork, H2D from the registered buffer: %s\n",
           test_hash(back, bytes) == h2 ? "device has the new bytes" : "device has STALE bytes");
    memset(p, 0, bytes);
    CHECK(d.dtoh(p, dev, bytes));
    printf("D2H into the registered buffer after fork: %s\n",
           test_hash(p, bytes) == h2 ? "the program sees the bytes" : "the program sees WRONG bytes");
    waitpid(child, &status, 0);

    CUresult r = d.host_register(p + 4096, 4096, CU_MEMHOSTREGISTER_PORTABLE);
    printf("register inside a registered range: CUresult %d\n", (int)r);
    if (r == CUDA_SUCCESS)
        d.host_unregister(p + 4096);
    r = d.host_unregister(p + 4096);
    printf("unregister a base that is not registered: CUresult %d\n", (int)r);
    CHECK(d.host_unregister(p));
    r = d.host_unregister(p);
    printf("unregister twice: CUresult %d\n", (int)r);
    unsigned char *odd = malloc(bytes + 100);
    r = d.host_register(odd + 1, bytes, CU_MEMHOSTREGISTER_PORTABLE);
    printf("register an unaligned pointer and size: CUresult %d\n", (int)r);
    if (r == CUDA_SUCCESS)
        d.host_unregister(odd + 1);
    free(odd);
    timing(&d, 4u << 20);
    timing(&d, 64u << 20);
    return 0;
}
