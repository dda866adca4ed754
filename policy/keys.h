/* keys.h: the one table of policy keys. Each row drives the parser, the PINSHIM_<KEY>
 * environment override, the README's key table and `pinshim --help`.
 * X(type, name, default, choices (ENUM only, '|'-separated), one-line help)
 * Types: BOOL (on/off, 1/0, true/false, yes/no), SIZE (bytes, K/M/G suffixes, powers of 1024),
 * ENUM (one of the choices), STRING (free text). */
#ifndef PINSHIM_POLICY_KEYS_H
#define PINSHIM_POLICY_KEYS_H

#define PINSHIM_POLICY_KEYS(X)                                                                   \
    X(BOOL, intercept, "on", "",                                                               \
      "observe copies; off = pure pass-through: no wrappers handed out, no counting, no output") \
    X(ENUM, summary, "text", "text|json|none",                                                 \
      "exit summary: a table (text), one JSON object (json), or nothing (none)")              \
    X(STRING, log, "", "",                                                                     \
      "file the exit summary is appended to (%p pid, %h host, %r rank, %t start time, %% a %); empty = stderr") \
    X(BOOL, strict, "off", "",                                                                 \
      "exit with status 2 when the policy file or a PINSHIM_* value is invalid, instead of running with defaults")

#endif
