/* init.c: the shim's life cycle. The constructor loads the policy and installs the fork handler;
 * everything CUDA-related is resolved lazily by the wrappers, so a program that never uses CUDA
 * sees nothing. At exit the summary is written if the program used CUDA at all.
 * fork: the child starts its own account and never calls the driver from the shim. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

#include "common.h"
#include "driver.h"
#include "entry.h"
#include "logpath.h"
#include "memkind.h"
#include "policy.h"
#include "stats.h"

static time_t process_start;

CUresult entry_missing(enum driver_entry_id id)
{
    static bool warned[ENTRY_COUNT];
    if (!__atomic_exchange_n(&warned[id], true, __ATOMIC_RELAXED))
        pinshim_warn("warning: %s was called but no CUDA driver providing it is loaded; returning "
                     "CUDA_ERROR_NOT_FOUND", driver_entries[id].export_name);
    return CUDA_ERROR_NOT_FOUND;
}

static void on_fork_child(void)
{
    stats_reset();
    memkind_forget_all();
    memkind_allow_driver(false);
}

/* Opens the summary's destination: PINSHIM_LOG's file, or stderr when unset or unusable. */
static int summary_fd(bool *opened)
{
    *opened = false;
    if (!pinshim_policy.log[0])
        return STDERR_FILENO;
    char path[4096], err[512];
    if (logpath_expand(pinshim_policy.log, process_start, path, sizeof path, err, sizeof err) != 0) {
        pinshim_warn("warning: PINSHIM_LOG: %s; writing the summary to stderr", err);
        return STDERR_FILENO;
    }
    int fd = logpath_open(path, err, sizeof err);
    if (fd < 0) {
        pinshim_warn("warning: PINSHIM_LOG: %s; writing the summary to stderr", err);
        return STDERR_FILENO;
    }
    *opened = true;
    return fd;
}

__attribute__((constructor)) static void pinshim_init(void)
{
    process_start = time(NULL);
    policy_load();
    if (pinshim_policy.log[0]) { /* report a bad pattern now, not only at exit */
        char path[4096], err[512];
        if (logpath_expand(pinshim_policy.log, process_start, path, sizeof path, err, sizeof err) != 0)
            pinshim_warn("warning: PINSHIM_LOG: %s; the summary will go to stderr", err);
    }
    pthread_atfork(NULL, NULL, on_fork_child);
}

__attribute__((destructor)) static void pinshim_fini(void)
{
    if (!pinshim_policy.intercept || pinshim_policy.summary == SUMMARY_NONE || !stats_any_activity())
        return;
    bool opened;
    int fd = summary_fd(&opened);
    stats_write_summary(fd, pinshim_policy.summary == SUMMARY_JSON);
    if (opened)
        close(fd);
}
