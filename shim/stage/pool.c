/* pool.c: pinned chunk pool (see pool.h). Free chunks wait in a FIFO list, oldest release first,
 * so the chunk most likely to have finished its DMA is looked at first. */
#define _GNU_SOURCE
#include "pool.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/queue.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/common.h"
#include "base/real.h"
#include "hostmem/alloc_next.h"
#include "linkprobe.h"
#include "policy.h"
#include "workers.h"

#define POOL_MIN_CHUNK (64u << 10)
#define POOL_MAX_DEVICES 64

struct driver_fns {
    CUresult (*host_alloc)(void **, size_t, unsigned int);
    CUresult (*host_register)(void *, size_t, unsigned int);
    CUresult (*host_unregister)(void *);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*event_query)(CUevent);
    CUresult (*event_sync)(CUevent);
    CUresult (*stream_sync)(CUstream);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_get_device)(CUdevice *);
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t chunk_returned = PTHREAD_COND_INITIALIZER;
static struct pool_chunk *free_head, *free_tail;
static struct driver_fns fns;
static bool resolved, broken, growing;
/* The device whose primary context the shim is using outside the lock (pinning a slab, timing the
 * link), or -1: a reset of that device waits until it is done (lock held to read or write). */
static int pinning_dev = -1, probing_dev = -1;
/* One allocation of pinned memory, cut into chunks. */
struct slab {
    void *base;
    size_t bytes;
    bool registered;     /* the shim's own mapping, registered; else cuMemHostAlloc'd */
    unsigned alive;      /* its chunks not dropped by a device reset */
    struct pool_chunk chunks[];
};
/* Copies waiting for their first chunk, oldest first (nodes on their stack; under the lock). */
struct waiter {
    STAILQ_ENTRY(waiter) link;
};
static STAILQ_HEAD(waiter_queue, waiter) waiters = STAILQ_HEAD_INITIALIZER(waiters);
static uint64_t total_bytes, in_use_bytes, max_bytes; /* total_bytes also read without the lock */
static CUcontext primary[POOL_MAX_DEVICES];             /* retained by the shim, never released */
static unsigned generation[POOL_MAX_DEVICES];           /* bumped when a device's primary is reset */
static bool probed[POOL_MAX_DEVICES];                    /* linkprobe ran with this device's memory */
static struct pool_stats stats;                        /* atomics: read without the lock */

#define RESOLVE(field, name) fns.field = (__typeof__(fns.field))real_driver_symbol(name)

static bool resolve(void)
{
    if (resolved)
        return !broken;
    RESOLVE(host_alloc, "cuMemHostAlloc");
    RESOLVE(host_register, "cuMemHostRegister_v2");
    RESOLVE(host_unregister, "cuMemHostUnregister");
    RESOLVE(event_record, "cuEventRecord");
    RESOLVE(event_query, "cuEventQuery");
    RESOLVE(event_sync, "cuEventSynchronize");
    RESOLVE(stream_sync, "cuStreamSynchronize");
    RESOLVE(ctx_get_current, "cuCtxGetCurrent");
    RESOLVE(ctx_set_current, "cuCtxSetCurrent");
    RESOLVE(ctx_get_device, "cuCtxGetDevice");
    RESOLVE(ctx_push, "cuCtxPushCurrent_v2");
    RESOLVE(ctx_pop, "cuCtxPopCurrent_v2");
    RESOLVE(primary_retain, "cuDevicePrimaryCtxRetain");
    resolved = true;
    if (!fns.host_alloc || !fns.host_register || !fns.host_unregister ||
        !fns.event_record || !fns.event_query || !fns.event_sync || !fns.stream_sync ||
        !fns.ctx_get_current || !fns.ctx_set_current || !fns.ctx_get_device || !fns.ctx_push || !fns.ctx_pop ||
        !fns.primary_retain) {
        broken = true;
        pinshim_warn("warning: the CUDA driver lacks a function staging needs; pageable copies pass through");
    }
    uint64_t cap = pinshim_policy.pool_max_bytes;
    if (cap == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        cap = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 16 : (256u << 20);
        if (cap > (1u << 30))
            cap = 1u << 30;
    }
    max_bytes = cap < pool_chunk_bytes() ? pool_chunk_bytes() : cap;
    return !broken;
}

