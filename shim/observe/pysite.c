/* pysite.c: a copy's Python site (see pysite.h): the walk to the innermost program frame, the two
 * caches that make it cheap (a direct-mapped verdict per code object; an open-addressing table
 * from (code object, instruction) to an interned site), the interned sites themselves (one per
 * distinct file, line and function), and the uncached signal-time readers for the guard. */
#define _GNU_SOURCE
#include "pysite.h"

#include <stdint.h>
#include <string.h>

#include "base/common.h"
#include "policy.h"
#include "pyframe.h"

#define SKIP_MAX 32             /* python_skip fragments used */
#define SKIP_LEN 64             /* longest fragment kept */
#define VERDICT_SLOTS 4096u     /* code objects whose verdict is kept (direct-mapped, power of 2) */
#define MEMO_SLOTS 4096u        /* (code, instruction) pairs kept (power of 2) */
#define SITE_SLOTS 2048u        /* distinct Python sites (power of 2) */
#define FILE_MAX 192            /* a longer file name keeps its end */
#define FUNC_MAX 96
#define NAME_READ 512           /* file name read to match the fragments */
#define FILL_SPIN_MAX 100000    /* waits for another thread filling the same entry */

enum { STATE_FILLING = 0, STATE_READY, STATE_DEAD }; /* FILLING: a zeroed slot just claimed */

struct pysite {
    uint64_t hash; /* the key: of file, line and function (never 0); 0 = free slot */
    int state;
    int line;
    char file[FILE_MAX];
    char func[FUNC_MAX];
};

struct memo {
    uintptr_t code; /* the key, with instr and filename; 0 = free slot */
    uintptr_t filename;
    uint32_t instr;
    int state;
    const struct pysite *site;
};

static struct pysite sites[SITE_SLOTS];
static struct memo memos[MEMO_SLOTS];
static uint64_t verdicts[VERDICT_SLOTS]; /* code | program bit | filename tag; 0 = unknown */
static char skip[SKIP_MAX][SKIP_LEN];
static int skip_count;
static bool enabled;

#define VERDICT_PROGRAM (1ull << 47)
#define VERDICT_TAG_SHIFT 48

void pysite_init(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    if (!pinshim_policy.python_sites)
        return;
    const char *p = pinshim_policy.python_skip;
    while (*p && skip_count < SKIP_MAX) {
        size_t n = strcspn(p, ",");
        if (n && n < SKIP_LEN) {
            memcpy(skip[skip_count], p, n);
            skip[skip_count++][n] = '\0';
        }
        p += n + (p[n] == ',');
    }
    pyframe_init();
    enabled = pyframe_version() != NULL;
}

const char *pysite_python(void) { return enabled ? pyframe_version() : NULL; }

static bool is_library_file(const char *file)
{
    for (int i = 0; i < skip_count; i++)
        if (strstr(file, skip[i]))
            return true;
    return false;
}

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }

static uint64_t hash_text(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = mix(h, (unsigned char)*s);
    return h;
}

static bool wait_ready(const int *state)
{
    return pinshim_spin_while(state, STATE_FILLING, FILL_SPIN_MAX) == STATE_READY;
}

/* --- the verdict per code object: the program's, or a library's --- */

static uint64_t verdict_key(const struct pyframe *f)
{
    uint64_t tag = (uint64_t)((f->filename * 0x9E3779B97F4A7C15ull) >> 48);
    return (uint64_t)f->code | (tag << VERDICT_TAG_SHIFT);
}

static bool is_program_frame(const struct pyframe *f)
{
    uint64_t key = verdict_key(f);
    uint64_t *slot = &verdicts[(f->code >> 4) & (VERDICT_SLOTS - 1)];
    uint64_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (v && (v & ~VERDICT_PROGRAM) == key)
        return (v & VERDICT_PROGRAM) != 0;
    char file[NAME_READ];
    if (pyframe_str(f->filename, file, sizeof file, false) < 0)
        return false;
    bool program = !is_library_file(file);
    __atomic_store_n(slot, key | (program ? VERDICT_PROGRAM : 0), __ATOMIC_RELAXED);
    return program;
}

/* --- interned sites --- */

