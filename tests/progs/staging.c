/* staging.c: scenarios for staged pageable copies, each comparing bytes bit for bit.
 *   staging sizes    - H2D and D2H, sync, async and unified, at every size boundary of the staging
 *                      policy (read from the same PINSHIM_* variables the shim reads), unaligned
 *   staging order    - staged copies interleaved with pinned copies and host functions on a stream
 *   staging overwrite- the source of an async staged H2D is overwritten right after the call
 *   staging threads  - 16 program threads staging at once
 *   staging fork     - fork while staging threads are busy; the child copies (pass-through)
 *   staging capture  - a pageable copy during stream capture (must pass through; graph replays it)
 *   staging crossstream - a full pool never makes a copy on stream T wait for stream S
 *   staging managed  - a sync H2D into managed memory is complete when it returns
 *   staging presync  - a sync pageable H2D first waits for earlier work on its stream
 *   staging freshdst - a staged D2H into a buffer just allocated (stderr: its huge pages, in kB)
 *   staging freshdst_part - the same writing only the first half of the buffer
 *   staging freshdst_advised | freshdst_nohuge - the program advises MADV_HUGEPAGE | MADV_NOHUGEPAGE
 *                             for the buffer before the copy
 *   staging recycle  - rounds of staged D2H copies into buffers just allocated, freed after each
 *                      round (an offload loop): bytes, a marker just past each copy in the same
 *                      buffer, a forked child's view of a destination and a realloc that grows one
 *                      (RECYCLE_SLEEP_MS: then idle that long before exit; RECYCLE_THREADS: then
 *                      name every other thread alive on stderr)
 *   staging recycle_demand - one staged D2H into a fresh buffer, then 8 buffers the program fills
 *                      and frees without copying them anywhere
 *   staging recycle_mmap - a round of malloc'd destinations freed, then a D2H into a mapping of the
 *                      program's own, which the program then grows with mremap
 *   staging prewarm  - a small pageable copy (none with PREWARM_NO_SMALL_COPY set), a wait (up to 5 s,
 *                      under the shim only) for the pool to have memory, then a round trip of
 *                      PREWARM_BYTES (default 32 MiB), the H2D synchronized before the D2H (stderr:
 *                      whether the pool got ready)
 *   staging d2h_run  - one thread's D2H copies of 4 chunks each (PINSHIM_STAGE_CHUNK_BYTES), one
 *                      after another, each into a buffer just allocated
 *   staging h2d_run  - one thread's sync H2D copies of 16 chunks each on the legacy stream, one after
 *                      another, each from a buffer just allocated and filled (a tensor just computed);
 *                      with H2D_RUN_STREAMS=2, async copies on two streams in turn (a copy on one
 *                      while the other's DMAs still run), both synchronized after each pair
 *   staging slices   - staged copies, then how many threads run with a scheduler slice of
 *                      SLICES_NS (the staging threads under stage_slice_us) and whether this one does;
 *                      (with SLICES_BATCH set, the process runs under SCHED_BATCH from its start)
 * Prints hashes (diffable with and without the shim) and exits nonzero on any mismatch. */
#define _GNU_SOURCE /* SCHED_BATCH */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static struct test_driver d;
static CUcontext ctx;

static size_t env_size(const char *name, size_t fallback)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    switch (*end) {
    case 'K': case 'k': n <<= 10; break;
    case 'M': case 'm': n <<= 20; break;
    case 'G': case 'g': n <<= 30; break;
    }
    return (size_t)n;
}

static void setup(void)
{
    ctx = test_driver_start(&d, getenv("ROUTE") ? getenv("ROUTE") : "getproc");
}

static void expect_same(const char *what, size_t n, const void *a, const void *b)
{
    if (memcmp(a, b, n) != 0) {
        fprintf(stderr, "MISMATCH: %s (%zu bytes)\n", what, n);
        exit(1);
    }
}

