/* alloc_count.c: a preload library that counts a program's calls to the functions the shim's
 * allocation hooks interpose (shim/hostmem/alloc.c), to weigh what those hooks cost a workload and
 * which of them it leans on (tests/bench/malloc_cost.c times a pair of each kind with and without
 * the shim), and which loaded object makes those calls. malloc, calloc, realloc, free,
 * posix_memalign, aligned_alloc and memalign are counted and forwarded to glibc's own (__libc_*);
 * mmap, munmap, mremap and madvise (the calls that reach them through the dynamic linker, not
 * glibc's malloc's own) are counted and made as system calls. It forwards past any later preload,
 * so run it instead of the shim, not with it (the program's calls are the same either way).
 * alloc_count_calls() reads the malloc family's calls so far (free(NULL) not counted),
 * alloc_count_large() those that asked for 1 MiB or more (the shim's track_min_bytes default: what
 * it tracks), alloc_count_name(i) and alloc_count_of(i) each function's name and calls (i from 0;
 * the name is NULL past the last). A script finds them with ctypes (tests/bench/workloads/
 * train_phases.py reports them per step). ALLOC_COUNT_REPORT=1 prints the totals on stderr at exit,
 * then the C++ forms' calls on a line "alloc_count: C++ new N new[] N ...", then a line
 * "alloc_count: from OBJECT FUNCTION CALLS" for each object's calls of each function.
 * By caller: every counted call is also counted against its call site (the return address), and
 * alloc_count_by_object() sums the sites by the object (library or program) they lie in, as text
 * lines "OBJECT FUNCTION CALLS" (OBJECT the file's name without its folder). C++'s operator new and
 * delete are interposed too, only to pass the site of their own caller to the malloc or free they
 * make (a tail of libstdc++ would otherwise own every C++ allocation); their calls are counted as
 * that malloc or free, so the totals are the same with or without C++; alloc_count_cxx_name(i) and
 * alloc_count_cxx_of(i) count the forms the program called (new, new[], delete(size), ...: which
 * of libstdc++'s forms its calls go through). The caller's site is taken by the first malloc or
 * free that new or delete makes, so a new-handler's retry is named after the C++ runtime, and a
 * call made as a tail call (a function ending in `return malloc(n)`) is named after its caller's
 * caller: a counting tool's inaccuracies, not the program's.
 * Counts are relaxed atomics: exact once the threads counted are done. alloc_count_by_object() is
 * for one reader at a time (its text is a static buffer); the sites' table holds 65,536 sites, a
 * call from a site past those is counted in the totals and as "(sites full)".
 * Build: cc -O2 -shared -fPIC tests/bench/alloc_count.c -o liballoc_count.so (compare_builds.py
 * builds a LIBRARY given as a .c file so). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libc_alloc.h"

#define LARGE_BYTES ((size_t)1 << 20)

enum fn { F_MALLOC, F_CALLOC, F_REALLOC, F_FREE, F_POSIX_MEMALIGN, F_ALIGNED_ALLOC, F_MEMALIGN,
          F_MMAP, F_MUNMAP, F_MREMAP, F_MADVISE, F_COUNT };
static const char *const NAMES[F_COUNT] = {"malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc",
                                           "memalign", "mmap", "munmap", "mremap", "madvise"};
#define MALLOC_FAMILY F_MMAP /* the functions before F_MMAP */

static uint64_t counts[F_COUNT], large;

/* --- by call site --- */

#define SITE_SLOTS (1u << 16)
#define SITE_PROBES 64
struct site {
    uintptr_t key; /* the return address << 4 | the function; 0: empty */
    uint64_t calls;
};
_Static_assert(F_COUNT <= 16, "a function's index fits the key's low 4 bits");
static struct site sites[SITE_SLOTS];
static uint64_t sites_lost;

/* Set by operator new and delete around their real call: the site their allocation belongs to. */
static __thread uintptr_t outer_site __attribute__((tls_model("initial-exec")));

static void note_site(enum fn f, uintptr_t site)
{
    uintptr_t key = site << 4 | (uintptr_t)f;
    unsigned i = (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 48);
    for (unsigned probe = 0; probe < SITE_PROBES; probe++, i = (i + 1) & (SITE_SLOTS - 1)) {
        uintptr_t seen = __atomic_load_n(&sites[i].key, __ATOMIC_ACQUIRE);
        if (seen == 0 && __atomic_compare_exchange_n(&sites[i].key, &seen, key, false, __ATOMIC_ACQ_REL,
                                                     __ATOMIC_ACQUIRE))
            seen = key;
        if (seen == key) {
            __atomic_add_fetch(&sites[i].calls, 1, __ATOMIC_RELAXED);
            return;
        }
    }
    __atomic_add_fetch(&sites_lost, 1, __ATOMIC_RELAXED);
}

