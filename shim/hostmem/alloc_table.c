/* alloc_table.c: the table of tracked host allocations (see alloc_table.h).
 * A registered range lies inside its allocation (the cache registers its whole pages only); range
 * queries still look one page either side of the sorted bases, which costs nothing here. */
#define _GNU_SOURCE
#include "alloc_next.h"

#define HASH_NONFATAL_OOM 1 /* out of memory: the record is not added, the program goes on */
#define uthash_nonfatal_oom(r) (add_failed = true)
#define uthash_malloc(sz) alloc_next_malloc(sz) /* the table's memory never passes the hooks */
#define uthash_free(ptr, sz) alloc_next_free(ptr)
/* The key is a base address: one multiplication spreads it (Fibonacci hashing of its 16-byte
 * granule), where uthash's default, Jenkins' hash over its 8 bytes, ran some 60 instructions at each
 * tracked allocation and free. */
#define HASH_FUNCTION(keyptr, keylen, hashv)                                                        \
    ((hashv) = (unsigned)((*(const uint64_t *)(const void *)(keyptr) >> 4) * 0x9E3779B97F4A7C15ull >> 32))
static _Bool add_failed;
#include "alloc_table.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "base/page_memo.h"
#include "plain_pages.h"

static pthread_mutex_t table_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t table_cond = PTHREAD_COND_INITIALIZER;
static __thread bool holding __attribute__((tls_model("initial-exec")));

static struct alloc_rec *by_base;  /* uthash head */
static struct alloc_rec **sorted;  /* by base */
static size_t sorted_count, sorted_capacity;
static uint64_t next_seq = 1;
static uintptr_t page_bytes;

/* Pages holding no part of any record, remembered until a record is added (base/page_memo.h), so
 * that a copy from memory the table does not track decides without the lock. The memo's
 * generation is raised at every add, under the lock; a removal leaves every answer true. */
static struct page_memo untracked_pages;

void alloc_table_lock(void)
{
    pthread_mutex_lock(&table_mutex);
    holding = true;
}

void alloc_table_unlock(void)
{
    holding = false;
    pthread_mutex_unlock(&table_mutex);
}

bool alloc_table_held(void) { return holding; }

void alloc_table_wait(void)
{
    holding = false;
    pthread_cond_wait(&table_cond, &table_mutex);
    holding = true;
}

void alloc_table_broadcast(void) { pthread_cond_broadcast(&table_cond); }

static uintptr_t page(void)
{
    if (!page_bytes)
        page_bytes = (uintptr_t)sysconf(_SC_PAGESIZE);
    return page_bytes;
}

/* Index of the first record with base > p. */
static size_t upper_bound(uintptr_t p)
{
    size_t lo = 0, hi = sorted_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid]->base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool has_registration(const struct alloc_rec *r)
{
    return r->state == REG_REGISTERING || r->state == REG_REGISTERED || r->state == REG_UNREGISTERING;
}

static void extent(const struct alloc_rec *r, uintptr_t *lo, uintptr_t *hi)
{
    *lo = r->base;
    *hi = r->base + r->size;
    if (has_registration(r)) {
        if (r->reg_lo < *lo)
            *lo = r->reg_lo;
        if (r->reg_hi > *hi)
            *hi = r->reg_hi;
    }
}

/* Records given back, kept for the next ones (at most SPARE_RECORDS): a program that allocates a
 * fresh buffer each step would otherwise allocate and free a record with each. */
#define SPARE_RECORDS 64
static struct alloc_rec *spare[SPARE_RECORDS];
static unsigned spare_count;

static struct alloc_rec *new_record(void)
{
    if (!spare_count)
        return alloc_next_calloc(1, sizeof(struct alloc_rec));
    struct alloc_rec *r = spare[--spare_count];
    memset(r, 0, sizeof *r);
    return r;
}

void alloc_table_free_rec(struct alloc_rec *r)
{
    if (spare_count < SPARE_RECORDS)
        spare[spare_count++] = r;
    else
        alloc_next_free(r);
}