/* One round trip of n bytes through the given API style, from and to unaligned pageable buffers. */
static void round_trip(size_t n, int style, CUstream s, uint32_t seed)
{
    unsigned char *src_block = malloc(n + 16), *dst_block = malloc(n + 16);
    unsigned char *src = src_block + 3, *dst = dst_block + 5;
    CUdeviceptr dev;
    CHECK(d.mem_alloc(&dev, n + 8));
    test_fill(src, n, seed);
    memset(dst, 0xEE, n);
    switch (style) {
    case 0: /* sync */
        CHECK(d.htod(dev + 8, src, n));
        CHECK(d.dtoh(dst, dev + 8, n));
        break;
    case 1: /* async on a created stream */
        CHECK(d.htod_async(dev + 8, src, n, s));
        CHECK(d.dtoh_async(dst, dev + 8, n, s));
        CHECK(d.stream_sync(s));
        break;
    case 2: /* unified entry points */
        CHECK(d.memcpy(dev + 8, (CUdeviceptr)src, n));
        CHECK(d.memcpy_async((CUdeviceptr)dst, dev + 8, n, NULL));
        CHECK(d.stream_sync(NULL));
        break;
    }
    expect_same("round trip", n, src, dst);
    printf("size %9zu style %d hash %016llx\n", n, style, (unsigned long long)test_hash(dst, n));
    CHECK(d.mem_free(dev));
    free(src_block);
    free(dst_block);
}

static int scenario_sizes(void)
{
    size_t min = env_size("PINSHIM_STAGE_MIN_BYTES", 4u << 20);
    size_t d2h_min = env_size("PINSHIM_STAGE_D2H_MIN_BYTES", 64u << 10);
    size_t chunk = env_size("PINSHIM_STAGE_CHUNK_BYTES", 16u << 20);
    size_t cap = env_size("PINSHIM_POOL_MAX_BYTES", 64u << 20);
    size_t sizes[] = {1, 4095, 4096, d2h_min - 1, d2h_min, d2h_min + 1, min - 1, min, min + 1, chunk - 1, chunk,
                      chunk + 1, 3 * chunk + 17, cap - 1, cap, cap + 1, 2 * cap + 4097};
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (int style = 0; style < 3; style++)
            round_trip(sizes[i], style, s, (uint32_t)(i * 3 + (size_t)style));
    return 0;
}

static void CUDA_CB note(void *arg) { (*(int *)arg)++; }

static int scenario_order(void)
{
    const size_t n = (6u << 20) + 5;
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    unsigned char *x = malloc(n), *y = malloc(n);
    void *pinned;
    CUdeviceptr a, b;
    CHECK(d.host_alloc(&pinned, n, 0));
    CHECK(d.mem_alloc(&a, n));
    CHECK(d.mem_alloc(&b, n));
    int notes = 0;
    for (int round = 0; round < 4; round++) {
        test_fill(x, n, (uint32_t)round + 10);
        test_fill(pinned, n, (uint32_t)round + 20);
        CHECK(d.htod_async(a, x, n, s));                   /* staged */
        CHECK(d.launch_host_func(s, note, &notes));
        CHECK(d.htod_async(b, pinned, n, s));              /* pinned, passes */
        CHECK(d.dtod_async(b, a, n / 2, s));               /* device: first half of a over b */
        memset(y, 0, n);
        CHECK(d.dtoh_async(y, b, n, s));                   /* staged, waits */
        if (memcmp(y, x, n / 2) != 0 || memcmp(y + n / 2, (char *)pinned + n / 2, n - n / 2) != 0) {
            fprintf(stderr, "MISMATCH: stream order, round %d\n", round);
            return 1;
        }
        printf("order round %d hash %016llx\n", round, (unsigned long long)test_hash(y, n));
    }
    CHECK(d.stream_sync(s));
    printf("host functions run: %d\n", notes);
    return notes == 4 ? 0 : 1;
}

static int scenario_overwrite(void)
{
    const size_t n = (20u << 20) + 3;
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    unsigned char *src = malloc(n), *want = malloc(n), *got = malloc(n);
    CUdeviceptr a;
    CHECK(d.mem_alloc(&a, n));
    test_fill(src, n, 77);
    memcpy(want, src, n);
    CHECK(d.htod_async(a, src, n, s));
    memset(src, 0, n); /* allowed: a pageable async H2D has consumed its source when it returns */
    CHECK(d.stream_sync(s));
    CHECK(d.dtoh(got, a, n));
    expect_same("source overwritten after async H2D", n, want, got);
    printf("overwrite: device kept the old data, hash %016llx\n", (unsigned long long)test_hash(got, n));
    return 0;
}

static void *thread_copies(void *arg)
{
    int t = (int)(intptr_t)arg;
    CHECK(d.ctx_set(ctx));
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    for (int i = 0; i < 6; i++)
        round_trip((3u << 20) + (size_t)t * 4099 + (size_t)i, i % 2, s, (uint32_t)(t * 100 + i));
    return NULL;
}

