/* thread.h: the calling thread's words that a wrapped call reads and writes, together in one
 * cache-line-aligned block of initial-exec TLS (one instruction to address). Declared one by one,
 * the linker spread them over three lines of the thread's TLS, each a miss where the program's own
 * work evicts the shim between calls. Each layer keeps its own fields' meaning (named below); base
 * only holds them.
 * Contract: a thread reads and writes its own block only; async-signal-safe to touch (plain TLS). */
#ifndef PINSHIM_THREAD_H
#define PINSHIM_THREAD_H

#include <stdint.h>

struct pinshim_thread {
    int depth;             /* > 0: the shim is calling the driver itself (common.h) */
    uint32_t sample_state; /* the one-in-N draws' xorshift state (clock.h) */
    uint32_t short_waits;  /* the thread's run of short synchronizes (clock.h) */
    uint32_t sample_left;  /* calls until the next timed one, this one included; 0: none drawn (clock.h) */
    uintptr_t caller;      /* the return address of the wrapper call being handled (common.h) */
    char *tally_mine;      /* the thread's copy of the counters (tally.h) */
    struct pinshim_kind_hit { /* the last range hostmem/memkind.c found, valid in its generation */
        uint64_t generation;
        uintptr_t base, end;
        int kind;
    } kind_hit;
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct pinshim_thread) == 64, "one cache line");

extern __thread struct pinshim_thread pinshim_thread __attribute__((tls_model("initial-exec")));

#endif
