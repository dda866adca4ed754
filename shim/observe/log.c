/* log.c: the per-transfer log (see log.h): the record ring, the writer thread, the file and its
 * records, the exit and signal-time flushes, and the fork reset.
 * The ring is a bounded multi-producer single-consumer queue (one turn counter per slot, as in
 * D. Vyukov's bounded queue); the "consumer" is whoever holds consumer_busy: the writer, the exit
 * path, or the signal handler. */
#define _GNU_SOURCE
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "advice.h"
#include "base/common.h"
#include "base/driver.h"
#include "base/real.h"
#include "callsite.h"
#include "devtime.h"
#include "jbuf.h"
#include "logpath.h"
#include "pinshim.h"
#include "policy.h"
#include "stats.h"

#define LOG_FORMAT 1
#define WRITER_IDLE_WAIT_MS 20  /* the writer's sleep between drains when nobody wakes it */
#define PENDING_MAX 256         /* records held back waiting for their device timing */
#define SIGNAL_LOCK_WAIT_MS 2000 /* how long a signal-time flush waits for the writer's current write */
#define TOP_SITES 20

/* One transfer, as the copy path leaves it for the writer. */
struct log_rec {
    uint64_t seq, t_ns, host_ns, bytes;
    uintptr_t stream;
    const struct callsite *site;
    struct devtime *dt;
    int32_t tid, device; /* device -1: unknown */
    uint8_t entry, dir, src_kind, dst_kind, host_kind, action, async;
};

struct slot {
    uint64_t turn; /* stored as (turn - slot index), so a zero-filled ring is an empty one */
    struct log_rec rec;
};

enum { STATE_IDLE, STATE_RUNNING, STATE_FINISHED };

static bool configured;        /* log set with a valid pattern (constructor) */
static bool open_failed;       /* the file could not be opened: records are no longer made */
static int state;              /* STATE_* */
static time_t start_time;
static uint64_t start_wall_ns, start_mono_ns;
static bool driver_allowed = true;

static struct slot *ring;
static size_t ring_bytes;
static uint64_t ring_mask, ring_cap;
static uint64_t head, tail;
static uint64_t seq_counter, dropped;

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;
static pthread_t writer;
static bool writer_started, writer_stop, wake_pending, atexit_registered;
static int consumer_busy; /* a spin flag, not a mutex: the signal handler takes it too */
static int finishing;
static bool finish_result;

/* Consumer-owned: the file, the output buffer, the held-back records. */
static int log_fd = -1;
static char outbuf[256 * 1024];
static size_t outlen;
static struct log_rec pending[PENDING_MAX];
static size_t pending_count;
static char recordbuf[128 * 1024]; /* header and summary records */

static __thread struct devtime *tls_devtime __attribute__((tls_model("initial-exec")));
static __thread int32_t tls_tid __attribute__((tls_model("initial-exec")));

static int signals[] = {SIGTERM, SIGINT};
static struct sigaction saved_actions[2];
static bool handler_installed[2];

static bool logging(void)
{
    return configured && pinshim_policy.intercept && !__atomic_load_n(&open_failed, __ATOMIC_RELAXED);
}

void log_init(time_t process_start)
{
    start_time = process_start;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    start_wall_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    start_mono_ns = pinshim_now_ns();
    if (!pinshim_policy.log[0] || !pinshim_policy.intercept)
        return;
    char path[4096], err[512];
    if (logpath_expand(pinshim_policy.log, start_time, path, sizeof path, err, sizeof err) != 0) {
        pinshim_warn("warning: PINSHIM_LOG: %s; the summary will go to stderr", err);
        return;
    }
    configured = true;
    callsite_init();
}

/* --- the ring --- */

