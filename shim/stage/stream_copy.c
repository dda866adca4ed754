/* stream_copy.c: SSE2 streaming stores (part of the x86-64 baseline, so no CPU check); see
 * stream_copy.h. The head is copied with memcpy up to a 16-byte aligned destination, then 64 bytes
 * per step with unaligned loads and aligned streaming stores, then the tail with memcpy. */
#include "stream_copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>

void stream_copy(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (n < 256 || head >= n) {
        memcpy(d, s, n);
        return;
    }
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    for (; n >= 64; d += 64, s += 64, n -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    memcpy(d, s, n);
    _mm_sfence();
}
#else
void stream_copy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
#endif
