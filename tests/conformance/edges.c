/* edges.c: host ranges at the edges of registrations and pinned allocations (DESIGN.md,
 * "Registration edges"; FACTS.md's table): inside, exact, starting inside and running past the end,
 * starting before and running into or across, adjacent registrations, and host-to-host copies,
 * through every 1D copy entry point. The real driver refuses a range that starts inside a
 * registration and runs past its end; these cases pin down every other shape around it. */
#include <malloc.h>

#include "conform.h"

const char *const op_names[OP_COUNT] = {"h2d", "h2d_async", "d2h", "d2h_async",
                                        "memcpy_h2d", "memcpy_d2h", "memcpy_async_h2d", "memcpy_async_d2h"};

void world_init(struct world *w, unsigned char *host, size_t len)
{
    memset(w, 0, sizeof *w);
    w->host = host;
    w->len = len;
    w->seed = 1000;
    w->win_hi = len;
    NEED(d.mem_alloc(&w->dev, len));
    NEED(d.stream_create(&w->s, 0));
}

void world_window(struct world *w, uintptr_t lo, uintptr_t hi)
{
    uintptr_t base = (uintptr_t)w->host, margin = 2 * PS;
    w->win_lo = lo - base > margin ? lo - base - margin : 0;
    w->win_hi = hi - base + margin < w->len ? hi - base + margin : w->len;
}

void world_refill(struct world *w)
{
    size_t n = w->win_hi - w->win_lo;
    test_fill(w->host + w->win_lo, n, w->seed);
    dev_fill(w->dev + w->win_lo, n, w->seed + 1);
    w->seed += 2;
}

void world_report(struct world *w, const char *key, CUresult r, int async, int to_dev)
{
    CUresult rs = async ? d.stream_sync(w->s) : CUDA_SUCCESS;
    size_t n = w->win_hi - w->win_lo;
    const char *dg = to_dev ? dev_digest(w->dev + w->win_lo, n) : digest(w->host + w->win_lo, n);
    if (async)
        say(key, "%s; sync %s; %s %s", rcs(r), rcs(rs), to_dev ? "device" : "host", dg);
    else
        say(key, "%s; %s %s", rcs(r), to_dev ? "device" : "host", dg);
}

void world_copy(struct world *w, const char *key, int op, uintptr_t lo, uintptr_t hi)
{
    world_window(w, lo, hi);
    world_refill(w);
    size_t n = hi - lo;
    CUdeviceptr dv = w->dev + (lo - (uintptr_t)w->host);
    void *h = (void *)lo;
    CUresult r;
    switch (op) {
    case OP_H2D: r = d.htod(dv, h, n); break;
    case OP_H2D_ASYNC: r = d.htod_async(dv, h, n, w->s); break;
    case OP_D2H: r = d.dtoh(h, dv, n); break;
    case OP_D2H_ASYNC: r = d.dtoh_async(h, dv, n, w->s); break;
    case OP_MEMCPY_H2D: r = d.memcpy(dv, (CUdeviceptr)lo, n); break;
    case OP_MEMCPY_D2H: r = d.memcpy((CUdeviceptr)lo, dv, n); break;
    case OP_MEMCPY_ASYNC_H2D: r = d.memcpy_async(dv, (CUdeviceptr)lo, n, w->s); break;
    default: r = d.memcpy_async((CUdeviceptr)lo, dv, n, w->s); break;
    }
    int async = op == OP_H2D_ASYNC || op == OP_D2H_ASYNC || op == OP_MEMCPY_ASYNC_H2D || op == OP_MEMCPY_ASYNC_D2H;
    int to_dev = op == OP_H2D || op == OP_H2D_ASYNC || op == OP_MEMCPY_H2D || op == OP_MEMCPY_ASYNC_H2D;
    world_report(w, key, r, async, to_dev);
}

/* ---- the shapes around one range [s, e) ----------------------------------------------------- */

struct range {
    const char *name;
    uintptr_t lo, hi;
};

/* Ranges around [s, e) with steps of u bytes (64: within a page; the page size: whole pages). */
static size_t edge_ranges(uintptr_t s, uintptr_t e, size_t u, struct range *r)
{
    size_t n = 0;
    r[n++] = (struct range){"inside", s + u, e - u};
    r[n++] = (struct range){"exact", s, e};
    r[n++] = (struct range){"starts_inside_ends_after", e - u, e + u};
    r[n++] = (struct range){"starts_at_base_ends_after", s, e + u};
    r[n++] = (struct range){"starts_inside_ends_at_end", e - u, e};
    r[n++] = (struct range){"starts_before_ends_inside", s - u, s + u};
    r[n++] = (struct range){"starts_before_ends_at_end", s - u, e};
    r[n++] = (struct range){"starts_before_ends_after", s - u, e + u};
    r[n++] = (struct range){"ends_at_base", s - 2 * u, s};
    r[n++] = (struct range){"starts_at_end", e, e + 2 * u};
    return n;
}

