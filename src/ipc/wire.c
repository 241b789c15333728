/*
 * wire.c - whole messages on a socket, with timeouts: sending (all bytes,
 * MSG_NOSIGNAL, resumed after EINTR and partial writes), sending ERROR,
 * and the blocking receive (the incremental reader, waited on until a
 * deadline).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ipc/ipc_internal.h"
#include "tensile/ipc.h"

tsl_status tsl_ipc_write(int fd, const uint8_t *b, size_t n, size_t *off, int timeout_ms,
                         const char *what) {
    int64_t deadline = tsl__ipc_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    while (*off < n) {
        ssize_t k = send(fd, b + *off, n - *off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0) {
            *off += (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (timeout_ms < 0) return TSL_OK; /* the rest goes later */
            int w = tsl__ipc_wait(fd, POLLOUT, deadline);
            if (w > 0) continue;
            if (w == 0)
                return tsl_fail(TSL_ERR_TIMEOUT,
                                "could not send %s within %d ms (%zu of %zu bytes sent)", what,
                                timeout_ms, *off, n);
        }
        if (k < 0 && (errno == EPIPE || errno == ECONNRESET))
            return tsl_fail(TSL_ERR_IO, "could not send %s: the peer closed the connection", what);
        return tsl_fail(TSL_ERR_IO, "could not send %s: %s", what, strerror(errno));
    }
    return TSL_OK;
}

static tsl_status send_all(int fd, const uint8_t *b, size_t n, int timeout_ms, const char *what) {
    size_t off = 0;
    return tsl_ipc_write(fd, b, n, &off, timeout_ms > 0 ? timeout_ms : 0, what);
}

tsl_status tsl_msg_send(int fd, const tsl_msg *m, int timeout_ms) {
    uint8_t *b;
    size_t n;
    tsl_status st = tsl_msg_encode(m, &b, &n);
    if (st != TSL_OK) return st;
    st = send_all(fd, b, n, timeout_ms, tsl_msg_type_name(m->type));
    free(b);
    return st;
}

tsl_status tsl_msg_sendf(int fd, int timeout_ms, tsl_msg_type type, const char *fmt, ...) {
    tsl_msg m;
    va_list ap;
    va_start(ap, fmt);
    tsl_status st = tsl__msg_vpack(&m, type, fmt, ap);
    va_end(ap);
    if (st == TSL_OK) st = tsl_msg_send(fd, &m, timeout_ms);
    tsl_msg_free(&m);
    return st;
}

tsl_status tsl_msg_send_error(int fd, tsl_msg_err code, const char *message, int timeout_ms) {
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", tsl_last_error());
    json_t *text = tsl_msg_text(message); /* before anything else records a message */
    tsl_status st;
    if (!text) {
        st = TSL_ERR_OOM;
    } else {
        if (code == TSL_MSG_ERR_NONE) code = TSL_MSG_ERR_INTERNAL;
        st = tsl_msg_sendf(fd, timeout_ms, TSL_MSG_ERROR, "{s:s, s:o}", "code",
                           tsl_msg_err_name(code), "message", text);
    }
    tsl_fail(st, "%s", saved);
    return st;
}

tsl_status tsl_msg_recv(int fd, int timeout_ms, tsl_msg *out, tsl_msg_err *code) {
    out->type = TSL_MSG_NONE;
    out->body = NULL;
    if (code) *code = TSL_MSG_ERR_NONE;
    tsl_msg_reader *r = tsl_msg_reader_new();
    if (!r) return tsl_fail(TSL_ERR_OOM, "out of memory for a message reader");
    int64_t deadline = tsl__ipc_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    tsl_status st;
    for (;;) {
        st = tsl_msg_reader_read(r, fd, out);
        if (st != TSL_OK || out->body) break;
        int w = tsl__ipc_wait(fd, POLLIN, deadline);
        if (w == 0) {
            st = tsl_fail(TSL_ERR_TIMEOUT, "no message within %d ms", timeout_ms);
            break;
        }
        if (w < 0) {
            st = tsl_fail(TSL_ERR_IO, "cannot wait for a message: %s", strerror(errno));
            break;
        }
    }
    if (code) *code = tsl_msg_reader_err(r);
    tsl_msg_reader_free(r);
    return st;
}
