/* hostops.c: the fuzzer's host memory: every way a program gets, reshapes, registers and gives back
 * host memory (malloc family, anonymous mmap, cuMemHostAlloc, its own cuMemHostRegister), kept
 * inside a byte budget. New bytes are always written (or known zero) before anything reads them,
 * and the CPU touches pinned or registered memory only after its copies are synchronized. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

static const char *const kind_name[HK_COUNT] = {"malloc", "calloc", "posix_memalign", "aligned_alloc", "mmap",
                                                "cuMemHostAlloc", "cuMemAllocHost"};

static int heap_kind(enum hkind k)
{
    return k <= HK_ALIGNED;
}

int host_pinned(const struct hbuf *b)
{
    return b->kind == HK_HOSTALLOC || b->kind == HK_ALLOCHOST || b->reg_p != NULL;
}

/* A random live buffer that `ok` accepts (NULL: any), or NULL. */
static struct hbuf *pick_where(int (*ok)(const struct hbuf *))
{
    int seen = 0;
    struct hbuf *chosen = NULL;
    for (int i = 0; i < FZ_MAX_HOST; i++)
        if (F.h[i].live && (!ok || ok(&F.h[i])) && rnd((size_t)++seen) == 0)
            chosen = &F.h[i]; /* reservoir sampling: each candidate equally likely */
    return chosen;
}

struct hbuf *pick_host(void)
{
    if (chance(70)) { /* the buffers used last, again: that is what pin-on-reuse looks for */
        int k = (int)rnd(4);
        if (F.hot[k] > 0 && F.h[F.hot[k] - 1].live)
            return &F.h[F.hot[k] - 1];
    }
    return pick_where(NULL);
}

void touch_host(struct hbuf *b)
{
    int idx = (int)(b - F.h) + 1, k = 0;
    while (k < 3 && F.hot[k] != idx)
        k++;
    memmove(&F.hot[1], &F.hot[0], (size_t)k * sizeof F.hot[0]);
    F.hot[0] = idx;
}

/* FUZZ_DEBUG: where a buffer lies, on stderr (addresses never go to stdout). */
static void debug_where(const struct hbuf *b, const char *what)
{
    if (F.debug)
        fprintf(stderr, "%ld h%d %s [%p, %p) n=%zu\n", F.op, b->id, what, (void *)b->p, (void *)(b->p + b->n), b->n);
}

