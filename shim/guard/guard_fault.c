/* guard_fault.c: what the guard does when the program touches guarded pages (see guard.h): a fault
 * in a guarded range (from the handler guard_signal.c calls) or an I/O call whose buffer the kernel
 * would touch (io_hooks.c) is counted and reported, sanitizer style (rate-limited per call site),
 * then, by mode, let through with the pages unprotected (warn), made correct by waiting for the
 * copy's marker first (repair), or ends the process (abort). Also what the guard says at the end:
 * its section of the summary and the SUMMARY line. Everything on the fault path is
 * async-signal-safe: no CUDA, no malloc, no stdio, no lock. */
#define _GNU_SOURCE
#include "guard_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/driver.h"
#include "guard_signal.h"
#include "guard_stack.h"
#include "observe/callsite.h"
#include "observe/jbuf.h"
#include "observe/pysite.h"
#include "policy.h"

#define GUARD_REPORTS_PER_SITE 3    /* full reports per call site; later races there are counted */
#define GUARD_SITES 64              /* call sites whose reports are counted separately */
#define GUARD_REPAIR_WAIT_NS 30000000000ull /* repair gives up waiting for a copy after 30 s */
#define GUARD_BUSY_WAIT_NS 30000000000ull   /* a fault waits this long for another thread's release */
#define GUARD_STACK_MAX 32
#define GUARD_PY_FRAMES_MAX 24 /* Python frames read for a report */

struct guard_counters guard_n;
static __thread uintptr_t tls_stale_addr __attribute__((tls_model("initial-exec")));

/* --- reports (async-signal-safe) --- */

static struct { const struct callsite *site; uint64_t races; } sites[GUARD_SITES];
static uint64_t overflow_site_races;

