/* memory.c: device allocations made and freed by two threads at once. The shim frees device memory
 * from a thread of its own (the link probe's buffer, while the program allocates at context start),
 * so it relies on cuMemFree being done with an address before any later cuMemAlloc may hand it out:
 * bytes written into the new allocation stay. Prints counts only, never addresses. */
#include <unistd.h>

#include "conform.h"

#define ROUNDS 200
#define BYTES (4u << 20)

struct churn {
    volatile int stop;
    CUresult first_error;
    int rounds;
};

/* The other thread: allocates and frees the same size until told to stop, pausing between rounds.
 * Unpaced, it kept the real driver's lock so busy that every call of the main thread waited its
 * turn: 200 rounds took 50-56 s without the shim on an H100, and over 120 s (the case's limit) with
 * it, whose copies make more driver calls each (2026-11-26; not a hang: both threads ran). */
#define CHURN_PAUSE_US 100
static void *churn_main(void *arg)
{
    struct churn *c = arg;
    CUresult r = d.ctx_set(ctx0);
    while (!r && !c->stop) {
        CUdeviceptr p;
        r = d.mem_alloc(&p, BYTES);
        if (!r)
            r = d.mem_free(p);
        c->rounds++;
        usleep(CHURN_PAUSE_US);
    }
    c->first_error = r;
    return NULL;
}

void case_memory_free_reuse(void)
{
    struct churn c = {0, CUDA_SUCCESS, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, churn_main, &c) != 0) {
        say("setup", "setup failed: pthread_create");
        exit(1);
    }
    unsigned char *h = malloc(BYTES);
    int lost = 0, failed = 0;
    CUresult first = CUDA_SUCCESS;
    for (int i = 0; i < ROUNDS; i++) {
        CUdeviceptr p;
        CUresult r = d.mem_alloc(&p, BYTES);
        if (!r)
            r = ex.memset_d8(p, 0x5a, BYTES);
        if (!r)
            r = d.dtoh(h, p, BYTES);
        if (!r) {
            for (size_t k = 0; k < BYTES; k++)
                if (h[k] != 0x5a) {
                    lost++;
                    break;
                }
            r = d.mem_free(p);
        }
        if (r && !failed++)
            first = r;
    }
    c.stop = 1;
    pthread_join(t, NULL);
    say("calls", "failed %d, first %s", failed, rcs(first));
    say("other_thread", "%s", rcs(c.first_error));
    say("rounds_with_lost_bytes", "%d of %d", lost, ROUNDS);
    free(h);
}