static bool enqueue(const struct log_rec *r)
{
    if (!ring)
        return false;
    uint64_t pos = __atomic_load_n(&head, __ATOMIC_RELAXED);
    struct slot *s;
    for (;;) {
        s = &ring[pos & ring_mask];
        uint64_t turn = __atomic_load_n(&s->turn, __ATOMIC_ACQUIRE) + (pos & ring_mask);
        int64_t diff = (int64_t)(turn - pos);
        if (diff == 0) {
            if (__atomic_compare_exchange_n(&head, &pos, pos + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                break;
        } else if (diff < 0) {
            return false; /* full */
        } else {
            pos = __atomic_load_n(&head, __ATOMIC_RELAXED);
        }
    }
    s->rec = *r;
    __atomic_store_n(&s->turn, pos + 1 - (pos & ring_mask), __ATOMIC_RELEASE);
    uint64_t used = pos + 1 - __atomic_load_n(&tail, __ATOMIC_RELAXED);
    if (used >= ring_cap / 2 && !__atomic_exchange_n(&wake_pending, true, __ATOMIC_RELAXED))
        pthread_cond_signal(&wake_cond);
    return true;
}

/* Consumer only. */
static bool dequeue(struct log_rec *out)
{
    if (!ring)
        return false;
    uint64_t pos = tail;
    struct slot *s = &ring[pos & ring_mask];
    uint64_t turn = __atomic_load_n(&s->turn, __ATOMIC_ACQUIRE) + (pos & ring_mask);
    if (turn != pos + 1)
        return false;
    *out = s->rec;
    __atomic_store_n(&s->turn, pos + ring_cap - (pos & ring_mask), __ATOMIC_RELEASE);
    __atomic_store_n(&tail, pos + 1, __ATOMIC_RELAXED);
    return true;
}

static void consumer_lock(void)
{
    while (__atomic_exchange_n(&consumer_busy, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}

static void consumer_unlock(void) { __atomic_store_n(&consumer_busy, 0, __ATOMIC_RELEASE); }

/* --- output (consumer only; async-signal-safe) --- */

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void out_flush(void)
{
    if (log_fd >= 0 && outlen)
        write_all(log_fd, outbuf, outlen);
    outlen = 0;
}

/* Appends one complete line (a line that did not fit its buffer is never written). */
static void out_line(const struct jbuf *line)
{
    if (line->full)
        return;
    if (outlen + line->len > sizeof outbuf)
        out_flush();
    memcpy(outbuf + outlen, line->p, line->len);
    outlen += line->len;
}

static void format_transfer(const struct log_rec *r, bool has_device_ns, uint64_t device_ns)
{
    char buf[2048];
    struct jbuf jb;
    jb_init(&jb, buf, sizeof buf);
    jb_lit(&jb, "{\"type\":\"transfer\",\"seq\":");
    jb_u64(&jb, r->seq);
    jb_lit(&jb, ",\"t_ns\":");
    jb_u64(&jb, r->t_ns);
    jb_lit(&jb, ",\"host_ns\":");
    jb_u64(&jb, r->host_ns);
    jb_lit(&jb, ",\"entry\":");
    jb_str(&jb, driver_entries[r->entry].export_name);
    jb_lit(&jb, ",\"dir\":");
    jb_str(&jb, copy_dir_names[r->dir]);
    jb_lit(&jb, ",\"bytes\":");
    jb_u64(&jb, r->bytes);
    jb_lit(&jb, ",\"src_kind\":");
    jb_str(&jb, host_kind_names[r->src_kind]);
    jb_lit(&jb, ",\"dst_kind\":");
    jb_str(&jb, host_kind_names[r->dst_kind]);
    jb_lit(&jb, ",\"host_kind\":");
    jb_str(&jb, host_kind_names[r->host_kind]);
    jb_lit(&jb, r->async ? ",\"async\":true,\"stream\":" : ",\"async\":false,\"stream\":");
    jb_raw(&jb, "\"", 1);
    jb_hex(&jb, r->stream);
    jb_lit(&jb, "\",\"device\":");
    if (r->device >= 0)
        jb_i64(&jb, r->device);
    else
        jb_lit(&jb, "null");
    jb_lit(&jb, ",\"action\":");
    jb_str(&jb, copy_action_names[r->action]);
    jb_lit(&jb, ",\"tid\":");
    jb_i64(&jb, r->tid);
    jb_lit(&jb, ",");
    callsite_json_fields(&jb, r->site);
    if (has_device_ns) {
        jb_lit(&jb, ",\"device_ns\":");
        jb_u64(&jb, device_ns);
    }
    jb_lit(&jb, "}\n");
    out_line(&jb);
}

/* Set while the SIGTERM/SIGINT handler flushes: nothing on that path may take a lock. */
static volatile sig_atomic_t flushing_from_signal;

/* Writes a record whose device timing is known (1), unmeasurable (-1) or given up on (final). */
static void emit_timed(struct log_rec *r, int done, uint64_t ns)
{
    format_transfer(r, done == 1, ns);
    if (done == 1)
        advice_add_device_time((enum copy_dir)r->dir, (enum host_kind)r->host_kind, r->bytes, ns);
    if (done != 0 && !flushing_from_signal) /* its lock may be held by the interrupted thread */
        devtime_release(r->dt);
}

/* Moves records from the ring to the file. may_poll: device timing may be asked of the driver
 * (false in the signal handler and in a forked child). final: nothing is held back. */
static void drain(bool may_poll, bool final)
{
    may_poll = may_poll && __atomic_load_n(&driver_allowed, __ATOMIC_RELAXED);
    size_t kept = 0;
    for (size_t i = 0; i < pending_count; i++) {
        uint64_t ns = 0;
        int done = may_poll ? devtime_poll(pending[i].dt, &ns) : -1;
        if (done == 0 && !final)
            pending[kept++] = pending[i];
        else
            emit_timed(&pending[i], done, ns);
    }
    pending_count = kept;
    struct log_rec r;
    while (dequeue(&r)) {
        if (!r.dt) {
            format_transfer(&r, false, 0);
            continue;
        }
        uint64_t ns = 0;
        int done = may_poll ? devtime_poll(r.dt, &ns) : -1;
        if (done == 0 && !final && pending_count < PENDING_MAX)
            pending[pending_count++] = r;
        else
            emit_timed(&r, done, ns);
    }
    out_flush();
}

/* --- header, driver and summary records --- */

static void header_cmdline(struct jbuf *jb)
{
    char args[8192];
    ssize_t n = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, args, sizeof args - 1);
        close(fd);
    }
    if (n < 0)
        n = 0;
    args[n] = '\0';
    jb_lit(jb, "[");
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(args + i) + 1) {
        if (i)
            jb_lit(jb, ",");
        jb_str(jb, args + i);
    }
    jb_lit(jb, "]");
}

static void header_policy(struct jbuf *jb)
{
    char text[8192];
    policy_format(&pinshim_policy, text, sizeof text);
    jb_lit(jb, "{");
    bool first = true;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *eq = strstr(line, " = ");
        if (eq) {
            *eq = '\0';
            jb_key(jb, line, first);
            jb_str(jb, eq + 3);
            first = false;
        }
        if (!nl)
            break;
        line = nl + 1;
    }
    jb_lit(jb, "}");
}

