/* guard_stack.h: the stack of an access to guarded pages, and frames named "module+0xoffset", for
 * the guard's reports (guard_fault.c).
 * Contract: guard_stack_prepare() once, before the first report can happen (guard_signal_install()
 * calls it: it loads libgcc's unwinder, which allocates); guard_modules_refresh() outside any
 * handler (at each guarded copy; cheap when no object was loaded since); the stack and name
 * functions are async-signal-safe (so is guard_stack_append). */
#ifndef PINSHIM_GUARD_STACK_H
#define PINSHIM_GUARD_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void guard_stack_prepare(void);

/* The access's stack from a normal context (the I/O hooks; innermost program frame first), or from
 * the handler's ucontext (the faulting instruction first). Return the number of frames. */
int guard_stack_here(uintptr_t *frames, int max);
int guard_stack_signal(const void *uc, uintptr_t *frames, int max);

/* Rebuilds the module table when objects were loaded or unloaded since the last call. */
void guard_modules_refresh(void);

/* Appends " 0xaddr (module+0xoff)" (or " 0xaddr") for addr to buf at *pos. */
void guard_module_name(char *buf, size_t len, size_t *pos, uintptr_t addr);

/* Appends "module+0xoff" (or "0xaddr") for addr to buf at *pos. */
void guard_frame_text(char *buf, size_t len, size_t *pos, uintptr_t addr);

/* The loaded object addr lies in: a small number (the same for every address of one object), or
 * -1 when unknown. main: it is the program's executable. */
int guard_frame_module(uintptr_t addr, bool *main);

/* Appends the frames as lines "<prefix>#N 0xaddr (module+0xoff)\n"; unless full, each run of more
 * than two frames in one library (not the program's executable) after its first is one line
 * "<prefix>   ... N more frames in <module>\n". */
struct jbuf;
void guard_stack_append(struct jbuf *jb, const char *prefix, const uintptr_t *frames, int n, bool full);

#endif
