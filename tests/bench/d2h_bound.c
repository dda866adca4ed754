/* d2h_bound.c: what bounds a staged D2H into fresh memory (issue #13): the CPU's copy-out, measured
 * alone and while the link writes host memory. A staged D2H's workers copy each pinned chunk into
 * the program's fresh destination (each 2 MiB block a first-touch fault of a huge page, then the
 * copy) while the next chunks' DMAs write other pinned chunks at the link's speed. This program
 * times that copy-out for a fresh mapping of S MiB advised MADV_HUGEPAGE, written by T threads
 * (each its own slice), in four settings:
 *   resident, link idle: from ordinary memory the CPU wrote (fault_probe's copy-huge mode);
 *   resident, link busy: the same while another thread keeps back-to-back D2H DMAs of 64 MiB into
 *     pinned memory going (the link at full speed, writing host memory);
 *   dma-written, link idle: from pinned memory a D2H DMA has just filled (what a copy-out reads);
 *   dma-written, link busy: both.
 * Prints the best and the median GB/s of R repetitions of each, and the link's rate while busy.
 * The destination, by the fourth argument: "fresh" (default) as above; "resident", the mapping's
 * pages faulted in before the clock starts (what the copy-out costs without the faults); "moved",
 * resident huge pages of another mapping moved onto the destination by one mremap, timed with the
 * copy (what recycling the pages of a freed buffer would cost).
 * Bytes are checked after every copy. Never asserts a timing.
 * Usage: d2h_bound [MiB [threads [reps [fresh|resident|moved]]]]   (default 64 16 7 fresh)
 * Build: gcc -O2 -pthread -I$CUDA_HOME/include tests/bench/d2h_bound.c -o d2h_bound -lcuda */
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LINK_BYTES ((size_t)64 << 20) /* one background DMA */
#define MAX_THREADS 64
#define MAX_REPS 32

static CUcontext ctx;

enum dest { DEST_FRESH, DEST_RESIDENT, DEST_MOVED };
static const char *const dest_names[] = {"fresh", "resident", "moved"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void check(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        const char *s = NULL;
        cuGetErrorString(r, &s);
        fprintf(stderr, "d2h_bound: %s failed: %s\n", what, s ? s : "unknown error");
        exit(1);
    }
}

/* The background DMAs: back-to-back D2H copies of LINK_BYTES into pinned memory until told to stop. */
struct link {
    CUdeviceptr dev;
    void *pinned;
    CUstream stream;
    bool stop; /* set by the main thread (atomic) */
    double bytes, seconds;
};

static void *link_main(void *arg)
{
    struct link *l = arg;
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    double t0 = now_s(), moved = 0;
    while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
        for (int i = 0; i < 4; i++)
            check(cuMemcpyDtoHAsync(l->pinned, l->dev, LINK_BYTES, l->stream), "cuMemcpyDtoHAsync");
        check(cuStreamSynchronize(l->stream), "cuStreamSynchronize");
        moved += 4.0 * (double)LINK_BYTES;
    }
    l->bytes = moved;
    l->seconds = now_s() - t0;
    return NULL;
}

struct slice {
    char *dst;
    const char *src;
    size_t n;
};

static void *copy_slice(void *arg)
{
    struct slice *s = arg;
    memcpy(s->dst, s->src, s->n);
    return NULL;
}

static char *map_huge(size_t bytes)
{
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("d2h_bound: mmap");
        exit(1);
    }
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

/* One copy-out of `bytes` from src into a mapping advised huge pages, prepared as `dest` says, by
 * `threads` threads; GB/s. */
