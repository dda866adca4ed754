/* symprog.c: copies from known places, for naming call sites (tests/bats/symbols.bats). Built with
 * -g and without -rdynamic: its functions are in the static symbol table and the debug information
 * only, so naming them needs the symbolizer, not dladdr. Modes:
 *   local N      N pageable H2D + N pageable D2H copies of 64 KiB from symprog_copy_here, on the
 *                line marked SYMPROG_COPY_LINE
 *   lib PATH N   dlopen PATH (tests/progs/lib/framecopy.c) and copy through it N H2D of 1 MiB and
 *                N D2H of 4 MiB into fresh memory; N D2H of 1 MiB from main itself (the pageable
 *                copies the shim's estimates compare staged ones with: kept out of the library's
 *                call site, so which kind of copy takes most of that site's time is not left to
 *                the timing); all pageable; prints "made N"
 *   devices N    with two devices: N H2D of 64 KiB to each device, then N D2H from device 1 */
#include <dlfcn.h>

#include "testutil.h"

static struct test_driver d;
static CUdeviceptr dev;

__attribute__((noinline)) static void symprog_copy_here(void *host, size_t n)
{
    CHECK(d.htod(dev, host, n)); /* SYMPROG_COPY_LINE */
    __asm__ volatile("" ::: "memory");
}

static void load_context(CUcontext *ctx, int ordinal)
{
    CUdevice device;
    CHECK(d.device_get(&device, ordinal));
    CHECK(d.primary_retain(ctx, device));
    CHECK(d.ctx_set(*ctx));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "local";
    test_driver_load(&d, "getproc");
    CHECK(d.init(0));
    CUcontext ctx[2];
    load_context(&ctx[0], 0);
    const size_t max = 4u << 20;
    unsigned char *host = malloc(max);
    test_fill(host, max, 7);
    CHECK(d.mem_alloc(&dev, max));
    if (strcmp(mode, "local") == 0) {
        long n = argc > 2 ? atol(argv[2]) : 4;
        for (long i = 0; i < n; i++) {
            symprog_copy_here(host, 64 * 1024);
            CHECK(d.dtoh(host, dev, 64 * 1024));
        }
        printf("made %ld\n", n);
    } else if (strcmp(mode, "lib") == 0 && argc > 2) {
        long n = argc > 3 ? atol(argv[3]) : 4;
        void *lib = dlopen(argv[2], RTLD_NOW);
        if (!lib) {
            fprintf(stderr, "symprog: %s\n", dlerror());
            return 1;
        }
        CUresult (*h2d)(void *, CUdeviceptr, const void *, size_t) =
            (CUresult(*)(void *, CUdeviceptr, const void *, size_t))dlsym(lib, "framecopy_h2d");
        CUresult (*d2h)(void *, void *, CUdeviceptr, size_t) =
            (CUresult(*)(void *, void *, CUdeviceptr, size_t))dlsym(lib, "framecopy_d2h");
        for (long i = 0; i < n; i++) {
            CHECK(h2d((void *)d.htod, dev, host, 1u << 20));
            CHECK(d.dtoh(host, dev, 1u << 20));
            unsigned char *fresh = malloc(max); /* a fresh destination each time, as .to("cpu") makes */
            CHECK(d2h((void *)d.dtoh, fresh, dev, max));
            free(fresh);
        }
        printf("made %ld\n", n);
    } else if (strcmp(mode, "devices") == 0) {
        long n = argc > 2 ? atol(argv[2]) : 4;
        int count = 0;
        CHECK(d.device_count(&count));
        if (count < 2) {
            printf("skipped: %d device\n", count);
            return 0;
        }
        CUdeviceptr other;
        load_context(&ctx[1], 1);
        CHECK(d.mem_alloc(&other, max));
        for (long i = 0; i < n; i++)
            CHECK(d.htod(other, host, 64 * 1024));
        for (long i = 0; i < n; i++)
            CHECK(d.dtoh(host, other, 64 * 1024));
        CHECK(d.ctx_set(ctx[0]));
        for (long i = 0; i < n; i++)
            CHECK(d.htod(dev, host, 64 * 1024));
        printf("made %ld\n", n);
    } else {
        fprintf(stderr, "symprog: unknown mode %s\n", mode);
        return 2;
    }
    free(host);
    return 0;
}
