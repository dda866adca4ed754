/* spinners.c: an OpenMP runtime in the process whose threads may spin (see spinners.h). */
#define _GNU_SOURCE
#include "spinners.h"

#include <stdbool.h>
#include <stdlib.h>
#include <strings.h>

#include "observe/advice.h"
#include "omp_team.h"

void spinners_note_once(void)
{
    static bool looked;
    if (__atomic_load_n(&looked, __ATOMIC_RELAXED) || __atomic_exchange_n(&looked, true, __ATOMIC_RELAXED))
        return;
    const char *policy = getenv("OMP_WAIT_POLICY");
    if (policy && strcasecmp(policy, "passive") == 0)
        return;
    const char *runtime = omp_team_runtime();
    if (runtime)
        advice_note_openmp(runtime);
}
