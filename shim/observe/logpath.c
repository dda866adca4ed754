/* logpath.c: PINSHIM_LOG pattern expansion and safe opening (see logpath.h). */
#define _GNU_SOURCE
#include "logpath.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *logpath_rank(void)
{
    static const char *vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return v;
    }
    return "na";
}

int logpath_expand(const char *pattern, time_t start, char *out, size_t len, char *err, size_t errlen)
{
    size_t used = 0;
    for (const char *p = pattern; *p; p++) {
        char piece[256];
        if (*p != '%') {
            piece[0] = *p;
            piece[1] = '\0';
        } else {
            switch (*++p) {
            case 'p': snprintf(piece, sizeof piece, "%d", (int)getpid()); break;
            case 'h':
                if (gethostname(piece, sizeof piece) != 0)
                    snprintf(piece, sizeof piece, "unknown-host");
                piece[sizeof piece - 1] = '\0';
                break;
            case 'r': snprintf(piece, sizeof piece, "%s", logpath_rank()); break;
            case 't': {
                struct tm tm;
                gmtime_r(&start, &tm);
                strftime(piece, sizeof piece, "%Y%m%d-%H%M%S", &tm);
                break;
            }
            case '%': snprintf(piece, sizeof piece, "%%"); break;
            default:
                snprintf(err, errlen, "'%%%c' in '%s' is not a known escape (expected %%p, %%h, %%r, %%t or %%%%)",
                         *p ? *p : ' ', pattern);
                return -1;
            }
        }
        size_t n = strlen(piece);
        if (used + n >= len) {
            snprintf(err, errlen, "the path made from '%s' is too long", pattern);
            return -1;
        }
        memcpy(out + used, piece, n);
        used += n;
    }
    out[used] = '\0';
    if (used == 0) {
        snprintf(err, errlen, "the log path is empty");
        return -1;
    }
    return 0;
}

static int make_parents(char *path, char *err, size_t errlen)
{
    for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        int r = mkdir(path, 0777);
        int saved = errno;
        *slash = '/';
        if (r != 0 && saved != EEXIST) {
            snprintf(err, errlen, "cannot create folder for '%s': %s", path, strerror(saved));
            return -1;
        }
    }
    return 0;
}

int logpath_open(const char *path, char *err, size_t errlen)
{
    char copy[4096];
    if (snprintf(copy, sizeof copy, "%s", path) >= (int)sizeof copy) {
        snprintf(err, errlen, "path too long");
        return -1;
    }
    if (make_parents(copy, err, errlen) != 0)
        return -1;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open '%s' for appending: %s", path, strerror(errno));
        return -1;
    }
    return fd;
}
