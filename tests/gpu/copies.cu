// copies.cu: GPU-only test program for pinshim.
//
// Makes a known set of host<->device copies through the CUDA runtime API
// (pageable, pinned, registered; sync and async; created and default stream;
// D2D; 2D; cudaMemcpyDefault), checks every round trip bit for bit, prints
// deterministic checksums, and ends with one line per copy category:
//
//     expect <dir> <host_kind> <count>
//
// run.sh compares those lines with the shim's JSON summary. The counts are
// exact: the program makes no other copies. host_kind "any" (used for d2d)
// means "summed over every host_kind the shim reports for that direction".
//
// Output must not depend on addresses or timings: run.sh diffs stdout with
// and without the shim.
//
// Build: nvcc -O2 -arch=sm_90 copies.cu            (static cudart)
//        nvcc -O2 -arch=sm_90 -cudart shared copies.cu
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t ck_err_ = (call);                                         \
        if (ck_err_ != cudaSuccess) {                                         \
            fprintf(stderr, "copies: %s:%d: %s failed: %s (%s)\n", __FILE__,  \
                    __LINE__, #call, cudaGetErrorString(ck_err_),             \
                    cudaGetErrorName(ck_err_));                               \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static void die(const char *what) {
    fprintf(stderr, "copies: FAILED: %s\n", what);
    exit(1);
}

// ---------------------------------------------------------------- expectations
enum { C_H2D_PAGEABLE, C_D2H_PAGEABLE, C_H2D_PINNED, C_D2H_PINNED,
       C_H2D_REGISTERED, C_D2H_REGISTERED, C_D2D, C_NCAT };
static const char *const cat_dir[C_NCAT]  = {"h2d", "d2h", "h2d", "d2h", "h2d", "d2h", "d2d"};
static const char *const cat_kind[C_NCAT] = {"pageable", "pageable", "pinned", "pinned",
                                             "registered", "registered", "any"};
static int cat_count[C_NCAT];

// Every copy goes through COPY/COPY_ASYNC/COPY_2D so the expectation is
// counted exactly when the call succeeded.
#define COPY(cat, dst, src, n, kind)                                          \
    do { CK(cudaMemcpy((dst), (src), (n), (kind))); cat_count[cat]++; } while (0)
#define COPY_ASYNC(cat, dst, src, n, kind, stream)                            \
    do { CK(cudaMemcpyAsync((dst), (src), (n), (kind), (stream)));            \
         cat_count[cat]++; } while (0)
#define COPY_2D(cat, dst, dpitch, src, spitch, w, h, kind)                    \
    do { CK(cudaMemcpy2D((dst), (dpitch), (src), (spitch), (w), (h), (kind))); \
         cat_count[cat]++; } while (0)

// ---------------------------------------------------------------- patterns
static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Deterministic pattern in which no byte is zero.
static void fill(void *p, size_t n, uint64_t seed) {
    unsigned char *b = (unsigned char *)p;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = mix64(seed * 0x100000001B3ull + i / 8);
        for (size_t k = 0; k < 8 && i + k < n; k++) {
            unsigned char c = (unsigned char)(v >> (8 * k));
            b[i + k] = c ? c : (unsigned char)(0x5A ^ k);
        }
    }
}

static uint64_t fnv1a(const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 0x100000001B3ull; }
    return h;
}

static int checks_ok = 0;

static void check_equal(const char *name, const void *got, const void *want, size_t n) {
    if (memcmp(got, want, n) != 0) {
        const unsigned char *g = (const unsigned char *)got, *w = (const unsigned char *)want;
        size_t i = 0;
        while (i < n && g[i] == w[i]) i++;
        fprintf(stderr, "copies: %s: mismatch at byte %zu of %zu (got 0x%02x want 0x%02x)\n",
                name, i, n, g[i], w[i]);
        die(name);
    }
    checks_ok++;
    printf("ok %s bytes=%zu fnv=%016llx\n", name, n, (unsigned long long)fnv1a(got, n));
}

// ---------------------------------------------------------------- kernel
__host__ __device__ static inline uint32_t xform(uint32_t v, uint32_t i) {
    v ^= i * 0x9E3779B1u;
    v = (v << 7) | (v >> 25);
    return v * 0x85EBCA77u + 0xC2B2AE3Du;
}

__global__ void transform(const uint32_t *in, uint32_t *out, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = xform(in[i], (uint32_t)i);
}

static void launch_transform(const uint32_t *in, uint32_t *out, size_t n, cudaStream_t s) {
    transform<<<256, 256, 0, s>>>(in, out, n);
    CK(cudaGetLastError());
}

static void host_transform(const uint32_t *in, uint32_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = xform(in[i], (uint32_t)i);
}

