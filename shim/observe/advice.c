/* advice.c: the counters behind the advice and the rules that turn them into messages with an
 * estimated saving (see advice.h). */
#define _GNU_SOURCE
#include "advice.h"
#include "units.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/tally.h"
#include "callsite.h"
#include "linkrate.h"
#include "modules.h"
#include "stats.h"

enum { SIDE_H2D, SIDE_D2H, SIDES };
enum { CLASS_PAGEABLE_SYNC, CLASS_PAGEABLE_ASYNC, CLASSES }; /* the advice reads pageable copies only */

struct cell {
    uint64_t count, bytes, ns; /* in this order: tally_add3 */
};

static struct cell copies[SIDES][CLASSES] TALLY; /* per-thread counters (base/tally.h) */
static struct cell pinned_device[SIDES] TALLY;   /* device-timed pinned/registered copies */

static void add(uint64_t *counter, uint64_t v) { tally_add(counter, v); }
static uint64_t get(const uint64_t *counter) { return tally_get(counter); }

static int side_of(enum copy_dir dir) { return dir == DIR_H2D ? SIDE_H2D : dir == DIR_D2H ? SIDE_D2H : -1; }

/* A pageable class's copies on one side: those counted here, and the small ones the counted
 * shortcut counted in the stats' one cell (stats_add_counted). */
static void class_totals(int side, int cls, uint64_t *count, uint64_t *bytes, uint64_t *ns)
{
    stats_small_pageable(side == SIDE_H2D ? DIR_H2D : DIR_D2H, cls == CLASS_PAGEABLE_ASYNC, count, bytes, ns);
    const struct cell *c = &copies[side][cls];
    *count += get(&c->count);
    *bytes += get(&c->bytes);
    *ns += get(&c->ns);
}

