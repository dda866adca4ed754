/* edge_probe.c: what a copy that crosses a registration's edge costs on the real driver, the
 * measurement behind cutting copies at registration edges (shim/copy_split.c). A malloc'd block
 * of S bytes (glibc: 16 bytes into a page) with its whole pages registered; median microseconds
 * (11 runs) of an H2D and a D2H of:
 *   whole   - the whole block in one call (starts before the registration, ends after it)
 *   inside  - only the registered whole pages
 *   split   - three async calls (head, inside, tail) and one stream synchronize, as the shim does
 *   pinned  - the same bytes from a cuMemHostAlloc'd buffer (the ceiling)
 *   pageable- the whole block with nothing registered
 * Usage: edge_probe [S] (default 4000000). Build: gcc -I$CUDA_HOME/include edge_probe.c -ldl */
#define _GNU_SOURCE
#include <time.h>
#include <unistd.h>

#include "../progs/testutil.h"

static struct test_driver d;
static CUdeviceptr dev;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static CUresult copy(int d2h, char *host, size_t n, CUstream s, int async)
{
    if (d2h)
        return async ? d.dtoh_async(host, dev, n, s) : d.dtoh(host, dev, n);
    return async ? d.htod_async(dev, host, n, s) : d.htod(dev, host, n);
}

enum { WHOLE, INSIDE, SPLIT, PINNED, PAGEABLE };

static double median_us(int how, int d2h, char *base, size_t n, char *lo, char *hi, char *pinned, CUstream s)
{
    enum { N = 11 };
    double t[N];
    for (int i = 0; i < N; i++) {
        CHECK(d.stream_sync(s));
        uint64_t t0 = now_ns();
        switch (how) {
        case WHOLE: case PAGEABLE: CHECK(copy(d2h, base, n, s, 1)); break;
        case INSIDE: CHECK(copy(d2h, lo, (size_t)(hi - lo), s, 1)); break;
        case PINNED: CHECK(copy(d2h, pinned, n, s, 1)); break;
        case SPLIT:
            CHECK(copy(d2h, lo, (size_t)(hi - lo), s, 1));
            CHECK(copy(d2h, base, (size_t)(lo - base), s, 1));
            CHECK(copy(d2h, hi, (size_t)(base + n - hi), s, 1));
            break;
        }
        CHECK(d.stream_sync(s));
        t[i] = (double)(now_ns() - t0) / 1e3;
    }
    for (int i = 1; i < N; i++)
        for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    return t[N / 2];
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 0) : 4000000;
    test_driver_start(&d, "dlsym");
    long ps = sysconf(_SC_PAGESIZE);
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    CHECK(d.mem_alloc(&dev, n));
    char *base = malloc(n), *pinned;
    memset(base, 1, n);
    CHECK(d.host_alloc((void **)&pinned, n, 0));
    memset(pinned, 1, n);
    char *lo = (char *)(((uintptr_t)base + (uintptr_t)ps - 1) / (uintptr_t)ps * (uintptr_t)ps);
    char *hi = (char *)(((uintptr_t)base + n) / (uintptr_t)ps * (uintptr_t)ps);
    double pageable[2];
    for (int dir = 0; dir < 2; dir++)
        pageable[dir] = median_us(PAGEABLE, dir, base, n, lo, hi, pinned, s);
    CHECK(d.host_register(lo, (size_t)(hi - lo), CU_MEMHOSTREGISTER_PORTABLE));
    printf("edge_probe: %zu bytes, block at page offset %lu, head %zu and tail %zu bytes outside the registration\n",
           n, (unsigned long)((uintptr_t)base % (uintptr_t)ps), (size_t)(lo - base), (size_t)(base + n - hi));
    const char *names[] = {"whole", "inside", "split", "pinned"};
    for (int dir = 0; dir < 2; dir++) {
        printf("edge_probe %s: pageable %.1f us", dir ? "d2h" : "h2d", pageable[dir]);
        for (int how = WHOLE; how <= PINNED; how++)
            printf(", %s %.1f us", names[how], median_us(how, dir, base, n, lo, hi, pinned, s));
        printf("\n");
    }
    CHECK(d.host_unregister(lo));
    return 0;
}