static void write_header(void)
{
    struct jbuf jb;
    jb_init(&jb, recordbuf, sizeof recordbuf);
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown-host");
    host[sizeof host - 1] = '\0';
    jb_lit(&jb, "{\"type\":\"header\",\"format\":");
    jb_u64(&jb, LOG_FORMAT);
    jb_lit(&jb, ",\"tool\":\"pinshim\",\"version\":");
    jb_str(&jb, PINSHIM_VERSION);
    jb_lit(&jb, ",\"pid\":");
    jb_i64(&jb, getpid());
    jb_lit(&jb, ",\"ppid\":");
    jb_i64(&jb, getppid());
    jb_lit(&jb, ",\"host\":");
    jb_str(&jb, host);
    jb_lit(&jb, ",\"rank\":");
    jb_str(&jb, logpath_rank());
    jb_lit(&jb, ",\"cmdline\":");
    header_cmdline(&jb);
    jb_lit(&jb, ",\"start_wall_ns\":");
    jb_u64(&jb, start_wall_ns);
    jb_lit(&jb, ",\"start_mono_ns\":");
    jb_u64(&jb, start_mono_ns);
    jb_lit(&jb, ",\"policy\":");
    header_policy(&jb);
    jb_lit(&jb, "}\n");
    if (!jb.full)
        write_all(log_fd, recordbuf, jb.len);
}