PINSHIM_HOT void advice_add_copy(const struct copy *c, uint64_t host_ns)
{
    int side = side_of(c->dir);
    /* a staged copy did not take the driver's pageable path: it says nothing about pinning */
    if (side < 0 || c->host_kind != KIND_PAGEABLE || c->action != ACTION_PASS)
        return;
    struct cell *cell = &copies[side][c->async ? CLASS_PAGEABLE_ASYNC : CLASS_PAGEABLE_SYNC];
    tally_add3(&cell->count, 1, c->bytes, host_ns);
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

static const char *openmp_runtime; /* set once (advice_note_openmp) */

void advice_note_openmp(const char *runtime) { __atomic_store_n(&openmp_runtime, runtime, __ATOMIC_RELEASE); }

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
    const char *pageable_from = "sync";
    uint64_t bytes, ns, n;
    class_totals(side, CLASS_PAGEABLE_SYNC, &n, &bytes, &ns);
    if (!ns) {
        class_totals(side, CLASS_PAGEABLE_ASYNC, &n, &bytes, &ns);
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

#define ADVICE_ITEMS (4 + ADVICE_TOP_SITES) /* the two class rules, the shim's, OpenMP's, the sites */

struct item {
    const char *rule;
    char message[2048];
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

/* Appends to buf at *used like snprintf; *used stays below len. */
static void append(char *buf, size_t len, size_t *used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    if (*used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used = *used + (size_t)n < len ? *used + (size_t)n : len - 1;
}

/* "X h2d", "Y d2h" or "X h2d and Y d2h" */
static void append_sides(char *buf, size_t len, size_t *used, const uint64_t bytes[SIDES])
{
    char b1[32], b2[32];
    if (bytes[SIDE_H2D] && bytes[SIDE_D2H])
        append(buf, len, used, "%s h2d and %s d2h", units_bytes(bytes[SIDE_H2D], b1, sizeof b1),
               units_bytes(bytes[SIDE_D2H], b2, sizeof b2));
    else
        append(buf, len, used, "%s %s", units_bytes(bytes[SIDE_H2D] + bytes[SIDE_D2H], b1, sizeof b1),
               bytes[SIDE_H2D] ? "h2d" : "d2h");
}

/* --- what the shim did: staging and registrations against the driver's pageable path --- */

#define MIB_BUCKET 5 /* stats bucket [1 MiB, 4 MiB): from there the driver's pageable path runs at its steady rate */

/* Whether pageable copies of bucket ref tell the speed of copies of bucket b: the same or a
 * neighbouring bucket (4x), or both at least 1 MiB. */
static bool comparable(unsigned ref, unsigned b)
{
    unsigned steps = ref > b ? ref - b : b - ref;
    return steps <= 1 || (ref >= MIB_BUCKET && b >= MIB_BUCKET);
}

/* The driver's pageable rate (bytes per ns) for copies of bucket b in dir, from this process's own
 * pageable copies the shim passed to it (the nearest comparable bucket, the larger on a tie);
 * 0 when there are none. *ref: the copies it rests on. */
static double pageable_rate(enum copy_dir dir, unsigned b, uint64_t *ref)
{
    double rate = 0;
    unsigned best = STATS_BUCKETS;
    *ref = 0;
    for (unsigned r = 0; r < STATS_BUCKETS; r++) {
        uint64_t n, bytes, ns;
        stats_cell(dir, KIND_PAGEABLE, r, ACTION_PASS, &n, &bytes, &ns);
        if (!n || !ns || !comparable(r, b))
            continue;
        unsigned d = r > b ? r - b : b - r, bd = best > b ? best - b : b - best;
        if (best == STATS_BUCKETS || d < bd || (d == bd && r > best)) {
            best = r;
            rate = (double)bytes / (double)ns;
            *ref = n;
        }
    }
    return rate;
}

/* Totals of the copies the shim staged or registered and the estimate of what the driver's
 * pageable path would have taken for them. */
struct shim_did {
    uint64_t count[ACTION_COUNT], bytes[ACTION_COUNT], ns[ACTION_COUNT];
    uint64_t estimated_ns, estimated_actual_ns, unestimated; /* estimated_actual_ns: the time of the copies estimated */
    char how[400];
};

static void shim_did(struct shim_did *out)
{
    memset(out, 0, sizeof *out);
    size_t used = 0;
    char b1[32];
    static const enum copy_dir dirs[SIDES] = {DIR_H2D, DIR_D2H};
    for (int s = 0; s < SIDES; s++) {
        double direction_pageable = 0;
        uint64_t direction_ref = 0, direction_bytes = 0;
        for (unsigned b = 0; b < STATS_BUCKETS; b++)
            for (int a = ACTION_STAGED; a < ACTION_COUNT; a++) {
                uint64_t n, bytes, ns, ref;
                stats_cell(dirs[s], KIND_PAGEABLE, b, (enum copy_action)a, &n, &bytes, &ns);
                if (!n)
                    continue;
                out->count[a] += n;
                out->bytes[a] += bytes;
                out->ns[a] += ns;
                double rate = pageable_rate(dirs[s], b, &ref);
                if (rate <= 0) {
                    out->unestimated += n;
                    continue;
                }
                out->estimated_ns += (uint64_t)((double)bytes / rate);
                out->estimated_actual_ns += ns;
                direction_pageable += (double)bytes / rate;
                direction_bytes += bytes;
                direction_ref += ref;
            }
        if (direction_bytes && used < sizeof out->how)
            used += (size_t)snprintf(out->how + used, sizeof out->how - used,
                                     "%s%s: pageable %.2f GB/s over %s, from %llu copies of comparable size the driver "
                                     "made in this process",
                                     used ? "; " : "", s == SIDE_H2D ? "h2d" : "d2h",
                                     (double)direction_bytes / direction_pageable,
                                     units_bytes(direction_bytes, b1, sizeof b1), (unsigned long long)direction_ref);
    }
}

/* The time saved (estimate), or 0. */
static uint64_t did_saving(const struct shim_did *d)
{
    return d->estimated_ns > d->estimated_actual_ns ? d->estimated_ns - d->estimated_actual_ns : 0;
}

/* --- the fix, in the terms of the framework that made the copy --- */

static const char *const fixes[FRAMEWORK_COUNT][SIDES] = {
    [FRAMEWORK_CUDA_C] =
        {"in CUDA C, allocate the source with cudaMallocHost/cudaHostAlloc (cuMemHostAlloc), or register a buffer "
         "you copy from again and again once with cudaHostRegister (cuMemHostRegister), and copy with "
         "cudaMemcpyAsync on a stream",
         "in CUDA C, copy into a destination allocated with cudaMallocHost/cudaHostAlloc (cuMemHostAlloc), or "
         "register it once with cudaHostRegister (cuMemHostRegister), with cudaMemcpyAsync on a stream and a "
         "synchronize before reading it"},
    [FRAMEWORK_PYTORCH] =
        {"in PyTorch, pin the source: DataLoader(pin_memory=True) for batches, or tensor.pin_memory() once for a "
         "tensor copied again and again, then .to(\"cuda\", non_blocking=True)",
         "in PyTorch, .to(\"cpu\") allocates a fresh pageable tensor you cannot pin: for repeated copies "
         "preallocate a pinned tensor once (torch.empty(shape, dtype=dtype, pin_memory=True)) and copy into it "
         "with out.copy_(t, non_blocking=True), synchronizing the stream before reading it"},
    [FRAMEWORK_CUPY] =
        {"in CuPy, build the host array in pinned memory (cupyx.empty_pinned, or buffers from the pinned memory "
         "pool, cupy.cuda.alloc_pinned_memory) and copy it with ndarray.set(host, stream=s)",
         "in CuPy, copy into a pinned array from cupyx.empty_pinned (or the pinned memory pool) with "
         "a.get(out=pinned, stream=s) instead of cupy.asnumpy into fresh memory"},
    [FRAMEWORK_JAX] =
        {"in JAX, keep the data on the device (one jax.device_put, the array reused) or put the host data in "
         "pinned host memory (a sharding with memory_kind=\"pinned_host\")",
         "in JAX, np.asarray of a device array copies into fresh pageable memory: fetch results less often, or "
         "move them to pinned host memory (jax.device_put with a sharding of memory_kind=\"pinned_host\")"},
};

static const char *const framework_titles[FRAMEWORK_COUNT] = {"CUDA C", "PyTorch", "CuPy", "JAX"};

/* --- the rules --- */

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
            uint64_t side_count, side_ns;
            class_totals(s, class_rules[r].cls, &side_count, &bytes[s], &side_ns);
            count += side_count;
            total += bytes[s];
            ns += side_ns;
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

    /* What the shim already did, so that a user knows what the program would lose without it. */
    struct shim_did did;
    shim_did(&did);
    if (n < max && (did.count[ACTION_STAGED] || did.count[ACTION_REGISTERED])) {
        char *m = items[n].message;
        size_t len = sizeof items[n].message, used = 0;
        append(m, len, &used, "the shim");
        if (did.count[ACTION_STAGED])
            append(m, len, &used, " staged %llu copies of pageable memory through its pinned pool (%s, %s in the calls)",
                   (unsigned long long)did.count[ACTION_STAGED], units_bytes(did.bytes[ACTION_STAGED], b1, sizeof b1),
                   units_ns(did.ns[ACTION_STAGED], b2, sizeof b2));
        if (did.count[ACTION_REGISTERED])
            append(m, len, &used, "%s sent %llu copies of pageable memory directly from buffers it registered (%s, %s in "
                   "the calls)", did.count[ACTION_STAGED] ? " and" : "", (unsigned long long)did.count[ACTION_REGISTERED],
                   units_bytes(did.bytes[ACTION_REGISTERED], b1, sizeof b1),
                   units_ns(did.ns[ACTION_REGISTERED], b2, sizeof b2));
        if (did.estimated_ns && did.estimated_ns >= did.estimated_actual_ns)
            append(m, len, &used,
                   "; the driver's pageable path would have taken about %s for the %s of them it can be compared with, "
                   "so without the shim the program would spend about %s more in these copies (an estimate: %s)",
                   units_ns(did.estimated_ns, b1, sizeof b1), units_ns(did.estimated_actual_ns, b2, sizeof b2),
                   units_ns(did_saving(&did), b3, sizeof b3), did.how);
        else if (did.estimated_ns)
            append(m, len, &used,
                   "; the driver's pageable path would have taken about %s for the %s of them it can be compared with: "
                   "the shim's way was about %s slower for these copies (an estimate: %s)",
                   units_ns(did.estimated_ns, b1, sizeof b1), units_ns(did.estimated_actual_ns, b2, sizeof b2),
                   units_ns(did.estimated_actual_ns - did.estimated_ns, b3, sizeof b3), did.how);
        if (did.unestimated)
            append(m, len, &used,
                   "; for %llu of them no pageable copy of a comparable size went through the driver in this "
                   "process, so what they saved is not estimated (run once with PINSHIM_STAGE=off "
                   "PINSHIM_PIN_ON_REUSE=off to measure it)",
                   (unsigned long long)did.unestimated);
        items[n].rule = "shim";
        items[n].saving_ns = did_saving(&did);
        n++;
    }

    const char *runtime = __atomic_load_n(&openmp_runtime, __ATOMIC_ACQUIRE);
    if (n < max && runtime && did.count[ACTION_STAGED]) {
        snprintf(items[n].message, sizeof items[n].message,
                 "the shim staged pageable H2D copies with its own CPU threads while %s (OpenMP) is loaded "
                 "and OMP_WAIT_POLICY is not passive: after each parallel region its threads spin on the "
                 "cores for a while, and a copy of data just computed shares the cores with them. Copies "
                 "made on the main thread borrow those threads instead (stage_openmp); these were made on "
                 "another thread or with stage_openmp = off. Where the program's own OpenMP work allows "
                 "it, set OMP_WAIT_POLICY=passive (a fresh 64 MiB PyTorch tensor's .to(\"cuda\") took "
                 "1.8-2.1 ms with it against 2.5-3.9 ms on an H200 host)",
                 runtime);
        items[n].rule = "openmp";
        items[n].saving_ns = 0;
        n++;
    }

    const struct callsite *top[16];
    struct callsite_totals t[16];
    size_t sites = callsite_top(top, t, 16), shown = 0;
    for (size_t i = 0; i < sites && shown < ADVICE_TOP_SITES && n < max; i++) {
        const struct callsite_totals *st = &t[i];
        uint64_t shim_n = st->shim_count[ACTION_STAGED] + st->shim_count[ACTION_REGISTERED];
        if (!st->pageable_count && !shim_n)
            continue;
        uint64_t bytes[SIDES] = {st->pageable_h2d_bytes, st->pageable_d2h_bytes};
        uint64_t shim_bytes[SIDES] = {0, 0}, shim_ns = 0;
        for (int a = ACTION_STAGED; a < ACTION_COUNT; a++) {
            shim_bytes[0] += st->shim_bytes[a][0];
            shim_bytes[1] += st->shim_bytes[a][1];
            shim_ns += st->shim_ns[a];
        }
        /* pinning saves the driver's pageable path for the copies that took it, and the staging memcpy
         * for the staged ones */
        uint64_t saving = saving_ns(&bw[SIDE_H2D], bytes[0]) + saving_ns(&bw[SIDE_D2H], bytes[1]);
        uint64_t staged_bytes = st->shim_bytes[ACTION_STAGED][0] + st->shim_bytes[ACTION_STAGED][1];
        double staged_pinned = (double)st->shim_bytes[ACTION_STAGED][0] / bw[SIDE_H2D].pinned +
                               (double)st->shim_bytes[ACTION_STAGED][1] / bw[SIDE_D2H].pinned;
        if (staged_bytes && (double)st->shim_ns[ACTION_STAGED] > staged_pinned)
            saving += (uint64_t)((double)st->shim_ns[ACTION_STAGED] - staged_pinned);
        uint64_t all_bytes[SIDES] = {bytes[0] + shim_bytes[0], bytes[1] + shim_bytes[1]};
        int main_side = all_bytes[SIDE_D2H] > all_bytes[SIDE_H2D] ? SIDE_D2H : SIDE_H2D;
        enum framework fw = modules_framework(callsite_module(top[i]));
        char where[200];
        callsite_text(top[i], where, sizeof where);
        sources(bw, all_bytes, src, sizeof src);
        char *m = items[n].message;
        size_t len = sizeof items[n].message, used = 0;
        append(m, len, &used, "call site %s (%s): %llu copies of pageable memory (", where, framework_titles[fw],
               (unsigned long long)(st->pageable_count + shim_n));
        append_sides(m, len, &used, all_bytes);
        append(m, len, &used, ", %s in the calls)", units_ns(st->pageable_ns + shim_ns, b1, sizeof b1));
        if (shim_n) {
            /* the site's copies at the driver's pageable rate for their mean size (an estimate) */
            uint64_t mean = (shim_bytes[0] + shim_bytes[1]) / shim_n, ref;
            double without = 0;
            bool known = true;
            for (int s = 0; s < SIDES && known; s++) {
                if (!shim_bytes[s])
                    continue;
                double rate = pageable_rate(s == SIDE_H2D ? DIR_H2D : DIR_D2H, stats_bucket(mean), &ref);
                known = rate > 0;
                without += known ? (double)shim_bytes[s] / rate : 0;
            }
            append(m, len, &used, "; the shim already ");
            if (st->shim_count[ACTION_STAGED])
                append(m, len, &used, "staged %llu of them%s", (unsigned long long)st->shim_count[ACTION_STAGED],
                       st->shim_count[ACTION_REGISTERED] ? " and " : "");
            if (st->shim_count[ACTION_REGISTERED])
                append(m, len, &used, "sent %llu from buffers it registered",
                       (unsigned long long)st->shim_count[ACTION_REGISTERED]);
            if (known && without > (double)shim_ns)
                append(m, len, &used, ", about %s faster than the driver's pageable path would have been (an "
                       "estimate from this process's own pageable copies of that size)",
                       units_ns((uint64_t)(without - (double)shim_ns), b1, sizeof b1));
            else if (known)
                append(m, len, &used, ", about %s slower than the driver's pageable path would have been (an "
                       "estimate from this process's own pageable copies of that size)",
                       units_ns((uint64_t)((double)shim_ns - without), b1, sizeof b1));
            else if (!known)
                append(m, len, &used, " (what that saved is not estimated: no pageable copy of that size went "
                       "through the driver in this process)");
        }
        /* a site that copies both ways (PyTorch's copy_ does) gets both fixes, the main direction first */
        int other = 1 - main_side;
        if (all_bytes[other] * 10 >= all_bytes[main_side])
            append(m, len, &used, "; fix for %s: %s; for %s: %s", main_side == SIDE_H2D ? "h2d" : "d2h",
                   fixes[fw][main_side], other == SIDE_H2D ? "h2d" : "d2h", fixes[fw][other]);
        else
            append(m, len, &used, "; fix: %s", fixes[fw][main_side]);
        append(m, len, &used, "; pinning would save about %s more (%s)", units_ns(saving, b1, sizeof b1), src);
        items[n].rule = "site";
        items[n].saving_ns = saving;
        n++;
        shown++;
    }
    return n;
}

/* The messages' room (8 KiB: too much for a signal handler's stack). One writer at a time uses it:
 * the text goes to stderr only without a log, and the log's consumer lock orders its writers. */
static struct item advice_items[ADVICE_ITEMS];

void advice_write_text(int fd)
{
    struct item *items = advice_items;
    size_t n = compute(items, ADVICE_ITEMS);
    char line[2304];
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
    struct item *items = advice_items;
    size_t n = compute(items, ADVICE_ITEMS);
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
