/* routes.c: the copy suite with the driver found at run time, by the route named in argv[1]
 * (dlsym, dlsym_ptds, getproc, getproc_ptds, getproc_v1); see testutil.h. */
#include "copy_suite.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: routes dlsym|dlsym_ptds|getproc|getproc_ptds|getproc_v1\n");
        return 2;
    }
    struct test_driver d;
    test_driver_load(&d, argv[1]);
    return run_copy_suite(&d);
}
