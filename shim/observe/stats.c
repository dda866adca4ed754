/* stats.c: counters (lock-free) and the one printer for all of them, as a table or as JSON. */
#define _GNU_SOURCE
#include "stats.h"
#include "units.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/build_commit.h"
#include "base/common.h"
#include "base/gate.h"
#include "base/driver.h"
#include "base/tally.h"
#include "pinshim.h"

struct cell {
    uint64_t count, bytes, host_ns; /* in this order: tally_add3 */
};

/* The last device slot counts copies of an unknown device (or an ordinal past STATS_DEVICES).
 * Per-thread counters (base/tally.h): adding is a plain store into the thread's own copy, whose
 * pages are touched only for the devices the thread copies to. */
#define DEVICE_SLOTS (STATS_DEVICES + 1)
#define COUNTED_DIRS 2 /* H2D, D2H */

/* A row's calls; a sync point's also its timing (timed: the calls whose time was read). */
struct entry_cell {
    uint64_t calls, timed, host_ns; /* in this order: tally_add3 */
};

/* What a call the shim only counts adds to, on one page of the thread's copy: every row's calls,
 * and device 0's counted copies (stats_add_counted: small pageable copies and copies of the
 * program's own pinned memory, passed, H2D or D2H); the other devices' such cells lie below.
 * Spread over the transfer table and the calls' and syncs' arrays, they were three pages per copy,
 * and a framework's work between two calls pushes the shim's page translations out of the TLBs as
 * it pushes its lines out of the caches. The sums fold these cells back into the transfer table
 * (sum_transfer_cell). */
static struct {
    struct entry_cell entries[ENTRY_COUNT];
    /* stats_add_counted's cells: direction, class, size bucket. A small copy's one line where it
     * was three (transfer, reason, advice) */
    struct cell counted[COUNTED_DIRS][COUNTED_CLASSES][STATS_BUCKETS];
} hot TALLY __attribute__((aligned(4096)));
_Static_assert(sizeof hot <= 4096, "the counted calls' counters are one page");
static struct cell counted_rest[DEVICE_SLOTS - 1][COUNTED_DIRS][COUNTED_CLASSES][STATS_BUCKETS] TALLY;
/* the rest of the transfers (a cell of own pinned memory passed is always 0 here) */
static struct cell transfers[DEVICE_SLOTS][DIR_COUNT][KIND_COUNT][STATS_BUCKETS][ACTION_COUNT] TALLY;
static uint64_t failed_copies TALLY;
/* The summary writers' buffers are 64 KiB: too large for small thread stacks, hence static and
 * locked. A forked child starts with fresh locks (stats_reset): a parent thread may have held one. */
static pthread_mutex_t summary_lock = PTHREAD_MUTEX_INITIALIZER, record_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cell unstaged[UNSTAGED_COUNT] TALLY;

static void add(uint64_t *counter, uint64_t v) { tally_add(counter, v); }
static uint64_t get(const uint64_t *counter) { return tally_get(counter); }

/* The device slot of an ordinal: the last slot for an unknown one (-1) or one past STATS_DEVICES. */
static unsigned device_slot(int32_t device)
{
    return (uint32_t)device < STATS_DEVICES ? (unsigned)device : STATS_DEVICES;
}

/* Without a branch (every counted copy computes it, on a path whose branches are cold): below
 * 4 KiB (log2 at most 11) the difference from 10 halves to 0; from 4 KiB, (log2 - 12) / 2 + 1. */
PINSHIM_HOT unsigned stats_bucket(size_t bytes)
{
    unsigned log2 = 63u - (unsigned)__builtin_clzll((unsigned long long)bytes | 1);
    unsigned b = ((log2 > 10 ? log2 : 10) - 10) / 2;
    return b < STATS_BUCKETS ? b : STATS_BUCKETS - 1;
}

uint64_t stats_bucket_min(unsigned bucket) { return bucket == 0 ? 0 : 4096ull << (2 * (bucket - 1)); }

