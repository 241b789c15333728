/*
 * msg.c - a message as bytes and back: the payload parsed strictly (no NUL
 * byte, one object, no duplicate key, nothing after it) and validated
 * against its type; whole messages encoded and decoded; messages built
 * from json_pack formats; the accessors of a validated message.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/ipc_internal.h"
#include "tensile/ipc.h"

static void set_code(tsl_msg_err *code, tsl_msg_err c) {
    if (code) *code = c;
}

/* v (a new reference, or NULL) validated as a `type` body: *out = v, or v
 * dropped and *out NULL. */
static tsl_status adopt(tsl_msg_type type, json_t *v, json_t **out) {
    tsl_status st = tsl_msg_validate(type, v);
    if (st != TSL_OK) {
        json_decref(v);
        v = NULL;
    }
    *out = v;
    return st;
}

static tsl_status too_large(tsl_msg_type type, size_t len) {
    return tsl_fail(TSL_ERR_FORMAT,
                    "%s: payload of %zu bytes is over the limit of %zu bytes for %s",
                    tsl_msg_type_name(type), len, tsl_msg_limit(type), tsl_msg_type_name(type));
}

tsl_status tsl_msg_parse_payload(tsl_msg_type type, const char *payload, size_t len,
                                 json_t **body) {
    *body = NULL;
    const char *name = tsl_msg_type_name(type);
    if (tsl_msg_limit(type) == 0)
        return tsl_fail(TSL_ERR_FORMAT, "message: unknown message type %d", (int)type);
    if (len > tsl_msg_limit(type)) return too_large(type, len);
    const char *nul = len ? memchr(payload, '\0', len) : NULL;
    if (nul)
        return tsl_fail(TSL_ERR_FORMAT, "%s: the payload holds a NUL byte at offset %zu", name,
                        (size_t)(nul - payload));
    json_error_t e;
    json_t *v = json_loadb(len ? payload : "", len, JSON_REJECT_DUPLICATES, &e);
    if (!v) {
        if (json_error_code(&e) == json_error_out_of_memory)
            return tsl_fail(TSL_ERR_OOM, "%s: out of memory parsing a payload of %zu bytes", name,
                            len);
        char why[sizeof e.text];
        tsl__ipc_clean(why, sizeof why, e.text, strlen(e.text)); /* it may quote the input */
        return tsl_fail(TSL_ERR_FORMAT, "%s: invalid JSON at line %d, column %d: %s", name, e.line,
                        e.column, why);
    }
    return adopt(type, v, body);
}

tsl_status tsl__msg_vpack(tsl_msg *out, tsl_msg_type type, const char *fmt, va_list ap) {
    out->type = TSL_MSG_NONE;
    out->body = NULL;
    json_error_t e;
    json_t *v = json_vpack_ex(&e, 0, fmt, ap);
    if (!v)
        return tsl_fail(TSL_ERR_INVALID, "%s: cannot build the message from \"%s\": %s",
                        tsl_msg_type_name(type), fmt, e.text);
    tsl_status st = adopt(type, v, &out->body);
    if (st == TSL_OK) out->type = type;
    return st;
}

tsl_status tsl_msg_pack(tsl_msg *out, tsl_msg_type type, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tsl_status st = tsl__msg_vpack(out, type, fmt, ap);
    va_end(ap);
    return st;
}

void tsl_msg_free(tsl_msg *m) {
    if (!m) return;
    json_decref(m->body);
    m->body = NULL;
    m->type = TSL_MSG_NONE;
}

tsl_status tsl_msg_encode(const tsl_msg *m, uint8_t **buf, size_t *len) {
    *buf = NULL;
    *len = 0;
    tsl_status st = tsl_msg_validate(m->type, m->body);
    if (st != TSL_OK) return st;
    char *s = json_dumps(m->body, JSON_COMPACT);
    if (!s)
        return tsl_fail(TSL_ERR_OOM, "%s: out of memory encoding it", tsl_msg_type_name(m->type));
    size_t n = strlen(s);
    if (n > tsl_msg_limit(m->type)) {
        free(s);
        return too_large(m->type, n);
    }
    uint8_t *b = malloc(TSL_MSG_HEADER_BYTES + n);
    if (!b) {
        free(s);
        return tsl_fail(TSL_ERR_OOM, "%s: out of memory encoding %zu bytes",
                        tsl_msg_type_name(m->type), n);
    }
    tsl_msg_header_encode(m->type, (uint32_t)n, b);
    memcpy(b + TSL_MSG_HEADER_BYTES, s, n);
    free(s);
    *buf = b;
    *len = TSL_MSG_HEADER_BYTES + n;
    return TSL_OK;
}

tsl_status tsl_msg_decode(const uint8_t *buf, size_t len, tsl_msg *out, tsl_msg_err *code) {
    out->type = TSL_MSG_NONE;
    out->body = NULL;
    set_code(code, TSL_MSG_ERR_BAD_MESSAGE);
    if (len < TSL_MSG_HEADER_BYTES)
        return tsl_fail(TSL_ERR_FORMAT, "message: %zu bytes are too short for a header (%d bytes)",
                        len, TSL_MSG_HEADER_BYTES);
    tsl_msg_header h;
    tsl_status st = tsl_msg_header_decode(buf, &h, code);
    if (st != TSL_OK) return st;
    set_code(code, TSL_MSG_ERR_BAD_MESSAGE);
    if (len - TSL_MSG_HEADER_BYTES != h.length)
        return tsl_fail(TSL_ERR_FORMAT,
                        "%s: the header declares %u payload bytes, the message has %zu",
                        tsl_msg_type_name(h.type), (unsigned)h.length, len - TSL_MSG_HEADER_BYTES);
    st = tsl_msg_parse_payload(h.type, (const char *)buf + TSL_MSG_HEADER_BYTES, h.length,
                               &out->body);
    if (st != TSL_OK) {
        set_code(code, st == TSL_ERR_OOM ? TSL_MSG_ERR_INTERNAL : TSL_MSG_ERR_BAD_MESSAGE);
        return st;
    }
    out->type = h.type;
    set_code(code, TSL_MSG_ERR_NONE);
    return TSL_OK;
}

/* ---- accessors ------------------------------------------------------------------ */

int64_t tsl_msg_int(const tsl_msg *m, const char *field, int64_t dflt) {
    const json_t *v = json_object_get(m->body, field);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

double tsl_msg_num(const tsl_msg *m, const char *field, double dflt) {
    const json_t *v = json_object_get(m->body, field);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

const char *tsl_msg_str(const tsl_msg *m, const char *field, const char *dflt) {
    const json_t *v = json_object_get(m->body, field);
    return json_is_string(v) ? json_string_value(v) : dflt;
}
