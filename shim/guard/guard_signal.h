/* guard_signal.h: the fault side of the guard, below it: keeping a SIGSEGV/SIGBUS handler first in
 * line (sigaction and signal are interposed, the program's own handlers recorded and called the way
 * the kernel would have).
 * The handler hands every access fault (SEGV_ACCERR) to one function, given at installation
 * (guard.c gives guard_fault); that is the only way this file reaches the guard.
 * Contract: guard_signal_init() from the constructor (resolves the real sigaction/signal);
 * guard_signal_install() once, at the first guarded copy (it also prepares guard_stack.h's
 * unwinder); the handler is async-signal-safe. */
#ifndef PINSHIM_GUARD_SIGNAL_H
#define PINSHIM_GUARD_SIGNAL_H

#include <stdbool.h>
#include <stdint.h>

enum guard_access { GUARD_READ, GUARD_WRITE };

/* Called for an access fault at addr: 1 when it was the guard's (handled: the access is retried),
 * 0 when not (it goes to the program's action). uc is the handler's ucontext. */
typedef int (*guard_fault_fn)(uintptr_t addr, enum guard_access access, const void *uc);

void guard_signal_init(void);

/* Installs the handler (once; later calls return true). False when sigaction cannot be had. */
bool guard_signal_install(guard_fault_fn guard);

#endif
