/* api.c: the public API of include/pinshim.h: thin translations onto the stats. */
#include "pinshim.h"

#include <stddef.h>

#include "base/common.h"
#include "observe/stats.h"

PINSHIM_EXPORT const char *pinshim_version(void) { return PINSHIM_VERSION; }

PINSHIM_EXPORT int pinshim_stats_get(struct pinshim_stats *out)
{
    if (!out || out->struct_size < sizeof *out)
        return -1;
    stats_snapshot(out);
    return 0;
}

PINSHIM_EXPORT int pinshim_summary_write(int fd, int json)
{
    if (fd < 0)
        return -1;
    stats_write_summary(fd, json != 0);
    return 0;
}
