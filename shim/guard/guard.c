/* guard.c: the guard's ranges (see guard.h): the completion markers, protecting and releasing
 * pages, the sync points that release them, the race reports and the counters.
 * The table is a fixed array of slots whose state word is the only synchronization the signal
 * handler relies on: FREE -> SETUP (a guarding thread owns it) -> ACTIVE (pages protected) ->
 * BUSY (one thread releases or reports it) -> FREE. A slot's completion flag word lives in a
 * mapped pinned page; the marker enqueued behind the copy writes the slot's marker value there. */
#define _GNU_SOURCE
#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/common.h"
#include "base/driver.h"
#include "base/real.h"
#include "hostmem/memkind.h"
#include "observe/callsite.h"
#include "observe/jbuf.h"
#include "policy.h"

#define GUARD_REPORTS_PER_SITE 3    /* full reports per call site; later races there are counted */
#define GUARD_SITES 64              /* call sites whose reports are counted separately */
#define GUARD_RECENT 64             /* released ranges remembered for faults that raced the release */
#define GUARD_EVENTS 1024           /* recorded events remembered (open addressing, power of 2) */
#define GUARD_PROT_CACHE 32         /* memory mappings whose protection is known */
#define GUARD_REPAIR_WAIT_NS 30000000000ull /* repair gives up waiting for a copy after 30 s */
#define GUARD_BUSY_WAIT_NS 30000000000ull   /* a fault waits this long for another thread's release */
#define GUARD_STACK_MAX 32

enum { SLOT_FREE, SLOT_SETUP, SLOT_ACTIVE, SLOT_BUSY };

struct guard_slot {
    int state;
    uint32_t marker;         /* the flag word reads this once the copy (and the marker) are done */
    uintptr_t lo, hi;        /* the protected pages */
    uintptr_t dst;           /* the copy's destination */
    size_t bytes;
    int prot;                /* the pages' protection before guarding */
    uint64_t order;          /* guard order: an event covers the slots ordered before its record */
    uint64_t copy_no;        /* the guarded copy's number in this process (from 1) */
    CUstream stream;
    int32_t tid;             /* the guarding thread: CU_STREAM_PER_THREAD is per thread */
    bool blocking;           /* the stream synchronizes with the legacy default stream */
    CUcontext ctx;
    enum driver_entry_id entry;
    const struct callsite *site;
};

int guard_live;

static struct guard_slot slots[GUARD_SLOTS];
static volatile uint32_t *flag_words;  /* GUARD_SLOTS words in a mapped pinned page */
static CUdeviceptr flag_words_dev;
static uint32_t flag_words_fallback[GUARD_SLOTS]; /* host functions only (no pinned page) */
static uint32_t marker_counter;
static uint64_t order_counter, copy_counter;
static bool forked_child;
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int32_t tls_tid __attribute__((tls_model("initial-exec")));
static __thread uintptr_t tls_stale_addr __attribute__((tls_model("initial-exec")));

/* Released ranges: a fault that raced a release on another thread finds its range here. */
static struct { uintptr_t lo, hi; } recent[GUARD_RECENT];
static unsigned recent_next;

/* Counters (relaxed atomics; the handler updates them too). */
static struct {
    uint64_t guarded, guarded_bytes, protected_bytes, races, reads, writes, io_races, reports, rate_limited,
        completed_before_access, repaired, repair_timeouts, released_sync, released_free, released_race,
        table_full, too_small, not_tracked, capture, marker_hostfn, marker_failed, protect_failed, mixed_prot;
} n;

static void count(uint64_t *c, uint64_t v) { __atomic_fetch_add(c, v, __ATOMIC_RELAXED); }
static uint64_t get(const uint64_t *c) { return __atomic_load_n(c, __ATOMIC_RELAXED); }

static size_t page_size(void)
{
    static size_t ps;
    if (!ps)
        ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

static int32_t current_tid(void)
{
    if (!tls_tid)
        tls_tid = (int32_t)syscall(SYS_gettid);
    return tls_tid;
}

void guard_init(void)
{
    if (pinshim_policy.guard == GUARD_OFF || !pinshim_policy.intercept)
        return;
    callsite_init(); /* the copy's call site, without allocating in the copy path */
    guard_signal_init();
}

/* --- the driver functions the guard calls --- */

typedef CUresult (*fn_host_alloc)(void **, size_t, unsigned int);
typedef CUresult (*fn_host_dev_ptr)(CUdeviceptr *, void *, unsigned int);
typedef CUresult (*fn_write_value)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*fn_launch_host)(CUstream, CUhostFn, void *);
typedef CUresult (*fn_stream_flags)(CUstream, unsigned int *);
typedef CUresult (*fn_ctx_current)(CUcontext *);

