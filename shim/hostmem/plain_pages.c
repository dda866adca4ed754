/* plain_pages.c: the memo of plain pages (see plain_pages.h): a page memo (base/page_memo.h) of
 * one answer, generation kept in the gate. */
#include "plain_pages.h"

#include "alloc_table.h"
#include "base/common.h"
#include "base/gate.h"
#include "base/page_memo.h"
#include "base/thread.h"
#include "memkind.h"

enum { PLAIN = 1 };
static struct page_memo plain;

/* The two a small pageable copy asks in its handler's line (copy/copy_entry.c, host_path): in line
 * there whatever the compiler would choose (it stopped inlining plain_pages_hold() once). */
__attribute__((always_inline)) inline uint64_t plain_pages_generation(void)
{
    return __atomic_load_n(&pinshim_gate.plain_pages, __ATOMIC_ACQUIRE);
}

__attribute__((always_inline)) inline bool plain_pages_hold(uintptr_t p, uint64_t gen)
{
    return page_memo_holds(&plain, p, gen, PLAIN);
}

static void note_overlap(struct alloc_rec *r, void *overlaps)
{
    (void)r;
    *(bool *)overlaps = true;
}

/* Whether the pages of [lo, hi), between two of a run, may join it: no range of memkind's table
 * and no tracked allocation overlaps them (the tables only: the driver is not asked). */
static bool between_plain(uintptr_t lo, uintptr_t hi)
{
    if (memkind_table_overlaps(lo, hi) || alloc_table_held()) /* held: the shim's own work under the lock */
        return false;
    bool overlaps = false;
    alloc_table_lock();
    alloc_table_each_overlapping(lo, hi, note_overlap, &overlaps);
    alloc_table_unlock();
    return !overlaps;
}

void plain_pages_found(uintptr_t p, uint64_t gen)
{
    struct pinshim_kind_hit *run = &pinshim_thread.kind_hit;
    uintptr_t lo, hi, reach = (uintptr_t)PLAIN_RUN_REACH << PAGE_MEMO_PAGE_SHIFT;
    page_memo_bounds(p, &lo, &hi);
    if (run->generation == gen && run->kind == KIND_PAGEABLE && run->base < run->end) {
        if (lo >= run->base && hi <= run->end)
            return;
        if (lo >= run->end && lo - run->end <= reach && between_plain(run->end, lo)) {
            run->end = hi;
            return;
        }
        if (hi <= run->base && run->base - hi <= reach && between_plain(hi, run->base)) {
            run->base = lo;
            return;
        }
    }
    *run = (struct pinshim_kind_hit){gen, lo, hi, KIND_PAGEABLE};
}

bool plain_pages_note(uintptr_t p, uint64_t gen)
{
    if (alloc_table_may_hold(p))
        return false;
    page_memo_put(&plain, p, gen, PLAIN);
    return true;
}

void plain_pages_changed(void) { page_memo_raise_word(&plain, &pinshim_gate.plain_pages); }
