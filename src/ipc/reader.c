/*
 * reader.c - the incremental reader of one connection: bytes in as they
 * arrive, whole validated messages out, for a poll loop (and, through
 * tsl_msg_recv, for blocking reads).
 *
 * It takes at most what the message being read still lacks: the 16 bytes
 * of the header, then exactly the payload length the header declared once
 * the header has been checked (that length against its type's limit
 * first). The payload buffer grows with the bytes that arrive (64 KiB,
 * then doubling up to the declared length), so a peer that declares 16 MiB
 * and sends nothing costs nothing. After an error the reader stays failed
 * and keeps the error's message and code.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ipc/ipc_internal.h"
#include "tensile/ipc.h"

#define FIRST_CHUNK ((size_t)64 << 10)

enum { R_HEADER, R_PAYLOAD, R_FAILED };

struct tsl_msg_reader {
    int state;
    uint8_t hdr[TSL_MSG_HEADER_BYTES];
    size_t have; /* bytes of the header (R_HEADER) or of the payload (R_PAYLOAD) */
    tsl_msg_header h;
    char *buf;  /* the payload so far, cap bytes allocated */
    size_t cap;
    tsl_status st; /* R_FAILED: the error, its code and its message */
    tsl_msg_err code;
    char msg[1024];
};

tsl_msg_reader *tsl_msg_reader_new(void) { return calloc(1, sizeof(tsl_msg_reader)); }

void tsl_msg_reader_free(tsl_msg_reader *r) {
    if (!r) return;
    free(r->buf);
    free(r);
}

tsl_msg_err tsl_msg_reader_err(const tsl_msg_reader *r) {
    return r->state == R_FAILED ? r->code : TSL_MSG_ERR_NONE;
}

size_t tsl_msg_reader_held(const tsl_msg_reader *r) {
    return r->state == R_PAYLOAD ? TSL_MSG_HEADER_BYTES + r->cap : r->have;
}

static void drop_payload(tsl_msg_reader *r) {
    free(r->buf);
    r->buf = NULL;
    r->cap = 0;
}

/* Records the error of tsl_last_error() (status st, code) and fails r. */
static tsl_status fail(tsl_msg_reader *r, tsl_status st, tsl_msg_err code) {
    drop_payload(r);
    if (r->state == R_PAYLOAD) r->have = TSL_MSG_HEADER_BYTES; /* held: the header */
    r->state = R_FAILED;
    r->st = st;
    r->code = code;
    snprintf(r->msg, sizeof r->msg, "%s", tsl_last_error());
    return st;
}

static tsl_status failed_again(const tsl_msg_reader *r) { return tsl_fail(r->st, "%s", r->msg); }

/* Where the next bytes go (*at) and how many may go there now (*room > 0). */
static tsl_status space(tsl_msg_reader *r, uint8_t **at, size_t *room) {
    if (r->state == R_HEADER) {
        *at = r->hdr + r->have;
        *room = TSL_MSG_HEADER_BYTES - r->have;
        return TSL_OK;
    }
    if (r->have == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : FIRST_CHUNK;
        if (cap > r->h.length) cap = r->h.length;
        char *b = realloc(r->buf, cap);
        if (!b)
            return fail(r,
                        tsl_fail(TSL_ERR_OOM, "%s: out of memory for a payload of %u bytes",
                                 tsl_msg_type_name(r->h.type), (unsigned)r->h.length),
                        TSL_MSG_ERR_INTERNAL);
        r->buf = b;
        r->cap = cap;
    }
    *at = (uint8_t *)r->buf + r->have;
    *room = r->cap - r->have;
    return TSL_OK;
}

/* n more bytes have been put where space() said: checks the header once
 * it is whole, and hands over the message once its payload is. */
static tsl_status commit(tsl_msg_reader *r, size_t n, tsl_msg *out) {
    r->have += n;
    if (r->state == R_HEADER) {
        if (r->have < TSL_MSG_HEADER_BYTES) return TSL_OK;
        tsl_msg_err code;
        tsl_status st = tsl_msg_header_decode(r->hdr, &r->h, &code);
        if (st != TSL_OK) return fail(r, st, code);
        r->state = R_PAYLOAD;
        r->have = 0;
    }
    if (r->have < r->h.length) return TSL_OK;
    json_t *body;
    tsl_status st = tsl_msg_parse_payload(r->h.type, r->buf, r->h.length, &body);
    if (st != TSL_OK)
        return fail(r, st, st == TSL_ERR_OOM ? TSL_MSG_ERR_INTERNAL : TSL_MSG_ERR_BAD_MESSAGE);
    drop_payload(r);
    r->state = R_HEADER;
    r->have = 0;
    out->type = r->h.type;
    out->body = body;
    return TSL_OK;
}

tsl_status tsl_msg_reader_feed(tsl_msg_reader *r, const void *data, size_t n, size_t *used,
                               tsl_msg *out) {
    *used = 0;
    out->type = TSL_MSG_NONE;
    out->body = NULL;
    if (r->state == R_FAILED) return failed_again(r);
    while (*used < n) {
        uint8_t *at = NULL; /* set by space() on TSL_OK (gcc -O3 cannot see it) */
        size_t room = 0;
        tsl_status st = space(r, &at, &room);
        if (st != TSL_OK) return st;
        if (room > n - *used) room = n - *used;
        memcpy(at, (const uint8_t *)data + *used, room);
        *used += room;
        st = commit(r, room, out);
        if (st != TSL_OK || out->body) return st;
    }
    return TSL_OK;
}

/* The peer closed the connection: where the reader was. */
static tsl_status closed(tsl_msg_reader *r) {
    if (r->state == R_HEADER && r->have == 0)
        tsl_fail(TSL_ERR_IO, "the peer closed the connection");
    else if (r->state == R_HEADER)
        tsl_fail(TSL_ERR_IO, "the peer closed the connection in the middle of a message header "
                             "(%zu of %d bytes)", r->have, TSL_MSG_HEADER_BYTES);
    else
        tsl_fail(TSL_ERR_IO,
                 "the peer closed the connection in the middle of a %s (%zu of %u payload "
                 "bytes)",
                 tsl_msg_type_name(r->h.type), r->have, (unsigned)r->h.length);
    return fail(r, TSL_ERR_IO, TSL_MSG_ERR_NONE);
}

tsl_status tsl_msg_reader_read(tsl_msg_reader *r, int fd, tsl_msg *out) {
    out->type = TSL_MSG_NONE;
    out->body = NULL;
    if (r->state == R_FAILED) return failed_again(r);
    for (;;) {
        uint8_t *at = NULL; /* set by space() on TSL_OK (gcc -O3 cannot see it) */
        size_t room = 0;
        tsl_status st = space(r, &at, &room);
        if (st != TSL_OK) return st;
        ssize_t k = recv(fd, at, room, MSG_DONTWAIT);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return TSL_OK;
        if (k < 0) {
            tsl_fail(TSL_ERR_IO, "cannot read from the connection: %s", strerror(errno));
            return fail(r, TSL_ERR_IO, TSL_MSG_ERR_NONE);
        }
        if (k == 0) return closed(r);
        st = commit(r, (size_t)k, out);
        if (st != TSL_OK || out->body) return st;
    }
}