static struct {
    bool ready;
    fn_write_value write_value;
    fn_launch_host launch_host;
    fn_stream_flags stream_flags;
    fn_ctx_current ctx_current;
    bool write_value_failed; /* once it fails, host functions only */
} drv;

/* Once, under setup_lock: the driver functions, the flag page and the signal handler. */
static bool setup_once(void)
{
    static bool tried, ok;
    if (tried)
        return ok;
    tried = true;
    drv.write_value = (fn_write_value)real_driver_symbol("cuStreamWriteValue32_v2");
    if (!drv.write_value)
        drv.write_value = (fn_write_value)real_driver_symbol("cuStreamWriteValue32");
    drv.launch_host = (fn_launch_host)real_driver_symbol("cuLaunchHostFunc");
    drv.stream_flags = (fn_stream_flags)real_driver_symbol("cuStreamGetFlags");
    drv.ctx_current = (fn_ctx_current)real_driver_symbol("cuCtxGetCurrent");
    fn_host_alloc host_alloc = (fn_host_alloc)driver_real(ENTRY_host_alloc);
    fn_host_dev_ptr dev_ptr = (fn_host_dev_ptr)real_driver_symbol("cuMemHostGetDevicePointer_v2");
    void *page = NULL;
    pinshim_enter();
    if (host_alloc && dev_ptr &&
        host_alloc(&page, GUARD_SLOTS * sizeof(uint32_t), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) ==
            CUDA_SUCCESS) {
        memset(page, 0, GUARD_SLOTS * sizeof(uint32_t));
        if (dev_ptr(&flag_words_dev, page, 0) == CUDA_SUCCESS)
            flag_words = page;
    }
    pinshim_leave();
    if (!flag_words) {
        flag_words = flag_words_fallback;
        drv.write_value_failed = true;
        pinshim_warn("guard: no mapped pinned flag page (cuMemHostAlloc or cuMemHostGetDevicePointer failed); "
                     "completion markers are host functions");
    }
    ok = (drv.write_value || drv.launch_host) && guard_signal_install(guard_fault);
    if (!ok)
        pinshim_warn("guard: cannot install the guard (no completion marker or no SIGSEGV handler); copies "
                     "are not guarded");
    guard_modules_refresh();
    drv.ready = true;
    return ok;
}

static void CUDA_CB marker_host_fn(void *arg)
{
    uint64_t v = (uint64_t)(uintptr_t)arg;
    __atomic_store_n(&flag_words[v >> 32], (uint32_t)v, __ATOMIC_RELEASE);
}

/* Enqueues "flag word of slot i := marker" behind the copy on its stream. */
static bool enqueue_marker(unsigned i, uint32_t marker, CUstream stream)
{
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    pinshim_enter();
    if (drv.write_value && !__atomic_load_n(&drv.write_value_failed, __ATOMIC_RELAXED)) {
        r = drv.write_value(stream, flag_words_dev + i * sizeof(uint32_t), marker, 0);
        if (r != CUDA_SUCCESS)
            __atomic_store_n(&drv.write_value_failed, true, __ATOMIC_RELAXED);
    }
    if (r != CUDA_SUCCESS && drv.launch_host) {
        r = drv.launch_host(stream, marker_host_fn, (void *)(uintptr_t)(((uint64_t)i << 32) | marker));
        if (r == CUDA_SUCCESS)
            count(&n.marker_hostfn, 1);
    }
    pinshim_leave();
    return r == CUDA_SUCCESS;
}

static bool copy_done(const struct guard_slot *s, unsigned i)
{
    return __atomic_load_n(&flag_words[i], __ATOMIC_ACQUIRE) == s->marker;
}

/* --- original protection: /proc/self/maps, cached per mapping --- */

struct prot_span {
    uintptr_t lo, hi;
    int prot;
};
static struct prot_span prot_cache[GUARD_PROT_CACHE];
static unsigned prot_cache_next;