static inline void note_call_from(enum fn f, size_t n, uintptr_t caller)
{
    __atomic_add_fetch(&counts[f], 1, __ATOMIC_RELAXED);
    if (n >= LARGE_BYTES && f < MALLOC_FAMILY)
        __atomic_add_fetch(&large, 1, __ATOMIC_RELAXED);
    uintptr_t outer = outer_site;
    outer_site = 0; /* taken by the one call new or delete makes: none is left set when new throws */
    note_site(f, outer ? outer : caller);
}

/* Counts a call of f asking for n bytes, made from where the calling function will return to. */
#define note_call(f, n) note_call_from((f), (n), (uintptr_t)__builtin_return_address(0))

uint64_t alloc_count_calls(void)
{
    uint64_t sum = 0;
    for (int f = 0; f < MALLOC_FAMILY; f++)
        sum += __atomic_load_n(&counts[f], __ATOMIC_RELAXED);
    return sum;
}
uint64_t alloc_count_large(void) { return __atomic_load_n(&large, __ATOMIC_RELAXED); }
const char *alloc_count_name(unsigned i) { return i < F_COUNT ? NAMES[i] : NULL; }
uint64_t alloc_count_of(unsigned i) { return i < F_COUNT ? __atomic_load_n(&counts[i], __ATOMIC_RELAXED) : 0; }

void *malloc(size_t n)
{
    note_call(F_MALLOC, n);
    return __libc_malloc(n);
}

void *calloc(size_t count, size_t size)
{
    note_call(F_CALLOC, count && size > SIZE_MAX / count ? SIZE_MAX : count * size);
    return __libc_calloc(count, size);
}

void *realloc(void *p, size_t n)
{
    note_call(F_REALLOC, n);
    return __libc_realloc(p, n);
}

void free(void *p)
{
    if (p)
        note_call(F_FREE, 0);
    else
        outer_site = 0; /* delete of a null pointer: nothing to name */
    __libc_free(p);
}

void *memalign(size_t align, size_t n)
{
    note_call(F_MEMALIGN, n);
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    note_call(F_ALIGNED_ALLOC, n);
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    note_call(F_POSIX_MEMALIGN, n);
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

static void *counted_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, uintptr_t caller)
{
    note_call_from(F_MMAP, 0, caller);
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return counted_mmap(addr, len, prot, flags, fd, off, (uintptr_t)__builtin_return_address(0));
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return counted_mmap(addr, len, prot, flags, fd, off, (uintptr_t)__builtin_return_address(0));
}

int munmap(void *addr, size_t len)
{
    note_call(F_MUNMAP, 0);
    return (int)syscall(SYS_munmap, addr, len);
}

void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    void *target = flags & MREMAP_FIXED ? va_arg(ap, void *) : NULL;
    va_end(ap);
    note_call(F_MREMAP, 0);
    return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, target);
}

int madvise(void *addr, size_t len, int advice)
{
    note_call(F_MADVISE, 0);
    return (int)syscall(SYS_madvise, addr, len, advice);
}

/* --- C++'s operator new and delete: the site of their caller --- */

/* Each takes at most three integer arguments (size or pointer, size or alignment, alignment or
 * nothrow tag), so one signature of three serves them all: the real one reads those it has. */
typedef void *(*new_fn)(uintptr_t, uintptr_t, uintptr_t);
typedef void (*delete_fn)(uintptr_t, uintptr_t, uintptr_t);

/* The C++ runtime's own definition of name. RTLD_NEXT searches the global scope only, and a C++
 * runtime loaded as the dependency of a library dlopened RTLD_LOCAL (a Python extension's) is not
 * in it: that one is found by its name, already loaded. */
