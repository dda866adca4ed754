/* guard.c: guarding a copy (see guard.h): after an async D2H into the program's pinned or
 * registered memory, a completion marker goes behind it (guard_marker.c) and the destination's
 * whole pages are protected in a slot of the table (guard_ranges.c) until a synchronization
 * releases them (guard_sync.c) or the program touches them (guard_fault.c). The first guarded copy
 * sets everything up: the driver functions and the flag page, the fault handler (guard_signal.c,
 * given guard_fault), the module table. Also: pinned memory released, and fork. */
#define _GNU_SOURCE
#include "guard_internal.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "base/common.h"
#include "base/gate.h"
#include "base/real.h"
#include "guard_signal.h"
#include "guard_stack.h"
#include "hostmem/memkind.h"
#include "observe/callsite.h"
#include "policy.h"

static uint32_t marker_counter;
static uint64_t copy_counter;
static bool forked_child;
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

void guard_init(void)
{
    if (pinshim_policy.guard == GUARD_OFF || !pinshim_policy.intercept)
        return;
    __atomic_or_fetch(&pinshim_gate.follow, GATE_FOLLOW_GUARD, __ATOMIC_RELAXED); /* copies leave the counted path */
    callsite_init(); /* the copy's call site, without allocating in the copy path */
    guard_signal_init();
}

/* Once, under setup_lock: the driver functions, the flag page and the signal handler. */
static bool setup_once(void)
{
    static bool tried, ok;
    if (tried)
        return ok;
    tried = true;
    ok = guard_marker_setup() && guard_signal_install(guard_fault);
    if (!ok)
        pinshim_warn("guard: cannot install the guard (no completion marker or no SIGSEGV handler); copies "
                     "are not guarded");
    guard_modules_refresh();
    guard_drv.ready = true;
    return ok;
}

/* --- guarding --- */

static bool is_guarded_entry(enum driver_entry_id e)
{
    return e == ENTRY_dtoh_async || e == ENTRY_dtoh_async_ptsz || e == ENTRY_memcpy_async ||
           e == ENTRY_memcpy_async_ptsz;
}

static void stream_facts(struct guard_slot *s, CUstream stream)
{
    s->stream = stream;
    s->tid = guard_tid();
    s->blocking = true;
    s->ctx = NULL;
    pinshim_enter();
    if (guard_drv.ctx_current)
        guard_drv.ctx_current(&s->ctx);
    unsigned flags = 0;
    if (stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD && guard_drv.stream_flags &&
        guard_drv.stream_flags(stream, &flags) == CUDA_SUCCESS)
        s->blocking = !(flags & CU_STREAM_NON_BLOCKING);
    pinshim_leave();
}

static void guard_copy(const struct copy *c)
{
    uintptr_t ps = guard_page_size(), alloc_lo, alloc_hi;
    uintptr_t lo = (c->dst + ps - 1) & ~(ps - 1), hi = (c->dst + c->bytes) & ~(ps - 1);
    if (lo >= hi) {
        guard_count(&guard_n.too_small, 1);
        return;
    }
    if (pinshim_policy.guard_pages == GUARD_PAGES_FIRST)
        hi = lo + ps;
    /* Only memory whose free and unregister the shim sees: its pages are unprotected before then. */
    if (!memkind_range_of(c->dst, &alloc_lo, &alloc_hi) || c->dst + c->bytes > alloc_hi) {
        guard_count(&guard_n.not_tracked, 1);
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
        guard_count(&guard_n.capture, 1);
        return;
    }
    int i = guard_claim_slot();
    if (i < 0) {
        pthread_mutex_unlock(&setup_lock);
        guard_count(&guard_n.table_full, 1);
        return;
    }
    struct guard_slot *s = &guard_slots[i];
    int prot = guard_original_prot(lo, hi);
    if (prot < 0) {
        __atomic_store_n(&s->state, SLOT_FREE, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&setup_lock);
        guard_count(&guard_n.mixed_prot, 1);
        return;
    }
    uint32_t marker;
    do
        marker = __atomic_add_fetch(&marker_counter, 1, __ATOMIC_RELAXED);
    while (marker == 0);
    bool host_fn;
    if (!guard_marker_enqueue((unsigned)i, marker, c->stream, &host_fn)) {
        __atomic_store_n(&s->state, SLOT_FREE, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&setup_lock);
        guard_count(&guard_n.marker_failed, 1);
        return;
    }
    if (host_fn)
        guard_count(&guard_n.marker_hostfn, 1);
    s->marker = marker;
    s->lo = lo;
    s->hi = hi;
    s->dst = c->dst;
    s->bytes = c->bytes;
    s->prot = prot;
    s->order = __atomic_add_fetch(&guard_order_counter, 1, __ATOMIC_RELAXED);
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
        guard_count(&guard_n.protect_failed, 1);
        return;
    }
    pthread_mutex_unlock(&setup_lock);
    guard_count(&guard_n.guarded, 1);
    guard_count(&guard_n.guarded_bytes, c->bytes);
    guard_count(&guard_n.protected_bytes, hi - lo);
}

PINSHIM_HOT void guard_after_copy(const struct copy *c, CUresult result)
{
    if (pinshim_policy.guard == GUARD_OFF || result != CUDA_SUCCESS ||
        __atomic_load_n(&forked_child, __ATOMIC_RELAXED))
        return;
    if (c->async) {
        if (c->dir == DIR_D2H && (c->dst_kind == KIND_PINNED || c->dst_kind == KIND_REGISTERED) &&
            c->action == ACTION_PASS && is_guarded_entry(c->entry) && c->bytes)
            guard_copy(c);
        return;
    }
    /* A synchronous copy with a host side returns after the work before it on its stream. */
    if (guard_any_live() && (c->dir == DIR_H2D || c->dir == DIR_D2H || c->dir == DIR_H2H))
        guard_release_covered(c->stream, UINT64_MAX, guard_tid(),
                              c->stream == CU_STREAM_LEGACY ? guard_current_ctx() : NULL);
}

void guard_on_host_release(uintptr_t base)
{
    uintptr_t lo, hi;
    if (pinshim_policy.guard == GUARD_OFF || !memkind_range_of(base, &lo, &hi))
        return;
    if (guard_any_live())
        for (unsigned i = 0; i < GUARD_SLOTS; i++) {
            struct guard_slot *s = &guard_slots[i];
            if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_ACTIVE || s->hi <= lo || s->lo >= hi)
                continue;
            if (!guard_take(s))
                continue;
            guard_unprotect_and_free(s);
            guard_count(&guard_n.released_free, 1);
        }
    pthread_mutex_lock(&setup_lock); /* the mapping goes away: forget its protection */
    guard_prot_forget();
    pthread_mutex_unlock(&setup_lock);
}

void guard_fork_child(void)
{
    forked_child = true;
    pthread_mutex_init(&setup_lock, NULL);
    guard_sync_fork_child();
    guard_ranges_fork_child(); /* unprotects every inherited range */
    memset(&guard_n, 0, sizeof guard_n);
}