static int scenario_threads(void)
{
    pthread_t threads[16];
    for (int t = 0; t < 16; t++)
        pthread_create(&threads[t], NULL, thread_copies, (void *)(intptr_t)t);
    for (int t = 0; t < 16; t++)
        pthread_join(threads[t], NULL);
    printf("16 threads done\n");
    return 0;
}

/* A non-blocking stream, host buffers src (filled from seed) and dst, and device memory, n bytes each. */
static void stream_and_buffers(size_t n, uint32_t seed, CUstream *s, unsigned char **src, unsigned char **dst,
                               CUdeviceptr *dev)
{
    CHECK(d.stream_create(s, CU_STREAM_NON_BLOCKING));
    *src = malloc(n);
    *dst = malloc(n);
    CHECK(d.mem_alloc(dev, n));
    test_fill(*src, n, seed);
}

/* Two copies sharing the pool: a thread keeps staging 16 MiB H2D copies on its stream (wanting
 * every chunk of a small pool) while the main thread makes 10 D2H copies of 64 MiB on another. The
 * D2H copies must get chunks too (the test reads how many were staged from the summary). */
static volatile int share_started, share_stop;

static void *share_h2d(void *arg)
{
    (void)arg;
    const size_t n = 16u << 20;
    CHECK(d.ctx_set(ctx));
    CUstream s;
    CHECK(d.stream_create(&s, CU_STREAM_NON_BLOCKING));
    unsigned char *src = malloc(n);
    CUdeviceptr dev;
    CHECK(d.mem_alloc(&dev, n));
    test_fill(src, n, 71);
    while (!share_stop) {
        CHECK(d.htod_async(dev, src, n, s));
        CHECK(d.stream_sync(s));
        share_started = 1;
    }
    CHECK(d.mem_free(dev));
    free(src);
    return NULL;
}

static int scenario_share(void)
{
    const size_t n = 64u << 20;
    pthread_t t;
    pthread_create(&t, NULL, share_h2d, NULL);
    while (!share_started)
        usleep(100);
    CUstream s;
    unsigned char *src, *dst;
    CUdeviceptr dev;
    stream_and_buffers(n, 72, &s, &src, &dst, &dev);
    /* on stream s: a sync pageable H2D may return before its DMA ends, and s does not wait for the
     * legacy stream (the fake models both) */
    CHECK(d.htod_async(dev, src, n, s));
    CHECK(d.stream_sync(s));
    for (int i = 0; i < 10; i++) {
        memset(dst, 0xEE, n);
        CHECK(d.dtoh_async(dst, dev, n, s));
        CHECK(d.stream_sync(s));
        expect_same("D2H while another thread stages", n, src, dst);
    }
    share_stop = 1;
    pthread_join(t, NULL);
    printf("share: 10 D2H copies identical while another stream staged H2D\n");
    return 0;
}

static volatile int stop_background;

static void *background(void *arg)
{
    (void)arg;
    CHECK(d.ctx_set(ctx));
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    for (int i = 0; !stop_background; i++)
        round_trip(5u << 20, i % 2, s, (uint32_t)i);
    return NULL;
}

