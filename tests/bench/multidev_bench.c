/* multidev_bench.c: several GPUs of one process copying at once (issue #13): one thread per device,
 * all starting together, each copying `bytes` H2D from a fresh pageable buffer, then, after all are
 * done, `bytes` D2H into a fresh (never touched) pageable buffer; or the same from and into pinned
 * buffers (`pinned`), the ceiling. Every copy is cuMemcpy*Async on the thread's own stream +
 * cuStreamSynchronize. Prints, per direction, the median over the rounds of the aggregate GB/s (all
 * devices' bytes over the time from the common start to the last device's end) and each device's
 * own GB/s (its bytes over its own time: how fairly a shared resource, like the shim's pool, was
 * split), then whether every byte came back. Run it with and without the shim:
 * tests/bench/run_multidev.sh does, side by side. It never judges the numbers.
 * usage: multidev_bench [bytes (default 256 MiB)] [rounds (default 5)] [pageable|pinned]
 * environment: MULTIDEV_DEVICES (use at most this many devices; default all), MULTIDEV_PER_ROUND=1
 * (also print each round's per-device GB/s on stderr: which device waited, and when) */
#include <pthread.h>
#include <time.h>

#include "bench_time.h"
#include "testutil.h" /* CHECK() */

#define MAX_DEVICES 16
#define MAX_ROUNDS 64

static size_t bytes;
static int rounds, devices, pinned;
static pthread_barrier_t ready, go;
static double start_time[2][MAX_ROUNDS];           /* per direction, per round: the common start */
static double end_time[MAX_DEVICES][2][MAX_ROUNDS]; /* per device */
static int bad_bytes[MAX_DEVICES];

static double now(void) { return bench_ns(CLOCK_MONOTONIC) * 1e-9; }

/* Waits for every device thread and the main thread; the main thread stamps the start. */
static void line_up(int dir, int round, int is_main)
{
    pthread_barrier_wait(&ready);
    if (is_main)
        start_time[dir][round] = now();
    pthread_barrier_wait(&go); /* nobody copies before the stamp */
}

static void *device_thread(void *arg)
{
    int ordinal = (int)(intptr_t)arg;
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CUdeviceptr d;
    CHECK(cuDeviceGet(&dev, ordinal));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&d, bytes));
    unsigned char *pinned_src = NULL, *pinned_dst = NULL;
    if (pinned) {
        CHECK(cuMemHostAlloc((void **)&pinned_src, bytes, 0));
        CHECK(cuMemHostAlloc((void **)&pinned_dst, bytes, 0));
    }
    for (int r = 0; r < rounds; r++) {
        unsigned char *src = pinned ? pinned_src : malloc(bytes); /* fresh each round: nothing to reuse */
        unsigned char *dst = pinned ? pinned_dst : malloc(bytes); /* never touched before the copy */
        if (!src || !dst) {
            fprintf(stderr, "multidev_bench: out of memory\n");
            exit(2);
        }
        memset(src, (ordinal * 31 + r + 1) & 0xFF, bytes);
        line_up(0, r, 0);
        CHECK(cuMemcpyHtoDAsync(d, src, bytes, s));
        CHECK(cuStreamSynchronize(s));
        end_time[ordinal][0][r] = now();
        line_up(1, r, 0);
        CHECK(cuMemcpyDtoHAsync(dst, d, bytes, s));
        CHECK(cuStreamSynchronize(s));
        end_time[ordinal][1][r] = now();
        bad_bytes[ordinal] += memcmp(src, dst, bytes) != 0;
        if (!pinned) {
            free(src);
            free(dst);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    bytes = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)256 << 20;
    rounds = argc > 2 ? atoi(argv[2]) : 5;
    pinned = argc > 3 && strcmp(argv[3], "pinned") == 0;
    if (bytes == 0 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: multidev_bench [bytes] [rounds 1..%d] [pageable|pinned]\n", MAX_ROUNDS);
        return 2;
    }
    CHECK(cuInit(0));
    CHECK(cuDeviceGetCount(&devices));
    const char *limit = getenv("MULTIDEV_DEVICES"), *per_round_env = getenv("MULTIDEV_PER_ROUND");
    int per_round = per_round_env && strcmp(per_round_env, "1") == 0;
    if (limit && atoi(limit) > 0 && atoi(limit) < devices)
        devices = atoi(limit);
    if (devices > MAX_DEVICES)
        devices = MAX_DEVICES;
    pthread_barrier_init(&ready, NULL, (unsigned)devices + 1);
    pthread_barrier_init(&go, NULL, (unsigned)devices + 1);
    pthread_t threads[MAX_DEVICES];
    for (int i = 0; i < devices; i++)
        pthread_create(&threads[i], NULL, device_thread, (void *)(intptr_t)i);
    for (int r = 0; r < rounds; r++)
        for (int dir = 0; dir < 2; dir++)
            line_up(dir, r, 1);
    for (int i = 0; i < devices; i++)
        pthread_join(threads[i], NULL);

    printf("multidev %s devices %d bytes %zu rounds %d\n", pinned ? "pinned" : "pageable", devices, bytes, rounds);
    static const char *names[2] = {"h2d", "d2h"};
    for (int dir = 0; dir < 2; dir++) {
        double aggregate[MAX_ROUNDS], own[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            double last = 0;
            for (int i = 0; i < devices; i++)
                last = end_time[i][dir][r] > last ? end_time[i][dir][r] : last;
            aggregate[r] = (double)bytes * devices / (last - start_time[dir][r]) / 1e9;
        }
        if (per_round)
            for (int r = 0; r < rounds; r++) {
                fprintf(stderr, "round %d %s", r, names[dir]);
                for (int i = 0; i < devices; i++)
                    fprintf(stderr, " dev%d %.2f", i, (double)bytes / (end_time[i][dir][r] - start_time[dir][r]) / 1e9);
                fprintf(stderr, "\n");
            }
        printf("%s aggregate %.2f", names[dir], bench_median(aggregate, rounds));
        for (int i = 0; i < devices; i++) {
            for (int r = 0; r < rounds; r++)
                own[r] = (double)bytes / (end_time[i][dir][r] - start_time[dir][r]) / 1e9;
            printf(" dev%d %.2f", i, bench_median(own, rounds));
        }
        printf("\n");
    }
    int bad = 0;
    for (int i = 0; i < devices; i++)
        bad += bad_bytes[i];
    printf("bytes %s\n", bad ? "DIFFER" : "ok");
    return bad ? 1 : 0;
}
