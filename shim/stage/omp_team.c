/* omp_team.c: the program's spinning OpenMP team as helpers of a staged copy (see omp_team.h). */
#define _GNU_SOURCE
#include "omp_team.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/common.h"
#include "policy.h"

typedef void (*fn_gomp_parallel)(void (*)(void *), void *, unsigned, unsigned);
typedef int (*fn_int)(void);

/* ------------------------------------------------------------------ the runtime's entry points */

/* Found once the program has loaded the runtime; looked for again only when the set of loaded
 * objects grew (dl_phdr_info's dlpi_adds). */
static pthread_mutex_t look_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long looked_at_adds; /* under look_lock */
static fn_gomp_parallel gomp_parallel;    /* set once, after the two below (release) */
static fn_int in_parallel, max_threads, thread_num;

/* How long, at most, a team spins after a region ends (then it sleeps): libgomp spins 300,000
 * times by default ("about 3 ms", its documentation says; several times that where a pause
 * instruction is slow); libomp and libiomp for KMP_BLOCKTIME, 200 ms by default. */
#define GOMP_SPIN_NS 50000000u
#define KMP_SPIN_NS 250000000u
static uint64_t spin_after_ns;

/* Basename prefixes of OpenMP runtimes (PyTorch's wheels ship libgomp renamed, e.g.
 * libgomp-a34b3233.so.1). */
static const char *const runtimes[] = {"libgomp", "libiomp", "libomp"};
#define MAX_CANDIDATES 4

struct look {
    unsigned long long adds;
    bool counted;
    unsigned found;
    char paths[MAX_CANDIDATES][PATH_MAX];
    const char *names[MAX_CANDIDATES]; /* which of runtimes[] */
};
static const char *runtime_name; /* of the runtime found (set with gomp_parallel) */

static int look_at(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct look *l = arg;
    if (!l->counted) {
        l->counted = true;
        if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
            l->adds = info->dlpi_adds;
        if (l->adds && l->adds == looked_at_adds)
            return 1; /* nothing loaded since the last look */
    }
    const char *base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    for (size_t i = 0; i < sizeof runtimes / sizeof *runtimes && l->found < MAX_CANDIDATES; i++)
        if (strncmp(base, runtimes[i], strlen(runtimes[i])) == 0 && strlen(info->dlpi_name) < PATH_MAX) {
            l->names[l->found] = runtimes[i];
            strcpy(l->paths[l->found++], info->dlpi_name);
            break;
        }
    return 0;
}

/* While no runtime is found, at most one look this often (a program without OpenMP stages copies
 * of 64 KiB and up; a look takes the loader's lock). */
#define RUNTIME_LOOK_NS 100000000u

/* Finds the loaded runtime's entry points (never loads one: RTLD_NOLOAD). */
static bool have_runtime(void)
{
    static uint64_t next_look_ns; /* relaxed atomic */
    if (__atomic_load_n(&gomp_parallel, __ATOMIC_ACQUIRE))
        return true;
    uint64_t now = pinshim_now_ns();
    if (now < __atomic_load_n(&next_look_ns, __ATOMIC_RELAXED))
        return false;
    __atomic_store_n(&next_look_ns, now + RUNTIME_LOOK_NS, __ATOMIC_RELAXED);
    static struct look l; /* under look_lock: PATH_MAX paths are too large for a stack we do not own */
    pthread_mutex_lock(&look_lock);
    memset(&l, 0, sizeof l);
    dl_iterate_phdr(look_at, &l);
    if (!gomp_parallel && (!l.adds || l.adds != looked_at_adds)) {
        looked_at_adds = l.adds;
        for (unsigned i = 0; i < l.found; i++) {
            void *h = dlopen(l.paths[i], RTLD_LAZY | RTLD_NOLOAD);
            if (!h)
                continue;
            fn_gomp_parallel p = (fn_gomp_parallel)dlsym(h, "GOMP_parallel");
            in_parallel = (fn_int)dlsym(h, "omp_in_parallel");
            max_threads = (fn_int)dlsym(h, "omp_get_max_threads");
            thread_num = (fn_int)dlsym(h, "omp_get_thread_num");
            if (p && in_parallel && max_threads && thread_num) { /* the handle stays open: never unloaded under us */
                runtime_name = l.names[i];
                spin_after_ns = strcmp(runtime_name, "libgomp") == 0 ? GOMP_SPIN_NS : KMP_SPIN_NS;
                __atomic_store_n(&gomp_parallel, p, __ATOMIC_RELEASE);
                break;
            }
            dlclose(h);
        }
    }
    pthread_mutex_unlock(&look_lock);
    return __atomic_load_n(&gomp_parallel, __ATOMIC_ACQUIRE) != NULL;
}

