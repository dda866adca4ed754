/* pylayout.h: where CPython 3.10 to 3.13 (x86-64 / aarch64 Linux, default build: no Py_DEBUG,
 * no Py_TRACE_REFS, not free-threaded) keep what pyframe.c reads: a thread state's innermost frame,
 * a frame's caller, code object and instruction position, a code object's file, name and line
 * table, and the insides of str and bytes objects. One row per minor version, learnt from each
 * version's headers (Include/cpython and Include/internal); tests/python/pylayout_check.c
 * compiles against every installed CPython's headers and checks its row with offsetof.
 * 3.13 also carries most of these offsets in _PyRuntime.debug_offsets (struct pydebug_313):
 * pyframe.c prefers those when the cookie and version match.
 * Contract: data only; included by pyframe.c and by the layout check, nothing else. */
#ifndef PINSHIM_PYLAYOUT_H
#define PINSHIM_PYLAYOUT_H

#include <stdint.h>

/* How a thread state leads to its innermost frame. */
enum py_chain {
    PY_CHAIN_FRAMEOBJECT, /* 3.10: tstate->frame, a PyFrameObject with an int f_lasti (code units) */
    PY_CHAIN_CFRAME,      /* 3.11, 3.12: tstate->cframe->current_frame, a _PyInterpreterFrame */
    PY_CHAIN_DIRECT,      /* 3.13: tstate->current_frame, a _PyInterpreterFrame */
};

/* The format of co_linetable. */
enum py_linetable {
    PY_LINETABLE_310, /* (byte-offset delta, signed line delta) pairs; line delta -128: no line */
    PY_LINETABLE_311, /* the location table: entries of varints, lengths in code units */
};

#define PY_NO_FIELD 0xffff
#define PY_OWNED_BY_CSTACK 3 /* 3.12+: a frame of the C stack (an entry trampoline), not code */

struct py_layout {
    uint8_t minor; /* 3.minor */
    uint8_t chain, linetable;
    uint16_t ts_frame;       /* tstate -> frame (3.10) / cframe (3.11, 3.12) / current_frame (3.13) */
    uint16_t cframe_current; /* _PyCFrame -> current_frame (3.11, 3.12) */
    uint16_t fr_back;        /* frame -> calling frame (f_back / previous) */
    uint16_t fr_code;        /* frame -> code object (f_code / f_executable) */
    uint16_t fr_instr;       /* f_lasti (int, 3.10) / prev_instr / instr_ptr (pointers) */
    uint16_t fr_owner;       /* char owner (3.11+), PY_NO_FIELD before */
    uint16_t co_filename, co_name; /* co_name: co_qualname from 3.11 (Class.method) */
    uint16_t co_linetable, co_firstlineno;
    uint16_t co_code;        /* 3.10: co_code (a bytes object); 3.11+: co_code_adaptive (inline) */
    uint16_t ob_type, ob_size;
    uint16_t str_length, str_state, str_ascii_size; /* PyASCIIObject: length, state, sizeof */
    uint16_t str_utf8_length, str_utf8, str_compact_size; /* PyCompactUnicodeObject */
    uint16_t bytes_sval;     /* PyBytesObject -> ob_sval */
};

static const struct py_layout py_layouts[] = {
    {.minor = 10, .chain = PY_CHAIN_FRAMEOBJECT, .linetable = PY_LINETABLE_310, .ts_frame = 24,
     .cframe_current = PY_NO_FIELD, .fr_back = 24, .fr_code = 32, .fr_instr = 96, .fr_owner = PY_NO_FIELD,
     .co_filename = 104, .co_name = 112, .co_linetable = 120, .co_firstlineno = 40, .co_code = 48,
     .ob_type = 8, .ob_size = 16, .str_length = 16, .str_state = 32, .str_ascii_size = 48,
     .str_utf8_length = 48, .str_utf8 = 56, .str_compact_size = 72, .bytes_sval = 32},
    {.minor = 11, .chain = PY_CHAIN_CFRAME, .linetable = PY_LINETABLE_311, .ts_frame = 56,
     .cframe_current = 8, .fr_back = 48, .fr_code = 32, .fr_instr = 56, .fr_owner = 69,
     .co_filename = 112, .co_name = 128, .co_linetable = 136, .co_firstlineno = 72, .co_code = 184,
     .ob_type = 8, .ob_size = 16, .str_length = 16, .str_state = 32, .str_ascii_size = 48,
     .str_utf8_length = 48, .str_utf8 = 56, .str_compact_size = 72, .bytes_sval = 32},
    {.minor = 12, .chain = PY_CHAIN_CFRAME, .linetable = PY_LINETABLE_311, .ts_frame = 56,
     .cframe_current = 0, .fr_back = 8, .fr_code = 0, .fr_instr = 56, .fr_owner = 70,
     .co_filename = 112, .co_name = 128, .co_linetable = 136, .co_firstlineno = 68, .co_code = 192,
     .ob_type = 8, .ob_size = 16, .str_length = 16, .str_state = 32, .str_ascii_size = 40,
     .str_utf8_length = 40, .str_utf8 = 48, .str_compact_size = 56, .bytes_sval = 32},
    {.minor = 13, .chain = PY_CHAIN_DIRECT, .linetable = PY_LINETABLE_311, .ts_frame = 72,
     .cframe_current = PY_NO_FIELD, .fr_back = 8, .fr_code = 0, .fr_instr = 56, .fr_owner = 70,
     .co_filename = 112, .co_name = 128, .co_linetable = 136, .co_firstlineno = 68, .co_code = 200,
     .ob_type = 8, .ob_size = 16, .str_length = 16, .str_state = 32, .str_ascii_size = 40,
     .str_utf8_length = 40, .str_utf8 = 48, .str_compact_size = 56, .bytes_sval = 32},
};

/* The head of 3.13's _Py_DebugOffsets (the first member of _PyRuntime), as far as pyframe.c reads
 * it: the groups it does not use are opaque arrays of their size. All offsets are uint64_t. */
struct pydebug_313 {
    char cookie[8]; /* "xdebugpy" */
    uint64_t version; /* PY_VERSION_HEX of the running interpreter */
    uint64_t free_threaded;
    uint64_t runtime_state[3];
    uint64_t interpreter_state[13];
    struct { uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk, status; }
        thread_state;
    struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } interpreter_frame;
    struct {
        uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames, localspluskinds,
            co_code_adaptive;
    } code_object;
    struct { uint64_t size, ob_type; } pyobject;
    uint64_t type_object[4], tuple_object[3], list_object[3], dict_object[3], float_object[2], long_object[3];
    struct { uint64_t size, ob_size, ob_sval; } bytes_object;
    struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
};

#endif
