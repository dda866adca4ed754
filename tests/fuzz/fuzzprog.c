/* fuzzprog.c: the differential fuzzer's driver loop. From a seed, a weighted random mix of the
 * operations in ops[] (host memory, copies, synchronization); every driver call's return code and
 * a hash of every host byte read back go to stdout, one line each, numbered by operation; the last
 * line is "fuzz: seed S ops N nonzero K digest D". See fuzz.h for the rules that keep it correct.
 *   fuzzprog [--ops N] [--budget-mb M] [--devices N] [--probes LIST] [--isolate] SEED
 * --probes LIST adds questions whose answers can see the shim's registrations: attr
 * (cuPointerGetAttribute), flags (cuMemHostGetFlags), unregister (cuMemHostUnregister of memory the
 * program never registered), or all. Off by default, see README.
 * --isolate pads every heap block with a page on each side (no two allocations' bytes share a
 * page), to look past issue #10's neighbour bug.
 * FUZZ_DEBUG=1 prints host buffers' addresses on stderr (never on stdout: they differ run to run). */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdarg.h>

#include "fuzz.h"

struct fuzz F;
static long nonzero; /* driver calls that did not return CUDA_SUCCESS */

uint64_t rnd64(void)
{
    /* splitmix64: a full-period sequence from any seed */
    uint64_t z = (F.rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

size_t rnd(size_t n)
{
    return n ? (size_t)(rnd64() % n) : 0;
}

size_t rnd_range(size_t lo, size_t hi)
{
    return hi <= lo ? lo : lo + rnd(hi - lo + 1);
}

int chance(int percent)
{
    return (int)rnd(100) < percent;
}

void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%ld ", F.op);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

CUresult said(CUresult r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%ld ", F.op);
    vprintf(fmt, ap);
    printf(" -> %d\n", (int)r);
    va_end(ap);
    nonzero += r != CUDA_SUCCESS;
    return r;
}

/* Deterministic bytes, 8 at a time (64 MiB buffers are filled often). */
void fz_fill(void *p, size_t n, uint64_t seed)
{
    unsigned char *b = p;
    uint64_t x = seed | 1;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(b + i, &x, 8);
    }
    for (; i < n; i++)
        b[i] = (unsigned char)(x >> (8 * (i & 7)));
}

/* A content hash independent of the address and its alignment. */
uint64_t fz_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

void read_back(const char *what, int id, const unsigned char *p, size_t off, size_t n)
{
    uint64_t h = fz_hash(p + off, n);
    F.digest = (F.digest ^ h) * 1099511628211ull;
    say("read %s%d [%zu,+%zu] %016llx", what, id, off, n, (unsigned long long)h);
}

/* The operation table: name, weight before the seed varies it, what it does. */
static struct op_row {
    const char *name;
    int weight;
    void (*fn)(void);
} ops[] = {
    {"alloc", 10, op_alloc},          {"free", 6, op_free},
    {"realloc", 3, op_realloc},       {"munmap_part", 2, op_munmap_part},
    {"mremap", 2, op_mremap},         {"madvise", 2, op_madvise},
    {"fill", 4, op_fill},             {"check", 4, op_check},
    {"register", 2, op_register},     {"unregister", 2, op_unregister},
    {"probe", 0, op_probe},           {"htod", 14, op_htod},
    {"dtoh", 12, op_dtoh},            {"unified", 6, op_unified},
    {"2d", 6, op_2d},                 {"3d", 3, op_3d},
    {"batch", 3, op_batch},           {"dtod", 4, op_dtod},
    {"peer", 1, op_peer},             {"stream_sync", 4, op_stream_sync},
    {"stream_query", 2, op_stream_query}, {"ctx_sync", 2, op_ctx_sync},
    {"event", 3, op_event},           {"stream_recreate", 1, op_stream_recreate},
    {"dev_realloc", 1, op_dev_realloc},
};
#define NOPS (sizeof ops / sizeof *ops)

/* Each seed weighs the rows differently (some rows off), so seeds differ in kind, not only order.
 * Host->device and device->host copies never go below their base weight. */
static int vary_weights(void)
{
    int total = 0;
    for (size_t i = 0; i < NOPS; i++) {
        if (!strcmp(ops[i].name, "probe") && F.probes)
            ops[i].weight = 3;
        int core = !strcmp(ops[i].name, "htod") || !strcmp(ops[i].name, "dtoh");
        ops[i].weight *= (int)rnd_range(core ? 1 : 0, 3);
        total += ops[i].weight;
    }
    return total;
}

/* "all" or a comma list of attr, flags, unregister */
static int parse_probes(const char *list)
{
    static const char *const names[] = {"attr", "flags", "unregister"};
    int mask = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int known = !strcmp(w, "all");
        mask |= known ? PROBE_ALL : 0;
        for (int k = 0; k < 3; k++)
            if (!strcmp(w, names[k]))
                mask |= 1 << k, known = 1;
        if (!known) {
            fprintf(stderr, "fuzzprog: unknown probe '%s' (attr, flags, unregister, all)\n", w);
            exit(2);
        }
    }
    return mask;
}

static void usage(void)
{
    fprintf(stderr, "usage: fuzzprog [--ops N] [--budget-mb M] [--devices N] [--probes LIST] [--isolate] SEED\n");
    exit(2);
}

int main(int argc, char **argv)
{
    long nops = 300, seed = -1;
    int max_dev = FZ_MAX_DEV;
    size_t budget_mb = 256;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ops") && i + 1 < argc)
            nops = atol(argv[++i]);
        else if (!strcmp(argv[i], "--budget-mb") && i + 1 < argc)
            budget_mb = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--devices") && i + 1 < argc)
            max_dev = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--probes") && i + 1 < argc)
            F.probes = parse_probes(argv[++i]);
        else if (!strcmp(argv[i], "--isolate"))
            F.isolate = 1;
        else if (argv[i][0] != '-' && seed < 0)
            seed = atol(argv[i]);
        else
            usage();
    }
    if (seed < 0 || nops < 0 || max_dev < 1 || max_dev > FZ_MAX_DEV || budget_mb < 16)
        usage();
    setvbuf(stdout, NULL, _IOLBF, 0); /* a crash still leaves every line before it */
    F.debug = getenv("FUZZ_DEBUG") != NULL;
    F.rng = (uint64_t)seed * 0xD1B54A32D192ED03ull + 7;
    F.host_budget = budget_mb * FZ_MiB;
    F.ndev = max_dev;
    F.digest = 1469598103934665603ull;
    if (chance(35)) {
        /* large blocks then come from the heap, side by side (as after PyTorch frees its first tensors) */
        int a = mallopt(M_MMAP_THRESHOLD, 256 << 20), b = mallopt(M_TRIM_THRESHOLD, 512 << 20);
        say("mallopt mmap_threshold=256M trim_threshold=512M -> %d %d", a, b);
    }
    int total = vary_weights();
    model_start();
    for (F.op = 1; F.op <= nops; F.op++) {
        int pick = (int)rnd((size_t)total);
        size_t i = 0;
        while (pick >= ops[i].weight)
            pick -= ops[i++].weight;
        ops[i].fn();
    }
    model_finish();
    printf("fuzz: seed %ld ops %ld nonzero %ld digest %016llx\n", seed, nops, nonzero,
           (unsigned long long)F.digest);
    return 0;
}
