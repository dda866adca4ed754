/* policy.c: the parser behind policy.h. Walks the key table for parsing, environment overrides
 * and formatting, so a new key is one row in keys.h and nothing else. */
#include "policy.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/common.h"

extern char **environ;

enum key_type { KEY_BOOL, KEY_SIZE, KEY_COUNT, KEY_ENUM, KEY_STRING };

struct key_desc {
    enum key_type type;
    const char *name;
    const char *def;
    const char *choices;
    const char *help;
    size_t offset;
};

static const struct key_desc keys[] = {
#define X(type, name, def, choices, help) {KEY_##type, #name, def, choices, help, offsetof(struct policy, name)},
    PINSHIM_POLICY_KEYS(X)
#undef X
};
#define N_KEYS (sizeof keys / sizeof keys[0])

/* Before policy_load() runs (another library's constructor may call dlsym first) only
 * `intercept` is consulted; it starts at its default, on. */
struct policy pinshim_policy = {.intercept = true};

static const char *type_expectation(const struct key_desc *k)
{
    switch (k->type) {
    case KEY_BOOL: return "on or off (also 1/0, true/false, yes/no)";
    case KEY_SIZE: return "a byte count, optionally with a K, M or G suffix (e.g. 256K)";
    case KEY_COUNT: return "a whole number (e.g. 8)";
    case KEY_ENUM: return k->choices[0] ? k->choices : "?";
    case KEY_STRING: return "text";
    }
    return "?";
}

static bool parse_bool(const char *v, bool *out)
{
    static const char *yes[] = {"on", "1", "true", "yes"}, *no[] = {"off", "0", "false", "no"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) { *out = true; return true; }
        if (strcasecmp(v, no[i]) == 0) { *out = false; return true; }
    }
    return false;
}

static bool parse_size(const char *v, uint64_t *out)
{
    if (!isdigit((unsigned char)*v))
        return false;
    errno = 0;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno)
        return false;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    default: break;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0' || (shift && n > (UINT64_MAX >> shift)))
        return false;
    *out = (uint64_t)n << shift;
    return true;
}

static bool parse_count(const char *v, uint64_t *out)
{
    if (!isdigit((unsigned char)*v))
        return false;
    errno = 0;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end != '\0')
        return false;
    *out = n;
    return true;
}

static int parse_enum(const char *v, const char *choices)
{
    int index = 0;
    size_t vlen = strlen(v);
    for (const char *c = choices; *c; index++) {
        size_t len = strcspn(c, "|");
        if (len == vlen && strncasecmp(c, v, len) == 0)
            return index;
        c += len + (c[len] == '|');
    }
    return -1;
}

/* Stores value into p for key k; returns false when the value does not fit the key's type. */
static bool set_value(struct policy *p, const struct key_desc *k, const char *value)
{
    char *field = (char *)p + k->offset;
    switch (k->type) {
    case KEY_BOOL: return parse_bool(value, (bool *)field);
    case KEY_SIZE: return parse_size(value, (uint64_t *)field);
    case KEY_COUNT: return parse_count(value, (uint64_t *)field);
    case KEY_ENUM: {
        int e = parse_enum(value, k->choices);
        if (e < 0)
            return false;
        *(int *)field = e;
        return true;
    }
    case KEY_STRING:
        if (strlen(value) >= POLICY_STRING_MAX)
            return false;
        strcpy(field, value);
        return true;
    }
    return false;
}

static const struct key_desc *find_key(const char *name, size_t len)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (strlen(keys[i].name) == len && strncmp(keys[i].name, name, len) == 0)
            return &keys[i];
    return NULL;
}

static void known_keys(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_KEYS && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", keys[i].name);
}

void policy_set_defaults(struct policy *p)
{
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < N_KEYS; i++)
        if (!set_value(p, &keys[i], keys[i].def))
            pinshim_warn("internal error: default of key '%s' is invalid", keys[i].name);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

int policy_parse_text(struct policy *p, const char *text, const char *origin)
{
    int errors = 0, lineno = 0;
    const char *line = text;
    while (*line) {
        size_t len = strcspn(line, "\n");
        char buf[POLICY_STRING_MAX + 256];
        lineno++;
        if (len >= sizeof buf) {
            pinshim_warn("policy error: %s:%d: line too long (at most %zu characters)", origin, lineno,
                         sizeof buf - 1);
            errors++;
        } else {
            memcpy(buf, line, len);
            buf[len] = '\0';
            char *hash = strchr(buf, '#');
            if (hash)
                *hash = '\0';
            char *s = trim(buf);
            if (*s) {
                char *eq = strchr(s, '=');
                if (!eq) {
                    pinshim_warn("policy error: %s:%d: '%s' is not a 'key = value' line", origin, lineno, s);
                    errors++;
                } else {
                    *eq = '\0';
                    char *key = trim(s), *value = trim(eq + 1);
                    const struct key_desc *k = find_key(key, strlen(key));
                    if (!k) {
                        char names[256];
                        known_keys(names, sizeof names);
                        pinshim_warn("policy error: %s:%d: unknown key '%s' (known keys: %s)", origin, lineno,
                                     key, names);
                        errors++;
                    } else if (!set_value(p, k, value)) {
                        pinshim_warn("policy error: %s:%d: key '%s': value '%s' is not valid (expected %s%s)",
                                     origin, lineno, key, value, k->type == KEY_ENUM ? "one of " : "", type_expectation(k));
                        errors++;
                    }
                }
            }
        }
        line += len + (line[len] == '\n');
    }
    return errors;
}

static const struct policy_preset *find_preset(const char *name)
{
    for (size_t i = 0; i < policy_preset_count; i++)
        if (strcmp(policy_presets[i].name, name) == 0)
            return &policy_presets[i];
    return NULL;
}

