/* modules.c: the table behind modules.h. Entries are filled under a mutex (a new module is rare:
 * once per module, when its first call site is classified) and published by a release store of
 * the count, so readers never lock. The build-id is the NT_GNU_BUILD_ID note of the loaded image's
 * PT_NOTE segments, found with dl_iterate_phdr; the main program's path is /proc/self/exe. */
#define _GNU_SOURCE
#include "modules.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MODULE_PATH_MAX 1024
#define BUILD_ID_MAX 64 /* bytes; GNU ld writes 20 (sha1), lld may write up to 32 */

struct module {
    uintptr_t base;       /* dli_fbase: where the image's first segment is mapped */
    uintptr_t base_vaddr; /* the link-time address of base: a site's offset + this = its address in the file */
    enum framework framework;
    char name[64]; /* basename, as call sites name the module */
    char path[MODULE_PATH_MAX];
    char build_id[2 * BUILD_ID_MAX + 1]; /* hex; "" when the image has no build-id note */
    bool announced;                      /* the log has its record (consumer-owned) */
};

const char *const framework_names[FRAMEWORK_COUNT] = {"cuda", "pytorch", "cupy", "jax"};

static struct module table[MODULES_MAX];
static unsigned count; /* published entries */
static pthread_mutex_t fill_lock = PTHREAD_MUTEX_INITIALIZER;

/* The framework a module's path belongs to (site-packages/dist-packages: the part after it).
 * Checked in order: a PyTorch wheel also ships libraries whose names say nothing (libc10_cuda.so)
 * but sit in torch/lib. */
static enum framework framework_of(const char *path, const char *name)
{
    static const struct {
        enum framework fw;
        const char *in_path;
    } rules[] = {
        {FRAMEWORK_PYTORCH, "/torch/"}, {FRAMEWORK_PYTORCH, "libtorch"}, {FRAMEWORK_PYTORCH, "libc10"},
        {FRAMEWORK_CUPY, "cupy"},       {FRAMEWORK_JAX, "jaxlib"},       {FRAMEWORK_JAX, "/jax"},
        {FRAMEWORK_JAX, "xla"},
    };
    /* Inside a Python environment only the installed package's own path counts: a virtual
     * environment may live in a folder named after another framework (CuPy's modules under
     * /opt/torch/.venv/.../site-packages/cupy_backends were taken for PyTorch's on the GPU machine). */
    const char *tail = NULL;
    for (const char *p = path; (p = strstr(p, "-packages/")) != NULL; p++)
        tail = p + sizeof "-packages" - 1; /* keeps the '/' before the package's name */
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (strstr(tail ? tail : path, rules[i].in_path) || strstr(name, rules[i].in_path))
            return rules[i].fw;
    return FRAMEWORK_CUDA_C;
}

struct image_query {
    uintptr_t pc;
    struct module *m;
    bool found;
};

static size_t align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

/* Hex of the NT_GNU_BUILD_ID note in one PT_NOTE segment, if there is one. */
static bool build_id_in(const char *notes, size_t size, size_t align, char *hex, size_t hex_len)
{
    align = align == 8 ? 8 : 4;
    size_t off = 0;
    while (off + sizeof(ElfW(Nhdr)) <= size) {
        const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(const void *)(notes + off);
        size_t name_at = off + sizeof *n, desc_at = name_at + align_up(n->n_namesz, align);
        size_t next = desc_at + align_up(n->n_descsz, align);
        if (next > size || next <= off)
            return false;
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(notes + name_at, "GNU", 4) == 0 &&
            n->n_descsz > 0 && n->n_descsz <= BUILD_ID_MAX && 2 * n->n_descsz < hex_len) {
            static const char digits[] = "0123456789abcdef";
            const unsigned char *d = (const unsigned char *)notes + desc_at;
            for (size_t i = 0; i < n->n_descsz; i++) {
                hex[2 * i] = digits[d[i] >> 4];
                hex[2 * i + 1] = digits[d[i] & 15];
            }
            hex[2 * n->n_descsz] = '\0';
            return true;
        }
        off = next;
    }
    return false;
}

