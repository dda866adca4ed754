/* pyframe.h: the calling thread's CPython frames, read in place, without the GIL and without
 * calling into the interpreter (CPython 3.10 to 3.13; see pylayout.h).
 * How: at start-up, the interpreter's exported symbols (PyGILState_GetThisThreadState,
 * Py_IsInitialized, PyCode_Type, PyUnicode_Type, PyBytes_Type, PyFrame_Type, the version) are
 * looked up once; per walk, the thread's own thread state (the GIL state's thread-local, which
 * stays set while the thread has released the GIL inside a C call), then its frame chain. Only the
 * calling thread's frames are read: while it is inside this call nothing else pops them.
 * Safety: until one walk has checked the layout against the running interpreter (every object's
 * type, every position inside its code, every string), reads go through process_vm_readv, which
 * fails instead of faulting; a walk that finds the layout wrong turns Python frames off for the
 * process. After that check, reads are plain loads, still bounded and type-checked.
 * Contract: pyframe_init() once, from the constructor (idempotent). Everything else is
 * thread-safe and async-signal-safe: no locks, no allocation, no stdio, no calls into Python
 * beyond PyGILState_GetThisThreadState and Py_IsInitialized (each reads one variable). */
#ifndef PINSHIM_PYFRAME_H
#define PINSHIM_PYFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One frame of Python code. */
struct pyframe {
    uintptr_t code;               /* the code object */
    uintptr_t filename, name;     /* its co_filename and co_name (co_qualname from 3.11), str objects */
    uintptr_t linetable;          /* its co_linetable, a bytes object */
    int firstlineno;
    uint32_t instr;               /* byte offset of the frame's current instruction in its code */
};

void pyframe_init(void);

/* The running CPython's version ("3.12"), or NULL when the process runs none (or one whose frames
 * cannot be read: another version, a layout check that failed). */
const char *pyframe_version(void);

/* Calls fn for each frame of the calling thread, innermost first, until fn returns true. Returns
 * true when fn did; false when the chain ended, the thread has no Python state, or a check failed. */
bool pyframe_walk(bool (*fn)(const struct pyframe *f, void *arg), void *arg);

/* The str object s as UTF-8 into buf (NUL-terminated). With keep_tail, a string too long for buf
 * keeps its end behind "...". Returns the length written, or -1 when s is not a readable str. */
int pyframe_str(uintptr_t s, char *buf, size_t len, bool keep_tail);

/* The source line of f's current instruction, from its line table; -1 when it has none, -2 when
 * the table cannot be read. */
int pyframe_line(const struct pyframe *f);

#endif
