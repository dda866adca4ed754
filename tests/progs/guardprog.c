/* guardprog.c: scenarios for the unsynchronized-read guard (tests/bats/guard.bats). Every
 * scenario makes TRIALS async D2H copies of BYTES into pinned (or registered) memory, alternating
 * between two device buffers of different contents, and then:
 *   guardprog race     - reads the destination's first byte before synchronizing (a race)
 *   guardprog repair   - the same, and checks the early read saw the copy's data (repair mode)
 *   guardprog write    - writes the destination's first byte before synchronizing (a race)
 *   guardprog io       - write(2)s the destination to a file before synchronizing (a race), then
 *                        checks the call succeeded and, with CHECK_IO=1, that the file holds the copy
 *   guardprog sync STYLE - synchronizes first (stream, ctx, event_sync, event_query, stream_query,
 *                        sync_copy: a synchronous copy on the legacy stream; host_fn: a host function
 *                        launched on the copy's stream reads the destination, as XLA does, and the
 *                        program waits for it to say so; callback: the same by cuStreamAddCallback),
 *                        then reads everything
 *   guardprog hostfn_other - a host function or stream callback (alternately) on another stream
 *                        reads the destination (a race); also prints what launching a NULL host
 *                        function, adding a NULL callback and adding one with flags 1 return
 *   guardprog hostfn_capture - with a copy guarded, a host function captured into a graph runs at
 *                        each of 3 replays (the shim must not wrap it: a wrapper is run once)
 *   guardprog registered - like race, into malloc'd memory registered with cuMemHostRegister
 *   guardprog handler siginfo|plain|early|altstack - the program's own SIGSEGV handler (SA_SIGINFO or
 *                        signal(); installed after the guard's, or before any copy with early;
 *                        altstack: SA_ONSTACK on a sigaltstack, then more guarded races)
 *                        gets its own fault on a page it protected itself, and returns
 *   guardprog segv     - after guarded copies, dereferences a bad pointer (dies with SIGSEGV)
 *   guardprog fork     - forks while a copy is guarded; the child reads the destination (it must
 *                        not fault: the child unprotects what it inherited) and exits 0
 *   guardprog threads  - 8 threads read the same guarded destination at once before the sync
 * Environment: TRIALS (default 200), BYTES (default 4 MiB). Prints one line per check and a hash
 * of everything read after synchronizing (identical with and without the shim when synchronized). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static struct test_driver d;
static size_t bytes;
static int trials;
static CUdeviceptr dev[2];
static unsigned char *expect[2];

static size_t env_num(const char *name, size_t fallback)
{
    const char *v = getenv(name);
    return v && *v ? (size_t)strtoull(v, NULL, 10) : fallback;
}

static void setup(void)
{
    test_driver_start(&d, "getproc");
    bytes = env_num("BYTES", 4u << 20);
    trials = (int)env_num("TRIALS", 200);
    for (int k = 0; k < 2; k++) {
        expect[k] = malloc(bytes);
        test_fill(expect[k], bytes, 1000u + (uint32_t)k);
        CHECK(d.mem_alloc(&dev[k], bytes));
        CHECK(d.htod(dev[k], expect[k], bytes));
    }
}

static unsigned char *pinned(void)
{
    void *p;
    CHECK(d.host_alloc(&p, bytes, 0));
    memset(p, 0, bytes);
    return p;
}

/* Reads or writes before synchronizing; returns how many early reads saw the copy's data. */
static int racy(unsigned char *host, int mode)
{
    int correct = 0;
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    for (int i = 0; i < trials; i++) {
        int k = i & 1;
        CHECK(d.dtoh_async(host, dev[k], bytes, s));
        if (mode == 'w')
            ((volatile unsigned char *)host)[0] = expect[k][0];
        else if (((volatile unsigned char *)host)[0] == expect[k][0] &&
                 ((volatile unsigned char *)host)[bytes - 1] == expect[k][bytes - 1])
            correct++;
        CHECK(d.stream_sync(s));
        if (memcmp(host, expect[k], bytes) != 0) {
            fprintf(stderr, "trial %d: wrong data after synchronizing\n", i);
            exit(1);
        }
    }
    CHECK(d.stream_destroy(s));
    return correct;
}

static int scenario_race(int mode)
{
    unsigned char *host = pinned();
    int correct = racy(host, mode);
    printf("early reads with the copy's data: %d of %d\n", correct, trials);
    CHECK(d.free_host(host));
    return 0;
}

static int scenario_repair(void)
{
    unsigned char *host = pinned();
    int correct = racy(host, 'r');
    printf("repaired reads: %d of %d\n", correct, trials);
    CHECK(d.free_host(host));
    return correct == trials ? 0 : 1;
}

