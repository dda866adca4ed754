/* page_memo_check.c: shim/base/page_memo.h (included here) through random puts, gets and raises:
 * page_memo_holds(m, p, gen, a) answers exactly page_memo_get(m, p, gen) == a, for remembered and
 * forgotten pages, stale generations, every answer, page 0, page 1 << 36 (whose word's low 36
 * bits are 0, as no remembered page's are), and addresses past 48 bits (which are never
 * remembered, even when their low 36 page bits are a remembered page's); and get answers what the
 * last put of that page's slot left, in its generation, or -1. Prints "page_memo: N checks as the
 * model" or the first difference and exits 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../shim/base/page_memo.h"

static struct page_memo memo;
static uint64_t generation = 1; /* the memo's owner keeps it elsewhere (page_memo_raise_word) */

/* The model: what was last put into each slot (page, answer, generation), or nothing. */
static struct { uint64_t page; unsigned answer; uint64_t gen; int set; } model[PAGE_MEMO_SLOTS];

static uint64_t rnd(void) { return ((uint64_t)rand() << 31) ^ (uint64_t)rand(); }

static uintptr_t some_address(void)
{
    switch (rnd() % 9) {
    case 0: return (uintptr_t)(rnd() % 4096);                            /* page 0 */
    case 1: return (uintptr_t)(rnd() | 1ull << 52) << 4;                 /* past 48 bits */
    case 2: return (uintptr_t)(1ull << 48) + rnd() % 4096;               /* page 1 << 36: low bits 0 */
    default: return (uintptr_t)(0x7f0000000000ull + (rnd() % 20000) * 4096 + rnd() % 4096);
    }
}

static int model_get(uintptr_t p, uint64_t gen)
{
    uint64_t page = (uint64_t)p >> PAGE_MEMO_PAGE_SHIFT;
    if (!page || page >> PAGE_MEMO_PAGE_BITS)
        return -1;
    size_t slot = (size_t)(page_memo_slot(&memo, page) - memo.slots);
    if (!model[slot].set || model[slot].page != page ||
        (model[slot].gen & PAGE_MEMO_GEN_MASK) != (gen & PAGE_MEMO_GEN_MASK))
        return -1;
    return (int)model[slot].answer;
}

int main(void)
{
    srand(12);
    long checks = 0;
    for (int step = 0; step < 200000; step++) {
        uintptr_t p = some_address();
        unsigned what = (unsigned)(rnd() % 10);
        if (what < 4) {
            unsigned answer = (unsigned)(rnd() % 4);
            page_memo_put(&memo, p, generation, answer);
            uint64_t page = (uint64_t)p >> PAGE_MEMO_PAGE_SHIFT;
            if (page && !(page >> PAGE_MEMO_PAGE_BITS)) {
                size_t slot = (size_t)(page_memo_slot(&memo, page) - memo.slots);
                model[slot].page = page;
                model[slot].answer = answer;
                model[slot].gen = generation;
                model[slot].set = 1;
            }
        } else if (what == 4 && rnd() % 50 == 0) {
            page_memo_raise_word(&memo, &generation);
        }
        uint64_t gen = rnd() % 8 ? generation : generation - 1; /* now and then a stale one */
        int want = model_get(p, gen), got = page_memo_get(&memo, p, gen);
        if (got != want) {
            printf("page_memo: step %d: get of %#lx in generation %lu gave %d, the model %d\n", step,
                   (unsigned long)p, (unsigned long)gen, got, want);
            return 1;
        }
        for (unsigned a = 0; a < 4; a++, checks++)
            if (page_memo_holds(&memo, p, gen, a) != (want == (int)a)) {
                printf("page_memo: step %d: holds(%#lx, generation %lu, answer %u) said %d, get says %d\n", step,
                       (unsigned long)p, (unsigned long)gen, a, page_memo_holds(&memo, p, gen, a), want);
                return 1;
            }
        /* the same low page bits past 48 bits: never remembered */
        uintptr_t high = p | (uintptr_t)1 << 50;
        for (unsigned a = 0; a < 4; a++, checks++)
            if (page_memo_holds(&memo, high, gen, a) || page_memo_get(&memo, high, gen) != -1) {
                printf("page_memo: step %d: %#lx (past 48 bits) found remembered\n", step, (unsigned long)high);
                return 1;
            }
        checks++;
    }
    printf("page_memo: %ld checks as the model\n", checks);
    return 0;
}
