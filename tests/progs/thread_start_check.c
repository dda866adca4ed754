/* thread_start_check.c: pinshim_start_thread (shim/base/util.c, compiled in here). A thread it
 * starts already carries its name when its main's first line runs (the name omp_team.c tells the
 * program's threads from the shim's by, never the program's for an instant), has every signal
 * blocked, and gets its argument; the caller's signal mask is unchanged; a detached start runs
 * and a joinable one hands back a handle that joins with the main's result. Prints
 * "thread_start: as specified" or the first problem and exits 1. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "../../shim/base/util.c"

struct seen {
    char name[17];
    int all_blocked;
    void *arg;
    int done;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static struct seen seen[2];

static void *observe(void *arg)
{
    struct seen now = {.arg = arg};
    prctl(PR_GET_NAME, now.name); /* first: the name must be there before main runs */
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    now.all_blocked = sigismember(&mask, SIGINT) && sigismember(&mask, SIGSEGV) && sigismember(&mask, SIGUSR1) &&
                      sigismember(&mask, SIGTERM);
    now.done = 1;
    pthread_mutex_lock(&mu);
    seen[(int)(intptr_t)arg] = now;
    pthread_cond_broadcast(&done_cond);
    pthread_mutex_unlock(&mu);
    return (char *)arg + 40;
}

/* Compared signal by signal: the bytes of a sigset_t past the kernel's own words are not the
 * mask (glibc's set is 1024 bits, the kernel's 64, and what lies past them varies from call to call). */
static int same_signals(const sigset_t *a, const sigset_t *b)
{
    for (int sig = 1; sig <= SIGRTMAX; sig++)
        if (sigismember(a, sig) != sigismember(b, sig))
            return 0;
    return 1;
}

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok && !failures++)
        printf("thread_start: %s\n", what);
}

int main(void)
{
    prctl(PR_SET_NAME, "the-program");
    sigset_t before, after;
    pthread_sigmask(SIG_BLOCK, NULL, &before);

    expect(pinshim_start_thread("pinshim-detach", observe, (void *)0, NULL) == 0, "a detached start failed");
    pthread_t joinable;
    expect(pinshim_start_thread("pinshim-join", observe, (void *)1, &joinable) == 0, "a joinable start failed");
    pthread_sigmask(SIG_BLOCK, NULL, &after);
    expect(same_signals(&before, &after), "the caller's signal mask changed");

    void *result = NULL;
    expect(pthread_join(joinable, &result) == 0, "the joinable thread did not join");
    expect(result == (char *)1 + 40, "the joined result is not what the thread's main returned");
    pthread_mutex_lock(&mu);
    while (!seen[0].done || !seen[1].done)
        pthread_cond_wait(&done_cond, &mu); /* a hang fails by the test's timeout */
    pthread_mutex_unlock(&mu);
    expect(strcmp(seen[0].name, "pinshim-detach") == 0, "the detached thread's main ran before it was named");
    expect(strcmp(seen[1].name, "pinshim-join") == 0, "the joinable thread's main ran before it was named");
    expect(seen[0].all_blocked && seen[1].all_blocked, "a started thread has signals unblocked");
    expect(seen[0].arg == (void *)0 && seen[1].arg == (void *)1, "a thread's argument was not passed");
    if (failures)
        return 1;
    printf("thread_start: as specified\n");
    return 0;
}