static void all_ops(struct world *w, const char *prefix, const struct range *r, size_t n, int nops)
{
    char key[160];
    for (size_t i = 0; i < n; i++)
        for (int op = 0; op < nops; op++) {
            snprintf(key, sizeof key, "%s.%s.%s", prefix, r[i].name, op_names[op]);
            world_copy(w, key, op, r[i].lo, r[i].hi);
        }
}

#define HOST_BYTES (2u << 20) /* 2 MiB: tracked by the shim's default policy (1 MiB) too */

/* A 1 MiB page-aligned registration in the middle of a 2 MiB buffer. */
void case_edges_reg_pages(void)
{
    unsigned char *h = page_alloc(HOST_BYTES);
    struct world w;
    world_init(&w, h, HOST_BYTES);
    uintptr_t s = (uintptr_t)h + HOST_BYTES / 4, e = s + HOST_BYTES / 2;
    say("register", "%s", rcs(d.host_register((void *)s, e - s, 0)));
    struct range r[16];
    all_ops(&w, "sub", r, edge_ranges(s, e, 64, r), OP_COUNT);
    all_ops(&w, "page", r, edge_ranges(s, e, PS, r), OP_COUNT);
    say("unregister", "%s", rcs(d.host_unregister((void *)s)));
    /* the same copies once the registration is gone: all pageable */
    all_ops(&w, "after_unregister", r, edge_ranges(s, e, 64, r), 2);
}

/* A registration whose ends are not page boundaries: does the driver compare with the bytes given
 * or with whole pages? */
void case_edges_reg_subpage(void)
{
    unsigned char *h = page_alloc(HOST_BYTES);
    struct world w;
    world_init(&w, h, HOST_BYTES);
    uintptr_t s = (uintptr_t)h + HOST_BYTES / 4 + 256, e = (uintptr_t)h + 3 * (HOST_BYTES / 4) - 256;
    say("register", "%s", rcs(d.host_register((void *)s, e - s, 0)));
    struct range r[20];
    size_t n = edge_ranges(s, e, 64, r);
    /* after the end, but on its last page, running into the next page */
    r[n++] = (struct range){"starts_after_end_same_page_ends_next_page", e + 64, e + 256 + 64};
    /* before the start, on its first page, ending inside */
    r[n++] = (struct range){"starts_before_base_same_page_ends_inside", s - 128, s + 64};
    all_ops(&w, "sub", r, n, OP_COUNT);
    say("unregister", "%s", rcs(d.host_unregister((void *)s)));
}

/* cuMemHostAlloc'd memory: 2 pages + 1000 bytes, so that a range running past its end stays on
 * mapped memory (its last page). */
void case_edges_pinned(void)
{
    size_t size = 2 * PS + 1000;
    void *p = NULL;
    NEED(d.host_alloc(&p, size, 0));
    uintptr_t s = (uintptr_t)p, e = s + size;
    say("page_aligned", "%s", s % PS ? "no" : "yes");
    struct world w;
    world_init(&w, p, size + 128);
    struct range r[8];
    size_t n = 0;
    r[n++] = (struct range){"inside", s + 64, e - 64};
    r[n++] = (struct range){"exact", s, e};
    r[n++] = (struct range){"starts_inside_ends_at_end", e - 64, e};
    if (s % PS == 0) { /* else the bytes after it may not be mapped: see risky.pinned_past_mapping */
        r[n++] = (struct range){"starts_inside_ends_after", e - 64, e + 64};
        r[n++] = (struct range){"starts_at_base_ends_after", s, e + 64};
        r[n++] = (struct range){"starts_at_end", e, e + 128};
    } else {
        w.len = size;
    }
    all_ops(&w, "sub", r, n, OP_COUNT);
    say("free", "%s", rcs(d.free_host(p)));
}

