/* copy_split.h: a copy whose host range is only partly inside a registration of the cache.
 * The real driver refuses a copy that starts inside a registration and runs past its end, and
 * copies a range that merely starts before one at pageable speed, so such a copy is cut at the
 * registration's edges: the piece inside goes directly (pinned speed), the pieces outside go to the
 * driver's pageable path, all on the copy's own stream, and the call returns once every piece is
 * complete (what the program was promised for memory it believes pageable, sync or async).
 * Contract: called from the copy path with the registration held (regcache_direct() said yes and
 * regcache_direct_whole() no); returns the first error a piece got, or CUDA_SUCCESS; sets
 * c->completed. Never used during stream capture (regcache_direct() declines there). Bytes
 * outside the registration may pass through a pinned pool chunk (pool.h) taken only if free now. */
#ifndef PINSHIM_COPY_SPLIT_H
#define PINSHIM_COPY_SPLIT_H

#include <cuda.h>

#include "copy.h"

CUresult copy_split_at_registration(struct copy *c);

#endif