static void preset_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < policy_preset_count && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", policy_presets[i].name);
}

/* Reads a whole policy file (at most 1 MiB). Returns malloc'd text or NULL with a message. */
static char *read_policy_file(const char *path)
{
    char presets[128];
    preset_names(presets, sizeof presets);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        pinshim_warn("policy error: PINSHIM_POLICY='%s': cannot read it: %s (expected a readable policy file "
                     "or a preset: %s)", path, strerror(errno), presets);
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
        pinshim_warn("policy error: PINSHIM_POLICY='%s': not a regular file of at most 1 MiB (expected a "
                     "policy file or a preset: %s)", path, presets);
        close(fd);
        return NULL;
    }
    char *text = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (text && got < (size_t)st.st_size) {
        ssize_t n = read(fd, text + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (!text || got != (size_t)st.st_size) {
        pinshim_warn("policy error: PINSHIM_POLICY='%s': read failed", path);
        free(text);
        return NULL;
    }
    text[got] = '\0';
    return text;
}

static int load_policy_source(struct policy *p, const char *source)
{
    const struct policy_preset *preset = strchr(source, '/') ? NULL : find_preset(source);
    if (preset) {
        char origin[64];
        snprintf(origin, sizeof origin, "preset '%s'", preset->name);
        return policy_parse_text(p, preset->text, origin);
    }
    char *text = read_policy_file(source);
    if (!text)
        return 1;
    int errors = policy_parse_text(p, text, source);
    free(text);
    return errors;
}

static void env_name(const struct key_desc *k, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "PINSHIM_%s", k->name);
    for (size_t i = 8; i < n && i < len; i++)
        buf[i] = (char)toupper((unsigned char)buf[i]);
}

static int apply_environment(struct policy *p)
{
    int errors = 0;
    for (size_t i = 0; i < N_KEYS; i++) {
        char name[96];
        env_name(&keys[i], name, sizeof name);
        const char *value = getenv(name);
        if (value && !set_value(p, &keys[i], value)) {
            pinshim_warn("policy error: %s='%s' is not valid (expected %s%s)", name, value,
                         keys[i].type == KEY_ENUM ? "one of " : "", type_expectation(&keys[i]));
            errors++;
        }
    }
    return errors;
}

/* Levenshtein distance, bounded to short names: used only to suggest a fix for a typo. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[96];
    if (la >= 95 || lb >= 95)
        return 99;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static void warn_unknown_variables(void)
{
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "PINSHIM_", 8) != 0)
            continue;
        size_t len = strcspn(*e, "=");
        char name[96];
        if (len >= sizeof name)
            len = sizeof name - 1;
        memcpy(name, *e, len);
        name[len] = '\0';
        if (strcmp(name, "PINSHIM_POLICY") == 0)
            continue;
        const char *closest = "PINSHIM_POLICY";
        size_t best = edit_distance(name, closest);
        bool known = false;
        char candidate[96];
        for (size_t i = 0; i < N_KEYS && !known; i++) {
            env_name(&keys[i], candidate, sizeof candidate);
            size_t d = edit_distance(name, candidate);
            known = d == 0;
            if (d < best) {
                best = d;
                closest = keys[i].name;
            }
        }
        if (known)
            continue;
        if (best <= 3) {
            if (strcmp(closest, "PINSHIM_POLICY") == 0)
                pinshim_warn("warning: unknown environment variable %s ignored (did you mean PINSHIM_POLICY?)",
                             name);
            else {
                env_name(find_key(closest, strlen(closest)), candidate, sizeof candidate);
                pinshim_warn("warning: unknown environment variable %s ignored (did you mean %s?)", name,
                             candidate);
            }
        } else {
            pinshim_warn("warning: unknown environment variable %s ignored (see `pinshim --help` for the keys)",
                         name);
        }
    }
}

int policy_load(void)
{
    struct policy p;
    policy_set_defaults(&p);
    int errors = 0;
    const char *source = getenv("PINSHIM_POLICY");
    if (source && *source)
        errors += load_policy_source(&p, source);
    errors += apply_environment(&p);
    warn_unknown_variables();
    if (errors) {
        if (p.strict) {
            pinshim_warn("policy error: strict mode: exiting with status 2");
            _exit(2);
        }
        pinshim_warn("policy error: ignoring the policy; running with the defaults (copies pass through "
                     "unchanged and are counted)");
        policy_set_defaults(&p);
    }
    pinshim_policy = p;
    return errors;
}

size_t policy_format(const struct policy *p, char *buf, size_t len)
{
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < N_KEYS && used < len; i++) {
        const struct key_desc *k = &keys[i];
        const char *field = (const char *)p + k->offset;
        char value[POLICY_STRING_MAX];
        switch (k->type) {
        case KEY_BOOL: snprintf(value, sizeof value, "%s", *(const bool *)field ? "on" : "off"); break;
        case KEY_SIZE:
        case KEY_COUNT: snprintf(value, sizeof value, "%llu", (unsigned long long)*(const uint64_t *)field); break;
        case KEY_STRING: snprintf(value, sizeof value, "%s", field); break;
        case KEY_ENUM: {
            int want = *(const int *)field, index = 0;
            const char *c = k->choices;
            value[0] = '\0';
            while (*c) {
                size_t l = strcspn(c, "|");
                if (index++ == want) {
                    snprintf(value, sizeof value, "%.*s", (int)l, c);
                    break;
                }
                c += l + (c[l] == '|');
            }
            break;
        }
        }
        used += (size_t)snprintf(buf + used, len - used, "%s = %s\n", k->name, value);
    }
    return used < len ? used : len;
}
