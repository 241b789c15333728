/* json_util.c - see json_util.h. */
#include "io/json_util.h"
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
    *out = json_string_value(v);
    return TSL_OK;
}
