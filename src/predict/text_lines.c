/*
 * text_lines.c - see text_lines.h.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predict/text_lines.h"
#include "tensile/ops.h"

void tsl__tl_init(tsl__tl *t, const char *text, size_t len, const char *name) {
    memset(t, 0, sizeof *t);
    t->name = name ? name : "(memory)";
    t->p = text;
    t->end = text + len;
}

tsl_status tsl__tl_fail(const tsl__tl *t, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tsl_fail(TSL_ERR_FORMAT, "%s:%ld: %s", t->name, t->line, msg);
}

int tsl__tl_next(tsl__tl *t) {
    while (t->p < t->end) {
        const char *nl = memchr(t->p, '\n', (size_t)(t->end - t->p));
        const char *e = nl ? nl : t->end;
        size_t len = (size_t)(e - t->p);
        t->line++;
        if (len >= sizeof t->buf) {
            tsl__tl_fail(t, "line of %zu bytes is longer than the limit of %zu", len,
                         sizeof t->buf - 1);
            return -1;
        }
        memcpy(t->buf, t->p, len);
        t->buf[len] = '\0';
        t->p = nl ? nl + 1 : t->end;
        if (len && t->buf[len - 1] == '\r') t->buf[--len] = '\0';
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)t->buf[i];
            if ((c < 32 && c != '\t') || c == 127) {
                tsl__tl_fail(t, "control character 0x%02x at column %zu", c, i + 1);
                return -1;
            }
        }
        t->n = 0;
        char *s = t->buf;
        for (;;) {
            while (*s == ' ' || *s == '\t') s++;
            if (!*s || *s == '#') break;
            if (t->n == TSL__TL_MAX_FIELDS) {
                tsl__tl_fail(t, "more than %d fields", TSL__TL_MAX_FIELDS);
                return -1;
            }
            t->f[t->n++] = s;
            while (*s && *s != ' ' && *s != '\t') s++;
            if (*s) *s++ = '\0';
        }
        if (t->n) return 1;
    }
    return 0;
}

tsl_status tsl__tl_num(tsl__tl *t, int i, const char *field, double *v) {
    if (i >= t->n) return tsl__tl_fail(t, "field '%s' is missing", field);
    char *e;
    errno = 0;
    double x = strtod(t->f[i], &e);
    if (e == t->f[i] || *e || !isfinite(x) || errno == ERANGE)
        return tsl__tl_fail(t, "field '%s' has value '%.40s', not a finite number", field, t->f[i]);
    *v = x;
    return TSL_OK;
}

tsl_status tsl__tl_int(tsl__tl *t, int i, const char *field, long lo, long hi, long *v) {
    if (i >= t->n) return tsl__tl_fail(t, "field '%s' is missing", field);
    char *e;
    errno = 0;
    long x = strtol(t->f[i], &e, 10);
    if (e == t->f[i] || *e || errno == ERANGE || x < lo || x > hi)
        return tsl__tl_fail(t, "field '%s' has value '%.40s', not an integer in [%ld, %ld]", field,
                            t->f[i], lo, hi);
    *v = x;
    return TSL_OK;
}

tsl_status tsl__tl_count(tsl__tl *t, int n, const char *what) {
    if (t->n != n)
        return tsl__tl_fail(t, "a '%s' line has %d fields, expected %d", what, t->n, n);
    return TSL_OK;
}

int tsl__op_type_by_name(const char *s, tsl_op_type *ty) {
    for (int k = 0; k < TSL_OP_COUNT; k++)
        if (!strcmp(s, tsl_op_type_name((tsl_op_type)k))) {
            *ty = (tsl_op_type)k;
            return 1;
        }
    return 0;
}