static double copy_out(const char *src, size_t bytes, int threads, enum dest dest)
{
    char *p = map_huge(bytes), *donor = NULL;
    if (dest == DEST_RESIDENT)
        memset(p, 1, bytes);
    if (dest == DEST_MOVED) {
        donor = map_huge(bytes);
        memset(donor, 1, bytes);
    }
    pthread_t t[MAX_THREADS];
    struct slice s[MAX_THREADS];
    size_t part = (bytes / (size_t)threads + 4095) & ~(size_t)4095;
    double t0 = now_s();
    if (dest == DEST_MOVED && mremap(donor, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, p) != p) {
        perror("d2h_bound: mremap");
        exit(1);
    }
    for (int i = 0; i < threads; i++) {
        size_t off = (size_t)i * part;
        size_t n = off >= bytes ? 0 : (bytes - off < part ? bytes - off : part);
        s[i] = (struct slice){p + off, src + off, n};
        pthread_create(&t[i], NULL, copy_slice, &s[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    double dt = now_s() - t0;
    if (memcmp(p, src, bytes) != 0) {
        fprintf(stderr, "d2h_bound: the copy-out wrote wrong bytes\n");
        exit(1);
    }
    munmap(p, bytes);
    return (double)bytes / dt / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 64;
    int threads = argc > 2 ? atoi(argv[2]) : 16, reps = argc > 3 ? atoi(argv[3]) : 7;
    int dest = -1;
    for (int d = DEST_FRESH; d <= DEST_MOVED; d++)
        if (strcmp(argc > 4 ? argv[4] : "fresh", dest_names[d]) == 0)
            dest = d;
    if (mib < 1 || threads < 1 || threads > MAX_THREADS || reps < 1 || reps > MAX_REPS || dest < 0) {
        fprintf(stderr, "usage: d2h_bound [MiB >= 1 [threads 1-%d [reps 1-%d [fresh|resident|moved]]]]\n",
                MAX_THREADS, MAX_REPS);
        return 2;
    }
    size_t bytes = mib << 20;
    CUdevice dev;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");

    /* the source data, on the device and in host memory the CPU wrote */
    char *resident = malloc(bytes);
    if (!resident)
        return 1;
    for (size_t i = 0; i < bytes; i++)
        resident[i] = (char)(i * 131 + (i >> 12));
    CUdeviceptr src_dev;
    check(cuMemAlloc(&src_dev, bytes), "cuMemAlloc");
    check(cuMemcpyHtoD(src_dev, resident, bytes), "cuMemcpyHtoD");
    void *dma_written;
    check(cuMemHostAlloc(&dma_written, bytes, 0), "cuMemHostAlloc");

    struct link l = {0};
    check(cuMemAlloc(&l.dev, LINK_BYTES), "cuMemAlloc");
    check(cuMemHostAlloc(&l.pinned, LINK_BYTES, 0), "cuMemHostAlloc");
    check(cuStreamCreate(&l.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

    printf("d2h_bound: %zu MiB into a %s mapping advised MADV_HUGEPAGE, %d threads, %d reps (best, median GB/s)\n",
           mib, dest_names[dest], threads, reps);
    for (int from_dma = 0; from_dma < 2; from_dma++) {
        for (int busy = 0; busy < 2; busy++) {
            pthread_t link_thread;
            if (busy) {
                __atomic_store_n(&l.stop, false, __ATOMIC_RELEASE);
                pthread_create(&link_thread, NULL, link_main, &l);
            }
            double g[MAX_REPS];
            for (int r = 0; r < reps; r++) {
                const char *src = resident;
                if (from_dma) { /* a DMA fills the pinned source just before, as a chunk's does */
                    check(cuMemcpyDtoH(dma_written, src_dev, bytes), "cuMemcpyDtoH");
                    src = dma_written;
                }
                g[r] = copy_out(src, bytes, threads, (enum dest)dest);
            }
            double link_gbps = 0;
            if (busy) {
                __atomic_store_n(&l.stop, true, __ATOMIC_RELEASE);
                pthread_join(link_thread, NULL);
                link_gbps = l.bytes / l.seconds / 1e9;
            }
            qsort(g, (size_t)reps, sizeof *g, cmp);
            printf("d2h_bound %-11s link %-4s %6.1f best %6.1f median", from_dma ? "dma-written" : "resident",
                   busy ? "busy" : "idle", g[reps - 1], g[reps / 2]);
            if (busy)
                printf("   (the link moved %.1f GB/s meanwhile)", link_gbps);
            printf("\n");
        }
    }
    return 0;
}
