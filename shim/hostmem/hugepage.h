/* hugepage.h: transparent huge pages for destinations the shim is about to fill. A staged D2H
 * into memory the program just allocated is bound by first-touch page faults (4 KiB pages zeroed one
 * fault at a time: 3-4 GB/s on the development machine, tests/bench/fault_probe.c); asking for huge
 * pages on the 2 MiB blocks the copy writes in full makes those faults 512 times fewer.
 * Only blocks wholly inside the copy's destination are advised, so a program that touches part of a
 * large allocation gets no more resident memory than before; nothing is advised when the system's
 * THP setting is not "madvise" (with "always" it is already done, with "never" it is refused), when
 * stage_hugepages is off, or once the program has given any huge-page advice of its own.
 * Contract: thread-safe; the madvise is a raw system call (the shim's own hooks never see it). */
#ifndef PINSHIM_HUGEPAGE_H
#define PINSHIM_HUGEPAGE_H

#include <stddef.h>

/* [p, p + n) is about to be written in full by a staged copy. */
void hugepage_advise_write(void *p, size_t n);

/* The program called madvise(MADV_HUGEPAGE or MADV_NOHUGEPAGE): from now on it decides. */
void hugepage_note_program_advice(void);

#endif
