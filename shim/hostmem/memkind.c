/* memkind.c: pointer classification (see memkind.h). The range table is a sorted array under a
 * read-write lock; the page memo's generation, raised on any change of the table and on every
 * unmapping the allocation hooks see, invalidates the memo (small copies' pages) and each thread's
 * one-entry cache. */
#define _GNU_SOURCE
#include "memkind.h"

#include <cuda.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_events.h"
#include "base/common.h"
#include "base/gate.h"
#include "base/page_memo.h"
#include "base/real.h"
#include "plain_pages.h"

struct range {
    uintptr_t base, end;
    enum host_kind kind;
};

static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct range *ranges;
static size_t range_count, range_capacity;
static bool driver_allowed = true;

/* The last range this thread found, in page_kinds' generation, is pinshim_thread.kind_hit
 * (base/thread.h), on the line every wrapped call touches. It starts empty, so that it never
 * matches although its generation 0 is the memo's first. */

/* Answers for a small copy's page (base/page_memo.h), valid in one generation: a page the driver
 * called plain host memory, holding no part of a range of the table (the driver answers per byte),
 * or a page lying wholly inside one pinned or registered range. Without it a small copy's pageable
 * side asks the driver (cuPointerGetAttributes, 100-140 ns on an H200 host) and a pinned one takes
 * the table's read lock and searches it, on every copy. */
enum { MEMO_PAGEABLE, MEMO_PINNED, MEMO_REGISTERED };
static struct page_memo page_kinds;

/* page_kinds' generation, kept on the gate's line (base/gate.h): a small pinned copy found in the
 * thread's last range reads no line of this file's. */
static inline uint64_t kinds_generation(void) { return __atomic_load_n(&pinshim_gate.page_kinds, __ATOMIC_ACQUIRE); }

/* The table changed, or host memory was unmapped: every page memo word and thread's last range
 * becomes stale, and so does every plain page. */
static void kinds_changed(void)
{
    page_memo_raise_word(&page_kinds, &pinshim_gate.page_kinds);
    plain_pages_changed();
}

