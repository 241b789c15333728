/*
 * json_util.h - what tensile's strict JSON readers and writers share:
 * naming a value and its type in a message, the "FILE: PATH: MESSAGE"
 * error, times, names, reading a whole file, writing strings and numbers.
 */
#ifndef TSL_IO_JSON_UTIL_H
#define TSL_IO_JSON_UTIL_H
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include "tensile/status.h"

/* The value, compact, cut to about 60 characters, written into buf. */
const char *tsl__json_value_str(const json_t *v, char *buf, size_t n);
/* "an object", "a string", ... for messages. */
const char *tsl__json_type_name(const json_t *v);
/* Records "FILE: PATH: MESSAGE" as TSL_ERR_FORMAT and returns it. */
tsl_status tsl__json_bad(const char *file, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A string of 1 to maxlen-1 bytes without NUL or other control characters
 * (names reach the terminal), at `path` of `file`; *out points into v.
 * TSL_ERR_FORMAT naming the value otherwise. */
tsl_status tsl__json_get_name(const char *file, const char *path, json_t *v, size_t maxlen,
                              const char **out);
/* A time in µs at `path`: a finite number in [0, max_us]; -0 becomes 0.
 * TSL_ERR_FORMAT naming the value otherwise. */
tsl_status tsl__json_get_time(const char *file, const char *path, json_t *v, double max_us,
                              double *out);
/* The whole of file `path` (a `what`, e.g. "plan", for messages; at most
 * max bytes) in *buf (malloc'd, NUL-terminated, *len bytes before the NUL):
 * tsl__read_regular (io/read_file.h), so a FIFO, a device or a folder is
 * refused at once. TSL_ERR_IO naming the path if it cannot be opened or
 * read, is not a regular file or is larger; TSL_ERR_OOM. */
tsl_status tsl__json_read_file(const char *path, const char *what, long max, char **buf,
                               size_t *len);
/* x in the shortest %g form (15 to 17 digits) that reads back to it. */
void tsl__json_fmt_real(double x, char buf[32]);
/* Writes s as a JSON string literal. */
void tsl__json_put_str(FILE *f, const char *s);
/* Writes finite x in the shortest form that reads back to it (-0 as 0). */
void tsl__json_put_real(FILE *f, double x);
/* The text put(f, ctx) writes, in *text (malloc'd, NUL-terminated), *len
 * bytes before the NUL; `what` names it in the message. TSL_ERR_OOM (*text
 * NULL then). */
tsl_status tsl__json_text(void (*put)(FILE *f, const void *ctx), const void *ctx,
                          const char *what, char **text, size_t *len);
#endif
