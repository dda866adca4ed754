/* multidev.c: pageable copies on two devices, for the shim's pool, registration cache and events.
 * Every scenario prints what it checked and a hash of the bytes that went through the devices; the
 * output is identical with and without the shim (tests/bats/multidev.bats on the fake driver with
 * FAKECUDA_DEVICES=2; tests/gpu/multigpu.sh on two GPUs). With one device it prints "skipped".
 *   multidev regdev   - a buffer registered (pin-on-reuse) while device 0 is current, then copied
 *                       to and from device 1
 *   multidev stage    - 64 MiB staged copies to both devices in turn, switching with cuCtxSetCurrent
 *   multidev threads  - two threads, one per device, copying reused and large buffers at once
 *   multidev peer     - peer copies between the devices mixed with pageable copies
 *   multidev ctxlife  - a non-primary context on device 1 used for copies (the shim takes events and
 *                       registrations there) and destroyed, copies go on; then device 0's primary
 *                       context is reset while the shim holds pool memory in it, and copies go on */
#define _GNU_SOURCE
#include <pthread.h>

#include "testutil.h"

#define MiB (1u << 20)

static struct test_driver d;
static CUcontext ctx[2];
static uint64_t total_hash = 1469598103934665603ull;
static pthread_mutex_t hash_lock = PTHREAD_MUTEX_INITIALIZER;
static int wrong;

typedef CUresult (*fn_ctx_create)(CUcontext *, unsigned int, CUdevice);
typedef CUresult (*fn_ctx)(CUcontext);
typedef CUresult (*fn_reset)(CUdevice);

static void mix(const void *p, size_t n)
{
    pthread_mutex_lock(&hash_lock);
    total_hash ^= test_hash(p, n);
    total_hash *= 1099511628211ull;
    pthread_mutex_unlock(&hash_lock);
}

/* Round trip of buf through dev in the current context, sync or async on s; checks and hashes. */
static void round_trip(unsigned char *buf, size_t n, CUdeviceptr dev, CUstream s, uint32_t seed)
{
    test_fill(buf, n, seed);
    uint64_t h = test_hash(buf, n);
    CHECK(s ? d.htod_async(dev, buf, n, s) : d.htod(dev, buf, n));
    memset(buf, 0, n);
    CHECK(s ? d.dtoh_async(buf, dev, n, s) : d.dtoh(buf, dev, n));
    if (s)
        CHECK(d.stream_sync(s));
    if (test_hash(buf, n) != h)
        __atomic_add_fetch(&wrong, 1, __ATOMIC_RELAXED);
    mix(buf, n);
}

static int scenario_regdev(void)
{
    const size_t n = 4 * MiB;
    CUdeviceptr dev[2];
    for (int k = 0; k < 2; k++) {
        CHECK(d.ctx_set(ctx[k]));
        CHECK(d.mem_alloc(&dev[k], n));
    }
    unsigned char *buf = malloc(n);
    CHECK(d.ctx_set(ctx[0]));
    for (int i = 0; i < 5; i++) /* registered at the 3rd copy, while device 0 is current */
        round_trip(buf, n, dev[0], NULL, (uint32_t)i);
    CHECK(d.ctx_set(ctx[1]));
    for (int i = 0; i < 5; i++)
        round_trip(buf, n, dev[1], NULL, (uint32_t)(10 + i));
    free(buf);
    for (int k = 0; k < 2; k++) {
        CHECK(d.ctx_set(ctx[k]));
        CHECK(d.mem_free(dev[k]));
    }
    printf("regdev: 20 round trips, %d wrong\n", wrong);
    return wrong != 0;
}

static int scenario_stage(void)
{
    const size_t n = 64 * MiB;
    CUdeviceptr dev[2];
    CUstream s[2];
    for (int k = 0; k < 2; k++) {
        CHECK(d.ctx_set(ctx[k]));
        CHECK(d.mem_alloc(&dev[k], n));
        CHECK(d.stream_create(&s[k], 0));
    }
    for (int i = 0; i < 8; i++) {
        int k = i & 1;
        unsigned char *buf = malloc(n); /* fresh each time: staged, not registered */
        CHECK(d.ctx_set(ctx[k]));
        round_trip(buf, n, dev[k], (i & 2) ? s[k] : NULL, (uint32_t)(100 + i));
        free(buf);
    }
    for (int k = 0; k < 2; k++) {
        CHECK(d.ctx_set(ctx[k]));
        CHECK(d.stream_destroy(s[k]));
        CHECK(d.mem_free(dev[k]));
    }
    printf("stage: 8 round trips of 64 MiB alternating devices, %d wrong\n", wrong);
    return wrong != 0;
}

static void *thread_body(void *arg)
{
    int k = (int)(intptr_t)arg;
    CHECK(d.ctx_set(ctx[k]));
    CUdeviceptr dev;
    CUstream s;
    CHECK(d.mem_alloc(&dev, 32 * MiB));
    CHECK(d.stream_create(&s, 0));
    unsigned char *reused = malloc(4 * MiB);
    for (int i = 0; i < 12; i++) {
        round_trip(reused, 4 * MiB, dev, (i & 1) ? s : NULL, (uint32_t)(1000 * k + i));
        if (i % 4 == 0) {
            unsigned char *big = malloc(32 * MiB);
            round_trip(big, 32 * MiB, dev, s, (uint32_t)(2000 * k + i));
            free(big);
        }
    }
    free(reused);
    CHECK(d.stream_destroy(s));
    CHECK(d.mem_free(dev));
    return NULL;
}