/* Index of the first range with base > p. Caller holds the lock. */
static size_t upper_bound(uintptr_t p)
{
    size_t lo = 0, hi = range_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ranges[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Whether the thread's last range holds p and is still current (generation gen). The three
 * tests are one branch (`&`, the fields lie on one line): asked before every small copy, whose
 * code is cold between a framework's calls, where each branch may be mispredicted. */
static inline bool cache_holds(uintptr_t p, uint64_t gen)
{
    const struct pinshim_kind_hit *hit = &pinshim_thread.kind_hit;
    return (hit->generation == gen) & (p >= hit->base) & (p < hit->end);
}

PINSHIM_HOT static bool table_lookup(uintptr_t p, struct range *out)
{
    uint64_t gen = kinds_generation();
    if (cache_holds(p, gen)) {
        const struct pinshim_kind_hit *hit = &pinshim_thread.kind_hit;
        *out = (struct range){hit->base, hit->end, (enum host_kind)hit->kind};
        return true;
    }
    bool found = false;
    pthread_rwlock_rdlock(&table_lock);
    size_t i = upper_bound(p);
    if (i > 0 && p < ranges[i - 1].end) {
        *out = ranges[i - 1];
        found = true;
    }
    gen = kinds_generation(); /* under the lock: the table is still the one searched */
    pthread_rwlock_unlock(&table_lock);
    if (found) {
        pinshim_thread.kind_hit = (struct pinshim_kind_hit){gen, out->base, out->end, (int)out->kind};
    }
    return found;
}

/* Whether any range of the table overlaps [lo, hi). */
static bool table_overlaps(uintptr_t lo, uintptr_t hi)
{
    pthread_rwlock_rdlock(&table_lock);
    size_t i = upper_bound(hi - 1); /* ranges[i - 1] is the last one starting before hi */
    bool overlaps = i > 0 && ranges[i - 1].end > lo;
    pthread_rwlock_unlock(&table_lock);
    return overlaps;
}

typedef CUresult (*get_attributes_fn)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);

static enum host_kind driver_kind(uintptr_t p)
{
    static void *cached;
    if (!__atomic_load_n(&driver_allowed, __ATOMIC_RELAXED))
        return KIND_UNKNOWN;
    get_attributes_fn get_attributes =
        (get_attributes_fn)real_driver_symbol_cached(&cached, "cuPointerGetAttributes");
    if (!get_attributes)
        return KIND_UNKNOWN;
    unsigned int memory_type = 0, is_managed = 0;
    CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *data[2] = {&memory_type, &is_managed};
    pinshim_enter();
    CUresult r = get_attributes(2, attrs, data, (CUdeviceptr)p);
    pinshim_leave();
    if (r != CUDA_SUCCESS)
        return KIND_UNKNOWN;
    if (is_managed)
        return KIND_MANAGED;
    switch (memory_type) {
    case 0: return KIND_PAGEABLE; /* not known to CUDA: plain host memory */
    case CU_MEMORYTYPE_HOST: return KIND_PINNED; /* pinned by a route the shim did not see */
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_ARRAY: return KIND_DEVICE;
    default: return KIND_UNKNOWN;
    }
}

PINSHIM_HOT enum host_kind memkind_of_table(uintptr_t p)
{
    struct range r;
    return table_lookup(p, &r) ? r.kind : KIND_UNKNOWN;
}

enum host_kind memkind_of_driver(uintptr_t p) { return driver_kind(p); }

/* In line in every copy handler (copy/copy_entry.c, host_path), whatever the compiler would choose. */
__attribute__((always_inline)) inline enum host_kind memkind_last_range(uintptr_t p)
{
    if (cache_holds(p, kinds_generation()))
        return (enum host_kind)pinshim_thread.kind_hit.kind;
    return KIND_UNKNOWN;
}

PINSHIM_HOT enum host_kind memkind_of_small(uintptr_t p)
{
    /* the generation is read before the lookup: a change meanwhile leaves the answer stale */
    uint64_t gen = kinds_generation();
    /* the thread's last range first: the small tensors of one pinned block share it, where each
     * page's memo word lies on a line of its own, cold between a framework's copies */
    if (cache_holds(p, gen))
        return (enum host_kind)pinshim_thread.kind_hit.kind;
    switch (page_memo_get(&page_kinds, p, gen)) {
    case MEMO_PAGEABLE: return KIND_PAGEABLE;
    case MEMO_PINNED: return KIND_PINNED;
    case MEMO_REGISTERED: return KIND_REGISTERED;
    default: break;
    }
    uintptr_t lo, hi;
    page_memo_bounds(p, &lo, &hi);
    struct range r;
    if (table_lookup(p, &r)) {
        if (r.base <= lo && hi <= r.end && (r.kind == KIND_PINNED || r.kind == KIND_REGISTERED))
            page_memo_put(&page_kinds, p, gen, r.kind == KIND_PINNED ? MEMO_PINNED : MEMO_REGISTERED);
        return r.kind;
    }
    enum host_kind kind = driver_kind(p);
    if (kind == KIND_PAGEABLE && !table_overlaps(lo, hi))
        page_memo_put(&page_kinds, p, gen, MEMO_PAGEABLE);
    return kind;
}

bool memkind_range_of(uintptr_t p, uintptr_t *base, uintptr_t *end)
{
    struct range r;
    if (!table_lookup(p, &r))
        return false;
    *base = r.base;
    *end = r.end;
    return true;
}

/* Removes every range overlapping [base, end). Caller holds the write lock. */
static void remove_overlaps(uintptr_t base, uintptr_t end)
{
    size_t out = 0;
    for (size_t i = 0; i < range_count; i++)
        if (ranges[i].end <= base || ranges[i].base >= end)
            ranges[out++] = ranges[i];
    range_count = out;
}

void memkind_add_range(uintptr_t base, size_t bytes, enum host_kind kind)
{
    if (bytes == 0)
        return;
    uintptr_t end = base + bytes;
    pthread_rwlock_wrlock(&table_lock);
    remove_overlaps(base, end); /* a stale entry the program's free raced with */
    if (range_count == range_capacity) {
        size_t cap = range_capacity ? range_capacity * 2 : 64;
        struct range *grown = realloc(ranges, cap * sizeof *grown);
        if (!grown) {
            pthread_rwlock_unlock(&table_lock);
            pinshim_warn("warning: out of memory tracking pinned ranges; copies from %p will be classified "
                         "by the driver", (void *)base);
            return;
        }
        ranges = grown;
        range_capacity = cap;
    }
    size_t i = upper_bound(base);
    memmove(&ranges[i + 1], &ranges[i], (range_count - i) * sizeof *ranges);
    ranges[i] = (struct range){base, end, kind};
    range_count++;
    kinds_changed();
    pthread_rwlock_unlock(&table_lock);
}

void memkind_remove_range(uintptr_t base)
{
    pthread_rwlock_wrlock(&table_lock);
    size_t i = upper_bound(base);
    if (i > 0 && ranges[i - 1].base == base) {
        memmove(&ranges[i - 1], &ranges[i], (range_count - i) * sizeof *ranges);
        range_count--;
        kinds_changed();
    }
    pthread_rwlock_unlock(&table_lock);
}

void memkind_clear(void)
{
    pthread_rwlock_wrlock(&table_lock);
    range_count = 0;
    kinds_changed();
    pthread_rwlock_unlock(&table_lock);
}

void memkind_forget_all(void)
{
    pthread_rwlock_t fresh = PTHREAD_RWLOCK_INITIALIZER;
    table_lock = fresh; /* the parent's lock may have been held by a thread that does not exist here */
    range_count = 0;
    kinds_changed();
}

static void host_unmapped(uintptr_t lo, uintptr_t hi)
{
    (void)lo, (void)hi;
    kinds_changed();
}

static const struct alloc_subscriber host_map_subscriber = {.min_bytes = SIZE_MAX, .unmapping = host_unmapped};

const struct alloc_subscriber *memkind_subscriber(void) { return &host_map_subscriber; }

void memkind_allow_driver(bool allow) { __atomic_store_n(&driver_allowed, allow, __ATOMIC_RELAXED); }
