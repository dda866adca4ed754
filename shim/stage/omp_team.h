/* omp_team.h: the program's own OpenMP threads as helpers of a staged copy, while they spin.
 * After a parallel region, the threads of the program's OpenMP team spin on their cores for
 * milliseconds (libgomp's GOMP_SPINCOUNT, KMP_BLOCKTIME in libiomp/libomp) unless OMP_WAIT_POLICY
 * is passive. A staging thread woken then waits for one of those cores (up to a scheduler slice,
 * about 3 ms on the GPU machines), so a tensor PyTorch just computed went .to("cuda") at half the
 * speed it reached with OMP_WAIT_POLICY=passive. A spinning team starts a new parallel region at
 * once: such a copy, made on the thread that owns the team, runs in one region of that team, whose
 * other threads copy its pieces as the staging threads would (workers_with_team), through the
 * runtime the program loaded (GOMP_parallel, which libgomp, libomp and libiomp export).
 * Only while the team is spinning: a region woken from sleep would set its threads spinning
 * afterwards, taking cores from whatever else runs (a DataLoader's worker processes took three
 * times as long per batch). Spinning is read from one team thread's CPU clock, which advances
 * only while it runs (omp_team_probe_*); that thread is learned in the first region the shim runs,
 * and until then a look at the process's threads (at most every OMP_TEAM_SCAN_NS) tells whether
 * as many threads as the team has are running. Only on the process's main thread (PyTorch's
 * intra-op thread; a region on another thread would make the runtime start a second team), never
 * inside a parallel region, never where the program asked for one thread (OMP_NUM_THREADS=1, as
 * torchrun sets), and not with stage_openmp = off.
 * Contract: thread-safe; loads nothing (a runtime is used only once the program loaded it); never
 * calls CUDA; not for signal handlers. */
#ifndef PINSHIM_OMP_TEAM_H
#define PINSHIM_OMP_TEAM_H

#include <stdbool.h>
#include <stdint.h>

/* Values of the stage_openmp key, in policy/keys.h's order. */
enum { STAGE_OPENMP_SPINNING, STAGE_OPENMP_OFF };

/* The loaded OpenMP runtime ("libgomp", "libiomp" or "libomp"), or NULL while none is. */
const char *omp_team_runtime(void);

/* A look at the team around a copy's setup: begin before it, end after it. */
struct omp_probe {
    int state;        /* omp_team.c's */
    unsigned threads; /* the team's size at begin */
    uint64_t cpu_ns;  /* the watched team thread's CPU clock at begin */
};
void omp_team_probe_begin(struct omp_probe *p);

/* The number of threads (the caller included) of the caller's team if it was spinning over the
 * probe and may be borrowed, else 0. */
unsigned omp_team_probe_end(struct omp_probe *p);

/* Whether the program's OpenMP threads may have been spinning on the cores while this copy's
 * staging threads needed them: a team of two or more threads exists that the copy could not borrow
 * (stage_openmp = off, a thread other than the main one, inside a parallel region). */
bool omp_team_may_compete(const struct omp_probe *p);

/* Copies that borrowed the team (for the summary). */
uint64_t omp_team_copies(void);

/* One parallel region of the caller's team: owner(arg) on the caller, others(arg) on every other
 * thread of the team; returns when all have returned. Only after omp_team_probe_end() returned a
 * team on this thread. A region waits for every thread of the team to start and to end, so a thread
 * the scheduler keeps off its core holds the whole region back: a caller runs one region for as long
 * a piece of work as it can (workers_with_team: a whole staged copy), not one per part of it. */
void omp_team_run(void (*owner)(void *), void (*others)(void *), void *arg);

#endif
