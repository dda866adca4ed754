/* plain_pages.h: pages known plain, host memory that memkind calls pageable and that no tracked
 * allocation holds, so that a small copy from one of them is only counted (copy.c). memkind's page
 * memo and the allocation table's each answer half of that, on a line of their own (skipping either
 * took 50-64 ns from a 4 KB pageable .to("cuda", non_blocking) in PyTorch: README, twelfth stop);
 * this memo answers the whole question from one line, its generation on the gate's (base/gate.h).
 * Valid while neither table changes in a way that can make a plain page less plain: memkind calls
 * plain_pages_changed() at every change of its table and every unmapping the hooks see, the
 * allocation table at every record it adds (a record removed leaves plain pages plain).
 * Contract: lock-free and thread-safe; a page is answered plain only if it was noted in the current
 * generation, read before the lookups that found it plain. */
#ifndef PINSHIM_PLAIN_PAGES_H
#define PINSHIM_PLAIN_PAGES_H

#include <stdbool.h>
#include <stdint.h>

/* The current generation: read it before asking memkind and the allocation table about a page. */
uint64_t plain_pages_generation(void);

/* Whether p's page was noted plain in generation gen (the current one, read before). */
bool plain_pages_hold(uintptr_t p, uint64_t gen);

/* memkind called p's page pageable in generation gen (plain_pages_generation(), read before asking):
 * remembered as plain when the allocation table's memo says no tracked allocation holds it. */
void plain_pages_note(uintptr_t p, uint64_t gen);

/* memkind's table or the allocation table changed, or memory was unmapped: forget every page. */
void plain_pages_changed(void);

#endif
