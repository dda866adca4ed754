/* advice.c: the counters behind the advice and the rules that turn them into messages with an
 * estimated saving (see advice.h). */
#define _GNU_SOURCE
#include "advice.h"
#include "units.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/tally.h"
#include "callsite.h"
#include "linkrate.h"

enum { SIDE_H2D, SIDE_D2H, SIDES };
enum { CLASS_PAGEABLE_SYNC, CLASS_PAGEABLE_ASYNC, CLASS_PINNED_SYNC, CLASS_PINNED_ASYNC, CLASSES };

struct cell {
    uint64_t count, bytes, ns;
};

static struct cell copies[SIDES][CLASSES] TALLY; /* per-thread counters (base/tally.h) */
static struct cell pinned_device[SIDES] TALLY;   /* device-timed pinned/registered copies */

static void add(uint64_t *counter, uint64_t v) { tally_add(counter, v); }
static uint64_t get(const uint64_t *counter) { return tally_get(counter); }

static int side_of(enum copy_dir dir) { return dir == DIR_H2D ? SIDE_H2D : dir == DIR_D2H ? SIDE_D2H : -1; }

void advice_add_copy(const struct copy *c, uint64_t host_ns)
{
    int side = side_of(c->dir);
    /* a staged copy did not take the driver's pageable path: it says nothing about pinning */
    if (side < 0 || !memkind_is_host(c->host_kind) || c->action != ACTION_PASS)
        return;
    bool pageable = c->host_kind == KIND_PAGEABLE;
    int cls = pageable ? (c->async ? CLASS_PAGEABLE_ASYNC : CLASS_PAGEABLE_SYNC)
                       : (c->async ? CLASS_PINNED_ASYNC : CLASS_PINNED_SYNC);
    struct cell *cell = &copies[side][cls];
    add(&cell->count, 1);
    add(&cell->bytes, c->bytes);
    add(&cell->ns, host_ns);
}

void advice_add_device_time(enum copy_dir dir, enum host_kind kind, uint64_t bytes, uint64_t device_ns)
{
    int side = side_of(dir);
    if (side < 0 || (kind != KIND_PINNED && kind != KIND_REGISTERED) || !device_ns)
        return;
    add(&pinned_device[side].count, 1);
    add(&pinned_device[side].bytes, bytes);
    add(&pinned_device[side].ns, device_ns);
}

void advice_reset(void)
{
    tally_zero(copies, sizeof copies);
    tally_zero(pinned_device, sizeof pinned_device);
}

/* --- estimates --- */

struct bandwidth {
    double pageable, pinned; /* bytes per ns = GB/s; pageable 0 = unknown */
    char source[200];
};

static void estimate_bandwidth(int side, struct bandwidth *bw)
{
    static const char *names[SIDES] = {"h2d", "d2h"};
    const struct cell *sync = &copies[side][CLASS_PAGEABLE_SYNC], *async = &copies[side][CLASS_PAGEABLE_ASYNC];
    const char *pageable_from = "sync";
    uint64_t bytes = get(&sync->bytes), ns = get(&sync->ns), n = get(&sync->count);
    if (!ns) {
        bytes = get(&async->bytes);
        ns = get(&async->ns);
        n = get(&async->count);
        pageable_from = "async";
    }
    bw->pageable = ns ? (double)bytes / (double)ns : 0;
    uint64_t dev_bytes = get(&pinned_device[side].bytes), dev_ns = get(&pinned_device[side].ns);
    char pinned_text[100];
    if (dev_ns) {
        bw->pinned = (double)dev_bytes / (double)dev_ns;
        snprintf(pinned_text, sizeof pinned_text, "pinned %.2f GB/s from device timing of %llu pinned copies",
                 bw->pinned, (unsigned long long)get(&pinned_device[side].count));
    } else if (linkrate_first_device() >= 0) {
        int dev = linkrate_first_device();
        bw->pinned = linkrate_get(dev, side == 0 ? LINK_H2D : LINK_D2H);
        snprintf(pinned_text, sizeof pinned_text, "pinned %.2f GB/s measured on device %d at start (link_probe)",
                 bw->pinned, dev);
    } else {
        bw->pinned = ADVICE_PINNED_DEFAULT_GBPS;
        snprintf(pinned_text, sizeof pinned_text, "pinned %.0f GB/s: documented default, not measured",
                 ADVICE_PINNED_DEFAULT_GBPS);
    }
    snprintf(bw->source, sizeof bw->source, "%s: pageable %.2f GB/s measured from %llu %s pageable copies, %s",
             names[side], bw->pageable, (unsigned long long)n, pageable_from, pinned_text);
}

static uint64_t saving_ns(const struct bandwidth *bw, uint64_t bytes)
{
    if (!bytes || bw->pageable <= 0 || bw->pageable >= bw->pinned)
        return 0;
    return (uint64_t)((double)bytes / bw->pageable - (double)bytes / bw->pinned);
}

struct item {
    const char *rule;
    char message[640];
    uint64_t saving_ns;
};

