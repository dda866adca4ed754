/* openmp_stage.c: an OpenMP parallel region computes a 32 MiB buffer, then the buffer goes H2D and
 * comes back (the pattern of a PyTorch program copying a tensor it just computed), made on the main
 * thread, or with argument "thread" on a second thread; OPENMP_STAGE_PAUSE_MS: milliseconds to
 * sleep between the region and the copies. Built with -fopenmp, so libgomp is loaded.
 * Prints the buffer's hash; exits 1 if the bytes differ. */
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

#include "testutil.h"

#define BYTES (32u << 20)

static struct test_driver d;
static CUcontext ctx;
static unsigned char *src, *back;
static CUdeviceptr dev;

static void *round_trip(void *arg)
{
    (void)arg;
    CHECK(d.ctx_set(ctx));
    CHECK(d.htod(dev, src, BYTES));
    CHECK(d.dtoh(back, dev, BYTES));
    return NULL;
}

int main(int argc, char **argv)
{
    bool on_thread = argc > 1 && strcmp(argv[1], "thread") == 0;
    ctx = test_driver_start(&d, "getproc");
    src = malloc(BYTES), back = malloc(BYTES);
    CHECK(d.mem_alloc(&dev, BYTES));
#pragma omp parallel for
    for (long i = 0; i < (long)BYTES; i++)
        src[i] = (unsigned char)(i * 7 + (i >> 12));
    const char *pause = getenv("OPENMP_STAGE_PAUSE_MS");
    if (pause)
        usleep((useconds_t)atoi(pause) * 1000);
    if (on_thread) {
        pthread_t t;
        if (pthread_create(&t, NULL, round_trip, NULL) != 0 || pthread_join(t, NULL) != 0)
            return 2;
    } else {
        round_trip(NULL);
    }
    if (memcmp(src, back, BYTES) != 0) {
        fprintf(stderr, "MISMATCH: round trip of %u bytes\n", BYTES);
        return 1;
    }
    printf("openmp_stage: hash %016llx\n", (unsigned long long)test_hash(back, BYTES));
    return 0;
}
