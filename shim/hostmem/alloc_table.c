/* alloc_table.c: the table of tracked host allocations (see alloc_table.h).
 * The records sit in an array of (base, record) slots sorted by base, so that a search reads the
 * bases only (a few lines) and touches one record, the one it finds. A removal leaves a hole (the
 * slot keeps its base, its record is NULL) rather than moving the slots after it, and an addition
 * fills a hole next to its place when there is one: a program that frees a buffer and allocates the
 * next one at the same address each step moves no slot. The holes are squeezed out when they grow
 * past an eighth of the records (and 8), which bounds how far a search steps back over them.
 * A registered range lies inside its allocation (the cache registers its whole pages only); range
 * queries still look one page either side of the sorted bases, which costs nothing here. */
#define _GNU_SOURCE
#include "alloc_table.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "alloc_next.h"
#include "base/page_memo.h"
#include "plain_pages.h"

struct slot {
    uintptr_t base;
    struct alloc_rec *rec; /* NULL: a hole */
};

static pthread_mutex_t table_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t table_cond = PTHREAD_COND_INITIALIZER;
static __thread bool holding __attribute__((tls_model("initial-exec")));

static struct slot *slots; /* bases strictly increasing, holes included */
static size_t slot_count, slot_capacity, hole_count;
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

/* Index of the first slot with base > p. */
static size_t upper_bound(uintptr_t p)
{
    size_t lo = 0, hi = slot_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (slots[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The record of the last slot before index i that holds one, or NULL (with its index in *at). */
static struct alloc_rec *record_before(size_t i, size_t *at)
{
    while (i > 0) {
        i--;
        if (slots[i].rec) {
            if (at)
                *at = i;
            return slots[i].rec;
        }
    }
    return NULL;
}

/* Squeezes the holes out (the slots keep their order). */
static void close_holes(void)
{
    size_t kept = 0;
    for (size_t i = 0; i < slot_count; i++)
        if (slots[i].rec)
            slots[kept++] = slots[i];
    slot_count = kept;
    hole_count = 0;
}

static bool too_many_holes(void) { return hole_count > 8 + (slot_count - hole_count) / 8; }

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

/* Puts r in its place: a hole beside it, or a slot made by moving the later ones up. */
static bool place(struct alloc_rec *r)
{
    size_t i = upper_bound(r->base);
    size_t hole = i > 0 && !slots[i - 1].rec ? i - 1 : i < slot_count && !slots[i].rec ? i : SIZE_MAX;
    if (hole != SIZE_MAX) { /* bases stay increasing: slots[i - 1].base <= r->base < slots[i].base */
        slots[hole] = (struct slot){r->base, r};
        hole_count--;
        return true;
    }
    if (slot_count == slot_capacity) {
        if (hole_count) {
            close_holes();
            return place(r);
        }
        size_t cap = slot_capacity ? slot_capacity * 2 : 256;
        struct slot *grown = alloc_next_realloc(slots, cap * sizeof *grown);
        if (!grown)
            return false;
        slots = grown;
        slot_capacity = cap;
    }
    memmove(&slots[i + 1], &slots[i], (slot_count - i) * sizeof *slots);
    slots[i] = (struct slot){r->base, r};
    slot_count++;
    return true;
}

bool alloc_table_add(uintptr_t base, size_t size, enum alloc_origin origin)
{
    struct alloc_rec *r = new_record();
    if (!r)
        return false;
    r->base = base;
    r->size = size;
    r->origin = origin;
    r->seq = next_seq++;
    if (!place(r)) {
        alloc_table_free_rec(r);
        return false;
    }
    page_memo_raise(&untracked_pages);
    plain_pages_changed();
    alloc_events_watch(base);
    return true;
}

struct alloc_rec *alloc_table_find_base(uintptr_t base)
{
    size_t i = upper_bound(base);
    return i > 0 && slots[i - 1].base == base ? slots[i - 1].rec : NULL; /* a hole's NULL too */
}

struct alloc_rec *alloc_table_containing(uintptr_t p)
{
    struct alloc_rec *r = record_before(upper_bound(p), NULL);
    if (r && p < r->base + r->size)
        return r;
    /* records do not overlap: the last one starting in or before p's page is the only candidate */
    uintptr_t lo, hi;
    page_memo_bounds(p, &lo, &hi);
    r = record_before(upper_bound(hi - 1), NULL);
    /* the lock is held: the table has not changed since the search, so the answer is fresh */
    if (!r || r->base + r->size <= lo)
        page_memo_put(&untracked_pages, p, page_memo_generation(&untracked_pages), 0);
    return NULL;
}

PINSHIM_HOT bool alloc_table_may_hold(uintptr_t p)
{
    return page_memo_get(&untracked_pages, p, page_memo_generation(&untracked_pages)) < 0;
}

/* The index of the first slot a range query starting at lo looks at: the last record starting
 * a page or more before lo (it may reach into the range), else the first slot after. */
static size_t first_near(uintptr_t lo)
{
    uintptr_t reach = page();
    size_t i = upper_bound(lo > reach ? lo - reach : 0), at;
    return record_before(i, &at) ? at : i;
}

void alloc_table_each_overlapping(uintptr_t lo, uintptr_t hi, void (*fn)(struct alloc_rec *, void *), void *arg)
{
    uintptr_t reach = page();
    for (size_t i = first_near(lo); i < slot_count && slots[i].base < hi + reach; i++) {
        struct alloc_rec *r = slots[i].rec;
        uintptr_t rlo, rhi;
        if (!r)
            continue;
        extent(r, &rlo, &rhi);
        if (rlo < hi && lo < rhi)
            fn(r, arg);
    }
}

struct alloc_rec *alloc_table_registration_overlapping(uintptr_t lo, uintptr_t hi)
{
    uintptr_t reach = page();
    for (size_t i = first_near(lo); i < slot_count && slots[i].base < hi + reach; i++) {
        struct alloc_rec *r = slots[i].rec;
        if (r && has_registration(r) && r->reg_lo < hi && lo < r->reg_hi)
            return r;
    }
    return NULL;
}

void alloc_table_each(void (*fn)(struct alloc_rec *, void *), void *arg)
{
    for (size_t i = 0; i < slot_count; i++)
        if (slots[i].rec)
            fn(slots[i].rec, arg);
}

void alloc_table_remove(struct alloc_rec *r)
{
    if (r->detached)
        return;
    size_t i = upper_bound(r->base);
    if (i > 0 && slots[i - 1].rec == r) {
        slots[i - 1].rec = NULL;
        hole_count++;
        while (slot_count && !slots[slot_count - 1].rec) { /* holes at the end go at once */
            slot_count--;
            hole_count--;
        }
        if (too_many_holes())
            close_holes();
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
    slots = NULL; /* the parent's records are left behind (a bounded leak), never walked */
    slot_count = slot_capacity = hole_count = 0;
    spare_count = 0;
    page_memo_raise(&untracked_pages);
    plain_pages_changed();
    alloc_events_unwatch_all();
}