/* The bandwidth sources a saving used, "; "-joined, for the sides with bytes. */
static void sources(const struct bandwidth bw[SIDES], const uint64_t bytes[SIDES], char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int s = 0; s < SIDES && used < len; s++)
        if (bytes[s])
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "; " : "", bw[s].source);
}

static size_t compute(struct item *items, size_t max)
{
    struct bandwidth bw[SIDES];
    for (int s = 0; s < SIDES; s++)
        estimate_bandwidth(s, &bw[s]);
    size_t n = 0;
    char b1[32], b2[32], b3[32], src[450];
    static const struct {
        const char *rule;
        int cls;
        const char *what;
    } class_rules[] = {
        {"async_pageable", CLASS_PAGEABLE_ASYNC,
         "async copies used pageable host memory, so they ran synchronously (no overlap with other work); "
         "pin the host buffers (cuMemHostAlloc/cudaMallocHost, tensor.pin_memory()) or register them"},
        {"sync_pageable", CLASS_PAGEABLE_SYNC,
         "sync copies used pageable host memory, which the driver stages through its own small pinned "
         "buffers at a fraction of the link's speed; pin or register the host buffers"},
    };
    for (size_t r = 0; r < sizeof class_rules / sizeof class_rules[0] && n < max; r++) {
        uint64_t count = 0, total = 0, ns = 0, bytes[SIDES], saving = 0;
        for (int s = 0; s < SIDES; s++) {
            const struct cell *c = &copies[s][class_rules[r].cls];
            count += get(&c->count);
            bytes[s] = get(&c->bytes);
            total += bytes[s];
            ns += get(&c->ns);
            saving += saving_ns(&bw[s], bytes[s]);
        }
        if (!count)
            continue;
        sources(bw, bytes, src, sizeof src);
        items[n].rule = class_rules[r].rule;
        items[n].saving_ns = saving;
        snprintf(items[n].message, sizeof items[n].message, "%llu %s (%s, %s in the calls); pinning would save "
                 "about %s (%s)", (unsigned long long)count, class_rules[r].what, units_bytes(total, b1, sizeof b1),
                 units_ns(ns, b2, sizeof b2), units_ns(saving, b3, sizeof b3), src);
        n++;
    }
    const struct callsite *top[16];
    struct callsite_totals t[16];
    size_t sites = callsite_top(top, t, 16), shown = 0;
    for (size_t i = 0; i < sites && shown < ADVICE_TOP_SITES && n < max; i++) {
        if (!t[i].pageable_count)
            continue;
        uint64_t bytes[SIDES] = {t[i].pageable_h2d_bytes, t[i].pageable_d2h_bytes};
        uint64_t saving = saving_ns(&bw[SIDE_H2D], bytes[0]) + saving_ns(&bw[SIDE_D2H], bytes[1]);
        char where[200];
        sources(bw, bytes, src, sizeof src);
        items[n].rule = "site";
        items[n].saving_ns = saving;
        snprintf(items[n].message, sizeof items[n].message, "call site %s: %llu copies of pageable memory "
                 "(%s, %s in the calls); pinning its buffers would save about %s (%s)",
                 callsite_text(top[i], where, sizeof where), (unsigned long long)t[i].pageable_count,
                 units_bytes(bytes[0] + bytes[1], b1, sizeof b1), units_ns(t[i].pageable_ns, b2, sizeof b2),
                 units_ns(saving, b3, sizeof b3), src);
        n++;
        shown++;
    }
    return n;
}

void advice_write_text(int fd)
{
    struct item items[2 + ADVICE_TOP_SITES];
    size_t n = compute(items, sizeof items / sizeof items[0]);
    char line[1024];
    int pid = (int)getpid();
    for (size_t i = 0; i <= n; i++) {
        int len = i < n ? snprintf(line, sizeof line, "==%d== advice: %s\n", pid, items[i].message)
                        : n ? 0 : snprintf(line, sizeof line, "==%d== advice: none (no copy used pageable host memory)\n", pid);
        if (len <= 0)
            continue;
        size_t todo = (size_t)len < sizeof line ? (size_t)len : sizeof line - 1, done = 0;
        while (done < todo) {
            ssize_t w = write(fd, line + done, todo - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            done += (size_t)w;
        }
    }
}

void advice_json(struct jbuf *jb)
{
    struct item items[2 + ADVICE_TOP_SITES];
    size_t n = compute(items, sizeof items / sizeof items[0]);
    jb_lit(jb, "[");
    for (size_t i = 0; i < n; i++) {
        jb_lit(jb, i ? ",{\"rule\":" : "{\"rule\":");
        jb_str(jb, items[i].rule);
        jb_lit(jb, ",\"message\":");
        jb_str(jb, items[i].message);
        jb_lit(jb, ",\"est_saving_ns\":");
        jb_u64(jb, items[i].saving_ns);
        jb_lit(jb, "}");
    }
    jb_lit(jb, "]");
}