static void copy_text(char *dst, const char *src, size_t len)
{
    size_t n = strnlen(src, len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static const struct pysite *intern(const char *file, int line, const char *func)
{
    uint64_t h = mix(hash_text(hash_text(0xcbf29ce484222325ull, file), func), (uint64_t)(uint32_t)line) | 1;
    for (size_t i = 0; i < SITE_SLOTS; i++) {
        struct pysite *e = &sites[(h + i) & (SITE_SLOTS - 1)];
        uint64_t key = __atomic_load_n(&e->hash, __ATOMIC_ACQUIRE);
        if (key == 0) {
            uint64_t expected = 0;
            if (__atomic_compare_exchange_n(&e->hash, &expected, h, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                e->line = line;
                copy_text(e->file, file, FILE_MAX);
                copy_text(e->func, func, FUNC_MAX);
                __atomic_store_n(&e->state, STATE_READY, __ATOMIC_RELEASE);
                return e;
            }
            key = expected;
        }
        if (key == h && wait_ready(&e->state) && e->line == line && strcmp(e->file, file) == 0 &&
            strcmp(e->func, func) == 0)
            return e;
    }
    return NULL;
}

/* The site of frame f, worked out from its code object the first time. */
static const struct pysite *site_of(const struct pyframe *f)
{
    size_t h = (size_t)(((f->code ^ ((uint64_t)f->instr << 32) ^ f->filename) * 0x9E3779B97F4A7C15ull) >> 40);
    for (size_t i = 0; i < MEMO_SLOTS; i++) {
        struct memo *m = &memos[(h + i) & (MEMO_SLOTS - 1)];
        uintptr_t key = __atomic_load_n(&m->code, __ATOMIC_ACQUIRE);
        if (key == 0) {
            uintptr_t expected = 0;
            if (__atomic_compare_exchange_n(&m->code, &expected, f->code, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                m->instr = f->instr;
                m->filename = f->filename;
                char file[FILE_MAX], func[FUNC_MAX];
                int line = pyframe_line(f);
                if (pyframe_str(f->filename, file, sizeof file, true) < 0)
                    strcpy(file, "?");
                if (pyframe_str(f->name, func, sizeof func, false) < 0)
                    strcpy(func, "?");
                m->site = intern(file, line < 0 ? 0 : line, func);
                __atomic_store_n(&m->state, m->site ? STATE_READY : STATE_DEAD, __ATOMIC_RELEASE);
                return m->site;
            }
            key = expected;
        }
        if (key == f->code && wait_ready(&m->state) && m->instr == f->instr && m->filename == f->filename)
            return m->site;
    }
    return NULL;
}

struct capture {
    struct pyframe innermost, program;
    bool have_innermost, have_program;
};

static bool capture_step(const struct pyframe *f, void *arg)
{
    struct capture *c = arg;
    if (!c->have_innermost) {
        c->innermost = *f;
        c->have_innermost = true;
    }
    if (is_program_frame(f)) {
        c->program = *f;
        c->have_program = true;
        return true;
    }
    return false;
}

const struct pysite *pysite_capture(void)
{
    if (!enabled)
        return NULL;
    struct capture c = {.have_innermost = false, .have_program = false};
    pyframe_walk(capture_step, &c);
    if (c.have_program)
        return site_of(&c.program);
    return c.have_innermost ? site_of(&c.innermost) : NULL;
}

/* --- text --- */

static void append_site(struct jbuf *jb, const char *file, int line, const char *func)
{
    jb_lit(jb, file);
    jb_lit(jb, ":");
    jb_u64(jb, (uint64_t)(line < 0 ? 0 : line));
    jb_lit(jb, " in ");
    jb_lit(jb, func);
}

void pysite_json_fields(struct jbuf *jb, const struct pysite *p)
{
    char text[FILE_MAX + 16];
    struct jbuf tb;
    jb_init(&tb, text, sizeof text - 1);
    jb_lit(&tb, p->file);
    jb_lit(&tb, ":");
    jb_u64(&tb, (uint64_t)p->line);
    text[tb.len] = '\0';
    jb_lit(jb, "\"py_site\":");
    jb_str(jb, text);
    jb_lit(jb, ",\"py_func\":");
    jb_str(jb, p->func);
}

void pysite_append_text(struct jbuf *jb, const struct pysite *p) { append_site(jb, p->file, p->line, p->func); }

/* --- signal-time readers: no tables --- */

struct frame_text {
    char file[FILE_MAX], func[FUNC_MAX];
    int line;
    bool program;
};

static bool frame_text(const struct pyframe *f, struct frame_text *t)
{
    char full[NAME_READ];
    if (pyframe_str(f->filename, full, sizeof full, false) < 0)
        return false;
    t->program = !is_library_file(full);
    if (pyframe_str(f->filename, t->file, sizeof t->file, true) < 0 || pyframe_str(f->name, t->func, sizeof t->func, false) < 0)
        return false;
    t->line = pyframe_line(f);
    return true;
}

struct here {
    struct jbuf *jb;
    bool found;
};

static bool here_step(const struct pyframe *f, void *arg)
{
    struct here *h = arg;
    struct frame_text t;
    if (!frame_text(f, &t) || !t.program)
        return false;
    append_site(h->jb, t.file, t.line, t.func);
    h->found = true;
    return true;
}

bool pysite_append_here(struct jbuf *jb)
{
    if (!enabled)
        return false;
    struct here h = {jb, false};
    pyframe_walk(here_step, &h);
    return h.found;
}

struct stack {
    struct jbuf *jb;
    const char *prefix;
    int max, frames, folded;
    bool full;
};

static void flush_folded(struct stack *s)
{
    if (!s->folded)
        return;
    jb_lit(s->jb, s->prefix);
    jb_lit(s->jb, "(");
    jb_u64(s->jb, (uint64_t)s->folded);
    jb_lit(s->jb, s->folded == 1 ? " library frame)\n" : " library frames)\n");
    s->folded = 0;
}

static bool stack_step(const struct pyframe *f, void *arg)
{
    struct stack *s = arg;
    struct frame_text t;
    if (s->frames >= s->max)
        return true;
    s->frames++;
    if (!frame_text(f, &t))
        return false;
    if (!t.program && !s->full) {
        s->folded++;
        return false;
    }
    flush_folded(s);
    jb_lit(s->jb, s->prefix);
    append_site(s->jb, t.file, t.line, t.func);
    jb_lit(s->jb, "\n");
    return false;
}

int pysite_append_stack(struct jbuf *jb, const char *prefix, int max, bool full)
{
    if (!enabled)
        return 0;
    struct stack s = {jb, prefix, max, 0, 0, full};
    pyframe_walk(stack_step, &s);
    flush_folded(&s);
    return s.frames;
}

void pysite_fork_child(void)
{
    for (size_t i = 0; i < MEMO_SLOTS; i++)
        if (memos[i].code && memos[i].state == STATE_FILLING)
            memos[i].state = STATE_DEAD;
    for (size_t i = 0; i < SITE_SLOTS; i++)
        if (sites[i].hash && sites[i].state == STATE_FILLING)
            sites[i].state = STATE_DEAD;
}
