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

#include "alloc_table.h"
#include "policy.h"

enum thp_mode { THP_UNKNOWN, THP_MADVISE, THP_ALWAYS, THP_NEVER };
static int mode;            /* enum thp_mode, read once */
static bool program_decides;
static uint64_t advised_copies, advised_bytes, program_copies; /* atomics */

/* The selected word in /sys/kernel/mm/transparent_hugepage/enabled ("[madvise]"...). */
static enum thp_mode read_mode(void)
{
    char buf[128] = "";
    int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return THP_NEVER;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return strstr(buf, "[madvise]") ? THP_MADVISE : strstr(buf, "[always]") ? THP_ALWAYS : THP_NEVER;
}

static enum thp_mode thp_mode(void)
{
    int m = __atomic_load_n(&mode, __ATOMIC_RELAXED);
    if (m == THP_UNKNOWN) {
        m = read_mode();
        __atomic_store_n(&mode, m, __ATOMIC_RELAXED);
    }
    return (enum thp_mode)m;
}

static void set_huge_advised(struct alloc_rec *r, void *huge) { r->huge_advised = *(bool *)huge; }

void hugepage_note_program_advice(uintptr_t lo, uintptr_t hi, bool huge)
{
    __atomic_store_n(&program_decides, true, __ATOMIC_RELAXED);
    /* a thread holding the table lock (the shim's own work, a driver call in it) would deadlock */
    if (alloc_table_held())
        return;
    alloc_table_lock();
    alloc_table_each_overlapping(lo, hi, set_huge_advised, &huge);
    alloc_table_unlock();
}

/* The tracked allocation holding p: its bytes [base, end) and whether the program advised huge
 * pages for it; false when none holds it. */
static bool allocation_of(uintptr_t p, uintptr_t *base, uintptr_t *end, bool *huge_advised)
{
    alloc_table_lock();
    struct alloc_rec *r = alloc_table_containing(p);
    if (r)
        *base = r->base, *end = r->base + r->size, *huge_advised = r->huge_advised;
    alloc_table_unlock();
    return r != NULL;
}

bool hugepage_advise_write(void *p, size_t n)
{
    bool program = __atomic_load_n(&program_decides, __ATOMIC_RELAXED);
    if (!program && !pinshim_policy.stage_hugepages)
        return false;
    enum thp_mode m = thp_mode();
    uintptr_t base, end;
    bool huge_advised = false;
    if (m == THP_NEVER || !allocation_of((uintptr_t)p, &base, &end, &huge_advised))
        return false;
    if (program) { /* the program's advice decides; the shim gives none */
        if (huge_advised)
            __atomic_fetch_add(&program_copies, 1, __ATOMIC_RELAXED);
        return huge_advised;
    }
    if (m != THP_MADVISE)
        return false;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = base & ~(page - 1), hi = (end + page - 1) & ~(page - 1);
    /* the 2 MiB blocks the kernel could back with huge pages: the copy must write all of the
     * allocation's bytes in them (a malloc header before base is not the program's) */
    uintptr_t blocks_lo = (lo + HUGEPAGE_BYTES - 1) & ~(HUGEPAGE_BYTES - 1), blocks_hi = hi & ~(HUGEPAGE_BYTES - 1);
    uintptr_t must_lo = blocks_lo > base ? blocks_lo : base, must_hi = blocks_hi < end ? blocks_hi : end;
    if (blocks_hi <= blocks_lo || (uintptr_t)p > must_lo || (uintptr_t)p + n < must_hi)
        return false;
    int e = errno;
    long r = syscall(SYS_madvise, (void *)lo, hi - lo, MADV_HUGEPAGE); /* refused (shared memory...): no matter */
    errno = e;
    if (r == 0) {
        __atomic_fetch_add(&advised_copies, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&advised_bytes, hi - lo, __ATOMIC_RELAXED);
    }
    return r == 0;
}

void hugepage_get_stats(struct hugepage_stats *out)
{
    out->copies = __atomic_load_n(&advised_copies, __ATOMIC_RELAXED);
    out->bytes = __atomic_load_n(&advised_bytes, __ATOMIC_RELAXED);
    out->program_decides = __atomic_load_n(&program_decides, __ATOMIC_RELAXED);
    out->program_copies = __atomic_load_n(&program_copies, __ATOMIC_RELAXED);
}
