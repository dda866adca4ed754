/* regcache.c: the pin-on-reuse registration cache (see regcache.h): the life of a registration,
 * made (at a copy: regcache_copy.c asks), evicted over the budget, dropped when its memory goes
 * away (the allocation events) or a copy would run out of it; its summary section; fork.
 * Ownership: a record is in the table until a release detaches it; the detaching thread waits until
 * no copy or registration uses it (busy == 0), unregisters what it held, and frees it. A thread that
 * registers or evicts holds the record busy across its driver call, so nothing it uses goes away.
 * Registrations cover only the allocation's whole pages (its page-aligned interior). The real driver
 * refuses a copy whose host range starts inside a registration and runs past its end (measured on
 * an H100 and an H200, FACTS.md), so pinning a partial page shared with a heap neighbour would make
 * the neighbour's own copies fail. Inside the allocation, a copy that reaches past the interior is
 * cut at the registration's edges by the copy path (copy/copy_split.h); any other copy that would
 * start inside a registration and run past it makes the cache drop that registration first
 * (regcache_clear_edges). */
#define _GNU_SOURCE
#include "regcache_internal.h"

#include <cuda.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/common.h"
#include "base/gate.h"
#include "base/real.h"
#include "observe/units.h"
#include "policy.h"

bool regcache_enabled;
uint32_t regcache_register_after;
static uint64_t budget_bytes;
static uintptr_t page_bytes;

/* Under the table lock. */
static uint64_t registered_now, registered_high;
uint64_t regcache_lru_clock;

/* Counters, relaxed atomics. */
static const char *const why_names[WHY_COUNT] = {"free",  "munmap", "madvise", "evicted", "program_register",
                                                 "stale", "edge",   "context"};
static uint64_t n_registered, bytes_registered, n_refused, n_waits, n_released[WHY_COUNT], n_tracked;

static __thread int in_cache __attribute__((tls_model("initial-exec")));

bool regcache_busy_here(void) { return in_cache > 0 || alloc_table_held(); }

static void count(uint64_t *c, uint64_t n) { __atomic_add_fetch(c, n, __ATOMIC_RELAXED); }

void regcache_count_wait(void) { count(&n_waits, 1); }

/* --- the driver --- */

typedef CUresult (*fn_register)(void *, size_t, unsigned int);
typedef CUresult (*fn_unregister)(void *);
typedef CUresult (*fn_stream)(CUstream);

/* Registers [lo, lo + len) and says in which context: the registration ends with that context
 * (cuCtxDestroy, or a primary context reset: seen on 2 x H200), regcache_forget_context(). */
static CUresult driver_register(uintptr_t lo, size_t len, void **ctx)
{
    static void *slot, *current_slot;
    fn_register f = (fn_register)real_driver_symbol_cached(&slot, "cuMemHostRegister_v2");
    CUresult (*current)(CUcontext *) = (CUresult(*)(CUcontext *))real_driver_symbol_cached(&current_slot, "cuCtxGetCurrent");
    if (!f)
        return CUDA_ERROR_NOT_FOUND;
    CUstreamCaptureMode saved;
    CUcontext c = NULL;
    in_cache++;
    pinshim_enter();
    if (current && current(&c) != CUDA_SUCCESS)
        c = NULL;
    *ctx = c;
    real_relaxed_begin(&saved); /* never disturb a capture the calling thread is making */
    CUresult r = f((void *)lo, len, CU_MEMHOSTREGISTER_PORTABLE);
    real_relaxed_end(saved);
    pinshim_leave();
    in_cache--;
    return r;
}

static void driver_unregister(uintptr_t lo, enum release_why why)
{
    static void *slot;
    fn_unregister f = (fn_unregister)real_driver_symbol_cached(&slot, "cuMemHostUnregister");
    if (!f)
        return;
    CUstreamCaptureMode saved;
    in_cache++;
    pinshim_enter();
    real_relaxed_begin(&saved);
    CUresult r = f((void *)lo);
    real_relaxed_end(saved);
    pinshim_leave();
    in_cache--;
    __atomic_sub_fetch(&pinshim_gate.registrations, 1, __ATOMIC_RELAXED);
    count(&n_released[why], 1);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED) {
        static int warned;
        if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
            pinshim_warn("warning: cuMemHostUnregister(%p) of a pin-on-reuse registration returned %d", (void *)lo,
                          (int)r);
    }
}

