/* pool.c: pinned chunk pool (see pool.h). Free chunks wait in a FIFO list, oldest release first,
 * so the chunk most likely to have finished its DMA is looked at first. */
#define _GNU_SOURCE
#include "pool.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "common.h"
#include "policy.h"
#include "real.h"

#define POOL_MIN_CHUNK (64u << 10)

struct driver_fns {
    CUresult (*host_alloc)(void **, size_t, unsigned int);
    CUresult (*event_create)(CUevent *, unsigned int);
    CUresult (*event_destroy)(CUevent);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*event_query)(CUevent);
    CUresult (*event_sync)(CUevent);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t chunk_returned = PTHREAD_COND_INITIALIZER;
static struct pool_chunk *free_head, *free_tail;
static struct driver_fns fns;
static bool resolved, broken, growing;
static uint64_t total_bytes, in_use_bytes, max_bytes;
static struct pool_stats stats;

static bool resolve(void)
{
    if (resolved)
        return !broken;
    fns.host_alloc = (CUresult(*)(void **, size_t, unsigned int))real_driver_symbol("cuMemHostAlloc");
    fns.event_create = (CUresult(*)(CUevent *, unsigned int))real_driver_symbol("cuEventCreate");
    fns.event_destroy = (CUresult(*)(CUevent))real_driver_symbol("cuEventDestroy_v2");
    fns.event_record = (CUresult(*)(CUevent, CUstream))real_driver_symbol("cuEventRecord");
    fns.event_query = (CUresult(*)(CUevent))real_driver_symbol("cuEventQuery");
    fns.event_sync = (CUresult(*)(CUevent))real_driver_symbol("cuEventSynchronize");
    fns.ctx_get_current = (CUresult(*)(CUcontext *))real_driver_symbol("cuCtxGetCurrent");
    fns.ctx_set_current = (CUresult(*)(CUcontext))real_driver_symbol("cuCtxSetCurrent");
    resolved = true;
    if (!fns.host_alloc || !fns.event_create || !fns.event_destroy || !fns.event_record || !fns.event_query ||
        !fns.event_sync || !fns.ctx_get_current || !fns.ctx_set_current) {
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

/* Allocates one slab and adds its chunks to the free list. Called with the lock held; drops it
 * around cuMemHostAlloc. Returns false when the driver refused. */
static bool grow(void)
{
    size_t chunk = pool_chunk_bytes();
    uint64_t slab = pinshim_policy.pool_slab_bytes;
    slab = (slab + chunk - 1) / chunk * chunk;
    if (slab < chunk)
        slab = chunk;
    if (total_bytes + slab > max_bytes)
        slab = (max_bytes - total_bytes) / chunk * chunk;
    if (slab == 0)
        return false;
    size_t n = slab / chunk;
    struct pool_chunk *chunks = calloc(n, sizeof *chunks);
    if (!chunks)
        return false;
    growing = true;
    pthread_mutex_unlock(&lock);
    void *mem = NULL;
    pinshim_enter();
    CUresult r = fns.host_alloc(&mem, slab, CU_MEMHOSTALLOC_PORTABLE);
    pinshim_leave();
    pthread_mutex_lock(&lock);
    growing = false;
    pthread_cond_broadcast(&chunk_returned);
    if (r != CUDA_SUCCESS) {
        free(chunks);
        if (total_bytes == 0) {
            broken = true;
            pinshim_warn("warning: pinned memory for staging was refused (cuMemHostAlloc of %llu bytes returned %d); "
                         "pageable copies pass through unchanged", (unsigned long long)slab, (int)r);
        } else {
            max_bytes = total_bytes; /* work within what we have */
        }
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        chunks[i].ptr = (char *)mem + i * chunk;
        chunks[i].bytes = chunk;
        push_free(&chunks[i]);
    }
    total_bytes += slab;
    stats.pool_bytes = total_bytes;
    return true;
}

/* Background growth: cuMemHostAlloc takes milliseconds (35 ms for 64 MiB on the H200), so by
 * default no copy waits for it. A thread allocates the slab in the requesting thread's context;
 * meanwhile copies pass through (first slab) or wait for chunks in flight (later slabs). */
static void *grow_thread(void *arg)
{
    pinshim_enter(); /* the shim's own driver calls: never counted, never re-wrapped */
    fns.ctx_set_current((CUcontext)arg);
    pthread_mutex_lock(&lock);
    grow();
    growing = false; /* also when grow() gave up early */
    pthread_cond_broadcast(&chunk_returned);
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* Starts a grow thread (caller holds the lock). False when it cannot: the caller grows inline. */
static bool grow_in_background(void)
{
    CUcontext ctx = NULL;
    if (fns.ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx)
        return false;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_t t;
    growing = true;
    int r = pthread_create(&t, &attr, grow_thread, ctx);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (r != 0)
        growing = false;
    return r == 0;
}

bool pool_warming(void)
{
    pthread_mutex_lock(&lock);
    bool warming = growing && total_bytes == 0;
    pthread_mutex_unlock(&lock);
    return warming;
}

/* The event of c in the current context, created on first need. */
static CUresult chunk_event(struct pool_chunk *c)
{
    CUcontext ctx = NULL;
    CUresult r = fns.ctx_get_current(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (c->event && c->event_ctx == ctx)
        return CUDA_SUCCESS;
    if (c->event)
        fns.event_destroy(c->event);
    c->event = NULL;
    r = fns.event_create(&c->event, CU_EVENT_DISABLE_TIMING);
    c->event_ctx = r == CUDA_SUCCESS ? ctx : NULL;
    return r;
}

CUresult pool_record(struct pool_chunk *c, CUstream stream)
{
    pinshim_enter();
    CUresult r = chunk_event(c);
    if (r == CUDA_SUCCESS)
        r = fns.event_record(c->event, stream);
    pinshim_leave();
    c->pending = r == CUDA_SUCCESS;
    return r;
}

CUresult pool_wait(struct pool_chunk *c)
{
    if (!c->pending)
        return CUDA_SUCCESS;
    uint64_t t0 = pinshim_now_ns();
    pinshim_enter();
    CUresult r = fns.event_sync(c->event);
    pinshim_leave();
    __atomic_fetch_add(&stats.wait_ns, pinshim_now_ns() - t0, __ATOMIC_RELAXED);
    if (r == CUDA_SUCCESS)
        c->pending = false;
    return r;
}

static bool chunk_idle(struct pool_chunk *c)
{
    if (!c->pending)
        return true;
    pinshim_enter();
    CUresult r = fns.event_query(c->event);
    pinshim_leave();
    if (r == CUDA_SUCCESS)
        c->pending = false;
    return !c->pending;
}

static struct pool_chunk *take(struct pool_chunk *c, struct pool_chunk *prev, bool reused)
{
    pop_free(c, prev);
    in_use_bytes += c->bytes;
    if (in_use_bytes > stats.high_water_bytes)
        stats.high_water_bytes = in_use_bytes;
    stats.acquires++;
    if (reused)
        stats.chunk_reuses++;
    return c;
}

struct pool_chunk *pool_acquire(bool wait)
{
    pthread_mutex_lock(&lock);
    if (!resolve()) {
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    for (;;) {
        if (broken) {
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        struct pool_chunk *prev = NULL;
        for (struct pool_chunk *c = free_head; c; prev = c, c = c->next)
            if (chunk_idle(c)) {
                bool reused = c->event != NULL;
                c = take(c, prev, reused);
                pthread_mutex_unlock(&lock);
                return c;
            }
        if (!growing && total_bytes < max_bytes) {
            if (pinshim_policy.pool_grow_inline || !grow_in_background()) {
                if (grow())
                    continue;
            }
        }
        if (broken || (total_bytes == 0 && !(growing && pinshim_policy.pool_grow_inline))) {
            /* refused, nothing will ever come back, or the first slab is still being allocated in
             * the background: this copy passes through rather than wait milliseconds (inline
             * growth by another thread is waited for below) */
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        if (!wait) {
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        if (free_head) {
            /* At the cap: wait for the oldest chunk in flight, outside the lock. */
            struct pool_chunk *oldest = pop_free(free_head, NULL);
            pthread_mutex_unlock(&lock);
            uint64_t t0 = pinshim_now_ns();
            pinshim_enter();
            CUresult r = fns.event_sync(oldest->event);
            pinshim_leave();
            pthread_mutex_lock(&lock);
            stats.wait_ns += pinshim_now_ns() - t0;
            oldest->pending = r != CUDA_SUCCESS && oldest->pending;
            if (r == CUDA_SUCCESS) {
                /* it is ours now */
                push_free(oldest);
                continue;
            }
            push_free(oldest); /* the event failed (a sticky error): let the driver report it */
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        uint64_t t0 = pinshim_now_ns();
        pthread_cond_wait(&chunk_returned, &lock); /* every chunk is held by another stager */
        stats.wait_ns += pinshim_now_ns() - t0;
    }
}

static void give_back(struct pool_chunk *c)
{
    pthread_mutex_lock(&lock);
    in_use_bytes -= c->bytes;
    push_free(c);
    pthread_cond_broadcast(&chunk_returned);
    pthread_mutex_unlock(&lock);
}

void pool_release_after(struct pool_chunk *c, CUstream stream)
{
    if (pool_record(c, stream) != CUDA_SUCCESS) {
        /* No event: we cannot tell when the DMA ends, so wait for the stream before reuse. */
        CUresult (*stream_sync)(CUstream) = (CUresult(*)(CUstream))real_driver_symbol("cuStreamSynchronize");
        pinshim_enter();
        if (stream_sync)
            stream_sync(stream);
        pinshim_leave();
        c->pending = false;
    }
    give_back(c);
}

void pool_release_idle(struct pool_chunk *c)
{
    c->pending = false;
    give_back(c);
}

void pool_get_stats(struct pool_stats *out)
{
    pthread_mutex_lock(&lock);
    *out = stats;
    out->pool_bytes = total_bytes;
    pthread_mutex_unlock(&lock);
}

void pool_forget(void)
{
    pthread_mutex_t fresh_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
    lock = fresh_lock;
    chunk_returned = fresh_cond;
    free_head = free_tail = NULL;
    total_bytes = in_use_bytes = 0;
    broken = true; /* the child never stages: no CUDA calls in a forked child */
    resolved = true;
}
