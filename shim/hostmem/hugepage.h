/* hugepage.h: transparent huge pages for destinations the shim is about to fill. A staged D2H
 * into memory the program just allocated is bound by first-touch page faults (4 KiB pages zeroed one
 * fault at a time; tests/bench/fault_probe.c); huge pages make those faults 512 times fewer.
 * What is advised: the whole page range of the tracked allocation (alloc_table.h) holding the
 * destination, and only when the copy writes every 2 MiB block inside it. So the kernel's mapping
 * of one allocation is never split (an earlier version advised only the blocks inside the copy,
 * which split the program's mapping: an mremap of the whole mapping then failed, fuzzer seeds 24
 * and 25), and a program that touches part of a large allocation gets no more resident memory than
 * before (huge pages only back blocks the copy writes in full anyway). Nothing is advised when the
 * system's THP setting is not "madvise" (with "always" it is already done, with "never" it is
 * refused), when stage_hugepages is off (it is on by default), or once the program has given any huge-page
 * advice of its own. From then on the program's own advice is what counts: a destination in an
 * allocation the program advised MADV_HUGEPAGE (NumPy does so for arrays of 4 MiB and more) is
 * reported as one that faults in huge pages, so the staging threads write it one 2 MiB block each
 * rather than two threads meeting in one block's fault.
 * Contract: thread-safe; takes the allocation table's lock; the madvise is a raw system call (the
 * shim's own hooks never see it). */
#ifndef PINSHIM_HUGEPAGE_H
#define PINSHIM_HUGEPAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The unit of a transparent huge page: the 2 MiB blocks of the address space, each faulted in (and
 * zeroed) by one thread at a time. */
#define HUGEPAGE_BYTES ((uintptr_t)2 << 20)

/* [p, p + n) is about to be written in full by a staged copy. True when huge pages were advised
 * for it, by the shim now or by the program before (its fresh pages may then come 2 MiB at a
 * time). */
bool hugepage_advise_write(void *p, size_t n);

/* What was advised, for the summary (no lock: safe from the log's signal flush). */
struct hugepage_stats {
    uint64_t copies, bytes; /* staged copies whose allocation was advised; the bytes advised (counted per copy) */
    bool program_decides;   /* the program gave huge-page advice of its own: the shim gave none since */
    uint64_t program_copies; /* staged copies into allocations the program advised MADV_HUGEPAGE */
};
void hugepage_get_stats(struct hugepage_stats *out);

/* The program called madvise(MADV_HUGEPAGE (huge true) or MADV_NOHUGEPAGE) on [lo, hi): from now
 * on it decides; the tracked allocations that range touches remember which it was. */
void hugepage_note_program_advice(uintptr_t lo, uintptr_t hi, bool huge);

#endif