// ---------------------------------------------------------------- main
int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    if (ndev < 1) die("no CUDA device");
    CK(cudaSetDevice(0));

    // Sizes: a large one (several MiB, not a multiple of any chunk size), a
    // mid one, tiny ones, and an odd byte count.
    const size_t big_words = (5u << 20) / 4 + 777;   // ~5 MiB of uint32
    const size_t big = big_words * 4;
    const size_t mid = (192u << 10) + 4 * 13;         // ~192 KiB
    const size_t odd = 1000003;                       // odd byte count
    const size_t tiny = 4;

    cudaStream_t stream;
    CK(cudaStreamCreate(&stream));

    uint32_t *d_a, *d_b, *d_c;
    CK(cudaMalloc((void **)&d_a, big));
    CK(cudaMalloc((void **)&d_b, big));
    CK(cudaMalloc((void **)&d_c, big));

    uint32_t *want = (uint32_t *)malloc(big);
    if (!want) die("malloc");

    // ---- 1. pageable: big H2D, kernel, D2H of result and of the input
    {
        uint32_t *src = (uint32_t *)malloc(big);
        uint32_t *out = (uint32_t *)malloc(big);
        uint32_t *rt = (uint32_t *)malloc(big);
        if (!src || !out || !rt) die("malloc");
        fill(src, big, 1);
        memset(out, 0, big);
        memset(rt, 0, big);
        COPY(C_H2D_PAGEABLE, d_a, src, big, cudaMemcpyHostToDevice);
        // Overwrite the source right away: pageable H2D must not read it later.
        memset(src, 0xEE, big);
        launch_transform(d_a, d_b, big_words, 0);
        COPY(C_D2H_PAGEABLE, out, d_b, big, cudaMemcpyDeviceToHost);
        COPY(C_D2H_PAGEABLE, rt, d_a, big, cudaMemcpyDeviceToHost);
        fill(src, big, 1);
        check_equal("pageable_roundtrip_big", rt, src, big);
        host_transform(src, want, big_words);
        check_equal("pageable_kernel_big", out, want, big);
        free(src); free(out); free(rt);
    }

    // ---- 2. pageable: mid, odd-sized and unaligned, tiny
    {
        unsigned char *src = (unsigned char *)malloc(odd + 64);
        unsigned char *rt = (unsigned char *)malloc(odd + 64);
        if (!src || !rt) die("malloc");
        fill(src, odd + 64, 2);
        memset(rt, 0, odd + 64);
        COPY(C_H2D_PAGEABLE, d_c, src, mid, cudaMemcpyHostToDevice);
        COPY(C_D2H_PAGEABLE, rt, d_c, mid, cudaMemcpyDeviceToHost);
        check_equal("pageable_roundtrip_mid", rt, src, mid);

        // Unaligned host addresses and an odd byte count.
        memset(rt, 0, odd + 64);
        COPY(C_H2D_PAGEABLE, d_c, src + 3, odd, cudaMemcpyHostToDevice);
        COPY(C_D2H_PAGEABLE, rt + 5, d_c, odd, cudaMemcpyDeviceToHost);
        check_equal("pageable_roundtrip_odd_unaligned", rt + 5, src + 3, odd);
        // Bytes around the destination must be untouched.
        for (int i = 0; i < 5; i++) if (rt[i] != 0) die("pageable D2H wrote before its destination");
        for (size_t i = 5 + odd; i < odd + 64; i++) if (rt[i] != 0) die("pageable D2H wrote past its destination");

        uint32_t t_in = 0xA1B2C3D4u, t_out = 0;
        COPY(C_H2D_PAGEABLE, d_c, &t_in, tiny, cudaMemcpyHostToDevice);
        COPY(C_D2H_PAGEABLE, &t_out, d_c, tiny, cudaMemcpyDeviceToHost);
        check_equal("pageable_roundtrip_tiny", &t_out, &t_in, tiny);
        free(src); free(rt);
    }

    // ---- 3. pinned (cudaMallocHost): sync copies
    uint32_t *p_in, *p_out;
    CK(cudaMallocHost((void **)&p_in, big));
    CK(cudaMallocHost((void **)&p_out, big));
    {
        fill(p_in, big, 3);
        memset(p_out, 0, big);
        COPY(C_H2D_PINNED, d_a, p_in, big, cudaMemcpyHostToDevice);
        COPY(C_D2H_PINNED, p_out, d_a, big, cudaMemcpyDeviceToHost);
        check_equal("pinned_sync_roundtrip", p_out, p_in, big);
    }

    // ---- 4. pinned async on a created stream, with a kernel in between
    {
        fill(p_in, big, 4);
        memset(p_out, 0, big);
        COPY_ASYNC(C_H2D_PINNED, d_a, p_in, big, cudaMemcpyHostToDevice, stream);
        launch_transform(d_a, d_b, big_words, stream);
        COPY_ASYNC(C_D2H_PINNED, p_out, d_b, big, cudaMemcpyDeviceToHost, stream);
        CK(cudaStreamSynchronize(stream));
        host_transform(p_in, want, big_words);
        check_equal("pinned_async_stream_kernel", p_out, want, big);
    }

    // ---- 5. pinned async on the default (legacy) stream
    {
        fill(p_in, mid, 5);
        memset(p_out, 0, mid);
        COPY_ASYNC(C_H2D_PINNED, d_c, p_in, mid, cudaMemcpyHostToDevice, 0);
        COPY_ASYNC(C_D2H_PINNED, p_out, d_c, mid, cudaMemcpyDeviceToHost, 0);
        CK(cudaStreamSynchronize(0));
        check_equal("pinned_async_default_stream", p_out, p_in, mid);
    }

    // ---- 6. registered (cudaHostRegister on page-aligned malloc'd memory)
    {
        void *r_in = NULL, *r_out = NULL;
        const size_t rbytes = (size_t)4 << 20;   // 4 MiB, page multiple
        if (posix_memalign(&r_in, 4096, rbytes) || posix_memalign(&r_out, 4096, rbytes))
            die("posix_memalign");
        fill(r_in, rbytes, 6);
        memset(r_out, 0, rbytes);
        CK(cudaHostRegister(r_in, rbytes, cudaHostRegisterDefault));
        CK(cudaHostRegister(r_out, rbytes, cudaHostRegisterDefault));
        COPY(C_H2D_REGISTERED, d_a, r_in, rbytes, cudaMemcpyHostToDevice);
        COPY(C_D2H_REGISTERED, r_out, d_a, rbytes, cudaMemcpyDeviceToHost);
        check_equal("registered_roundtrip", r_out, r_in, rbytes);
        CK(cudaHostUnregister(r_in));
        CK(cudaHostUnregister(r_out));
        free(r_in); free(r_out);
    }

    // ---- 7. D2D, verified through a pinned D2H
    {
        fill(p_in, big, 7);
        memset(p_out, 0, big);
        COPY(C_H2D_PINNED, d_a, p_in, big, cudaMemcpyHostToDevice);
        COPY(C_D2D, d_b, d_a, big, cudaMemcpyDeviceToDevice);
        COPY(C_D2H_PINNED, p_out, d_b, big, cudaMemcpyDeviceToHost);
        check_equal("d2d_roundtrip", p_out, p_in, big);
    }

    // ---- 8. cudaMemcpy2D H2D from pageable (pitched on both sides), back with 2D D2H
    {
        const size_t width = 3000, height = 257, hpitch = 3072 + 40;
        unsigned char *h = (unsigned char *)malloc(hpitch * height);
        unsigned char *back = (unsigned char *)malloc(width * height);
        unsigned char *rows_want = (unsigned char *)malloc(width * height);
        if (!h || !back || !rows_want) die("malloc");
        fill(h, hpitch * height, 8);
        memset(back, 0, width * height);
        for (size_t r = 0; r < height; r++) memcpy(rows_want + r * width, h + r * hpitch, width);
        void *dp; size_t dpitch;
        CK(cudaMallocPitch(&dp, &dpitch, width, height));
        COPY_2D(C_H2D_PAGEABLE, dp, dpitch, h, hpitch, width, height, cudaMemcpyHostToDevice);
        COPY_2D(C_D2H_PAGEABLE, back, width, dp, dpitch, width, height, cudaMemcpyDeviceToHost);
        check_equal("memcpy2d_roundtrip", back, rows_want, width * height);
        CK(cudaFree(dp));
        free(h); free(back); free(rows_want);
    }

    // ---- 9. cudaMemcpyDefault H2D from pageable memory, back with a D2H
    {
        unsigned char *src = (unsigned char *)malloc(mid);
        unsigned char *rt = (unsigned char *)malloc(mid);
        if (!src || !rt) die("malloc");
        fill(src, mid, 9);
        memset(rt, 0, mid);
        COPY(C_H2D_PAGEABLE, d_c, src, mid, cudaMemcpyDefault);
        COPY(C_D2H_PAGEABLE, rt, d_c, mid, cudaMemcpyDeviceToHost);
        check_equal("memcpy_default_h2d", rt, src, mid);
        free(src); free(rt);
    }

    CK(cudaDeviceSynchronize());
    CK(cudaFreeHost(p_in));
    CK(cudaFreeHost(p_out));
    CK(cudaFree(d_a));
    CK(cudaFree(d_b));
    CK(cudaFree(d_c));
    CK(cudaStreamDestroy(stream));
    free(want);

    printf("checks %d\n", checks_ok);
    for (int c = 0; c < C_NCAT; c++)
        if (cat_count[c] > 0)
            printf("expect %s %s %d\n", cat_dir[c], cat_kind[c], cat_count[c]);
    return 0;
}
