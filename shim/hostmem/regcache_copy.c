/* regcache_copy.c: what the copy path asks of the registration cache (see regcache.h): whether a
 * copy's memory is one of the cache's registrations (then pageable to the program), counting copies
 * and registering on the register_after-th, whether a copy can go directly and how, dropping a
 * registration a passed copy would run out of, and keeping pageable promises after the call. */
#define _GNU_SOURCE
#include "regcache_internal.h"

#include "base/gate.h"
#include "base/real.h"
#include "memkind.h"

static uintptr_t host_side(const struct copy *c) { return c->dir == DIR_H2D ? c->src : c->dst; }

PINSHIM_HOT void regcache_view(struct copy *c)
{
    c->reg_rec = NULL;
    c->reg_overlap = false;
    if (!__atomic_load_n(&pinshim_gate.registrations, __ATOMIC_RELAXED) || !c->bytes)
        return;
    uintptr_t sides[2] = {c->src, c->dst};
    enum host_kind *kinds[2] = {&c->src_kind, &c->dst_kind};
    for (int i = 0; i < 2; i++) {
        if (*kinds[i] != KIND_PINNED && *kinds[i] != KIND_PAGEABLE)
            continue;
        uintptr_t base, end;
        /* the program's own pinned memory (memkind's table, lock-free) is never the cache's: the
         * cache registers only memory every copy saw as pageable */
        if (*kinds[i] == KIND_PINNED && memkind_range_of(sides[i], &base, &end))
            continue;
        if (regcache_owns(sides[i], sides[i] + c->bytes)) {
            *kinds[i] = KIND_PAGEABLE; /* what the program believes, and what it would be without the shim */
            c->reg_overlap = true;
        }
    }
}

PINSHIM_HOT bool regcache_ignores_host(uintptr_t host, enum host_kind kind)
{
    if (__atomic_load_n(&pinshim_gate.registrations, __ATOMIC_RELAXED))
        return false;
    return kind != KIND_PAGEABLE || !regcache_enabled || !alloc_table_may_hold(host);
}

/* A described copy's host side that is not pageable is none of the cache's, registrations or not:
 * regcache_view() has made a side inside one of them pageable again. */
PINSHIM_HOT bool regcache_ignores(const struct copy *c)
{
    return c->host_kind != KIND_PAGEABLE || regcache_ignores_host(host_side(c), c->host_kind);
}

/* Whether a copy ending at hi counts against r: r is not registered (nor being registered or
 * refused) and the copy stays inside the allocation. Lock held. */
static bool counts_against(const struct alloc_rec *r, uintptr_t hi)
{
    return r->state == REG_NONE && hi <= r->base + r->size;
}

bool regcache_count_only(struct alloc_rec *r, uintptr_t hi)
{
    bool counts = counts_against(r, hi);
    if (r->state == REG_REGISTERED || (counts && r->copies + 1 >= regcache_register_after))
        return false;
    if (counts) /* a count only: no driver call (a captured copy counts) */
        r->copies++;
    return true;
}

PINSHIM_HOT bool regcache_direct(struct copy *c)
{
    if (!regcache_enabled || (c->dir != DIR_H2D && c->dir != DIR_D2H) || c->host_kind != KIND_PAGEABLE ||
        !c->bytes)
        return false;
    uintptr_t lo = host_side(c), hi = lo + c->bytes;
    if (!alloc_table_may_hold(lo)) /* a small tensor's page: no lock */
        return false;
    alloc_table_lock();
    struct alloc_rec *r = alloc_table_containing(lo);
    if (!r || r->detached) {
        alloc_table_unlock();
        return false;
    }
    if (regcache_count_only(r, hi)) {
        alloc_table_unlock();
        return false;
    }
    r->busy++; /* held across the question below, and until regcache_after_copy if direct */
    bool capturing = false;
    if (c->async) { /* a copy being captured neither registers nor goes direct: asked without the lock */
        alloc_table_unlock();
        capturing = real_stream_capturing(c->stream);
        alloc_table_lock();
    }
    if (!capturing && !r->detached && counts_against(r, hi) && ++r->copies >= regcache_register_after)
        regcache_register_locked(r);
    bool direct = !capturing && r->state == REG_REGISTERED && !r->detached && r->reg_lo < hi && lo < r->reg_hi;
    if (direct && (lo < r->reg_lo || r->reg_hi < hi)) {
        /* to be cut at the registration's edges: each piece alone could succeed where the driver
         * refuses the whole (a device range running into the next allocation), so the device range
         * is asked first (without the lock: r stays busy, its registration with it); a copy the
         * driver may refuse goes to it as it is, the registration cleared from its way like any
         * passed copy's (reg_overlap: clear_host_edges) */
        alloc_table_unlock();
        bool device_whole = real_device_range_whole(c->dir == DIR_H2D ? c->dst : c->src, c->bytes);
        alloc_table_lock();
        direct = device_whole && r->state == REG_REGISTERED && !r->detached;
        if (!device_whole)
            c->reg_overlap = true;
    }
    if (direct) {
        r->last_use = ++regcache_lru_clock;
        c->reg_rec = r; /* stays busy until regcache_after_copy: reg_lo/reg_hi stay as they are */
        c->reg_overlap = true;
    } else {
        r->busy--;
        alloc_table_broadcast();
    }
    alloc_table_unlock();
    return direct;
}

bool regcache_stream_idle(const struct copy *c)
{
    static void *slot;
    return regcache_stream_call("cuStreamQuery", &slot, c->stream) == CUDA_SUCCESS;
}

bool regcache_direct_whole(const struct copy *c)
{
    uintptr_t lo = host_side(c);
    return c->reg_rec && c->reg_rec->reg_lo <= lo && lo + c->bytes <= c->reg_rec->reg_hi;
}

void regcache_direct_range(const struct copy *c, uintptr_t *lo, uintptr_t *hi)
{
    *lo = c->reg_rec->reg_lo;
    *hi = c->reg_rec->reg_hi;
}

void regcache_clear_edges(uintptr_t lo, uintptr_t hi)
{
    if (lo >= hi || !__atomic_load_n(&pinshim_gate.registrations, __ATOMIC_RELAXED) || regcache_busy_here())
        return;
    for (;;) {
        alloc_table_lock();
        struct alloc_rec *r = alloc_table_registration_overlapping(lo, lo + 1);
        if (!r || r->state != REG_REGISTERED || hi <= r->reg_hi) {
            alloc_table_unlock();
            return;
        }
        regcache_drop_locked(r, WHY_EDGE); /* unlocks */
    }
}

PINSHIM_HOT void regcache_after_copy(struct copy *c, CUresult result)
{
    /* pageable semantics for an async copy of memory the cache pinned: complete on return */
    bool must_wait = c->reg_overlap && c->async && result == CUDA_SUCCESS && c->action != ACTION_STAGED;
    if (must_wait && (c->completed || !real_stream_capturing(c->stream))) {
        static void *slot;
        if (!c->completed) /* a copy cut at the registration's edges has waited already */
            regcache_stream_call("cuStreamSynchronize", &slot, c->stream);
        regcache_count_wait();
    }
    if (c->reg_rec) {
        alloc_table_lock();
        c->reg_rec->busy--;
        alloc_table_broadcast();
        alloc_table_unlock();
        c->reg_rec = NULL;
    }
}

