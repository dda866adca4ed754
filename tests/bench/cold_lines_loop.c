/* cold_lines_loop.c: the loop tests/bench/cold_lines.py traces under valgrind's lackey, to count
 * the cache lines one call of a small operation touches (a cold call pays for each of them; see
 * README, "Real-workload benchmarks"). It calls cold_lines_mark() before each operation, so that the
 * trace splits into operations, and at the end writes the executable mappings of the libraries
 * whose path contains "pinshim" (lines of /proc/self/maps) to stderr, so that the script can tell
 * the shim's instructions from the rest. Operations (PyTorch's small ones, as inprocess_ab.py):
 *   pageable  a 4 KiB cuMemcpyHtoDAsync from the next of 1000 malloc'd 4 KiB buffers
 *   pinned    the same from the next 4 KiB of one 4 MiB block of cuMemHostAlloc'd memory
 *   item      a 4-byte cuMemcpyDtoHAsync into pinned memory, then cuStreamSynchronize
 * Usage: cold_lines_loop pageable|pinned|item PASSES (PASSES x 1000 operations)
 * Build: gcc -std=gnu11 -O2 -I$CUDA_HOME/include cold_lines_loop.c -o cold_lines_loop -ldl */
#define _GNU_SOURCE
#include <stdbool.h>

#include "../progs/testutil.h"

#define BUFFERS 1000
#define BYTES 4096

__attribute__((noinline)) void cold_lines_mark(void);
__attribute__((noinline)) void cold_lines_mark(void) { __asm__ volatile("" ::: "memory"); }

int main(int argc, char **argv)
{
    const char *op = argc > 1 ? argv[1] : "";
    long passes = argc > 2 ? atol(argv[2]) : 0;
    bool pageable = strcmp(op, "pageable") == 0, pinned = strcmp(op, "pinned") == 0, item = strcmp(op, "item") == 0;
    if ((!pageable && !pinned && !item) || passes < 1) {
        fprintf(stderr, "cold_lines_loop: usage: cold_lines_loop pageable|pinned|item PASSES (PASSES >= 1)\n");
        return 2;
    }
    struct test_driver d;
    test_driver_start(&d, "getproc");
    CUstream s;
    CUdeviceptr dev;
    void *block, *buffers[BUFFERS];
    CHECK(d.stream_create(&s, 0));
    CHECK(d.mem_alloc(&dev, BYTES));
    CHECK(d.host_alloc(&block, (size_t)BUFFERS * BYTES, 0));
    for (int i = 0; i < BUFFERS; i++) {
        buffers[i] = pageable ? malloc(BYTES) : (char *)block + (size_t)i * BYTES;
        if (!buffers[i])
            return 1;
        memset(buffers[i], i, BYTES);
    }
    for (long i = 0; i < passes * BUFFERS; i++) {
        cold_lines_mark();
        if (item) {
            CHECK(d.dtoh_async(block, dev, 4, s));
            CHECK(d.stream_sync(s));
        } else {
            CHECK(d.htod_async(dev, buffers[i % BUFFERS], BYTES, s));
        }
    }
    cold_lines_mark();
    CHECK(d.stream_sync(s));
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    while (maps && fgets(line, sizeof line, maps))
        if (strstr(line, "pinshim") && strstr(line, " r-xp "))
            fputs(line, stderr);
    if (maps)
        fclose(maps);
    for (int i = 0; pageable && i < BUFFERS; i++)
        free(buffers[i]);
    CHECK(d.free_host(block));
    CHECK(d.mem_free(dev));
    CHECK(d.stream_destroy(s));
    return 0;
}