static int scenario_registered(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    unsigned char *host = aligned_alloc((size_t)ps, bytes);
    CHECK(d.host_register(host, bytes, 0));
    int correct = racy(host, 'r');
    printf("early reads with the copy's data: %d of %d\n", correct, trials);
    CHECK(d.host_unregister(host));
    free(host);
    return 0;
}

static int scenario_io(void)
{
    unsigned char *host = pinned();
    char path[] = "/tmp/guardprog.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    unlink(path);
    unsigned char *back = malloc(bytes);
    int good = 0, check = getenv("CHECK_IO") && atoi(getenv("CHECK_IO"));
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    for (int i = 0; i < trials; i++) {
        int k = i & 1;
        CHECK(d.dtoh_async(host, dev[k], bytes, s));
        ssize_t w = pwrite(fd, host, bytes, 0);
        if (w != (ssize_t)bytes) {
            fprintf(stderr, "trial %d: pwrite returned %zd (%s)\n", i, w, w < 0 ? strerror(errno) : "short");
            return 1;
        }
        CHECK(d.stream_sync(s));
        if (pread(fd, back, bytes, 0) != (ssize_t)bytes) {
            perror("pread");
            return 1;
        }
        good += memcmp(back, expect[k], bytes) == 0;
    }
    printf("write(2) of the destination: %d calls succeeded\n", trials);
    if (check)
        printf("files with the copy's data: %d of %d\n", good, trials);
    CHECK(d.stream_destroy(s));
    CHECK(d.free_host(host));
    close(fd);
    return check && good != trials ? 1 : 0;
}

/* A host function that reads the whole destination, as XLA's D2H callbacks do, then says so. */
struct host_reader {
    const unsigned char *host;
    unsigned char *seen;
    int done;
};

