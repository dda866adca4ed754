/* log.c: the per-transfer log (see log.h): its configuration, the copy path's side (one record per
 * copy, left in the ring without waiting), and the exit and fork entry points. The ring is
 * log_ring.c, the consumer and the file log_writer.c, the lines log_records.c (log_internal.h). */
#define _GNU_SOURCE
#include "log_internal.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "advice.h"
#include "base/common.h"
#include "base/gate.h"
#include "callsite.h"
#include "devtime.h"
#include "logpath.h"
#include "modules.h"
#include "policy.h"

static bool configured; /* log set with a valid pattern (constructor) */
static struct log_process process = {.driver_allowed = true};
static uint64_t seq_counter;

static __thread struct devtime *tls_devtime __attribute__((tls_model("initial-exec")));
static __thread int32_t tls_tid __attribute__((tls_model("initial-exec")));

static bool logging(void) { return configured && pinshim_policy.intercept && !log_writer_failed(); }

static void set_start_clocks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    process.start_wall_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    process.start_mono_ns = pinshim_now_ns();
}

void log_init(time_t process_start)
{
    process.start_time = process_start;
    set_start_clocks();
    log_writer_configure(&process);
    if (!pinshim_policy.log[0] || !pinshim_policy.intercept)
        return;
    char path[4096], err[512];
    if (logpath_expand(pinshim_policy.log, process.start_time, path, sizeof path, err, sizeof err) != 0) {
        pinshim_warn("warning: PINSHIM_LOG: %s; the summary will go to stderr", err);
        return;
    }
    configured = true;
    __atomic_or_fetch(&pinshim_gate.follow, GATE_FOLLOW_LOG, __ATOMIC_RELAXED); /* copies leave the counted path */
    callsite_init();
}

PINSHIM_HOT bool log_records(size_t bytes)
{
    return pinshim_policy.log_level == LOG_LEVEL_TRANSFERS && logging() && bytes >= pinshim_policy.log_min_bytes;
}

PINSHIM_HOT void log_copy_begin(const struct copy *c)
{
    if (!pinshim_policy.device_timing || !log_records(c->bytes) ||
        !__atomic_load_n(&process.driver_allowed, __ATOMIC_RELAXED))
        return;
    tls_devtime = devtime_begin(c->stream);
}

PINSHIM_HOT void log_copy(const struct copy *c, CUresult result, uint64_t host_ns)
{
    struct devtime *dt = tls_devtime;
    tls_devtime = NULL;
    if (result != CUDA_SUCCESS) {
        devtime_end(dt, c->stream, false);
        return;
    }
    advice_add_copy(c, host_ns);
    if (!logging()) {
        devtime_end(dt, c->stream, false);
        return;
    }
    uint64_t end = pinshim_now_ns();
    const struct callsite *site = callsite_capture();
    callsite_add(site, c, host_ns);
    int st = log_writer_state();
    if (PINSHIM_UNLIKELY(st == LOG_STATE_IDLE)) {
        log_writer_start();
        st = log_writer_state();
    }
    uint64_t seq = __atomic_add_fetch(&seq_counter, 1, __ATOMIC_RELAXED);
    if (!log_records(c->bytes)) {
        devtime_end(dt, c->stream, false);
        return;
    }
    if (st != LOG_STATE_RUNNING) { /* the log is being finished */
        devtime_end(dt, c->stream, false);
        log_ring_drop();
        return;
    }
    if (!tls_tid)
        tls_tid = (int32_t)syscall(SYS_gettid);
    struct log_rec r = {
        .seq = seq,
        .t_ns = end - host_ns - process.start_mono_ns,
        .host_ns = host_ns,
        .bytes = c->bytes,
        .stream = (uintptr_t)c->stream,
        .site = site,
        .tid = tls_tid,
        .device = c->device,
        .entry = (uint8_t)c->entry,
        .dir = (uint8_t)c->dir,
        .src_kind = (uint8_t)c->src_kind,
        .dst_kind = (uint8_t)c->dst_kind,
        .host_kind = (uint8_t)c->host_kind,
        .action = (uint8_t)c->action,
        .async = c->async,
    };
    r.dt = devtime_end(dt, c->stream, true);
    bool half_full;
    if (!log_ring_put(&r, &half_full)) {
        devtime_release(r.dt);
        log_ring_drop();
    } else if (half_full) {
        log_writer_wake();
    }
}

bool log_finish(void)
{
    if (!configured || !pinshim_policy.intercept)
        return false;
    return log_writer_finish();
}

void log_fork_child(void)
{
    advice_reset();
    devtime_fork_child();
    if (!configured)
        return;
    log_ring_fork_child();
    seq_counter = 0;
    log_writer_fork_child();
    process.driver_allowed = false;
    tls_tid = 0;
    tls_devtime = NULL;
    set_start_clocks();
    callsite_fork_child();
    modules_fork_child();
}
