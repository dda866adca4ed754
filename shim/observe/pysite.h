/* pysite.h: the Python line a copy was made from: the calling thread's innermost frame whose file
 * is the program's own (not under one of the python_skip path fragments: the standard library,
 * site-packages, torch, ...), as file, line and function; the innermost frame of all when every
 * frame is a library's. Read with pyframe.h (no GIL, no calls into Python).
 * Contract: pysite_init() once from the constructor (after the policy; idempotent).
 * pysite_capture() is thread-safe and lock-free: a walk of the thread's frames with one table probe
 * per frame (a code object's library-or-program verdict and a (code, instruction) pair's site are
 * each worked out once and kept); a site pointer stays valid for the process's life.
 * pysite_append_here() and pysite_append_stack() are async-signal-safe (the guard's fault
 * handler): they read the frames again and keep nothing. */
#ifndef PINSHIM_PYSITE_H
#define PINSHIM_PYSITE_H

#include <stdbool.h>
#include <stddef.h>

#include "jbuf.h"

struct pysite;

void pysite_init(void);

/* The running CPython's version ("3.11") when Python sites are on and readable, else NULL. */
const char *pysite_python(void);

/* The calling thread's Python site, or NULL (no Python, not a Python thread, python_sites off, or
 * the tables full). */
const struct pysite *pysite_capture(void);

/* Appends "py_site":"<file>:<line>","py_func":"<function>" (async-signal-safe). */
void pysite_json_fields(struct jbuf *jb, const struct pysite *p);

/* Appends "<file>:<line> in <function>" (async-signal-safe). */
void pysite_append_text(struct jbuf *jb, const struct pysite *p);

/* Appends the calling thread's site as "<file>:<line> in <function>", read now; false (nothing
 * appended) when it has none. Async-signal-safe. */
bool pysite_append_here(struct jbuf *jb);

/* Appends the calling thread's Python stack, innermost first, one line per frame:
 * prefix "<file>:<line> in <function>\n"; library frames (python_skip) are counted in one line
 * unless full. At most max frames. Returns the number of frames read. Async-signal-safe. */
int pysite_append_stack(struct jbuf *jb, const char *prefix, int max, bool full);

/* Forked child (one thread alive): entries other threads were filling are forgotten. */
void pysite_fork_child(void);

#endif