/* Device slot v's cell of counted copies of one class (dir: DIR_H2D or DIR_D2H). */
static struct cell *counted_cell(unsigned v, enum copy_dir dir, enum counted_class cls, unsigned bucket)
{
    unsigned d = dir == DIR_D2H;
    return v == 0 ? &hot.counted[d][cls][bucket] : &counted_rest[v - 1][d][cls][bucket];
}

/* Whether a transfer cell is counted in a counted cell: the program's pinned memory passed, H2D or
 * D2H. */
static bool is_own_pinned(enum copy_dir dir, enum host_kind kind, enum copy_action action)
{
    return action == ACTION_PASS && (dir == DIR_H2D || dir == DIR_D2H) &&
           (kind == KIND_PINNED || kind == KIND_REGISTERED);
}

/* In line in the counted path, its one add (tally_add3). */
__attribute__((always_inline)) inline void stats_add_counted(int32_t device, enum copy_dir dir, enum counted_class cls,
                                                             size_t bytes, uint64_t host_ns)
{
    tally_add3(&counted_cell(device_slot(device), dir, cls, stats_bucket(bytes))->count, 1, bytes, host_ns);
}

PINSHIM_HOT void stats_add_transfer(int32_t device, enum copy_dir dir, enum host_kind kind, size_t bytes,
                        enum copy_action action, uint64_t host_ns)
{
    if (is_own_pinned(dir, kind, action)) {
        stats_add_counted(device, dir, stats_counted_class(kind, false), bytes, host_ns);
        return;
    }
    tally_add3(&transfers[device_slot(device)][dir][kind][stats_bucket(bytes)][action].count, 1, bytes, host_ns);
}

void stats_add_failed_copy(void) { add(&failed_copies, 1); }

/* Adds cell c's three counters to the sums (an empty cell costs one read: a summary reads them all). */
static void sum_cell(const struct cell *c, uint64_t *count, uint64_t *bytes, uint64_t *host_ns)
{
    uint64_t n = get(&c->count);
    if (!n)
        return;
    *count += n;
    *bytes += get(&c->bytes);
    *host_ns += get(&c->host_ns);
}

void stats_small_pageable(enum copy_dir dir, bool async, uint64_t *count, uint64_t *bytes, uint64_t *host_ns)
{
    *count = *bytes = *host_ns = 0;
    if (dir != DIR_H2D && dir != DIR_D2H)
        return;
    for (int v = 0; v < DEVICE_SLOTS; v++)
        for (unsigned b = 0; b < STATS_BUCKETS; b++)
            sum_cell(counted_cell((unsigned)v, dir, stats_counted_class(KIND_PAGEABLE, async), b), count, bytes,
                     host_ns);
}

/* Adds transfer cell (v, dir, kind, bucket, action) to the sums, with the small pageable copies it
 * stands for, or from the hot page's cells of own pinned memory. */
static void sum_transfer_cell(int v, int dir, int kind, unsigned bucket, int action, uint64_t *count,
                              uint64_t *bytes, uint64_t *host_ns)
{
    if (is_own_pinned((enum copy_dir)dir, (enum host_kind)kind, (enum copy_action)action)) {
        enum counted_class cls = stats_counted_class((enum host_kind)kind, false);
        sum_cell(counted_cell((unsigned)v, (enum copy_dir)dir, cls, bucket), count, bytes, host_ns);
        return;
    }
    sum_cell(&transfers[v][dir][kind][bucket][action], count, bytes, host_ns);
    if (kind == KIND_PAGEABLE && action == ACTION_PASS && (dir == DIR_H2D || dir == DIR_D2H))
        for (int async = 0; async < 2; async++)
            sum_cell(counted_cell((unsigned)v, (enum copy_dir)dir, stats_counted_class(KIND_PAGEABLE, async), bucket),
                     count, bytes, host_ns);
}

