/* pyframe.c: reading the calling thread's CPython frames in place (see pyframe.h): the
 * interpreter's symbols and layout found at start-up (pylayout.h's row for its version, or 3.13's
 * own debug offsets), guarded reads, the frame chain, str objects and the two line-table formats. */
#define _GNU_SOURCE
#include "pyframe.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/real.h"
#include "pylayout.h"

#define PY_FRAMES_MAX 1024          /* deeper chains are cut (their outer frames are not read) */
#define PY_ADDR_MIN 4096u           /* no object lives in the first page */
#define PY_ADDR_END (1ull << 47)    /* end of user space (48-bit virtual addresses) */
#define PY_STR_MAX (1 << 20)        /* longer names are not believed */
#define PY_TABLE_MAX (1 << 24)      /* longer line tables are not believed */
#define PY_CODE_UNIT 2              /* bytes per instruction unit (_Py_CODEUNIT) */
#define PY_LINE_NONE_310 (-128)     /* 3.10 line delta meaning "no line" */

enum { CHECK_NONE, CHECK_PENDING, CHECK_PASSED, CHECK_FAILED };

static struct py_layout L;  /* the layout in effect */
static int check_state;     /* CHECK_*: NONE until init found an interpreter of a known layout */
static char version_text[8];
static void *(*get_tstate)(void);
static int (*is_initialized)(void);
static uintptr_t type_code, type_str, type_bytes, type_frame;

/* --- guarded reads --- */

static bool rd(void *dst, uintptr_t src, size_t n)
{
    if (src < PY_ADDR_MIN || src >= PY_ADDR_END || n > PY_ADDR_END - src)
        return false;
    if (__atomic_load_n(&check_state, __ATOMIC_ACQUIRE) == CHECK_PASSED) {
        memcpy(dst, (const void *)src, n);
        return true;
    }
    /* Before the layout is known to be right: a read that cannot fault. */
    struct iovec local = {dst, n}, remote = {(void *)src, n};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n;
}

static bool rd_ptr(uintptr_t src, uintptr_t *out) { return rd(out, src, sizeof *out); }

static bool rd_i64(uintptr_t src, int64_t *out) { return rd(out, src, sizeof *out); }

static bool rd_i32(uintptr_t src, int32_t *out) { return rd(out, src, sizeof *out); }

static bool has_type(uintptr_t obj, uintptr_t type)
{
    uintptr_t t;
    return obj && rd_ptr(obj + L.ob_type, &t) && t == type;
}

/* --- start-up --- */

static void *sym(const char *name) { return pinshim_real_dlsym(RTLD_DEFAULT, name); }

/* PY_VERSION_HEX of the running interpreter, or 0. */
static unsigned long running_version(void)
{
    const unsigned long *hex = sym("Py_Version"); /* 3.11+ */
    if (hex)
        return *hex;
    const char *(*get_version)(void) = (const char *(*)(void))sym("Py_GetVersion"); /* formats constants */
    unsigned major, minor;
    if (get_version && sscanf(get_version(), "%u.%u", &major, &minor) == 2)
        return ((unsigned long)major << 24) | ((unsigned long)minor << 16);
    return 0;
}

static bool fits(uint64_t off) { return off < 4096; }

/* 3.13: the interpreter's own offsets, where its _PyRuntime carries them. */
static bool use_debug_offsets(void)
{
    const struct pydebug_313 *d = sym("_PyRuntime");
    if (!d || memcmp(d->cookie, "xdebugpy", 8) != 0 || (d->version >> 16) != 0x030d)
        return false;
    if (d->free_threaded)
        return false;
    uint64_t ascii = d->unicode_object.asciiobject_size;
    uint64_t all[] = {d->thread_state.current_frame, d->interpreter_frame.previous, d->interpreter_frame.executable,
                      d->interpreter_frame.instr_ptr, d->interpreter_frame.owner, d->code_object.filename,
                      d->code_object.qualname, d->code_object.linetable, d->code_object.firstlineno,
                      d->code_object.co_code_adaptive, d->pyobject.ob_type, d->bytes_object.ob_size,
                      d->bytes_object.ob_sval, d->unicode_object.state, d->unicode_object.length, ascii};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!fits(all[i]))
            return false;
    L.ts_frame = (uint16_t)d->thread_state.current_frame;
    L.fr_back = (uint16_t)d->interpreter_frame.previous;
    L.fr_code = (uint16_t)d->interpreter_frame.executable;
    L.fr_instr = (uint16_t)d->interpreter_frame.instr_ptr;
    L.fr_owner = (uint16_t)d->interpreter_frame.owner;
    L.co_filename = (uint16_t)d->code_object.filename;
    L.co_name = (uint16_t)d->code_object.qualname;
    L.co_linetable = (uint16_t)d->code_object.linetable;
    L.co_firstlineno = (uint16_t)d->code_object.firstlineno;
    L.co_code = (uint16_t)d->code_object.co_code_adaptive;
    L.ob_type = (uint16_t)d->pyobject.ob_type;
    L.ob_size = (uint16_t)d->bytes_object.ob_size;
    L.bytes_sval = (uint16_t)d->bytes_object.ob_sval;
    L.str_state = (uint16_t)d->unicode_object.state;
    L.str_length = (uint16_t)d->unicode_object.length;
    /* PyCompactUnicodeObject follows PyASCIIObject: utf8_length, utf8 */
    L.str_ascii_size = (uint16_t)ascii;
    L.str_utf8_length = (uint16_t)ascii;
    L.str_utf8 = (uint16_t)(ascii + sizeof(uintptr_t));
    L.str_compact_size = (uint16_t)(ascii + 2 * sizeof(uintptr_t));
    return true;
}