/* Two page-aligned registrations that touch: [A, B) and [B, C). */
void case_edges_adjacent(void)
{
    unsigned char *h = page_alloc(HOST_BYTES);
    struct world w;
    world_init(&w, h, HOST_BYTES);
    uintptr_t a = (uintptr_t)h + HOST_BYTES / 4, b = a + HOST_BYTES / 4, c = b + HOST_BYTES / 4;
    say("register_a", "%s", rcs(d.host_register((void *)a, b - a, 0)));
    say("register_b", "%s", rcs(d.host_register((void *)b, c - b, 0)));
    struct range r[] = {
        {"across_the_seam", b - 64, b + 64},
        {"across_the_seam_pages", b - PS, b + PS},
        {"a_base_to_b_end", a, c},
        {"a_inside_to_b_end", a + 64, c},
        {"before_a_to_after_b", a - 64, c + 64},
        {"before_a_to_inside_b", a - 64, b + 64},
        {"b_inside_to_after_b", c - 64, c + 64},
    };
    all_ops(&w, "ops", r, sizeof r / sizeof r[0], 4);
    say("unregister_a", "%s", rcs(d.host_unregister((void *)a)));
    say("unregister_b", "%s", rcs(d.host_unregister((void *)b)));
}

/* cuMemcpy / cuMemcpyAsync between two host ranges, one of them at a registration's edge. */
void case_edges_h2h(void)
{
    unsigned char *h = page_alloc(HOST_BYTES), *q = page_alloc(HOST_BYTES);
    CUstream s;
    NEED(d.stream_create(&s, 0));
    uintptr_t rs = (uintptr_t)h + HOST_BYTES / 4, re = rs + HOST_BYTES / 4;
    say("register", "%s", rcs(d.host_register((void *)rs, re - rs, 0)));
    struct range r[16];
    size_t n = edge_ranges(rs, re, 64, r);
    char key[160];
    for (size_t i = 0; i < n; i++)
        for (int dir = 0; dir < 2; dir++)
            for (int async = 0; async < 2; async++) {
                /* both sides filled and digested around the copy: the range +- 2 pages */
                size_t len = r[i].hi - r[i].lo, hoff = r[i].lo - 2 * PS - (uintptr_t)h, wlen = len + 4 * PS;
                test_fill(h + hoff, wlen, (uint32_t)(10 * i + 2 * dir + async));
                test_fill(q, wlen, (uint32_t)(500 + 10 * i + 2 * dir + async));
                CUdeviceptr edge = (CUdeviceptr)r[i].lo, plain = (CUdeviceptr)(uintptr_t)(q + 2 * PS);
                CUdeviceptr dst = dir ? edge : plain, src = dir ? plain : edge;
                CUresult rc = async ? d.memcpy_async(dst, src, len, s) : d.memcpy(dst, src, len);
                CUresult rsync = async ? d.stream_sync(s) : CUDA_SUCCESS;
                snprintf(key, sizeof key, "%s.%s%s", r[i].name, dir ? "into_edge" : "from_edge",
                         async ? "_async" : "");
                say(key, "%s; sync %s; host %s", rcs(rc), rcs(rsync), digest(dir ? h + hoff : q, wlen));
            }
    say("unregister", "%s", rcs(d.host_unregister((void *)rs)));
}

/* Heap blocks side by side (PyTorch's 4 MB tensors once glibc's mmap threshold has risen), each
 * copied again and again, whole: plain program behaviour, which the driver accepts. Under the shim
 * a registration of one block must never make a neighbour's copy start inside it (issue #10). */
void case_edges_heap_neighbours(void)
{
    enum { BLOCKS = 6, ROUNDS = 4 };
    const size_t n = 3000000; /* not a page multiple: neighbours share pages */
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    unsigned char *b[BLOCKS];
    for (int i = 0; i < BLOCKS; i++)
        b[i] = malloc(n);
    printf("# heap blocks side by side: %s\n", b[1] > b[0] && (size_t)(b[1] - b[0]) < n + PS ? "yes" : "no");
    CUdeviceptr dv;
    CUstream s;
    NEED(d.mem_alloc(&dv, n));
    NEED(d.stream_create(&s, 0));
    char key[64];
    for (int round = 0; round < ROUNDS; round++)
        for (int i = 0; i < BLOCKS; i++) {
            int async = (round + i) & 1;
            test_fill(b[i], n, (uint32_t)(100 * round + i));
            CUresult r1 = async ? d.htod_async(dv, b[i], n, s) : d.htod(dv, b[i], n);
            memset(b[i], 0, n);
            CUresult r2 = async ? d.dtoh_async(b[i], dv, n, s) : d.dtoh(b[i], dv, n);
            CUresult r3 = d.stream_sync(s);
            snprintf(key, sizeof key, "round%d.block%d", round, i);
            say(key, "h2d %s; d2h %s; sync %s; host %s", rcs(r1), rcs(r2), rcs(r3), digest(b[i], n));
        }
    for (int i = 0; i < BLOCKS; i++)
        free(b[i]);
}