static uintptr_t parse_hex(const char **p)
{
    uintptr_t v = 0;
    for (;; (*p)++) {
        char ch = **p;
        if (ch >= '0' && ch <= '9')
            v = v * 16 + (uintptr_t)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            v = v * 16 + (uintptr_t)(ch - 'a' + 10);
        else
            return v;
    }
}

/* The protection of [lo, hi) from /proc/self/maps: -1 when it is not mapped or mixed. */
static int maps_prot(uintptr_t lo, uintptr_t hi)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[8192];
    size_t have = 0;
    int prot = -1;
    uintptr_t covered = lo;
    bool done = false;
    while (!done) {
        ssize_t got = read(fd, buf + have, sizeof buf - 1 - have);
        if (got <= 0)
            break;
        have += (size_t)got;
        buf[have] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            const char *p = line;
            uintptr_t a = parse_hex(&p);
            p++;
            uintptr_t b = parse_hex(&p);
            p++;
            int pr = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) | (p[2] == 'x' ? PROT_EXEC : 0);
            line = nl + 1;
            if (b <= covered || a >= hi)
                continue;
            if (a > covered || (prot >= 0 && pr != prot)) { /* a hole or a different protection */
                prot = -1;
                done = true;
                break;
            }
            prot = pr;
            prot_cache[prot_cache_next++ % GUARD_PROT_CACHE] = (struct prot_span){a, b, pr};
            covered = b;
            if (covered >= hi) {
                done = true;
                break;
            }
        }
        have = (size_t)(buf + have - line);
        memmove(buf, line, have);
        if (have == sizeof buf - 1) /* a line longer than the buffer: give up */
            break;
    }
    close(fd);
    return covered >= hi ? prot : -1;
}

/* Caller holds setup_lock. Pages another slot protects have that slot's original protection. */
static int original_prot(uintptr_t lo, uintptr_t hi)
{
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        int st = __atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE);
        if ((st == SLOT_ACTIVE || st == SLOT_BUSY) && slots[i].lo < hi && lo < slots[i].hi)
            return slots[i].prot;
    }
    for (unsigned i = 0; i < GUARD_PROT_CACHE; i++)
        if (prot_cache[i].lo <= lo && hi <= prot_cache[i].hi)
            return prot_cache[i].prot;
    return maps_prot(lo, hi);
}

/* --- guarding --- */

static bool is_guarded_entry(enum driver_entry_id e)
{
    return e == ENTRY_dtoh_async || e == ENTRY_dtoh_async_ptsz || e == ENTRY_memcpy_async ||
           e == ENTRY_memcpy_async_ptsz;
}

/* A free slot whose previous marker has landed (a late marker must not overwrite a newer one). */
static int claim_slot(void)
{
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        struct guard_slot *s = &slots[i];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_FREE || (s->marker && !copy_done(s, i)))
            continue;
        int expected = SLOT_FREE;
        if (__atomic_compare_exchange_n(&s->state, &expected, SLOT_SETUP, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            return (int)i;
    }
    return -1;
}

static void stream_facts(struct guard_slot *s, CUstream stream)
{
    s->stream = stream;
    s->tid = current_tid();
    s->blocking = true;
    s->ctx = NULL;
    pinshim_enter();
    if (drv.ctx_current)
        drv.ctx_current(&s->ctx);
    unsigned flags = 0;
    if (stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD && drv.stream_flags &&
        drv.stream_flags(stream, &flags) == CUDA_SUCCESS)
        s->blocking = !(flags & CU_STREAM_NON_BLOCKING);
    pinshim_leave();
}

