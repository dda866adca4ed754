/* spinners.c: an OpenMP runtime in the process whose threads may spin (see spinners.h). */
#define _GNU_SOURCE
#include "spinners.h"

#include <link.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "observe/advice.h"

/* Library names of OpenMP runtimes whose idle threads spin, as prefixes of the file's basename
 * (PyTorch's wheels ship libgomp renamed, e.g. libgomp-a34b3233.so.1). */
static const char *const runtimes[] = {"libgomp", "libiomp", "libomp"};

static int find_runtime(struct dl_phdr_info *info, size_t size, void *found)
{
    (void)size;
    const char *base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    for (size_t i = 0; i < sizeof runtimes / sizeof *runtimes; i++)
        if (strncmp(base, runtimes[i], strlen(runtimes[i])) == 0) {
            *(const char **)found = runtimes[i];
            return 1;
        }
    return 0;
}

void spinners_note_once(void)
{
    static bool looked;
    if (__atomic_load_n(&looked, __ATOMIC_RELAXED) || __atomic_exchange_n(&looked, true, __ATOMIC_RELAXED))
        return;
    const char *policy = getenv("OMP_WAIT_POLICY");
    if (policy && strcasecmp(policy, "passive") == 0)
        return;
    const char *runtime = NULL;
    dl_iterate_phdr(find_runtime, &runtime);
    if (runtime)
        advice_note_openmp(runtime);
}
