/* fuzz.h: the differential fuzzer's state and the contract between its files.
 * fuzzprog runs a random but seed-determined mix of host allocations, copies and synchronizations
 * against the driver, as a correct CUDA program would (it never races with its own copies), and
 * prints every driver call's return code and a hash of every host byte it reads back. The same
 * seed must print the same lines with and without the shim; tests/fuzz/run.sh compares them.
 * Nothing printed depends on an address, a time or a race: only on the seed and the return codes.
 *
 * The model (model.c) keeps the program correct. Each stream is a "slot" with a count of the
 * operations it was given (enq) and of those known complete (done); each buffer remembers, per slot,
 * the number of its last operation there (last[]). Work is pending while last > done. Before a
 * buffer is used on one stream, other streams' pending work on it is synchronized; before the CPU
 * touches host memory the program pinned or registered, all pending work on it is. Pageable host
 * memory is never pending: the driver stages its H2D sources and completes its D2H copies before
 * returning (CUDA's "API synchronization behavior"), and the shim must keep that promise. */
#ifndef PINSHIM_FUZZ_H
#define PINSHIM_FUZZ_H

#include "testutil.h"

#define FZ_MAX_DEV 2
#define FZ_SLOTS_PER_DEV 7 /* legacy, per-thread, 2 blocking, 2 non-blocking, destroyed streams */
#define FZ_NSLOT (FZ_MAX_DEV * FZ_SLOTS_PER_DEV)
#define FZ_MAX_HOST 48
#define FZ_DBUFS 4
#define FZ_EVENTS 2
#define FZ_PAGE 4096u
#define FZ_MiB ((size_t)1 << 20)

enum { PROBE_ATTR = 1, PROBE_FLAGS = 2, PROBE_UNREGISTER = 4, PROBE_ALL = 7 };

enum slot_role { SLOT_LEGACY, SLOT_PER_THREAD, SLOT_BLOCKING0, SLOT_BLOCKING1, SLOT_NONBLOCKING0,
                 SLOT_NONBLOCKING1, SLOT_ORPHAN };

/* How the program got a host buffer: decides how it is released and what it may do with it. */
enum hkind { HK_MALLOC, HK_CALLOC, HK_MEMALIGN, HK_ALIGNED, HK_MMAP, HK_HOSTALLOC, HK_ALLOCHOST, HK_COUNT };

struct hbuf {
    int live, id;           /* id: a stable name for the output (never an address) */
    unsigned char *p;       /* the program's bytes: [p, p + n) */
    size_t n;
    unsigned char *block;   /* heap kinds: what the allocator returned, p - pad */
    size_t pad;
    enum hkind kind;
    int owns_pages;         /* [p, p + n) is whole pages that no other allocation shares */
    unsigned char *reg_p;   /* the program's own cuMemHostRegister of [reg_p, reg_p + reg_n), or NULL */
    size_t reg_n;
    uint32_t last[FZ_NSLOT];
};

struct dbuf {
    CUdeviceptr p;
    size_t n;
    uint32_t last[FZ_NSLOT];
};

struct slot {
    CUstream h;             /* created streams only */
    uint32_t enq, done;
};

struct event {
    CUevent h;
    int slot;               /* -1: never recorded */
    uint32_t seq;
};

typedef CUresult (*fn_memset_d8)(CUdeviceptr, unsigned char, size_t);
typedef CUresult (*fn_event_destroy)(CUevent);
typedef CUresult (*fn_ptr_attr)(void *, CUpointer_attribute, CUdeviceptr);
typedef CUresult (*fn_host_get_flags)(unsigned int *, void *);

