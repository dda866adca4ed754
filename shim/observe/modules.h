/* modules.h: the modules (the executable and shared objects) that call sites lie in, as the log
 * names them for a later symbolizer: basename, full path, GNU build-id, the link-time address
 * their mapping starts at, and the framework the path belongs to (PyTorch, CuPy, JAX, else CUDA C)
 * for the advice's wording.
 * Contract: modules_find() runs when a call site is classified (once per return address, never in
 * a signal handler): the first time it sees a module it reads the build-id note of the loaded
 * image (dl_iterate_phdr) and the path; nothing is read per copy. The readers are lock-free and
 * async-signal-safe; entries are never removed (a site pointer may name its module for the life of
 * the process). modules_record_once/_all and the "announced" flags belong to the log's consumer. */
#ifndef PINSHIM_MODULES_H
#define PINSHIM_MODULES_H

#include <stdbool.h>
#include <stdint.h>

#include "jbuf.h"

#define MODULES_MAX 256

enum framework { FRAMEWORK_CUDA_C, FRAMEWORK_PYTORCH, FRAMEWORK_CUPY, FRAMEWORK_JAX, FRAMEWORK_COUNT };
extern const char *const framework_names[FRAMEWORK_COUNT];

/* The module loaded at fbase (dladdr's dli_fbase) under the name fname (dli_fname): its id, or -1
 * when the table is full. pc is an address inside it (to find its image among the loaded ones). */
int modules_find(uintptr_t fbase, const char *fname, uintptr_t pc);

/* The framework that made copies from module id (FRAMEWORK_CUDA_C for -1). */
enum framework modules_framework(int id);

/* Appends a "module" record line for id if the log has not had one yet, and marks it announced:
 * {"type":"module","name":..,"path":..,"build_id":..|null,"base_vaddr":..,"framework":..}.
 * Consumer of the log only (async-signal-safe). */
void modules_record_once(struct jbuf *jb, int id);

/* modules_record_once for every module known (before the summary record). */
void modules_record_all(struct jbuf *jb);

/* Forked child (one thread alive): its own log names every module again. */
void modules_fork_child(void);

#endif