size_t pool_chunk_bytes(void)
{
    uint64_t c = pinshim_policy.stage_chunk_bytes;
    return c < POOL_MIN_CHUNK ? POOL_MIN_CHUNK : (size_t)c;
}

bool pool_available(void) { return !__atomic_load_n(&broken, __ATOMIC_RELAXED); }

/* One driver call of the shim's own: depth raised, relaxed capture mode. */
#define SHIM_CALL(result, call)                                                                        \
    do {                                                                                               \
        CUstreamCaptureMode saved_;                                                                    \
        pinshim_enter();                                                                               \
        real_relaxed_begin(&saved_);                                                                   \
        result = (call);                                                                               \
        real_relaxed_end(saved_);                                                                      \
        pinshim_leave();                                                                               \
    } while (0)

static void stat_add(uint64_t *counter, uint64_t v) { __atomic_fetch_add(counter, v, __ATOMIC_RELAXED); }

static void push_free(struct pool_chunk *c)
{
    c->next = NULL;
    if (free_tail)
        free_tail->next = c;
    else
        free_head = c;
    free_tail = c;
}

static struct pool_chunk *pop_free(struct pool_chunk *c, struct pool_chunk *prev)
{
    if (prev)
        prev->next = c->next;
    else
        free_head = c->next;
    if (free_tail == c)
        free_tail = prev;
    c->next = NULL;
    return c;
}

/* The device of the calling thread's current context, or -1. */
static int current_device(void)
{
    CUdevice dev = -1;
    CUresult r;
    SHIM_CALL(r, fns.ctx_get_device(&dev));
    return r == CUDA_SUCCESS && dev >= 0 && dev < POOL_MAX_DEVICES ? dev : -1;
}

/* The shim's retained primary context of dev (retained once, never released). Lock held. */
static CUcontext shim_context(int dev)
{
    if (!primary[dev]) {
        CUresult r;
        SHIM_CALL(r, fns.primary_retain(&primary[dev], dev));
        if (r != CUDA_SUCCESS)
            primary[dev] = NULL;
    }
    return primary[dev];
}

/* The real driver carves pinned allocations under 2 MiB out of shared blocks, and cuMemHostGetFlags
 * then reports the flags of the allocation that opened the block (1 MiB shares, 2 MiB does not:
 * an H100, driver 580; conformance case attrs.host_flags). A smaller slab of cuMemHostAlloc'd
 * memory (PORTABLE) would change what the driver says of the program's own small pinned
 * allocations, so none is allocated smaller than this; a smaller pool_slab_bytes uses only part. */
#define DRIVER_SUBALLOC_BELOW (2u << 20)

/* Pins `bytes` for slab s in the current context. pool_pin=register: the shim's own mapping (huge
 * pages advised, faulted in here, left out of forked children), then cuMemHostRegister, which holds
 * the driver for a fraction of what cuMemHostAlloc does (2 x H200 host, three 64 MiB slabs: 28-40
 * against 112-126 ms in the driver); while the driver pins, other threads' calls wait (two GPUs
 * staging 256 MiB copies at once had rounds at 4-9 GB/s per device instead of 15-40 with
 * cuMemHostAlloc). Falls back to cuMemHostAlloc when the mapping or the registration is refused. */
static CUresult pin_slab(struct slab *s, size_t bytes)
{
    CUresult r;
    uint64_t t0;
    if (pinshim_policy.pool_pin == POOL_PIN_REGISTER && alloc_next_resolve()) {
        void *mem = alloc_next.mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem != MAP_FAILED) {
            alloc_next.madvise(mem, bytes, MADV_HUGEPAGE); /* only where the system's THP mode allows */
            alloc_next.madvise(mem, bytes, MADV_DONTFORK); /* a forked child never stages */
            workers_populate(mem, bytes); /* in parallel: the pool is ready sooner */
            t0 = pinshim_now_ns();
            SHIM_CALL(r, fns.host_register(mem, bytes, CU_MEMHOSTREGISTER_PORTABLE));
            stat_add(&stats.pin_ns, pinshim_now_ns() - t0);
            if (r == CUDA_SUCCESS) {
                s->base = mem, s->bytes = bytes, s->registered = true;
                return r;
            }
            alloc_next.munmap(mem, bytes);
        }
    }
    size_t alloc_bytes = bytes < DRIVER_SUBALLOC_BELOW ? DRIVER_SUBALLOC_BELOW : bytes;
    void *mem = NULL;
    t0 = pinshim_now_ns();
    SHIM_CALL(r, fns.host_alloc(&mem, alloc_bytes, CU_MEMHOSTALLOC_PORTABLE));
    stat_add(&stats.pin_ns, pinshim_now_ns() - t0);
    s->base = mem, s->bytes = alloc_bytes, s->registered = false;
    return r;
}