typedef CUresult (*fn_driver_version)(int *);
typedef CUresult (*fn_device_count)(int *);
typedef CUresult (*fn_device_get)(CUdevice *, int);
typedef CUresult (*fn_device_name)(char *, int, CUdevice);

static void write_driver_record(void)
{
    fn_driver_version version = (fn_driver_version)real_driver_symbol("cuDriverGetVersion");
    fn_device_count count = (fn_device_count)real_driver_symbol("cuDeviceGetCount");
    fn_device_get get = (fn_device_get)real_driver_symbol("cuDeviceGet");
    fn_device_name name = (fn_device_name)real_driver_symbol("cuDeviceGetName");
    if (!version || !count || !get || !name)
        return;
    struct jbuf jb;
    jb_init(&jb, recordbuf, sizeof recordbuf);
    int v = 0, n = 0;
    pinshim_enter();
    jb_lit(&jb, "{\"type\":\"driver\",\"driver_version\":");
    if (version(&v) == CUDA_SUCCESS)
        jb_i64(&jb, v);
    else
        jb_lit(&jb, "null");
    jb_lit(&jb, ",\"devices\":[");
    if (count(&n) != CUDA_SUCCESS)
        n = 0;
    for (int i = 0; i < n && i < 64; i++) {
        CUdevice dev;
        char text[256] = "";
        if (get(&dev, i) != CUDA_SUCCESS || name(text, sizeof text, dev) != CUDA_SUCCESS)
            snprintf(text, sizeof text, "?");
        text[sizeof text - 1] = '\0';
        if (i)
            jb_lit(&jb, ",");
        jb_str(&jb, text);
    }
    pinshim_leave();
    jb_lit(&jb, "]}\n");
    if (!jb.full)
        write_all(log_fd, recordbuf, jb.len);
}

/* The summary record: stats' JSON summary object with "type" first and the log's fields last. */
static void write_summary(bool may_wait)
{
    static char stats_json[96 * 1024];
    size_t n = stats_summary_json(stats_json, sizeof stats_json, may_wait);
    if (n < 3 || stats_json[0] != '{' || stats_json[n - 1] != '\n' || stats_json[n - 2] != '}')
        return;
    struct jbuf jb;
    jb_init(&jb, recordbuf, sizeof recordbuf);
    jb_lit(&jb, "{\"type\":\"summary\",");
    jb_raw(&jb, stats_json + 1, n - 3); /* without the braces and the newline */
    jb_lit(&jb, ",\"dropped\":");
    uint64_t lost = __atomic_load_n(&head, __ATOMIC_RELAXED) - tail; /* left in the ring */
    jb_u64(&jb, __atomic_load_n(&dropped, __ATOMIC_RELAXED) + lost);
    jb_lit(&jb, ",\"sites\":");
    callsite_json_top(&jb, TOP_SITES);
    jb_lit(&jb, ",\"advice\":");
    advice_json(&jb);
    jb_lit(&jb, "}\n");
    if (!jb.full)
        write_all(log_fd, recordbuf, jb.len);
}

/* Opens this process's file and writes the header (and the driver record). Consumer only. */
static bool open_log(void)
{
    if (log_fd >= 0)
        return true;
    if (__atomic_load_n(&open_failed, __ATOMIC_RELAXED))
        return false;
    char path[4096], err[512];
    if (logpath_expand(pinshim_policy.log, start_time, path, sizeof path, err, sizeof err) != 0 ||
        (log_fd = logpath_open(path, err, sizeof err)) < 0) {
        pinshim_warn("warning: PINSHIM_LOG: %s; writing the summary to stderr", err);
        __atomic_store_n(&open_failed, true, __ATOMIC_RELAXED);
        return false;
    }
    write_header();
    if (pinshim_policy.log_level == LOG_LEVEL_TRANSFERS && __atomic_load_n(&driver_allowed, __ATOMIC_RELAXED))
        write_driver_record();
    return true;
}

/* --- the writer thread --- */

