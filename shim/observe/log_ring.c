/* log_ring.c: the ring the log's records travel through (see log_internal.h): a bounded
 * multi-producer single-consumer queue with one turn counter per slot, as in D. Vyukov's bounded
 * queue, mapped at the first copy. The "consumer" is whoever holds the consumer lock: the writer,
 * the exit path, or the signal-time flush; it is a spin flag, not a mutex, because the signal
 * handler takes it too. */
#define _GNU_SOURCE
#include "log_internal.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "base/common.h"
#include "policy.h"

struct slot {
    uint64_t turn; /* stored as (turn - slot index), so a zero-filled ring is an empty one */
    struct log_rec rec;
};

static struct slot *ring;
static size_t ring_bytes;
static uint64_t ring_mask, ring_cap;
static uint64_t head, tail;
static uint64_t dropped;
static int consumer_busy;

void log_ring_map(void)
{
    uint64_t cap = pinshim_policy.log_buffer_bytes / sizeof(struct slot);
    if (pinshim_policy.log_level != LOG_LEVEL_TRANSFERS || !cap)
        return;
    ring_cap = 1;
    while (ring_cap * 2 <= cap)
        ring_cap *= 2;
    ring_bytes = ring_cap * sizeof(struct slot);
    void *p = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
        ring = p;
        ring_mask = ring_cap - 1;
    } else {
        pinshim_warn("warning: PINSHIM_LOG: cannot map %zu bytes for the record buffer: %s; transfer "
                     "records are dropped", ring_bytes, strerror(errno));
    }
}

bool log_ring_put(const struct log_rec *r, bool *half_full)
{
    *half_full = false;
    if (!ring)
        return false;
    uint64_t pos = __atomic_load_n(&head, __ATOMIC_RELAXED);
    struct slot *s;
    for (;;) {
        s = &ring[pos & ring_mask];
        uint64_t turn = __atomic_load_n(&s->turn, __ATOMIC_ACQUIRE) + (pos & ring_mask);
        int64_t diff = (int64_t)(turn - pos);
        if (diff == 0) {
            if (__atomic_compare_exchange_n(&head, &pos, pos + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                break;
        } else if (diff < 0) {
            return false; /* full */
        } else {
            pos = __atomic_load_n(&head, __ATOMIC_RELAXED);
        }
    }
    s->rec = *r;
    __atomic_store_n(&s->turn, pos + 1 - (pos & ring_mask), __ATOMIC_RELEASE);
    uint64_t used = pos + 1 - __atomic_load_n(&tail, __ATOMIC_RELAXED);
    *half_full = used >= ring_cap / 2;
    return true;
}

void log_ring_drop(void) { __atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED); }

uint64_t log_ring_lost(void)
{
    uint64_t left = __atomic_load_n(&head, __ATOMIC_RELAXED) - tail; /* left in the ring */
    return __atomic_load_n(&dropped, __ATOMIC_RELAXED) + left;
}

bool log_ring_take(struct log_rec *out)
{
    if (!ring)
        return false;
    uint64_t pos = tail;
    struct slot *s = &ring[pos & ring_mask];
    uint64_t turn = __atomic_load_n(&s->turn, __ATOMIC_ACQUIRE) + (pos & ring_mask);
    if (turn != pos + 1)
        return false;
    *out = s->rec;
    __atomic_store_n(&s->turn, pos + ring_cap - (pos & ring_mask), __ATOMIC_RELEASE);
    __atomic_store_n(&tail, pos + 1, __ATOMIC_RELAXED);
    return true;
}

void log_consumer_lock(void)
{
    while (__atomic_exchange_n(&consumer_busy, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}

bool log_consumer_lock_within(int wait_ms)
{
    for (int waited = 0; __atomic_exchange_n(&consumer_busy, 1, __ATOMIC_ACQUIRE); waited++) {
        if (waited >= wait_ms)
            return false;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return true;
}

void log_consumer_unlock(void) { __atomic_store_n(&consumer_busy, 0, __ATOMIC_RELEASE); }

void log_ring_fork_child(void)
{
    if (ring)
        munmap(ring, ring_bytes);
    ring = NULL;
    ring_bytes = 0;
    ring_cap = ring_mask = 0;
    head = tail = dropped = 0;
    consumer_busy = 0;
}
