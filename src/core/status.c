/* status.c - per-thread error messages. */
#include <stdarg.h>
#include <stdio.h>
#include "tensile/status.h"

static _Thread_local char tsl_errbuf[1024];

const char *tsl_status_str(tsl_status st) {
    switch (st) {
    case TSL_OK: return "ok";
    case TSL_ERR_OOM: return "out of memory";
    case TSL_ERR_INVALID: return "invalid argument";
    case TSL_ERR_IO: return "i/o error";
    case TSL_ERR_FORMAT: return "malformed input";
    case TSL_ERR_UNSUPPORTED: return "unsupported";
    case TSL_ERR_INTERNAL: return "internal library error";
    case TSL_ERR_BUSY: return "place still held";
    case TSL_ERR_BUDGET: return "budget not met";
    case TSL_ERR_TIMEOUT: return "timed out";
    }
    return "unknown status";
}

tsl_status tsl_fail(tsl_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tsl_errbuf, sizeof tsl_errbuf, fmt, ap);
    va_end(ap);
    return st;
}

const char *tsl_last_error(void) { return tsl_errbuf; }
void tsl_clear_error(void) { tsl_errbuf[0] = '\0'; }