static int scenario_fork(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    pthread_t t;
    pthread_create(&t, NULL, background, NULL);
    usleep(20000);
    /* the background thread's lines vary in number: send fd 1 to /dev/null, keep the original */
    int saved_stdout = dup(1), devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    close(devnull);
    pid_t child = fork();
    if (child == 0) {
        /* only this thread exists here; copies pass through the shim untouched */
        const size_t n = 3u << 20;
        unsigned char *src = malloc(n), *dst = malloc(n);
        CUdeviceptr dev;
        CHECK(d.ctx_set(ctx));
        CHECK(d.mem_alloc(&dev, n));
        test_fill(src, n, 5);
        CHECK(d.htod(dev, src, n));
        CHECK(d.dtoh(dst, dev, n));
        _exit(memcmp(src, dst, n) == 0 ? 0 : 3);
    }
    int status = 0;
    waitpid(child, &status, 0);
    stop_background = 1;
    pthread_join(t, NULL);
    dup2(saved_stdout, 1); /* not freopen("/dev/stderr"): opening a file for "w" truncates it */
    close(saved_stdout);
    fprintf(stderr, "fork: child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static int scenario_capture(void)
{
    const size_t n = 4u << 20;
    CUstream s;
    unsigned char *src, *dst;
    CUdeviceptr a;
    stream_and_buffers(n, 31, &s, &src, &dst, &a);
    CUgraph g;
    CUgraphExec exec;
    CHECK(d.begin_capture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(d.htod_async(a, src, n, s));
    CHECK(d.end_capture(s, &g));
    CHECK(d.graph_instantiate(&exec, g, 0));
    test_fill(src, n, 32); /* a graph reads its pageable source at replay time */
    CHECK(d.graph_launch(exec, s));
    CHECK(d.stream_sync(s));
    CHECK(d.dtoh(dst, a, n));
    expect_same("captured copy replayed", n, src, dst);
    printf("capture: replay copied the current source, hash %016llx\n", (unsigned long long)test_hash(dst, n));
    return 0;
}

static volatile int release_stream_s;

static void CUDA_CB hold_stream(void *arg)
{
    (void)arg;
    while (!release_stream_s)
        usleep(1000);
}

/* Stream S is held by a host function; a staged copy queued behind it takes the only pool chunk.
 * A copy on the unrelated stream T must still return (the driver would not wait for S). */
static int scenario_crossstream(void)
{
    const size_t n = 1u << 20;
    CUstream s, t;
    CHECK(d.stream_create(&s, CU_STREAM_NON_BLOCKING));
    CHECK(d.stream_create(&t, CU_STREAM_NON_BLOCKING));
    unsigned char *x = malloc(n), *y = malloc(n), *back = malloc(n);
    CUdeviceptr a, b;
    CHECK(d.mem_alloc(&a, n));
    CHECK(d.mem_alloc(&b, n));
    test_fill(x, n, 41);
    test_fill(y, n, 42);
    alarm(20); /* a deadlock fails the test instead of hanging it */
    CHECK(d.launch_host_func(s, hold_stream, NULL));
    CHECK(d.htod_async(a, x, n, s));
    CHECK(d.htod_async(b, y, n, t));
    printf("crossstream: copy on stream T returned while stream S was held\n");
    release_stream_s = 1;
    CHECK(d.stream_sync(s));
    CHECK(d.stream_sync(t));
    CHECK(d.dtoh(back, a, n));
    expect_same("stream S copy", n, x, back);
    CHECK(d.dtoh(back, b, n));
    expect_same("stream T copy", n, y, back);
    return 0;
}

/* A sync H2D into managed memory: the host may read it as soon as the call returns. */
static int scenario_managed(void)
{
    const size_t n = 4u << 20;
    unsigned char *src = malloc(n);
    CUdeviceptr m;
    CHECK(d.alloc_managed(&m, n, CU_MEM_ATTACH_GLOBAL));
    test_fill(src, n, 51);
    CHECK(d.htod(m, src, n));
    expect_same("managed memory right after a sync H2D", n, src, (void *)(uintptr_t)m);
    printf("managed: complete on return, hash %016llx\n", (unsigned long long)test_hash(src, n));
    return 0;
}

/* An async D2H into pinned memory, then a sync pageable H2D on the same (legacy) stream: the H2D
 * first waits for the stream, so the D2H's data is there when it returns. */
static int scenario_presync(void)
{
    const size_t n = 8u << 20, m = 2u << 20;
    void *pinned;
    unsigned char *want = malloc(n), *src = malloc(m);
    CUdeviceptr a, b;
    CHECK(d.host_alloc(&pinned, n, 0));
    CHECK(d.mem_alloc(&a, n));
    CHECK(d.mem_alloc(&b, m));
    test_fill(want, n, 61);
    test_fill(src, m, 62);
    CHECK(d.htod(a, want, n));
    CHECK(d.stream_sync(NULL));
    memset(pinned, 0, n);
    CHECK(d.dtoh_async(pinned, a, n, NULL));
    CHECK(d.htod(b, src, m));
    expect_same("pinned D2H destination after the sync H2D", n, want, pinned);
    printf("presync: earlier D2H into pinned memory complete when the sync H2D returned\n");
    return 0;
}

/* Huge pages behind [p, p + n) now, from /proc/self/smaps (kB of AnonHugePages of the mappings
 * that overlap it), or -1 when smaps cannot be read. */
static long huge_kb(const void *p, size_t n)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[256];
    int in = 0;
    long kb = 0;
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = a < hi && lo < b;
        else if (in && !strncmp(line, "AnonHugePages:", 14))
            kb += atol(line + 14);
    }
    fclose(f);
    return kb;
}

/* A staged D2H into a buffer just allocated (never touched): bytes right; how much of it ended up
 * in huge pages goes to stderr ("huge: N kB"), which differs with the shim (stage_hugepages). */
static int fresh_destination(size_t part, int advice)
{
    const size_t n = 64u << 20;
    unsigned char *src = malloc(n), *dst = malloc(n);
    if (advice >= 0) { /* the program's own huge-page advice over the buffer's whole pages, as NumPy gives */
        uintptr_t lo = ((uintptr_t)dst + 4095) & ~(uintptr_t)4095, hi = ((uintptr_t)dst + n) & ~(uintptr_t)4095;
        if (madvise((void *)lo, hi - lo, advice) != 0)
            perror("madvise");
    }
    CUdeviceptr dev;
    CHECK(d.mem_alloc(&dev, n));
    test_fill(src, n, 77);
    CHECK(d.htod(dev, src, n));
    CHECK(d.dtoh(dst, dev, part));
    expect_same("fresh destination", part, src, dst);
    fprintf(stderr, "huge: %ld kB\n", huge_kb(dst, n));
    printf("freshdst: %zu of %zu bytes into a fresh buffer, hash %016llx\n", part, n,
           (unsigned long long)test_hash(dst, part));
    CHECK(d.mem_free(dev));
    return 0;
}

static int scenario_freshdst(void) { return fresh_destination(64u << 20, -1); }

/* Half the buffer written: a program that touches part of an allocation gets no huge pages. */
static int scenario_freshdst_part(void) { return fresh_destination(32u << 20, -1); }

/* The program advises huge pages for the buffer itself (or advises against them) before the copy. */
static int scenario_freshdst_advised(void) { return fresh_destination(64u << 20, MADV_HUGEPAGE); }
static int scenario_freshdst_nohuge(void) { return fresh_destination(64u << 20, MADV_NOHUGEPAGE); }

/* One round of an offload loop: `count` buffers just allocated, of `small` bytes and of `large`
 * alternately, each filled by a D2H. glibc serves the small ones from its heap once its threshold
 * has grown, each copied but for its last 64 bytes (a marker the program wrote there must stay);
 * the large ones always from a mapping of their own, each copied in full. Returns the buffers. */
static unsigned char **offload_round(CUdeviceptr dev, const unsigned char *want, size_t small, size_t large, int count,
                                     int round)
{
    unsigned char **buf = malloc((size_t)count * sizeof *buf);
    uint64_t h = 0;
    for (int i = 0; i < count; i++) {
        size_t n = i % 2 ? large : small, marker = i % 2 ? 0 : 64;
        buf[i] = malloc(n);
        memset(buf[i] + n - marker, 0xA5, marker);
        CHECK(d.dtoh(buf[i], dev, n - marker));
        expect_same("fresh destination", n - marker, want, buf[i]);
        for (size_t k = n - marker; k < n; k++)
            if (buf[i][k] != 0xA5) {
                fprintf(stderr, "round %d buffer %d: byte %zu past the copy changed\n", round, i, k);
                exit(1);
            }
        h = h * 31 + test_hash(buf[i], n);
    }
    printf("recycle: round %d, %d buffers, hash %016llx\n", round, count, (unsigned long long)h);
    return buf;
}

/* One line on stderr, "thread: NAME", for each thread of this process but the calling one. */
static void print_other_threads(void)
{
    char self[32], path[300], name[32]; /* path: room for any d_name */
    snprintf(self, sizeof self, "%ld", (long)syscall(SYS_gettid));
    DIR *tasks = opendir("/proc/self/task");
    for (struct dirent *e; tasks && (e = readdir(tasks));) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, self))
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f && fgets(name, sizeof name, f))
            fprintf(stderr, "thread: %s", name); /* comm ends with its newline */
        if (f)
            fclose(f);
    }
    if (tasks)
        closedir(tasks);
}