static void guard_copy(const struct copy *c)
{
    uintptr_t ps = page_size(), alloc_lo, alloc_hi;
    uintptr_t lo = (c->dst + ps - 1) & ~(ps - 1), hi = (c->dst + c->bytes) & ~(ps - 1);
    if (lo >= hi) {
        count(&n.too_small, 1);
        return;
    }
    if (pinshim_policy.guard_pages == GUARD_PAGES_FIRST)
        hi = lo + ps;
    /* Only memory whose free and unregister the shim sees: its pages are unprotected before then. */
    if (!memkind_range_of(c->dst, &alloc_lo, &alloc_hi) || c->dst + c->bytes > alloc_hi) {
        count(&n.not_tracked, 1);
        return;
    }
    pthread_mutex_lock(&setup_lock);
    if (!setup_once()) {
        pthread_mutex_unlock(&setup_lock);
        return;
    }
    guard_modules_refresh(); /* names the frames of later reports; cheap when nothing was loaded */
    if (real_stream_capturing(c->stream)) {
        pthread_mutex_unlock(&setup_lock);
        count(&n.capture, 1);
        return;
    }
    int i = claim_slot();
    if (i < 0) {
        pthread_mutex_unlock(&setup_lock);
        count(&n.table_full, 1);
        return;
    }
    struct guard_slot *s = &slots[i];
    int prot = original_prot(lo, hi);
    if (prot < 0) {
        __atomic_store_n(&s->state, SLOT_FREE, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&setup_lock);
        count(&n.mixed_prot, 1);
        return;
    }
    uint32_t marker;
    do
        marker = __atomic_add_fetch(&marker_counter, 1, __ATOMIC_RELAXED);
    while (marker == 0);
    if (!enqueue_marker((unsigned)i, marker, c->stream)) {
        __atomic_store_n(&s->state, SLOT_FREE, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&setup_lock);
        count(&n.marker_failed, 1);
        return;
    }
    s->marker = marker;
    s->lo = lo;
    s->hi = hi;
    s->dst = c->dst;
    s->bytes = c->bytes;
    s->prot = prot;
    s->order = __atomic_add_fetch(&order_counter, 1, __ATOMIC_RELAXED);
    s->copy_no = __atomic_add_fetch(&copy_counter, 1, __ATOMIC_RELAXED);
    s->entry = c->entry;
    s->site = callsite_capture();
    stream_facts(s, c->stream);
    /* ACTIVE before the pages are protected: a fault on them is then always recognized. */
    __atomic_add_fetch(&guard_live, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&s->state, SLOT_ACTIVE, __ATOMIC_RELEASE);
    if (mprotect((void *)lo, hi - lo, PROT_NONE) != 0) {
        int expected = SLOT_ACTIVE;
        if (__atomic_compare_exchange_n(&s->state, &expected, SLOT_FREE, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            __atomic_sub_fetch(&guard_live, 1, __ATOMIC_ACQ_REL);
        pthread_mutex_unlock(&setup_lock);
        count(&n.protect_failed, 1);
        return;
    }
    pthread_mutex_unlock(&setup_lock);
    count(&n.guarded, 1);
    count(&n.guarded_bytes, c->bytes);
    count(&n.protected_bytes, hi - lo);
}

/* --- releasing --- */

/* The caller owns the slot (BUSY): restore the pages, remember them, free the slot. Signal-safe. */
static void unprotect_and_free(struct guard_slot *s)
{
    unsigned r = __atomic_fetch_add(&recent_next, 1, __ATOMIC_RELAXED) % GUARD_RECENT;
    __atomic_store_n(&recent[r].lo, s->lo, __ATOMIC_RELAXED);
    __atomic_store_n(&recent[r].hi, s->hi, __ATOMIC_RELAXED);
    mprotect((void *)s->lo, s->hi - s->lo, s->prot);
    __atomic_sub_fetch(&guard_live, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&s->state, SLOT_FREE, __ATOMIC_RELEASE);
}

static bool take(struct guard_slot *s)
{
    int expected = SLOT_ACTIVE;
    return __atomic_compare_exchange_n(&s->state, &expected, SLOT_BUSY, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* Does a completed host synchronization of `stream` (seen from thread tid, context ctx) cover s?
 * The legacy default stream's work orders after all earlier work of the context's blocking
 * streams, so its synchronization covers their copies too (the shim errs towards releasing: a
 * missed race is better than a false report). */
static bool covers(const struct guard_slot *s, CUstream stream, int32_t tid, CUcontext ctx)
{
    if (s->stream == stream)
        return stream != CU_STREAM_PER_THREAD || s->tid == tid;
    return stream == CU_STREAM_LEGACY && s->blocking && (!ctx || !s->ctx || s->ctx == ctx);
}

static CUcontext current_ctx(void)
{
    CUcontext ctx = NULL;
    if (drv.ready && drv.ctx_current) {
        pinshim_enter();
        drv.ctx_current(&ctx);
        pinshim_leave();
    }
    return ctx;
}

static void release_covered(CUstream stream, uint64_t order_max, int32_t tid, CUcontext ctx)
{
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        struct guard_slot *s = &slots[i];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_ACTIVE || s->order > order_max ||
            !covers(s, stream, tid, ctx) || !take(s))
            continue;
        if (s->order > order_max || !covers(s, stream, tid, ctx)) { /* reused meanwhile */
            __atomic_store_n(&s->state, SLOT_ACTIVE, __ATOMIC_RELEASE);
            continue;
        }
        unprotect_and_free(s);
        count(&n.released_sync, 1);
    }
}

static bool any_live(void) { return __atomic_load_n(&guard_live, __ATOMIC_ACQUIRE) > 0; }

void guard_on_stream_done(enum driver_entry_id id, CUstream stream)
{
    if (!any_live())
        return;
    stream = driver_stream(id, stream);
    release_covered(stream, UINT64_MAX, current_tid(), stream == CU_STREAM_LEGACY ? current_ctx() : NULL);
}

void guard_on_ctx_done(void)
{
    if (!any_live())
        return;
    CUcontext ctx = current_ctx();
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        struct guard_slot *s = &slots[i];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_ACTIVE || (ctx && s->ctx && s->ctx != ctx) ||
            !take(s))
            continue;
        unprotect_and_free(s);
        count(&n.released_sync, 1);
    }
}