static void *next_cxx(const char *name, void **cache)
{
    void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (f)
        return f;
    uintptr_t outer = outer_site; /* the look-up's own allocations (delete[] calls delete) are not the caller's */
    outer_site = 0;
    f = dlsym(RTLD_NEXT, name);
    void *runtime = f ? NULL : dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (runtime) {
        f = dlsym(runtime, name);
        dlclose(runtime);
    }
    outer_site = outer;
    if (!f) { /* called, so some object links it: its runtime is loaded, but under another name */
        static const char msg[] = "alloc_count: no C++ runtime (libstdc++.so.6) defines a C++ allocation function"
                                  " called here\n";
        (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
        abort();
    }
    __atomic_store_n(cache, f, __ATOMIC_RELEASE);
    return f;
}

/* The site the allocation belongs to, set around the real call: the caller of new or delete. */
#define CXX_SITE_BEGIN                                                                              \
    uintptr_t outer = outer_site;                                                                   \
    if (!outer)                                                                                     \
        outer_site = (uintptr_t)__builtin_return_address(0)
#define CXX_SITE_END outer_site = outer

/* Every form of new and delete: its symbol and the name its count goes by (new, new[], each plain,
 * nothrow, aligned, aligned nothrow; delete, delete[], each plain, sized, nothrow, aligned, sized
 * aligned, aligned nothrow). */
#define CXX_FORMS(X)                                                                                \
    X(NEW, _Znwm, "new")                                                                            \
    X(NEW, _Znam, "new[]")                                                                          \
    X(NEW, _ZnwmRKSt9nothrow_t, "new(nothrow)")                                                     \
    X(NEW, _ZnamRKSt9nothrow_t, "new[](nothrow)")                                                   \
    X(NEW, _ZnwmSt11align_val_t, "new(align)")                                                      \
    X(NEW, _ZnamSt11align_val_t, "new[](align)")                                                    \
    X(NEW, _ZnwmSt11align_val_tRKSt9nothrow_t, "new(align,nothrow)")                                \
    X(NEW, _ZnamSt11align_val_tRKSt9nothrow_t, "new[](align,nothrow)")                              \
    X(DELETE, _ZdlPv, "delete")                                                                     \
    X(DELETE, _ZdaPv, "delete[]")                                                                   \
    X(DELETE, _ZdlPvm, "delete(size)")                                                              \
    X(DELETE, _ZdaPvm, "delete[](size)")                                                            \
    X(DELETE, _ZdlPvRKSt9nothrow_t, "delete(nothrow)")                                              \
    X(DELETE, _ZdaPvRKSt9nothrow_t, "delete[](nothrow)")                                            \
    X(DELETE, _ZdlPvSt11align_val_t, "delete(align)")                                               \
    X(DELETE, _ZdaPvSt11align_val_t, "delete[](align)")                                             \
    X(DELETE, _ZdlPvmSt11align_val_t, "delete(size,align)")                                         \
    X(DELETE, _ZdaPvmSt11align_val_t, "delete[](size,align)")                                       \
    X(DELETE, _ZdlPvSt11align_val_tRKSt9nothrow_t, "delete(align,nothrow)")                         \
    X(DELETE, _ZdaPvSt11align_val_tRKSt9nothrow_t, "delete[](align,nothrow)")

#define FORM_INDEX(kind, sym, name) C_##sym,
enum cxx_form { CXX_FORMS(FORM_INDEX) C_COUNT };
#define FORM_NAME(kind, sym, name) name,
static const char *const CXX_NAMES[C_COUNT] = {CXX_FORMS(FORM_NAME)};

/* Calls of each form made by the program (a form the C++ runtime calls from another, as new[]
 * calls new, is the caller's form only). */
static uint64_t cxx_counts[C_COUNT];

const char *alloc_count_cxx_name(unsigned i) { return i < C_COUNT ? CXX_NAMES[i] : NULL; }
uint64_t alloc_count_cxx_of(unsigned i) { return i < C_COUNT ? __atomic_load_n(&cxx_counts[i], __ATOMIC_RELAXED) : 0; }

#define NEW_ENTRY(sym)                                                                              \
    void *sym(uintptr_t a, uintptr_t b, uintptr_t c);                                               \
    void *sym(uintptr_t a, uintptr_t b, uintptr_t c)                                                \
    {                                                                                               \
        static void *real;                                                                          \
        new_fn next = (new_fn)next_cxx(#sym, &real);                                                \
        CXX_SITE_BEGIN;                                                                             \
        if (!outer)                                                                                 \
            __atomic_add_fetch(&cxx_counts[C_##sym], 1, __ATOMIC_RELAXED);                          \
        void *p = next(a, b, c);                                                                    \
        CXX_SITE_END;                                                                               \
        return p;                                                                                   \
    }
#define DELETE_ENTRY(sym)                                                                           \
    void sym(uintptr_t a, uintptr_t b, uintptr_t c);                                                \
    void sym(uintptr_t a, uintptr_t b, uintptr_t c)                                                 \
    {                                                                                               \
        static void *real;                                                                          \
        delete_fn next = (delete_fn)next_cxx(#sym, &real);                                          \
        CXX_SITE_BEGIN;                                                                             \
        if (!outer)                                                                                 \
            __atomic_add_fetch(&cxx_counts[C_##sym], 1, __ATOMIC_RELAXED);                          \
        next(a, b, c);                                                                              \
        CXX_SITE_END;                                                                               \
    }
#define FORM_ENTRY(kind, sym, name) kind##_ENTRY(sym)
CXX_FORMS(FORM_ENTRY)

/* --- the sites summed by object --- */

#define OBJECTS_MAX 512
static struct object_calls {
    const char *name; /* dladdr's dli_fname: one string per loaded object */
    uint64_t calls[F_COUNT];
} objects[OBJECTS_MAX + 1]; /* the last: sites in no object dladdr knows, or past OBJECTS_MAX */
static char by_object_text[1 << 16];
static size_t by_object_len;

/* Appends a line "NAME FUNCTION CALLS" when it fits whole. */
static void append_line(const char *name, const char *function, uint64_t calls)
{
    size_t room = sizeof by_object_text - by_object_len;
    int w = snprintf(by_object_text + by_object_len, room, "%s %s %llu\n", name, function, (unsigned long long)calls);
    if (w > 0 && (size_t)w < room)
        by_object_len += (size_t)w;
    else
        by_object_text[by_object_len] = '\0';
}

const char *alloc_count_by_object(void)
{
    unsigned n_objects = 0;
    memset(objects, 0, sizeof objects);
    for (unsigned i = 0; i < SITE_SLOTS; i++) {
        uintptr_t key = __atomic_load_n(&sites[i].key, __ATOMIC_ACQUIRE);
        if (!key)
            continue;
        Dl_info info;
        const char *name = dladdr((void *)(key >> 4), &info) && info.dli_fname ? info.dli_fname : NULL;
        unsigned o = 0;
        while (o < n_objects && objects[o].name != name)
            o++;
        if (name && o == n_objects && n_objects < OBJECTS_MAX)
            objects[n_objects++].name = name;
        else if (!name || o == n_objects)
            o = OBJECTS_MAX;
        objects[o].calls[key & 15] += __atomic_load_n(&sites[i].calls, __ATOMIC_RELAXED);
    }
    by_object_len = 0;
    by_object_text[0] = '\0';
    for (unsigned o = 0; o <= OBJECTS_MAX; o++) {
        if (o == n_objects)
            o = OBJECTS_MAX;
        const char *name = o == OBJECTS_MAX ? "(unnamed)" : objects[o].name, *slash = strrchr(name, '/');
        name = slash ? slash + 1 : name[0] ? name : "(program)"; /* the program's own name may be "" */
        for (int f = 0; f < F_COUNT; f++)
            if (objects[o].calls[f])
                append_line(name, NAMES[f], objects[o].calls[f]);
    }
    uint64_t lost = __atomic_load_n(&sites_lost, __ATOMIC_RELAXED);
    if (lost)
        append_line("(sites full)", "all", lost);
    return by_object_text;
}

/* Appends " NAME CALLS" for each of n counters to the line begun in line[0, len) and writes it with
 * a newline on stderr (a line that does not fit whole is left out). */
static void write_counts(char *line, size_t size, int len, const char *const *names, uint64_t (*count_of)(unsigned),
                         unsigned n)
{
    for (unsigned i = 0; i < n && len > 0 && (size_t)len < size; i++)
        len += snprintf(line + len, size - (size_t)len, " %s %llu", names[i], (unsigned long long)count_of(i));
    if (len > 0 && (size_t)len < size - 1) {
        line[len++] = '\n';
        (void)!write(STDERR_FILENO, line, (size_t)len);
    }
}

__attribute__((destructor)) static void report(void)
{
    const char *want = getenv("ALLOC_COUNT_REPORT");
    if (!want || want[0] != '1')
        return;
    char line[1024];
    int len = snprintf(line, sizeof line, "alloc_count: %llu allocator calls, %llu of 1 MiB or more;",
                       (unsigned long long)alloc_count_calls(), (unsigned long long)alloc_count_large());
    write_counts(line, sizeof line, len, NAMES, alloc_count_of, F_COUNT);
    write_counts(line, sizeof line, snprintf(line, sizeof line, "alloc_count: C++"), CXX_NAMES, alloc_count_cxx_of,
                 C_COUNT);
    const char *text = alloc_count_by_object();
    for (const char *end; *text; text = end + 1) {
        end = strchr(text, '\n');
        len = snprintf(line, sizeof line, "alloc_count: from %.*s\n", (int)(end - text), text);
        if (len > 0 && (size_t)len < sizeof line)
            (void)!write(STDERR_FILENO, line, (size_t)len);
    }
}
