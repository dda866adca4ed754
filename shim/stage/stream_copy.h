/* stream_copy.h: memcpy with non-temporal (streaming) stores, for staging copies whose destination
 * the CPU will not read again soon: a pool chunk the DMA engine reads next. Ordinary stores first
 * read each destination line into the cache (a read for ownership), so a copy into memory that is
 * not cached moves three bytes over the memory bus per byte copied; streaming stores move two.
 * Contract: same result as memcpy for non-overlapping ranges; all stores are globally visible when
 * it returns (it ends with a store fence), so a flag or lock released afterwards publishes them.
 * On CPUs other than x86-64 it is memcpy. */
#ifndef PINSHIM_STREAM_COPY_H
#define PINSHIM_STREAM_COPY_H

#include <stddef.h>

void stream_copy(void *dst, const void *src, size_t n);

#endif
