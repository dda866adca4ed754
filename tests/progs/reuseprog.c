/* reuseprog.c: buffers copied again and again, and every way their memory is given back, for the
 * pin-on-reuse tests (tests/bats/regcache.bats). Each scenario prints what it checked and a hash of
 * the bytes that went through the device; the output is identical with and without the shim.
 * After memory is given back, the scenario asks the driver whether any of it is still registered
 * (cuPointerGetAttributes) and prints "STALE" if so.
 *   reuseprog reuse N PASSES     - N malloc'd 4 MiB buffers, each copied H2D and back PASSES times
 *   reuseprog async              - async H2D from a reused buffer, source overwritten at once;
 *                                  async D2H into it, read at once (pageable promises)
 *   reuseprog free|realloc       - a registered buffer freed / realloc'd (moved and grown)
 *   reuseprog munmap             - mmap regions: whole munmap, and a partial one (the rest reused)
 *   reuseprog mremap|madvise     - a registered region moved by mremap / discarded by madvise
 *   reuseprog sameaddr           - free, then allocate another size at the same address, reuse
 *   reuseprog budget             - 6 buffers of 4 MiB in turn (run with a small register_max_bytes)
 *   reuseprog own                - the program registers memory itself (inside a cached one, too)
 *   reuseprog beside             - the program's pinned copies while a registration is live,
 *                                  interleaved with small async D2H copies into that registration
 *   reuseprog threads            - 16 threads allocating, copying and freeing at once
 *   reuseprog fork               - fork with registered buffers; the child frees them and exits
 *   reuseprog mallocs N          - N small malloc/free pairs (a malloc-heavy program)
 *   reuseprog neighbours         - 24 heap blocks of 4,000,000 bytes side by side (mmap threshold
 *                                  raised), each copied H2D and D2H six times, sync and async, then
 *                                  sub-ranges that start inside a block and run to its end; every
 *                                  return code is printed (a neighbour of a registration must not
 *                                  fail: the real driver refuses a copy that starts inside a
 *                                  registration and runs past its end)
 *   reuseprog edges              - a registered buffer, then copies the shim passes to the driver as
 *                                  they are (2D, host-to-host, during capture, batch) that start
 *                                  inside its whole pages and run to its end: each must succeed
 *   reuseprog cxx LIB            - buffers from C++'s new[] and a std::vector, made by LIB
 *                                  (build/tests/libcxxalloc.so, dlopened RTLD_LOCAL as Python opens
 *                                  an extension), registered, then given back with delete[] and the
 *                                  vector's sized delete; and what operator new promises on failure
 *                                  (std::bad_alloc, the new-handler, nothrow's null) */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define MiB (1u << 20)

static struct test_driver d;
static CUcontext ctx;
static CUdeviceptr dev;
static uint64_t total_hash = 1469598103934665603ull;
static int stale;

typedef CUresult (*fn_attr)(void *, CUpointer_attribute, CUdeviceptr);
static fn_attr get_attribute;

static void mix(const void *p, size_t n)
{
    total_hash ^= test_hash(p, n);
    total_hash *= 1099511628211ull;
}

/* The driver's view of [p, p + n) after it was given back: no page of it may be registered. */
static void check_released(const void *p, size_t n, const char *what)
{
    long ps = sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)p / (uintptr_t)ps * (uintptr_t)ps;
    for (uintptr_t a = lo; a < (uintptr_t)p + n; a += (uintptr_t)ps) {
        unsigned int type = 0;
        if (get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)a) == CUDA_SUCCESS &&
            type == CU_MEMORYTYPE_HOST) {
            printf("STALE registration after %s at offset %zu\n", what, (size_t)(a - (uintptr_t)p));
            stale++;
            return;
        }
    }
}

/* Fills, copies H2D and back through a pageable bounce, checks, and hashes. */
static void round_trip(unsigned char *buf, size_t n, uint32_t seed)
{
    test_fill(buf, n, seed);
    uint64_t h = test_hash(buf, n);
    CHECK(d.htod(dev, buf, n));
    memset(buf, 0, n);
    CHECK(d.dtoh(buf, dev, n));
    if (test_hash(buf, n) != h) {
        printf("WRONG bytes after a round trip (seed %u)\n", seed);
        exit(1);
    }
    mix(buf, n);
}

