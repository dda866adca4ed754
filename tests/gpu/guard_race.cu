// guard_race.cu: an async D2H into cudaMallocHost memory read before cudaStreamSynchronize, through
// the CUDA runtime API (which nvcc links statically). usage: guard_race race|sync [trials]
// Prints how many reads saw the finished copy's bytes.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void fill(unsigned *p, size_t n, unsigned v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = v ^ (unsigned)(i * 2654435761u);
}

int main(int argc, char **argv)
{
    bool sync = argc > 1 && strcmp(argv[1], "sync") == 0;
    int trials = argc > 2 ? atoi(argv[2]) : 20;
    const size_t n = 64u << 20; // 256 MiB of unsigned
    unsigned *dev, *host, *snap = (unsigned *)malloc(n * sizeof *snap);
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMalloc(&dev, n * sizeof *dev));
    CHECK(cudaMallocHost(&host, n * sizeof *host));
    int correct = 0;
    for (int t = 0; t < trials; t++) {
        fill<<<1024, 256, 0, s>>>(dev, n, 1000u + t);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(host, dev, n * sizeof *host, cudaMemcpyDeviceToHost, s));
        if (sync)
            CHECK(cudaStreamSynchronize(s));
        memcpy(snap, host, n * sizeof *snap); // the read
        CHECK(cudaStreamSynchronize(s));
        correct += memcmp(snap, host, n * sizeof *snap) == 0;
    }
    printf("%s: trials %d correct %d\n", sync ? "sync" : "race", trials, correct);
    return 0;
}
