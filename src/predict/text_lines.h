/*
 * text_lines.h - the line reader both predictor file formats share
 * (samples.c, predictor_file.c): lines of whitespace-separated fields,
 * '#' comments and blank lines skipped, every fault a message naming the
 * file, the line, the field and the value.
 */
#ifndef TSL_PREDICT_TEXT_LINES_H
#define TSL_PREDICT_TEXT_LINES_H
#include <stddef.h>
#include "tensile/graph.h"
#include "tensile/status.h"

#define TSL__TL_MAX_FIELDS 64

typedef struct tsl__tl {
    const char *name;          /* the file, in messages */
    const char *p, *end;       /* what is left */
    long line;                 /* of the current line, 1-based */
    int n;                     /* fields of the current line */
    char buf[4096];            /* the current line, NUL-separated fields */
    const char *f[TSL__TL_MAX_FIELDS];
} tsl__tl;

void tsl__tl_init(tsl__tl *t, const char *text, size_t len, const char *name);
/* Next non-blank, non-comment line split into fields: 1; 0 at the end;
 * -1 (TSL_ERR_FORMAT recorded) for a line over 4095 bytes, with more than
 * 64 fields or holding a NUL or a control character. */
int tsl__tl_next(tsl__tl *t);
/* Field i as a finite double (TSL_ERR_FORMAT naming `field` otherwise). */
tsl_status tsl__tl_num(tsl__tl *t, int i, const char *field, double *v);
/* Field i as an integer in [lo, hi]. */
tsl_status tsl__tl_int(tsl__tl *t, int i, const char *field, long lo, long hi, long *v);
/* Requires exactly n fields (`what` names the line's kind). */
tsl_status tsl__tl_count(tsl__tl *t, int n, const char *what);
/* The op type named s: 1 and *ty, or 0. */
int tsl__op_type_by_name(const char *s, tsl_op_type *ty);
/* A TSL_ERR_FORMAT message "NAME:LINE: ..." */
tsl_status tsl__tl_fail(const tsl__tl *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#endif
