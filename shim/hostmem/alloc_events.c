/* alloc_events.c: the subscriber list, the watched-bases filter and publishing (see
 * alloc_events.h). The list changes only while no other thread publishes, so publishing reads it
 * without a lock. */
#include "alloc_events.h"

#include <errno.h>
#include <string.h>

size_t alloc_events_min_bytes = SIZE_MAX;
_Alignas(64) uint16_t alloc_events_filter[ALLOC_EVENTS_FILTER_SLOTS]; /* how many watched bases hash to each slot */

static const struct alloc_subscriber *subscribers[ALLOC_EVENTS_MAX_SUBSCRIBERS];
static unsigned subscriber_count;
static bool allocations_paused;

static void update_min_bytes(void)
{
    size_t min = SIZE_MAX;
    unsigned listening = __atomic_load_n(&allocations_paused, __ATOMIC_RELAXED) ? 0 : subscriber_count;
    for (unsigned i = 0; i < listening; i++)
        if (subscribers[i]->min_bytes < min)
            min = subscribers[i]->min_bytes;
    __atomic_store_n(&alloc_events_min_bytes, min, __ATOMIC_RELEASE);
}

bool alloc_events_subscribe(const struct alloc_subscriber *s)
{
    if (subscriber_count == ALLOC_EVENTS_MAX_SUBSCRIBERS)
        return false;
    subscribers[subscriber_count++] = s;
    update_min_bytes();
    return true;
}

void alloc_events_unsubscribe(const struct alloc_subscriber *s)
{
    unsigned out = 0;
    for (unsigned i = 0; i < subscriber_count; i++)
        if (subscribers[i] != s)
            subscribers[out++] = subscribers[i];
    subscriber_count = out;
    update_min_bytes();
}

void alloc_events_pause_allocations(bool paused)
{
    __atomic_store_n(&allocations_paused, paused, __ATOMIC_RELAXED);
    update_min_bytes();
}

/* --- the watched bases --- */

static void filter_add(uintptr_t p, int delta)
{
    uint16_t *slot = &alloc_events_filter[alloc_events_slot(p)];
    uint16_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (delta > 0 && v == UINT16_MAX)
        return; /* saturated: stays "maybe" for good, which is only slower */
    if (delta < 0 && (v == 0 || v == UINT16_MAX))
        return;
    __atomic_store_n(slot, (uint16_t)(v + delta), __ATOMIC_RELAXED);
}

void alloc_events_watch(uintptr_t p) { filter_add(p, +1); }
void alloc_events_unwatch(uintptr_t p) { filter_add(p, -1); }

void alloc_events_unwatch_all(void) { memset(alloc_events_filter, 0, sizeof alloc_events_filter); }

/* --- publishing --- */

/* Calls `call` for every subscriber s that has `fn`, errno kept as the program left it. */
#define PUBLISH(fn, call)                                                                              \
    do {                                                                                               \
        int saved_errno_ = errno;                                                                      \
        for (unsigned i_ = 0; i_ < subscriber_count; i_++) {                                           \
            const struct alloc_subscriber *s = subscribers[i_];                                        \
            if (s->fn)                                                                                 \
                call;                                                                                  \
        }                                                                                              \
        errno = saved_errno_;                                                                          \
    } while (0)

void alloc_events_allocated(uintptr_t base, size_t size, enum alloc_origin origin)
{
    PUBLISH(allocated, if (size >= s->min_bytes) s->allocated(base, size, origin));
}

void alloc_events_freeing(uintptr_t base) { PUBLISH(freeing, s->freeing(base)); }

void alloc_events_releasing(uintptr_t base) { PUBLISH(releasing, s->releasing(base)); }

void alloc_events_unmapping(uintptr_t lo, uintptr_t hi) { PUBLISH(unmapping, s->unmapping(lo, hi)); }

unsigned alloc_events_moving(uintptr_t old_base)
{
    unsigned mask = 0;
    int saved_errno = errno;
    for (unsigned i = 0; i < subscriber_count; i++)
        if (subscribers[i]->moving && subscribers[i]->moving(old_base))
            mask |= 1u << i;
    errno = saved_errno;
    return mask;
}

void alloc_events_moved(unsigned mask, uintptr_t base, size_t size)
{
    if (!mask)
        return;
    int saved_errno = errno;
    for (unsigned i = 0; i < subscriber_count; i++)
        if ((mask & (1u << i)) && subscribers[i]->moved && size >= subscribers[i]->min_bytes)
            subscribers[i]->moved(base, size);
    errno = saved_errno;
}

void alloc_events_discarding(uintptr_t lo, uintptr_t hi) { PUBLISH(discarding, s->discarding(lo, hi)); }
