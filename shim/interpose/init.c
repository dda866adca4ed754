/* init.c: the shim's life cycle, and the one place the layers are wired together. The constructor
 * loads the policy, registers the summary's sections (observe/stats.h) and the subscribers of the
 * allocation events (hostmem/alloc_events.h), and installs the fork handler; everything
 * CUDA-related is resolved lazily by the wrappers, so a program that never uses CUDA sees nothing.
 * At exit the summary is written if the program used CUDA at all.
 * fork: the child starts its own account and never calls the driver from the shim. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/common.h"
#include "base/gate.h"
#include "guard/guard.h"
#include "hostmem/alloc_events.h"
#include "hostmem/memkind.h"
#include "hostmem/recycle.h"
#include "hostmem/regcache.h"
#include "observe/advice.h"
#include "observe/ctxdev.h"
#include "observe/linkrate.h"
#include "observe/log.h"
#include "observe/stats.h"
#include "policy.h"
#include "stage/pool.h"
#include "stage/stage.h"
#include "stage/workers.h"

static time_t process_start;

/* The summary's sections, in the order they are printed after the transfer table. */
static const struct stats_section summary_sections[] = {
    {stage_summary_json, stage_summary_text},       /* staged copies, the pool, why not staged */
    {linkrate_summary_json, linkrate_summary_text}, /* the pinned rates the pool's probe measured */
    {regcache_summary_json, regcache_summary_text}, /* pin-on-reuse registrations */
    {guard_summary_json, guard_summary_text},       /* guarded copies and races */
};

/* The gate's words that come from the policy (base/gate.h); the layers set their own. */
static void open_gate(void)
{
    uint64_t h2d = pinshim_policy.stage_min_bytes, d2h = pinshim_policy.stage_d2h_min_bytes;
    __atomic_store_n(&pinshim_gate.small_below, h2d < d2h ? h2d : d2h, __ATOMIC_RELAXED);
    __atomic_store_n(&pinshim_gate.observing, pinshim_policy.intercept, __ATOMIC_RELAXED);
    __atomic_store_n(&pinshim_gate.sync_adaptive, pinshim_policy.sync_timing == SYNC_TIMING_ADAPTIVE, __ATOMIC_RELAXED);
    __atomic_store_n(&pinshim_gate.small_unstaged, pinshim_policy.stage ? UNSTAGED_SMALL : UNSTAGED_DISABLED,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&pinshim_gate.prewarm_pending,
                     pinshim_policy.stage && pinshim_policy.pool_prewarm != POOL_PREWARM_OFF, __ATOMIC_RELAXED);
    pinshim_sample_set_seed(pinshim_policy.sample_seed);
}

static void on_fork_child(void)
{
    stats_reset();
    memkind_forget_all();
    memkind_allow_driver(false);
    stage_forget();
    pool_forget();
    linkrate_forget();
    ctxdev_fork_child();
    workers_forget();
    log_fork_child();
    guard_fork_child();
    regcache_fork_child();
    recycle_fork_child();
}

__attribute__((constructor)) static void pinshim_init(void)
{
    process_start = time(NULL);
    pinshim_clock_init(); /* the wrappers' interval clock, before any thread times a call */
    for (size_t i = 0; i < sizeof summary_sections / sizeof summary_sections[0]; i++)
        stats_add_section(&summary_sections[i]);
    policy_load();
    open_gate();
    alloc_events_subscribe(memkind_subscriber()); /* unmapped pages forget what the driver said */
    const struct alloc_subscriber *cache = regcache_configure();
    if (cache)
        alloc_events_subscribe(cache); /* from now on large allocations are tracked */
    const struct alloc_subscriber *reserve = recycle_configure();
    if (reserve)
        alloc_events_subscribe(reserve); /* freed allocations' pages, kept for staged D2H */
    log_init(process_start); /* reports a bad log pattern now, not only at exit */
    guard_init();
    pthread_atfork(recycle_fork_prepare, recycle_fork_parent, on_fork_child);
}

static void write_exit_summary(void)
{
    if (!__atomic_load_n(&pinshim_gate.observing, __ATOMIC_RELAXED) || !stats_any_activity())
        return;
    if (log_finish()) /* PINSHIM_LOG's file got the summary record: nothing on stderr */
        return;
    if (pinshim_policy.summary == SUMMARY_NONE)
        return;
    bool json = pinshim_policy.summary == SUMMARY_JSON;
    stats_write_summary(STDERR_FILENO, json);
    if (!json)
        advice_write_text(STDERR_FILENO);
}

__attribute__((destructor)) static void pinshim_fini(void)
{
    write_exit_summary();
    guard_at_exit(); /* the guard's SUMMARY line last; may _exit(guard_exitcode) */
}
