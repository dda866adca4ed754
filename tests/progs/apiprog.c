/* apiprog.c: uses include/pinshim.h the way a program that must also run without the shim does:
 * through dlsym(RTLD_DEFAULT). Prints the H2D counters the shim reports after three copies.
 * apiprog bench: the benchmarks' switch instead (pinshim_bench_observe, outside pinshim.h): three
 * copies while forwarding, two while observing; prints what each switch returned and the counts.
 * apiprog bench registered: the same after copying a 4 MiB buffer often enough for the registration
 * cache to register it (the switch must then refuse to forward).
 * apiprog bench untracked: a 4 MiB buffer allocated while forwarding, then copied as often while
 * observing: the switch paused tracking, so the cache never registers it.
 * apiprog direct: the driver's functions kept in the program's own data, as the CUDA runtime keeps
 * its table (wrappers handed out by cuGetProcAddress): three copies through them, two after
 * pinshim_bench_direct(1) (the words rewritten to the driver's functions: the shim sees nothing),
 * one after pinshim_bench_direct(0); prints what each switch returned, whether the table holds
 * its first pointers again, and the counts. apiprog direct registered: the same after a buffer
 * the registration cache registered (the switch must then refuse). apiprog direct late LIB: the
 * switch on and off once, then on again while LIB (tests/progs/lib/latetable.c) is loaded and
 * handed the htod wrapper to keep in its data, and off; then three copies through LIB's table, two
 * with the switch on, one after it is off; prints what each switch did to either table. */
#include "pinshim.h"
#include "testutil.h"

#include <stdbool.h>

typedef int (*bench_observe_fn)(int);

static struct test_driver kept; /* the program's data, where pinshim_bench_direct looks */

#define BIG (4u << 20)

/* Copies the BIG bytes at `reused` 4 times: more than register_after by default. */
static void copy_reused_buffer(struct test_driver *d, char *reused)
{
    CUdeviceptr dbig;
    if (!reused)
        exit(1);
    memset(reused, 1, BIG);
    CHECK(d->mem_alloc(&dbig, BIG));
    for (int i = 0; i < 4; i++)
        CHECK(d->htod(dbig, reused, BIG));
    CHECK(d->mem_free(dbig));
}

typedef CUresult (*htod_fn)(CUdeviceptr, const void *, size_t);

/* Switches direct calls on or off and prints what the switch did, after `label`. */
static void say_switch(const char *label, bench_observe_fn switch_direct, int on)
{
    printf("%sdirect(%d) -> %s\n", label, on, switch_direct(on) > 0 ? "rewrote" : "nothing");
}

/* apiprog direct late: a table the switch's first look could not see, since its library was loaded
 * after it (and while the switch was on: the program's own table must still come back). */
static int direct_late(bench_observe_fn switch_direct, htod_fn htod, CUdeviceptr buf, const char *host, size_t n,
                       const char *lib_path)
{
    kept.htod = htod;
    say_switch("first ", switch_direct, 1);
    say_switch("first ", switch_direct, 0);
    say_switch("second ", switch_direct, 1);
    void *lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
    void (*keep)(htod_fn) = lib ? (void (*)(htod_fn))dlsym(lib, "latetable_keep") : NULL;
    int (*holds)(htod_fn) = lib ? (int (*)(htod_fn))dlsym(lib, "latetable_holds") : NULL;
    htod_fn late_htod = lib ? (htod_fn)dlsym(lib, "latetable_htod") : NULL;
    if (!keep || !holds || !late_htod) {
        fprintf(stderr, "cannot load %s: %s\n", lib_path, dlerror());
        return 1;
    }
    keep(htod);
    say_switch("second ", switch_direct, 0);
    printf("program's table %s\n", kept.htod == htod ? "restored" : "changed");
    for (int i = 0; i < 3; i++)
        CHECK(late_htod(buf, host, n));
    say_switch("", switch_direct, 1);
    printf("late table holds %s\n", holds(htod) ? "the wrapper" : "another function");
    for (int i = 0; i < 2; i++)
        CHECK(late_htod(buf, host, n));
    say_switch("", switch_direct, 0);
    printf("late table %s\n", holds(htod) ? "restored" : "changed");
    CHECK(late_htod(buf, host, n));
    return 0;
}

int main(int argc, char **argv)
{
    bool bench = argc > 1 && strcmp(argv[1], "bench") == 0;
    bool direct = argc > 1 && strcmp(argv[1], "direct") == 0;
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
    if (direct) {
        bench_observe_fn switch_direct = (bench_observe_fn)dlsym(RTLD_DEFAULT, "pinshim_bench_direct");
        if (!switch_direct)
            return 1;
        if (argc > 2 && strcmp(argv[2], "registered") == 0)
            copy_reused_buffer(&d, malloc(BIG)); /* the cache registers it: direct must refuse */
        if (argc > 3 && strcmp(argv[2], "late") == 0) {
            if (direct_late(switch_direct, d.htod, buf, host, sizeof host, argv[3]))
                return 1;
        } else {
            kept = d;
            struct test_driver first = kept;
            for (int i = 0; i < 3; i++)
                CHECK(kept.htod(buf, host, sizeof host));
            say_switch("", switch_direct, 1);
            printf("htod is %s\n", kept.htod == first.htod ? "the wrapper" : "another function");
            for (int i = 0; i < 2; i++)
                CHECK(kept.htod(buf, host, sizeof host));
            say_switch("", switch_direct, 0);
            printf("table %s\n", memcmp(&kept, &first, sizeof kept) == 0 ? "restored" : "changed");
            CHECK(kept.htod(buf, host, sizeof host));
        }
    } else if (bench) {
        bench_observe_fn observe = (bench_observe_fn)dlsym(RTLD_DEFAULT, "pinshim_bench_observe");
        if (!observe)
            return 1;
        bool registered = argc > 2 && strcmp(argv[2], "registered") == 0;
        bool untracked = argc > 2 && strcmp(argv[2], "untracked") == 0;
        if (registered)
            copy_reused_buffer(&d, malloc(BIG));
        printf("observe(0) -> %d\n", observe(0));
        char *made_forwarding = untracked ? malloc(BIG) : NULL;
        for (int i = 0; i < 3; i++)
            CHECK(d.htod(buf, host, sizeof host));
        printf("observe(1) -> %d\n", observe(1));
        for (int i = 0; i < 2; i++)
            CHECK(d.htod(buf, host, sizeof host));
        if (untracked)
            copy_reused_buffer(&d, made_forwarding);
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
