/* json_util.c - see json_util.h. */
#include "io/json_util.h"
#include "io/read_file.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tsl__json_value_str(const json_t *v, char *buf, size_t n) {
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s) {
        snprintf(buf, n, "?");
        return buf;
    }
    if (strlen(s) > 60) snprintf(buf, n, "%.57s...", s);
    else snprintf(buf, n, "%s", s);
    free(s);
    return buf;
}

const char *tsl__json_type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return "?";
}

tsl_status tsl__json_bad(const char *file, const char *path, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tsl_fail(TSL_ERR_FORMAT, "%s: %s: %s", file, path, msg);
}

tsl_status tsl__json_get_name(const char *file, const char *path, json_t *v, size_t maxlen,
                              const char **out) {
    char vb[80];
    if (!json_is_string(v))
        return tsl__json_bad(file, path, "expected a string, got %s %s", tsl__json_type_name(v),
                             tsl__json_value_str(v, vb, sizeof vb));
    size_t len = json_string_length(v);
    if (len == 0 || len >= maxlen)
        return tsl__json_bad(file, path, "%s has %zu characters (expected 1 to %zu)",
                             tsl__json_value_str(v, vb, sizeof vb), len, maxlen - 1);
    if (strlen(json_string_value(v)) != len)
        return tsl__json_bad(file, path, "%s contains a NUL character",
                             tsl__json_value_str(v, vb, sizeof vb));
    for (const unsigned char *c = (const unsigned char *)json_string_value(v); *c; c++)
        if (*c < 0x20 || *c == 0x7f) /* names are printed: no terminal escapes */
            return tsl__json_bad(file, path, "%s contains a control character (0x%02x)",
                                 tsl__json_value_str(v, vb, sizeof vb), *c);
    *out = json_string_value(v);
    return TSL_OK;
}

void tsl__json_fmt_real(double x, char buf[32]) {
    for (int p = 15; p <= 17; p++) {
        snprintf(buf, 32, "%.*g", p, x);
        if (strtod(buf, NULL) == x) return;
    }
}

tsl_status tsl__json_get_time(const char *file, const char *path, json_t *v, double max_us,
                              double *out) {
    char vb[80], xb[32];
    if (!json_is_number(v))
        return tsl__json_bad(file, path, "expected a number, got %s %s", tsl__json_type_name(v),
                             tsl__json_value_str(v, vb, sizeof vb));
    double x = json_number_value(v);
    if (!isfinite(x))
        return tsl__json_bad(file, path, "%s is not finite", tsl__json_value_str(v, vb, sizeof vb));
    tsl__json_fmt_real(x, xb);
    if (x < 0) return tsl__json_bad(file, path, "%s is negative", xb);
    if (x > max_us) return tsl__json_bad(file, path, "%s us is absurd (limit %g us)", xb, max_us);
    *out = x == 0 ? 0.0 : x;
    return TSL_OK;
}

tsl_status tsl__json_read_file(const char *path, const char *what, long max, char **buf,
                               size_t *len) {
    return tsl__read_regular(path, what, (size_t)max, buf, len);
}

void tsl__json_put_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
    fputc('"', f);
}

void tsl__json_put_real(FILE *f, double x) {
    char b[32];
    tsl__json_fmt_real(x == 0 ? 0.0 : x, b);
    fputs(b, f);
}

tsl_status tsl__json_text(void (*put)(FILE *f, const void *ctx), const void *ctx,
                          const char *what, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    FILE *f = open_memstream(text, len);
    if (!f) return tsl_fail(TSL_ERR_OOM, "%s: out of host memory for its text", what);
    put(f, ctx);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        free(*text);
        *text = NULL;
        *len = 0;
        return tsl_fail(TSL_ERR_OOM, "%s: out of host memory for its text", what);
    }
    return TSL_OK;
}