static int find_image(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct image_query *q = arg;
    bool contains = false;
    for (int i = 0; i < info->dlpi_phnum && !contains; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        contains = ph->p_type == PT_LOAD && q->pc >= lo && q->pc < lo + ph->p_memsz;
    }
    if (!contains)
        return 0;
    struct module *m = q->m;
    m->base_vaddr = m->base - info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum && !m->build_id[0]; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE)
            build_id_in((const char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, ph->p_align, m->build_id,
                        sizeof m->build_id);
    }
    if (info->dlpi_name && info->dlpi_name[0])
        snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
    q->found = true;
    return 1;
}

static void fill(struct module *m, uintptr_t fbase, const char *fname, uintptr_t pc)
{
    memset(m, 0, sizeof *m);
    m->base = fbase;
    struct image_query q = {pc, m, false};
    dl_iterate_phdr(find_image, &q);
    if (!m->path[0]) { /* the main program: the loader knows it by an empty name */
        ssize_t n = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
        if (n > 0)
            m->path[n] = '\0';
        else
            snprintf(m->path, sizeof m->path, "%s", fname ? fname : "?");
    }
    /* the name call sites use (callsite.c): dli_fname's basename, "?" when empty */
    const char *slash = fname ? strrchr(fname, '/') : NULL;
    const char *base = slash ? slash + 1 : fname ? fname : "";
    snprintf(m->name, sizeof m->name, "%.63s", *base ? base : "?");
    m->framework = framework_of(m->path, m->name);
}

static int lookup(uintptr_t fbase, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (table[i].base == fbase)
            return (int)i;
    return -1;
}

int modules_find(uintptr_t fbase, const char *fname, uintptr_t pc)
{
    int id = lookup(fbase, __atomic_load_n(&count, __ATOMIC_ACQUIRE));
    if (id >= 0)
        return id;
    struct module m; /* read outside the lock: dl_iterate_phdr takes the loader's lock */
    fill(&m, fbase, fname, pc);
    pthread_mutex_lock(&fill_lock);
    unsigned n = __atomic_load_n(&count, __ATOMIC_ACQUIRE);
    id = lookup(fbase, n);
    if (id < 0 && n < MODULES_MAX) {
        table[n] = m;
        __atomic_store_n(&count, n + 1, __ATOMIC_RELEASE);
        id = (int)n;
    }
    pthread_mutex_unlock(&fill_lock);
    return id;
}

enum framework modules_framework(int id)
{
    if (id < 0 || (unsigned)id >= __atomic_load_n(&count, __ATOMIC_ACQUIRE))
        return FRAMEWORK_CUDA_C;
    return table[id].framework;
}

void modules_record_once(struct jbuf *jb, int id)
{
    if (jb->full || id < 0 || (unsigned)id >= __atomic_load_n(&count, __ATOMIC_ACQUIRE) || table[id].announced)
        return;
    const struct module *m = &table[id];
    size_t start = jb->len;
    jb_lit(jb, "{\"type\":\"module\",\"name\":");
    jb_str(jb, m->name);
    jb_lit(jb, ",\"path\":");
    jb_str(jb, m->path);
    jb_lit(jb, ",\"build_id\":");
    if (m->build_id[0])
        jb_str(jb, m->build_id);
    else
        jb_lit(jb, "null");
    jb_lit(jb, ",\"base_vaddr\":");
    jb_u64(jb, m->base_vaddr);
    jb_lit(jb, ",\"framework\":");
    jb_str(jb, framework_names[m->framework]);
    jb_lit(jb, "}\n");
    if (jb->full) { /* left out whole: announced with the next record that names it */
        jb->len = start;
        jb->full = false;
    } else
        table[id].announced = true;
}

void modules_record_all(struct jbuf *jb)
{
    unsigned n = __atomic_load_n(&count, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; i++)
        modules_record_once(jb, (int)i);
}

void modules_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    fill_lock = fresh;
    for (unsigned i = 0; i < count; i++)
        table[i].announced = false;
}
