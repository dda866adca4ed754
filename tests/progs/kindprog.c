/* kindprog.c: small copies whose host memory changes kind, for the classification tests
 * (tests/bats/summary.bats): the shim remembers which pages the driver called pageable, which lie
 * inside the program's pinned memory and which no tracked allocation holds, and must forget them
 * when that changes. Each scenario prints a hash of what went through the device; the output is
 * identical with and without the shim.
 *   kindprog same N      - N copies of 4 KB H2D from one page of a malloc'd buffer
 *   kindprog large N     - N copies of 128 KiB H2D from the same buffer (too large to be remembered)
 *   kindprog register    - 4 KB H2D from a page-aligned buffer: pageable (three copies, so that the
 *                          page is remembered), then registered by the program (cuMemHostRegister),
 *                          then unregistered: one copy each
 *   kindprog subpage     - 64-byte H2D copies from one page: before a registration of part of the
 *                          page (the driver answers per byte), inside it, before it again
 *   kindprog remap       - three 4 KB D2H into an mmap'd page (so that the page is remembered), the
 *                          page unmapped and mapped again at the same address, 4 KB D2H again (the
 *                          driver must be asked again)
 *   kindprog pinned      - 64-byte H2D copies from a page of pinned memory (cuMemHostAlloc) three
 *                          times, the memory freed and its address mapped again as plain memory,
 *                          one copy more: 3 pinned, 1 pageable
 *   kindprog tracked     - three 4 KB H2D from a 4 KB mapping (nothing tracks it), the page unmapped
 *                          by a raw system call the hooks do not see (as glibc's free does), a 2 MiB
 *                          mapping made at its address (tracked), four 4 KB H2D from that page:
 *                          only the new allocation tells the shim; pin-on-reuse registers it at the
 *                          third
 *   kindprog heap N      - the same with N copies of 128 KiB from a 2 MiB aligned_alloc'd buffer
 *                          (tracked: the shim knows it pageable without asking the driver)
 *   kindprog neighbours  - 4 KB H2D from pages of a 24-page mapping made by a raw system call
 *                          (untracked), in which the program registered page 9 and mapped pages
 *                          13-14 again (tracked when PINSHIM_TRACK_MIN_BYTES is 8K at most): three
 *                          passes over pages 0-7, then pages 10 (twice), 9 (four times), 11 and 12
 *                          (twice each), 15 (twice), 13 (four times): a page known plain says
 *                          nothing of its neighbours; 4 copies registered, and pin-on-reuse
 *                          registers the tracked allocation at its third */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "testutil.h"

#define SMALL 4096
#define LARGE (128u << 10)

static struct test_driver d;
static CUdeviceptr dev;

/* A page-aligned buffer of `bytes`, filled from seed. */
static char *filled_buffer(size_t bytes, uint32_t seed)
{
    char *buf = aligned_alloc(4096, bytes);
    if (!buf)
        exit(1);
    test_fill(buf, bytes, seed);
    return buf;
}

/* Prints a hash of the first n (at most LARGE) bytes of the device buffer, copied back SMALL bytes at a time. */
static void print_device_hash(const char *what, size_t n)
{
    char back[SMALL];
    unsigned long long hash = 0;
    for (size_t at = 0; at < n; at += SMALL) {
        size_t part = n - at < SMALL ? n - at : SMALL;
        CHECK(d.dtoh(back, dev + at, part));
        hash = hash * 31 + (unsigned long long)test_hash(back, part);
    }
    printf("%s: hash %016llx\n", what, hash);
}

static void same(int n, size_t bytes)
{
    char *buf = filled_buffer(LARGE, 7);
    for (int i = 0; i < n; i++)
        CHECK(d.htod(dev, buf, bytes));
    print_device_hash(bytes == SMALL ? "same small" : "same large", SMALL);
    free(buf);
}

/* `before` copies of `n` bytes from the start of a fresh buffer of `bytes`, then the buffer registered
 * by the program, one copy, unregistered, one copy; prints the device's hash as `name`. */
static void around_registration(const char *name, size_t bytes, size_t n, int before, uint32_t seed)
{
    char *buf = filled_buffer(bytes, seed);
    for (int i = 0; i < before; i++)
        CHECK(d.htod(dev, buf, n));
    CHECK(d.host_register(buf, bytes, 0));
    buf[0] ^= 1;
    CHECK(d.htod(dev, buf, n));
    CHECK(d.host_unregister(buf));
    buf[1] ^= 1;
    CHECK(d.htod(dev, buf, n));
    print_device_hash(name, SMALL);
    free(buf);
}

static void subpage(void)
{
    char *buf = filled_buffer(4 * SMALL, 9);
    char *page = buf + SMALL, *part = page + 100;
    CHECK(d.host_register(part, 5000, 0));
    CHECK(d.htod(dev, page, 64));
    CHECK(d.htod(dev + 64, part, 64));
    CHECK(d.htod(dev + 128, page + 8, 64));
    CHECK(d.host_unregister(part));
    print_device_hash("subpage", 192);
    free(buf);
}

