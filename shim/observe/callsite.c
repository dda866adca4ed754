/* callsite.c: stack unwinding to the program's frame, the cache of classified return addresses
 * (an open-addressing table keyed by address, filled once per address), and per-site totals
 * (see callsite.h). The unwinder is libgcc's _Unwind_Backtrace, found at init; glibc's
 * backtrace() is the fallback. */
#define _GNU_SOURCE
#include "callsite.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unwind.h>

#include "base/common.h"
#include "base/real.h"
#include "modules.h"
#include "pysite.h"

#define SITE_SLOTS 4096u     /* return addresses and (address, Python site) pairs remembered (power of 2) */
#define UNWIND_MAX_FRAMES 48 /* deeper than this, the site is unknown */
#define FILL_SPIN_MAX 100000 /* waits for another thread classifying the same address */

enum site_state { STATE_FILLING, STATE_SKIP, STATE_SITE };

struct callsite {
    uintptr_t addr; /* the key, with py: a return address; 0 = free slot */
    const struct pysite *py; /* NULL: the address's own entry; else a pair entry (a copy of it + py) */
    int state;
    uintptr_t offset; /* of the call instruction (return address - 1) in its module */
    char module[64];
    char func[96]; /* "" when the module exports no symbol there */
    int module_id; /* modules.h: path and build-id for the log's module records; -1 unknown */
    struct callsite_totals t;
};

static struct callsite table[SITE_SLOTS];
static uintptr_t shim_base;

typedef _Unwind_Reason_Code (*unwind_backtrace_fn)(_Unwind_Trace_Fn, void *);
typedef _Unwind_Ptr (*unwind_getip_fn)(struct _Unwind_Context *);
static unwind_backtrace_fn unwind_backtrace;
static unwind_getip_fn unwind_getip;

void callsite_init(void)
{
    Dl_info self;
    if (dladdr((void *)callsite_init, &self))
        shim_base = (uintptr_t)self.dli_fbase;
    pysite_init();
    /* glibc's backtrace() loads libgcc_s (allocating) on first use: do that now, not in a copy. */
    void *frames[2];
    backtrace(frames, 2);
    void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (gcc && real_dlsym_ready() == 0) {
        unwind_getip = (unwind_getip_fn)pinshim_real_dlsym(gcc, "_Unwind_GetIP");
        unwind_backtrace = (unwind_backtrace_fn)pinshim_real_dlsym(gcc, "_Unwind_Backtrace");
        if (!unwind_getip)
            unwind_backtrace = NULL;
    }
}

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* Decides once what a return address is: a frame to skip, or a program site. */
static enum site_state classify(struct callsite *e, uintptr_t addr)
{
    Dl_info info;
    uintptr_t pc = addr - 1; /* inside the call instruction, not after it */
    e->module[0] = e->func[0] = '\0';
    e->offset = pc;
    e->module_id = -1;
    if (!dladdr((void *)pc, &info) || !info.dli_fname) {
        snprintf(e->module, sizeof e->module, "?");
        return STATE_SITE;
    }
    const char *slash = strrchr(info.dli_fname, '/');
    const char *base = slash ? slash + 1 : info.dli_fname;
    const char *sym = info.dli_sname;
    if ((uintptr_t)info.dli_fbase == shim_base || starts_with(base, "libcuda.so") ||
        starts_with(base, "libcudart") || (sym && (starts_with(sym, "cuda") || starts_with(sym, "__cuda")))) {
        return STATE_SKIP;
    }
    snprintf(e->module, sizeof e->module, "%s", *base ? base : "?");
    if (sym)
        snprintf(e->func, sizeof e->func, "%s", sym);
    e->offset = pc - (uintptr_t)info.dli_fbase;
    e->module_id = modules_find((uintptr_t)info.dli_fbase, info.dli_fname, pc);
    return STATE_SITE;
}

/* The table entry of (return address, Python site): for py NULL the address's own, classified on
 * first sight; else a program site's pair with py (copied from native). NULL if the table is full. */
