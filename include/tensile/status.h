/*
 * tensile/status.h - the two tiers of errors.
 *
 * Bugs (broken preconditions) abort through TSL_ASSERT (see src/core/assert.h).
 * Everything a caller can meet - out of device memory, a bad file, a bad
 * argument - is returned as a tsl_status, and a human-readable message that
 * names the input, the field and the value at fault is kept per thread.
 *
 * Example usage:
 *
 *   tsl_status st = tsl_idx_load("train-images.gz", &images);
 *   if (st != TSL_OK) {
 *       fprintf(stderr, "tensile: %s\n", tsl_last_error());
 *       return 1;
 *   }
 */
#ifndef TENSILE_STATUS_H
#define TENSILE_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tsl_status {
    TSL_OK = 0,
    TSL_ERR_OOM,         /* device arena (or host) out of memory          */
    TSL_ERR_INVALID,     /* bad argument, bad shape, bad value            */
    TSL_ERR_IO,          /* a file could not be opened, read or written   */
    TSL_ERR_FORMAT,      /* a file or message is malformed                */
    TSL_ERR_UNSUPPORTED, /* valid request this build/backend cannot serve */
    TSL_ERR_INTERNAL,    /* a library (oneDNN, BLAS, zlib) failed         */
    TSL_ERR_BUSY,        /* a planned place is still held: wait and retry */
    TSL_ERR_BUDGET,      /* a plan was made but does not fit its budget   */
    TSL_ERR_TIMEOUT,     /* a peer or a wait did not answer in time       */
} tsl_status;

/* Short constant name of a status ("out of memory", ...). Never NULL. */
const char *tsl_status_str(tsl_status st);

/* Record the message for the calling thread and return `st` unchanged, so
 * that a function can `return tsl_fail(TSL_ERR_IO, "...", ...)`. */
tsl_status tsl_fail(tsl_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The last message recorded on this thread ("" if none). Valid until the
 * next tsl_fail on the same thread. */
const char *tsl_last_error(void);

/* Forget the message of this thread. */
void tsl_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