static void reuse_passes(unsigned char *buf, size_t n, int passes, uint32_t seed)
{
    for (int p = 0; p < passes; p++)
        round_trip(buf, n, seed + (uint32_t)p);
}

static int scenario_reuse(int n, int passes)
{
    unsigned char **bufs = malloc(sizeof *bufs * (size_t)n);
    for (int i = 0; i < n; i++)
        bufs[i] = malloc(4 * MiB);
    for (int p = 0; p < passes; p++)
        for (int i = 0; i < n; i++)
            round_trip(bufs[i], 4 * MiB, (uint32_t)(p * 1000 + i));
    for (int i = 0; i < n; i++) {
        free(bufs[i]);
        check_released(bufs[i], 4 * MiB, "free");
    }
    printf("reuse: %d buffers x %d passes\n", n, passes);
    free(bufs);
    return 0;
}

static int scenario_async(void)
{
    const size_t n = 4 * MiB;
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    unsigned char *buf = malloc(n), *expect = malloc(n), *back = malloc(n);
    int wrong = 0;
    for (int i = 0; i < 8; i++) {
        test_fill(buf, n, (uint32_t)i);
        memcpy(expect, buf, n);
        CHECK(d.htod_async(dev, buf, n, s));
        memset(buf, 0xEE, n); /* allowed at once: the program believes buf pageable */
        CHECK(d.stream_sync(s));
        CHECK(d.dtoh(back, dev, n));
        wrong += memcmp(back, expect, n) != 0;
        memset(buf, 0, n);
        CHECK(d.dtoh_async(buf, dev, n, s));
        wrong += memcmp(buf, expect, n) != 0; /* complete on return for pageable memory */
        CHECK(d.stream_sync(s));
        mix(buf, n);
    }
    printf("async: %d wrong of 16 checks\n", wrong);
    free(buf);
    free(expect);
    free(back);
    CHECK(d.stream_destroy(s));
    return wrong != 0;
}

static int scenario_free(void)
{
    unsigned char *buf = malloc(6 * MiB);
    reuse_passes(buf, 6 * MiB, 5, 1);
    free(buf);
    check_released(buf, 6 * MiB, "free");
    printf("free: done\n");
    return 0;
}

static int scenario_realloc(void)
{
    unsigned char *buf = malloc(2 * MiB);
    reuse_passes(buf, 2 * MiB, 5, 2);
    unsigned char *old = buf;
    buf = realloc(buf, 64 * MiB); /* grows: glibc moves (mremap) or copies it */
    if (buf != old)
        check_released(old, 2 * MiB, "realloc (moved)");
    reuse_passes(buf, 64 * MiB, 5, 3);
    old = buf;
    buf = realloc(buf, 3 * MiB); /* shrinks */
    reuse_passes(buf, 3 * MiB, 5, 4);
    free(buf);
    check_released(buf, 3 * MiB, "free after realloc");
    printf("realloc: done\n");
    return 0;
}

