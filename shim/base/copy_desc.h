/* copy_desc.h: the words every layer uses about one copy: struct copy (one copy, described the same
 * way whichever entry point made it), its direction, the kind of memory on each side, what the shim
 * did with it and why a pageable copy was not staged, each with the names the summary and the log
 * print. The copy path fills a struct copy (copy/copy.h); staging, the registration cache, the guard
 * and the observers read it or set the fields that are theirs.
 * Contract: plain data and constant tables; nothing here calls anything. */
#ifndef PINSHIM_COPY_DESC_H
#define PINSHIM_COPY_DESC_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "driver_table.h"

/* What memory a pointer given to a copy is (hostmem/memkind.h finds out). */
enum host_kind { KIND_PAGEABLE, KIND_PINNED, KIND_REGISTERED, KIND_MANAGED, KIND_DEVICE, KIND_UNKNOWN, KIND_COUNT };
extern const char *const host_kind_names[KIND_COUNT];

/* True for kinds that live in host memory (pageable, pinned, registered). */
static inline bool memkind_is_host(enum host_kind k)
{
    return k == KIND_PAGEABLE || k == KIND_PINNED || k == KIND_REGISTERED;
}

enum copy_dir { DIR_H2D, DIR_D2H, DIR_D2D, DIR_H2H, DIR_PEER, DIR_COUNT };
extern const char *const copy_dir_names[DIR_COUNT];

/* What the shim did with the copy: passed it to the driver unchanged, staged it through the
 * pinned pool (stage/stage.h), or sent it directly from memory the registration cache pinned
 * (hostmem/regcache.h). */
enum copy_action { ACTION_PASS, ACTION_STAGED, ACTION_REGISTERED, ACTION_COUNT };
extern const char *const copy_action_names[ACTION_COUNT];

/* Why a pageable host<->device copy was passed through instead of staged. */
enum unstaged_reason {
    UNSTAGED_NONE,     /* staged, or not a pageable host<->device copy */
    UNSTAGED_SMALL,    /* below stage_min_bytes */
    UNSTAGED_SHAPE,    /* 2D/3D/batch copies are not staged in this version */
    UNSTAGED_CAPTURE,  /* the stream is capturing */
    UNSTAGED_RANGE,    /* the device side is not plain device memory holding the whole range */
    UNSTAGED_POOL,     /* pinned memory unavailable */
    UNSTAGED_WARMUP,   /* the pool's first slab is still being allocated (in the background) */
    UNSTAGED_BUSY,     /* every chunk is busy with other streams' copies (waiting could deadlock) */
    UNSTAGED_CHILD,    /* forked child: no CUDA calls from the shim */
    UNSTAGED_DISABLED, /* stage = off */
    UNSTAGED_COUNT
};
extern const char *const unstaged_reason_names[UNSTAGED_COUNT];

struct alloc_rec; /* a tracked allocation (hostmem/alloc_table.h); opaque here */

struct copy {
    enum driver_entry_id entry;
    enum copy_dir dir;
    enum host_kind src_kind, dst_kind;
    enum host_kind host_kind; /* the host side's kind; managed or device when neither side is host */
    uintptr_t dst, src;
    size_t bytes;
    CUstream stream;
    bool async;
    enum copy_action action;
    enum unstaged_reason unstaged;
    bool reg_overlap;         /* the host side lies in memory the registration cache pinned */
    struct alloc_rec *reg_rec; /* the cache's record this copy uses directly (held until after it) */
    bool completed;           /* the shim already waited for the copy: nothing more to wait for */
    bool instead_of_direct;   /* staged in place of a direct copy of memory the cache pinned, which
                                 would wait behind its busy stream (copy_entry.c): staging must not
                                 give it up while the pool warms (stage/stage.c) */
    int32_t device;           /* ordinal of the calling thread's current context's device; -1 unknown */
};

#endif
