/* plain_pages.h: pages known plain, host memory that memkind calls pageable and that no tracked
 * allocation holds, so that a small copy from one of them is only counted (copy.c). memkind's page
 * memo and the allocation table's each answer half of that, on a line of their own (skipping either
 * took 50-64 ns from a 4 KB pageable .to("cuda", non_blocking) in PyTorch: README, twelfth stop);
 * this memo answers the whole question from one line, its generation on the gate's (base/gate.h).
 * Each thread also keeps the run of neighbouring plain pages it found last, in the entry that holds
 * memkind's last range (base/thread.h, memkind_last_range(): kind pageable): a loop over small
 * tensors finds each copy's page there with the test a pinned copy takes, where the memo's slot took
 * a hash, a line of its own and more lines of the handler's code (tests/bench/footprint.py --mode p).
 * A pinned range found replaces the run, and a run found replaces the range.
 * Valid while neither table changes in a way that can make a plain page less plain: memkind calls
 * plain_pages_changed() at every change of its table and every unmapping the hooks see, the
 * allocation table at every record it adds (a record removed leaves plain pages plain).
 * Contract: lock-free and thread-safe, but plain_pages_found() (which may take the allocation
 * table's lock and ask the driver: call it where a copy's host side may be classified); a page is
 * answered plain only if it was noted, or found plain in a run, in the current generation, read
 * before the lookups that found it plain. */
#ifndef PINSHIM_PLAIN_PAGES_H
#define PINSHIM_PLAIN_PAGES_H

#include <stdbool.h>
#include <stdint.h>

/* The current generation: read it before asking memkind and the allocation table about a page. */
uint64_t plain_pages_generation(void);

/* Whether p's page was noted plain in generation gen (the current one, read before). */
bool plain_pages_hold(uintptr_t p, uint64_t gen);

/* p's page is plain in generation gen (plain_pages_hold(), or just noted): the calling thread's run
 * (when its entry holds one, of generation gen) grows to it when it lies at most PLAIN_RUN_REACH pages past either end and no range of memkind's
 * table and no tracked allocation overlaps the pages between; otherwise the run becomes p's page
 * alone, in place of whatever the entry held. The pages between are not asked of the driver: one pinned by a route the shim does not see
 * would be counted pageable, as memkind_of_small() may count one (memkind.h), and only counting
 * relies on a plain answer. */
#define PLAIN_RUN_REACH 256 /* 1 MiB of 4 KiB pages */
void plain_pages_found(uintptr_t p, uint64_t gen);

/* memkind called p's page pageable in generation gen (plain_pages_generation(), read before asking):
 * remembered as plain when the allocation table's memo says no tracked allocation holds it (true). */
bool plain_pages_note(uintptr_t p, uint64_t gen);

/* memkind's table or the allocation table changed, or memory was unmapped: forget every page. */
void plain_pages_changed(void);

#endif