/* A chunk of a slab whose device was reset leaves the pool; the last one to go frees the slab. Its
 * registration is undone first where the context still holds it (the reset undoes it otherwise);
 * cuMemHostAlloc'd memory the reset itself frees. Lock held. */
static void drop_chunk(struct pool_chunk *c)
{
    struct slab *s = c->slab;
    __atomic_store_n(&total_bytes, total_bytes - c->bytes, __ATOMIC_RELAXED);
    if (--s->alive > 0)
        return;
    if (s->registered) {
        CUresult r;
        SHIM_CALL(r, fns.host_unregister(s->base));
        (void)r; /* already gone with the context: nothing to undo */
        alloc_next.munmap(s->base, s->bytes);
    }
    free(s);
}

/* Pins one slab in dev's primary context and adds its chunks to the free list. Called with the
 * lock held and `growing` set; drops the lock while pinning. `on_own_thread`: the caller is the
 * background grow thread, already current in that context. */
static bool grow(int dev, bool on_own_thread)
{
    size_t chunk = pool_chunk_bytes();
    uint64_t slab = pinshim_policy.pool_slab_bytes;
    slab = (slab + chunk - 1) / chunk * chunk;
    if (slab < chunk)
        slab = chunk;
    if (total_bytes + slab > max_bytes)
        slab = (max_bytes - total_bytes) / chunk * chunk;
    CUcontext ctx = shim_context(dev);
    if (slab == 0 || !ctx)
        return false;
    size_t n = slab / chunk;
    struct slab *s = calloc(1, sizeof *s + n * sizeof s->chunks[0]);
    if (!s)
        return false;
    unsigned gen = generation[dev];
    pinning_dev = dev;
    pthread_mutex_unlock(&lock);
    CUresult r;
    if (on_own_thread) {
        r = pin_slab(s, slab);
    } else {
        CUcontext popped;
        SHIM_CALL(r, fns.ctx_push(ctx));
        if (r == CUDA_SUCCESS) {
            r = pin_slab(s, slab);
            CUresult pop_r;
            SHIM_CALL(pop_r, fns.ctx_pop(&popped));
            (void)pop_r;
        }
    }
    pthread_mutex_lock(&lock);
    pinning_dev = -1;
    pthread_cond_broadcast(&chunk_returned); /* a reset may be waiting */
    if (r != CUDA_SUCCESS) {
        free(s);
        if (total_bytes == 0) {
            broken = true;
            pinshim_warn("warning: pinned memory for staging was refused (%s of %llu bytes returned %d); "
                         "pageable copies pass through unchanged",
                         pinshim_policy.pool_pin == POOL_PIN_REGISTER ? "cuMemHostRegister and cuMemHostAlloc"
                                                                      : "cuMemHostAlloc",
                         (unsigned long long)slab, (int)r);
        } else {
            max_bytes = total_bytes; /* work within what we have */
        }
        return false;
    }
    s->alive = (unsigned)n;
    for (size_t i = 0; i < n; i++) {
        struct pool_chunk *c = &s->chunks[i];
        c->ptr = (char *)s->base + i * chunk;
        c->bytes = chunk;
        c->device = dev;
        c->generation = gen;
        c->slab = s;
        push_free(c);
    }
    __atomic_store_n(&total_bytes, total_bytes + slab, __ATOMIC_RELAXED);
    stat_add(&stats.slabs, 1);
    return true;
}

static void grow_done(void)
{
    growing = false;
    pthread_cond_broadcast(&chunk_returned);
}

static void give_back(struct pool_chunk *c);

/* Times the link with one free chunk of dev's slab, taken out of the free list meanwhile (lock held
 * on entry and on return). */