static unsigned char *map_anon(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void unregister_own(struct hbuf *b)
{
    if (!b->reg_p)
        return;
    settle_host(b);
    said(F.d.host_unregister(b->reg_p), "unregister h%d", b->id);
    b->reg_p = NULL;
}

void host_release(struct hbuf *b)
{
    debug_where(b, "release");
    settle_host(b);
    unregister_own(b);
    if (heap_kind(b->kind)) {
        free(b->block);
        say("free h%d", b->id);
    } else if (b->kind == HK_MMAP) {
        say("munmap h%d -> %d", b->id, munmap(b->p, b->n));
    } else {
        said(F.d.free_host(b->p), "free_host h%d", b->id);
    }
    F.host_bytes -= b->n;
    b->live = 0;
    for (int k = 0; k < 4; k++)
        if (F.hot[k] == (int)(b - F.h) + 1)
            F.hot[k] = 0;
}

void host_release_all(void)
{
    for (int i = 0; i < FZ_MAX_HOST; i++)
        if (F.h[i].live)
            host_release(&F.h[i]);
}

/* Frees random buffers until `n` more bytes fit the budget and a table row is free. */
static struct hbuf *make_room(size_t n)
{
    for (;;) {
        struct hbuf *row = NULL;
        for (int i = 0; i < FZ_MAX_HOST && !row; i++)
            if (!F.h[i].live)
                row = &F.h[i];
        if (row && F.host_bytes + n <= F.host_budget)
            return row;
        struct hbuf *victim = pick_where(NULL);
        if (!victim)
            return row;
        host_release(victim);
    }
}

/* Sizes a program uses: tiny, odd, page multiples, tensor-like, and large up to 64 MiB. */
static size_t random_size(void)
{
    int r = (int)rnd(100);
    if (r < 12)
        return rnd_range(1, 4096);
    if (r < 35)
        return rnd_range(4097, FZ_MiB);
    if (r < 55)
        return rnd_range(1, 512) * FZ_PAGE;
    if (r < 70) {
        static const size_t tensors[] = {4000000, 4 * FZ_MiB, 1000000, 16 * FZ_MiB, 8 * FZ_MiB + 4096};
        return tensors[rnd(sizeof tensors / sizeof *tensors)];
    }
    size_t n = rnd_range(FZ_MiB, 64 * FZ_MiB);
    return chance(50) ? n : (n + FZ_PAGE - 1) / FZ_PAGE * FZ_PAGE;
}

/* With --isolate, a heap block gets a page (or its alignment) of padding before the program's bytes
 * and a page after: no two allocations' bytes then share a page, so no registration of one reaches
 * the other's copies (issue #10). Sets b->pad; returns the padding to add to the request. */
static size_t isolation_pad(struct hbuf *b, size_t align)
{
    if (!F.isolate || !heap_kind(b->kind))
        return 0;
    b->pad = align > FZ_PAGE ? align : FZ_PAGE;
    return b->pad + FZ_PAGE;
}

static enum hkind random_kind(void)
{
    static const int weight[HK_COUNT] = {30, 10, 14, 10, 16, 12, 8};
    int r = (int)rnd(100);
    enum hkind k = HK_MALLOC;
    while (r >= weight[k])
        r -= weight[k++];
    return k;
}

void op_alloc(void)
{
    enum hkind kind = random_kind();
    size_t n = random_size(), align = 0;
    if (kind == HK_HOSTALLOC || kind == HK_ALLOCHOST) /* cuMemHostAlloc is slow: smaller ones */
        n = n > 16 * FZ_MiB ? rnd_range(1, 16 * FZ_MiB) : n;
    if (kind == HK_MMAP)
        n = (n + FZ_PAGE - 1) / FZ_PAGE * FZ_PAGE;
    if (kind == HK_MEMALIGN)
        align = (size_t)1 << rnd_range(3, 16);
    if (kind == HK_ALIGNED) {
        static const size_t aligns[] = {16, 64, FZ_PAGE};
        align = aligns[rnd(3)];
        n = (n + align - 1) / align * align;
    }
    struct hbuf *b = make_room(n);
    if (!b)
        return;
    memset(b, 0, sizeof *b);
    b->id = F.next_id++;
    b->n = n;
    b->kind = kind;
    void *p = NULL;
    unsigned int flags = 0;
    size_t whole = n + isolation_pad(b, align);
    switch (kind) {
    case HK_MALLOC: p = malloc(whole); break;
    case HK_CALLOC: p = calloc(1, whole); break;
    case HK_MEMALIGN:
        if (posix_memalign(&p, align, whole) != 0)
            p = NULL;
        break;
    case HK_ALIGNED: p = aligned_alloc(align, whole); break;
    case HK_MMAP: p = map_anon(n); break;
    case HK_HOSTALLOC:
        flags = (unsigned int)rnd(4) & (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
        if (said(F.d.host_alloc(&p, n, flags), "host_alloc h%d n=%zu flags=%u", b->id, n, flags))
            p = NULL;
        break;
    case HK_ALLOCHOST:
        if (said(F.d.alloc_host(&p, n), "alloc_host h%d n=%zu", b->id, n))
            p = NULL;
        break;
    default: break;
    }
    if (kind != HK_HOSTALLOC && kind != HK_ALLOCHOST)
        say("%s h%d n=%zu align=%zu%s", kind_name[kind], b->id, n, align, p ? "" : " failed");
    if (!p)
        return;
    b->block = p;
    b->p = b->block + b->pad;
    p = b->p;
    b->live = 1;
    b->owns_pages = kind == HK_MMAP || (align >= FZ_PAGE && n % FZ_PAGE == 0);
    F.host_bytes += n;
    debug_where(b, kind_name[kind]);
    if (kind != HK_CALLOC && kind != HK_MMAP) /* those two are zero; the rest is unwritten */
        fz_fill(p, n, rnd64());
    touch_host(b);
}

void op_free(void)
{
    struct hbuf *b = chance(50) ? pick_host() : pick_where(NULL);
    if (b)
        host_release(b);
}

static int is_heap(const struct hbuf *b)
{
    return heap_kind(b->kind);
}

void op_realloc(void)
{
    struct hbuf *b = pick_where(is_heap);
    if (!b)
        return;
    size_t n = random_size();
    if (F.host_bytes - b->n + n > F.host_budget)
        n = rnd_range(1, b->n);
    unregister_own(b);
    unsigned char *block = realloc(b->block, n + (F.isolate ? b->pad + FZ_PAGE : 0));
    say("realloc h%d n=%zu->%zu%s", b->id, b->n, n, block ? "" : " failed");
    if (!block)
        return;
    unsigned char *p = block + b->pad;
    b->block = block;
    if (n > b->n)
        fz_fill(p + b->n, n - b->n, rnd64());
    F.host_bytes = F.host_bytes - b->n + n;
    b->p = p;
    b->n = n;
    b->kind = HK_MALLOC;
    b->owns_pages = 0;
    debug_where(b, "realloc");
    touch_host(b);
}

static int is_map(const struct hbuf *b)
{
    return b->kind == HK_MMAP;
}

/* munmap of a page range inside a mapping: what is left on either side stays the program's. */
void op_munmap_part(void)
{
    struct hbuf *b = pick_where(is_map);
    if (!b)
        return;
    size_t pages = b->n / FZ_PAGE, lo = rnd(pages), hi = rnd_range(lo + 1, pages);
    if (lo == 0 && hi == pages) {
        host_release(b);
        return;
    }
    unregister_own(b);
    int r = munmap(b->p + lo * FZ_PAGE, (hi - lo) * FZ_PAGE);
    say("munmap h%d pages [%zu,%zu) of %zu -> %d%s%s", b->id, lo, hi, pages, r, r ? " " : "", r ? strerror(errno) : "");
    if (r != 0)
        return;
    unsigned char *tail = b->p + hi * FZ_PAGE;
    size_t tail_n = (pages - hi) * FZ_PAGE;
    F.host_bytes -= (hi - lo) * FZ_PAGE;
    if (lo == 0) { /* only the tail is left */
        b->p = tail;
        b->n = tail_n;
        debug_where(b, "munmap head");
        return;
    }
    b->n = lo * FZ_PAGE;
    debug_where(b, "munmap tail");
    if (!tail_n)
        return;
    struct hbuf *t = NULL;
    for (int i = 0; i < FZ_MAX_HOST && !t; i++)
        if (!F.h[i].live)
            t = &F.h[i];
    if (!t) { /* no row for the tail: give it back too */
        say("munmap h%d tail -> %d", b->id, munmap(tail, tail_n));
        F.host_bytes -= tail_n;
        return;
    }
    *t = *b;
    t->id = F.next_id++;
    t->p = tail;
    t->n = tail_n;
    say("tail of h%d is h%d", b->id, t->id);
    debug_where(t, "tail");
}

void op_mremap(void)
{
    struct hbuf *b = pick_where(is_map);
    if (!b)
        return;
    size_t n = rnd_range(1, 64 * FZ_MiB / FZ_PAGE) * FZ_PAGE;
    if (F.host_bytes - b->n + n > F.host_budget)
        n = rnd_range(1, b->n / FZ_PAGE) * FZ_PAGE;
    unregister_own(b);
    void *p = mremap(b->p, b->n, n, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) {
        say("mremap h%d n=%zu->%zu failed: %s", b->id, b->n, n, strerror(errno));
        return;
    }
    say("mremap h%d n=%zu->%zu", b->id, b->n, n);
    F.host_bytes = F.host_bytes - b->n + n; /* pages past the old end are new zero pages */
    b->p = p;
    b->n = n;
    debug_where(b, "mremap");
    touch_host(b);
}

static int discardable(const struct hbuf *b)
{
    return b->owns_pages && !host_pinned(b) && b->n >= FZ_PAGE;
}

/* madvise(MADV_DONTNEED) of whole pages the buffer owns: they read back as zero. */
void op_madvise(void)
{
    struct hbuf *b = pick_where(discardable);
    if (!b)
        return;
    size_t pages = b->n / FZ_PAGE, lo = rnd(pages), hi = chance(40) ? pages : rnd_range(lo + 1, pages);
    int r = madvise(b->p + lo * FZ_PAGE, (hi - lo) * FZ_PAGE, MADV_DONTNEED);
    say("madvise h%d pages [%zu,%zu) of %zu dontneed -> %d%s%s", b->id, lo, hi, pages, r, r ? " " : "",
        r ? strerror(errno) : "");
    touch_host(b);
}

/* A range [off, off + len) of an n-byte buffer, len <= max_len: whole, tiny, any, or nearly whole,
 * starting at 0, running to the end (where a registered neighbour's copies break), or anywhere. */
void pick_range(size_t n, size_t max_len, size_t *off, size_t *len)
{
    size_t cap = n < max_len ? n : max_len, l;
    int r = (int)rnd(100);
    if (r < 20)
        l = cap;
    else if (r < 40)
        l = rnd_range(1, cap < 256 ? cap : 256);
    else if (r < 70)
        l = rnd_range(1, cap);
    else
        l = cap > 8192 ? cap - rnd(8192) : rnd_range(1, cap);
    r = (int)rnd(100);
    *len = l;
    *off = r < 30 ? 0 : r < 60 ? n - l : rnd(n - l + 1);
}

void op_fill(void)
{
    struct hbuf *b = pick_host();
    if (!b)
        return;
    size_t off, len;
    pick_range(b->n, b->n, &off, &len);
    settle_host(b);
    fz_fill(b->p + off, len, rnd64());
    say("fill h%d [%zu,+%zu]", b->id, off, len);
    touch_host(b);
}

void op_check(void)
{
    struct hbuf *b = pick_host();
    if (!b)
        return;
    size_t off, len;
    pick_range(b->n, b->n, &off, &len);
    settle_host(b);
    read_back("h", b->id, b->p, off, len);
}

static int registrable(const struct hbuf *b)
{
    return b->owns_pages && !host_pinned(b);
}

/* The program registers memory itself: often a buffer it copies a lot (the shim may hold it already),
 * whole or part, aligned or not, but only pages no other allocation shares. */
void op_register(void)
{
    struct hbuf *b = pick_host();
    if (!b || !registrable(b))
        b = pick_where(registrable);
    if (!b)
        return;
    size_t pages = b->n / FZ_PAGE, off = 0, len = b->n;
    int r = (int)rnd(100);
    if (r >= 55 && pages > 1) {
        size_t lo = rnd(pages), hi = rnd_range(lo + 1, pages);
        off = lo * FZ_PAGE;
        len = (hi - lo) * FZ_PAGE;
        if (r >= 90) { /* not page-aligned, still inside the buffer */
            off += rnd(FZ_PAGE);
            len = rnd_range(1, b->n - off);
        }
    }
    unsigned int flags = (unsigned int)rnd(4) & (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
    if (said(F.d.host_register(b->p + off, len, flags), "register h%d [%zu,+%zu] flags=%u", b->id, off, len,
             flags) == CUDA_SUCCESS) {
        b->reg_p = b->p + off;
        b->reg_n = len;
    }
    touch_host(b);
}

static int own_registered(const struct hbuf *b)
{
    return b->reg_p != NULL;
}

void op_unregister(void)
{
    struct hbuf *b = pick_where(own_registered);
    if (b)
        unregister_own(b);
}

static int plain_pageable(const struct hbuf *b)
{
    return !host_pinned(b);
}

/* Questions whose answers the shim's own registrations could change (--probes only; the README
 * says why): what the driver says a host pointer is, and unregistering memory the program never
 * registered (the driver answers that it is not registered, whatever the shim registered). */
void op_probe(void)
{
    struct hbuf *b = pick_host();
    if (!b)
        return;
    size_t off = chance(50) ? 0 : rnd(b->n);
    unsigned int type = 0, flags = 0;
    CUresult r;
    if (F.probes & PROBE_ATTR) {
        r = F.ptr_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(b->p + off));
        said(r, "pointer_attribute h%d+%zu memory_type=%u", b->id, off, r == CUDA_SUCCESS ? type : 0);
    }
    if (F.probes & PROBE_FLAGS) {
        r = F.host_get_flags(&flags, b->p + off);
        said(r, "host_get_flags h%d+%zu flags=%u", b->id, off, r == CUDA_SUCCESS ? flags : 0);
    }
    if ((F.probes & PROBE_UNREGISTER) && plain_pageable(b))
        said(F.d.host_unregister(b->p + off), "unregister h%d+%zu (never registered)", b->id, off);
}
