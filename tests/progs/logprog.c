/* logprog.c: copies for the per-transfer log tests (tests/bats/log.bats). Built with -rdynamic so
 * the log can name logprog_copy_site as the call site. Modes:
 *   copies N        N pageable H2D + N pageable D2H copies of 4 KiB, then "made N" per kind
 *   sizes           one pageable H2D copy each of 1 KiB, 64 KiB and 1 MiB
 *   pinned N        N pinned async H2D + N pinned async D2H copies of 1 MiB on a stream
 *   threads T N     T threads x N pageable H2D copies of 4 KiB each
 *   fork            parent: 3 copies, fork; child: 2 copies, exit(0); parent: 1 more copy
 *   forever         copies until killed; prints "ready" after the first 200
 *   events N        N event records on a stream, each followed by a query of the event (the calls
 *                   timed at random: tests/bats/summary.bats, sample_seed) */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

enum { SMALL = 4096 };

static struct test_driver d;
static CUcontext ctx;
static CUdeviceptr dev;

/* The call site the log should name: one copy, in a function of its own. */
__attribute__((noinline)) void logprog_copy_site(const void *host, size_t bytes);
__attribute__((noinline)) void logprog_copy_site(const void *host, size_t bytes)
{
    CHECK(d.htod(dev, host, bytes));
    __asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
}

static void *thread_copies(void *arg)
{
    long n = (long)(intptr_t)arg;
    CHECK(d.ctx_set(ctx));
    unsigned char *host = malloc(SMALL);
    test_fill(host, SMALL, 5);
    for (long i = 0; i < n; i++)
        logprog_copy_site(host, SMALL);
    free(host);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "copies";
    long n = argc > 2 ? atol(argv[2]) : 10;
    test_driver_load(&d, "getproc");
    CUdevice device;
    CHECK(d.init(0));
    CHECK(d.device_get(&device, 0));
    CHECK(d.primary_retain(&ctx, device));
    CHECK(d.ctx_set(ctx));
    const size_t max = 1u << 20;
    unsigned char *host = malloc(max);
    test_fill(host, max, 3);
    CHECK(d.mem_alloc(&dev, max));

    if (strcmp(mode, "copies") == 0) {
        for (long i = 0; i < n; i++) {
            logprog_copy_site(host, SMALL);
            CHECK(d.dtoh(host, dev, SMALL));
        }
        printf("made %ld h2d pageable, %ld d2h pageable\n", n, n);
    } else if (strcmp(mode, "sizes") == 0) {
        logprog_copy_site(host, 1024);
        logprog_copy_site(host, 64 * 1024);
        logprog_copy_site(host, max);
    } else if (strcmp(mode, "pinned") == 0) {
        void *pinned;
        CUstream s;
        CHECK(d.host_alloc(&pinned, max, 0));
        CHECK(d.stream_create(&s, 0));
        for (long i = 0; i < n; i++) {
            CHECK(d.htod_async(dev, pinned, max, s));
            CHECK(d.dtoh_async(pinned, dev, max, s));
        }
        CHECK(d.stream_sync(s));
    } else if (strcmp(mode, "threads") == 0) {
        long per = argc > 3 ? atol(argv[3]) : 1000;
        pthread_t t[64];
        if (n > 64)
            n = 64;
        for (long i = 0; i < n; i++)
            pthread_create(&t[i], NULL, thread_copies, (void *)(intptr_t)per);
        for (long i = 0; i < n; i++)
            pthread_join(t[i], NULL);
        printf("made %ld\n", n * per);
    } else if (strcmp(mode, "fork") == 0) {
        for (int i = 0; i < 3; i++)
            logprog_copy_site(host, SMALL);
        fflush(stdout);
        pid_t child = fork();
        if (child == 0) {
            for (int i = 0; i < 2; i++)
                logprog_copy_site(host, SMALL);
            printf("child %d made 2\n", (int)getpid());
            exit(0);
        }
        int status;
        waitpid(child, &status, 0);
        logprog_copy_site(host, SMALL);
        printf("parent %d made 4, child exit %d\n", (int)getpid(), WEXITSTATUS(status));
    } else if (strcmp(mode, "events") == 0) {
        CUstream s;
        CUevent ev;
        CHECK(d.stream_create(&s, 0));
        CHECK(d.event_create(&ev, 0));
        for (long i = 0; i < n; i++) {
            CHECK(d.event_record(ev, s));
            CUresult r = d.event_query(ev);
            if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY)
                CHECK(r);
        }
        printf("made %ld event records and queries\n", n);
    } else if (strcmp(mode, "forever") == 0) {
        for (long i = 0;; i++) {
            logprog_copy_site(host, SMALL);
            if (i == 200) {
                printf("ready\n");
                fflush(stdout);
            }
        }
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