static int scenario_recycle(void)
{
    const size_t small = (16u << 20) + 4096, n = (36u << 20) + 4096;
    const int count = 4, rounds = 4;
    unsigned char *want = malloc(n);
    CUdeviceptr dev;
    CHECK(d.mem_alloc(&dev, n));
    test_fill(want, n, 91);
    CHECK(d.htod(dev, want, n));
    for (int r = 0; r < rounds; r++) {
        unsigned char **buf = offload_round(dev, want, small, n, count, r);
        if (r == rounds - 1) {
            fflush(stdout);
            pid_t child = fork(); /* the child sees what the parent's buffer holds */
            if (child == 0)
                _exit(memcmp(buf[1], want, n) == 0 && memcmp(buf[0], want, small - 64) == 0 ? 0 : 3);
            int status = 0;
            waitpid(child, &status, 0);
            printf("recycle: forked child read the destination: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            buf[1] = realloc(buf[1], 2 * n); /* grows a destination: its bytes come along */
            expect_same("realloc'd destination", n, want, buf[1]);
        }
        for (int i = 0; i < count; i++)
            free(buf[i]);
        free(buf);
    }
    CHECK(d.mem_free(dev));
    if (getenv("RECYCLE_SLEEP_MS")) /* idle after the last free, as a program computing would be */
        usleep((useconds_t)atoi(getenv("RECYCLE_SLEEP_MS")) * 1000u);
    if (getenv("RECYCLE_THREADS")) /* stderr: the names of every other thread now alive */
        print_other_threads();
    return 0;
}

/* One staged D2H into a fresh buffer, then buffers the program fills and frees itself, copied
 * nowhere (the shim should keep about what that one copy wrote, not every free). */
static int scenario_recycle_demand(void)
{
    const size_t n = (36u << 20) + 4096;
    unsigned char *want = malloc(n);
    CUdeviceptr dev;
    CHECK(d.mem_alloc(&dev, n));
    test_fill(want, n, 93);
    CHECK(d.htod(dev, want, n));
    unsigned char *dst = malloc(n);
    CHECK(d.dtoh(dst, dev, n));
    expect_same("fresh destination", n, want, dst);
    free(dst);
    uint64_t h = 0;
    for (int i = 0; i < 8; i++) {
        unsigned char *p = malloc(n);
        test_fill(p, n, (uint32_t)i);
        h = h * 31 + test_hash(p, n);
        free(p);
    }
    printf("recycle_demand: 8 buffers filled and freed by the program, hash %016llx\n", (unsigned long long)h);
    CHECK(d.mem_free(dev));
    return 0;
}

static int scenario_recycle_mmap(void)
{
    const size_t n = (16u << 20) + 4096, len = n;
    unsigned char *want = malloc(n);
    CUdeviceptr dev;
    CHECK(d.mem_alloc(&dev, n));
    test_fill(want, n, 92);
    CHECK(d.htod(dev, want, n));
    for (int r = 0; r < 2; r++) {
        unsigned char **buf = offload_round(dev, want, n, n, 2, r);
        free(buf[0]);
        free(buf[1]);
        free(buf);
    }
    unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(d.dtoh(m, dev, len));
    void *grown = mremap(m, len, 2 * len, MREMAP_MAYMOVE); /* fails where the mapping was split */
    if (grown == MAP_FAILED) {
        perror("recycle_mmap: mremap of the program's mapping");
        return 1;
    }
    expect_same("mapping grown with mremap", n, want, grown);
    printf("recycle_mmap: the program's mapping grew with mremap, hash %016llx\n",
           (unsigned long long)test_hash(grown, n));
    CHECK(d.mem_free(dev));
    return 0;
}

/* The pool's bytes as the shim's JSON summary reports them (pinshim_summary_write), or -1 when no
 * shim is loaded. */
static long long shim_pool_bytes(void)
{
    int (*write_summary)(int, int) = (int (*)(int, int))dlsym(RTLD_DEFAULT, "pinshim_summary_write");
    FILE *f = write_summary ? tmpfile() : NULL;
    if (!f)
        return -1;
    char text[65536] = "";
    write_summary(fileno(f), 1);
    rewind(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    const char *at = strstr(text, "\"pool_bytes\":");
    return at ? atoll(at + strlen("\"pool_bytes\":")) : 0;
}

static int scenario_prewarm(void)
{
    const size_t small = 4096, n = env_size("PREWARM_BYTES", 32u << 20);
    unsigned char *src = malloc(n), *dst = malloc(n);
    if (!src || !dst) {
        fprintf(stderr, "prewarm: cannot allocate 2 x %zu bytes\n", n);
        return 1;
    }
    CUdeviceptr dev;
    CHECK(d.mem_alloc(&dev, n));
    test_fill(src, n, 91);
    if (!getenv("PREWARM_NO_SMALL_COPY"))
        CHECK(d.htod(dev, src, small));
    long long pool = shim_pool_bytes();
    for (int i = 0; pool == 0 && i < 500; i++) {
        usleep(10000);
        pool = shim_pool_bytes();
    }
    fprintf(stderr, "pool ready before the large copy: %s\n", pool > 0 ? "yes" : pool == 0 ? "no" : "no shim");
    CHECK(d.htod(dev, src, n));
    CHECK(d.stream_sync(NULL)); /* the H2D's DMAs done: its chunks are free for the D2H */
    CHECK(d.dtoh(dst, dev, n));
    expect_same("prewarm round trip", n, src, dst);
    printf("prewarm: %zu bytes, hash %016llx\n", n, (unsigned long long)test_hash(dst, n));
    CHECK(d.mem_free(dev));
    free(src);
    free(dst);
    return 0;
}

static int scenario_d2h_run(void)
{
    size_t n = 4 * env_size("PINSHIM_STAGE_CHUNK_BYTES", 16u << 20);
    unsigned char *src; /* pinned: its H2D passes through, so only the D2H copies use the pool */
    CHECK(d.host_alloc((void **)&src, n, 0));
    CUdeviceptr dev;
    CHECK(d.mem_alloc(&dev, n));
    test_fill(src, n, 57);
    CHECK(d.htod(dev, src, n));
    for (int i = 0; i < 8; i++) {
        unsigned char *dst = malloc(n);
        CHECK(d.dtoh(dst, dev, n));
        expect_same("d2h run", n, src, dst);
        printf("d2h run %d: %zu bytes, hash %016llx\n", i, n, (unsigned long long)test_hash(dst, n));
        free(dst);
    }
    CHECK(d.mem_free(dev));
    CHECK(d.free_host(src));
    return 0;
}

/* h2d_run's source i (a buffer just allocated and filled: a tensor just computed). */
static unsigned char *h2d_run_source(size_t n, int i)
{
    unsigned char *src = malloc(n);
    test_fill(src, n, 70 + (unsigned)i);
    return src;
}

static void h2d_run_check(CUdeviceptr dev, unsigned char *src, unsigned char *back, size_t n, int i)
{
    CHECK(d.dtoh(back, dev, n));
    expect_same("h2d run", n, src, back);
    printf("h2d run %d: %zu bytes, hash %016llx\n", i, n, (unsigned long long)test_hash(back, n));
    free(src);
}

static int scenario_h2d_run(void)
{
    size_t n = 16 * env_size("PINSHIM_STAGE_CHUNK_BYTES", 16u << 20);
    unsigned char *back = malloc(n);
    CUdeviceptr dev[2];
    CHECK(d.mem_alloc(&dev[0], n));
    if (env_size("H2D_RUN_STREAMS", 1) < 2) {
        for (int i = 0; i < 6; i++) {
            unsigned char *src = h2d_run_source(n, i);
            CHECK(d.htod(dev[0], src, n));
            h2d_run_check(dev[0], src, back, n, i);
        }
    } else {
        CUstream s[2];
        CHECK(d.mem_alloc(&dev[1], n));
        CHECK(d.stream_create(&s[0], CU_STREAM_NON_BLOCKING));
        CHECK(d.stream_create(&s[1], CU_STREAM_NON_BLOCKING));
        for (int i = 0; i < 6; i += 2) {
            unsigned char *src[2] = {h2d_run_source(n, i), h2d_run_source(n, i + 1)};
            for (int k = 0; k < 2; k++)
                CHECK(d.htod_async(dev[k], src[k], n, s[k]));
            for (int k = 0; k < 2; k++) {
                CHECK(d.stream_sync(s[k]));
                h2d_run_check(dev[k], src[k], back, n, i + k);
            }
        }
        for (int k = 0; k < 2; k++)
            CHECK(d.stream_destroy(s[k]));
        CHECK(d.mem_free(dev[1]));
    }
    CHECK(d.mem_free(dev[0]));
    free(back);
    return 0;
}

/* The pool's memory in device 0's primary context when the program resets it: copies before and
 * after are staged and come back whole (the shim undoes its slab's registration before the reset). */
static int scenario_reset(void)
{
    CUresult (*primary_reset)(CUdevice) =
        (CUresult(*)(CUdevice))dlsym(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), "cuDevicePrimaryCtxReset_v2");
    if (!primary_reset) {
        printf("reset: driver lacks cuDevicePrimaryCtxReset_v2\n");
        return 1;
    }
    round_trip(8u << 20, 0, NULL, 81);
    CUdevice dev0;
    CHECK(d.device_get(&dev0, 0));
    CHECK(primary_reset(dev0));
    CHECK(d.primary_retain(&ctx, dev0));
    CHECK(d.ctx_set(ctx));
    round_trip(8u << 20, 0, NULL, 82);
    return 0;
}

/* The scheduler slice (ns) /proc gives for one of this process's threads, or -1. */
static long long thread_slice_ns(const char *tid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%s/sched", tid);
    FILE *f = fopen(path, "r");
    long long ns = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "se.slice", 8))
            ns = atoll(strchr(line, ':') + 1);
    if (f)
        fclose(f);
    return ns;
}