PINSHIM_HOT void stats_add_unstaged(enum unstaged_reason why, size_t bytes)
{
    add(&unstaged[why].count, 1);
    add(&unstaged[why].bytes, bytes);
}

/* The call itself was counted by stats_add_call, on the same line. */
PINSHIM_HOT void stats_add_sync(enum driver_entry_id entry, uint64_t timed, uint64_t host_ns)
{
    tally_add3(&hot.entries[entry].calls, 0, timed, host_ns);
}

PINSHIM_HOT void stats_add_call(enum driver_entry_id entry)
{
    add(&hot.entries[entry].calls, 1);
    if (PINSHIM_UNLIKELY(!__atomic_load_n(&pinshim_gate.active, __ATOMIC_RELAXED)))
        __atomic_store_n(&pinshim_gate.active, true, __ATOMIC_RELAXED);
}

bool stats_any_activity(void) { return __atomic_load_n(&pinshim_gate.active, __ATOMIC_RELAXED); }

/* Zeroes everything; called only in a forked child (one thread alive). */
void stats_reset(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    summary_lock = fresh;
    record_lock = fresh;
    tally_zero(&hot, sizeof hot);
    tally_zero(counted_rest, sizeof counted_rest);
    tally_zero(transfers, sizeof transfers);
    tally_zero(unstaged, sizeof unstaged);
    tally_zero(&failed_copies, sizeof failed_copies);
    pinshim_gate.active = false;
}

/* One non-empty cell of a device slot's transfer table, with its coordinates. */
struct cell_row {
    int dir, kind, action;
    unsigned bucket;
    uint64_t count, bytes, host_ns;
};

#define CELLS_PER_DEVICE ((unsigned)(DIR_COUNT * KIND_COUNT * STATS_BUCKETS * ACTION_COUNT))

/* The first non-empty cell of device slot v at flat index *i or after, in table order (direction,
 * host kind, size bucket, action); *i moves past it. False when there is none left. */
static bool next_row(int v, unsigned *i, struct cell_row *r)
{
    for (; *i < CELLS_PER_DEVICE; ++*i) {
        unsigned x = *i;
        r->action = (int)(x % ACTION_COUNT), x /= ACTION_COUNT;
        r->bucket = x % STATS_BUCKETS, x /= STATS_BUCKETS;
        r->kind = (int)(x % KIND_COUNT), x /= KIND_COUNT;
        r->dir = (int)x;
        r->count = r->bytes = r->host_ns = 0;
        sum_transfer_cell(v, r->dir, r->kind, r->bucket, r->action, &r->count, &r->bytes, &r->host_ns);
        if (r->count) {
            ++*i;
            return true;
        }
    }
    return false;
}

static const char *const sync_calls[] = {"cuStreamSynchronize", "cuStreamQuery", "cuCtxSynchronize",
                                         "cuEventSynchronize", "cuEventQuery", "cuEventRecord",
                                         "cuEventRecordWithFlags"};
#define SYNC_CALL_COUNT (sizeof sync_calls / sizeof sync_calls[0])

/* Sync rows are summed over the legacy and per-thread variants of one call. */
static void sync_totals(const char *query, uint64_t *count, uint64_t *timed, uint64_t *ns)
{
    *count = *timed = *ns = 0;
    for (int e = 0; e < ENTRY_COUNT; e++)
        if (strcmp(driver_entries[e].query_name, query) == 0) {
            *count += get(&hot.entries[e].calls);
            *timed += get(&hot.entries[e].timed);
            *ns += get(&hot.entries[e].host_ns);
        }
}

