/* apiprog.c: uses include/pinshim.h the way a program that must also run without the shim does:
 * through dlsym(RTLD_DEFAULT). Prints the H2D counters the shim reports after three copies. */
#include "pinshim.h"
#include "testutil.h"

int main(void)
{
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
    for (int i = 0; i < 3; i++)
        CHECK(d.htod(buf, host, sizeof host));
    struct pinshim_stats small = {.struct_size = 4};
    struct pinshim_stats s = {.struct_size = sizeof s};
    printf("version %s\n", version());
    printf("too-small struct -> %d\n", get(&small));
    printf("get -> %d\n", get(&s));
    printf("h2d count %llu bytes %llu\n", (unsigned long long)s.dir[PINSHIM_DIR_H2D].count,
           (unsigned long long)s.dir[PINSHIM_DIR_H2D].bytes);
    return 0;
}
