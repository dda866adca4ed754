/* util.c: the diagnostic writer, the reentrancy counter, the timed wait and the thread starter
 * declared in common.h. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

__thread struct pinshim_thread pinshim_thread __attribute__((tls_model("initial-exec")));

void pinshim_warn(const char *fmt, ...)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "==%d== pinshim: ", (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t len = (size_t)n + ((size_t)m < sizeof buf - (size_t)n - 1 ? (size_t)m : sizeof buf - (size_t)n - 2);
    buf[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w;
}

void pinshim_cond_wait_ns(pthread_cond_t *cond, pthread_mutex_t *mutex, uint64_t ns)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(ns / 1000000000u);
    until.tv_nsec += (long)(ns % 1000000000u);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cond, mutex, &until);
}

/* What a new thread of the shim's needs before its main runs; the trampoline frees it. */
struct thread_start {
    const char *name;
    void *(*main_fn)(void *);
    void *arg;
};

static void *named_thread_main(void *p)
{
    struct thread_start start = *(struct thread_start *)p;
    free(p);
    prctl(PR_SET_NAME, start.name); /* in case it runs before its creator names it (below) */
    return start.main_fn(start.arg);
}

int pinshim_start_thread(const char *name, void *(*main_fn)(void *), void *arg, pthread_t *joinable)
{
    struct thread_start *start = malloc(sizeof *start);
    if (!start)
        return ENOMEM;
    *start = (struct thread_start){name, main_fn, arg};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, joinable ? PTHREAD_CREATE_JOINABLE : PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the new thread inherits the full mask */
    pthread_t t;
    int r = pthread_create(&t, &attr, named_thread_main, start);
    /* Named at once, from here: a new thread not yet given a CPU is runnable under the program's
     * name, and stage/omp_team.c, scanning for the program's OpenMP team running on the main thread
     * just after a copy that started workers, took such threads for the team spinning (seen on a
     * busy 2-core machine). */
    if (r == 0)
        pthread_setname_np(t, name);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (r != 0)
        free(start);
    else if (joinable)
        *joinable = t;
    return r;
}