void pyframe_init(void)
{
    static bool done;
    if (done || real_dlsym_ready() != 0)
        return;
    done = true;
    get_tstate = (void *(*)(void))sym("PyGILState_GetThisThreadState");
    is_initialized = (int (*)(void))sym("Py_IsInitialized");
    type_code = (uintptr_t)sym("PyCode_Type");
    type_str = (uintptr_t)sym("PyUnicode_Type");
    type_bytes = (uintptr_t)sym("PyBytes_Type");
    type_frame = (uintptr_t)sym("PyFrame_Type");
    if (!get_tstate || !is_initialized || !type_code || !type_str || !type_bytes || !type_frame)
        return; /* no CPython in this process (or not one that exports its API) */
    unsigned long hex = running_version();
    if ((hex >> 24) != 3)
        return;
    unsigned minor = (unsigned)((hex >> 16) & 0xff);
    const struct py_layout *row = NULL;
    for (size_t i = 0; i < sizeof py_layouts / sizeof py_layouts[0]; i++)
        if (py_layouts[i].minor == minor)
            row = &py_layouts[i];
    if (!row)
        return;
    L = *row;
    if (minor == 13 && sym("_PyRuntime") && !use_debug_offsets()) {
        const struct pydebug_313 *d = sym("_PyRuntime");
        if (memcmp(d->cookie, "xdebugpy", 8) == 0)
            return; /* a 3.13 whose own offsets we cannot use (free-threaded): no frames */
    }
    snprintf(version_text, sizeof version_text, "3.%u", minor);
    __atomic_store_n(&check_state, CHECK_PENDING, __ATOMIC_RELEASE);
}

const char *pyframe_version(void)
{
    int st = __atomic_load_n(&check_state, __ATOMIC_ACQUIRE);
    return st == CHECK_PENDING || st == CHECK_PASSED ? version_text : NULL;
}

/* --- the frame chain --- */

enum { FRAME_BAD = -1, FRAME_SKIP = 0, FRAME_CODE = 1 };

/* Reads the frame at fr into *f and its caller into *next. */
static int read_frame(uintptr_t fr, struct pyframe *f, uintptr_t *next)
{
    if (L.chain == PY_CHAIN_FRAMEOBJECT && !has_type(fr, type_frame))
        return FRAME_BAD;
    if (!rd_ptr(fr + L.fr_back, next))
        return FRAME_BAD;
    if (L.fr_owner != PY_NO_FIELD && L.minor >= 12) {
        char owner;
        if (!rd(&owner, fr + L.fr_owner, 1))
            return FRAME_BAD;
        if (owner == PY_OWNED_BY_CSTACK)
            return FRAME_SKIP;
    }
    uintptr_t code;
    if (!rd_ptr(fr + L.fr_code, &code))
        return FRAME_BAD;
    if (!has_type(code, type_code))
        return L.chain == PY_CHAIN_DIRECT ? FRAME_SKIP : FRAME_BAD; /* 3.13: f_executable may be None */
    int64_t units; /* instructions in the code */
    if (L.chain == PY_CHAIN_FRAMEOBJECT) {
        int32_t lasti;
        uintptr_t bytecode;
        if (!rd_i32(fr + L.fr_instr, &lasti) || !rd_ptr(code + L.co_code, &bytecode) ||
            !has_type(bytecode, type_bytes) || !rd_i64(bytecode + L.ob_size, &units))
            return FRAME_BAD;
        units /= PY_CODE_UNIT;
        if (lasti < 0)
            return FRAME_SKIP; /* not started */
        if (lasti >= units)
            return FRAME_BAD;
        f->instr = (uint32_t)lasti * PY_CODE_UNIT;
    } else {
        uintptr_t ip, start = code + L.co_code;
        if (!rd_ptr(fr + L.fr_instr, &ip) || !rd_i64(code + L.ob_size, &units))
            return FRAME_BAD;
        if (ip < start)
            return FRAME_SKIP; /* 3.11, 3.12: before its first instruction */
        if (units <= 0 || (ip - start) / PY_CODE_UNIT >= (uint64_t)units || (ip - start) % PY_CODE_UNIT)
            return FRAME_BAD;
        f->instr = (uint32_t)(ip - start);
    }
    int32_t first;
    f->code = code;
    if (!rd_ptr(code + L.co_filename, &f->filename) || !rd_ptr(code + L.co_name, &f->name) ||
        !rd_ptr(code + L.co_linetable, &f->linetable) || !rd_i32(code + L.co_firstlineno, &first))
        return FRAME_BAD;
    f->firstlineno = first;
    return FRAME_CODE;
}

