/* util.c: the conformance suite's shared pieces: loading the driver, the output format (return
 * codes by number and enum name, digests, relative positions), memory helpers, the stream gate,
 * and the "devices" case that opens every run. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

struct test_driver d, pt;
struct conf_extra ex;
CUcontext ctx0;
size_t PS;
extern const char *conf_case_name;

void conf_start(void)
{
    PS = (size_t)sysconf(_SC_PAGESIZE);
    ctx0 = test_driver_start(&d, "getproc");
    test_driver_load(&pt, "getproc_ptds");
#define X(field, exp, query, version, params) ex.field = (CUresult(*) params)test_driver_extra(&d, exp, query, version);
    CONF_EXTRA_FUNCS(X)
#undef X
}

int conf_devices(void)
{
    int n = 0;
    NEED(d.device_count(&n));
    return n;
}

int need_two_devices(void)
{
    int n = conf_devices();
    if (n >= 2)
        return 1;
    say("devices", "skipped: %d device", n);
    return 0;
}

/* ---- output ------------------------------------------------------------------------------------ */

void say(const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s.%s = ", conf_case_name, key);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    fflush(stdout);
}

static char *ring(void)
{
    static char bufs[16][96];
    static unsigned next;
    return bufs[next++ % 16];
}

/* The enum names, so that the output does not depend on the driver's own cuGetErrorName. */
#define CONF_RESULTS(X)                                                                                \
    X(CUDA_SUCCESS) X(CUDA_ERROR_INVALID_VALUE) X(CUDA_ERROR_OUT_OF_MEMORY) X(CUDA_ERROR_NOT_INITIALIZED)   \
    X(CUDA_ERROR_DEINITIALIZED) X(CUDA_ERROR_NO_DEVICE) X(CUDA_ERROR_INVALID_DEVICE)                    \
    X(CUDA_ERROR_INVALID_CONTEXT) X(CUDA_ERROR_CONTEXT_ALREADY_CURRENT) X(CUDA_ERROR_MAP_FAILED)        \
    X(CUDA_ERROR_ALREADY_MAPPED) X(CUDA_ERROR_NOT_MAPPED) X(CUDA_ERROR_INVALID_HANDLE)                  \
    X(CUDA_ERROR_ILLEGAL_STATE) X(CUDA_ERROR_NOT_FOUND) X(CUDA_ERROR_NOT_READY)                         \
    X(CUDA_ERROR_ILLEGAL_ADDRESS) X(CUDA_ERROR_LAUNCH_FAILED) X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)  \
    X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) X(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE)                          \
    X(CUDA_ERROR_CONTEXT_IS_DESTROYED) X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)                     \
    X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED) X(CUDA_ERROR_NOT_PERMITTED) X(CUDA_ERROR_NOT_SUPPORTED)    \
    X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)                   \
    X(CUDA_ERROR_STREAM_CAPTURE_MERGE) X(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED)                           \
    X(CUDA_ERROR_STREAM_CAPTURE_UNJOINED) X(CUDA_ERROR_STREAM_CAPTURE_ISOLATION)                        \
    X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) X(CUDA_ERROR_CAPTURED_EVENT)                                  \
    X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)                     \
    X(CUDA_ERROR_INVALID_ADDRESS_SPACE) X(CUDA_ERROR_OPERATING_SYSTEM) X(CUDA_ERROR_UNKNOWN)

const char *rc_name(CUresult r)
{
    switch (r) {
#define X(e) case e: return #e;
        CONF_RESULTS(X)
#undef X
    default:
        return "CUDA_ERROR_(unnamed)";
    }
}

const char *rcs(CUresult r)
{
    char *b = ring();
    snprintf(b, 96, "%d %s", (int)r, rc_name(r));
    return b;
}

const char *digest(const void *p, size_t n)
{
    char *b = ring();
    snprintf(b, 96, "%016llx", (unsigned long long)test_hash(p, n));
    return b;
}

