/* linkprobe.h: measures a device's pinned H2D and D2H bandwidth once, with pinned memory the pool
 * just allocated, on a stream of the shim's own (never the program's), and stores the result in
 * linkrate.h. About 16 copies of up to 16 MiB: a few milliseconds, run on the pool's background
 * grow thread before the slab is handed out. Skipped (nothing stored) when device memory, a stream
 * or events cannot be had. Contract: called with the shim's context of `dev` current and the
 * reentrancy depth raised; never from a forked child. */
#ifndef PINSHIM_LINKPROBE_H
#define PINSHIM_LINKPROBE_H

#include <stddef.h>

void linkprobe_run(int dev, void *pinned, size_t bytes);

#endif