/* The first walk's extra checks: every object the site will read is of its type. */
static bool frame_consistent(const struct pyframe *f)
{
    char probe[8];
    return has_type(f->filename, type_str) && has_type(f->name, type_str) && has_type(f->linetable, type_bytes) &&
           pyframe_str(f->filename, probe, sizeof probe, false) >= 0 && pyframe_line(f) >= -1;
}

static bool check_failed(int st)
{
    if (st == CHECK_PENDING)
        __atomic_store_n(&check_state, CHECK_FAILED, __ATOMIC_RELEASE);
    return false;
}

bool pyframe_walk(bool (*fn)(const struct pyframe *f, void *arg), void *arg)
{
    int st = __atomic_load_n(&check_state, __ATOMIC_ACQUIRE);
    if (st != CHECK_PENDING && st != CHECK_PASSED)
        return false;
    if (!is_initialized())
        return false; /* before the runtime's thread-local exists, or while it finalizes */
    uintptr_t ts = (uintptr_t)get_tstate(), fr;
    if (!ts)
        return false; /* not a Python thread */
    if (!rd_ptr(ts + L.ts_frame, &fr))
        return check_failed(st);
    if (L.chain == PY_CHAIN_CFRAME && fr && !rd_ptr(fr + L.cframe_current, &fr))
        return check_failed(st);
    int codes = 0;
    for (int depth = 0; fr && depth < PY_FRAMES_MAX; depth++) {
        struct pyframe f;
        uintptr_t next;
        int r = read_frame(fr, &f, &next);
        if (r == FRAME_BAD || (r == FRAME_CODE && st == CHECK_PENDING && !frame_consistent(&f)))
            return check_failed(st);
        if (r == FRAME_CODE) {
            codes++;
            if (st == CHECK_PENDING) {
                st = CHECK_PASSED; /* one whole frame read and checked through reads that cannot fault */
                __atomic_store_n(&check_state, CHECK_PASSED, __ATOMIC_RELEASE);
            }
            if (fn(&f, arg))
                return true;
        }
        fr = next;
    }
    return false;
}

/* --- str objects --- */

static size_t put_utf8(char *out, uint32_t c)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (c >> 18));
    out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* Copies n bytes of UTF-8 at data into buf; a string too long keeps its start, or with keep_tail
 * its end behind "..." (cut at a character boundary). */
static int copy_utf8(uintptr_t data, int64_t n, char *buf, size_t len, bool keep_tail)
{
    size_t room = len - 1;
    if ((uint64_t)n <= room) {
        if (!rd(buf, data, (size_t)n))
            return -1;
        buf[n] = '\0';
        return (int)n;
    }
    if (!keep_tail || room < 8) {
        if (!rd(buf, data, room))
            return -1;
        size_t end = room;
        while (end > 0 && ((unsigned char)buf[end] & 0xc0) == 0x80) /* no cut character at the end */
            end--;
        buf[end] = '\0';
        return (int)end;
    }
    memcpy(buf, "...", 3);
    size_t tail = room - 3;
    if (!rd(buf + 3, data + (uintptr_t)n - tail, tail))
        return -1;
    size_t skip = 0;
    while (skip < tail && ((unsigned char)buf[3 + skip] & 0xc0) == 0x80)
        skip++;
    memmove(buf + 3, buf + 3 + skip, tail - skip);
    buf[room - skip] = '\0';
    return (int)(room - skip);
}

