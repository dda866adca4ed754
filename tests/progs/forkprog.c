/* forkprog.c: copies, then fork()s a child that does CPU work only and exits through exit(), as a
 * DataLoader worker does; the parent copies again after the child ends. Prints the parent's pid. */
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

int main(void)
{
    struct test_driver d;
    test_driver_start(&d, "getproc");
    CUdeviceptr buf;
    char host[4096];
    test_fill(host, sizeof host, 9);
    CHECK(d.mem_alloc(&buf, sizeof host));
    CHECK(d.htod(buf, host, sizeof host));
    pid_t child = fork();
    if (child == 0) {
        printf("child computed %016llx\n", (unsigned long long)test_hash(host, sizeof host));
        exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    CHECK(d.dtoh(host, buf, sizeof host));
    printf("parent %d child exit %d\n", (int)getpid(), WEXITSTATUS(status));
    return 0;
}
