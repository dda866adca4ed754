/* guard_signal.h: the fault side of the guard, below it: keeping a SIGSEGV/SIGBUS handler first in
 * line (sigaction and signal are interposed, the program's own handlers recorded and called the way
 * the kernel would have), and the access's stack and module names for the reports.
 * The handler hands every access fault (SEGV_ACCERR) to one function, given at installation
 * (guard.c gives guard_fault); that is the only way this file reaches the guard.
 * Contract: guard_signal_init() from the constructor (resolves the real sigaction/signal);
 * guard_signal_install() once, at the first guarded copy; the handler and the stack and name
 * functions are async-signal-safe. */
#ifndef PINSHIM_GUARD_SIGNAL_H
#define PINSHIM_GUARD_SIGNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum guard_access { GUARD_READ, GUARD_WRITE };

/* Called for an access fault at addr: 1 when it was the guard's (handled: the access is retried),
 * 0 when not (it goes to the program's action). uc is the handler's ucontext. */
typedef int (*guard_fault_fn)(uintptr_t addr, enum guard_access access, const void *uc);

void guard_signal_init(void);

/* Installs the handler (once; later calls return true). False when sigaction cannot be had. */
bool guard_signal_install(guard_fault_fn on_fault);

/* The access's stack from a normal context (the I/O hooks; innermost program frame first), or from
 * the handler's ucontext; the module table used to name frames in reports. */
int guard_stack_here(uintptr_t *frames, int max);
int guard_stack_signal(const void *uc, uintptr_t *frames, int max);
void guard_modules_refresh(void);
/* Appends " module+0xoff" (or " 0xaddr") for addr to buf at *pos. */
void guard_module_name(char *buf, size_t len, size_t *pos, uintptr_t addr);

#endif