void guard_after_copy(const struct copy *c, CUresult result)
{
    if (pinshim_policy.guard == GUARD_OFF || result != CUDA_SUCCESS || __atomic_load_n(&forked_child, __ATOMIC_RELAXED))
        return;
    if (c->async) {
        if (c->dir == DIR_D2H && (c->dst_kind == KIND_PINNED || c->dst_kind == KIND_REGISTERED) &&
            c->action == ACTION_PASS && is_guarded_entry(c->entry) && c->bytes)
            guard_copy(c);
        return;
    }
    /* A synchronous copy with a host side returns after the work before it on its stream. */
    if (any_live() && (c->dir == DIR_H2D || c->dir == DIR_D2H || c->dir == DIR_H2H))
        release_covered(c->stream, UINT64_MAX, current_tid(), c->stream == CU_STREAM_LEGACY ? current_ctx() : NULL);
}

/* --- events: what each covers, recorded while something is guarded --- */

struct guard_event {
    CUevent ev;
    CUstream stream;
    int32_t tid;
    CUcontext ctx;
    uint64_t order; /* covers the slots with order <= this */
};
static struct guard_event events[GUARD_EVENTS];
static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;
static bool events_overflow;

static size_t event_home(CUevent e) { return (size_t)(((uintptr_t)e * 0x9E3779B97F4A7C15ull) >> 32) & (GUARD_EVENTS - 1); }

void guard_on_event_record(enum driver_entry_id id, CUevent event, CUstream stream)
{
    if (!any_live() || !event)
        return;
    stream = driver_stream(id, stream);
    CUcontext ctx = stream == CU_STREAM_LEGACY ? current_ctx() : NULL;
    uint64_t order = __atomic_load_n(&order_counter, __ATOMIC_ACQUIRE);
    pthread_mutex_lock(&events_lock);
    size_t h = event_home(event), free_at = GUARD_EVENTS;
    for (size_t k = 0; k < GUARD_EVENTS; k++) {
        size_t j = (h + k) & (GUARD_EVENTS - 1);
        if (events[j].ev == event) {
            free_at = j;
            break;
        }
        if (!events[j].ev && free_at == GUARD_EVENTS)
            free_at = j;
        if (!events[j].ev)
            break;
    }
    if (free_at == GUARD_EVENTS)
        events_overflow = true;
    else
        events[free_at] = (struct guard_event){event, stream, current_tid(), ctx, order};
    pthread_mutex_unlock(&events_lock);
}

void guard_on_event_done(CUevent event)
{
    if (!any_live())
        return;
    bool found = false, overflow;
    CUstream stream = NULL;
    int32_t tid = 0;
    CUcontext ctx = NULL;
    uint64_t order = 0;
    pthread_mutex_lock(&events_lock);
    size_t h = event_home(event);
    for (size_t k = 0; k < GUARD_EVENTS && events[(h + k) & (GUARD_EVENTS - 1)].ev; k++) {
        size_t j = (h + k) & (GUARD_EVENTS - 1);
        if (events[j].ev == event) {
            stream = events[j].stream;
            tid = events[j].tid;
            ctx = events[j].ctx;
            order = events[j].order;
            found = true;
            break;
        }
    }
    overflow = events_overflow;
    pthread_mutex_unlock(&events_lock);
    if (found)
        release_covered(stream, order, tid, ctx);
    else if (overflow) /* the event may cover anything: release rather than report falsely */
        guard_on_ctx_done();
}

