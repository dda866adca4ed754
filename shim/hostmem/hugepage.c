/* hugepage.c: huge-page advice for staged destinations (see hugepage.h). */
#define _GNU_SOURCE
#include "hugepage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "policy.h"

#define HUGEPAGE_BYTES ((uintptr_t)2 << 20)

enum thp_mode { THP_UNKNOWN, THP_MADVISE, THP_OTHER };
static int mode;            /* enum thp_mode, read once */
static bool program_decides;

/* "[madvise]" selected in /sys/kernel/mm/transparent_hugepage/enabled. */
static enum thp_mode read_mode(void)
{
    char buf[128] = "";
    int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return THP_OTHER;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return strstr(buf, "[madvise]") ? THP_MADVISE : THP_OTHER;
}

void hugepage_note_program_advice(void) { __atomic_store_n(&program_decides, true, __ATOMIC_RELAXED); }

void hugepage_advise_write(void *p, size_t n)
{
    if (!pinshim_policy.stage_hugepages || __atomic_load_n(&program_decides, __ATOMIC_RELAXED))
        return;
    int m = __atomic_load_n(&mode, __ATOMIC_RELAXED);
    if (m == THP_UNKNOWN) {
        m = read_mode();
        __atomic_store_n(&mode, m, __ATOMIC_RELAXED);
    }
    uintptr_t lo = ((uintptr_t)p + HUGEPAGE_BYTES - 1) & ~(HUGEPAGE_BYTES - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(HUGEPAGE_BYTES - 1);
    if (m != THP_MADVISE || hi <= lo)
        return;
    int e = errno;
    syscall(SYS_madvise, (void *)lo, hi - lo, MADV_HUGEPAGE); /* refused (shared memory...): no matter */
    errno = e;
}