static void *writer_main(void *arg)
{
    (void)arg;
    consumer_lock();
    bool ok = open_log();
    consumer_unlock();
    for (;;) {
        pthread_mutex_lock(&wake_lock);
        if (!__atomic_load_n(&writer_stop, __ATOMIC_ACQUIRE) && !__atomic_load_n(&wake_pending, __ATOMIC_RELAXED)) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += WRITER_IDLE_WAIT_MS * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&wake_cond, &wake_lock, &until);
        }
        __atomic_store_n(&wake_pending, false, __ATOMIC_RELAXED);
        bool stop = __atomic_load_n(&writer_stop, __ATOMIC_ACQUIRE);
        pthread_mutex_unlock(&wake_lock);
        consumer_lock();
        if (ok)
            drain(true, false);
        else
            for (struct log_rec r; dequeue(&r);) /* no file: discard */
                devtime_release(r.dt);
        consumer_unlock();
        if (stop)
            return NULL;
    }
}

/* --- signals --- */

static void flush_on_signal(void)
{
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != STATE_RUNNING ||
        __atomic_exchange_n(&finishing, 1, __ATOMIC_ACQ_REL))
        return;
    __atomic_store_n(&state, STATE_FINISHED, __ATOMIC_RELEASE);
    for (int waited = 0; __atomic_exchange_n(&consumer_busy, 1, __ATOMIC_ACQUIRE); waited++) {
        if (waited >= SIGNAL_LOCK_WAIT_MS)
            return;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (log_fd >= 0) {
        flushing_from_signal = 1;
        drain(false, true);
        write_summary(false);
    }
}

static void on_signal(int sig)
{
    int saved_errno = errno;
    flush_on_signal();
    for (int i = 0; i < 2; i++)
        if (signals[i] == sig)
            sigaction(sig, &saved_actions[i], NULL);
    /* Blocked while this handler runs: delivered, with the program's old action, on return. */
    raise(sig);
    errno = saved_errno;
}

/* Installs the flush handler where the program left the default action. */
static void install_signal_handlers(void)
{
    for (int i = 0; i < 2; i++) {
        struct sigaction old;
        if (sigaction(signals[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO))
            continue;
        if (old.sa_handler == on_signal) /* inherited from the parent across fork */
            continue;
        if (old.sa_handler != SIG_DFL)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigfillset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        saved_actions[i] = old;
        if (sigaction(signals[i], &sa, NULL) == 0)
            handler_installed[i] = true;
    }
}

/* --- start, exit, fork --- */

static void log_atexit(void) { log_finish(); }

/* At the first copy: the ring, the handlers, the atexit flush and the writer thread. */
static void start(void)
{
    pthread_mutex_lock(&start_lock);
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != STATE_IDLE) {
        pthread_mutex_unlock(&start_lock);
        return;
    }
    uint64_t cap = pinshim_policy.log_buffer_bytes / sizeof(struct slot);
    if (pinshim_policy.log_level == LOG_LEVEL_TRANSFERS && cap) {
        ring_cap = 1;
        while (ring_cap * 2 <= cap)
            ring_cap *= 2;
        ring_bytes = ring_cap * sizeof(struct slot);
        void *p = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            ring = p;
            ring_mask = ring_cap - 1;
        } else {
            pinshim_warn("warning: PINSHIM_LOG: cannot map %zu bytes for the record buffer: %s; transfer "
                         "records are dropped", ring_bytes, strerror(errno));
        }
    }
    install_signal_handlers();
    if (!atexit_registered) /* the registration survives fork: once per process image */
        atexit_registered = atexit(log_atexit) == 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the writer inherits a full mask: signals go elsewhere */
    writer_started = pthread_create(&writer, NULL, writer_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!writer_started)
        pinshim_warn("warning: PINSHIM_LOG: cannot start the writer thread; records are written at exit");
    __atomic_store_n(&state, STATE_RUNNING, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&start_lock);
}

static int32_t current_device(void)
{
    typedef CUresult (*fn_ctx_device)(CUdevice *);
    static void *ctx_device;
    if (!__atomic_load_n(&driver_allowed, __ATOMIC_RELAXED))
        return -1;
    fn_ctx_device f = (fn_ctx_device)real_driver_symbol_cached(&ctx_device, "cuCtxGetDevice");
    if (!f)
        return -1;
    CUdevice dev;
    pinshim_enter();
    CUresult r = f(&dev);
    pinshim_leave();
    return r == CUDA_SUCCESS ? (int32_t)dev : -1;
}

