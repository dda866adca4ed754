/* policy.h: the policy in effect, parsed from defaults, then PINSHIM_POLICY (a file or a preset),
 * then PINSHIM_<KEY> environment variables, in that order of precedence (last wins).
 * Contract: policy_load() is called once, from the library constructor, before any thread of the
 * shim exists; afterwards `pinshim_policy` is read-only and may be read from any thread.
 * Every error is printed as "pinshim: policy error: <origin>:<line>: ..." naming the key, the
 * value and what was expected; after any error the defaults are used (or exit(2) when strict). */
#ifndef PINSHIM_POLICY_H
#define PINSHIM_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keys.h"

#define POLICY_STRING_MAX 1024

#define POLICY_FIELD_BOOL(name) bool name;
#define POLICY_FIELD_SIZE(name) uint64_t name;
#define POLICY_FIELD_COUNT(name) uint64_t name;
#define POLICY_FIELD_ENUM(name) int name;
#define POLICY_FIELD_STRING(name) char name[POLICY_STRING_MAX];

struct policy {
#define X(type, name, def, choices, help) POLICY_FIELD_##type(name)
    PINSHIM_POLICY_KEYS(X)
#undef X
};

/* Values of the ENUM keys, in the order of their choices string. */
enum { SUMMARY_TEXT, SUMMARY_JSON, SUMMARY_NONE };
enum { SYNC_TIMING_ADAPTIVE, SYNC_TIMING_ALL };

extern struct policy pinshim_policy;

/* Loads the policy from the environment (see above). Returns the number of errors reported. */
int policy_load(void);

/* Parses `key = value` lines from text into p. `origin` names the source in messages.
 * Returns the number of errors (each already printed). Used for files, presets and tests. */
int policy_parse_text(struct policy *p, const char *text, const char *origin);

/* Sets p to the table's defaults. */
void policy_set_defaults(struct policy *p);

/* Writes "key = value" lines for the policy in effect into buf (for logs and --help). */
size_t policy_format(const struct policy *p, char *buf, size_t len);

/* Embedded presets (generated from policy/<name>.conf at build time). */
struct policy_preset {
    const char *name;
    const char *text;
};
extern const struct policy_preset policy_presets[];
extern const size_t policy_preset_count;

#endif
