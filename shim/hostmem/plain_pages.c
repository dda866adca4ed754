/* plain_pages.c: the memo of plain pages (see plain_pages.h): a page memo (base/page_memo.h) of
 * one answer, generation kept in the gate. */
#include "plain_pages.h"

#include "alloc_table.h"
#include "base/common.h"
#include "base/gate.h"
#include "base/page_memo.h"

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

void plain_pages_note(uintptr_t p, uint64_t gen)
{
    if (!alloc_table_may_hold(p))
        page_memo_put(&plain, p, gen, PLAIN);
}

void plain_pages_changed(void) { page_memo_raise_word(&plain, &pinshim_gate.plain_pages); }