void guard_on_host_release(uintptr_t base)
{
    uintptr_t lo, hi;
    if (pinshim_policy.guard == GUARD_OFF || !memkind_range_of(base, &lo, &hi))
        return;
    if (any_live())
        for (unsigned i = 0; i < GUARD_SLOTS; i++) {
            struct guard_slot *s = &slots[i];
            if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_ACTIVE || s->hi <= lo || s->lo >= hi)
                continue;
            if (!take(s))
                continue;
            unprotect_and_free(s);
            count(&n.released_free, 1);
        }
    pthread_mutex_lock(&setup_lock); /* the mapping goes away: forget its protection */
    memset(prot_cache, 0, sizeof prot_cache);
    pthread_mutex_unlock(&setup_lock);
}

void guard_fork_child(void)
{
    forked_child = true;
    pthread_mutex_init(&setup_lock, NULL);
    pthread_mutex_init(&events_lock, NULL);
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        struct guard_slot *s = &slots[i];
        if (s->state == SLOT_ACTIVE || s->state == SLOT_BUSY)
            mprotect((void *)s->lo, s->hi - s->lo, s->prot);
        s->state = SLOT_FREE;
    }
    guard_live = 0;
    memset(&n, 0, sizeof n);
}

/* --- reports (async-signal-safe) --- */

static struct { const struct callsite *site; uint64_t races; } sites[GUARD_SITES];
static uint64_t overflow_site_races;