CUresult regcache_stream_call(const char *name, void **slot, CUstream s)
{
    fn_stream f = (fn_stream)real_driver_symbol_cached(slot, name);
    if (!f)
        return CUDA_ERROR_NOT_FOUND;
    CUstreamCaptureMode saved;
    pinshim_enter();
    real_relaxed_begin(&saved); /* a synchronize is refused during another thread's global capture */
    CUresult r = f(s);
    real_relaxed_end(saved);
    pinshim_leave();
    return r;
}

/* --- releases --- */

static size_t reg_len(const struct alloc_rec *r) { return r->reg_hi - r->reg_lo; }

/* Detaches r (lock held), waits for its users, gives it back, unlocks, unregisters what it held. */
static void release_record_locked(struct alloc_rec *r, enum release_why why)
{
    alloc_table_remove(r);
    while (r->busy)
        alloc_table_wait();
    bool had = r->state == REG_REGISTERED;
    uintptr_t lo = r->reg_lo;
    if (had)
        registered_now -= reg_len(r);
    alloc_table_free_rec(r); /* nothing uses it now */
    alloc_table_unlock();
    if (had)
        driver_unregister(lo, why);
}

void regcache_drop_locked(struct alloc_rec *r, enum release_why why)
{
    while (r->busy) /* a copy using it directly, or another thread's (un)registration */
        alloc_table_wait();
    if (r->state != REG_REGISTERED) {
        alloc_table_unlock();
        return;
    }
    r->state = REG_UNREGISTERING;
    r->busy++;
    alloc_table_unlock();
    driver_unregister(r->reg_lo, why);
    alloc_table_lock();
    registered_now -= reg_len(r);
    r->state = why == WHY_EDGE ? REG_REFUSED : REG_NONE; /* an edge drop would only repeat */
    r->copies = 0;
    r->busy--;
    alloc_table_broadcast();
    alloc_table_unlock();
}

struct ctx_pick {
    void *ctx;
    struct alloc_rec *r;
};

static void pick_in_context(struct alloc_rec *r, void *arg)
{
    struct ctx_pick *p = arg;
    if (!p->r && r->state == REG_REGISTERED && r->reg_ctx == p->ctx)
        p->r = r;
}

void regcache_forget_context(void *ctx)
{
    if (!ctx || !__atomic_load_n(&pinshim_gate.registrations, __ATOMIC_RELAXED) || regcache_busy_here())
        return;
    for (;;) {
        alloc_table_lock();
        struct ctx_pick p = {ctx, NULL};
        alloc_table_each(pick_in_context, &p);
        if (!p.r) {
            alloc_table_unlock();
            return;
        }
        if (p.r->busy) { /* a copy using it: wait, then look again (the record may be gone by then) */
            alloc_table_wait();
            alloc_table_unlock();
            continue;
        }
        registered_now -= reg_len(p.r);
        p.r->state = REG_NONE; /* the driver drops it with the context: nothing to unregister */
        p.r->copies = 0;
        __atomic_sub_fetch(&pinshim_gate.registrations, 1, __ATOMIC_RELAXED);
        count(&n_released[WHY_CONTEXT], 1);
        alloc_table_broadcast();
        alloc_table_unlock();
    }
}

/* --- the allocation events (alloc_events.h): what the hooks tell the cache --- */

struct first_hit {
    uintptr_t lo, hi;
    struct alloc_rec *r;
};

static void take_first(struct alloc_rec *r, void *arg)
{
    struct first_hit *h = arg;
    if (!h->r)
        h->r = r;
}

