/* log_writer.c: the consumer side of the log (see log.h): the writer thread that moves records
 * from the ring to the file (holding back, for a while, those whose device timing is not known
 * yet), the file and its output buffer, the flushes at exit and at SIGTERM/SIGINT, and the start
 * at the first copy. The copy path never waits for anything here. */
#define _GNU_SOURCE
#include "log_internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "advice.h"
#include "base/common.h"
#include "callsite.h"
#include "devtime.h"
#include "logpath.h"
#include "modules.h"
#include "policy.h"
#include "stats.h"

#define WRITER_IDLE_WAIT_MS 20  /* the writer's sleep between drains when nobody wakes it */
#define PENDING_MAX 256         /* records held back waiting for their device timing */
#define SIGNAL_LOCK_WAIT_MS 2000 /* how long a signal-time flush waits for the writer's current write */

static const struct log_process *proc; /* log.c's: start times, whether the driver may be called */
static bool open_failed;       /* the file could not be opened: records are no longer made */
static int state;              /* LOG_STATE_* */

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;
static pthread_t writer;
static bool writer_started, writer_stop, wake_pending, atexit_registered;
static int finishing;
static bool finish_result;

/* Consumer-owned: the file, the output buffer, the held-back records. */
static int log_fd = -1;
static char outbuf[256 * 1024];
static size_t outlen;
static struct log_rec pending[PENDING_MAX];
static size_t pending_count;
static char recordbuf[128 * 1024]; /* header and summary records */

static int signals[] = {SIGTERM, SIGINT};
static struct sigaction saved_actions[2];
static bool handler_installed[2];

void log_writer_configure(const struct log_process *p) { proc = p; }

int log_writer_state(void) { return __atomic_load_n(&state, __ATOMIC_ACQUIRE); }

bool log_writer_failed(void) { return __atomic_load_n(&open_failed, __ATOMIC_RELAXED); }

void log_writer_wake(void)
{
    if (!__atomic_exchange_n(&wake_pending, true, __ATOMIC_RELAXED))
        pthread_cond_signal(&wake_cond);
}

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

static void transfer_line(const struct log_rec *r, bool has_device_ns, uint64_t device_ns)
{
    char buf[2048];
    struct jbuf jb;
    jb_init(&jb, buf, sizeof buf);
    modules_record_once(&jb, callsite_module(r->site)); /* its module's record, the first time */
    out_line(&jb);
    jb_init(&jb, buf, sizeof buf);
    log_record_transfer(&jb, r, has_device_ns, device_ns);
    out_line(&jb);
}

/* Writes a header, driver or summary record straight to the file, if it fit. */
static void write_record(const struct jbuf *jb)
{
    if (!jb->full)
        write_all(log_fd, jb->p, jb->len);
}

/* Set while the SIGTERM/SIGINT handler flushes: nothing on that path may take a lock. */
static volatile sig_atomic_t flushing_from_signal;

/* Writes a record whose device timing is known (1), unmeasurable (-1) or given up on (final). */
static void emit_timed(struct log_rec *r, int done, uint64_t ns)
{
    transfer_line(r, done == 1, ns);
    if (done == 1)
        advice_add_device_time((enum copy_dir)r->dir, (enum host_kind)r->host_kind, r->bytes, ns);
    if (done != 0 && !flushing_from_signal) /* its lock may be held by the interrupted thread */
        devtime_release(r->dt);
}

/* Moves records from the ring to the file. may_poll: device timing may be asked of the driver
 * (false in the signal handler and in a forked child). final: nothing is held back. */
