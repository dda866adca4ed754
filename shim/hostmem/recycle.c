/* recycle.c: the reserve of freed allocations' blocks (see recycle.h). The reserve is a list of
 * regions, each a run of whole 2 MiB blocks at 2 MiB-aligned addresses of the shim's own (huge
 * pages move as whole page-table entries only between such addresses), oldest first; copies take
 * from the newest, the cap and the age give back the oldest. A thread of its own (started at the
 * first arming, signals blocked) gives back what ages while nobody frees or copies. */
#define _GNU_SOURCE
#include "recycle.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc_events.h"
#include "alloc_table.h"
#include "base/common.h"
#include "hugepage.h"
#include "policy.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4 /* Linux 5.7 */
#endif

#define BLOCK HUGEPAGE_BYTES
#define MAX_REGIONS 256

struct region {
    uintptr_t lo, hi; /* whole blocks; copies take from lo */
    uint64_t kept_ns; /* when it was kept */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t aging = PTHREAD_COND_INITIALIZER; /* the trimming thread waits on it */
static struct region regions[MAX_REGIONS]; /* oldest first */
static unsigned n_regions;
static bool enabled;     /* by the policy (the constructor), then off if arming fails (atomic; set under mu) */
static int armed;        /* the kernel can move pages so and the trimming thread runs (atomic; set under mu) */
static uint64_t wanted;  /* bytes staged D2H copies were to write in whole blocks, not yet kept (atomic) */
static uint64_t max_bytes, keep_ns;
/* written under mu, read without it by the summary */
static uint64_t kept, filled, released, held, high;

static uintptr_t block_up(uintptr_t p) { return (p + BLOCK - 1) & ~(BLOCK - 1); }
static uintptr_t block_down(uintptr_t p) { return p & ~(BLOCK - 1); }

static void add(uint64_t *counter, uint64_t n) { __atomic_store_n(counter, *counter + n, __ATOMIC_RELAXED); }

static bool sys_mremap_to(uintptr_t from, size_t len, uintptr_t to, int extra_flags)
{
    long r = syscall(SYS_mremap, from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED | extra_flags, to);
    return r != -1;
}

static void sys_munmap(uintptr_t lo, size_t len) { syscall(SYS_munmap, lo, len); }

/* Whether mremap can move pages and leave the old range mapped (MREMAP_DONTUNMAP, Linux 5.7). */
static bool kernel_keeps_old_range(void)
{
    long page = sysconf(_SC_PAGESIZE);
    long a = syscall(SYS_mmap, NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == -1)
        return false;
    bool keeps = sys_mremap_to((uintptr_t)a, (size_t)page, (uintptr_t)a + (uintptr_t)page, MREMAP_DONTUNMAP);
    sys_munmap((uintptr_t)a, 2 * (size_t)page);
    return keeps;
}

/* Gives back the oldest regions: those kept longer than keep_ns, then as many as needed for
 * `incoming` more bytes to fit under the cap. Under mu. */
static void release_old_locked(size_t incoming)
{
    uint64_t now = pinshim_now_ns();
    unsigned drop = 0;
    uint64_t bytes = held;
    while (drop < n_regions &&
           (now - regions[drop].kept_ns > keep_ns || bytes + incoming > max_bytes || n_regions - drop == MAX_REGIONS)) {
        sys_munmap(regions[drop].lo, regions[drop].hi - regions[drop].lo);
        bytes -= regions[drop].hi - regions[drop].lo;
        drop++;
    }
    if (!drop)
        return;
    memmove(regions, regions + drop, (n_regions - drop) * sizeof regions[0]);
    n_regions -= drop;
    add(&released, held - bytes);
    __atomic_store_n(&held, bytes, __ATOMIC_RELAXED);
}

static void add_region_locked(uintptr_t lo, uintptr_t hi)
{
    if (!n_regions)
        pthread_cond_signal(&aging); /* the oldest region to wait for */
    regions[n_regions++] = (struct region){lo, hi, pinshim_now_ns()};
    add(&kept, hi - lo);
    add(&held, hi - lo);
    if (held > high)
        __atomic_store_n(&high, held, __ATOMIC_RELAXED);
}

/* Moves the blocks [lo, hi) of a freed allocation to `at` (a placeholder mapping of ours as long),
 * in as few calls as its mappings allow: mremap moves only within one mapping, and blocks moved
 * into it by earlier copies are mappings of their own. What moved becomes regions; the placeholder
 * is unmapped where a block would not move. Under mu. */
static void move_in_locked(uintptr_t lo, uintptr_t hi, uintptr_t at)
{
    uintptr_t cur = lo;
    while (cur < hi && n_regions < MAX_REGIONS) {
        size_t len = hi - cur;
        while (len >= BLOCK && !sys_mremap_to(cur, len, at + (cur - lo), MREMAP_DONTUNMAP))
            len = len > BLOCK && errno == EFAULT ? block_up(len / 2) : 0;
        if (len == 0 && errno != EFAULT)
            break; /* out of memory or mappings: keep nothing more */
        if (len == 0) { /* this block spans two mappings */
            sys_munmap(at + (cur - lo), BLOCK);
            cur += BLOCK;
            continue;
        }
        /* the reserve is advised huge pages, as every destination it fills is */
        syscall(SYS_madvise, at + (cur - lo), len, MADV_HUGEPAGE);
        add_region_locked(at + (cur - lo), at + (cur - lo) + len);
        cur += len;
    }
    if (cur < hi)
        sys_munmap(at + (cur - lo), hi - cur);
}

/* What staged D2H copies asked for: `add` bytes more (capped at max_bytes), or `sub` fewer. */
static void want(uint64_t add, uint64_t sub)
{
    uint64_t w = __atomic_load_n(&wanted, __ATOMIC_RELAXED), next;
    do {
        next = w + add > max_bytes ? max_bytes : w + add;
        next = next > sub ? next - sub : 0;
    } while (!__atomic_compare_exchange_n(&wanted, &w, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

/* free(base): keeps the whole blocks of a tracked allocation that no registration holds, while
 * staged D2H copies have wanted more than was kept (a program whose frees feed no fresh
 * destinations pays for one allocation's move, then nothing). */
static void on_freeing(uintptr_t base)
{
    if (!__atomic_load_n(&wanted, __ATOMIC_RELAXED) || !alloc_table_maybe_base(base) || alloc_table_held())
        return;
    uintptr_t lo = 0, hi = 0;
    alloc_table_lock();
    struct alloc_rec *r = alloc_table_find_base(base);
    if (r && (r->state == REG_NONE || r->state == REG_REFUSED) && !r->busy)
        lo = block_up(r->base), hi = block_down(r->base + r->size);
    alloc_table_unlock();
    if (hi <= lo || hi - lo > max_bytes)
        return;
    pthread_mutex_lock(&mu);
    release_old_locked(hi - lo);
    /* a 2 MiB-aligned place of our own: the placeholder's slack either side goes back at once */
    long place = syscall(SYS_mmap, NULL, hi - lo + BLOCK, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (place != -1) {
        uintptr_t at = block_up((uintptr_t)place), end = (uintptr_t)place + (hi - lo) + BLOCK;
        if (at > (uintptr_t)place)
            sys_munmap((uintptr_t)place, at - (uintptr_t)place);
        if (end > at + (hi - lo))
            sys_munmap(at + (hi - lo), end - (at + (hi - lo)));
        uint64_t before = kept;
        move_in_locked(lo, hi, at);
        want(0, kept - before);
    }
    pthread_mutex_unlock(&mu);
}

static struct alloc_subscriber subscriber = {
    .min_bytes = SIZE_MAX, /* hears no allocations: frees of the bases the cache tracks only */
    .freeing = on_freeing,
};

const struct alloc_subscriber *recycle_configure(void)
{
    const struct policy *p = &pinshim_policy;
    enabled = p->intercept && p->stage && p->stage_recycle && p->pin_on_reuse; /* the table tracks allocations */
    if (!enabled)
        return NULL;
    max_bytes = p->stage_recycle_max_bytes;
    if (!max_bytes) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        max_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 16 : (1ull << 30);
        if (max_bytes > (1ull << 30))
            max_bytes = 1ull << 30;
    }
    keep_ns = (uint64_t)p->stage_recycle_keep_ms * 1000000ull;
    return &subscriber;
}

/* The trimming thread: sleeps until the oldest region is keep_ns old, gives back what aged. */
static void *trimmer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        if (!n_regions) {
            pthread_cond_wait(&aging, &mu);
            continue;
        }
        uint64_t due = regions[0].kept_ns + keep_ns, now = pinshim_now_ns();
        if (now > due)
            release_old_locked(0);
        else
            pinshim_cond_wait_ns(&aging, &mu, due - now + 1);
    }
    return NULL;
}

bool recycle_wanted(void *p, size_t n)
{
    if (!__atomic_load_n(&enabled, __ATOMIC_RELAXED) || block_down((uintptr_t)p + n) <= block_up((uintptr_t)p))
        return false;
    alloc_table_lock();
    struct alloc_rec *r = alloc_table_containing((uintptr_t)p);
    bool from_malloc = r && r->origin == ORIGIN_MALLOC;
    alloc_table_unlock();
    if (!from_malloc)
        return false;
    if (!__atomic_load_n(&armed, __ATOMIC_RELAXED)) { /* the first such copy arms, once */
        pthread_mutex_lock(&mu);
        if (!armed && enabled) {
            /* without the trimming thread nothing is kept: a reserve nobody trims could outlive
             * the program's need by hours */
            if (kernel_keeps_old_range() && pinshim_start_thread("pinshim-recycle", trimmer_main, NULL, NULL) == 0)
                __atomic_store_n(&armed, 1, __ATOMIC_RELAXED);
            else
                __atomic_store_n(&enabled, false, __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&mu);
    }
    return __atomic_load_n(&armed, __ATOMIC_RELAXED);
}

/* Whether p's page is resident: 1 yes, 0 no, -1 not mapped at all (then nothing is moved there). */
static int resident(uintptr_t p)
{
    unsigned char v = 0;
    return syscall(SYS_mincore, p, (size_t)1, &v) != 0 ? -1 : (v & 1);
}

size_t recycle_fill(void *p, size_t n)
{
    uintptr_t lo = block_up((uintptr_t)p), hi = block_down((uintptr_t)p + n);
    if (hi <= lo)
        return 0;
    want(hi - lo, 0); /* the next frees keep as much */
    if (!__atomic_load_n(&held, __ATOMIC_RELAXED))
        return 0;
    int saved_errno = errno;
    size_t moved = 0;
    pthread_mutex_lock(&mu);
    release_old_locked(0);
    for (uintptr_t b = lo; b < hi && n_regions;) {
        uintptr_t e = b; /* [b, e): blocks whose first page is mapped, not resident */
        int at_e = 0;
        while (e < hi && (at_e = resident(e)) == 0)
            e += BLOCK;
        while (b < e && n_regions) { /* from the newest region, in its order (the pieces may merge) */
            struct region *r = &regions[n_regions - 1];
            size_t len = e - b < r->hi - r->lo ? e - b : r->hi - r->lo;
            if (!sys_mremap_to(r->lo, len, b, 0))
                goto out; /* the destination keeps its own pages (faulted in by the copy) */
            r->lo += len;
            if (r->lo == r->hi)
                n_regions--;
            __atomic_store_n(&held, held - len, __ATOMIC_RELAXED);
            add(&filled, len);
            moved += len;
            b += len;
        }
        if (at_e < 0)
            break; /* e is not mapped at all */
        b = e + BLOCK; /* e is resident (or the end) */
    }
out:
    pthread_mutex_unlock(&mu);
    errno = saved_errno;
    return moved;
}

void recycle_get_stats(struct recycle_stats *out)
{
    out->kept_bytes = __atomic_load_n(&kept, __ATOMIC_RELAXED);
    out->filled_bytes = __atomic_load_n(&filled, __ATOMIC_RELAXED);
    out->released_bytes = __atomic_load_n(&released, __ATOMIC_RELAXED);
    out->reserve_bytes = __atomic_load_n(&held, __ATOMIC_RELAXED);
    out->high_water_bytes = __atomic_load_n(&high, __ATOMIC_RELAXED);
}

void recycle_fork_prepare(void) { pthread_mutex_lock(&mu); }
void recycle_fork_parent(void) { pthread_mutex_unlock(&mu); }

void recycle_fork_child(void)
{
    for (unsigned i = 0; i < n_regions; i++) /* the parent's pages, shared until either writes */
        sys_munmap(regions[i].lo, regions[i].hi - regions[i].lo);
    n_regions = 0;
    held = 0;
    armed = 0;
    wanted = 0;
    __atomic_store_n(&enabled, false, __ATOMIC_RELAXED); /* never armed again: no trimming thread here */
    pthread_mutex_unlock(&mu);
}
