/* guard_ranges.c: the guard's slot table (see guard_internal.h): claiming a slot for a copy, taking
 * an active one to release or report it, unprotecting and freeing it, the ranges released lately
 * (a fault that raced a release on another thread finds its range there), and the protection the
 * pages had before they were guarded (/proc/self/maps, cached per mapping). */
#define _GNU_SOURCE
#include "guard_internal.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GUARD_RECENT 64     /* released ranges remembered for faults that raced the release */
#define GUARD_PROT_CACHE 32 /* memory mappings whose protection is known */

int guard_live;
struct guard_slot guard_slots[GUARD_SLOTS];
uint64_t guard_order_counter;

/* Released ranges: a fault that raced a release on another thread finds its range here. */
static struct { uintptr_t lo, hi; } recent[GUARD_RECENT];
static unsigned recent_next;

size_t guard_page_size(void)
{
    static size_t ps;
    if (!ps)
        ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

/* --- slots --- */

/* A free slot whose previous marker has landed (a late marker must not overwrite a newer one). */
int guard_claim_slot(void)
{
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        struct guard_slot *s = &guard_slots[i];
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_FREE || (s->marker && !guard_marker_done(s, i)))
            continue;
        int expected = SLOT_FREE;
        if (__atomic_compare_exchange_n(&s->state, &expected, SLOT_SETUP, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            return (int)i;
    }
    return -1;
}

void guard_unprotect_and_free(struct guard_slot *s)
{
    unsigned r = __atomic_fetch_add(&recent_next, 1, __ATOMIC_RELAXED) % GUARD_RECENT;
    __atomic_store_n(&recent[r].lo, s->lo, __ATOMIC_RELAXED);
    __atomic_store_n(&recent[r].hi, s->hi, __ATOMIC_RELAXED);
    mprotect((void *)s->lo, s->hi - s->lo, s->prot);
    __atomic_sub_fetch(&guard_live, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&s->state, SLOT_FREE, __ATOMIC_RELEASE);
}

bool guard_take(struct guard_slot *s)
{
    int expected = SLOT_ACTIVE;
    return __atomic_compare_exchange_n(&s->state, &expected, SLOT_BUSY, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

bool guard_recently_released(uintptr_t addr)
{
    for (unsigned r = 0; r < GUARD_RECENT; r++)
        if (addr >= __atomic_load_n(&recent[r].lo, __ATOMIC_RELAXED) &&
            addr < __atomic_load_n(&recent[r].hi, __ATOMIC_RELAXED))
            return true;
    return false;
}

/* --- original protection: /proc/self/maps, cached per mapping --- */

struct prot_span {
    uintptr_t lo, hi;
    int prot;
};
static struct prot_span prot_cache[GUARD_PROT_CACHE];
static unsigned prot_cache_next;

static uintptr_t parse_hex(const char **p)
{
    uintptr_t v = 0;
    for (;; (*p)++) {
        char ch = **p;
        if (ch >= '0' && ch <= '9')
            v = v * 16 + (uintptr_t)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            v = v * 16 + (uintptr_t)(ch - 'a' + 10);
        else
            return v;
    }
}

/* The protection of [lo, hi) from /proc/self/maps: -1 when it is not mapped or mixed. */
static int maps_prot(uintptr_t lo, uintptr_t hi)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[8192];
    size_t have = 0;
    int prot = -1;
    uintptr_t covered = lo;
    bool done = false;
    while (!done) {
        ssize_t got = read(fd, buf + have, sizeof buf - 1 - have);
        if (got <= 0)
            break;
        have += (size_t)got;
        buf[have] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            const char *p = line;
            uintptr_t a = parse_hex(&p);
            p++;
            uintptr_t b = parse_hex(&p);
            p++;
            int pr = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) | (p[2] == 'x' ? PROT_EXEC : 0);
            line = nl + 1;
            if (b <= covered || a >= hi)
                continue;
            if (a > covered || (prot >= 0 && pr != prot)) { /* a hole or a different protection */
                prot = -1;
                done = true;
                break;
            }
            prot = pr;
            prot_cache[prot_cache_next++ % GUARD_PROT_CACHE] = (struct prot_span){a, b, pr};
            covered = b;
            if (covered >= hi) {
                done = true;
                break;
            }
        }
        have = (size_t)(buf + have - line);
        memmove(buf, line, have);
        if (have == sizeof buf - 1) /* a line longer than the buffer: give up */
            break;
    }
    close(fd);
    return covered >= hi ? prot : -1;
}

/* Pages another slot protects have that slot's original protection. */
int guard_original_prot(uintptr_t lo, uintptr_t hi)
{
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        int st = __atomic_load_n(&guard_slots[i].state, __ATOMIC_ACQUIRE);
        if ((st == SLOT_ACTIVE || st == SLOT_BUSY) && guard_slots[i].lo < hi && lo < guard_slots[i].hi)
            return guard_slots[i].prot;
    }
    for (unsigned i = 0; i < GUARD_PROT_CACHE; i++)
        if (prot_cache[i].lo <= lo && hi <= prot_cache[i].hi)
            return prot_cache[i].prot;
    return maps_prot(lo, hi);
}

void guard_prot_forget(void) { memset(prot_cache, 0, sizeof prot_cache); }

void guard_ranges_fork_child(void)
{
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        struct guard_slot *s = &guard_slots[i];
        if (s->state == SLOT_ACTIVE || s->state == SLOT_BUSY)
            mprotect((void *)s->lo, s->hi - s->lo, s->prot);
        s->state = SLOT_FREE;
    }
    guard_live = 0;
}