static void on_alloc(uintptr_t base, size_t size, enum alloc_origin origin)
{
    if (regcache_busy_here())
        return;
    count(&n_tracked, 1);
    for (;;) { /* records overlapping the new allocation are stale: their memory was given back unseen */
        struct first_hit h = {base, base + size, NULL};
        alloc_table_lock();
        alloc_table_each_overlapping(base, base + size, take_first, &h);
        if (!h.r)
            break;
        release_record_locked(h.r, WHY_STALE);
    }
    alloc_table_add(base, size, origin); /* untracked if out of memory */
    alloc_table_unlock();
}

static void on_free(uintptr_t base)
{
    if (!alloc_table_maybe_base(base) || regcache_busy_here())
        return;
    alloc_table_lock();
    struct alloc_rec *r = alloc_table_find_base(base);
    if (!r) {
        alloc_table_unlock();
        return;
    }
    release_record_locked(r, WHY_FREE);
}

/* Releases every record overlapping [lo, hi); mmap regions keep what lies outside as new records. */
static void on_unmap(uintptr_t lo, uintptr_t hi)
{
    if (regcache_busy_here() || lo >= hi)
        return;
    for (;;) {
        struct first_hit h = {lo, hi, NULL};
        alloc_table_lock();
        alloc_table_each_overlapping(lo, hi, take_first, &h);
        if (!h.r) {
            alloc_table_unlock();
            return;
        }
        struct alloc_rec *r = h.r;
        uintptr_t base = r->base, end = r->base + r->size;
        enum alloc_origin origin = r->origin;
        release_record_locked(r, WHY_UNMAP);
        if (origin == ORIGIN_MMAP) { /* the parts left mapped are still the program's regions */
            if (base < lo)
                on_alloc(base, lo - base, ORIGIN_MMAP);
            if (hi < end)
                on_alloc(hi, end - hi, ORIGIN_MMAP);
        }
    }
}

static void on_remap(uintptr_t base, size_t size) { on_alloc(base, size, ORIGIN_MMAP); }

/* Whether base starts a tracked mapping (mremap: then tell the cache where it went). */
static bool tracked_mapping(uintptr_t base)
{
    if (!alloc_table_maybe_base(base) || regcache_busy_here())
        return false;
    alloc_table_lock();
    struct alloc_rec *r = alloc_table_find_base(base);
    bool mapping = r && r->origin == ORIGIN_MMAP;
    alloc_table_unlock();
    return mapping;
}

static void release_registrations(uintptr_t lo, uintptr_t hi, enum release_why why)
{
    if (regcache_busy_here() || lo >= hi || !__atomic_load_n(&pinshim_gate.registrations, __ATOMIC_RELAXED))
        return;
    for (;;) {
        alloc_table_lock();
        struct alloc_rec *r = alloc_table_registration_overlapping(lo, hi);
        if (!r) {
            alloc_table_unlock();
            return;
        }
        regcache_drop_locked(r, why);
    }
}

bool regcache_owns(uintptr_t lo, uintptr_t hi)
{
    alloc_table_lock();
    bool ours = alloc_table_registration_overlapping(lo, hi) != NULL;
    alloc_table_unlock();
    return ours;
}

enum malloc_side regcache_malloc_side(uintptr_t p, size_t bytes, bool count)
{
    if (!regcache_enabled || !alloc_table_may_hold(p) || regcache_busy_here())
        return MALLOC_SIDE_NONE;
    enum malloc_side side = MALLOC_SIDE_NONE;
    alloc_table_lock();
    struct alloc_rec *r = alloc_table_containing(p);
    if (r && r->origin == ORIGIN_MALLOC)
        side = count && regcache_count_only(r, p + bytes) ? MALLOC_SIDE_COUNTED : MALLOC_SIDE_PAGEABLE;
    alloc_table_unlock();
    return side;
}

bool regcache_holds_any(void) { return __atomic_load_n(&pinshim_gate.registrations, __ATOMIC_RELAXED) > 0; }

bool regcache_covers(uintptr_t p)
{
    return __atomic_load_n(&pinshim_gate.registrations, __ATOMIC_RELAXED) && !regcache_busy_here() &&
           regcache_owns(p, p + 1);
}

