/* threads.c: 8 threads x 10,000 mixed copies (pageable and pinned, sync and async, each thread on
 * its own stream), through the runtime's route. Checks every thread's data and prints the exact
 * "expect" counts, so a lost or doubled count under concurrency shows up. All threads are alive
 * before any copies (a barrier), so `threads 300 8` has more threads counting at once than the
 * shim keeps per-thread counters for (base/tally.h).
 * Usage: threads [THREADS [COPIES]]   (COPIES a multiple of 4) */
#include <pthread.h>

#include "testutil.h"

enum { BYTES = 4096 };

static int THREADS = 8, COPIES = 10000;
static struct test_driver d;
static CUcontext ctx;
static pthread_barrier_t all_started;

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    CHECK(d.ctx_set(ctx));
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    unsigned char *pageable = malloc(BYTES), *check = malloc(BYTES);
    void *pinned;
    CUdeviceptr dev;
    CHECK(d.host_alloc(&pinned, BYTES, 0));
    CHECK(d.mem_alloc(&dev, BYTES));
    test_fill(pageable, BYTES, (uint32_t)t + 100);
    pthread_barrier_wait(&all_started);
    for (int i = 0; i < COPIES; i++) {
        switch (i % 4) {
        case 0: CHECK(d.htod(dev, pageable, BYTES)); break;
        case 1: CHECK(d.dtoh(check, dev, BYTES)); break;
        case 2: CHECK(d.htod_async(dev, pinned, BYTES, s)); break;
        case 3: CHECK(d.dtoh_async(pinned, dev, BYTES, s)); CHECK(d.stream_sync(s)); break;
        }
        if (i % 4 == 1 && memcmp(check, i < 4 ? pageable : pinned, BYTES) != 0) {
            fprintf(stderr, "thread %d copy %d: data mismatch\n", t, i);
            exit(1);
        }
        if (i == 1)
            memcpy(pinned, pageable, BYTES);
    }
    CHECK(d.free_host(pinned));
    free(pageable);
    free(check);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        THREADS = atoi(argv[1]);
    if (argc > 2)
        COPIES = atoi(argv[2]);
    if (THREADS < 1 || COPIES < 4 || COPIES % 4) {
        fprintf(stderr, "usage: threads [THREADS [COPIES, a multiple of 4]]\n");
        return 2;
    }
    pthread_barrier_init(&all_started, NULL, (unsigned)THREADS);
    test_driver_load(&d, "getproc");
    CUdevice dev;
    CHECK(d.init(0));
    CHECK(d.device_get(&dev, 0));
    CHECK(d.primary_retain(&ctx, dev));
    pthread_t *threads = calloc((size_t)THREADS, sizeof *threads);
    for (int t = 0; t < THREADS; t++)
        if (pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t) != 0) {
            fprintf(stderr, "cannot start thread %d\n", t);
            return 1;
        }
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    free(threads);
    int per_kind = THREADS * COPIES / 4;
    printf("expect h2d pageable %d\nexpect d2h pageable %d\nexpect h2d pinned %d\nexpect d2h pinned %d\n",
           per_kind, per_kind, per_kind, per_kind);
    return 0;
}
