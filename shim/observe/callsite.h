/* callsite.h: where in the program a copy was made, and what each such place copied.
 * A call site is the first stack frame outside the shim, libcuda and libcudart (and outside
 * functions named cuda* / __cuda*, which is how a statically linked CUDA runtime shows up), named
 * by its module's basename and the offset of the call instruction in it ("app+0x1234"), plus the
 * symbol when the module exports one (link the program with -rdynamic to see static functions).
 * In a CPython process the site also carries the Python line the copy was made from (pysite.h):
 * sites are then (native site, Python site) pairs, each with its own totals.
 * Contract: callsite_init() runs once, from the constructor, before any copy (it loads the unwinder
 * so that no later capture allocates). callsite_capture() and callsite_add() are thread-safe and
 * lock-free: one unwind that stops at the first program frame, one hash probe per frame (return
 * addresses are classified once and cached). A site pointer stays valid for the process's life.
 * The readers (callsite_top, callsite_json_top) take a snapshot that may miss copies in flight. */
#ifndef PINSHIM_CALLSITE_H
#define PINSHIM_CALLSITE_H

#include <stddef.h>
#include <stdint.h>

#include "base/copy_desc.h"
#include "jbuf.h"

struct callsite;

/* Per-site totals of successful copies. pageable_* cover copies of pageable memory the driver made
 * (action pass); shim_* those of pageable memory the shim staged or sent from its registration, by
 * action (ACTION_STAGED, ACTION_REGISTERED; index ACTION_PASS unused) and direction (0 h2d, 1 d2h). */
struct callsite_totals {
    uint64_t count, bytes, host_ns;
    uint64_t kinds[KIND_COUNT];
    uint64_t pageable_count, pageable_h2d_bytes, pageable_d2h_bytes, pageable_ns;
    uint64_t shim_count[ACTION_COUNT], shim_bytes[ACTION_COUNT][2], shim_ns[ACTION_COUNT];
};

void callsite_init(void);

/* The calling copy's site, or NULL when the stack shows none (or the site table is full). */
const struct callsite *callsite_capture(void);

/* Adds one successful copy to its site's totals. */
void callsite_add(const struct callsite *s, const struct copy *c, uint64_t host_ns);

/* Appends "site":"<module>+0x<offset>","func":"<symbol>"|null, then ,"py_site":"<file>:<line>",
 * "py_func":"<function>" when the site has a Python site (async-signal-safe). NULL site:
 * "site":null,"func":null. */
void callsite_json_fields(struct jbuf *jb, const struct callsite *s);

/* Fills out[] with up to max sites, most host time first, and their totals. Returns how many. */
size_t callsite_top(const struct callsite **out, struct callsite_totals *totals, size_t max);

/* The site as text, "func (module+0xoffset)" or "module+0xoffset", preceded by
 * "<file>:<line> in <function> via " when it has a Python site, into buf. */
const char *callsite_text(const struct callsite *s, char *buf, size_t len);

/* Appends the site as callsite_text() writes it (async-signal-safe). */
void callsite_append_text(struct jbuf *jb, const struct callsite *s);

/* Appends the summary's "sites" array value: the top max sites by host time (async-signal-safe). */
void callsite_json_top(struct jbuf *jb, size_t max);

/* The site's module (observe/modules.h), -1 when unknown. */
int callsite_module(const struct callsite *s);

/* Forked child: zero every site's totals (the classification stays valid). One thread alive. */
void callsite_fork_child(void);

#endif