struct fuzz {
    struct test_driver d, dp;     /* legacy and per-thread default stream flavours of every call */
    fn_memset_d8 memset_d8;
    fn_event_destroy event_destroy;
    fn_ptr_attr ptr_attr;
    fn_host_get_flags host_get_flags;
    int ndev, cur;                /* cur: the device whose primary context is current, -1: none */
    CUcontext ctx[FZ_MAX_DEV];
    struct hbuf h[FZ_MAX_HOST];
    struct dbuf dv[FZ_MAX_DEV][FZ_DBUFS];
    struct slot s[FZ_NSLOT];
    struct event ev[FZ_MAX_DEV][FZ_EVENTS];
    int hot[4];                   /* recently used host buffers: picked again often (pin-on-reuse) */
    uint64_t rng, digest;
    long op;                      /* the current operation's number: every output line starts with it */
    int next_id;
    size_t host_bytes, host_budget;
    int probes;                   /* PROBE_* bits: op_probe's questions that see the shim's registrations */
    int isolate;                  /* --isolate: heap blocks padded so that no two share a page */
    int debug;                    /* FUZZ_DEBUG set: addresses of host buffers on stderr */
};

extern struct fuzz F;

/* fuzzprog.c: randomness, output, digest */
uint64_t rnd64(void);
size_t rnd(size_t n);              /* uniform in [0, n); 0 when n is 0 */
size_t rnd_range(size_t lo, size_t hi); /* uniform in [lo, hi] */
int chance(int percent);
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
CUresult said(CUresult r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fz_fill(void *p, size_t n, uint64_t seed);
uint64_t fz_hash(const void *p, size_t n);
void read_back(const char *what, int id, const unsigned char *p, size_t off, size_t n);

/* model.c: contexts, streams, pending work, synchronization */
int slot_index(int dev, enum slot_role role);
int slot_dev(int slot);
void use_dev(int dev);
CUstream slot_stream(int slot, const struct test_driver **t);
int pending(const uint32_t *last, int slot);
void sync_slot(int slot);
void settle(uint32_t *last, int except_slot);  /* synchronize every slot with pending work, but one */
void settle_host(struct hbuf *b);               /* before the CPU touches b */
uint32_t enqueue(int slot);
void model_start(void);
void model_finish(void);
void op_stream_sync(void);
void op_stream_query(void);
void op_ctx_sync(void);
void op_event(void);
void op_stream_recreate(void);
void op_dev_realloc(void);

/* hostops.c: the program's host memory */
int host_pinned(const struct hbuf *b);          /* copies may run asynchronously from/to it */
struct hbuf *pick_host(void);                   /* NULL when none is live */
void touch_host(struct hbuf *b);
void pick_range(size_t n, size_t max_len, size_t *off, size_t *len);
void host_release(struct hbuf *b);
void host_release_all(void);
void op_alloc(void);
void op_free(void);
void op_realloc(void);
void op_munmap_part(void);
void op_mremap(void);
void op_madvise(void);
void op_fill(void);
void op_check(void);
void op_register(void);
void op_unregister(void);
void op_probe(void);

/* copyops.c: linear copies, and what every copy shares */
enum dir { H2D, D2H, D2D };

/* Where a copy runs: an async copy on any stream; a sync copy on the legacy or per-thread default
 * stream, depending on the flavour of the call. */
struct call {
    int slot, async;
    const struct test_driver *t;
    CUstream h;
};

void call_pick(struct call *c, int dev, int async);
void call_ready(struct call *c, int dev);  /* after settling (which may switch contexts) */
const char *flavour(const struct call *c); /* "p" for the per-thread flavour */
struct dbuf *pick_dbuf(int dev, int *k, int not_k);
void after_h2d(struct hbuf *b, size_t off, size_t len, const struct call *c, uint32_t seq);
void after_d2h(struct hbuf *b, size_t off, size_t len, const struct call *c, uint32_t seq);
void op_htod(void);
void op_dtoh(void);
void op_unified(void);
void op_dtod(void);
void op_peer(void);
void op_batch(void);

/* pitched.c: 2D and 3D copies */
void op_2d(void);
void op_3d(void);

#endif