static int scenario_threads(void)
{
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        pthread_create(&t[k], NULL, thread_body, (void *)(intptr_t)k);
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    /* the hash mixes in thread order, which varies: print only the checks */
    printf("threads: 2 devices at once, %d wrong\n", wrong);
    total_hash = 0;
    return wrong != 0;
}

static int scenario_peer(void)
{
    const size_t n = 8 * MiB;
    CUdeviceptr dev[2];
    for (int k = 0; k < 2; k++) {
        CHECK(d.ctx_set(ctx[k]));
        CHECK(d.mem_alloc(&dev[k], n));
    }
    unsigned char *buf = malloc(n);
    CHECK(d.ctx_set(ctx[0]));
    for (int i = 0; i < 6; i++) {
        test_fill(buf, n, (uint32_t)(300 + i));
        uint64_t h = test_hash(buf, n);
        CHECK(d.htod(dev[0], buf, n));
        CHECK(d.peer(dev[1], ctx[1], dev[0], ctx[0], n));
        memset(buf, 0, n);
        CHECK(d.ctx_set(ctx[1]));
        CHECK(d.dtoh(buf, dev[1], n));
        CHECK(d.ctx_set(ctx[0]));
        wrong += test_hash(buf, n) != h;
        mix(buf, n);
    }
    free(buf);
    for (int k = 0; k < 2; k++) {
        CHECK(d.ctx_set(ctx[k]));
        CHECK(d.mem_free(dev[k]));
    }
    printf("peer: 6 host -> device 0 -> device 1 -> host trips, %d wrong\n", wrong);
    return wrong != 0;
}

static int scenario_ctxlife(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    fn_ctx_create ctx_create = (fn_ctx_create)dlsym(h, "cuCtxCreate_v2");
    fn_ctx ctx_destroy = (fn_ctx)dlsym(h, "cuCtxDestroy_v2");
    fn_reset primary_reset = (fn_reset)dlsym(h, "cuDevicePrimaryCtxReset_v2");
    if (!ctx_create || !ctx_destroy || !primary_reset) {
        printf("ctxlife: driver lacks a context function\n");
        return 1;
    }
    const size_t small = 4 * MiB, big = 64 * MiB;
    unsigned char *reused = malloc(small);
    for (int round = 0; round < 2; round++) { /* a second context after the first is destroyed */
        CUdevice dev1;
        CUcontext own;
        CHECK(d.device_get(&dev1, 1));
        CHECK(ctx_create(&own, 0, dev1));
        CUdeviceptr dev;
        CUstream s;
        CHECK(d.mem_alloc(&dev, big));
        CHECK(d.stream_create(&s, 0));
        for (int i = 0; i < 5; i++)
            round_trip(reused, small, dev, (i & 1) ? s : NULL, (uint32_t)(500 + 10 * round + i));
        unsigned char *fresh = malloc(big);
        round_trip(fresh, big, dev, s, (uint32_t)(600 + round));
        free(fresh);
        CHECK(d.stream_destroy(s));
        CHECK(d.mem_free(dev));
        CHECK(ctx_destroy(own));
    }
    /* device 0's primary context reset while the shim holds pool memory in it */
    CHECK(d.ctx_set(ctx[0]));
    CUdeviceptr dev;
    CHECK(d.mem_alloc(&dev, big));
    unsigned char *fresh = malloc(big);
    round_trip(fresh, big, dev, NULL, 700);
    round_trip(reused, small, dev, NULL, 701);
    CHECK(d.mem_free(dev));
    CUdevice dev0;
    CHECK(d.device_get(&dev0, 0));
    CHECK(primary_reset(dev0));
    CHECK(d.primary_retain(&ctx[0], dev0));
    CHECK(d.ctx_set(ctx[0]));
    CHECK(d.mem_alloc(&dev, big));
    for (int i = 0; i < 4; i++) {
        round_trip(fresh, big, dev, NULL, (uint32_t)(710 + i));
        round_trip(reused, small, dev, NULL, (uint32_t)(720 + i));
    }
    CHECK(d.mem_free(dev));
    free(fresh);
    free(reused);
    printf("ctxlife: contexts created, destroyed and reset between copies, %d wrong\n", wrong);
    return wrong != 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: multidev regdev|stage|threads|peer|ctxlife\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_driver_start(&d, "dlsym");
    int devices = 0;
    CHECK(d.device_count(&devices));
    if (devices < 2) {
        printf("skipped: %d device\n", devices);
        return 0;
    }
    for (int k = 0; k < 2; k++) {
        CUdevice dev;
        CHECK(d.device_get(&dev, k));
        CHECK(d.primary_retain(&ctx[k], dev));
    }
    CHECK(d.ctx_set(ctx[0]));
    int rc;
    if (!strcmp(argv[1], "regdev")) rc = scenario_regdev();
    else if (!strcmp(argv[1], "stage")) rc = scenario_stage();
    else if (!strcmp(argv[1], "threads")) rc = scenario_threads();
    else if (!strcmp(argv[1], "peer")) rc = scenario_peer();
    else if (!strcmp(argv[1], "ctxlife")) rc = scenario_ctxlife();
    else {
        fprintf(stderr, "unknown scenario %s\n", argv[1]);
        return 2;
    }
    printf("hash %016llx\n", (unsigned long long)total_hash);
    return rc;
}
