/* pylayout_check.c: checks the shim's table of CPython layouts (shim/observe/pylayout.h) against
 * the headers of one CPython, with offsetof. Built by tests/bats/pysite.bats once per installed
 * Python (-I its include/pythonX.Y and internal/). Prints "layout 3.X: ok" and exits 0, or names
 * each field that differs and exits 1. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x030d0000
#include "internal/pycore_runtime.h"
#endif
#include <stddef.h>
#include <stdio.h>

#include "pylayout.h"

static int bad;

static void check(const char *what, unsigned table, size_t real)
{
    if (table != real) {
        printf("layout 3.%d: %s is %zu, the table says %u\n", PY_MINOR_VERSION, what, real, table);
        bad = 1;
    }
}

#define CHECK(field, real) check(#field, L->field, (size_t)(real))
#define CHECK_DEBUG(field) \
    check("debug." #field, offsetof(struct pydebug_313, field), offsetof(_Py_DebugOffsets, field))

int main(void)
{
    const struct py_layout *L = NULL;
    for (size_t i = 0; i < sizeof py_layouts / sizeof py_layouts[0]; i++)
        if (py_layouts[i].minor == PY_MINOR_VERSION)
            L = &py_layouts[i];
    if (PY_MAJOR_VERSION != 3 || !L) {
        printf("layout %d.%d: not in the table\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
        return 1;
    }
#if PY_VERSION_HEX < 0x030b0000
    CHECK(chain, PY_CHAIN_FRAMEOBJECT);
    CHECK(linetable, PY_LINETABLE_310);
    CHECK(ts_frame, offsetof(PyThreadState, frame));
    CHECK(fr_back, offsetof(PyFrameObject, f_back));
    CHECK(fr_code, offsetof(PyFrameObject, f_code));
    CHECK(fr_instr, offsetof(PyFrameObject, f_lasti));
    CHECK(co_name, offsetof(PyCodeObject, co_name));
    CHECK(co_code, offsetof(PyCodeObject, co_code));
#else
    CHECK(linetable, PY_LINETABLE_311);
    CHECK(fr_back, offsetof(_PyInterpreterFrame, previous));
    CHECK(fr_owner, offsetof(_PyInterpreterFrame, owner));
    CHECK(co_name, offsetof(PyCodeObject, co_qualname));
    CHECK(co_code, offsetof(PyCodeObject, co_code_adaptive));
#if PY_VERSION_HEX < 0x030d0000
    CHECK(chain, PY_CHAIN_CFRAME);
    CHECK(ts_frame, offsetof(PyThreadState, cframe));
    CHECK(cframe_current, offsetof(_PyCFrame, current_frame));
    CHECK(fr_code, offsetof(_PyInterpreterFrame, f_code));
    CHECK(fr_instr, offsetof(_PyInterpreterFrame, prev_instr));
#else
    CHECK(chain, PY_CHAIN_DIRECT);
    CHECK(ts_frame, offsetof(PyThreadState, current_frame));
    CHECK(fr_code, offsetof(_PyInterpreterFrame, f_executable));
    CHECK(fr_instr, offsetof(_PyInterpreterFrame, instr_ptr));
    /* the shim's copy of the debug offsets' head has the real one's layout */
    CHECK_DEBUG(thread_state);
    CHECK_DEBUG(interpreter_frame);
    CHECK_DEBUG(code_object);
    CHECK_DEBUG(pyobject);
    CHECK_DEBUG(bytes_object);
    CHECK_DEBUG(unicode_object);
    check("debug.size", sizeof(struct pydebug_313), offsetof(_Py_DebugOffsets, gc));
#endif
#endif
    CHECK(co_filename, offsetof(PyCodeObject, co_filename));
    CHECK(co_linetable, offsetof(PyCodeObject, co_linetable));
    CHECK(co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
    CHECK(ob_type, offsetof(PyObject, ob_type));
    CHECK(ob_size, offsetof(PyVarObject, ob_size));
    CHECK(str_length, offsetof(PyASCIIObject, length));
    CHECK(str_state, offsetof(PyASCIIObject, state));
    CHECK(str_ascii_size, sizeof(PyASCIIObject));
    CHECK(str_utf8_length, offsetof(PyCompactUnicodeObject, utf8_length));
    CHECK(str_utf8, offsetof(PyCompactUnicodeObject, utf8));
    CHECK(str_compact_size, sizeof(PyCompactUnicodeObject));
    CHECK(bytes_sval, offsetof(PyBytesObject, ob_sval));
    if (!bad)
        printf("layout 3.%d: ok\n", PY_MINOR_VERSION);
    return bad;
}