static void remap(void)
{
    int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
    char *page = mmap(NULL, SMALL, prot, flags, -1, 0);
    if (page == MAP_FAILED)
        exit(1);
    char src[SMALL];
    test_fill(src, sizeof src, 5);
    CHECK(d.htod(dev, src, sizeof src));
    for (int i = 0; i < 3; i++)
        CHECK(d.dtoh(page, dev, SMALL));
    unsigned long long first = (unsigned long long)test_hash(page, SMALL);
    munmap(page, SMALL);
    char *again = mmap(page, SMALL, prot, flags | MAP_FIXED_NOREPLACE, -1, 0);
    if (again != page) {
        printf("remap: the page could not be mapped again at the same address\n");
        exit(1);
    }
    CHECK(d.dtoh(again, dev, SMALL));
    printf("remap: hash %016llx %016llx\n", first, (unsigned long long)test_hash(again, SMALL));
    munmap(again, SMALL);
}

/* A new private mapping of `bytes` at exactly `at` (anywhere when NULL); exits when impossible. */
static char *map_at(void *at, size_t bytes)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED_NOREPLACE : 0);
    char *p = mmap(at, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED || (at && p != at)) {
        printf("the memory could not be mapped at %p\n", at);
        exit(1);
    }
    return p;
}

static void pinned(void)
{
    void *mem;
    CHECK(d.host_alloc(&mem, 4 * SMALL, 0));
    char *page = (char *)mem + SMALL;
    test_fill(mem, 4 * SMALL, 11);
    for (int i = 0; i < 3; i++)
        CHECK(d.htod(dev + 64 * (unsigned)i, page + 64 * i, 64));
    CHECK(d.free_host(mem));
    char *again = map_at(page, SMALL);
    test_fill(again, SMALL, 12);
    CHECK(d.htod(dev + 192, again, 64));
    print_device_hash("pinned", 256);
    munmap(again, SMALL);
}

static void tracked(void)
{
    size_t big = 2u << 20;
    char *area = map_at(NULL, big);
    munmap(area, big);
    char *page = map_at(area, SMALL);
    test_fill(page, SMALL, 13);
    for (int i = 0; i < 3; i++)
        CHECK(d.htod(dev, page, SMALL));
    syscall(SYS_munmap, page, (size_t)SMALL);
    char *alloc = map_at(area, big);
    for (int i = 0; i < 4; i++) {
        test_fill(alloc, SMALL, 14 + (uint32_t)i);
        CHECK(d.htod(dev, alloc, SMALL));
    }
    print_device_hash("tracked", SMALL);
    munmap(alloc, big);
}

/* Copies 4 KB from page i of area to the device, `times` times, each time from a fresh fill. */
static void copy_page(char *area, int i, int times)
{
    static uint32_t seed = 100;
    for (int t = 0; t < times; t++) {
        test_fill(area + (size_t)i * SMALL, SMALL, seed++);
        CHECK(d.htod(dev + (CUdeviceptr)(i % 16) * SMALL, area + (size_t)i * SMALL, SMALL));
    }
}

static void neighbours(void)
{
    size_t bytes = 24 * SMALL;
    char *area = (char *)syscall(SYS_mmap, NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED)
        exit(1);
    CHECK(d.host_register(area + 9 * SMALL, SMALL, 0));
    syscall(SYS_munmap, area + 13 * SMALL, (size_t)2 * SMALL);
    map_at(area + 13 * SMALL, 2 * SMALL);
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < 8; i++)
            copy_page(area, i, 1);
    copy_page(area, 10, 2); /* known plain, as pages 0-7 are: page 9 is not */
    copy_page(area, 9, 4);
    copy_page(area, 11, 2);
    copy_page(area, 12, 2);
    copy_page(area, 15, 2); /* nor are pages 13-14 */
    copy_page(area, 13, 4);
    print_device_hash("neighbours", 16 * SMALL);
    CHECK(d.host_unregister(area + 9 * SMALL));
    munmap(area + 13 * SMALL, 2 * SMALL);
    syscall(SYS_munmap, area, bytes);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int n = argc > 2 ? atoi(argv[2]) : 0;
    test_driver_start(&d, "getproc");
    CHECK(d.mem_alloc(&dev, LARGE));
    if (strcmp(mode, "same") == 0 && n > 0)
        same(n, SMALL);
    else if (strcmp(mode, "large") == 0 && n > 0)
        same(n, LARGE);
    else if (strcmp(mode, "register") == 0)
        around_registration("register", 16 * SMALL, SMALL, 3, 3);
    else if (strcmp(mode, "subpage") == 0)
        subpage();
    else if (strcmp(mode, "remap") == 0)
        remap();
    else if (strcmp(mode, "pinned") == 0)
        pinned();
    else if (strcmp(mode, "tracked") == 0)
        tracked();
    else if (strcmp(mode, "heap") == 0 && n > 0)
        around_registration("heap", 2u << 20, LARGE, n, 15);
    else if (strcmp(mode, "neighbours") == 0)
        neighbours();
    else {
        fprintf(stderr, "usage: kindprog same N | large N | register | subpage | remap | pinned | tracked | heap N | "
                        "neighbours\n");
        return 2;
    }
    CHECK(d.mem_free(dev));
    return 0;
}