static void on_discard(uintptr_t lo, uintptr_t hi) { release_registrations(lo, hi, WHY_DISCARD); }

void regcache_on_program_register(uintptr_t p, size_t bytes)
{
    uintptr_t lo = p / page_bytes * page_bytes, hi = (p + bytes + page_bytes - 1) / page_bytes * page_bytes;
    release_registrations(lo, hi, WHY_PROGRAM);
}

static struct alloc_subscriber subscriber = {
    .min_bytes = SIZE_MAX, /* set by regcache_configure */
    .allocated = on_alloc,
    .releasing = on_free,
    .unmapping = on_unmap,
    .moving = tracked_mapping,
    .moved = on_remap,
    .discarding = on_discard,
};

const struct alloc_subscriber *regcache_configure(void)
{
    page_bytes = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (!pinshim_policy.intercept || !pinshim_policy.pin_on_reuse)
        return NULL;
    regcache_register_after = pinshim_policy.register_after ? (uint32_t)pinshim_policy.register_after : 1;
    budget_bytes = pinshim_policy.register_max_bytes;
    if (!budget_bytes) {
        long pages = sysconf(_SC_PHYS_PAGES);
        budget_bytes = pages > 0 ? (uint64_t)pages * page_bytes / 8 : (1ull << 30);
    }
    regcache_enabled = true;
    subscriber.min_bytes = pinshim_policy.track_min_bytes ? (size_t)pinshim_policy.track_min_bytes : 1;
    return &subscriber;
}

/* --- making registrations (for the copy path: regcache_direct) --- */

/* The range to register for r: its whole pages only (see the top of this file). */
static bool registration_range(const struct alloc_rec *r, uintptr_t *lo, uintptr_t *hi)
{
    *lo = (r->base + page_bytes - 1) / page_bytes * page_bytes;
    *hi = (r->base + r->size) / page_bytes * page_bytes;
    return *hi > *lo;
}

struct lru_pick {
    struct alloc_rec *best, *skip;
};

static void pick_lru(struct alloc_rec *r, void *arg)
{
    struct lru_pick *p = arg;
    if (r == p->skip || r->state != REG_REGISTERED || r->busy)
        return;
    if (!p->best || r->last_use < p->best->last_use)
        p->best = r;
}

/* Evicts least recently used registrations until the budget holds what is reserved (lock held;
 * may unlock and relock). False when every other registration is in use. */
static bool make_room_locked(struct alloc_rec *self)
{
    while (registered_now > budget_bytes) {
        struct lru_pick p = {NULL, self};
        alloc_table_each(pick_lru, &p);
        if (!p.best)
            return false;
        regcache_drop_locked(p.best, WHY_EVICT); /* unlocks */
        alloc_table_lock();
    }
    return true;
}

void regcache_register_locked(struct alloc_rec *r)
{
    uintptr_t lo, hi;
    if (!registration_range(r, &lo, &hi) || hi - lo > budget_bytes) {
        r->state = REG_REFUSED;
        return;
    }
    r->state = REG_REGISTERING; /* reserved: no other thread starts on r, eviction skips it */
    r->reg_lo = lo;
    r->reg_hi = hi;
    registered_now += hi - lo;
    if (!make_room_locked(r)) { /* all others in use: try again after more copies */
        registered_now -= hi - lo;
        r->state = REG_NONE;
        r->copies = 0;
        alloc_table_broadcast();
        return;
    }
    if (registered_now > registered_high)
        registered_high = registered_now;
    __atomic_add_fetch(&pinshim_gate.registrations, 1, __ATOMIC_RELAXED);
    alloc_table_unlock();
    CUresult rc = driver_register(lo, hi - lo, &r->reg_ctx);
    alloc_table_lock();
    if (rc == CUDA_SUCCESS) {
        r->state = REG_REGISTERED;
        count(&n_registered, 1);
        count(&bytes_registered, hi - lo);
    } else {
        r->state = REG_REFUSED;
        registered_now -= hi - lo;
        __atomic_sub_fetch(&pinshim_gate.registrations, 1, __ATOMIC_RELAXED);
        count(&n_refused, 1);
        static int warned;
        if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
            pinshim_warn("warning: pin-on-reuse: cuMemHostRegister of %zu bytes at %p returned %d; such buffers "
                         "are staged or passed to the driver instead (warned once)",
                         (size_t)(hi - lo), (void *)lo, (int)rc);
    }
    alloc_table_broadcast();
}