const char *rel(uintptr_t v, uintptr_t base, const char *name)
{
    const uintptr_t near = 64u << 20; /* farther away is another mapping: its distance varies */
    char *b = ring();
    if (!v)
        snprintf(b, 96, "null");
    else if (v >= base && v - base <= near)
        snprintf(b, 96, "%s+%llu", name, (unsigned long long)(v - base));
    else if (v < base && base - v <= near)
        snprintf(b, 96, "%s-%llu", name, (unsigned long long)(base - v));
    else
        snprintf(b, 96, "elsewhere");
    return b;
}

void say_dev(const char *key, CUresult r, CUdeviceptr dev, size_t n)
{
    say(key, "%s; device %s", rcs(r), dev_digest(dev, n));
}

void say_async(const char *key, CUresult r, CUstream s)
{
    CUresult rs = d.stream_sync(s);
    say(key, "%s; sync %s", rcs(r), rcs(rs));
}

void need(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return;
    say("setup", "failed: %s: %s", what, rcs(r));
    exit(1);
}

/* ---- memory ------------------------------------------------------------------------------------ */

void *page_alloc(size_t bytes)
{
    void *p = aligned_alloc(PS, (bytes + PS - 1) / PS * PS);
    if (!p) {
        say("setup", "failed: out of host memory");
        exit(1);
    }
    return p;
}

void dev_fill(CUdeviceptr dev, size_t n, uint32_t seed)
{
    unsigned char *tmp = malloc(n);
    test_fill(tmp, n, seed);
    NEED(d.htod(dev, tmp, n));
    free(tmp);
}

const char *dev_digest(CUdeviceptr dev, size_t n)
{
    unsigned char *tmp = malloc(n);
    memset(tmp, 0, n);
    CUresult r = d.dtoh(tmp, dev, n);
    const char *s = r == CUDA_SUCCESS ? digest(tmp, n) : rcs(r);
    free(tmp);
    return s;
}

/* ---- the gate ---------------------------------------------------------------------------------- */

void gate_init(struct gate *g)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
}

static void CUDA_CB gate_wait(void *arg)
{
    struct gate *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

CUresult gate_enqueue(struct test_driver *drv, struct gate *g, CUstream s)
{
    return drv->launch_host_func(s, gate_wait, g);
}

void gate_open(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

int gate_is_open(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    int o = g->open;
    pthread_mutex_unlock(&g->mu);
    return o;
}

/* Opens the gate after g->ms, or returns as soon as someone else opened it (gate_finish). */
static void *gate_timer(void *arg)
{
    struct gate *g = arg;
    struct timespec at;
    clock_gettime(CLOCK_REALTIME, &at); /* the condition variable's clock */
    at.tv_sec += (time_t)(g->ms / 1000);
    at.tv_nsec += (long)(g->ms % 1000) * 1000000L;
    if (at.tv_nsec >= 1000000000L)
        at.tv_sec++, at.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&g->mu);
    while (!g->open && pthread_cond_timedwait(&g->cv, &g->mu, &at) != ETIMEDOUT)
        ;
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

void gate_open_later(struct gate *g, unsigned ms)
{
    g->ms = ms;
    g->has_timer = pthread_create(&g->timer, NULL, gate_timer, g) == 0;
    if (!g->has_timer)
        gate_open(g);
}

void gate_finish(struct gate *g)
{
    gate_open(g);
    if (g->has_timer)
        pthread_join(g->timer, NULL);
    g->has_timer = 0;
}

/* ---- the first case: what runs, and how many devices ------------------------------------------ */

void case_devices(void)
{
    int version = 0;
    char name[128] = "?";
    if (ex.driver_version)
        ex.driver_version(&version);
    if (ex.device_name)
        ex.device_name(name, (int)sizeof name, 0);
    printf("# driver version %d, device 0: %s, cuda.h %d\n", version, name, CUDA_VERSION);
    printf("devices: %d\n", conf_devices());
}
