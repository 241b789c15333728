/*
 * client_out.c - a job's messages to the daemon, queued (client_out.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "daemon/client_out.h"

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

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

tsl_status tsl__outq_flush(tsl__outq *q, int fd, int timeout_ms) {
    int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    while (q->off < q->len) {
        ssize_t k = send(fd, q->buf + q->off, q->len - q->off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0) {
            q->off += (size_t)k;
            if (q->report_at != SIZE_MAX && q->off > q->report_at) q->report_at = SIZE_MAX;
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (timeout_ms <= 0) return TSL_OK; /* the rest goes later */
            int64_t left = deadline - now_ms();
            if (left <= 0)
                return tsl_fail(TSL_ERR_TIMEOUT,
                                "the daemon has read nothing for %d ms (%zu bytes unsent)",
                                timeout_ms, q->len - q->off);
            struct pollfd p = {fd, POLLOUT, 0};
            if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
                return tsl_fail(TSL_ERR_IO, "waiting to send to the daemon: %s", strerror(errno));
            continue;
        }
        if (k < 0 && (errno == EPIPE || errno == ECONNRESET))
            return tsl_fail(TSL_ERR_IO, "the daemon closed the connection");
        return tsl_fail(TSL_ERR_IO, "sending to the daemon: %s", k < 0 ? strerror(errno) : "?");
    }
    tsl__outq_reset(q); /* all gone: the buffer is freed */
    return TSL_OK;
}
