/* openmp_stage.c: an OpenMP parallel region computes a 32 MiB buffer, then the buffer goes H2D and
 * comes back (the pattern of a PyTorch program copying a tensor it just computed). Built with
 * -fopenmp, so libgomp is loaded. Prints the buffer's hash; exits 1 if the bytes differ. */
#include "testutil.h"

int main(void)
{
    const size_t n = 32u << 20;
    struct test_driver d;
    test_driver_start(&d, "getproc");
    unsigned char *src = malloc(n), *back = malloc(n);
    CUdeviceptr dev;
    CHECK(d.mem_alloc(&dev, n));
#pragma omp parallel for
    for (long i = 0; i < (long)n; i++)
        src[i] = (unsigned char)(i * 7 + (i >> 12));
    CHECK(d.htod(dev, src, n));
    CHECK(d.dtoh(back, dev, n));
    if (memcmp(src, back, n) != 0) {
        fprintf(stderr, "MISMATCH: round trip of %zu bytes\n", n);
        return 1;
    }
    printf("openmp_stage: hash %016llx\n", (unsigned long long)test_hash(back, n));
    return 0;
}