static void drain(bool may_poll, bool final)
{
    may_poll = may_poll && __atomic_load_n(&proc->driver_allowed, __ATOMIC_RELAXED);
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
    while (log_ring_take(&r)) {
        if (!r.dt) {
            transfer_line(&r, false, 0);
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

/* The summary record, after the last transfer records. */
static void write_summary(bool may_wait)
{
    struct jbuf jb;
    jb_init(&jb, recordbuf, sizeof recordbuf);
    modules_record_all(&jb); /* the summary's call sites name them too */
    write_record(&jb);
    jb_init(&jb, recordbuf, sizeof recordbuf);
    if (log_record_summary(&jb, may_wait))
        write_record(&jb);
}

/* Opens this process's file and writes the header (and the driver record). Consumer only. */
static bool open_log(void)
{
    if (log_fd >= 0)
        return true;
    if (__atomic_load_n(&open_failed, __ATOMIC_RELAXED))
        return false;
    char path[4096], err[512];
    if (logpath_expand(pinshim_policy.log, proc->start_time, path, sizeof path, err, sizeof err) != 0 ||
        (log_fd = logpath_open(path, err, sizeof err)) < 0) {
        pinshim_warn("warning: PINSHIM_LOG: %s; writing the summary to stderr", err);
        __atomic_store_n(&open_failed, true, __ATOMIC_RELAXED);
        return false;
    }
    struct jbuf jb;
    jb_init(&jb, recordbuf, sizeof recordbuf);
    log_record_header(&jb, proc);
    write_record(&jb);
    if (pinshim_policy.log_level == LOG_LEVEL_TRANSFERS &&
        __atomic_load_n(&proc->driver_allowed, __ATOMIC_RELAXED)) {
        jb_init(&jb, recordbuf, sizeof recordbuf);
        if (log_record_driver(&jb))
            write_record(&jb);
    }
    return true;
}

/* --- the writer thread --- */

static void *writer_main(void *arg)
{
    (void)arg;
    log_consumer_lock();
    bool ok = open_log();
    log_consumer_unlock();
    for (;;) {
        pthread_mutex_lock(&wake_lock);
        if (!__atomic_load_n(&writer_stop, __ATOMIC_ACQUIRE) && !__atomic_load_n(&wake_pending, __ATOMIC_RELAXED)) {
            pinshim_cond_wait_ns(&wake_cond, &wake_lock, WRITER_IDLE_WAIT_MS * 1000000ull);
        }
        __atomic_store_n(&wake_pending, false, __ATOMIC_RELAXED);
        bool stop = __atomic_load_n(&writer_stop, __ATOMIC_ACQUIRE);
        pthread_mutex_unlock(&wake_lock);
        log_consumer_lock();
        if (ok)
            drain(true, false);
        else
            for (struct log_rec r; log_ring_take(&r);) /* no file: discard */
                devtime_release(r.dt);
        log_consumer_unlock();
        if (stop)
            return NULL;
    }
}

/* --- signals --- */

static void flush_on_signal(void)
{
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != LOG_STATE_RUNNING ||
        __atomic_exchange_n(&finishing, 1, __ATOMIC_ACQ_REL))
        return;
    __atomic_store_n(&state, LOG_STATE_FINISHED, __ATOMIC_RELEASE);
    if (!log_consumer_lock_within(SIGNAL_LOCK_WAIT_MS))
        return;
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

/* At exit() and return from main, before the CUDA runtime's own teardown: log_finish() (the log is
 * configured, or nothing would have started it). */
static void log_atexit(void) { log_writer_finish(); }

/* At the first copy: the ring, the handlers, the atexit flush and the writer thread. */
void log_writer_start(void)
{
    pthread_mutex_lock(&start_lock);
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != LOG_STATE_IDLE) {
        pthread_mutex_unlock(&start_lock);
        return;
    }
    log_ring_map();
    install_signal_handlers();
    if (!atexit_registered) /* the registration survives fork: once per process image */
        atexit_registered = atexit(log_atexit) == 0;
    writer_started = pinshim_start_thread("pinshim-log", writer_main, NULL, &writer) == 0; /* joined at exit */
    if (!writer_started)
        pinshim_warn("warning: PINSHIM_LOG: cannot start the writer thread; records are written at exit");
    __atomic_store_n(&state, LOG_STATE_RUNNING, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&start_lock);
}

bool log_writer_finish(void)
{
    if (__atomic_exchange_n(&finishing, 1, __ATOMIC_ACQ_REL))
        return finish_result;
    if (!stats_any_activity()) {
        finish_result = true; /* nothing to say, and no file is made for it */
        return true;
    }
    __atomic_store_n(&state, LOG_STATE_FINISHED, __ATOMIC_RELEASE);
    if (writer_started) {
        pthread_mutex_lock(&wake_lock);
        __atomic_store_n(&writer_stop, true, __ATOMIC_RELEASE);
        pthread_cond_signal(&wake_cond);
        pthread_mutex_unlock(&wake_lock);
        pthread_join(writer, NULL);
        writer_started = false;
    }
    log_consumer_lock();
    if (open_log()) {
        drain(true, true);
        write_summary(true);
        close(log_fd);
        log_fd = -1;
        finish_result = true;
    }
    log_consumer_unlock();
    return finish_result;
}

void log_writer_fork_child(void)
{
    pending_count = 0;
    outlen = 0;
    if (log_fd >= 0)
        close(log_fd);
    log_fd = -1;
    open_failed = false;
    state = LOG_STATE_IDLE;
    writer_started = writer_stop = wake_pending = false;
    finishing = 0;
    finish_result = false;
    pthread_mutex_init(&start_lock, NULL);
    pthread_mutex_init(&wake_lock, NULL);
    pthread_cond_init(&wake_cond, NULL);
}