static void probe_with_one_chunk(int dev)
{
    struct pool_chunk *prev = NULL, *c = free_head;
    while (c && (c->device != dev || c->pending)) {
        prev = c;
        c = c->next;
    }
    if (!c)
        return;
    probed[dev] = true;
    pop_free(c, prev);
    in_use_bytes += c->bytes;
    probing_dev = dev;
    pthread_mutex_unlock(&lock);
    linkprobe_run(dev, c->ptr, c->bytes);
    give_back(c); /* takes the lock */
    pthread_mutex_lock(&lock);
    probing_dev = -1;
    pthread_cond_broadcast(&chunk_returned); /* a reset may be waiting */
}

/* Background growth: cuMemHostAlloc takes milliseconds (35 ms for 64 MiB on the H200), so by
 * default no copy waits for it. Meanwhile copies pass through (first slab) or use what exists. */
static void *grow_thread(void *arg)
{
    int dev = (int)(intptr_t)arg;
    pinshim_enter(); /* the shim's own driver calls: never counted, never re-wrapped */
    pthread_mutex_lock(&lock);
    CUcontext ctx = shim_context(dev);
    bool grew = false;
    if (ctx) {
        CUresult r;
        SHIM_CALL(r, fns.ctx_set_current(ctx));
        if (r == CUDA_SUCCESS)
            grew = grow(dev, true);
    }
    grow_done();
    if (grew && pinshim_policy.link_probe && !probed[dev])
        probe_with_one_chunk(dev); /* unlocks while it runs; staging meanwhile uses the other chunks */
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* Starts a grow thread (lock held). False when it cannot: the caller grows inline. */
static bool grow_in_background(int dev)
{
    growing = true;
    int r = pinshim_start_thread("pinshim-pool", grow_thread, (void *)(intptr_t)dev, NULL);
    if (r != 0)
        growing = false;
    return r == 0;
}

PINSHIM_HOT void pool_prewarm(int dev)
{
    static bool tried;
    /* once per process: later calls cost one plain load (no write to a shared line per copy) */
    if (__atomic_load_n(&tried, __ATOMIC_RELAXED) || __atomic_exchange_n(&tried, true, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&lock);
    if (resolve() && !broken && !growing && total_bytes == 0) {
        if (dev < 0)
            dev = current_device();
        if (dev >= 0 && dev < POOL_MAX_DEVICES)
            grow_in_background(dev); /* cannot start a thread: the first large copy grows as before */
    }
    pthread_mutex_unlock(&lock);
}

/* The event of c in the current context, created on first need (with its device noted). */
static CUresult chunk_event(struct pool_chunk *c)
{
    bool made;
    CUresult r = ctx_event_here(&c->mark, &made);
    if (made && fns.ctx_get_device(&c->event_dev) != CUDA_SUCCESS)
        c->event_dev = -1;
    return r;
}

CUresult pool_record(struct pool_chunk *c, CUstream stream)
{
    CUresult r;
    SHIM_CALL(r, chunk_event(c));
    if (r == CUDA_SUCCESS)
        SHIM_CALL(r, fns.event_record(c->mark.event, stream));
    c->stream = stream;
    c->pending = r == CUDA_SUCCESS;
    if (c->pending)
        return CUDA_SUCCESS;
    /* No event: we cannot tell when the DMA ends, so wait for the stream now. */
    SHIM_CALL(r, fns.stream_sync(stream));
    return r;
}

CUresult pool_wait(struct pool_chunk *c)
{
    if (!c->pending)
        return CUDA_SUCCESS;
    uint64_t t0 = pinshim_now_ns();
    CUresult r;
    SHIM_CALL(r, fns.event_sync(c->mark.event));
    stat_add(&stats.wait_ns, pinshim_now_ns() - t0);
    if (r == CUDA_SUCCESS)
        c->pending = false;
    return r;
}

static bool chunk_idle(struct pool_chunk *c)
{
    if (!c->pending)
        return true;
    CUresult r;
    SHIM_CALL(r, fns.event_query(c->mark.event));
    if (r == CUDA_SUCCESS)
        c->pending = false;
    return !c->pending;
}

static struct pool_chunk *take(struct pool_chunk *c, struct pool_chunk *prev)
{
    pop_free(c, prev);
    in_use_bytes += c->bytes;
    if (in_use_bytes > __atomic_load_n(&stats.high_water_bytes, __ATOMIC_RELAXED))
        __atomic_store_n(&stats.high_water_bytes, in_use_bytes, __ATOMIC_RELAXED);
    stat_add(&stats.acquires, 1);
    if (c->mark.event)
        stat_add(&stats.chunk_reuses, 1);
    return c;
}

/* The oldest free chunk whose DMA is pending on `stream`, or NULL. Lock held. */
static struct pool_chunk *oldest_on(CUstream stream, struct pool_chunk **prev_out)
{
    struct pool_chunk *prev = NULL;
    for (struct pool_chunk *c = free_head; c; prev = c, c = c->next)
        if (c->pending && c->stream == stream) {
            *prev_out = prev;
            return c;
        }
    return NULL;
}

/* The first idle free chunk (and its predecessor), or NULL; *another: a second idle one exists.
 * Lock held. */
static struct pool_chunk *first_idle(struct pool_chunk **prev_out, bool *another)
{
    struct pool_chunk *found = NULL, *prev = NULL;
    *another = false;
    for (struct pool_chunk *c = free_head; c; prev = c, c = c->next) {
        if (!chunk_idle(c))
            continue;
        if (found) {
            *another = true;
            break;
        }
        found = c;
        *prev_out = prev;
    }
    return found;
}

/* Whether every free chunk still behind a DMA is behind one on `stream`, in the current context
 * (and at least one is): the pool is full of this stream's own queue, so the stream's DMA, not the
 * pool's size, holds the copy back, and another slab would only make that queue longer (a fresh
 * 1 GiB PyTorch tensor .to("cuda") grew the pool to three slabs while at most four chunks were in
 * use). The per-thread default stream's handle names another stream on each thread: never. Lock
 * held; after first_idle, which updates the chunks' pending flags. */
static bool only_own_queue(CUstream stream)
{
    if (stream == CU_STREAM_PER_THREAD)
        return false;
    CUcontext ctx = NULL;
    CUresult r;
    SHIM_CALL(r, fns.ctx_get_current(&ctx));
    if (r != CUDA_SUCCESS)
        return false;
    bool any = false;
    for (struct pool_chunk *c = free_head; c; c = c->next) {
        if (!c->pending)
            continue;
        if (c->stream != stream || c->mark.ctx != ctx)
            return false;
        any = true;
    }
    return any;
}

enum growth { GROWTH_NONE, GROWTH_RUNNING, GROWTH_DONE };

/* Grows the pool if it may and is not growing already: in the background (GROWTH_RUNNING), or on
 * this thread when pool_grow_inline is on or no thread can be started (GROWTH_DONE once the new
 * chunks are in; the lock is dropped meanwhile). GROWTH_NONE: at the cap, or no device. Lock held. */
static enum growth grow_if_possible(int *dev)
{
    if (growing)
        return GROWTH_RUNNING;
    if (total_bytes >= max_bytes)
        return GROWTH_NONE;
    if (*dev < 0)
        *dev = current_device();
    if (*dev < 0)
        return GROWTH_NONE;
    if (!pinshim_policy.pool_grow_inline && grow_in_background(*dev))
        return GROWTH_RUNNING;
    growing = true;
    bool grew = grow(*dev, false);
    grow_done();
    return grew ? GROWTH_DONE : GROWTH_NONE;
}

/* Copies waiting for their first chunk look again this often: a chunk whose DMA ends becomes
 * free without any signal. */
#define POOL_POLL_NS 200000u

/* How long a copy that asks to (wait_warming) waits for the first slab being pinned: longer than
 * pinning and faulting in one slab takes, short of a hang where it never comes. */
#define POOL_WARMING_PATIENCE_NS 500000000u

/* Sleeps until a chunk comes back or the pool grows, or POOL_POLL_NS, or deadline_ns (as
 * pinshim_now_ns), whichever is first, counting the time slept (chunk_wait_ns). Lock held. False
 * once the deadline has passed. */
static bool wait_for_return(uint64_t deadline_ns)
{
    uint64_t now = pinshim_now_ns();
    if (now >= deadline_ns)
        return false;
    pinshim_cond_wait_ns(&chunk_returned, &lock, deadline_ns - now < POOL_POLL_NS ? deadline_ns - now : POOL_POLL_NS);
    stat_add(&stats.chunk_wait_ns, pinshim_now_ns() - now);
    return true;
}

/* Leaves acquire(): out of the waiters' queue if in it (the next one is woken to look). Lock held;
 * unlocked on return. */
static struct pool_chunk *leave(struct waiter *me, bool waiting, struct pool_chunk *c, enum pool_miss *why,
                                enum pool_miss reason)
{
    if (waiting) {
        STAILQ_REMOVE(&waiters, me, waiter, link);
        if (!STAILQ_EMPTY(&waiters))
            pthread_cond_broadcast(&chunk_returned);
    }
    *why = c ? POOL_MISS_NONE : reason;
    pthread_mutex_unlock(&lock);
    return c;
}

/* pool_acquire (more = false) and pool_acquire_more (more = true). Copies that wait for a first
 * chunk are served in order and before everyone else: a copy holding chunks takes no more, and a
 * copy arriving later queues behind them, so a thread that stages without pause cannot keep the
 * others out. */
static struct pool_chunk *acquire(CUstream stream, bool more, uint64_t patience_ns, bool wait_warming,
                                  enum pool_miss *why)
{
    struct waiter me;
    bool waiting = false; /* me is in the waiters' queue */
    pthread_mutex_lock(&lock);
    if (!resolve())
        return leave(&me, waiting, NULL, why, POOL_MISS_UNAVAILABLE);
    int dev = -1;
    uint64_t deadline = 0;
    for (;;) {
        if (broken)
            return leave(&me, waiting, NULL, why, POOL_MISS_UNAVAILABLE);
        struct waiter *first_waiter = STAILQ_FIRST(&waiters);
        if (more && first_waiter)
            return leave(&me, waiting, NULL, why, POOL_MISS_BUSY); /* another copy waits for its first chunk */
        struct pool_chunk *prev = NULL;
        bool another;
        struct pool_chunk *c = first_idle(&prev, &another);
        bool behind = !more && first_waiter && first_waiter != &me; /* others were waiting first */
        if (c && !behind && (!more || another))
            return leave(&me, waiting, take(c, prev), why, POOL_MISS_NONE);
        /* nothing to take, or only the last free chunk, which stays for another copy: this copy
         * wants more than the pool has, so grow it (in the background unless pool_grow_inline)
         * while we may. (Without growing on the last free chunk, one thread's copies, whose
         * chunks all come back idle, never found the pool empty: a D2H pipeline ran on one chunk.)
         * A growth slows the copies running meanwhile (the workers fault the slab in, the driver
         * holds other calls while it registers it): the default slab holds one thread's deepest
         * pipeline, so a single thread's first large copy does not grow the pool (keys.h). Nor
         * does a copy whose own stream's queue holds the rest: it waits for that queue instead,
         * as the driver may when it stages pageable memory (conformance: streams.async_behind_gate). */
        if (!only_own_queue(stream) && grow_if_possible(&dev) == GROWTH_DONE)
            continue;
        if (c && more)
            return leave(&me, waiting, NULL, why, POOL_MISS_BUSY);
        if (growing && pinshim_policy.pool_grow_inline) {
            uint64_t t0 = pinshim_now_ns();
            pthread_cond_wait(&chunk_returned, &lock); /* another thread is allocating for us all */
            stat_add(&stats.chunk_wait_ns, pinshim_now_ns() - t0);
            continue;
        }
        if (more)
            return leave(&me, waiting, NULL, why, POOL_MISS_BUSY);
        if (total_bytes == 0 && !(growing && wait_warming))
            return leave(&me, waiting, NULL, why, growing ? POOL_MISS_WARMING : POOL_MISS_UNAVAILABLE);
        if (total_bytes == 0 && !deadline) /* the first slab is being pinned: it ends the wait */
            deadline = pinshim_now_ns() + POOL_WARMING_PATIENCE_NS;
        if (patience_ns == 0)
            return leave(&me, waiting, NULL, why, POOL_MISS_BUSY);
        /* our own stream's last DMA: the driver would wait for it as well (not while others wait:
         * the copies behind us must not wait for our stream) */
        struct pool_chunk *oldest = first_waiter ? NULL : oldest_on(stream, &prev);
        if (oldest) {
            pop_free(oldest, prev);
            pthread_mutex_unlock(&lock);
            CUresult r = pool_wait(oldest);
            pthread_mutex_lock(&lock);
            push_free(oldest);
            if (r != CUDA_SUCCESS)
                return leave(&me, waiting, NULL, why, POOL_MISS_BUSY); /* a sticky error: let the driver report it */
            continue;
        }
        /* Chunks other copies hold come back within a chunk's time (they take no more while we
         * wait), and chunks behind DMAs on other streams are free once those end; but waiting on
         * other streams' work could deadlock (a stream held until this thread acts), so the wait is
         * bounded: then the copy passes through. */
        if (!deadline)
            deadline = pinshim_now_ns() + patience_ns;
        if (!waiting) {
            STAILQ_INSERT_TAIL(&waiters, &me, link);
            waiting = true;
        }
        if (!wait_for_return(deadline))
            return leave(&me, waiting, NULL, why, POOL_MISS_BUSY);
    }
}

struct pool_chunk *pool_acquire(CUstream stream, uint64_t patience_ns, bool wait_warming, enum pool_miss *why)
{
    return acquire(stream, false, patience_ns, wait_warming, why);
}

struct pool_chunk *pool_acquire_more(CUstream stream, enum pool_miss *why)
{
    return acquire(stream, true, 0, false, why);
}

static void give_back(struct pool_chunk *c)
{
    pthread_mutex_lock(&lock);
    in_use_bytes -= c->bytes;
    if (c->generation == generation[c->device])
        push_free(c);
    else
        drop_chunk(c); /* its slab died with a device reset */
    pthread_cond_broadcast(&chunk_returned);
    pthread_mutex_unlock(&lock);
}

void pool_release_after(struct pool_chunk *c, CUstream stream)
{
    pool_record(c, stream); /* records the event, or waits for the stream when it cannot */
    give_back(c);
}

void pool_release_idle(struct pool_chunk *c)
{
    c->pending = false;
    give_back(c);
}

void pool_forget_context(CUcontext ctx, CUdevice dev)
{
    pthread_mutex_lock(&lock);
    for (struct pool_chunk *c = free_head; c; c = c->next) {
        if (!c->mark.event || !(ctx ? c->mark.ctx == ctx : c->event_dev == dev))
            continue;
        CUresult r;
        if (c->pending)
            SHIM_CALL(r, fns.event_sync(c->mark.event));
        SHIM_CALL(r, ctx_event_destroy(&c->mark));
        (void)r; /* nothing to do about it: the context goes either way */
        c->pending = false;
    }
    pthread_mutex_unlock(&lock);
}

void pool_drop_device(CUdevice dev)
{
    if (dev < 0 || dev >= POOL_MAX_DEVICES)
        return;
    pthread_mutex_lock(&lock);
    /* the shim's own work in this device's context ends before the reset: its events and streams
     * would be gone under it (using one then crashes the real driver) */
    while (pinning_dev == dev || probing_dev == dev)
        pthread_cond_wait(&chunk_returned, &lock);
    generation[dev]++;
    struct pool_chunk *prev = NULL, *c = free_head;
    while (c) {
        struct pool_chunk *next = c->next;
        if (c->device == dev) {
            pop_free(c, prev);
            drop_chunk(c);
        } else {
            prev = c;
        }
        c = next;
    }
    pthread_mutex_unlock(&lock);
}

void pool_get_stats(struct pool_stats *out)
{
    out->pool_bytes = __atomic_load_n(&total_bytes, __ATOMIC_RELAXED);
    out->high_water_bytes = __atomic_load_n(&stats.high_water_bytes, __ATOMIC_RELAXED);
    out->chunk_reuses = __atomic_load_n(&stats.chunk_reuses, __ATOMIC_RELAXED);
    out->acquires = __atomic_load_n(&stats.acquires, __ATOMIC_RELAXED);
    out->wait_ns = __atomic_load_n(&stats.wait_ns, __ATOMIC_RELAXED);
    out->chunk_wait_ns = __atomic_load_n(&stats.chunk_wait_ns, __ATOMIC_RELAXED);
    out->slabs = __atomic_load_n(&stats.slabs, __ATOMIC_RELAXED);
    out->pin_ns = __atomic_load_n(&stats.pin_ns, __ATOMIC_RELAXED);
}

void pool_forget(void)
{
    pthread_mutex_t fresh_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
    lock = fresh_lock;
    chunk_returned = fresh_cond;
    free_head = free_tail = NULL;
    total_bytes = in_use_bytes = 0;
    growing = false;
    pinning_dev = probing_dev = -1;
    STAILQ_INIT(&waiters);
    broken = true; /* the child never stages: no CUDA calls in a forked child */
    resolved = true;
}