static unsigned char *map(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

static int scenario_munmap(void)
{
    unsigned char *a = map(8 * MiB);
    reuse_passes(a, 8 * MiB, 5, 5);
    munmap(a, 8 * MiB);
    check_released(a, 8 * MiB, "munmap");
    unsigned char *b = map(12 * MiB);
    reuse_passes(b, 12 * MiB, 5, 6);
    munmap(b + 4 * MiB, 4 * MiB); /* a hole in the middle */
    check_released(b + 4 * MiB, 4 * MiB, "partial munmap");
    reuse_passes(b, 4 * MiB, 5, 7);           /* what is left is still the program's memory */
    reuse_passes(b + 8 * MiB, 4 * MiB, 5, 8); /* and may be registered again */
    munmap(b, 4 * MiB);
    munmap(b + 8 * MiB, 4 * MiB);
    check_released(b, 12 * MiB, "munmap of the rest");
    printf("munmap: done\n");
    return 0;
}

static int scenario_mremap(void)
{
    unsigned char *a = map(4 * MiB);
    reuse_passes(a, 4 * MiB, 5, 9);
    unsigned char *b = mremap(a, 4 * MiB, 32 * MiB, MREMAP_MAYMOVE);
    if (b == MAP_FAILED) {
        perror("mremap");
        return 1;
    }
    if (b != a)
        check_released(a, 4 * MiB, "mremap (moved)");
    reuse_passes(b, 32 * MiB, 5, 10);
    munmap(b, 32 * MiB);
    check_released(b, 32 * MiB, "munmap after mremap");
    printf("mremap: done\n");
    return 0;
}

static int scenario_madvise(void)
{
    unsigned char *a = map(8 * MiB);
    reuse_passes(a, 8 * MiB, 5, 11);
    if (madvise(a, 8 * MiB, MADV_DONTNEED) != 0) {
        perror("madvise");
        return 1;
    }
    check_released(a, 8 * MiB, "madvise(DONTNEED)");
    int zero = 1;
    for (size_t i = 0; i < 8 * MiB; i += 4096)
        zero &= a[i] == 0; /* the kernel's promise for private anonymous pages */
    printf("madvise: pages read back as zero: %s\n", zero ? "yes" : "no");
    reuse_passes(a, 8 * MiB, 5, 12); /* copies after the discard see the new contents */
    munmap(a, 8 * MiB);
    return 0;
}

static int scenario_sameaddr(void)
{
    int same = 0;
    for (int i = 0; i < 6; i++) {
        size_t n1 = (size_t)(4 + i) * MiB, n2 = (size_t)(2 + i) * MiB;
        unsigned char *a = malloc(n1);
        reuse_passes(a, n1, 5, (uint32_t)(20 + i));
        free(a);
        unsigned char *b = malloc(n2); /* glibc's mmapped chunks: often the same address */
        same += b == a;
        reuse_passes(b, n2, 5, (uint32_t)(40 + i));
        free(b);
        check_released(b, n2, "free (same address)");
    }
    fprintf(stderr, "sameaddr: %d of 6 reallocations at the same address\n", same);
    printf("sameaddr: done\n");
    return 0;
}

static int scenario_budget(void)
{
    unsigned char *bufs[6];
    for (int i = 0; i < 6; i++)
        bufs[i] = malloc(4 * MiB);
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 6; i++)
            reuse_passes(bufs[i], 4 * MiB, 4, (uint32_t)(100 * round + i));
    for (int i = 0; i < 6; i++) {
        free(bufs[i]);
        check_released(bufs[i], 4 * MiB, "free");
    }
    printf("budget: done\n");
    return 0;
}

static int scenario_own(void)
{
    /* the program's own registration of a reused buffer: the cache never touches it */
    long ps = sysconf(_SC_PAGESIZE);
    unsigned char *mine = aligned_alloc((size_t)ps, 4 * MiB);
    CHECK(d.host_register(mine, 4 * MiB, 0));
    reuse_passes(mine, 4 * MiB, 6, 50);
    CHECK(d.host_unregister(mine));
    free(mine);
    /* a buffer the cache registered, then the program registers part of it: same result as without */
    unsigned char *buf = aligned_alloc((size_t)ps, 8 * MiB);
    reuse_passes(buf, 8 * MiB, 5, 60);
    CUresult r = d.host_register(buf + MiB, 2 * MiB, 0);
    printf("own: program registers inside a reused buffer -> %d\n", (int)r);
    reuse_passes(buf + MiB, 2 * MiB, 3, 70);
    reuse_passes(buf, 8 * MiB, 5, 80);
    if (r == CUDA_SUCCESS)
        printf("own: program unregisters it -> %d\n", (int)d.host_unregister(buf + MiB));
    free(buf);
    check_released(buf, 8 * MiB, "free");
    printf("own: done\n");
    return 0;
}

