/* tally.h: counters that every thread adds to in its own copy. A shared counter costs a locked
 * read-modify-write per add (about 5 ns each, ten of them on a copy and its sync) and bounces its
 * cache line between threads that copy at once; here an add is a plain load and store into memory
 * no other thread writes, and a read sums the copies.
 * A counter is any uint64_t (or array or struct of them) defined with TALLY: all of them lie in one
 * linker section, and a thread's copy is a block of the section's size at the same offsets,
 * claimed at the thread's first add and handed to the next thread when it exits (the sums stay
 * right: a copy's counts belong to no thread in particular). When no copy can be had (all taken,
 * no memory, a thread past its exit), adds go to the shared definition, atomically.
 * Contract: tally_add and tally_add3 are thread-safe; the first add on a thread may allocate (mmap)
 * and register a thread-exit destructor, so they are not async-signal-safe. tally_get is lock-free and
 * async-signal-safe; it may miss adds in flight on other threads. tally_zero only with one thread
 * alive (a forked child). */
#ifndef PINSHIM_TALLY_H
#define PINSHIM_TALLY_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define TALLY __attribute__((section("pinshim_tally")))

extern char __start_pinshim_tally[] __attribute__((visibility("hidden")));

/* The calling thread's copy, claimed now if it has none; NULL when it cannot have one. */
char *tally_claim(void);

/* tally_add and tally_add3 on a thread that has no copy yet, or cannot have one: claim it, or add
 * atomically to the shared definition. Out of line, so that the common path saves no registers. */
void tally_add_first(uint64_t *counter, uint64_t v);
void tally_add3_first(uint64_t *counters, uint64_t a, uint64_t b, uint64_t c);

/* Adds v to a counter only this thread writes. On x86-64 one instruction (an add to memory, where
 * the atomic load and store were three, 11 bytes more of code on the copy's path); its aligned
 * 8-byte store is still one whole store to the readers' relaxed loads. */
static inline void tally_plain_add(uint64_t *c, uint64_t v)
{
#if defined(__x86_64__)
    __asm__ volatile("addq %1, %0" : "+m"(*c) : "er"(v));
#else
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
#endif
}

/* Adds a, b and c to counters[0], [1] and [2] (a count, its bytes and its time), finding the
 * thread's copy once. */
static inline void tally_add3(uint64_t *counters, uint64_t a, uint64_t b, uint64_t c)
{
    char *mine = pinshim_thread.tally_mine;
    if (PINSHIM_UNLIKELY((uintptr_t)mine <= 1)) { /* none yet (NULL), or exiting (1) */
        tally_add3_first(counters, a, b, c);
        return;
    }
    uint64_t *here = (uint64_t *)(mine + ((char *)counters - __start_pinshim_tally));
    tally_plain_add(&here[0], a);
    tally_plain_add(&here[1], b);
    tally_plain_add(&here[2], c);
}

/* Adds v to one counter. */
static inline void tally_add(uint64_t *counter, uint64_t v)
{
    char *mine = pinshim_thread.tally_mine;
    if (PINSHIM_UNLIKELY((uintptr_t)mine <= 1)) {
        tally_add_first(counter, v);
        return;
    }
    tally_plain_add((uint64_t *)(mine + ((char *)counter - __start_pinshim_tally)), v);
}

/* The counter's total over the shared definition and every thread's copy. */
uint64_t tally_get(const uint64_t *counter);

/* Zeroes [counters, counters + bytes) in the shared definition and in every copy; the calling
 * thread keeps its copy, the others' are freed for new threads. Forked child only. */
void tally_zero(void *counters, size_t bytes);

#endif
