/* pinshim.h: the public API of libpinshim.so.
 *
 * A program may call these directly (link with -lpinshim) or, so that it still runs without the
 * shim, look them up at run time:
 *     pinshim_stats_get_fn get = (pinshim_stats_get_fn)dlsym(RTLD_DEFAULT, "pinshim_stats_get");
 *     if (get) { struct pinshim_stats s = {.struct_size = sizeof s}; get(&s); }
 * All functions are thread-safe. None calls the CUDA driver. */
#ifndef PINSHIM_H
#define PINSHIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PINSHIM_VERSION "0.1.0"

enum pinshim_dir { PINSHIM_DIR_H2D, PINSHIM_DIR_D2H, PINSHIM_DIR_D2D, PINSHIM_DIR_H2H, PINSHIM_DIR_PEER,
                   PINSHIM_DIR_COUNT };

struct pinshim_dir_stats {
    uint64_t count;   /* successful copies */
    uint64_t bytes;   /* bytes they moved */
    uint64_t host_ns; /* time spent inside the copy calls */
};

struct pinshim_stats {
    uint32_t struct_size; /* set to sizeof(struct pinshim_stats) before the call */
    uint32_t reserved;
    struct pinshim_dir_stats dir[PINSHIM_DIR_COUNT];
    uint64_t failed_copies; /* copies the driver refused (the error went back to the program) */
    uint64_t sync_calls;    /* stream/context/event synchronizations, queries and records */
};

/* The library's version string, PINSHIM_VERSION of the build. */
const char *pinshim_version(void);

/* Fills *out with the counters so far. Returns 0, or -1 if out is NULL or out->struct_size is
 * smaller than this version's struct. Copies still in flight on other threads may be missing. */
int pinshim_stats_get(struct pinshim_stats *out);

/* Writes the summary so far to fd: a text table (json = 0) or one JSON line (json != 0), in the
 * same form as the summary at exit. Returns 0, or -1 if fd is negative. */
int pinshim_summary_write(int fd, int json);

typedef const char *(*pinshim_version_fn)(void);
typedef int (*pinshim_stats_get_fn)(struct pinshim_stats *out);
typedef int (*pinshim_summary_write_fn)(int fd, int json);

#ifdef __cplusplus
}
#endif

#endif
