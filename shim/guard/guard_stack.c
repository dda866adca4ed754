/* guard_stack.c: the stack of a guarded access and the names of its frames (see guard_stack.h):
 * libgcc's unwinder (loaded by guard_stack_prepare(), outside any handler), the shim's own frames
 * left out, and a table of the loaded modules, built outside the handler and read by it (two
 * tables, one current), that turns an address into "module+0xoffset". */
#define _GNU_SOURCE
#include "guard_stack.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unwind.h>

#include "base/real.h"
#include "observe/jbuf.h"

#define GUARD_MODULES 512 /* loaded objects named in reports; later ones show as bare addresses */

/* --- the access's stack --- */

typedef _Unwind_Reason_Code (*fn_unwind_backtrace)(_Unwind_Trace_Fn, void *);
typedef _Unwind_Ptr (*fn_unwind_getip)(struct _Unwind_Context *);
static fn_unwind_backtrace unwind_backtrace;
static fn_unwind_getip unwind_getip;

struct walk {
    uintptr_t *frames;
    int n, max;
};

static _Unwind_Reason_Code walk_step(struct _Unwind_Context *ctx, void *arg)
{
    struct walk *w = arg;
    if (w->n >= w->max)
        return _URC_END_OF_STACK;
    uintptr_t ip = (uintptr_t)unwind_getip(ctx);
    if (ip)
        w->frames[w->n++] = ip;
    return _URC_NO_REASON;
}

static int raw_stack(uintptr_t *frames, int max)
{
    if (!unwind_backtrace)
        return 0;
    struct walk w = {frames, 0, max};
    unwind_backtrace(walk_step, &w);
    return w.n;
}

static uintptr_t shim_lo, shim_hi; /* the shim's own text, left out of stacks */

static bool in_shim(uintptr_t pc) { return pc >= shim_lo && pc < shim_hi; }

int guard_stack_here(uintptr_t *frames, int max)
{
    uintptr_t all[64];
    int n = raw_stack(all, 64), out = 0;
    for (int i = 0; i < n && out < max; i++)
        if (!in_shim(all[i]) || out > 0)
            frames[out++] = all[i];
    return out;
}

int guard_stack_signal(const void *ucv, uintptr_t *frames, int max)
{
    if (max <= 0)
        return 0;
    uintptr_t pc = 0;
#if defined(__x86_64__)
    pc = (uintptr_t)((const ucontext_t *)ucv)->uc_mcontext.gregs[REG_RIP];
#endif
    frames[0] = pc;
    uintptr_t all[64];
    int n = raw_stack(all, 64), out = 1;
    int start = -1;
    for (int i = 0; i < n; i++)
        if (all[i] == pc || all[i] == pc + 1) {
            start = i + 1;
            break;
        }
    for (int i = start; start >= 0 && i < n && out < max; i++)
        frames[out++] = all[i];
    return out;
}

/* --- the module table: built outside the handler, read by it (two tables, one current) --- */

struct module {
    uintptr_t lo, hi, base;
    bool main; /* the program's executable (the first object dl_iterate_phdr names) */
    char name[64];
};

static struct module modules[2][GUARD_MODULES];
static int module_count[2];
static int module_current;
static unsigned long long module_adds = ~0ull;

static int count_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_adds;
    return 1;
}

static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    int t = *(int *)arg;
    if (module_count[t] >= GUARD_MODULES)
        return 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
        lo = a < lo ? a : lo;
        hi = b > hi ? b : hi;
    }
    if (lo >= hi)
        return 0;
    struct module *m = &modules[t][module_count[t]++];
    m->lo = lo;
    m->hi = hi;
    m->base = info->dlpi_addr;
    m->main = module_count[t] == 1;
    const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : program_invocation_name;
    const char *slash = strrchr(name, '/');
    snprintf(m->name, sizeof m->name, "%s", slash ? slash + 1 : name);
    return 0;
}

void guard_modules_refresh(void)
{
    unsigned long long adds = 0;
    dl_iterate_phdr(count_adds, &adds);
    if (adds == module_adds)
        return;
    int t = 1 - __atomic_load_n(&module_current, __ATOMIC_ACQUIRE);
    module_count[t] = 0;
    dl_iterate_phdr(add_module, &t);
    __atomic_store_n(&module_current, t, __ATOMIC_RELEASE);
    module_adds = adds;
}

