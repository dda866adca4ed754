/* stream_copy_check.c: shim/stage/stream_copy.c (compiled in here) against memcpy, for every
 * source and destination offset 0..63 and sizes around its thresholds, plus large sizes; bytes just
 * outside the destination must stay untouched. Prints "stream_copy: N cases identical" or the first
 * difference and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../shim/stage/stream_copy.c"

static int check(unsigned char *src_block, unsigned char *a, unsigned char *b, size_t so, size_t doff, size_t n)
{
    memset(a, 0x5A, n + 256);
    memset(b, 0x5A, n + 256);
    memcpy(a + doff, src_block + so, n);
    stream_copy(b + doff, src_block + so, n);
    if (memcmp(a, b, n + 256) == 0)
        return 0;
    printf("stream_copy: differs from memcpy at src offset %zu, dst offset %zu, %zu bytes\n", so, doff, n);
    return 1;
}

int main(void)
{
    const size_t big = (4u << 20) + 77;
    unsigned char *src = malloc(big + 256), *a = malloc(big + 512), *b = malloc(big + 512);
    if (!src || !a || !b)
        return 2;
    for (size_t i = 0; i < big + 256; i++)
        src[i] = (unsigned char)(i * 131 + (i >> 9));
    static const size_t sizes[] = {0, 1, 15, 16, 63, 64, 65, 255, 256, 257, 300, 319, 320, 511, 1000, 4096, 4097};
    unsigned cases = 0;
    for (size_t so = 0; so < 64; so++)
        for (size_t doff = 0; doff < 64; doff++)
            for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++, cases++)
                if (check(src, a, b, so, doff, sizes[k]))
                    return 1;
    for (size_t doff = 0; doff < 3; doff++, cases++)
        if (check(src, a, b, 7 * doff, doff, big - 256))
            return 1;
    printf("stream_copy: %u cases identical\n", cases);
    return 0;
}
