/*
 * header.c - the 16-byte frame header: the message types' names and size
 * limits, the ERROR codes' names, encoding and checking a header
 * (docs/PROTOCOL.md, "Framing").
 */
#include "tensile/ipc.h"

static const char *const type_names[TSL_MSG_TYPE_END] = {
    [TSL_MSG_HELLO] = "HELLO",       [TSL_MSG_WELCOME] = "WELCOME",
    [TSL_MSG_ERROR] = "ERROR",       [TSL_MSG_REGISTER] = "REGISTER",
    [TSL_MSG_QUEUED] = "QUEUED",     [TSL_MSG_PLAN] = "PLAN",
    [TSL_MSG_PLAN_ACK] = "PLAN_ACK", [TSL_MSG_REPORT] = "REPORT",
    [TSL_MSG_DONE] = "DONE",         [TSL_MSG_FAILED] = "FAILED",
    [TSL_MSG_RESUME] = "RESUME",     [TSL_MSG_STATUS_REQ] = "STATUS_REQ",
    [TSL_MSG_STATUS] = "STATUS",     [TSL_MSG_CANCEL] = "CANCEL",
    [TSL_MSG_STOP] = "STOP",         [TSL_MSG_OK] = "OK",
    [TSL_MSG_SHUTDOWN] = "SHUTDOWN",
};

const char *tsl_msg_type_name(int type) {
    return type > TSL_MSG_NONE && type < TSL_MSG_TYPE_END ? type_names[type] : "?";
}

size_t tsl_msg_limit(int type) {
    switch (type) {
    case TSL_MSG_REGISTER:
    case TSL_MSG_RESUME:
    case TSL_MSG_PLAN: return TSL_MSG_MAX_PAYLOAD; /* a workload or a plan: 16 MiB */
    case TSL_MSG_REPORT:
    case TSL_MSG_STATUS: return (size_t)4 << 20;
    default: return type > TSL_MSG_NONE && type < TSL_MSG_TYPE_END ? (size_t)64 << 10 : 0;
    }
}

const char *tsl_msg_err_name(tsl_msg_err code) {
    switch (code) {
    case TSL_MSG_ERR_NONE: return "";
    case TSL_MSG_ERR_BAD_MESSAGE: return "bad-message";
    case TSL_MSG_ERR_TOO_LARGE: return "too-large";
    case TSL_MSG_ERR_VERSION: return "version";
    case TSL_MSG_ERR_OUT_OF_ORDER: return "out-of-order";
    case TSL_MSG_ERR_REFUSED: return "refused";
    case TSL_MSG_ERR_TIMEOUT: return "timeout";
    case TSL_MSG_ERR_INTERNAL: break;
    }
    return "internal";
}

static void put_u16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void tsl_msg_header_encode(tsl_msg_type type, uint32_t length, uint8_t out[TSL_MSG_HEADER_BYTES]) {
    put_u32(out, TSL_PROTO_MAGIC);
    put_u16(out + 4, TSL_PROTO_VERSION);
    put_u16(out + 6, (uint16_t)type);
    put_u32(out + 8, length);
    put_u32(out + 12, 0);
}

static tsl_status refuse(tsl_msg_err *code, tsl_msg_err c, tsl_status st) {
    if (code) *code = c;
    return st;
}

tsl_status tsl_msg_header_decode(const uint8_t in[TSL_MSG_HEADER_BYTES], tsl_msg_header *h,
                                 tsl_msg_err *code) {
    if (code) *code = TSL_MSG_ERR_NONE;
    h->magic = get_u32(in);
    h->version = get_u16(in + 4);
    h->type = get_u16(in + 6);
    h->length = get_u32(in + 8);
    h->flags = get_u32(in + 12);
    if (h->magic != TSL_PROTO_MAGIC)
        return refuse(code, TSL_MSG_ERR_BAD_MESSAGE,
                      tsl_fail(TSL_ERR_FORMAT,
                               "message header: magic 0x%08x (bytes %02x %02x %02x %02x) is not "
                               "'TSLP': not a tensile message",
                               (unsigned)h->magic, in[0], in[1], in[2], in[3]));
    if (h->version != TSL_PROTO_VERSION)
        return refuse(code, TSL_MSG_ERR_VERSION,
                      tsl_fail(TSL_ERR_FORMAT,
                               "message header: version %u (this side speaks version %d)",
                               (unsigned)h->version, TSL_PROTO_VERSION));
    if (h->flags != 0)
        return refuse(code, TSL_MSG_ERR_BAD_MESSAGE,
                      tsl_fail(TSL_ERR_FORMAT, "message header: flags 0x%x (must be 0)",
                               (unsigned)h->flags));
    size_t limit = tsl_msg_limit(h->type);
    if (limit == 0)
        return refuse(code, TSL_MSG_ERR_BAD_MESSAGE,
                      tsl_fail(TSL_ERR_FORMAT, "message header: unknown message type %u",
                               (unsigned)h->type));
    if (h->length > limit)
        return refuse(code, TSL_MSG_ERR_TOO_LARGE,
                      tsl_fail(TSL_ERR_FORMAT,
                               "%s: payload of %u bytes is over the limit of %zu bytes for %s",
                               tsl_msg_type_name(h->type), (unsigned)h->length, limit,
                               tsl_msg_type_name(h->type)));
    return TSL_OK;
}
