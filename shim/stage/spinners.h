/* spinners.h: whether the program's OpenMP threads may be spinning on the cores that staging
 * threads need. After a parallel region, libgomp's threads spin for a while (GOMP_SPINCOUNT) and
 * those of libiomp/libomp for KMP_BLOCKTIME, unless OMP_WAIT_POLICY is passive; a staged H2D of a
 * tensor just computed then shares the cores with them (a fresh 64 MiB PyTorch tensor: 2.5-3.9 ms
 * under the shim on an H200 host, 1.8-2.1 ms with OMP_WAIT_POLICY=passive).
 * Copies on the main thread borrow a spinning team instead (omp_team.h); the others, and all with
 * stage_openmp = off, still compete with it.
 * Contract: spinners_note_once() is called by a staged H2D that could not borrow the team
 * (omp_team_may_compete; never in a signal handler); the first
 * call looks at the loaded libraries and the environment and, when an OpenMP runtime is loaded and
 * OMP_WAIT_POLICY is not passive, hands the runtime's name to the advice (observe/advice.h). Later
 * calls cost one load. Thread-safe. */
#ifndef PINSHIM_SPINNERS_H
#define PINSHIM_SPINNERS_H

void spinners_note_once(void);

#endif
