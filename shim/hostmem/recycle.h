/* recycle.h: the pages of freed allocations, moved into the fresh destinations of staged D2H copies.
 * A staged D2H into memory the program has just allocated spends much of its copy-out in
 * first-touch faults (each 2 MiB block a huge page the kernel zeroes before the copy writes it);
 * into pages moved in from elsewhere the same copy-out ran about 1.3 times as fast on an H100
 * (tests/bench/d2h_bound.c, "fresh" against "moved"). A program that copies into new buffers
 * again and again (a new tensor each step) frees the old ones, whose pages are still resident.
 * So, once the process has made a staged D2H into a fresh malloc'd destination (armed), a free()
 * of a tracked allocation moves its whole 2 MiB blocks into a reserve the shim holds (mremap with
 * MREMAP_DONTUNMAP: page tables move, no byte is copied, and the program's range stays mapped,
 * empty, until its allocator unmaps it);
 * a later staged D2H moves reserve blocks over the blocks of its destination that it is about to
 * write in full and whose pages are not resident, just before writing them. The copy overwrites
 * every byte of those blocks, so the program reads exactly what it would have read.
 * Never: into a destination the program mapped itself (moving pages in splits its mapping, and the
 * program's own mremap of the whole mapping would then fail; from malloc, a split mapping is the
 * allocator's business, and glibc's realloc copies where mremap refuses), into one not advised
 * huge pages (the reserve is, so no advice of the program's changes), out of an allocation
 * registered with the driver, out of a realloc (its bytes are kept), in a forked child.
 * Memory: frees are kept only while staged D2H copies have asked for more than was kept (the bytes
 * of the whole blocks they wrote since), so a program whose frees feed no fresh destinations pays
 * the move of one allocation and keeps nothing more; the reserve holds at most
 * stage_recycle_max_bytes (the oldest goes back first), and what it kept is given back (munmap)
 * stage_recycle_keep_ms later by a thread of the shim's own if no copy took it. Until then the
 * program's resident memory stays what it was before the free.
 * Contract: thread-safe (one mutex, never held across a driver call; none is made here); the
 * system calls are raw, so the shim's allocation hooks never see them. */
#ifndef PINSHIM_RECYCLE_H
#define PINSHIM_RECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The allocation-event subscriber that takes freed allocations' blocks (`freeing`, told before
 * any subscriber's `releasing`, so the freed allocation's record is still in the table), or NULL
 * when stage_recycle is off. Whether the kernel can move pages so is asked at the first arming. */
struct alloc_subscriber;
const struct alloc_subscriber *recycle_configure(void);

/* A staged D2H is about to write [p, p + n) in full, a destination advised huge pages: true when
 * it is a malloc'd allocation the reserve may fill (recycle_fill then also counts what it wants). */
bool recycle_wanted(void *p, size_t n);

/* Part of that copy, [p, p + n), its DMA done, is about to be copied out: moves reserve blocks over
 * each whole 2 MiB block inside it whose first page is not resident. Returns the bytes moved in. */
size_t recycle_fill(void *p, size_t n);

struct recycle_stats {
    uint64_t kept_bytes;     /* moved into the reserve from freed allocations */
    uint64_t filled_bytes;   /* moved out of it into destinations */
    uint64_t released_bytes; /* given back to the system (cap, age) */
    uint64_t reserve_bytes, high_water_bytes; /* held now; most held at once */
};
void recycle_get_stats(struct recycle_stats *out); /* no lock: safe from the log's signal flush */

/* fork: the parent holds the reserve's lock across it (prepare, parent), so the child finds the
 * list whole; the child (one thread) unmaps its copy of the reserve and stops keeping. */
void recycle_fork_prepare(void);
void recycle_fork_parent(void);
void recycle_fork_child(void);

#endif
