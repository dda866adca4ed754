/* bench_direct.c: for benchmarks only, not part of include/pinshim.h: pinshim_bench_direct() takes
 * the shim's wrappers out of the calls of a program that stored them, and puts them back, so that
 * one process can time its calls with the whole shim in them and with none (the in-process
 * benchmark's third side: tests/bench/inprocess_ab.py --direct). A library such as the CUDA runtime
 * asks for each driver function once (cuGetProcAddress, dlsym: routes 2 and 3 hand it a wrapper)
 * and keeps the pointer in a table of its own data. The first switch looks for those pointers: every
 * aligned word that holds a wrapper's address in the writable data of a loaded shared object or of
 * the program itself (its file's private writable mapping and the anonymous one right after it:
 * .data and .bss), this library's own excepted; then each switch rewrites the words found, the
 * wrapper to its row's real function (on) or back (off), each only if it still holds what the
 * switch expects. A switch on, with no word switched, looks again when objects were loaded since
 * the last look (dl_iterate_phdr's count of loads): a framework imported after the first switch
 * (JAX after PyTorch, in the benchmark) keeps its table in an object the first look never saw.
 * Tables kept on the heap or in read-only memory (RELRO) are not found, and their
 * calls keep going through the wrappers: the benchmark reads the shim's call counts to see how
 * many did.
 * Contract: call from one thread at a time, while no other thread maps or unmaps memory (a switch
 * that looks reads the mappings it finds); another thread's call through a rewritten word sees one
 * function or the other (an aligned 8-byte store is seen whole); returns the number of words it
 * rewrote this time, or -1 where direct calls would change what the program sees (the
 * guard on, registrations held: as pinshim_bench_observe) or no such word was found. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/common.h"
#include "base/driver.h"
#include "guard/guard.h"
#include "hostmem/regcache.h"
#include "policy.h"
#include "wrappers.h"

#define FOUND_MAX 512
#define BSS_SCAN_MAX (64u << 20) /* an anonymous mapping after an object's data: scanned up to this */

static struct {
    void **word;
    enum driver_entry_id id;
} found[FOUND_MAX];
static int found_count = -1; /* not looked for yet */
static unsigned long long looked_at_loads; /* the count of objects loaded when they were looked for */
static bool switched_on;                   /* the words found hold the driver's functions */

static int count_loads(struct dl_phdr_info *info, size_t size, void *loads)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs)) /* a loader that keeps the count */
        *(unsigned long long *)loads = info->dlpi_adds;
    return 1; /* the count is the same in every object's info: the first is enough */
}

/* How many objects the process has loaded so far (dlopen included); 0 when the loader does not
 * say (then the words are looked for once). */
static unsigned long long loads_so_far(void)
{
    unsigned long long loads = 0;
    dl_iterate_phdr(count_loads, &loads);
    return loads;
}

/* The row whose wrapper is at fn, when the driver's function is known (wrappers lie in [lo, hi]:
 * most words are rejected by the range alone), or -1. */
static int wrapper_row(uintptr_t fn, uintptr_t lo, uintptr_t hi)
{
    if (fn < lo || fn > hi)
        return -1;
    int id = driver_wrapper_row((const void *)fn);
    return id >= 0 && driver_real((enum driver_entry_id)id) ? id : -1;
}

static void scan(uintptr_t start, uintptr_t end, uintptr_t lo, uintptr_t hi)
{
    for (void **w = (void **)start; (uintptr_t)(w + 1) <= end && found_count < FOUND_MAX; w++) {
        int id = wrapper_row((uintptr_t)*w, lo, hi);
        if (id >= 0) {
            found[found_count].word = w;
            found[found_count].id = (enum driver_entry_id)id;
            found_count++;
        }
    }
}

/* Reads /proc/self/maps and scans the writable data of every other loaded object. */
static void find_words(void)
{
    found_count = 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int id = 0; id < ENTRY_COUNT; id++) {
        uintptr_t w = (uintptr_t)driver_wrapper((enum driver_entry_id)id);
        lo = w < lo ? w : lo;
        hi = w > hi ? w : hi;
    }
    Dl_info self;
    if (!dladdr((void *)find_words, &self) || !self.dli_fname)
        return;
    char exe[4096] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    FILE *maps = fopen("/proc/self/maps", "re");
    if (!maps)
        return;
    char line[4096], prev_path[4096] = "";
    uintptr_t prev_end = 0;
    while (fgets(line, sizeof line, maps)) {
        unsigned long start, end;
        char perms[8], path[4096] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %4095[^\n]", &start, &end, perms, path) < 3)
            continue;
        const char *name = path + strspn(path, " ");
        bool writable_private = perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p';
        bool object = name[0] == '/' && (strstr(name, ".so") || strcmp(name, exe) == 0) &&
                      strcmp(name, self.dli_fname) != 0;
        bool bss = !name[0] && prev_path[0] && start == prev_end && end - start <= BSS_SCAN_MAX;
        if (writable_private && (object || bss))
            scan(start, end, lo, hi);
        if (name[0])
            snprintf(prev_path, sizeof prev_path, "%s", object ? name : "");
        else
            prev_path[0] = '\0';
        prev_end = end;
    }
    fclose(maps);
}

PINSHIM_EXPORT int pinshim_bench_direct(int on);
PINSHIM_EXPORT int pinshim_bench_direct(int on)
{
    if (on && (pinshim_policy.guard != GUARD_OFF || regcache_holds_any()))
        return -1;
    bool look = found_count < 0;
    if (on && !switched_on) { /* every word holds its wrapper: a new look loses none */
        unsigned long long loads = loads_so_far();
        look |= loads != looked_at_loads;
        looked_at_loads = loads;
    }
    if (look)
        find_words();
    if (found_count <= 0)
        return -1;
    switched_on = on;
    int rewritten = 0;
    for (int i = 0; i < found_count; i++) {
        void *wrapper = driver_wrapper(found[i].id), *real = driver_real(found[i].id);
        void *from = on ? wrapper : real, *to = on ? real : wrapper;
        if (__atomic_load_n(found[i].word, __ATOMIC_RELAXED) == from) {
            __atomic_store_n(found[i].word, to, __ATOMIC_RELAXED);
            rewritten++;
        }
    }
    return rewritten;
}
