/* main.c: the conformance suite's runner. `conform` runs every case, each in a fresh process
 * (this program executed again with --case NAME), so a case that crashes or hangs the driver
 * cannot take the others down; it prints the case's lines in order, then "<case> = exit N" (or "signal N", "timeout").
 *   conform               all cases        conform PATTERN...  the cases matching (fnmatch)
 *   conform --list        the case names   conform --case NAME in this process, no runner
 * CONF_CASE_TIMEOUT (seconds, default 120) bounds one case. The runner never touches the driver.
 * Exit status: 0 when every case exited 0, 1 otherwise (the lines say which), 2 on a usage error. */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

static const struct conf_case {
    const char *name;
    void (*fn)(void);
} cases[] = {
#define X(name, fn) {name, fn},
    CONF_CASES(X)
#undef X
};
#define NCASES (sizeof cases / sizeof cases[0])

const char *conf_case_name = "";

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs one case in a child process; copies its stdout through; prints its status line. */
static int run_child(const char *self, const char *name, long timeout_ms)
{
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(self, self, "--case", name, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    long deadline = now_ms() + timeout_ms;
    int timed_out = 0;
    char buf[4096];
    for (;;) {
        long left = deadline - now_ms();
        if (left <= 0) {
            timed_out = 1;
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd p = {fds[0], POLLIN, 0};
        int k = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            continue;
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n <= 0)
            break;
        fwrite(buf, 1, (size_t)n, stdout);
    }
    close(fds[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    fflush(stdout);
    if (timed_out)
        printf("\n%s = timeout\n", name);
    else if (WIFSIGNALED(st))
        printf("%s = signal %d (%s)\n", name, WTERMSIG(st), sigabbrev_np(WTERMSIG(st)));
    else
        printf("%s = exit %d\n", name, WEXITSTATUS(st));
    fflush(stdout);
    return timed_out || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

/* For the runner's own tests: CONF_SELFTEST_CRASH=<case> makes that case die of SIGSEGV,
 * CONF_SELFTEST_HANG=<case> makes it hang. */
static void selftest_hooks(const char *name)
{
    const char *crash = getenv("CONF_SELFTEST_CRASH"), *hang = getenv("CONF_SELFTEST_HANG");
    if (crash && !strcmp(crash, name))
        raise(SIGSEGV);
    if (hang && !strcmp(hang, name))
        for (;;)
            pause();
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < NCASES; i++)
            printf("%s\n", cases[i].name);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "--case")) {
        for (size_t i = 0; i < NCASES; i++)
            if (!strcmp(cases[i].name, argv[2])) {
                conf_case_name = cases[i].name;
                selftest_hooks(cases[i].name);
                conf_start();
                cases[i].fn();
                return 0;
            }
        fprintf(stderr, "conform: no case named %s (--list names them)\n", argv[2]);
        return 2;
    }
    const char *timeout = getenv("CONF_CASE_TIMEOUT");
    long timeout_ms = (timeout && atol(timeout) > 0 ? atol(timeout) : 120) * 1000;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        perror("readlink /proc/self/exe");
        return 2;
    }
    self[n] = 0;
    printf("# pinshim driver conformance suite (tests/conformance), %zu cases\n", NCASES);
    int failed = 0, ran = 0;
    for (size_t i = 0; i < NCASES; i++) {
        int wanted = argc < 2;
        for (int a = 1; a < argc && !wanted; a++)
            wanted = fnmatch(argv[a], cases[i].name, 0) == 0;
        if (!wanted)
            continue;
        ran++;
        failed += run_child(self, cases[i].name, timeout_ms);
    }
    if (!ran) {
        fprintf(stderr, "conform: no case matches (--list names them)\n");
        return 2;
    }
    return failed ? 1 : 0;
}
