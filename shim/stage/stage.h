/* stage.h: fast pageable copies. A pageable H2D is cut into pool chunks: workers memcpy chunk i+1
 * into pinned memory while the DMA of chunk i runs on the program's stream; the call returns once
 * the last chunk is in pinned memory (the program may then overwrite its source), as the driver's
 * own pageable path does. A D2H into pageable memory DMAs chunk i+1 while workers copy chunk i out,
 * and returns when every byte is in place (sync and async alike, as the driver does).
 * Contract: stage_*() either declines before any side effect (returns false: the caller passes the
 * copy to the driver, c->unstaged says why) or performs the whole copy (returns true, *result is
 * what the program gets). Never used for copies during stream capture or in a forked child. */
#ifndef PINSHIM_STAGE_H
#define PINSHIM_STAGE_H

#include <cuda.h>
#include <stdbool.h>

#include "base/copy_desc.h"

/* Whether c is a staging candidate at all (pageable host side, device other side, big enough,
 * staging on); sets c->unstaged when it is a pageable copy that will not be staged. */
bool stage_wanted(struct copy *c);

/* Whether stage_wanted() would decline a pageable host<->device copy of `bytes` in this direction
 * for its size alone (below stage_min_bytes or stage_d2h_min_bytes), or because staging is off: the
 * reasons stage_small_copy() leaves in the gate. */
bool stage_declines_size(bool h2d, size_t bytes);

/* What stage_wanted() does for a pageable host<->device copy too small for either threshold,
 * without its description: the first such copy may start the pool (pool_prewarm). Why it is not
 * staged (UNSTAGED_SMALL, or UNSTAGED_DISABLED with stage = off) is the gate's small_unstaged,
 * which the stats read back for every such copy (observe/stats.h, stats_add_counted). */
void stage_small_copy(void);

/* The program retained dev's primary context: with pool_prewarm = context, the pool's first slab
 * is made in the background now (once per process), before the program's first copy. */
void stage_context_retained(CUdevice dev);

/* For entry points staging does not handle (2D, 3D, batch): records why a candidate passed. */
void stage_mark_unsupported(struct copy *c);

bool stage_h2d(struct copy *c, CUdeviceptr dst, const void *src, size_t bytes, CUstream stream, CUresult *result);
bool stage_d2h(struct copy *c, void *dst, CUdeviceptr src, size_t bytes, CUstream stream, CUresult *result);

/* Staging's section of the summary (observe/stats.h, struct stats_section): `,"staging":{...}`
 * and the "staging:" / "not staged" lines. Return the length written into buf, 0 for nothing. */
size_t stage_summary_json(char *buf, size_t len);
size_t stage_summary_text(char *buf, size_t len);

/* Forked child: never stage again (no CUDA calls there). */
void stage_forget(void);

#endif