void log_copy_begin(const struct copy *c)
{
    if (!pinshim_policy.device_timing || pinshim_policy.log_level != LOG_LEVEL_TRANSFERS || !logging() ||
        c->bytes < pinshim_policy.log_min_bytes || !__atomic_load_n(&driver_allowed, __ATOMIC_RELAXED))
        return;
    tls_devtime = devtime_begin(c->stream);
}

void log_copy(const struct copy *c, CUresult result, uint64_t host_ns)
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
    int st = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (PINSHIM_UNLIKELY(st == STATE_IDLE)) {
        start();
        st = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    }
    uint64_t seq = __atomic_add_fetch(&seq_counter, 1, __ATOMIC_RELAXED);
    if (pinshim_policy.log_level != LOG_LEVEL_TRANSFERS || c->bytes < pinshim_policy.log_min_bytes) {
        devtime_end(dt, c->stream, false);
        return;
    }
    if (st != STATE_RUNNING) { /* the log is being finished */
        devtime_end(dt, c->stream, false);
        __atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    if (!tls_tid)
        tls_tid = (int32_t)syscall(SYS_gettid);
    struct log_rec r = {
        .seq = seq,
        .t_ns = end - host_ns - start_mono_ns,
        .host_ns = host_ns,
        .bytes = c->bytes,
        .stream = (uintptr_t)c->stream,
        .site = site,
        .tid = tls_tid,
        .device = current_device(),
        .entry = (uint8_t)c->entry,
        .dir = (uint8_t)c->dir,
        .src_kind = (uint8_t)c->src_kind,
        .dst_kind = (uint8_t)c->dst_kind,
        .host_kind = (uint8_t)c->host_kind,
        .action = (uint8_t)c->action,
        .async = c->async,
    };
    r.dt = devtime_end(dt, c->stream, true);
    if (!enqueue(&r)) {
        devtime_release(r.dt);
        __atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
    }
}

bool log_finish(void)
{
    if (!configured || !pinshim_policy.intercept)
        return false;
    if (__atomic_exchange_n(&finishing, 1, __ATOMIC_ACQ_REL))
        return finish_result;
    if (!stats_any_activity()) {
        finish_result = true; /* nothing to say, and no file is made for it */
        return true;
    }
    __atomic_store_n(&state, STATE_FINISHED, __ATOMIC_RELEASE);
    if (writer_started) {
        pthread_mutex_lock(&wake_lock);
        __atomic_store_n(&writer_stop, true, __ATOMIC_RELEASE);
        pthread_cond_signal(&wake_cond);
        pthread_mutex_unlock(&wake_lock);
        pthread_join(writer, NULL);
        writer_started = false;
    }
    consumer_lock();
    if (open_log()) {
        drain(true, true);
        write_summary(true);
        close(log_fd);
        log_fd = -1;
        finish_result = true;
    }
    consumer_unlock();
    return finish_result;
}

void log_fork_child(void)
{
    advice_reset();
    devtime_fork_child();
    if (!configured)
        return;
    if (ring)
        munmap(ring, ring_bytes);
    ring = NULL;
    ring_bytes = 0;
    ring_cap = ring_mask = 0;
    head = tail = seq_counter = dropped = 0;
    pending_count = 0;
    outlen = 0;
    if (log_fd >= 0)
        close(log_fd);
    log_fd = -1;
    open_failed = false;
    state = STATE_IDLE;
    writer_started = writer_stop = wake_pending = false;
    consumer_busy = finishing = 0;
    finish_result = false;
    pthread_mutex_init(&start_lock, NULL);
    pthread_mutex_init(&wake_lock, NULL);
    pthread_cond_init(&wake_cond, NULL);
    driver_allowed = false;
    tls_tid = 0;
    tls_devtime = NULL;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    start_wall_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    start_mono_ns = pinshim_now_ns();
    callsite_fork_child();
}