const char *omp_team_runtime(void) { return have_runtime() ? runtime_name : NULL; }

/* ------------------------------------------------------------------ is the team spinning? */

/* The watched team thread: thread 1 of the team, learned in the shim's first region (its CPU clock
 * is read through its thread id); 0 = not known (again). */
static pid_t watched_tid;

/* At most one look at the process's threads this often while the watched thread is unknown. */
#define OMP_TEAM_SCAN_NS 100000000u
static uint64_t next_scan_ns;

/* The CPU time of thread tid of this process, or false once it is gone. */
static bool thread_cpu_ns(pid_t tid, uint64_t *ns)
{
    struct timespec ts;
    clockid_t clock = (clockid_t)((~(unsigned)tid << 3) | 6); /* the kernel's per-thread CPU clock (sched) */
    if (clock_gettime(clock, &ts) != 0)
        return false;
    *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return true;
}

/* Whether at least `want` threads of this process other than the caller, of the caller's name,
 * are running now (state R in /proc/self/task/TID/stat). The threads of the caller's team were
 * started from it and keep its name; the driver's threads, the shim's (workers.c, pool.c,
 * recycle.c, log_writer.c: all named pinshim-*) and others that name themselves are not counted. */
static bool threads_running(unsigned want)
{
    char name[17] = "", path[64], buf[512];
    if (prctl(PR_GET_NAME, name) != 0)
        return false;
    size_t name_len = strlen(name);
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return false;
    pid_t self = (pid_t)syscall(SYS_gettid);
    unsigned running = 0;
    for (struct dirent *e; running < want && (e = readdir(d));) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == self)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        const char *open_paren = strchr(buf, '('), *paren = strrchr(buf, ')'); /* the name may hold ')' */
        if (open_paren && paren && paren[1] == ' ' && paren[2] == 'R' && (size_t)(paren - open_paren - 1) == name_len &&
            memcmp(open_paren + 1, name, name_len) == 0)
            running++;
    }
    closedir(d);
    return running >= want;
}

/* PROBE_NONE: no team that could spin (no runtime loaded, or one thread); PROBE_ELSEWHERE: there
 * may be, but this copy cannot borrow it (stage_openmp = off, another thread, inside a region);
 * PROBE_SKIP: it could, but the team is not looked at this time (a scan was made less than
 * OMP_TEAM_SCAN_NS ago); PROBE_CLOCK, PROBE_SCAN: how it is looked at. */
enum { PROBE_NONE, PROBE_ELSEWHERE, PROBE_SKIP, PROBE_CLOCK, PROBE_SCAN };

void omp_team_probe_begin(struct omp_probe *p)
{
    static __thread signed char main_thread; /* 1 yes, -1 no, 0 not known yet */
    p->state = PROBE_NONE;
    if (!have_runtime() || (p->threads = (unsigned)max_threads()) < 2)
        return;
    p->state = PROBE_ELSEWHERE;
    if (pinshim_policy.stage_openmp == STAGE_OPENMP_OFF)
        return;
    if (!main_thread)
        main_thread = syscall(SYS_gettid) == getpid() ? 1 : -1;
    if (main_thread < 0 || in_parallel())
        return;
    p->state = PROBE_SKIP;
    pid_t tid = __atomic_load_n(&watched_tid, __ATOMIC_RELAXED);
    if (tid && thread_cpu_ns(tid, &p->cpu_ns)) {
        p->state = PROBE_CLOCK;
        return;
    }
    __atomic_store_n(&watched_tid, 0, __ATOMIC_RELAXED); /* gone (the team shrank): learn another */
    if (pinshim_now_ns() >= next_scan_ns)
        p->state = PROBE_SCAN;
}