void stats_snapshot(struct pinshim_stats *out)
{
    memset(out->dir, 0, sizeof out->dir);
    struct cell_row r;
    for (int v = 0; v < DEVICE_SLOTS; v++)
        for (unsigned i = 0; next_row(v, &i, &r);) {
            out->dir[r.dir].count += r.count;
            out->dir[r.dir].bytes += r.bytes;
            out->dir[r.dir].host_ns += r.host_ns;
        }
    out->failed_copies = get(&failed_copies);
    out->sync_calls = 0;
    for (size_t s = 0; s < SYNC_CALL_COUNT; s++) {
        uint64_t n, timed, ns;
        sync_totals(sync_calls[s], &n, &timed, &ns);
        out->sync_calls += n;
    }
}

/* --- output: a growing buffer written with one write(2) loop at the end --- */

struct out {
    char buf[64 * 1024];
    size_t len;
};

static void outf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(struct out *o, const char *fmt, ...)
{
    if (o->len >= sizeof o->buf)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, sizeof o->buf - o->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len = o->len + (size_t)n < sizeof o->buf ? o->len + (size_t)n : sizeof o->buf - 1;
}

static void flush_out(int fd, const struct out *o)
{
    size_t done = 0;
    while (done < o->len) {
        ssize_t n = write(fd, o->buf + done, o->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        done += (size_t)n;
    }
}

static void json_string(struct out *o, const char *s)
{
    outf(o, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            outf(o, "\\%c", ch);
        else if (ch < 0x20)
            outf(o, "\\u%04x", ch);
        else
            outf(o, "%c", ch);
    }
    outf(o, "\"");
}

static const char *bucket_label(unsigned b, char *buf, size_t len)
{
    char lo[32], hi[32];
    if (b == STATS_BUCKETS - 1)
        snprintf(buf, len, ">= %s", units_bytes(stats_bucket_min(b), lo, sizeof lo));
    else
        snprintf(buf, len, "%s-%s", b ? units_bytes(stats_bucket_min(b), lo, sizeof lo) : "0",
                 units_bytes(stats_bucket_min(b + 1), hi, sizeof hi));
    return buf;
}

void stats_staged(uint64_t *count, uint64_t *bytes)
{
    *count = *bytes = 0;
    for (int d = 0; d < DIR_COUNT; d++)
        for (int k = 0; k < KIND_COUNT; k++)
            for (unsigned b = 0; b < STATS_BUCKETS; b++) {
                uint64_t n, nbytes, ns;
                stats_cell((enum copy_dir)d, (enum host_kind)k, b, ACTION_STAGED, &n, &nbytes, &ns);
                *count += n;
                *bytes += nbytes;
            }
}

void stats_cell(enum copy_dir dir, enum host_kind kind, unsigned bucket, enum copy_action action, uint64_t *count,
                uint64_t *bytes, uint64_t *host_ns)
{
    *count = *bytes = *host_ns = 0;
    for (int v = 0; v < DEVICE_SLOTS; v++)
        sum_transfer_cell(v, dir, kind, bucket, action, count, bytes, host_ns);
}

/* The device slots that counted a copy: a bit each. */
static unsigned devices_used(void)
{
    unsigned used = 0;
    struct cell_row r;
    for (int v = 0; v < DEVICE_SLOTS; v++) {
        unsigned i = 0;
        if (next_row(v, &i, &r))
            used |= 1u << v;
    }
    return used;
}

void stats_unstaged(enum unstaged_reason why, uint64_t *count, uint64_t *bytes)
{
    *count = get(&unstaged[why].count);
    *bytes = get(&unstaged[why].bytes);
    if (why != (enum unstaged_reason)__atomic_load_n(&pinshim_gate.small_unstaged, __ATOMIC_RELAXED))
        return;
    for (int dir = DIR_H2D; dir <= DIR_D2H; dir++)
        for (int async = 0; async < 2; async++) {
            uint64_t n, b, ns;
            stats_small_pageable((enum copy_dir)dir, async, &n, &b, &ns);
            *count += n;
            *bytes += b;
        }
}

/* --- the sections layers above add to the summary --- */

static const struct stats_section *sections[STATS_SECTION_MAX];
static unsigned section_count;

void stats_add_section(const struct stats_section *section)
{
    if (section_count < STATS_SECTION_MAX)
        sections[section_count++] = section;
}

static void write_sections(struct out *o, bool json)
{
    char buf[STATS_SECTION_BYTES];
    for (unsigned i = 0; i < section_count; i++) {
        size_t (*write)(char *, size_t) = json ? sections[i]->json : sections[i]->text;
        if (write && write(buf, sizeof buf))
            outf(o, "%s", buf);
    }
}

static void write_json(struct out *o)
{
    outf(o, "{\"pid\":%d,\"ppid\":%d,\"program\":", (int)getpid(), (int)getppid());
    json_string(o, program_invocation_name);
    outf(o, ",\"version\":\"%s\",\"build\":\"%s\",\"transfers\":[", PINSHIM_VERSION, build_commit());
    bool first = true;
    struct cell_row r;
    for (int v = 0; v < DEVICE_SLOTS; v++)
        for (unsigned i = 0; next_row(v, &i, &r); first = false) {
            char device[16];
            snprintf(device, sizeof device, v < STATS_DEVICES ? "%d" : "null", v);
            outf(o, "%s{\"dir\":\"%s\",\"host_kind\":\"%s\",\"bucket_min\":%llu,\"count\":%llu,"
                    "\"bytes\":%llu,\"host_ns\":%llu,\"action\":\"%s\",\"gbps\":%.3f,\"device\":%s}",
                 first ? "" : ",", copy_dir_names[r.dir], host_kind_names[r.kind],
                 (unsigned long long)stats_bucket_min(r.bucket), (unsigned long long)r.count,
                 (unsigned long long)r.bytes, (unsigned long long)r.host_ns, copy_action_names[r.action],
                 r.host_ns ? (double)r.bytes / (double)r.host_ns : 0.0, device);
        }
    outf(o, "],\"failed_copies\":%llu", (unsigned long long)get(&failed_copies));
    write_sections(o, true); /* ,"staging":{...},"registration":{...},"guard":{...} */
    outf(o, ",\"syncs\":[");
    first = true;
    for (size_t s = 0; s < SYNC_CALL_COUNT; s++) {
        uint64_t n, timed, ns;
        sync_totals(sync_calls[s], &n, &timed, &ns);
        if (!n)
            continue;
        outf(o, "%s{\"call\":\"%s\",\"count\":%llu,\"timed\":%llu,\"host_ns\":%llu}", first ? "" : ",",
             sync_calls[s], (unsigned long long)n, (unsigned long long)timed, (unsigned long long)ns);
        first = false;
    }
    outf(o, "],\"entry_points\":{");
    first = true;
    for (int e = 0; e < ENTRY_COUNT; e++) {
        uint64_t n = get(&hot.entries[e].calls);
        if (!n)
            continue;
        outf(o, "%s\"%s\":%llu", first ? "" : ",", driver_entries[e].export_name, (unsigned long long)n);
        first = false;
    }
    outf(o, "}}\n");
}

static const char *device_label(int slot, char *buf, size_t len)
{
    snprintf(buf, len, slot < STATS_DEVICES ? "%d" : "?", slot);
    return buf;
}

/* One device slot's rows (device column when split), adding them to *total. */
static void write_device_rows(struct out *o, int pid, int v, bool split, struct cell *total)
{
    char b1[32], b2[32], b3[80], dev[16];
    struct cell sum = {0, 0, 0};
    struct cell_row r;
    for (unsigned i = 0; next_row(v, &i, &r);) {
        sum.count += r.count;
        sum.bytes += r.bytes;
        sum.host_ns += r.host_ns;
        outf(o, "==%d== %-4s %-10s %-17s %-10s %9llu %12s %12s %9.2f", pid, copy_dir_names[r.dir],
             host_kind_names[r.kind], bucket_label(r.bucket, b3, sizeof b3), copy_action_names[r.action],
             (unsigned long long)r.count, units_bytes(r.bytes, b1, sizeof b1), units_ns(r.host_ns, b2, sizeof b2),
             r.host_ns ? (double)r.bytes / (double)r.host_ns : 0.0);
        outf(o, split ? " %6s\n" : "\n", device_label(v, dev, sizeof dev));
    }
    if (split && sum.count) {
        char what[32];
        snprintf(what, sizeof what, "device %s", device_label(v, dev, sizeof dev));
        outf(o, "==%d== %-44s %9llu %12s %12s\n", pid, what, (unsigned long long)sum.count,
             units_bytes(sum.bytes, b1, sizeof b1), units_ns(sum.host_ns, b2, sizeof b2));
    }
    total->count += sum.count;
    total->bytes += sum.bytes;
    total->host_ns += sum.host_ns;
}

static void write_text(struct out *o)
{
    int pid = (int)getpid();
    char b1[32], b2[32];
    outf(o, "==%d== pinshim %s: transfer summary for %s (pid %d)\n", pid, PINSHIM_VERSION,
         program_invocation_name, pid);
    /* A device column only when the copies went to several devices (one device: as before). */
    bool split = __builtin_popcount(devices_used()) > 1;
    outf(o, "==%d== %-4s %-10s %-17s %-10s %9s %12s %12s %9s%s\n", pid, "dir", "host kind", "size", "action",
         "count", "bytes", "host time", "host GB/s", split ? " device" : "");
    struct cell total = {0, 0, 0};
    for (int v = 0; v < DEVICE_SLOTS; v++)
        write_device_rows(o, pid, v, split, &total);
    uint64_t total_n = total.count, total_bytes = total.bytes, total_ns = total.host_ns;
    outf(o, "==%d== %-44s %9llu %12s %12s\n", pid, "total", (unsigned long long)total_n,
         units_bytes(total_bytes, b1, sizeof b1), units_ns(total_ns, b2, sizeof b2));
    uint64_t failed = get(&failed_copies);
    if (failed)
        outf(o, "==%d== failed copies (driver returned an error, passed to the program): %llu\n", pid,
             (unsigned long long)failed);
    write_sections(o, false); /* staging, pin-on-reuse and guard lines */
    bool any_sync = false;
    for (size_t s = 0; s < SYNC_CALL_COUNT; s++) {
        uint64_t n, timed, ns;
        sync_totals(sync_calls[s], &n, &timed, &ns);
        if (!n)
            continue;
        if (!any_sync)
            outf(o, "==%d== sync points:", pid);
        outf(o, "%s %s %llu (%s", any_sync ? "," : "", sync_calls[s], (unsigned long long)n,
             units_ns(ns, b2, sizeof b2));
        if (timed < n) /* the time is an estimate from the calls timed (base/clock.h) */
            outf(o, ", from %llu timed", (unsigned long long)timed);
        outf(o, ")");
        any_sync = true;
    }
    if (any_sync)
        outf(o, "\n");
    outf(o, "==%d== host time is time spent inside the copy call; async copies return before the DMA ends\n",
         pid);
}

void stats_write_summary(int fd, bool json)
{
    static struct out o;
    pthread_mutex_t *lock = &summary_lock;
    pthread_mutex_lock(lock);
    o.len = 0;
    if (json)
        write_json(&o);
    else
        write_text(&o);
    flush_out(fd, &o);
    pthread_mutex_unlock(lock);
}

size_t stats_summary_json(char *buf, size_t len, bool wait)
{
    static struct out o;
    pthread_mutex_t *lock = &record_lock;
    if (wait)
        pthread_mutex_lock(lock);
    else if (pthread_mutex_trylock(lock) != 0)
        return 0;
    o.len = 0;
    write_json(&o);
    size_t n = o.len < len ? o.len : 0;
    memcpy(buf, o.buf, n);
    pthread_mutex_unlock(lock);
    return n;
}