static const struct callsite *lookup_pair(uintptr_t addr, const struct pysite *py, const struct callsite *native)
{
    size_t h = (size_t)(((addr ^ (uintptr_t)py) * 0x9E3779B97F4A7C15ull) >> 40);
    for (size_t i = 0; i < SITE_SLOTS; i++) {
        struct callsite *e = &table[(h + i) & (SITE_SLOTS - 1)];
        uintptr_t key = __atomic_load_n(&e->addr, __ATOMIC_ACQUIRE);
        if (key == 0) {
            uintptr_t expected = 0;
            if (__atomic_compare_exchange_n(&e->addr, &expected, addr, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                e->py = py;
                int state = STATE_SITE;
                if (native) {
                    e->offset = native->offset;
                    memcpy(e->module, native->module, sizeof e->module);
                    memcpy(e->func, native->func, sizeof e->func);
                } else {
                    state = classify(e, addr);
                }
                __atomic_store_n(&e->state, state, __ATOMIC_RELEASE);
                return e;
            }
            key = expected;
        }
        if (key == addr) {
            const struct callsite *f =
                pinshim_spin_while(&e->state, STATE_FILLING, FILL_SPIN_MAX) != STATE_FILLING ? e : NULL;
            if (!f || f->py == py)
                return f;
        }
    }
    return NULL;
}

static const struct callsite *lookup(uintptr_t addr) { return lookup_pair(addr, NULL, NULL); }

/* The native site s with the calling thread's Python site, when it has one. */
static const struct callsite *with_python(const struct callsite *s)
{
    const struct pysite *py = s ? pysite_capture() : NULL;
    if (!py)
        return s;
    const struct callsite *pair = lookup_pair(s->addr, py, s);
    return pair ? pair : s;
}

struct walk {
    int frames;
    const struct callsite *found;
};

static _Unwind_Reason_Code walk_step(struct _Unwind_Context *ctx, void *arg)
{
    struct walk *w = arg;
    if (++w->frames > UNWIND_MAX_FRAMES)
        return _URC_END_OF_STACK;
    uintptr_t ip = (uintptr_t)unwind_getip(ctx);
    if (!ip)
        return _URC_NO_REASON;
    const struct callsite *e = lookup(ip);
    if (!e)
        return _URC_END_OF_STACK;
    if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == STATE_SITE) {
        w->found = e;
        return _URC_END_OF_STACK;
    }
    return _URC_NO_REASON;
}

const struct callsite *callsite_capture(void)
{
    /* Fast path: the wrapper's caller is already a program frame (driver API users). */
    uintptr_t hint = pinshim_thread.caller;
    if (hint) {
        const struct callsite *e = lookup(hint);
        if (e && __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == STATE_SITE)
            return with_python(e);
    }
    if (unwind_backtrace) {
        struct walk w = {0, NULL};
        unwind_backtrace(walk_step, &w);
        return with_python(w.found);
    }
    void *frames[UNWIND_MAX_FRAMES];
    int n = backtrace(frames, UNWIND_MAX_FRAMES);
    for (int i = 1; i < n; i++) {
        const struct callsite *e = lookup((uintptr_t)frames[i]);
        if (!e)
            return NULL;
        if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == STATE_SITE)
            return with_python(e);
    }
    return NULL;
}

static void add(uint64_t *counter, uint64_t v) { __atomic_fetch_add(counter, v, __ATOMIC_RELAXED); }
static uint64_t get(const uint64_t *counter) { return __atomic_load_n(counter, __ATOMIC_RELAXED); }

void callsite_add(const struct callsite *cs, const struct copy *c, uint64_t host_ns)
{
    if (!cs)
        return;
    struct callsite_totals *t = &((struct callsite *)cs)->t;
    add(&t->count, 1);
    add(&t->bytes, c->bytes);
    add(&t->host_ns, host_ns);
    add(&t->kinds[c->host_kind], 1);
    if (c->host_kind == KIND_PAGEABLE && c->action == ACTION_PASS && (c->dir == DIR_H2D || c->dir == DIR_D2H)) {
        add(&t->pageable_count, 1);
        add(c->dir == DIR_H2D ? &t->pageable_h2d_bytes : &t->pageable_d2h_bytes, c->bytes);
        add(&t->pageable_ns, host_ns);
    } else if (c->host_kind == KIND_PAGEABLE && c->action != ACTION_PASS && (c->dir == DIR_H2D || c->dir == DIR_D2H)) {
        add(&t->shim_count[c->action], 1);
        add(&t->shim_bytes[c->action][c->dir == DIR_D2H], c->bytes);
        add(&t->shim_ns[c->action], host_ns);
    }
}

static void snapshot(const struct callsite *e, struct callsite_totals *out)
{
    out->count = get(&e->t.count);
    out->bytes = get(&e->t.bytes);
    out->host_ns = get(&e->t.host_ns);
    for (int k = 0; k < KIND_COUNT; k++)
        out->kinds[k] = get(&e->t.kinds[k]);
    out->pageable_count = get(&e->t.pageable_count);
    out->pageable_h2d_bytes = get(&e->t.pageable_h2d_bytes);
    out->pageable_d2h_bytes = get(&e->t.pageable_d2h_bytes);
    out->pageable_ns = get(&e->t.pageable_ns);
    for (int a = 0; a < ACTION_COUNT; a++) {
        out->shim_count[a] = get(&e->t.shim_count[a]);
        out->shim_bytes[a][0] = get(&e->t.shim_bytes[a][0]);
        out->shim_bytes[a][1] = get(&e->t.shim_bytes[a][1]);
        out->shim_ns[a] = get(&e->t.shim_ns[a]);
    }
}

