/* memcpy_probe.c: how fast can CPU threads fill pinned memory from a resident pageable buffer, the
 * memcpy half of a staged H2D (issue #13)? For 1..16 threads and four ways of copying (glibc memcpy,
 * AVX2 non-temporal stores, the shim's SSE2 ones (shim/stage/stream_copy.c, compiled in), rep movsb), copies 256 MiB in 16 MiB chunks into a 4-chunk pinned ring,
 * each thread taking one contiguous share of every chunk; optionally while another thread keeps the
 * DMA engine reading a second pinned buffer (the pipeline's other half). Prints GB/s, median of 5.
 * Build on the GPU machine: gcc -O2 -mavx2 -pthread -I$CUDA_HOME/include memcpy_probe.c -ldl
 * Usage: ./memcpy_probe [dma] [MiB]   (MiB: the source's size, default 256; make it several times the
 * host's last-level cache for the rates of a source in DRAM)      Never asserts a timing. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../shim/stage/stream_copy.c"

#define MiB ((size_t)1 << 20)
static size_t source_bytes = 256 * MiB; /* the source; a multiple of CHUNK */
#define CHUNK (16 * MiB)
#define RING 4

static CUresult (*p_init)(unsigned);
static CUresult (*p_dev_get)(CUdevice *, int);
static CUresult (*p_retain)(CUcontext *, CUdevice);
static CUresult (*p_set)(CUcontext);
static CUresult (*p_host_alloc)(void **, size_t, unsigned);
static CUresult (*p_alloc)(CUdeviceptr *, size_t);
static CUresult (*p_htod)(CUdeviceptr, const void *, size_t);

static void copy_nt(char *dst, const char *src, size_t n)
{
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(src + i + 64));
        __m256i d = _mm256_loadu_si256((const __m256i *)(src + i + 96));
        _mm256_stream_si256((__m256i *)(dst + i), a);
        _mm256_stream_si256((__m256i *)(dst + i + 32), b);
        _mm256_stream_si256((__m256i *)(dst + i + 64), c);
        _mm256_stream_si256((__m256i *)(dst + i + 96), d);
    }
    memcpy(dst + i, src + i, n - i);
    _mm_sfence();
}

/* the shim's own streaming stores (stage_stores = streaming), compiled in */
static void copy_nt_sse2(char *dst, const char *src, size_t n) { stream_copy(dst, src, n); }

static void copy_movsb(char *dst, const char *src, size_t n)
{
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

static void copy_glibc(char *dst, const char *src, size_t n) { memcpy(dst, src, n); }

typedef void (*copy_fn)(char *, const char *, size_t);
static const struct { const char *name; copy_fn fn; } methods[] = {
    {"memcpy", copy_glibc}, {"nt-avx2", copy_nt}, {"nt-sse2", copy_nt_sse2}, {"movsb", copy_movsb}};

static char *src, *ring, *dma_buf;
static unsigned nthreads;
static copy_fn method;
static pthread_barrier_t start_bar, end_bar;
static volatile int stop_dma;
static CUcontext ctx;

static void *copier(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    size_t share = (CHUNK / nthreads + 63) & ~(size_t)63;
    size_t off = t * share, n = off >= CHUNK ? 0 : (off + share > CHUNK ? CHUNK - off : share);
    pthread_barrier_wait(&start_bar);
    for (size_t k = 0; k < source_bytes / CHUNK; k++)
        if (n)
            method(ring + (k % RING) * CHUNK + off, src + k * CHUNK + off, n);
    pthread_barrier_wait(&end_bar);
    return NULL;
}

static void *dma_loop(void *arg)
{
    (void)arg;
    CUdeviceptr d;
    p_set(ctx);
    if (p_alloc(&d, 64 * MiB) != CUDA_SUCCESS)
        return NULL;
    while (!stop_dma)
        p_htod(d, dma_buf, 64 * MiB);
    return NULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int with_dma = argc > 1 && strcmp(argv[1], "dma") == 0;
    if (argc > 2 && atol(argv[2]) >= 16)
        source_bytes = (size_t)atol(argv[2]) / 16 * 16 * MiB;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) {
        fprintf(stderr, "memcpy_probe: libcuda.so.1 not found\n");
        return 2;
    }
    p_init = dlsym(cuda, "cuInit");
    p_dev_get = dlsym(cuda, "cuDeviceGet");
    p_retain = dlsym(cuda, "cuDevicePrimaryCtxRetain");
    p_set = dlsym(cuda, "cuCtxSetCurrent");
    p_host_alloc = dlsym(cuda, "cuMemHostAlloc");
    p_alloc = dlsym(cuda, "cuMemAlloc_v2");
    p_htod = dlsym(cuda, "cuMemcpyHtoD_v2");
    CUdevice dev;
    if (p_init(0) || p_dev_get(&dev, 0) || p_retain(&ctx, dev) || p_set(ctx) ||
        p_host_alloc((void **)&ring, RING * CHUNK, 0) || p_host_alloc((void **)&dma_buf, 64 * MiB, 0)) {
        fprintf(stderr, "memcpy_probe: CUDA setup failed\n");
        return 2;
    }
    src = malloc(source_bytes);
    memset(src, 1, source_bytes);
    memset(ring, 2, RING * CHUNK);
    pthread_t dma_thread;
    if (with_dma)
        pthread_create(&dma_thread, NULL, dma_loop, NULL);
    static const unsigned counts[] = {1, 2, 4, 8, 12, 16};
    printf("memcpy_probe%s: GB/s filling pinned memory, 256 MiB in 16 MiB chunks (median of 5)\n",
           with_dma ? " with a concurrent pinned H2D DMA" : "");
    printf("%-8s", "threads");
    for (size_t m = 0; m < sizeof methods / sizeof *methods; m++)
        printf(" %9s", methods[m].name);
    printf("\n");
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        nthreads = counts[c];
        printf("%-8u", nthreads);
        for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
            method = methods[m].fn;
            double rate[5];
            for (int rep = 0; rep < 5; rep++) {
                pthread_barrier_init(&start_bar, NULL, nthreads + 1);
                pthread_barrier_init(&end_bar, NULL, nthreads + 1);
                pthread_t th[16];
                for (unsigned t = 0; t < nthreads; t++)
                    pthread_create(&th[t], NULL, copier, (void *)(uintptr_t)t);
                pthread_barrier_wait(&start_bar);
                double t0 = now();
                pthread_barrier_wait(&end_bar);
                rate[rep] = source_bytes / (now() - t0) / 1e9;
                for (unsigned t = 0; t < nthreads; t++)
                    pthread_join(th[t], NULL);
                pthread_barrier_destroy(&start_bar);
                pthread_barrier_destroy(&end_bar);
            }
            qsort(rate, 5, sizeof *rate, cmp);
            printf(" %9.1f", rate[2]);
        }
        printf("\n");
        fflush(stdout);
    }
    if (with_dma) {
        stop_dma = 1;
        pthread_join(dma_thread, NULL);
    }
    return 0;
}
