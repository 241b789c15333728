/*
 * json_util.h - what every strict JSON reader of tensile shares: naming a
 * value and its type in a message, and the "FILE: PATH: MESSAGE" error.
 */
#ifndef TSL_IO_JSON_UTIL_H
#define TSL_IO_JSON_UTIL_H
#include <jansson.h>
#include <stddef.h>
#include "tensile/status.h"

/* The value, compact, cut to about 60 characters, written into buf. */
const char *tsl__json_value_str(const json_t *v, char *buf, size_t n);
/* "an object", "a string", ... for messages. */
const char *tsl__json_type_name(const json_t *v);
/* Records "FILE: PATH: MESSAGE" as TSL_ERR_FORMAT and returns it. */
tsl_status tsl__json_bad(const char *file, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A string of 1 to maxlen-1 bytes without NUL characters, at `path` of
 * `file`; *out points into v. TSL_ERR_FORMAT naming the value otherwise. */
tsl_status tsl__json_get_name(const char *file, const char *path, json_t *v, size_t maxlen,
                              const char **out);
#endif