/* The race count of the copy's call site after this race. */
static uint64_t site_race(const struct callsite *site)
{
    for (unsigned i = 0; i < GUARD_SITES; i++) {
        const struct callsite *cur = __atomic_load_n(&sites[i].site, __ATOMIC_ACQUIRE);
        if (!cur) {
            const struct callsite *expected = NULL;
            if (__atomic_compare_exchange_n(&sites[i].site, &expected, site, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
                cur = site;
            else
                cur = expected;
        }
        if (cur == site)
            return __atomic_add_fetch(&sites[i].races, 1, __ATOMIC_RELAXED);
    }
    return __atomic_add_fetch(&overflow_site_races, 1, __ATOMIC_RELAXED);
}

static void write_stderr(const char *p, size_t len)
{
    while (len) {
        long w = syscall(SYS_write, STDERR_FILENO, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        len -= (size_t)w;
    }
}

static const char *const mode_names[] = {"off", "warn", "repair", "abort"};

static void line_start(struct jbuf *jb)
{
    jb_lit(jb, "==");
    jb_u64(jb, (uint64_t)getpid());
    jb_lit(jb, "== ");
}

static void report(const struct guard_slot *s, unsigned i, uintptr_t addr, enum guard_access access,
                   const char *via, const void *uc, uint64_t site_count)
{
    uintptr_t frames[GUARD_STACK_MAX];
    int nframes = uc ? guard_stack_signal(uc, frames, GUARD_STACK_MAX) : guard_stack_here(frames, GUARD_STACK_MAX);
    char buf[4096];
    struct jbuf jb;
    jb_init(&jb, buf, sizeof buf);
    line_start(&jb);
    jb_lit(&jb, access == GUARD_WRITE ? "pinshim: unsynchronized WRITE of D2H destination at "
                                      : "pinshim: unsynchronized READ of D2H destination at ");
    jb_hex(&jb, addr);
    if (via) {
        jb_lit(&jb, " by ");
        jb_lit(&jb, via);
    }
    jb_lit(&jb, "\n");
    line_start(&jb);
    jb_lit(&jb, "  offset ");
    jb_u64(&jb, addr >= s->dst ? addr - s->dst : 0);
    jb_lit(&jb, " of copy #");
    jb_u64(&jb, s->copy_no);
    jb_lit(&jb, ": ");
    jb_lit(&jb, driver_entries[s->entry].export_name);
    jb_lit(&jb, ", ");
    jb_u64(&jb, s->bytes);
    jb_lit(&jb, " bytes into ");
    jb_hex(&jb, s->dst);
    jb_lit(&jb, ", stream ");
    jb_hex(&jb, (uintptr_t)s->stream);
    jb_lit(&jb, ", called from ");
    if (s->site)
        callsite_append_text(&jb, s->site);
    else
        jb_lit(&jb, "?");
    jb_lit(&jb, "\n");
    line_start(&jb);
    jb_lit(&jb, copy_done(s, i) ? "  the copy had completed, but no host synchronization covered it yet\n"
                                : "  the copy had NOT completed: the data read may be stale\n");
    line_start(&jb);
    jb_lit(&jb, "  access stack:\n");
    for (int f = 0; f < nframes; f++) {
        char fr[160];
        size_t pos = 0;
        guard_module_name(fr, sizeof fr, &pos, frames[f]);
        line_start(&jb);
        jb_lit(&jb, "    #");
        jb_u64(&jb, (uint64_t)f);
        jb_raw(&jb, fr, pos);
        jb_lit(&jb, "\n");
    }
    line_start(&jb);
    jb_lit(&jb, "  guard = ");
    jb_lit(&jb, mode_names[pinshim_policy.guard]);
    jb_lit(&jb, pinshim_policy.guard == GUARD_REPAIR  ? ": waiting for the copy, then continuing\n"
                : pinshim_policy.guard == GUARD_ABORT ? ": aborting\n"
                                                      : ": unprotecting the pages and continuing\n");
    if (site_count == GUARD_REPORTS_PER_SITE) {
        line_start(&jb);
        jb_lit(&jb, "  (later races of copies from this call site are counted, not reported)\n");
    }
    if (jb.full) /* cut: end the last line */
        buf[sizeof buf - 1] = '\n';
    write_stderr(buf, jb.len);
}

static void wait_ns(uint64_t ns)
{
    struct timespec ts = {0, (long)ns};
    nanosleep(&ts, NULL);
}

/* The caller owns s (BUSY). Reports, then repairs, aborts or unprotects. */
static void handle_race(struct guard_slot *s, unsigned i, uintptr_t addr, enum guard_access access, const char *via,
                        const void *uc)
{
    count(&n.races, 1);
    count(access == GUARD_WRITE ? &n.writes : &n.reads, 1);
    if (via)
        count(&n.io_races, 1);
    if (copy_done(s, i))
        count(&n.completed_before_access, 1);
    uint64_t site_count = site_race(s->site);
    if (site_count <= GUARD_REPORTS_PER_SITE) {
        count(&n.reports, 1);
        report(s, i, addr, access, via, uc, site_count);
    } else {
        count(&n.rate_limited, 1);
    }
    if (pinshim_policy.guard == GUARD_ABORT)
        abort();
    if (pinshim_policy.guard == GUARD_REPAIR) {
        uint64_t waited = 0;
        while (!copy_done(s, i) && waited < GUARD_REPAIR_WAIT_NS) {
            wait_ns(2000);
            waited += 2000;
        }
        count(copy_done(s, i) ? &n.repaired : &n.repair_timeouts, 1);
    }
    unprotect_and_free(s);
    count(&n.released_race, 1);
}

/* Waits until the slot another thread is handling is released (its pages then restored). */
static void wait_busy(struct guard_slot *s)
{
    for (uint64_t waited = 0; __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == SLOT_BUSY && waited < GUARD_BUSY_WAIT_NS;
         waited += 2000)
        wait_ns(2000);
}

int guard_fault(uintptr_t addr, enum guard_access access, const void *uc)
{
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        struct guard_slot *s = &slots[i];
        int st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
        if ((st != SLOT_ACTIVE && st != SLOT_BUSY) || addr < s->lo || addr >= s->hi)
            continue;
        if (st == SLOT_ACTIVE && take(s)) {
            if (addr < s->lo || addr >= s->hi) { /* reused for other pages meanwhile */
                __atomic_store_n(&s->state, SLOT_ACTIVE, __ATOMIC_RELEASE);
                continue;
            }
            handle_race(s, i, addr, access, NULL, uc);
        } else {
            wait_busy(s);
        }
        tls_stale_addr = 0;
        return 1;
    }
    /* Released by another thread between the fault and now: retry the access once. */
    for (unsigned r = 0; r < GUARD_RECENT; r++)
        if (addr >= __atomic_load_n(&recent[r].lo, __ATOMIC_RELAXED) &&
            addr < __atomic_load_n(&recent[r].hi, __ATOMIC_RELAXED) && tls_stale_addr != addr) {
            tls_stale_addr = addr;
            return 1;
        }
    return 0;
}

void guard_io(uintptr_t buf, size_t len, enum guard_access access, const char *via)
{
    uintptr_t lo = buf, hi = lo + len;
    if (!len || pinshim_policy.guard == GUARD_OFF)
        return;
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        struct guard_slot *s = &slots[i];
        int st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
        if ((st != SLOT_ACTIVE && st != SLOT_BUSY) || hi <= s->dst || lo >= s->dst + s->bytes)
            continue;
        if (st == SLOT_BUSY) {
            wait_busy(s);
            continue;
        }
        if (!take(s))
            continue;
        if (hi <= s->dst || lo >= s->dst + s->bytes) {
            __atomic_store_n(&s->state, SLOT_ACTIVE, __ATOMIC_RELEASE);
            continue;
        }
        handle_race(s, i, lo > s->dst ? lo : s->dst, access, via, NULL);
    }
}

/* --- summary and exit --- */

size_t guard_summary_json(char *buf, size_t len)
{
    if (pinshim_policy.guard == GUARD_OFF)
        return 0;
    struct jbuf jb;
    jb_init(&jb, buf, len);
    jb_lit(&jb, ",\"guard\":{\"mode\":");
    jb_str(&jb, mode_names[pinshim_policy.guard]);
    jb_lit(&jb, ",\"pages\":");
    jb_str(&jb, pinshim_policy.guard_pages == GUARD_PAGES_FIRST ? "first" : "all");
#define FIELD(name)                                                                                    \
    jb_lit(&jb, ",\"" #name "\":");                                                                    \
    jb_u64(&jb, get(&n.name));
    FIELD(guarded) FIELD(guarded_bytes) FIELD(protected_bytes) FIELD(races) FIELD(reads) FIELD(writes)
    FIELD(io_races) FIELD(reports) FIELD(rate_limited) FIELD(completed_before_access) FIELD(repaired)
    FIELD(repair_timeouts) FIELD(released_sync) FIELD(released_free) FIELD(released_race) FIELD(table_full)
    FIELD(too_small) FIELD(not_tracked) FIELD(capture) FIELD(marker_hostfn) FIELD(marker_failed)
    FIELD(protect_failed) FIELD(mixed_prot)
#undef FIELD
    jb_lit(&jb, ",\"still_guarded\":");
    jb_u64(&jb, (uint64_t)__atomic_load_n(&guard_live, __ATOMIC_RELAXED));
    jb_lit(&jb, "}");
    if (jb.full || jb.len >= len)
        return 0;
    buf[jb.len] = '\0';
    return jb.len;
}

static size_t summary_line(char *buf, size_t len, bool sanitizer_style)
{
    struct jbuf jb;
    jb_init(&jb, buf, len);
    line_start(&jb);
    jb_lit(&jb, sanitizer_style ? "pinshim: SUMMARY: " : "guard (");
    if (!sanitizer_style) {
        jb_lit(&jb, mode_names[pinshim_policy.guard]);
        jb_lit(&jb, "): ");
        jb_u64(&jb, get(&n.guarded));
        jb_lit(&jb, " async D2H copies guarded, ");
    }
    jb_u64(&jb, get(&n.races));
    jb_lit(&jb, " unsynchronized accesses of D2H destinations (");
    jb_u64(&jb, get(&n.reads));
    jb_lit(&jb, " READ, ");
    jb_u64(&jb, get(&n.writes));
    jb_lit(&jb, " WRITE; ");
    jb_u64(&jb, get(&n.reports));
    jb_lit(&jb, " reported, ");
    jb_u64(&jb, get(&n.rate_limited));
    jb_lit(&jb, " rate-limited)\n");
    if (jb.full || jb.len >= len)
        return 0;
    buf[jb.len] = '\0';
    return jb.len;
}

size_t guard_summary_text(char *buf, size_t len)
{
    if (pinshim_policy.guard == GUARD_OFF)
        return 0;
    return summary_line(buf, len, false);
}

void guard_at_exit(void)
{
    if (pinshim_policy.guard == GUARD_OFF || !get(&n.races))
        return;
    char buf[512];
    size_t len = summary_line(buf, sizeof buf, true);
    write_stderr(buf, len);
    if (pinshim_policy.guard_exitcode)
        _exit((int)pinshim_policy.guard_exitcode);
}