/* Who made the team spin. Each region the shim runs leaves the team spinning afterwards too, and
 * a copy borrowing it then would keep it spinning for good (copies every few milliseconds and
 * nothing else for the team to do: cores taken from the program's other work, such as a
 * DataLoader's worker processes). So the team is borrowed only where the program made it spin:
 * seen spinning when no region of the shim's could explain it (none ended in the last
 * spin_after_ns), which opens a lease of OMP_TEAM_LEASE_NS during which it is borrowed whenever it
 * spins; once the lease ends, copies use the staging threads until the program is seen making the
 * team spin again (in a loop that keeps it spinning itself, spin_after_ns later). Main thread only.
 * The lease bounds what the shim alone keeps spinning; measured (tests/bench/openmp_team_probe.py,
 * 150 fresh 64 MiB tensors .to("cuda"), each computed just before, on an H100 host), leases of
 * 1 s, 250 ms and 100 ms borrowed the team for 146, 132 and 109 copies at a median 1.90, 1.95 and
 * 2.06 ms a copy (10 ms apart), 146, 124 and 110 at 1.92, 1.94 and 1.92 ms (back to back). */
#ifndef OMP_TEAM_LEASE_NS /* a build-time override, for measuring other leases side by side */
#define OMP_TEAM_LEASE_NS 250000000u
#endif
static uint64_t last_region_end_ns, lease_end_ns;
static uint64_t team_copies; /* relaxed atomic */

unsigned omp_team_probe_end(struct omp_probe *p)
{
    uint64_t ns, now = pinshim_now_ns();
    bool spinning = false;
    if (p->state == PROBE_CLOCK) { /* a sleeping thread's clock stands still */
        spinning = thread_cpu_ns(__atomic_load_n(&watched_tid, __ATOMIC_RELAXED), &ns) && ns > p->cpu_ns;
    } else if (p->state == PROBE_SCAN) {
        next_scan_ns = now + OMP_TEAM_SCAN_NS;
        spinning = threads_running(p->threads - 1);
    }
    if (!spinning)
        return 0;
    if (!last_region_end_ns || now - last_region_end_ns > spin_after_ns)
        lease_end_ns = now + OMP_TEAM_LEASE_NS; /* the program's doing */
    else if (now >= lease_end_ns)
        return 0; /* maybe the shim's own doing */
    return p->threads;
}

bool omp_team_may_compete(const struct omp_probe *p) { return p->state == PROBE_ELSEWHERE; }

uint64_t omp_team_copies(void) { return __atomic_load_n(&team_copies, __ATOMIC_RELAXED); }

/* ------------------------------------------------------------------ running a region */

struct region {
    void (*owner)(void *), (*others)(void *);
    void *arg;
};

static void member(void *arg)
{
    struct region *r = arg;
    int me = thread_num();
    if (me == 1 && !__atomic_load_n(&watched_tid, __ATOMIC_RELAXED))
        __atomic_store_n(&watched_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELAXED); /* read after the region's end */
    (me == 0 ? r->owner : r->others)(r->arg);
}

void omp_team_run(void (*owner)(void *), void (*others)(void *), void *arg)
{
    struct region r = {owner, others, arg};
    __atomic_add_fetch(&team_copies, 1, __ATOMIC_RELAXED);
    __atomic_load_n(&gomp_parallel, __ATOMIC_ACQUIRE)(member, &r, 0, 0);
    last_region_end_ns = pinshim_now_ns();
}