int pyframe_str(uintptr_t s, char *buf, size_t len, bool keep_tail)
{
    uint32_t state;
    int64_t length;
    if (!len || !has_type(s, type_str) || !rd(&state, s + L.str_state, sizeof state) ||
        !rd_i64(s + L.str_length, &length) || length < 0 || length > PY_STR_MAX)
        return -1;
    unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (!compact)
        return -1; /* a legacy string: never a code object's name */
    if (ascii)
        return copy_utf8(s + L.str_ascii_size, length, buf, len, keep_tail);
    uintptr_t utf8;
    int64_t utf8_len;
    if (!rd_ptr(s + L.str_utf8, &utf8))
        return -1;
    if (utf8)
        return rd_i64(s + L.str_utf8_length, &utf8_len) && utf8_len >= 0 && utf8_len <= 4 * (int64_t)PY_STR_MAX
                   ? copy_utf8(utf8, utf8_len, buf, len, keep_tail)
                   : -1;
    if (kind != 1 && kind != 2 && kind != 4)
        return -1;
    /* Encode the characters (latin-1, UCS-2 or UCS-4) ourselves, from the start. */
    uintptr_t data = s + L.str_compact_size;
    size_t out = 0;
    for (int64_t i = 0; i < length; i++) {
        uint32_t c = 0;
        if (!rd(&c, data + (uintptr_t)i * kind, kind))
            return -1;
        char enc[4];
        size_t n = put_utf8(enc, c > 0x10ffff ? 0xfffd : c);
        if (out + n > len - 1)
            break;
        memcpy(buf + out, enc, n);
        out += n;
    }
    buf[out] = '\0';
    return (int)out;
}

/* --- line tables --- */

struct byte_reader {
    uintptr_t p, end;
    unsigned char buf[128];
    size_t pos, n;
    bool failed;
};

static int next_byte(struct byte_reader *r)
{
    if (r->pos == r->n) {
        if (r->p >= r->end)
            return -1;
        size_t n = r->end - r->p < sizeof r->buf ? (size_t)(r->end - r->p) : sizeof r->buf;
        if (!rd(r->buf, r->p, n)) {
            r->failed = true;
            return -1;
        }
        r->p += n;
        r->n = n;
        r->pos = 0;
    }
    return r->buf[r->pos++];
}

/* 3.10: (byte-offset delta, line delta) pairs from co_firstlineno. */
static int line_310(struct byte_reader *r, int line, uint32_t target)
{
    uint32_t end = 0;
    for (;;) {
        int sdelta = next_byte(r), ldelta = next_byte(r);
        if (sdelta < 0 || ldelta < 0)
            return -1;
        int cur = -1;
        if ((signed char)ldelta != PY_LINE_NONE_310) {
            line += (signed char)ldelta;
            cur = line;
        }
        end += (uint32_t)sdelta;
        if (target < end)
            return cur;
    }
}

/* A location table varint: 6 bits a byte, bit 6 set when another byte follows. */
static int64_t varint(struct byte_reader *r)
{
    int b = next_byte(r);
    if (b < 0)
        return -1;
    int64_t v = b & 63;
    for (int shift = 6; b & 64; shift += 6) {
        if (shift > 30 || (b = next_byte(r)) < 0)
            return -1;
        v |= (int64_t)(b & 63) << shift;
    }
    return v;
}

/* 3.11+: entries that start with a byte with bit 7 set: code (4 bits), length - 1 (3 bits, in code
 * units); code 15 no location, 14 long form and 13 no columns (a signed varint line delta first),
 * 10-12 one line (delta code - 10), 0-9 short form (same line). */
static int line_311(struct byte_reader *r, int line, uint32_t target_units)
{
    uint32_t end = 0;
    int b = next_byte(r);
    for (;;) {
        if (b < 0 || !(b & 128))
            return -1;
        int code = (b >> 3) & 15, cur = line;
        if (code == 15) {
            cur = -1;
        } else if (code == 14 || code == 13) {
            int64_t v = varint(r);
            if (v < 0)
                return -1;
            line += (int)((v & 1) ? -(v >> 1) : (v >> 1));
            cur = line;
        } else if (code >= 10) {
            line += code - 10;
            cur = line;
        }
        end += (uint32_t)(b & 7) + 1;
        if (target_units < end)
            return cur;
        do /* the rest of this entry: bytes without bit 7 */
            b = next_byte(r);
        while (b >= 0 && !(b & 128));
    }
}

int pyframe_line(const struct pyframe *f)
{
    int64_t size;
    if (!has_type(f->linetable, type_bytes) || !rd_i64(f->linetable + L.ob_size, &size) || size < 0 ||
        size > PY_TABLE_MAX)
        return -2;
    struct byte_reader r = {.p = f->linetable + L.bytes_sval, .end = f->linetable + L.bytes_sval + (uintptr_t)size};
    int line = L.linetable == PY_LINETABLE_310 ? line_310(&r, f->firstlineno, f->instr)
                                                : line_311(&r, f->firstlineno, f->instr / PY_CODE_UNIT);
    return r.failed ? -2 : line;
}
