/* openmp_stage.c: an OpenMP parallel region computes a 32 MiB buffer, then the buffer goes H2D and
 * comes back (the pattern of a PyTorch program copying a tensor it just computed), made on the main
 * thread, or with argument "thread" on a second thread; OPENMP_STAGE_PAUSE_MS: milliseconds to
 * sleep between the region and the copies. Built with -fopenmp, so libgomp is loaded (with clang:
 * LLVM's libomp, whose tools interface, OMPT, lets this program count the parallel regions the
 * copies started: "openmp_stage: N parallel regions in the copies").
 * Prints the buffer's hash; exits 1 if the bytes differ. */
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

#include "testutil.h"

#if defined(__clang__) && __has_include(<omp-tools.h>)
#include <omp-tools.h>
#define COUNTS_REGIONS 1
static unsigned regions; /* parallel regions begun (atomic) */

static void on_parallel_begin(ompt_data_t *task, const ompt_frame_t *frame, ompt_data_t *parallel,
                              unsigned int requested, int flags, const void *code)
{
    (void)task, (void)frame, (void)parallel, (void)requested, (void)flags, (void)code;
    __atomic_add_fetch(&regions, 1, __ATOMIC_RELAXED);
}

static int tool_init(ompt_function_lookup_t lookup, int device, ompt_data_t *data)
{
    (void)device, (void)data;
    ompt_set_callback_t set_callback = (ompt_set_callback_t)lookup("ompt_set_callback");
    return set_callback && set_callback(ompt_callback_parallel_begin, (ompt_callback_t)on_parallel_begin) ==
                               ompt_set_always;
}

static void tool_fini(ompt_data_t *data) { (void)data; }

ompt_start_tool_result_t *ompt_start_tool(unsigned int version, const char *runtime);
ompt_start_tool_result_t *ompt_start_tool(unsigned int version, const char *runtime)
{
    (void)version, (void)runtime;
    static ompt_start_tool_result_t tool = {tool_init, tool_fini, {0}};
    return &tool;
}
#endif

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
#ifdef COUNTS_REGIONS
    unsigned regions_before = __atomic_load_n(&regions, __ATOMIC_RELAXED);
#endif
    if (on_thread) {
        pthread_t t;
        if (pthread_create(&t, NULL, round_trip, NULL) != 0 || pthread_join(t, NULL) != 0)
            return 2;
    } else {
        round_trip(NULL);
    }
#ifdef COUNTS_REGIONS
    printf("openmp_stage: %u parallel regions in the copies\n", __atomic_load_n(&regions, __ATOMIC_RELAXED) - regions_before);
#endif
    if (memcmp(src, back, BYTES) != 0) {
        fprintf(stderr, "MISMATCH: round trip of %u bytes\n", BYTES);
        return 1;
    }
    printf("openmp_stage: hash %016llx\n", (unsigned long long)test_hash(back, BYTES));
    return 0;
}
