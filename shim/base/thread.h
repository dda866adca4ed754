/* thread.h: the calling thread's words that a wrapped call reads and writes, in one block of
 * initial-exec TLS (one instruction to address), aligned to a pair of cache lines. Declared one by
 * one, the linker spread them over three lines of the thread's TLS, each a miss where the program's
 * own work evicts the shim between calls. The first line holds what every wrapped call reads; the
 * second what only a small pageable copy reads (its pair is fetched with the first line on a miss
 * where the CPU prefetches line pairs). Each layer keeps its own fields' meaning (named below);
 * base only holds them.
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
    /* the second line */
    struct pinshim_plain_run { /* the pages hostmem/plain_pages.c last found plain, valid in its generation */
        uint64_t generation;
        uintptr_t base, end;
    } _Alignas(64) plain_run;
} __attribute__((aligned(128)));
_Static_assert(__builtin_offsetof(struct pinshim_thread, plain_run) == 64, "every call's words on the first line");
_Static_assert(sizeof(struct pinshim_thread) == 128, "two cache lines");

extern __thread struct pinshim_thread pinshim_thread __attribute__((tls_model("initial-exec")));

#endif