static int scenario_beside(void)
{
    /* the program's own pinned copies while the cache holds a registration, interleaved with small
     * async D2H copies into that registration, which the program believes pageable: complete on
     * return, and still the cache's (the shim takes the program's pinned range for none of its) */
    const size_t n = 4 * MiB, small = 4096;
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    unsigned char *buf = malloc(n), *pinned;
    CHECK(d.host_alloc((void **)&pinned, 2 * small, 0));
    reuse_passes(buf, n, 4, 90); /* registered by the cache at its third copy */
    int wrong = 0;
    for (int i = 0; i < 16; i++) {
        test_fill(pinned, small, (uint32_t)(200 + i));
        CHECK(d.htod_async(dev, pinned, small, s));
        CHECK(d.dtoh_async(pinned + small, dev, small, s));
        CHECK(d.stream_sync(s));
        wrong += memcmp(pinned, pinned + small, small) != 0;
        memset(buf + 2 * small, 0, small);
        CHECK(d.dtoh_async(buf + 2 * small, dev, small, s));
        wrong += memcmp(buf + 2 * small, pinned, small) != 0; /* complete on return for pageable memory */
        CHECK(d.stream_sync(s));
        mix(buf, n);
    }
    printf("beside: %d wrong of 32 checks\n", wrong);
    free(buf);
    check_released(buf, n, "free");
    CHECK(d.free_host(pinned));
    CHECK(d.stream_destroy(s));
    return wrong != 0;
}

static void *thread_body(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    CHECK(d.ctx_set(ctx));
    CUdeviceptr mine;
    CHECK(d.mem_alloc(&mine, 3 * MiB));
    for (int round = 0; round < 12; round++) {
        size_t n = (size_t)(1 + (id + (uint32_t)round) % 3) * MiB;
        unsigned char *buf = malloc(n);
        for (int p = 0; p < 4; p++) {
            test_fill(buf, n, id * 1000 + (uint32_t)(round * 10 + p));
            uint64_t h = test_hash(buf, n);
            CHECK(d.htod(mine, buf, n));
            memset(buf, 0, n);
            CHECK(d.dtoh(buf, mine, n));
            if (test_hash(buf, n) != h) {
                printf("thread %u: WRONG bytes\n", id);
                exit(1);
            }
        }
        free(buf);
        void *small = malloc(100 + round); /* small allocations interleaved */
        free(small);
    }
    CHECK(d.mem_free(mine));
    return NULL;
}

static int scenario_threads(void)
{
    pthread_t t[16];
    for (uintptr_t i = 0; i < 16; i++)
        pthread_create(&t[i], NULL, thread_body, (void *)i);
    for (int i = 0; i < 16; i++)
        pthread_join(t[i], NULL);
    printf("threads: 16 threads done\n");
    return 0;
}

