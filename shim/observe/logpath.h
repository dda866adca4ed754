/* logpath.h: turning a PINSHIM_LOG pattern into a path and an open file.
 * Pattern escapes: %p pid, %h host name, %r rank (first of RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID,
 * PMI_RANK; "na" if none), %t the process start time (YYYYmmdd-HHMMSS, UTC), %% a percent sign.
 * Contract: not async-signal-safe; errors are returned as a message, nothing is printed. */
#ifndef PINSHIM_LOGPATH_H
#define PINSHIM_LOGPATH_H

#include <stddef.h>
#include <time.h>

/* The rank %r expands to (the environment's, or "na"). */
const char *logpath_rank(void);

/* Expands pattern into out. Returns 0, or -1 with a reason in err. */
int logpath_expand(const char *pattern, time_t start, char *out, size_t len, char *err, size_t errlen);

/* Creates missing parent folders, then opens path for appending (O_CREAT with mode 0666 under the
 * umask, O_NOFOLLOW so a planted symlink is refused, O_CLOEXEC). Returns an fd, or -1 with err set. */
int logpath_open(const char *path, char *err, size_t errlen);

#endif
