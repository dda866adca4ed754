/* syncprog.c: synchronize loops for the tests of how the shim times blocking calls
 * (tests/bats/summary.bats, sync_timing). Prints what it did; the output is the same with and
 * without the shim.
 *   syncprog idle N        - N cuStreamSynchronize of a stream with nothing queued (each returns at
 *                            once: a loop of short waits)
 *   syncprog busy N        - N times a 4 KB D2H into pinned memory, then cuCtxSynchronize (each
 *                            waits for the copy: with FAKECUDA_LATENCY_US=100, a long wait)
 *   syncprog idle N busy M - the first loop, then the second, on the same thread */
#include "testutil.h"

#define BYTES 4096

int main(int argc, char **argv)
{
    if (argc < 3 || argc % 2 == 0) {
        fprintf(stderr, "usage: syncprog idle|busy N [idle|busy N]...\n");
        return 2;
    }
    struct test_driver d;
    test_driver_start(&d, "getproc");
    CUstream s;
    CUdeviceptr dev;
    void *host;
    CHECK(d.stream_create(&s, 0));
    CHECK(d.mem_alloc(&dev, BYTES));
    CHECK(d.host_alloc(&host, BYTES, 0));
    for (int a = 1; a + 1 < argc; a += 2) {
        int n = atoi(argv[a + 1]);
        if (strcmp(argv[a], "idle") == 0) {
            for (int i = 0; i < n; i++)
                CHECK(d.stream_sync(s));
        } else if (strcmp(argv[a], "busy") == 0) {
            for (int i = 0; i < n; i++) {
                CHECK(d.dtoh_async(host, dev, BYTES, s));
                CHECK(d.ctx_sync(NULL));
            }
        } else {
            fprintf(stderr, "syncprog: unknown loop '%s': expected idle or busy\n", argv[a]);
            return 2;
        }
        printf("%s: %d synchronizes\n", argv[a], n);
    }
    CHECK(d.free_host(host));
    CHECK(d.mem_free(dev));
    return 0;
}
