/* copy.c: classification of a copy's two sides into a direction and a host memory kind, whether
 * the shim only counts it, and the hand-off of a finished copy to the stats (see copy.h). */
#include "copy.h"

#include "guard/guard.h"
#include "hostmem/memkind.h"
#include "hostmem/plain_pages.h"
#include "hostmem/regcache.h"
#include "observe/advice.h"
#include "observe/ctxdev.h"
#include "observe/log.h"
#include "observe/stats.h"
#include "policy.h"
#include "stage/stage.h"

static bool side_is_host(enum host_kind k) { return memkind_is_host(k) || k == KIND_UNKNOWN; }

/* A side's kind. A small copy (copy_is_small) is only counted by its kind, so it may take memkind's
 * remembered answer for its page (memkind_of_small): otherwise a pageable page costs a driver query
 * (100-140 ns on an H200 host, 1-2 % of a 4 KB pageable .to("cuda")) and a pinned one the table's
 * read lock, on every copy. A larger side that is not one of the program's pinned or registered
 * ranges, but lies in an allocation the malloc hooks saw (a fresh CPU tensor), is pageable without
 * asking: with the caches cold after the program's own work, the driver's query took 1.9-2.2 us on
 * an H100 host (a fresh 1 MiB tensor's copy takes 160-200 us). With `counted`, the same lookup
 * counts the copy against that allocation when the cache wants nothing more of it, and says so
 * (regcache_malloc_side). */
static enum host_kind side_kind(uintptr_t p, size_t bytes, bool *counted)
{
    if (copy_is_small(bytes))
        return memkind_of_small(p);
    enum host_kind k = memkind_of_table(p);
    if (k != KIND_UNKNOWN)
        return k;
    switch (regcache_malloc_side(p, bytes, counted != NULL)) {
    case MALLOC_SIDE_COUNTED:
        *counted = true;
        return KIND_PAGEABLE;
    case MALLOC_SIDE_PAGEABLE:
        return KIND_PAGEABLE;
    default:
        return memkind_of_driver(p);
    }
}

PINSHIM_HOT void copy_describe(struct copy *c, enum driver_entry_id entry, uintptr_t dst,
                               enum host_kind dst_kind, uintptr_t src, enum host_kind src_kind, size_t bytes,
                               CUstream stream, bool async)
{
    c->entry = entry;
    c->dst = dst;
    c->src = src;
    c->bytes = bytes;
    c->stream = stream;
    c->async = async;
    c->action = ACTION_PASS;
    c->unstaged = UNSTAGED_NONE;
    c->completed = false;
    c->instead_of_direct = false;
    c->device = ctxdev_current(); /* cached per thread and context (observe/ctxdev.h) */
    c->dst_kind = dst_kind == KIND_UNKNOWN ? side_kind(dst, bytes, NULL) : dst_kind;
    c->src_kind = src_kind == KIND_UNKNOWN ? side_kind(src, bytes, NULL) : src_kind;
    regcache_view(c); /* memory the cache pinned is still pageable to the program */

    bool src_host = side_is_host(c->src_kind), dst_host = side_is_host(c->dst_kind);
    if (src_host && dst_host) {
        c->dir = DIR_H2H;
        c->host_kind = c->src_kind;
    } else if (src_host) {
        c->dir = DIR_H2D;
        c->host_kind = c->src_kind;
    } else if (dst_host) {
        c->dir = DIR_D2H;
        c->host_kind = c->dst_kind;
    } else {
        c->dir = DIR_D2D;
        c->host_kind = (c->src_kind == KIND_MANAGED || c->dst_kind == KIND_MANAGED) ? KIND_MANAGED : KIND_DEVICE;
    }
}

PINSHIM_HOT bool copy_only_counted(struct copy *c)
{
    /* the log and the guard follow every copy, live registrations every pageable one */
    if ((c->dir != DIR_H2D && c->dir != DIR_D2H) || copies_followed() || !regcache_ignores(c))
        return false;
    if (c->host_kind == KIND_PINNED || c->host_kind == KIND_REGISTERED)
        return true;
    if (c->host_kind != KIND_PAGEABLE || !copy_is_small(c->bytes))
        return false;
    stage_wanted(c); /* declines it (too small) and says why; a program's first pageable copy starts the pool */
    return true;
}

PINSHIM_HOT enum host_path copy_host_path(uintptr_t host, size_t bytes, bool h2d, enum host_kind *kind)
{
    bool small = copy_is_small(bytes);
    uint64_t plain_gen = plain_pages_generation(); /* before the lookups: an answer across a change is stale */
    /* a small copy's page: the thread's last pinned range first (one line), then the plain pages
     * (one line), before memkind's and the allocation table's memos (a line each) */
    enum host_kind k = small ? memkind_last_range(host) : KIND_UNKNOWN;
    /* a range of memkind's table: the program's own pinned memory, which the registration cache
     * never registers, so that its registrations change nothing for this copy */
    bool own_range = k != KIND_UNKNOWN;
    bool plain = false, counted = false;
    if (k == KIND_UNKNOWN) {
        plain = small && plain_pages_hold(host, plain_gen);
        /* a larger copy that staging declines for its size, in a fresh tensor, say: its kind's
         * lookup also counts it for the cache, and it is counted as a small one (one lookup under
         * the table's lock where the described copy took two, and none of the steps that decline it) */
        bool may_count = !small && nothing_follows() && stage_declines_size(h2d, bytes);
        k = plain ? KIND_PAGEABLE : side_kind(host, bytes, may_count ? &counted : NULL);
    }
    *kind = k;
    if (k == KIND_PINNED || k == KIND_REGISTERED) /* a kind the driver gave may be the cache's registration */
        return PINSHIM_LIKELY(!copies_followed() && (own_range || nothing_follows())) ? HOST_OWN_PINNED
                                                                                     : HOST_DESCRIBE;
    if (counted)
        return HOST_SMALL_PAGEABLE;
    if (k != KIND_PAGEABLE || !small || !nothing_follows())
        return HOST_DESCRIBE;
    if (plain) /* no tracked allocation holds it: the registration cache would not count it */
        return HOST_SMALL_PAGEABLE;
    if (!regcache_ignores_host(host, k))
        return HOST_DESCRIBE;
    plain_pages_note(host, plain_gen);
    return HOST_SMALL_PAGEABLE;
}

/* The counters every finished copy feeds, whichever path it took: one transfer, or one failed copy.
 * True for a success. */
static bool count_copy(const struct copy *c, CUresult result, uint64_t host_ns)
{
    if (result != CUDA_SUCCESS) {
        stats_add_failed_copy();
        return false;
    }
    stats_add_transfer(c->device, c->dir, c->host_kind, c->bytes, c->action, host_ns);
    if (c->unstaged != UNSTAGED_NONE)
        stats_add_unstaged(c->unstaged, c->bytes);
    return true;
}

PINSHIM_HOT void copy_record_counted(const struct copy *c, CUresult result, uint64_t host_ns)
{
    /* what log_copy feeds first; nothing else follows such a copy. The advice keeps pageable copies
     * only: a pinned copy, most counted copies, skips the call */
    if (count_copy(c, result, host_ns) && c->host_kind == KIND_PAGEABLE)
        advice_add_copy(c, host_ns);
}

PINSHIM_HOT void copy_record(const struct copy *c, CUresult result, uint64_t host_ns)
{
    count_copy(c, result, host_ns);
    log_copy(c, result, host_ns); /* advice, call sites, per-transfer record (observe/log.h) */
    guard_after_copy(c, result);  /* protect an async D2H into pinned memory; a sync copy releases (guard/guard.h) */
}
