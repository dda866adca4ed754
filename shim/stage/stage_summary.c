/* stage_summary.c: staging's section of the summary (see stage.h): what was staged (the stats'
 * transfer table), the pool's size and reuse, huge-page advice, freed pages moved into destinations
 * (stage_recycle), and why pageable copies were not staged. */
#include "stage.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "hostmem/hugepage.h"
#include "hostmem/recycle.h"
#include "observe/stats.h"
#include "observe/units.h"
#include "omp_team.h"
#include "policy.h"
#include "pool.h"

/* Appends to buf at *n like snprintf; *n at or past len means it did not fit. */
static void append(char *buf, size_t len, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
    if (*n >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + *n, len - *n, fmt, ap);
    va_end(ap);
    *n = m < 0 ? len : *n + (size_t)m;
}

size_t stage_summary_json(char *buf, size_t len)
{
    uint64_t n, bytes, c, b;
    struct pool_stats ps;
    struct hugepage_stats hp;
    struct recycle_stats rs;
    stats_staged(&n, &bytes);
    pool_get_stats(&ps);
    hugepage_get_stats(&hp);
    recycle_get_stats(&rs);
    size_t at = 0;
    append(buf, len, &at,
           ",\"staging\":{\"staged_copies\":%llu,\"staged_bytes\":%llu,\"pool_bytes\":%llu,"
           "\"pool_high_water_bytes\":%llu,\"pool_slabs\":%llu,\"pool_pin_ns\":%llu,\"chunk_acquires\":%llu,"
           "\"chunk_reuses\":%llu,\"wait_ns\":%llu,\"chunk_wait_ns\":%llu,"
           "\"hugepage_copies\":%llu,\"hugepage_bytes\":%llu,\"hugepage_program_decides\":%s,"
           "\"hugepage_program_copies\":%llu,\"openmp_team_copies\":%llu,\"recycle_kept_bytes\":%llu,"
           "\"recycle_filled_bytes\":%llu,\"recycle_released_bytes\":%llu,\"recycle_reserve_bytes\":%llu,"
           "\"recycle_high_water_bytes\":%llu,\"unstaged\":[",
           (unsigned long long)n, (unsigned long long)bytes, (unsigned long long)ps.pool_bytes,
           (unsigned long long)ps.high_water_bytes, (unsigned long long)ps.slabs, (unsigned long long)ps.pin_ns,
           (unsigned long long)ps.acquires,
           (unsigned long long)ps.chunk_reuses, (unsigned long long)ps.wait_ns, (unsigned long long)ps.chunk_wait_ns,
           (unsigned long long)hp.copies,
           (unsigned long long)hp.bytes, hp.program_decides ? "true" : "false", (unsigned long long)hp.program_copies,
           (unsigned long long)omp_team_copies(), (unsigned long long)rs.kept_bytes,
           (unsigned long long)rs.filled_bytes, (unsigned long long)rs.released_bytes,
           (unsigned long long)rs.reserve_bytes, (unsigned long long)rs.high_water_bytes);
    bool first = true;
    for (int r = 1; r < UNSTAGED_COUNT; r++) {
        stats_unstaged((enum unstaged_reason)r, &c, &b);
        if (!c)
            continue;
        append(buf, len, &at, "%s{\"reason\":\"%s\",\"count\":%llu,\"bytes\":%llu}", first ? "" : ",",
               unstaged_reason_names[r], (unsigned long long)c, (unsigned long long)b);
        first = false;
    }
    append(buf, len, &at, "]}");
    return at < len ? at : 0;
}

size_t stage_summary_text(char *buf, size_t len)
{
    uint64_t n, bytes, c, b;
    struct pool_stats ps;
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
    int pid = (int)getpid();
    stats_staged(&n, &bytes);
    pool_get_stats(&ps);
    size_t at = 0;
    buf[0] = '\0';
    if (n || ps.pool_bytes)
        append(buf, len, &at,
               "==%d== staging: %llu copies (%s) through the pinned pool; pool %s (high water %s; %llu slabs, "
               "%s in the driver pinning them), %llu chunk reuses, %s waiting for chunks' DMAs, %s for chunks other "
               "copies held\n",
               pid, (unsigned long long)n, units_bytes(bytes, b1, sizeof b1), units_bytes(ps.pool_bytes, b2, sizeof b2),
               units_bytes(ps.high_water_bytes, b3, sizeof b3), (unsigned long long)ps.slabs,
               units_ns(ps.pin_ns, b5, sizeof b5), (unsigned long long)ps.chunk_reuses,
               units_ns(ps.wait_ns, b4, sizeof b4), units_ns(ps.chunk_wait_ns, b6, sizeof b6));
    struct hugepage_stats hp;
    hugepage_get_stats(&hp);
    if (hp.copies)
        append(buf, len, &at, "==%d== staging: huge pages advised for %llu copies' destinations (%s)\n", pid,
               (unsigned long long)hp.copies, units_bytes(hp.bytes, b1, sizeof b1));
    if (hp.program_decides && pinshim_policy.stage_hugepages)
        append(buf, len, &at, "==%d== staging: no huge-page advice: the program gives its own (madvise)\n", pid);
    if (hp.program_copies)
        append(buf, len, &at, "==%d== staging: %llu copies into huge pages the program advised, written a 2 MiB block per thread\n",
               pid, (unsigned long long)hp.program_copies);
    struct recycle_stats rs;
    recycle_get_stats(&rs);
    if (rs.kept_bytes)
        append(buf, len, &at,
               "==%d== staging: %s of freed buffers' pages moved into D2H destinations (stage_recycle; %s kept, "
               "%s given back, %s held now, high water %s)\n",
               pid, units_bytes(rs.filled_bytes, b1, sizeof b1), units_bytes(rs.kept_bytes, b2, sizeof b2),
               units_bytes(rs.released_bytes, b3, sizeof b3), units_bytes(rs.reserve_bytes, b4, sizeof b4),
               units_bytes(rs.high_water_bytes, b5, sizeof b5));
    if (omp_team_copies())
        append(buf, len, &at, "==%d== staging: %llu copies made with the program's spinning OpenMP threads (stage_openmp)\n",
               pid, (unsigned long long)omp_team_copies());
    for (int r = 1; r < UNSTAGED_COUNT; r++) {
        stats_unstaged((enum unstaged_reason)r, &c, &b);
        if (c)
            append(buf, len, &at, "==%d== not staged (pageable, %s): %llu copies, %s\n", pid, unstaged_reason_names[r],
                   (unsigned long long)c, units_bytes(b, b1, sizeof b1));
    }
    return at < len ? at : 0;
}
