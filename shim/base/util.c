/* util.c: the diagnostic writer and the reentrancy counter declared in common.h. */
#include "common.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

__thread int pinshim_depth __attribute__((tls_model("initial-exec")));
__thread uintptr_t pinshim_caller __attribute__((tls_model("initial-exec")));

void pinshim_warn(const char *fmt, ...)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "==%d== pinshim: ", (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t len = (size_t)n + ((size_t)m < sizeof buf - (size_t)n - 1 ? (size_t)m : sizeof buf - (size_t)n - 2);
    buf[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w;
}
