/* tally.c: the threads' copies of the counters (see tally.h). The copies sit in a fixed table of
 * slots; a slot's memory, once mapped, stays for good, so readers walk the table without a lock. */
#define _GNU_SOURCE
#include "tally.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#define TALLY_SLOTS 256
#define TALLY_EXITING ((char *)1)

extern char __stop_pinshim_tally[] __attribute__((visibility("hidden")));

/* At least one counter always exists, so the section (and its bounds) does. */
static uint64_t tally_anchor TALLY;

struct slot {
    char *mem;
    int taken;
};
static struct slot slots[TALLY_SLOTS];
/* Slots [0, slots_mapped) may have memory: readers walk no further (a summary reads some 50,000
 * counters; walking all 256 slots for each took 5 ms at every exit). Raised after a slot's memory
 * is published; never lowered (the memory stays). */
static unsigned slots_mapped;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static int exit_key_ok;

static size_t section_bytes(void) { return (size_t)(__stop_pinshim_tally - __start_pinshim_tally); }

/* Thread exit: the copy goes back to the table, counts and all; later adds go to the shared one. */
static void on_thread_exit(void *arg)
{
    struct slot *s = arg;
    pinshim_thread.tally_mine = TALLY_EXITING;
    __atomic_store_n(&s->taken, 0, __ATOMIC_RELEASE);
}

static void make_exit_key(void) { exit_key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0; }

char *tally_claim(void)
{
    (void)tally_anchor;
    if (pinshim_thread.tally_mine == TALLY_EXITING)
        return NULL;
    pthread_once(&exit_key_once, make_exit_key);
    if (!exit_key_ok)
        return NULL;
    for (unsigned i = 0; i < TALLY_SLOTS; i++) {
        struct slot *s = &slots[i];
        int free_slot = 0;
        if (__atomic_load_n(&s->taken, __ATOMIC_RELAXED) ||
            !__atomic_compare_exchange_n(&s->taken, &free_slot, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        char *mem = __atomic_load_n(&s->mem, __ATOMIC_RELAXED);
        if (!mem) {
            void *p = mmap(NULL, section_bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) {
                __atomic_store_n(&s->taken, 0, __ATOMIC_RELEASE);
                return NULL;
            }
            mem = p;
            __atomic_store_n(&s->mem, mem, __ATOMIC_RELEASE); /* readers may sum it from now on */
            unsigned seen = __atomic_load_n(&slots_mapped, __ATOMIC_RELAXED);
            while (seen < i + 1 &&
                   !__atomic_compare_exchange_n(&slots_mapped, &seen, i + 1, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
                ;
        }
        if (pthread_setspecific(exit_key, s) != 0) {
            __atomic_store_n(&s->taken, 0, __ATOMIC_RELEASE);
            return NULL;
        }
        pinshim_thread.tally_mine = mem;
        return mem;
    }
    return NULL;
}

/* The calling thread's copy of counter, claimed now if need be; NULL when it cannot have one. */
static uint64_t *copy_of(uint64_t *counter)
{
    char *mine = (uintptr_t)pinshim_thread.tally_mine <= 1 ? tally_claim() : pinshim_thread.tally_mine;
    return mine ? (uint64_t *)(mine + ((char *)counter - __start_pinshim_tally)) : NULL;
}

static void add_to(uint64_t *here, uint64_t *counter, uint64_t v)
{
    if (here)
        tally_plain_add(here, v);
    else
        __atomic_fetch_add(counter, v, __ATOMIC_RELAXED);
}

void tally_add_first(uint64_t *counter, uint64_t v) { add_to(copy_of(counter), counter, v); }

void tally_add3_first(uint64_t *counters, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t *here = copy_of(counters);
    add_to(here, &counters[0], a);
    add_to(here ? here + 1 : NULL, &counters[1], b);
    add_to(here ? here + 2 : NULL, &counters[2], c);
}

uint64_t tally_get(const uint64_t *counter)
{
    size_t off = (size_t)((const char *)counter - __start_pinshim_tally);
    uint64_t sum = __atomic_load_n(counter, __ATOMIC_RELAXED);
    unsigned mapped = __atomic_load_n(&slots_mapped, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < mapped; i++) {
        const char *mem = __atomic_load_n(&slots[i].mem, __ATOMIC_ACQUIRE);
        if (mem)
            sum += __atomic_load_n((const uint64_t *)(mem + off), __ATOMIC_RELAXED);
    }
    return sum;
}

void tally_zero(void *counters, size_t bytes)
{
    size_t off = (size_t)((char *)counters - __start_pinshim_tally);
    memset(counters, 0, bytes);
    for (unsigned i = 0; i < slots_mapped; i++) {
        if (!slots[i].mem)
            continue;
        memset(slots[i].mem + off, 0, bytes);
        slots[i].taken = slots[i].mem == pinshim_thread.tally_mine; /* no other thread exists here */
    }
}