size_t callsite_top(const struct callsite **out, struct callsite_totals *totals, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < SITE_SLOTS; i++) {
        const struct callsite *e = &table[i];
        if (!__atomic_load_n(&e->addr, __ATOMIC_ACQUIRE) ||
            __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != STATE_SITE || !get(&e->t.count))
            continue;
        struct callsite_totals t;
        snapshot(e, &t);
        /* insertion into the sorted prefix, keeping the max largest host times */
        size_t pos = n < max ? n : max;
        while (pos > 0 && totals[pos - 1].host_ns < t.host_ns) {
            if (pos < max) {
                out[pos] = out[pos - 1];
                totals[pos] = totals[pos - 1];
            }
            pos--;
        }
        if (pos < max) {
            out[pos] = e;
            totals[pos] = t;
            if (n < max)
                n++;
        }
    }
    return n;
}

static void site_name(struct jbuf *jb, const struct callsite *s)
{
    jb_lit(jb, s->module);
    jb_lit(jb, "+");
    jb_hex(jb, s->offset);
}

void callsite_json_fields(struct jbuf *jb, const struct callsite *s)
{
    if (!s) {
        jb_lit(jb, "\"site\":null,\"func\":null");
        return;
    }
    char name[96];
    struct jbuf nb;
    jb_init(&nb, name, sizeof name - 1);
    site_name(&nb, s);
    name[nb.len] = '\0';
    jb_lit(jb, "\"site\":");
    jb_str(jb, name);
    jb_lit(jb, ",\"func\":");
    if (s->func[0])
        jb_str(jb, s->func);
    else
        jb_lit(jb, "null");
    if (s->py) {
        jb_lit(jb, ",");
        pysite_json_fields(jb, s->py);
    }
}

const char *callsite_text(const struct callsite *s, char *buf, size_t len)
{
    if (!len)
        return buf;
    struct jbuf jb;
    jb_init(&jb, buf, len - 1);
    callsite_append_text(&jb, s);
    buf[jb.len] = '\0';
    return buf;
}

void callsite_append_text(struct jbuf *jb, const struct callsite *s)
{
    if (s->py) {
        pysite_append_text(jb, s->py);
        jb_lit(jb, " via ");
    }
    if (s->func[0]) {
        jb_lit(jb, s->func);
        jb_lit(jb, " (");
    }
    site_name(jb, s);
    if (s->func[0])
        jb_lit(jb, ")");
}

void callsite_json_top(struct jbuf *jb, size_t max)
{
    enum { TOP_MAX = 20 };
    const struct callsite *top[TOP_MAX];
    struct callsite_totals t[TOP_MAX];
    size_t n = callsite_top(top, t, max < TOP_MAX ? max : TOP_MAX);
    jb_lit(jb, "[");
    for (size_t i = 0; i < n; i++) {
        jb_lit(jb, i ? ",{" : "{");
        callsite_json_fields(jb, top[i]);
        jb_lit(jb, ",\"count\":");
        jb_u64(jb, t[i].count);
        jb_lit(jb, ",\"bytes\":");
        jb_u64(jb, t[i].bytes);
        jb_lit(jb, ",\"host_ns\":");
        jb_u64(jb, t[i].host_ns);
        jb_lit(jb, ",\"kinds\":{");
        bool first = true;
        for (int k = 0; k < KIND_COUNT; k++) {
            if (!t[i].kinds[k])
                continue;
            jb_key(jb, host_kind_names[k], first);
            jb_u64(jb, t[i].kinds[k]);
            first = false;
        }
        jb_lit(jb, "}}");
    }
    jb_lit(jb, "]");
}

int callsite_module(const struct callsite *s) { return s ? s->module_id : -1; }

void callsite_fork_child(void)
{
    for (size_t i = 0; i < SITE_SLOTS; i++) {
        struct callsite *e = &table[i];
        if (!e->addr)
            continue;
        if (e->state == STATE_FILLING) /* its filler was a thread of the parent */
            e->state = STATE_SKIP;
        memset(&e->t, 0, sizeof e->t);
    }
    pysite_fork_child();
}