/* The race count of the copy's call site after this race. */
static uint64_t site_race(const struct callsite *site)
{
    for (unsigned i = 0; i < GUARD_SITES; i++) {
        const struct callsite *cur = __atomic_load_n(&sites[i].site, __ATOMIC_ACQUIRE);
        if (!cur) {
            const struct callsite *expected = NULL;
            if (__atomic_compare_exchange_n(&sites[i].site, &expected, site, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
                cur = site;
            else
                cur = expected;
        }
        if (cur == site)
            return __atomic_add_fetch(&sites[i].races, 1, __ATOMIC_RELAXED);
    }
    return __atomic_add_fetch(&overflow_site_races, 1, __ATOMIC_RELAXED);
}

static void write_stderr(const char *p, size_t len)
{
    while (len) {
        long w = syscall(SYS_write, STDERR_FILENO, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        len -= (size_t)w;
    }
}

static const char *const mode_names[] = {"off", "warn", "repair", "abort"};

static void line_start(struct jbuf *jb)
{
    jb_lit(jb, "==");
    jb_u64(jb, (uint64_t)getpid());
    jb_lit(jb, "== ");
}

static void stream_name(struct jbuf *jb, CUstream stream)
{
    jb_hex(jb, (uintptr_t)stream);
    if (stream == NULL || stream == CU_STREAM_LEGACY)
        jb_lit(jb, " (the legacy default stream)");
    else if (stream == CU_STREAM_PER_THREAD)
        jb_lit(jb, " (the per-thread default stream)");
}

/* "read at": the reading thread's Python line, else its first frame in the program's executable
 * (when the program is not the Python interpreter), else the access itself. */
static void access_site(struct jbuf *jb, const uintptr_t *frames, int nframes)
{
    if (pysite_append_here(jb))
        return;
    int pick = 0;
    if (!pysite_python())
        for (int f = 0; f < nframes; f++) {
            bool main = false;
            guard_frame_module(frames[f], &main);
            if (main) {
                pick = f;
                break;
            }
        }
    char fr[160];
    size_t pos = 0;
    if (nframes > 0) {
        guard_frame_text(fr, sizeof fr, &pos, frames[pick]);
        jb_raw(jb, fr, pos);
        jb_lit(jb, " (frame #");
        jb_u64(jb, (uint64_t)pick);
        jb_lit(jb, pysite_python() ? " below; the thread runs no Python code)" : " below)");
    } else {
        jb_lit(jb, "?");
    }
}

/* The report: first what happened in the program's own terms (the line that read, the line that
 * started the copy, the stream, the fix), then the details and the stacks. */
static void report(const struct guard_slot *s, unsigned i, uintptr_t addr, enum guard_access access,
                   const char *via, const void *uc, uint64_t site_count)
{
    uintptr_t frames[GUARD_STACK_MAX];
    int nframes = uc ? guard_stack_signal(uc, frames, GUARD_STACK_MAX) : guard_stack_here(frames, GUARD_STACK_MAX);
    bool full = pinshim_policy.guard_stack == GUARD_STACK_FULL;
    bool done = guard_marker_done(s, i);
    char buf[6144], prefix[40];
    struct jbuf jb, pb;
    jb_init(&pb, prefix, sizeof prefix - 1);
    line_start(&pb);
    jb_lit(&pb, "    ");
    prefix[pb.len] = '\0';
    jb_init(&jb, buf, sizeof buf);
    line_start(&jb);
    jb_lit(&jb, access == GUARD_WRITE ? "pinshim: unsynchronized WRITE of D2H destination at "
                                      : "pinshim: unsynchronized READ of D2H destination at ");
    jb_hex(&jb, addr);
    if (via) {
        jb_lit(&jb, " by ");
        jb_lit(&jb, via);
    }
    jb_lit(&jb, "\n");
    line_start(&jb);
    jb_lit(&jb, access == GUARD_WRITE ? "  written at:  " : "  read at:     ");
    access_site(&jb, frames, nframes);
    jb_lit(&jb, "\n");
    line_start(&jb);
    jb_lit(&jb, "  copy from:   ");
    if (s->site)
        callsite_append_text(&jb, s->site);
    else
        jb_lit(&jb, "?");
    jb_lit(&jb, "\n");
    line_start(&jb);
    jb_lit(&jb, "  on stream:   ");
    stream_name(&jb, s->stream);
    jb_lit(&jb, done ? ": the copy had completed, but no host synchronization covered it yet\n"
                     : ": the copy had NOT completed: the data read may be stale\n");
    line_start(&jb);
    jb_lit(&jb, "  fix:         synchronize that stream before the access (PyTorch: torch.cuda.current_stream()."
                "synchronize() or torch.cuda.synchronize(); CUDA: cudaStreamSynchronize / cuStreamSynchronize), "
                "or record an event after the copy and wait on it (event.synchronize(), cudaEventSynchronize)\n");
    line_start(&jb);
    jb_lit(&jb, "  the copy:    #");
    jb_u64(&jb, s->copy_no);
    jb_lit(&jb, " ");
    jb_lit(&jb, driver_entries[s->entry].export_name);
    jb_lit(&jb, ", ");
    jb_u64(&jb, s->bytes);
    jb_lit(&jb, " bytes into ");
    jb_hex(&jb, s->dst);
    jb_lit(&jb, "; the access is at offset ");
    jb_u64(&jb, addr >= s->dst ? addr - s->dst : 0);
    jb_lit(&jb, "\n");
    if (pysite_python()) {
        struct jbuf py = jb;
        line_start(&py);
        jb_lit(&py, full ? "  Python stack of the access:\n" : "  Python stack of the access (library frames counted):\n");
        if (pysite_append_stack(&py, prefix, GUARD_PY_FRAMES_MAX, full) > 0)
            jb = py; /* only when the thread had Python frames */
    }
    line_start(&jb);
    jb_lit(&jb, full ? "  native stack of the access:\n"
                     : "  native stack of the access (runs in one library folded; guard_stack=full shows all):\n");
    guard_stack_append(&jb, prefix, frames, nframes, full);
    line_start(&jb);
    jb_lit(&jb, "  guard = ");
    jb_lit(&jb, mode_names[pinshim_policy.guard]);
    jb_lit(&jb, pinshim_policy.guard == GUARD_REPAIR  ? ": waiting for the copy, then continuing\n"
                : pinshim_policy.guard == GUARD_ABORT ? ": aborting\n"
                                                      : ": unprotecting the pages and continuing\n");
    if (site_count == GUARD_REPORTS_PER_SITE) {
        line_start(&jb);
        jb_lit(&jb, "  (later races of copies from this call site are counted, not reported)\n");
    }
    if (jb.full) /* cut: end the last line */
        buf[sizeof buf - 1] = '\n';
    write_stderr(buf, jb.len);
}

static void wait_ns(uint64_t ns)
{
    struct timespec ts = {0, (long)ns};
    nanosleep(&ts, NULL);
}

/* The caller owns s (BUSY). Reports, then repairs, aborts or unprotects. */
static void handle_race(struct guard_slot *s, unsigned i, uintptr_t addr, enum guard_access access, const char *via,
                        const void *uc)
{
    guard_count(&guard_n.races, 1);
    guard_count(access == GUARD_WRITE ? &guard_n.writes : &guard_n.reads, 1);
    if (via)
        guard_count(&guard_n.io_races, 1);
    if (guard_marker_done(s, i))
        guard_count(&guard_n.completed_before_access, 1);
    uint64_t site_count = site_race(s->site);
    if (site_count <= GUARD_REPORTS_PER_SITE) {
        guard_count(&guard_n.reports, 1);
        report(s, i, addr, access, via, uc, site_count);
    } else {
        guard_count(&guard_n.rate_limited, 1);
    }
    if (pinshim_policy.guard == GUARD_ABORT)
        abort();
    if (pinshim_policy.guard == GUARD_REPAIR) {
        uint64_t waited = 0;
        while (!guard_marker_done(s, i) && waited < GUARD_REPAIR_WAIT_NS) {
            wait_ns(2000);
            waited += 2000;
        }
        guard_count(guard_marker_done(s, i) ? &guard_n.repaired : &guard_n.repair_timeouts, 1);
    }
    guard_unprotect_and_free(s);
    guard_count(&guard_n.released_race, 1);
}

/* Waits until the slot another thread is handling is released (its pages then restored). */
static void wait_busy(struct guard_slot *s)
{
    for (uint64_t waited = 0; __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == SLOT_BUSY && waited < GUARD_BUSY_WAIT_NS;
         waited += 2000)
        wait_ns(2000);
}

int guard_fault(uintptr_t addr, enum guard_access access, const void *uc)
{
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        struct guard_slot *s = &guard_slots[i];
        int st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
        if ((st != SLOT_ACTIVE && st != SLOT_BUSY) || addr < s->lo || addr >= s->hi)
            continue;
        if (st == SLOT_ACTIVE && guard_take(s)) {
            if (addr < s->lo || addr >= s->hi) { /* reused for other pages meanwhile */
                __atomic_store_n(&s->state, SLOT_ACTIVE, __ATOMIC_RELEASE);
                continue;
            }
            handle_race(s, i, addr, access, NULL, uc);
        } else {
            wait_busy(s);
        }
        tls_stale_addr = 0;
        return 1;
    }
    /* Released by another thread between the fault and now: retry the access once. */
    if (tls_stale_addr != addr && guard_recently_released(addr)) {
        tls_stale_addr = addr;
        return 1;
    }
    return 0;
}

void guard_io(uintptr_t buf, size_t len, enum guard_access access, const char *via)
{
    uintptr_t lo = buf, hi = lo + len;
    if (!len || pinshim_policy.guard == GUARD_OFF)
        return;
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        struct guard_slot *s = &guard_slots[i];
        int st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
        if ((st != SLOT_ACTIVE && st != SLOT_BUSY) || hi <= s->dst || lo >= s->dst + s->bytes)
            continue;
        if (st == SLOT_BUSY) {
            wait_busy(s);
            continue;
        }
        if (!guard_take(s))
            continue;
        if (hi <= s->dst || lo >= s->dst + s->bytes) {
            __atomic_store_n(&s->state, SLOT_ACTIVE, __ATOMIC_RELEASE);
            continue;
        }
        handle_race(s, i, lo > s->dst ? lo : s->dst, access, via, NULL);
    }
}

/* --- summary and exit --- */

size_t guard_summary_json(char *buf, size_t len)
{
    if (pinshim_policy.guard == GUARD_OFF)
        return 0;
    struct jbuf jb;
    jb_init(&jb, buf, len);
    jb_lit(&jb, ",\"guard\":{\"mode\":");
    jb_str(&jb, mode_names[pinshim_policy.guard]);
    jb_lit(&jb, ",\"pages\":");
    jb_str(&jb, pinshim_policy.guard_pages == GUARD_PAGES_FIRST ? "first" : "all");
#define FIELD(name)                                                                                    \
    jb_lit(&jb, ",\"" #name "\":");                                                                    \
    jb_u64(&jb, guard_get(&guard_n.name));
    FIELD(guarded) FIELD(guarded_bytes) FIELD(protected_bytes) FIELD(races) FIELD(reads) FIELD(writes)
    FIELD(io_races) FIELD(reports) FIELD(rate_limited) FIELD(completed_before_access) FIELD(repaired)
    FIELD(repair_timeouts) FIELD(released_sync) FIELD(released_free) FIELD(released_race) FIELD(table_full)
    FIELD(too_small) FIELD(not_tracked) FIELD(capture) FIELD(marker_hostfn) FIELD(marker_failed)
    FIELD(protect_failed) FIELD(mixed_prot)
#undef FIELD
    jb_lit(&jb, ",\"still_guarded\":");
    jb_u64(&jb, (uint64_t)__atomic_load_n(&guard_live, __ATOMIC_RELAXED));
    jb_lit(&jb, "}");
    if (jb.full || jb.len >= len)
        return 0;
    buf[jb.len] = '\0';
    return jb.len;
}

static size_t summary_line(char *buf, size_t len, bool sanitizer_style)
{
    struct jbuf jb;
    jb_init(&jb, buf, len);
    line_start(&jb);
    jb_lit(&jb, sanitizer_style ? "pinshim: SUMMARY: " : "guard (");
    if (!sanitizer_style) {
        jb_lit(&jb, mode_names[pinshim_policy.guard]);
        jb_lit(&jb, "): ");
        jb_u64(&jb, guard_get(&guard_n.guarded));
        jb_lit(&jb, " async D2H copies guarded, ");
    }
    jb_u64(&jb, guard_get(&guard_n.races));
    jb_lit(&jb, " unsynchronized accesses of D2H destinations (");
    jb_u64(&jb, guard_get(&guard_n.reads));
    jb_lit(&jb, " READ, ");
    jb_u64(&jb, guard_get(&guard_n.writes));
    jb_lit(&jb, " WRITE; ");
    jb_u64(&jb, guard_get(&guard_n.reports));
    jb_lit(&jb, " reported, ");
    jb_u64(&jb, guard_get(&guard_n.rate_limited));
    jb_lit(&jb, " rate-limited)\n");
    if (jb.full || jb.len >= len)
        return 0;
    buf[jb.len] = '\0';
    return jb.len;
}

size_t guard_summary_text(char *buf, size_t len)
{
    if (pinshim_policy.guard == GUARD_OFF)
        return 0;
    return summary_line(buf, len, false);
}

void guard_at_exit(void)
{
    if (pinshim_policy.guard == GUARD_OFF || !guard_get(&guard_n.races))
        return;
    char buf[512];
    size_t len = summary_line(buf, sizeof buf, true);
    write_stderr(buf, len);
    if (pinshim_policy.guard_exitcode)
        _exit((int)pinshim_policy.guard_exitcode);
}