static void CUDA_CB host_read(void *arg)
{
    struct host_reader *r = arg;
    memcpy(r->seen, r->host, bytes);
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

static void CUDA_CB callback_read(CUstream s, CUresult status, void *arg)
{
    (void)s, (void)status;
    host_read(arg);
}

static void CUDA_CB callback_nothing(CUstream s, CUresult status, void *arg) { (void)s, (void)status, (void)arg; }

static void host_reader_wait(struct host_reader *r)
{
    while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
        usleep(50);
    r->done = 0;
}

static int scenario_sync(const char *style)
{
    unsigned char *host = pinned();
    unsigned char small[16];
    CUstream s = NULL;
    CUevent ev;
    int legacy = strcmp(style, "sync_copy") == 0;
    if (!legacy)
        CHECK(d.stream_create(&s, 0));
    CHECK(d.event_create(&ev, 0));
    struct host_reader reader = {host, malloc(bytes), 0};
    uint64_t h = 0;
    for (int i = 0; i < trials; i++) {
        int k = i & 1;
        CHECK(d.dtoh_async(host, dev[k], bytes, s));
        if (strcmp(style, "host_fn") == 0 || strcmp(style, "callback") == 0) {
            if (style[0] == 'h')
                CHECK(d.launch_host_func(s, host_read, &reader));
            else
                CHECK(d.add_callback(s, callback_read, &reader, 0));
            host_reader_wait(&reader);
            if (memcmp(reader.seen, expect[k], bytes) != 0) {
                fprintf(stderr, "trial %d: the host function read stale data\n", i);
                return 1;
            }
        } else if (strcmp(style, "stream") == 0) {
            CHECK(d.stream_sync(s));
        } else if (strcmp(style, "ctx") == 0) {
            CHECK(d.ctx_sync(NULL));
        } else if (strcmp(style, "event_sync") == 0) {
            CHECK(d.event_record(ev, s));
            CHECK(d.event_sync(ev));
        } else if (strcmp(style, "event_query") == 0) {
            CHECK(d.event_record(ev, s));
            CUresult r;
            while ((r = d.event_query(ev)) == CUDA_ERROR_NOT_READY)
                usleep(100);
            CHECK(r);
        } else if (strcmp(style, "stream_query") == 0) {
            CUresult r;
            while ((r = d.stream_query(s)) == CUDA_ERROR_NOT_READY)
                usleep(100);
            CHECK(r);
        } else if (legacy) {
            CHECK(d.dtoh(small, dev[k], sizeof small));
        } else {
            fprintf(stderr, "unknown sync style %s\n", style);
            return 2;
        }
        if (memcmp(host, expect[k], bytes) != 0) {
            fprintf(stderr, "trial %d: wrong data after %s\n", i, style);
            return 1;
        }
        h ^= test_hash(host, bytes) + (uint64_t)i;
    }
    printf("synchronized by %s: %d trials, hash %016llx\n", style, trials, (unsigned long long)h);
    if (s)
        CHECK(d.stream_destroy(s));
    CHECK(d.free_host(host));
    free(reader.seen);
    return 0;
}

/* A host function on another stream is not ordered after the copy: its read is a race. */
static int scenario_hostfn_other(void)
{
    unsigned char *host = pinned();
    CUstream s, other;
    CHECK(d.stream_create(&s, 0));
    CHECK(d.stream_create(&other, CU_STREAM_NON_BLOCKING));
    struct host_reader reader = {host, malloc(bytes), 0};
    for (int i = 0; i < trials; i++) {
        int k = i & 1;
        CHECK(d.dtoh_async(host, dev[k], bytes, s));
        if (i == 0) { /* with a copy guarded: the driver's own answers, with or without the shim */
            printf("host function NULL: %d\n", (int)d.launch_host_func(s, NULL, NULL));
            printf("stream callback NULL: %d\n", (int)d.add_callback(s, NULL, NULL, 0));
            printf("stream callback flags 1: %d\n", (int)d.add_callback(s, callback_nothing, NULL, 1));
        }
        if (i & 1)
            CHECK(d.add_callback(other, callback_read, &reader, 0));
        else
            CHECK(d.launch_host_func(other, host_read, &reader));
        host_reader_wait(&reader);
        CHECK(d.stream_sync(s));
        if (memcmp(host, expect[k], bytes) != 0) {
            fprintf(stderr, "trial %d: wrong data after synchronizing\n", i);
            return 1;
        }
    }
    printf("host functions and stream callbacks on another stream: %d trials\n", trials);
    CHECK(d.stream_destroy(other));
    CHECK(d.stream_destroy(s));
    CHECK(d.free_host(host));
    free(reader.seen);
    return 0;
}

static void CUDA_CB count_run(void *arg) { __atomic_fetch_add((int *)arg, 1, __ATOMIC_RELAXED); }

static int scenario_hostfn_capture(void)
{
    unsigned char *host = pinned();
    CUstream s, cap;
    CHECK(d.stream_create(&s, 0));
    CHECK(d.stream_create(&cap, CU_STREAM_NON_BLOCKING));
    CHECK(d.dtoh_async(host, dev[0], bytes, s)); /* guarded while the graph is made and run */
    static int runs;
    CUgraph graph;
    CUgraphExec exec;
    CHECK(d.begin_capture(cap, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(d.launch_host_func(cap, count_run, &runs));
    CHECK(d.end_capture(cap, &graph));
    CHECK(d.graph_instantiate(&exec, graph, 0));
    for (int i = 0; i < 3; i++)
        CHECK(d.graph_launch(exec, cap));
    CHECK(d.stream_sync(cap));
    CHECK(d.stream_sync(s));
    printf("captured host function ran %d times, data %s\n", __atomic_load_n(&runs, __ATOMIC_RELAXED),
           memcmp(host, expect[0], bytes) == 0 ? "correct" : "WRONG");
    CHECK(d.stream_destroy(cap));
    CHECK(d.stream_destroy(s));
    CHECK(d.free_host(host));
    return 0;
}

/* --- the program's own SIGSEGV handler --- */

static volatile void *own_page;
static volatile int own_faults, own_siginfo_ok, own_on_altstack;
static char *alt_stack;
static size_t alt_stack_bytes;

static void own_siginfo(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    char here;
    if (alt_stack && &here >= alt_stack && &here < alt_stack + alt_stack_bytes)
        own_on_altstack++;
    if (sig == SIGSEGV && si->si_addr == own_page)
        own_siginfo_ok++;
    own_faults++;
    mprotect((void *)own_page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE);
}

static void own_plain(int sig)
{
    if (sig == SIGSEGV)
        own_faults++;
    mprotect((void *)own_page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE);
}

static void install_own(const char *how)
{
    if (strcmp(how, "plain") == 0) {
        if (signal(SIGSEGV, own_plain) == SIG_ERR)
            exit(3);
        return;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = own_siginfo;
    sa.sa_flags = SA_SIGINFO;
    if (strcmp(how, "altstack") == 0) { /* the handler runs on an alternate signal stack */
        alt_stack_bytes = 4 * (size_t)SIGSTKSZ;
        alt_stack = malloc(alt_stack_bytes);
        stack_t ss = {.ss_sp = alt_stack, .ss_size = alt_stack_bytes, .ss_flags = 0};
        if (!alt_stack || sigaltstack(&ss, NULL) != 0) {
            perror("sigaltstack");
            exit(3);
        }
        sa.sa_flags |= SA_ONSTACK;
    }
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL) != 0 || sigaction(SIGSEGV, NULL, &old) != 0 || old.sa_sigaction != own_siginfo) {
        fprintf(stderr, "sigaction does not read back the program's handler\n");
        exit(3);
    }
}

static int scenario_handler(const char *how)
{
    int early = strcmp(how, "early") == 0;
    if (early)
        install_own("siginfo");
    trials = 4;
    unsigned char *host = pinned();
    racy(host, 'r'); /* guarded copies: the shim's handler is installed by now */
    if (!early)
        install_own(how);
    long ps = sysconf(_SC_PAGESIZE);
    for (int i = 0; i < 3; i++) {
        own_page = mmap(NULL, (size_t)ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ((volatile char *)own_page)[0] = 1; /* faults; the program's handler unprotects */
        munmap((void *)own_page, (size_t)ps);
    }
    printf("own handler: %d faults, %d with the right si_addr\n", own_faults, own_siginfo_ok);
    if (alt_stack) { /* the guard still catches races with the alternate stack in place */
        racy(host, 'r');
        printf("own handler on the alternate stack: %d\n", own_on_altstack);
    }
    CHECK(d.free_host(host));
    return own_faults == 3 ? 0 : 1;
}

static int scenario_segv(void)
{
    trials = 4;
    unsigned char *host = pinned();
    racy(host, 'r');
    printf("about to fault\n");
    fflush(stdout);
    volatile int *bad = (volatile int *)16;
    *bad = 1;
    printf("still alive?\n");
    return 0;
}

static int scenario_fork(void)
{
    unsigned char *host = pinned();
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    CHECK(d.dtoh_async(host, dev[0], bytes, s));
    pid_t child = fork();
    if (child == 0) {
        volatile unsigned char sum = 0;
        for (size_t i = 0; i < bytes; i += 4096)
            sum += host[i]; /* no CUDA here: just touch the inherited pages */
        (void)sum;
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(d.stream_sync(s));
    if (memcmp(host, expect[0], bytes) != 0) {
        fprintf(stderr, "fork: wrong data after synchronizing\n");
        return 1;
    }
    printf("fork: child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static unsigned char *shared_host;
static int shared_k;
static int thread_correct;

static void *read_early(void *arg)
{
    (void)arg;
    if (shared_host[bytes / 2] == expect[shared_k][bytes / 2])
        __atomic_fetch_add(&thread_correct, 1, __ATOMIC_RELAXED);
    return NULL;
}

static int scenario_threads(void)
{
    shared_host = pinned();
    CUstream s;
    CHECK(d.stream_create(&s, 0));
    for (int i = 0; i < trials; i++) {
        shared_k = i & 1;
        CHECK(d.dtoh_async(shared_host, dev[shared_k], bytes, s));
        pthread_t t[8];
        for (int j = 0; j < 8; j++)
            pthread_create(&t[j], NULL, read_early, NULL);
        for (int j = 0; j < 8; j++)
            pthread_join(t[j], NULL);
        CHECK(d.stream_sync(s));
        if (memcmp(shared_host, expect[shared_k], bytes) != 0) {
            fprintf(stderr, "threads: wrong data after synchronizing\n");
            return 1;
        }
    }
    printf("threads: early reads with the copy's data: %d of %d\n", thread_correct, 8 * trials);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: guardprog race|repair|write|io|sync STYLE|registered|handler HOW|segv|fork|threads|"
                        "hostfn_other|hostfn_capture\n");
        return 2;
    }
    setup();
    const char *what = argv[1];
    if (strcmp(what, "race") == 0)
        return scenario_race('r');
    if (strcmp(what, "write") == 0)
        return scenario_race('w');
    if (strcmp(what, "repair") == 0)
        return scenario_repair();
    if (strcmp(what, "registered") == 0)
        return scenario_registered();
    if (strcmp(what, "io") == 0)
        return scenario_io();
    if (strcmp(what, "sync") == 0 && argc > 2)
        return scenario_sync(argv[2]);
    if (strcmp(what, "handler") == 0 && argc > 2)
        return scenario_handler(argv[2]);
    if (strcmp(what, "segv") == 0)
        return scenario_segv();
    if (strcmp(what, "fork") == 0)
        return scenario_fork();
    if (strcmp(what, "threads") == 0)
        return scenario_threads();
    if (strcmp(what, "hostfn_other") == 0)
        return scenario_hostfn_other();
    if (strcmp(what, "hostfn_capture") == 0)
        return scenario_hostfn_capture();
    fprintf(stderr, "unknown scenario %s\n", what);
    return 2;
}
