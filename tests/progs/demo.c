/* demo.c: the program `make demo` runs under the shim: host<->device copies of several sizes from
 * pageable and pinned memory, as a data loader would make them, through the CUDA runtime's route
 * to the driver. Works on a real GPU or on the fake driver. */
#include "testutil.h"

int main(void)
{
    struct test_driver d;
    test_driver_start(&d, "getproc");
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    const size_t max = 16u << 20;
    unsigned char *pageable = malloc(max), *check = malloc(max);
    void *pinned;
    CUdeviceptr buf;
    CHECK(d.host_alloc(&pinned, max, 0));
    CHECK(d.mem_alloc(&buf, max));
    test_fill(pageable, max, 42);
    memcpy(pinned, pageable, max);
    for (size_t bytes = 64u << 10; bytes <= max; bytes *= 4) {
        for (int i = 0; i < 8; i++) {
            CHECK(d.htod(buf, pageable, bytes));
            CHECK(d.dtoh(check, buf, bytes));
            CHECK(d.htod_async(buf, pinned, bytes, s));
            CHECK(d.dtoh_async(pinned, buf, bytes, s));
            CHECK(d.stream_sync(s));
        }
        printf("demo: %8zu bytes x 8 round trips, pageable and pinned: %s\n", bytes,
               memcmp(check, pageable, bytes) == 0 && memcmp(pinned, pageable, bytes) == 0 ? "data ok" : "MISMATCH");
    }
    return 0;
}
