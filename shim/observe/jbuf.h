/* jbuf.h: appending JSON pieces to a fixed buffer, for the log's records.
 * Contract: no allocation, no locale, no stdio: every function here is async-signal-safe, so the
 * signal-time flush can format records with them. A piece that does not fit is cut off and the
 * buffer marked full (jb->full); callers check it and never write a cut line. */
#ifndef PINSHIM_JBUF_H
#define PINSHIM_JBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct jbuf {
    char *p;
    size_t len, cap;
    bool full;
};

static inline void jb_init(struct jbuf *jb, char *p, size_t cap)
{
    jb->p = p;
    jb->len = 0;
    jb->cap = cap;
    jb->full = false;
}

static inline void jb_raw(struct jbuf *jb, const char *s, size_t n)
{
    if (jb->len + n > jb->cap) {
        jb->full = true;
        return;
    }
    memcpy(jb->p + jb->len, s, n);
    jb->len += n;
}

static inline void jb_lit(struct jbuf *jb, const char *s) { jb_raw(jb, s, strlen(s)); }

static inline void jb_u64(struct jbuf *jb, uint64_t v)
{
    char tmp[24];
    size_t n = sizeof tmp;
    do {
        tmp[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    jb_raw(jb, tmp + n, sizeof tmp - n);
}

static inline void jb_i64(struct jbuf *jb, int64_t v)
{
    if (v < 0) {
        jb_raw(jb, "-", 1);
        jb_u64(jb, (uint64_t)0 - (uint64_t)v);
    } else {
        jb_u64(jb, (uint64_t)v);
    }
}

static inline void jb_hex(struct jbuf *jb, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char tmp[20];
    size_t n = sizeof tmp;
    do {
        tmp[--n] = digits[v & 15];
        v >>= 4;
    } while (v);
    jb_raw(jb, "0x", 2);
    jb_raw(jb, tmp + n, sizeof tmp - n);
}

/* A JSON string literal, quotes included; control characters as \u00XX. */
static inline void jb_str(struct jbuf *jb, const char *s)
{
    static const char digits[] = "0123456789abcdef";
    jb_raw(jb, "\"", 1);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            char esc[2] = {'\\', (char)ch};
            jb_raw(jb, esc, 2);
        } else if (ch < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', digits[ch >> 4], digits[ch & 15]};
            jb_raw(jb, esc, 6);
        } else {
            jb_raw(jb, (const char *)&ch, 1);
        }
    }
    jb_raw(jb, "\"", 1);
}

/* "key": with the separator before it unless first. */
static inline void jb_key(struct jbuf *jb, const char *key, bool first)
{
    if (!first)
        jb_raw(jb, ",", 1);
    jb_str(jb, key);
    jb_raw(jb, ":", 1);
}

#endif