bool alloc_table_add(uintptr_t base, size_t size, enum alloc_origin origin)
{
    if (sorted_count == sorted_capacity) {
        size_t cap = sorted_capacity ? sorted_capacity * 2 : 256;
        struct alloc_rec **grown = alloc_next_realloc(sorted, cap * sizeof *grown);
        if (!grown)
            return false;
        sorted = grown;
        sorted_capacity = cap;
    }
    struct alloc_rec *r = new_record();
    if (!r)
        return false;
    r->base = base;
    r->size = size;
    r->origin = origin;
    r->seq = next_seq++;
    add_failed = false;
    HASH_ADD(hh, by_base, base, sizeof r->base, r);
    if (add_failed) {
        alloc_table_free_rec(r);
        return false;
    }
    size_t i = upper_bound(base);
    memmove(&sorted[i + 1], &sorted[i], (sorted_count - i) * sizeof *sorted);
    sorted[i] = r;
    sorted_count++;
    page_memo_raise(&untracked_pages);
    plain_pages_changed();
    alloc_events_watch(base);
    return true;
}

struct alloc_rec *alloc_table_find_base(uintptr_t base)
{
    struct alloc_rec *r = NULL;
    HASH_FIND(hh, by_base, &base, sizeof base, r);
    return r;
}

struct alloc_rec *alloc_table_containing(uintptr_t p)
{
    size_t i = upper_bound(p);
    if (i > 0 && p < sorted[i - 1]->base + sorted[i - 1]->size)
        return sorted[i - 1];
    /* records do not overlap: the last one starting in or before p's page is the only candidate */
    uintptr_t lo, hi;
    page_memo_bounds(p, &lo, &hi);
    i = upper_bound(hi - 1);
    /* the lock is held: the table has not changed since the search, so the answer is fresh */
    if (i == 0 || sorted[i - 1]->base + sorted[i - 1]->size <= lo)
        page_memo_put(&untracked_pages, p, page_memo_generation(&untracked_pages), 0);
    return NULL;
}

PINSHIM_HOT bool alloc_table_may_hold(uintptr_t p)
{
    return page_memo_get(&untracked_pages, p, page_memo_generation(&untracked_pages)) < 0;
}

void alloc_table_each_overlapping(uintptr_t lo, uintptr_t hi, void (*fn)(struct alloc_rec *, void *), void *arg)
{
    uintptr_t reach = page();
    size_t i = upper_bound(lo > reach ? lo - reach : 0);
    if (i > 0)
        i--;
    while (i < sorted_count && sorted[i]->base < hi + reach) {
        struct alloc_rec *r = sorted[i];
        uintptr_t rlo, rhi;
        extent(r, &rlo, &rhi);
        size_t before = sorted_count;
        if (rlo < hi && lo < rhi)
            fn(r, arg);
        if (sorted_count == before) /* fn removed r: the next record moved into slot i */
            i++;
    }
}

struct alloc_rec *alloc_table_registration_overlapping(uintptr_t lo, uintptr_t hi)
{
    uintptr_t reach = page();
    size_t i = upper_bound(lo > reach ? lo - reach : 0);
    if (i > 0)
        i--;
    for (; i < sorted_count && sorted[i]->base < hi + reach; i++) {
        struct alloc_rec *r = sorted[i];
        if (has_registration(r) && r->reg_lo < hi && lo < r->reg_hi)
            return r;
    }
    return NULL;
}

void alloc_table_each(void (*fn)(struct alloc_rec *, void *), void *arg)
{
    for (size_t i = 0; i < sorted_count; i++)
        fn(sorted[i], arg);
}

void alloc_table_remove(struct alloc_rec *r)
{
    if (r->detached)
        return;
    HASH_DELETE(hh, by_base, r);
    size_t i = upper_bound(r->base);
    while (i > 0 && sorted[i - 1] != r) /* equal bases cannot coexist; this walks at most one step */
        i--;
    if (i > 0) {
        memmove(&sorted[i - 1], &sorted[i], (sorted_count - i) * sizeof *sorted);
        sorted_count--;
    }
    /* no memo changes: a page they remember as untracked or plain is still so with a record less
     * (a program freeing a fresh batch each step keeps its small copies' answers) */
    alloc_events_unwatch(r->base);
    r->detached = true;
}

void alloc_table_forget_all(void)
{
    pthread_mutex_t fresh_mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
    table_mutex = fresh_mutex;
    table_cond = fresh_cond;
    holding = false;
    by_base = NULL; /* the parent's records are left behind (a bounded leak), never walked */
    sorted = NULL;
    sorted_count = sorted_capacity = 0;
    spare_count = 0;
    page_memo_raise(&untracked_pages);
    plain_pages_changed();
    alloc_events_unwatch_all();
}