static int scenario_fork(void)
{
    unsigned char *a = malloc(4 * MiB), *b = map(8 * MiB);
    reuse_passes(a, 4 * MiB, 5, 90);
    reuse_passes(b, 8 * MiB, 5, 91);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) { /* no CUDA here: read, free and unmap what was inherited, allocate more */
        uint64_t h = test_hash(a, 4 * MiB) ^ test_hash(b, 8 * MiB);
        free(a);
        munmap(b, 8 * MiB);
        for (int i = 0; i < 50; i++) {
            void *p = malloc(2 * MiB);
            memset(p, i, 2 * MiB);
            free(p);
        }
        exit(h ? 0 : 3); /* exit, not _exit: the fake driver's exit handlers run too */
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("fork: child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    reuse_passes(a, 4 * MiB, 2, 92); /* the parent's buffers are untouched by the child */
    free(a);
    munmap(b, 8 * MiB);
    check_released(a, 4 * MiB, "free after fork");
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static int scenario_mallocs(long n)
{
    uint64_t sum = 0;
    for (long i = 0; i < n; i++) {
        size_t sz = 16 + (size_t)(i % 200) * 8;
        unsigned char *p = malloc(sz);
        p[0] = (unsigned char)i;
        p[sz - 1] = (unsigned char)(i >> 8);
        sum += p[0] + p[sz - 1];
        free(p);
    }
    printf("mallocs: %ld pairs, checksum %llu\n", n, (unsigned long long)sum);
    return 0;
}

/* One copy of buf[off, off + n) to the device and back, sync or async; counts refused calls and
 * wrong bytes instead of stopping, so the output shows every difference. */
static int neighbour_failures, neighbour_wrong;

static void neighbour_copy(unsigned char *buf, size_t off, size_t n, int async, CUstream s, uint32_t seed)
{
    test_fill(buf + off, n, seed);
    uint64_t h = test_hash(buf + off, n);
    CUresult r = async ? d.htod_async(dev, buf + off, n, s) : d.htod(dev, buf + off, n);
    if (r != CUDA_SUCCESS) {
        printf("neighbours: H2D%s of [%zu, +%zu) returned %d\n", async ? " async" : "", off, n, (int)r);
        neighbour_failures++;
    }
    memset(buf + off, 0, n);
    r = async ? d.dtoh_async(buf + off, dev, n, s) : d.dtoh(buf + off, dev, n);
    if (r != CUDA_SUCCESS) {
        printf("neighbours: D2H%s of [%zu, +%zu) returned %d\n", async ? " async" : "", off, n, (int)r);
        neighbour_failures++;
    }
    neighbour_wrong += test_hash(buf + off, n) != h;
    mix(buf + off, n);
}

static int scenario_neighbours(void)
{
    enum { BLOCKS = 24, ROUNDS = 6 };
    const size_t n = 4000000;
    mallopt(M_MMAP_THRESHOLD, 256 << 20); /* glibc then hands the blocks out side by side */
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    unsigned char *blocks[BLOCKS];
    for (int b = 0; b < BLOCKS; b++)
        blocks[b] = malloc(n);
    for (int round = 0; round < ROUNDS; round++)
        for (int b = 0; b < BLOCKS; b++)
            neighbour_copy(blocks[b], 0, n, round & 1, s, (uint32_t)(round * BLOCKS + b));
    /* sub-ranges: the second half, the last bytes, an interior range, a range ending mid-block */
    const size_t offs[4][2] = {{n / 2, n - n / 2}, {n - 100, 100}, {1000, n - 2000}, {5000, n / 3}};
    for (int b = 0; b < BLOCKS; b++)
        for (int k = 0; k < 4; k++)
            neighbour_copy(blocks[b], offs[k][0], offs[k][1], (b + k) & 1, s, (uint32_t)(1000 + b * 4 + k));
    CHECK(d.stream_sync(s));
    for (int b = 0; b < BLOCKS; b++) {
        free(blocks[b]);
        check_released(blocks[b], n, "free of a neighbour");
    }
    CHECK(d.stream_destroy(s));
    printf("neighbours: %d refused copies, %d wrong round trips\n", neighbour_failures, neighbour_wrong);
    return neighbour_failures || neighbour_wrong;
}

/* Prints a copy's return code under a name: the output must match the run without the shim. */
static int edge_failures;
static void edge_result(const char *what, CUresult r)
{
    printf("edges: %s returned %d\n", what, (int)r);
    edge_failures += r != CUDA_SUCCESS;
}

static int scenario_edges(void)
{
    const size_t n = 4000000, off = 8192 + 100; /* starts inside the whole pages, runs to the end */
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    unsigned char *other = malloc(n);
    for (int k = 0; k < 3; k++) { /* one buffer per shape: a dropped registration is not made again */
        unsigned char *buf = malloc(n);
        for (int i = 0; i < 4; i++) /* registered at the 3rd copy with the default policy */
            round_trip(buf, n, (uint32_t)(40 + 10 * k + i));
        if (k == 0) {
            size_t rows = 4, width = (n - off) / rows;
            CUDA_MEMCPY2D m = {0};
            m.srcMemoryType = CU_MEMORYTYPE_HOST;
            m.srcHost = buf + off;
            m.srcPitch = width;
            m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
            m.dstDevice = dev;
            m.dstPitch = width;
            m.WidthInBytes = width;
            m.Height = rows;
            edge_result("2D H2D", d.m2d(&m));
        } else if (k == 1) {
            edge_result("host-to-host cuMemcpy", d.memcpy((CUdeviceptr)other, (CUdeviceptr)(buf + off), n - off));
            mix(other, n);
        } else {
            edge_result("H2D async of [off, end)", d.htod_async(dev, buf + off, n - off, s));
            edge_result("D2H async of [off, end)", d.dtoh_async(buf + off, dev, n - off, s));
            CHECK(d.stream_sync(s));
        }
        for (int i = 0; i < 2; i++)
            round_trip(buf, n, (uint32_t)(70 + 10 * k + i));
        free(buf);
        check_released(buf, n, "free after edge copies");
    }
    free(other);
    CHECK(d.stream_destroy(s));
    printf("edges: %d refused\n", edge_failures);
    return edge_failures != 0;
}

/* C++'s new[] and a vector's storage are registered and unregistered like malloc's blocks. */
static int scenario_cxx(const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "cannot dlopen %s: %s\n", lib, dlerror());
        return 2;
    }
    void *(*array_new)(size_t) = (void *(*)(size_t))dlsym(h, "cxx_array_new");
    void (*array_delete)(void *) = (void (*)(void *))dlsym(h, "cxx_array_delete");
    void *(*vector_new)(size_t) = (void *(*)(size_t))dlsym(h, "cxx_vector_new");
    unsigned char *(*vector_data)(void *) = (unsigned char *(*)(void *))dlsym(h, "cxx_vector_data");
    void (*vector_delete)(void *) = (void (*)(void *))dlsym(h, "cxx_vector_delete");
    int (*bad_alloc_caught)(void) = (int (*)(void))dlsym(h, "cxx_bad_alloc_caught");
    int (*new_handler_calls)(void) = (int (*)(void))dlsym(h, "cxx_new_handler_calls");
    int (*nothrow_null)(void) = (int (*)(void))dlsym(h, "cxx_nothrow_null");
    if (!array_new || !array_delete || !vector_new || !vector_data || !vector_delete || !bad_alloc_caught ||
        !new_handler_calls || !nothrow_null) {
        fprintf(stderr, "%s lacks a cxx_* function\n", lib);
        return 2;
    }
    unsigned char *a = array_new(6 * MiB);
    reuse_passes(a, 6 * MiB, 5, 11);
    array_delete(a);
    check_released(a, 6 * MiB, "delete[]");
    void *v = vector_new(5 * MiB);
    unsigned char *data = vector_data(v);
    reuse_passes(data, 5 * MiB, 5, 12);
    vector_delete(v);
    check_released(data, 5 * MiB, "the vector's delete");
    printf("cxx: bad_alloc caught %d, new-handler calls before bad_alloc %d, nothrow null %d\n", bad_alloc_caught(),
           new_handler_calls(), nothrow_null());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: reuseprog SCENARIO [ARGS]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(argv[1], "mallocs"))
        return scenario_mallocs(argc > 2 ? atol(argv[2]) : 10000000);
    ctx = test_driver_start(&d, "dlsym");
    get_attribute = (fn_attr)dlsym(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), "cuPointerGetAttribute");
    if (!get_attribute) {
        fprintf(stderr, "no cuPointerGetAttribute\n");
        return 2;
    }
    CHECK(d.mem_alloc(&dev, 64 * MiB));
    int rc;
    if (!strcmp(argv[1], "reuse"))
        rc = scenario_reuse(argc > 2 ? atoi(argv[2]) : 8, argc > 3 ? atoi(argv[3]) : 10);
    else if (!strcmp(argv[1], "async")) rc = scenario_async();
    else if (!strcmp(argv[1], "free")) rc = scenario_free();
    else if (!strcmp(argv[1], "realloc")) rc = scenario_realloc();
    else if (!strcmp(argv[1], "munmap")) rc = scenario_munmap();
    else if (!strcmp(argv[1], "mremap")) rc = scenario_mremap();
    else if (!strcmp(argv[1], "madvise")) rc = scenario_madvise();
    else if (!strcmp(argv[1], "sameaddr")) rc = scenario_sameaddr();
    else if (!strcmp(argv[1], "budget")) rc = scenario_budget();
    else if (!strcmp(argv[1], "own")) rc = scenario_own();
    else if (!strcmp(argv[1], "beside")) rc = scenario_beside();
    else if (!strcmp(argv[1], "threads")) rc = scenario_threads();
    else if (!strcmp(argv[1], "fork")) rc = scenario_fork();
    else if (!strcmp(argv[1], "neighbours")) rc = scenario_neighbours();
    else if (!strcmp(argv[1], "edges")) rc = scenario_edges();
    else if (!strcmp(argv[1], "cxx") && argc > 2) rc = scenario_cxx(argv[2]);
    else {
        fprintf(stderr, "unknown scenario %s\n", argv[1]);
        return 2;
    }
    CHECK(d.mem_free(dev));
    printf("hash %016llx, stale registrations: %d\n", (unsigned long long)total_hash, stale);
    return rc || stale;
}