/* Staged copies once the pool has memory (so the staging threads exist), then how many of this
 * process's threads run with a scheduler slice of SLICES_NS, and whether this thread does. */
static int scenario_slices(void)
{
    long long want = atoll(getenv("SLICES_NS") ? getenv("SLICES_NS") : "0");
    for (int i = 0; shim_pool_bytes() == 0 && i < 500; i++)
        usleep(10000);
    round_trip(8u << 20, 0, NULL, 83);
    char self[32];
    snprintf(self, sizeof self, "%ld", (long)syscall(SYS_gettid));
    if (thread_slice_ns(self) < 0) {
        printf("slices: /proc gives no se.slice\n");
        return 0;
    }
    DIR *tasks = opendir("/proc/self/task");
    int at = 0;
    for (struct dirent *e; tasks && (e = readdir(tasks));)
        at += e->d_name[0] != '.' && thread_slice_ns(e->d_name) == want;
    if (tasks)
        closedir(tasks);
    printf("slices: %d threads at %lld ns, this thread %s\n", at, want, thread_slice_ns(self) == want ? "too" : "not");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: staging sizes|order|overwrite|threads|fork|capture|crossstream|managed|presync|freshdst|freshdst_part|freshdst_advised|freshdst_nohuge|prewarm|share|reset|d2h_run|h2d_run|slices\n");
        return 2;
    }
    struct sched_param batch = {0};
    if (getenv("SLICES_BATCH") && sched_setscheduler(0, SCHED_BATCH, &batch) != 0) /* before the shim's threads */
        return 2;
    setup();
    if (!strcmp(argv[1], "sizes")) return scenario_sizes();
    if (!strcmp(argv[1], "order")) return scenario_order();
    if (!strcmp(argv[1], "overwrite")) return scenario_overwrite();
    if (!strcmp(argv[1], "threads")) return scenario_threads();
    if (!strcmp(argv[1], "fork")) return scenario_fork();
    if (!strcmp(argv[1], "capture")) return scenario_capture();
    if (!strcmp(argv[1], "crossstream")) return scenario_crossstream();
    if (!strcmp(argv[1], "managed")) return scenario_managed();
    if (!strcmp(argv[1], "presync")) return scenario_presync();
    if (!strcmp(argv[1], "freshdst")) return scenario_freshdst();
    if (!strcmp(argv[1], "freshdst_advised")) return scenario_freshdst_advised();
    if (!strcmp(argv[1], "freshdst_nohuge")) return scenario_freshdst_nohuge();
    if (!strcmp(argv[1], "freshdst_part")) return scenario_freshdst_part();
    if (!strcmp(argv[1], "recycle")) return scenario_recycle();
    if (!strcmp(argv[1], "recycle_mmap")) return scenario_recycle_mmap();
    if (!strcmp(argv[1], "recycle_demand")) return scenario_recycle_demand();
    if (!strcmp(argv[1], "prewarm")) return scenario_prewarm();
    if (!strcmp(argv[1], "share")) return scenario_share();
    if (!strcmp(argv[1], "reset")) return scenario_reset();
    if (!strcmp(argv[1], "d2h_run")) return scenario_d2h_run();
    if (!strcmp(argv[1], "h2d_run")) return scenario_h2d_run();
    if (!strcmp(argv[1], "slices")) return scenario_slices();
    fprintf(stderr, "unknown scenario %s\n", argv[1]);
    return 2;
}
