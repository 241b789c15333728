/*
 * client_out.c - a job's messages to the daemon, queued (client_out.h).
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/client_out.h"
#include "tensile/ipc.h"

void tsl__outq_reset(tsl__outq *q) {
    free(q->buf);
    q->buf = NULL;
    q->len = q->off = 0;
    q->report_at = SIZE_MAX;
}

size_t tsl__outq_pending(const tsl__outq *q) { return q->len - q->off; }

tsl_status tsl__outq_put(tsl__outq *q, const uint8_t *b, size_t n, int replaceable) {
    size_t keep = q->len;
    if (replaceable && q->report_at != SIZE_MAX) keep = q->report_at; /* the stale REPORT goes */
    if (keep - q->off + n > TSL__OUTQ_MAX)
        return tsl_fail(TSL_ERR_IO, "more than %zu MiB unsent: the daemon reads nothing",
                        TSL__OUTQ_MAX >> 20);
    uint8_t *nb = realloc(q->buf, keep + n);
    if (!nb) return tsl_fail(TSL_ERR_OOM, "out of host memory for a message to the daemon");
    memcpy(nb + keep, b, n);
    q->buf = nb;
    q->len = keep + n;
    q->report_at = replaceable ? keep : SIZE_MAX;
    return TSL_OK;
}

tsl_status tsl__outq_flush(tsl__outq *q, int fd, int timeout_ms) {
    tsl_status st = tsl_ipc_write(fd, q->buf, q->len, &q->off, timeout_ms > 0 ? timeout_ms : -1,
                                  "messages to the daemon");
    if (q->report_at != SIZE_MAX && q->off > q->report_at) q->report_at = SIZE_MAX; /* begun */
    if (st == TSL_OK && q->off == q->len) tsl__outq_reset(q); /* all gone: the buffer is freed */
    return st;
}
