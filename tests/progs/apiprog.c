/* apiprog.c: uses include/pinshim.h the way a program that must also run without the shim does:
 * through dlsym(RTLD_DEFAULT). Prints the H2D counters the shim reports after three copies.
 * apiprog bench: the benchmarks' switch instead (pinshim_bench_observe, outside pinshim.h): three
 * copies while forwarding, two while observing; prints what each switch returned and the counts.
 * apiprog bench registered: the same after copying a 4 MiB buffer often enough for the registration
 * cache to register it (the switch must then refuse to forward). */
#include "pinshim.h"
#include "testutil.h"

#include <stdbool.h>

typedef int (*bench_observe_fn)(int);

int main(int argc, char **argv)
{
    bool bench = argc > 1 && strcmp(argv[1], "bench") == 0;
    pinshim_stats_get_fn get = (pinshim_stats_get_fn)dlsym(RTLD_DEFAULT, "pinshim_stats_get");
    pinshim_version_fn version = (pinshim_version_fn)dlsym(RTLD_DEFAULT, "pinshim_version");
    if (!get || !version) {
        printf("pinshim absent\n");
        return 0;
    }
    struct test_driver d;
    test_driver_start(&d, "getproc");
    CUdeviceptr buf;
    char host[1000];
    CHECK(d.mem_alloc(&buf, sizeof host));
    if (bench) {
        bench_observe_fn observe = (bench_observe_fn)dlsym(RTLD_DEFAULT, "pinshim_bench_observe");
        if (!observe)
            return 1;
        if (argc > 2 && strcmp(argv[2], "registered") == 0) {
            size_t big = 4u << 20;
            char *reused = malloc(big);
            CUdeviceptr dbig;
            if (!reused)
                return 1;
            memset(reused, 1, big);
            CHECK(d.mem_alloc(&dbig, big));
            for (int i = 0; i < 4; i++)
                CHECK(d.htod(dbig, reused, big));
            CHECK(d.mem_free(dbig));
        }
        printf("observe(0) -> %d\n", observe(0));
        for (int i = 0; i < 3; i++)
            CHECK(d.htod(buf, host, sizeof host));
        printf("observe(1) -> %d\n", observe(1));
        for (int i = 0; i < 2; i++)
            CHECK(d.htod(buf, host, sizeof host));
    } else {
        for (int i = 0; i < 3; i++)
            CHECK(d.htod(buf, host, sizeof host));
    }
    struct pinshim_stats small = {.struct_size = 4};
    struct pinshim_stats s = {.struct_size = sizeof s};
    printf("version %s\n", version());
    printf("too-small struct -> %d\n", get(&small));
    printf("get -> %d\n", get(&s));
    printf("h2d count %llu bytes %llu\n", (unsigned long long)s.dir[PINSHIM_DIR_H2D].count,
           (unsigned long long)s.dir[PINSHIM_DIR_H2D].bytes);
    return 0;
}
