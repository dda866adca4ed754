/* copy.h: one copy, described the same way whichever entry point made it, and the two steps every
 * copy handler takes: describe (classify its memory, find its direction) and record (count it).
 * Contract: thread-safe; copy_describe() may call the driver (pointer attributes) with the
 * reentrancy depth raised; copy_record() never calls the driver. */
#ifndef PINSHIM_COPY_H
#define PINSHIM_COPY_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/driver_table.h"

struct alloc_rec;
#include "hostmem/memkind.h"

enum copy_dir { DIR_H2D, DIR_D2H, DIR_D2D, DIR_H2H, DIR_PEER, DIR_COUNT };
extern const char *const copy_dir_names[DIR_COUNT];

/* What the shim did with the copy: passed it to the driver unchanged, staged it through the
 * pinned pool (stage.h), or sent it directly from memory the registration cache pinned (regcache.h). */
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
};

/* Kinds known from the entry point itself (cuMemcpyHtoD: dst is device) skip classification:
 * pass KIND_UNKNOWN for a side that must be classified, or the known kind. */
void copy_describe(struct copy *c, enum driver_entry_id entry, uintptr_t dst, enum host_kind dst_kind,
                   uintptr_t src, enum host_kind src_kind, size_t bytes, CUstream stream, bool async);

/* Counts a finished call: a success is one transfer of c->bytes, a failure one failed copy. */
void copy_record(const struct copy *c, CUresult result, uint64_t host_ns);

#endif