static void append(char *buf, size_t len, size_t *pos, const char *s, size_t n)
{
    size_t room = len - *pos; /* *pos never passes len */
    if (n > room)
        n = room;
    memcpy(buf + *pos, s, n);
    *pos += n;
}

static void append_hex(char *buf, size_t len, size_t *pos, uintptr_t v)
{
    char tmp[20];
    size_t n = sizeof tmp;
    do {
        tmp[--n] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    append(buf, len, pos, "0x", 2);
    append(buf, len, pos, tmp + n, sizeof tmp - n);
}

static const struct module *find_module(uintptr_t addr, int *index)
{
    int t = __atomic_load_n(&module_current, __ATOMIC_ACQUIRE);
    for (int i = 0; i < module_count[t]; i++) {
        const struct module *m = &modules[t][i];
        if (addr >= m->lo && addr < m->hi) {
            if (index)
                *index = i;
            return m;
        }
    }
    return NULL;
}

void guard_frame_text(char *buf, size_t len, size_t *pos, uintptr_t addr)
{
    const struct module *m = find_module(addr, NULL);
    if (m) {
        append(buf, len, pos, m->name, strlen(m->name));
        append(buf, len, pos, "+", 1);
        append_hex(buf, len, pos, addr - m->base);
    } else {
        append_hex(buf, len, pos, addr);
    }
}

void guard_module_name(char *buf, size_t len, size_t *pos, uintptr_t addr)
{
    append(buf, len, pos, " ", 1);
    append_hex(buf, len, pos, addr);
    if (find_module(addr, NULL)) {
        append(buf, len, pos, " (", 2);
        guard_frame_text(buf, len, pos, addr);
        append(buf, len, pos, ")", 1);
    }
}

int guard_frame_module(uintptr_t addr, bool *main)
{
    int i = -1;
    const struct module *m = find_module(addr, &i);
    if (main)
        *main = m && m->main;
    return i;
}

void guard_stack_append(struct jbuf *jb, const char *prefix, const uintptr_t *frames, int n, bool full)
{
    for (int f = 0; f < n;) {
        char fr[160];
        size_t pos = 0;
        guard_module_name(fr, sizeof fr, &pos, frames[f]);
        jb_lit(jb, prefix);
        jb_lit(jb, "#");
        jb_u64(jb, (uint64_t)f);
        jb_raw(jb, fr, pos);
        jb_lit(jb, "\n");
        bool main = false;
        int mod = guard_frame_module(frames[f], &main), run = f + 1;
        while (!full && !main && mod >= 0 && run < n && guard_frame_module(frames[run], NULL) == mod)
            run++; /* a library's run; the program's own frames are all shown */
        if (run - f > 2) { /* fold: one line for the rest of the run */
            const struct module *m = find_module(frames[f], NULL);
            jb_lit(jb, prefix);
            jb_lit(jb, "   ... ");
            jb_u64(jb, (uint64_t)(run - f - 1));
            jb_lit(jb, " more frames in ");
            jb_lit(jb, m ? m->name : "?");
            jb_lit(jb, "\n");
            f = run;
        } else {
            f++;
        }
    }
}

/* --- preparation --- */

void guard_stack_prepare(void)
{
    void *frames[2];
    backtrace(frames, 2); /* loads libgcc_s now, outside any handler */
    void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (gcc && real_dlsym_ready() == 0) {
        unwind_getip = (fn_unwind_getip)pinshim_real_dlsym(gcc, "_Unwind_GetIP");
        unwind_backtrace = unwind_getip ? (fn_unwind_backtrace)pinshim_real_dlsym(gcc, "_Unwind_Backtrace") : NULL;
    }
    Dl_info self;
    if (dladdr((void *)guard_stack_prepare, &self)) {
        shim_lo = (uintptr_t)self.dli_fbase;
        shim_hi = shim_lo;
        /* the shim's extent: the module table has it */
        guard_modules_refresh();
        int t = __atomic_load_n(&module_current, __ATOMIC_ACQUIRE);
        for (int i = 0; i < module_count[t]; i++)
            if (modules[t][i].lo <= (uintptr_t)guard_stack_prepare && (uintptr_t)guard_stack_prepare < modules[t][i].hi) {
                shim_lo = modules[t][i].lo;
                shim_hi = modules[t][i].hi;
            }
    }
}
