/* advice.h: what pinning would buy, estimated from this process's own copies.
 * Counts host<->device copies the driver made itself (staged ones say nothing about pinning) by
 * direction x (pageable | pinned-or-registered) x (sync | async),
 * and device-timed pinned copies. Bandwidths per direction: pageable from the host time of sync
 * pageable copies (async pageable ones when there are none); pinned from device timing when sampled
 * (device_timing = on), else the documented default of ADVICE_PINNED_DEFAULT_GBPS (FACTS.md: about
 * 55 GB/s each way on an H200, PCIe Gen5 x16). Saving = bytes/pageable_bw - bytes/pinned_bw.
 * Rules: async copies of pageable memory (they ran synchronously), sync copies of pageable memory,
 * and the top ADVICE_TOP_SITES call sites by host time among those that copied pageable memory
 * (sites are known only when the per-transfer log is on).
 * Contract: advice_add_* are lock-free (relaxed atomics) and thread-safe; the writers read a
 * snapshot. advice_write_text and advice_json use snprintf (no allocation; not formally
 * async-signal-safe, used from the signal-time flush as a best effort). */
#ifndef PINSHIM_ADVICE_H
#define PINSHIM_ADVICE_H

#include <stdint.h>

#include "base/copy_desc.h"
#include "jbuf.h"

#define ADVICE_PINNED_DEFAULT_GBPS 55.0
#define ADVICE_TOP_SITES 3

/* One successful copy (any kind; only host<->device copies of pageable memory the driver took are
 * kept: what the advice estimates pinning would save). */
void advice_add_copy(const struct copy *c, uint64_t host_ns);

/* A device-timed copy: its device duration (pinned/registered ones calibrate the pinned bandwidth). */
void advice_add_device_time(enum copy_dir dir, enum host_kind kind, uint64_t bytes, uint64_t device_ns);

/* Staged H2D copies ran in a process with this OpenMP runtime loaded (a static string, e.g.
 * "libgomp") and OMP_WAIT_POLICY not passive: its threads may spin on the staging threads' cores.
 * Adds an advice line when the shim staged copies. */
void advice_note_openmp(const char *runtime);

/* "==pid== advice: ..." lines, after the text summary. */
void advice_write_text(int fd);

/* Appends the summary record's "advice" array value. */
void advice_json(struct jbuf *jb);

/* Forked child: zero everything. */
void advice_reset(void);

#endif
