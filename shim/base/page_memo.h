/* page_memo.h: a lock-free memory of one small answer (0..3) per 4 KiB page, valid while the table
 * it was derived from does not change. The memo keeps its own generation, raised by its owner at
 * every change. One word per slot, direct-mapped by page number: the page number (36 bits: a
 * 48-bit address space), the answer (2 bits) and the generation's low 26 bits, so a slot is right
 * or stale as a whole and raising the generation makes every slot stale.
 * Used where a lookup under a lock (memkind's ranges, the tracked allocations) would otherwise run
 * on every small copy.
 * Contract: get, put and raise are lock-free and thread-safe. The caller reads the generation
 * (page_memo_generation) before it computes the answer it puts: an answer computed across a change
 * is stored stale. Every 2^26 raises the memo is emptied, so that no slot lives to see its
 * generation's low bits come round again. A zeroed memo is empty, in generation 0. */
#ifndef PINSHIM_PAGE_MEMO_H
#define PINSHIM_PAGE_MEMO_H

#include <stdint.h>

#define PAGE_MEMO_SLOTS 4096u /* 32 KiB: the pages of a thousand 4 KB tensors mostly fit */
#define PAGE_MEMO_PAGE_SHIFT 12
#define PAGE_MEMO_PAGE_BITS 36
#define PAGE_MEMO_GEN_SHIFT (PAGE_MEMO_PAGE_BITS + 2)
#define PAGE_MEMO_GEN_MASK ((1ull << (64 - PAGE_MEMO_GEN_SHIFT)) - 1)

struct page_memo {
    uint64_t generation;
    _Alignas(64) uint64_t slots[PAGE_MEMO_SLOTS]; /* puts do not slow the generation's readers */
};

/* The page number of p, or 0 when p's page cannot be remembered (page 0, above 48 bits). */
static inline uint64_t page_memo_page(uintptr_t p)
{
    uint64_t page = (uint64_t)p >> PAGE_MEMO_PAGE_SHIFT;
    return page >> PAGE_MEMO_PAGE_BITS ? 0 : page;
}

/* Eight neighbouring pages share a cache line of slots (their group's line: the group's low bits
 * folded with its next ones, so that buffers strided by a power of two spread over the memo; a
 * multiplicative hash took 20 bytes more of a small copy's code): a loop over small tensors
 * allocated one after another finds the next page's answer on the line the last copy read. With
 * one slot per page hashed on its own, each such copy missed the cache once per memo (a small
 * pageable copy asks two): 1000 x 4 KB pageable tensors .to("cuda") in PyTorch, both layouts in
 * one process, blocks alternating, took 69 ns (blocking) and 70 ns (non_blocking) more per copy
 * with hashed slots (medians of 6 processes on an H100 instance, 2026-11-27; .item() and pinned
 * copies unchanged). */
#define PAGE_MEMO_GROUP_BITS 3 /* 8 slots of 8 bytes: one 64-byte line */
#define PAGE_MEMO_LINE_BITS 9  /* 4096 slots / 8 */

static inline uint64_t *page_memo_slot(struct page_memo *m, uint64_t page)
{
    uint64_t group = page >> PAGE_MEMO_GROUP_BITS;
    uint64_t line = (group ^ group >> PAGE_MEMO_LINE_BITS) & ((1u << PAGE_MEMO_LINE_BITS) - 1);
    return &m->slots[line << PAGE_MEMO_GROUP_BITS | (page & ((1u << PAGE_MEMO_GROUP_BITS) - 1))];
}
_Static_assert(PAGE_MEMO_SLOTS == 1u << (PAGE_MEMO_GROUP_BITS + PAGE_MEMO_LINE_BITS), "slots = lines x group");

static inline uint64_t page_memo_word(uint64_t page, unsigned answer, uint64_t gen)
{
    return page | (uint64_t)(answer & 3u) << PAGE_MEMO_PAGE_BITS | (gen & PAGE_MEMO_GEN_MASK) << PAGE_MEMO_GEN_SHIFT;
}

/* The answer remembered for the page holding p in generation gen, or -1. */
static inline int page_memo_get(struct page_memo *m, uintptr_t p, uint64_t gen)
{
    uint64_t page = page_memo_page(p);
    if (!page)
        return -1;
    uint64_t word = __atomic_load_n(page_memo_slot(m, page), __ATOMIC_RELAXED);
    if ((word & ((1ull << PAGE_MEMO_PAGE_BITS) - 1)) != page ||
        word >> PAGE_MEMO_GEN_SHIFT != (gen & PAGE_MEMO_GEN_MASK))
        return -1;
    return (int)(word >> PAGE_MEMO_PAGE_BITS & 3u);
}

/* Whether the page holding p is remembered with this answer in generation gen: page_memo_get() ==
 * answer as one test of the whole slot, for a caller that asks after one answer only, on a path
 * where each branch may be cold. No slot holds page 0 nor a page past 48 bits: (page - 1) >> 36 is
 * not 0 for those but page 1 << 36, whose word's low 36 bits are 0, which no stored word's are. */
static inline int page_memo_holds(struct page_memo *m, uintptr_t p, uint64_t gen, unsigned answer)
{
    uint64_t page = (uint64_t)p >> PAGE_MEMO_PAGE_SHIFT;
    uint64_t word = __atomic_load_n(page_memo_slot(m, page), __ATOMIC_RELAXED);
    return ((word ^ page_memo_word(page, answer, gen)) | (page - 1) >> PAGE_MEMO_PAGE_BITS) == 0;
}

/* Remembers answer for the page holding p, computed in generation gen. */
static inline void page_memo_put(struct page_memo *m, uintptr_t p, uint64_t gen, unsigned answer)
{
    uint64_t page = page_memo_page(p);
    if (page)
        __atomic_store_n(page_memo_slot(m, page), page_memo_word(page, answer, gen), __ATOMIC_RELAXED);
}

/* The generation, to compare with or to tag an answer with. */
static inline uint64_t page_memo_generation(struct page_memo *m)
{
    return __atomic_load_n(&m->generation, __ATOMIC_ACQUIRE);
}

/* page_memo_raise() for a memo whose generation is kept in a word elsewhere (on a line its readers
 * read anyway), passed to get and put by the caller; the memo's own generation is then unused. */
static inline void page_memo_raise_word(struct page_memo *m, uint64_t *generation)
{
    if (__atomic_add_fetch(generation, 1, __ATOMIC_RELEASE) & PAGE_MEMO_GEN_MASK)
        return;
    for (unsigned i = 0; i < PAGE_MEMO_SLOTS; i++)
        __atomic_store_n(&m->slots[i], 0, __ATOMIC_RELAXED); /* page 0 is never remembered */
}

/* What the memo was derived from changed: every slot becomes stale; at each wrap of the
 * generation's low bits, forget everything. */
static inline void page_memo_raise(struct page_memo *m)
{
    page_memo_raise_word(m, &m->generation);
}

/* The first and one-past-last byte of the page holding p. */
static inline void page_memo_bounds(uintptr_t p, uintptr_t *lo, uintptr_t *hi)
{
    *lo = p & ~(((uintptr_t)1 << PAGE_MEMO_PAGE_SHIFT) - 1);
    *hi = *lo + ((uintptr_t)1 << PAGE_MEMO_PAGE_SHIFT);
}

#endif