/* --- summary --- */

size_t regcache_summary_json(char *buf, size_t len)
{
    if (!regcache_enabled)
        return 0;
    uint64_t high, now;
    alloc_table_lock();
    high = registered_high;
    now = registered_now;
    alloc_table_unlock();
    int n = snprintf(buf, len,
                     ",\"registration\":{\"tracked_allocations\":%llu,\"registrations\":%llu,\"registered_bytes\":%llu,"
                     "\"live_bytes\":%llu,\"high_water_bytes\":%llu,\"budget_bytes\":%llu,\"refused\":%llu,"
                     "\"async_waits\":%llu,\"released\":{",
                     (unsigned long long)__atomic_load_n(&n_tracked, __ATOMIC_RELAXED),
                     (unsigned long long)__atomic_load_n(&n_registered, __ATOMIC_RELAXED),
                     (unsigned long long)__atomic_load_n(&bytes_registered, __ATOMIC_RELAXED),
                     (unsigned long long)now, (unsigned long long)high, (unsigned long long)budget_bytes,
                     (unsigned long long)__atomic_load_n(&n_refused, __ATOMIC_RELAXED),
                     (unsigned long long)__atomic_load_n(&n_waits, __ATOMIC_RELAXED));
    for (int w = 0; w < WHY_COUNT && n > 0 && (size_t)n < len; w++)
        n += snprintf(buf + n, len - (size_t)n, "%s\"%s\":%llu", w ? "," : "", why_names[w],
                      (unsigned long long)__atomic_load_n(&n_released[w], __ATOMIC_RELAXED));
    if (n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "}}");
    return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

size_t regcache_summary_text(char *buf, size_t len)
{
    uint64_t regs = __atomic_load_n(&n_registered, __ATOMIC_RELAXED);
    uint64_t refused = __atomic_load_n(&n_refused, __ATOMIC_RELAXED);
    if (!regcache_enabled || (!regs && !refused))
        return 0;
    char b1[32], b2[32];
    alloc_table_lock();
    uint64_t high = registered_high;
    alloc_table_unlock();
    uint64_t released = 0;
    for (int w = 0; w < WHY_COUNT; w++)
        released += __atomic_load_n(&n_released[w], __ATOMIC_RELAXED);
    int n = snprintf(buf, len,
                     "==%d== pin-on-reuse: %llu buffers registered after %u copies (%s, high water %s), %llu "
                     "unregistered (%llu freed or unmapped, %llu evicted), %llu refused\n",
                     (int)getpid(), (unsigned long long)regs, regcache_register_after,
                     units_bytes(__atomic_load_n(&bytes_registered, __ATOMIC_RELAXED), b1, sizeof b1),
                     units_bytes(high, b2, sizeof b2), (unsigned long long)released,
                     (unsigned long long)(__atomic_load_n(&n_released[WHY_FREE], __ATOMIC_RELAXED) +
                                          __atomic_load_n(&n_released[WHY_UNMAP], __ATOMIC_RELAXED)),
                     (unsigned long long)__atomic_load_n(&n_released[WHY_EVICT], __ATOMIC_RELAXED),
                     (unsigned long long)refused);
    return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

void regcache_fork_child(void)
{
    regcache_enabled = false;
    alloc_events_unsubscribe(&subscriber); /* no allocation is tracked any more */
    alloc_table_forget_all(); /* the child's pages stay as they are; its own frees are plain frees */
    pinshim_gate.registrations = 0;
    registered_now = 0;
}
