/*
 * test_ipc.c - the daemon's wire protocol (src/ipc/, docs/PROTOCOL.md):
 * every message type round-trips through a socket pair (blocking send and
 * receive; the incremental reader fed a byte at a time, in random chunks
 * and from the socket); every header error, bad payload and bad field is
 * refused with a message naming the type, the field and the value, and
 * with the error code the daemon replies with; an oversized header is
 * refused before any payload byte is taken; the conversation refuses
 * messages out of order at both ends; an ERROR reply reaches the peer.
 * The sockets themselves: test_ipc_sock.c.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tensile/ipc.h"

/* One valid payload of each type (with the optional fields where a type
 * has them). */
static const char *const valid[TSL_MSG_TYPE_END] = {
    [TSL_MSG_HELLO] = "{\"role\":\"job\",\"pid\":1234,\"client\":\"tensile 0.1.0\"}",
    [TSL_MSG_WELCOME] = "{\"daemon_pid\":99,\"capacity_bytes\":1073741824,\"pcie_gbps\":12.5,"
                        "\"profile\":{\"name\":\"a6000\",\"flops\":2.3e13},\"shm\":\"/tensile-0\","
                        "\"job_timeout_s\":30}",
    [TSL_MSG_ERROR] = "{\"code\":\"bad-message\",\"message\":\"REGISTER: field 'batch': -3 is "
                      "not a positive integer\"}",
    [TSL_MSG_REGISTER] = "{\"name\":\"j1\",\"model\":\"resnet18\",\"batch\":16,\"iterations\":100,"
                         "\"max_swap_rate\":0.5,\"workload\":{\"job\":\"j1\",\"ops\":[]}}",
    [TSL_MSG_QUEUED] = "{\"job_id\":4,\"reason\":\"needs 3 GiB, 1 GiB free\",\"needed_bytes\":"
                       "3221225472,\"available_bytes\":1073741824,\"position\":1}",
    [TSL_MSG_PLAN] = "{\"job_id\":1,\"slot\":0,\"plan_seq\":1,\"region_bytes\":536870912,"
                     "\"channel_share\":0.5,\"latencies_us\":[1.5,2],\"reason\":"
                     "\"admitted\",\"plan\":{\"job\":\"j1\",\"events\":[]}}",
    [TSL_MSG_PLAN_ACK] = "{\"plan_seq\":1,\"iteration\":0,\"footprint_bytes\":1000}",
    [TSL_MSG_REPORT] = "{\"iteration\":1,\"iter_ms\":12.5,\"kernel_ms\":10,\"latencies_us\":[1.5,2,"
                       "0.1],\"load_bytes\":10,\"footprint_bytes\":20,\"peak_footprint_bytes\":30,"
                       "\"swaps\":2,\"evictions\":0,\"passive_swaps\":1,\"stall_ms\":0.25}",
    [TSL_MSG_DONE] = "{\"iterations\":100,\"param_checksum\":\"0123456789abcdef\",\"iter_ms\":12.5,"
                     "\"peak_footprint_bytes\":30}",
    [TSL_MSG_FAILED] = "{\"message\":\"out of memory\"}",
    [TSL_MSG_RESUME] = "{\"job_id\":1,\"name\":\"j1\",\"model\":\"resnet18\",\"batch\":16,"
                       "\"iterations\":100,\"max_swap_rate\":0,\"slot\":0,\"plan_seq\":3,"
                       "\"region_bytes\":536870912,\"channel_share\":1,\"latencies_us\":[1],\"iteration\":42,"
                       "\"workload\":{},\"plan\":{}}",
    [TSL_MSG_STATUS_REQ] = "{}",
    [TSL_MSG_STATUS] =
        "{\"capacity_bytes\":1073741824,\"global\":{\"load_bytes\":1,\"footprint_bytes\":2,"
        "\"peak_footprint_bytes\":3},\"jobs\":[{\"id\":1,\"model\":\"resnet18\",\"state\":"
        "\"running\",\"region_bytes\":5,\"footprint_bytes\":4,\"peak_footprint_bytes\":4,"
        "\"iterations_done\":3,\"iter_ms\":12.5,\"eor\":1.1,\"swaps\":3,\"replans\":1,"
        "\"plan_footprint_bytes\":5},{\"id\":2,\"model\":\"vgg11\",\"state\":\"queued\","
        "\"region_bytes\":0,\"footprint_bytes\":0,\"peak_footprint_bytes\":0,\"iterations_done\":0,"
        "\"reason\":\"waiting for 1 GiB\",\"queued_ms\":5},{\"id\":3,\"model\":\"cnn\",\"state\":"
        "\"done\",\"region_bytes\":0,\"footprint_bytes\":0,\"peak_footprint_bytes\":7,"
        "\"iterations_done\":9,\"param_checksum\":\"fedcba9876543210\"}]}",
    [TSL_MSG_CANCEL] = "{\"job_id\":2}",
    [TSL_MSG_STOP] = "{\"reason\":\"cancelled by the user\"}",
    [TSL_MSG_OK] = "{\"job_id\":2}",
    [TSL_MSG_SHUTDOWN] = "{}",
};

static json_t *load(const char *text) {
    json_error_t e;
    json_t *v = json_loads(text, JSON_REJECT_DUPLICATES, &e);
    cr_assert_not_null(v, "test JSON %s: %s", text, e.text);
    return v;
}

static tsl_msg valid_msg(int t) {
    tsl_msg m = {(tsl_msg_type)t, load(valid[t])};
    cr_assert_eq(tsl_msg_validate(m.type, m.body), TSL_OK, "%s: %s", tsl_msg_type_name(t),
                 tsl_last_error());
    return m;
}

/* Every valid message, encoded one after the other; *len bytes. */
static uint8_t *stream_of_all(size_t *len) {
    uint8_t *all = NULL;
    *len = 0;
    for (int t = 1; t < TSL_MSG_TYPE_END; t++) {
        tsl_msg m = valid_msg(t);
        uint8_t *b;
        size_t n;
        cr_assert_eq(tsl_msg_encode(&m, &b, &n), TSL_OK, "%s", tsl_last_error());
        all = realloc(all, *len + n);
        memcpy(all + *len, b, n);
        *len += n;
        free(b);
        tsl_msg_free(&m);
    }
    return all;
}

static void expect_same(const tsl_msg *got, int t) {
    cr_assert_eq(got->type, t, "got %s, expected %s", tsl_msg_type_name(got->type),
                 tsl_msg_type_name(t));
    json_t *want = load(valid[t]);
    cr_assert(json_equal(got->body, want), "%s changed on the way", tsl_msg_type_name(t));
    json_decref(want);
}

static void pair(int sv[2]) { cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0); }

/* ---- framing ---------------------------------------------------------------------- */

Test(ipc, header_layout_is_little_endian_tslp) {
    uint8_t h[16];
    tsl_msg_header_encode(TSL_MSG_REPORT, 0x01020304u, h);
    const uint8_t want[16] = {'T', 'S', 'L', 'P', 1, 0, 8, 0, 4, 3, 2, 1, 0, 0, 0, 0};
    cr_assert_arr_eq(h, want, 16);
    tsl_msg_header d;
    tsl_msg_err code = TSL_MSG_ERR_INTERNAL;
    tsl_msg_header_encode(TSL_MSG_REPORT, 1000, h);
    cr_assert_eq(tsl_msg_header_decode(h, &d, &code), TSL_OK);
    cr_assert(d.magic == TSL_PROTO_MAGIC && d.version == 1 && d.type == 8 && d.length == 1000 &&
              d.flags == 0 && code == TSL_MSG_ERR_NONE);
    cr_assert_str_eq(tsl_msg_type_name(TSL_MSG_PLAN_ACK), "PLAN_ACK");
    cr_assert_str_eq(tsl_msg_type_name(0), "?");
    cr_assert_str_eq(tsl_msg_type_name(18), "?");
    cr_assert_str_eq(tsl_msg_err_name(TSL_MSG_ERR_OUT_OF_ORDER), "out-of-order");
}

Test(ipc, limits_per_type) {
    for (int t = 1; t < TSL_MSG_TYPE_END; t++) {
        size_t want = (t == TSL_MSG_REGISTER || t == TSL_MSG_RESUME || t == TSL_MSG_PLAN)
                          ? (size_t)16 << 20
                      : (t == TSL_MSG_REPORT || t == TSL_MSG_STATUS) ? (size_t)4 << 20
                                                                     : (size_t)64 << 10;
        cr_assert_eq(tsl_msg_limit(t), want, "%s", tsl_msg_type_name(t));
        cr_assert(tsl_msg_limit(t) <= TSL_MSG_MAX_PAYLOAD);
        /* a header at the limit passes, one byte more is too large */
        uint8_t h[16];
        tsl_msg_header d;
        tsl_msg_err code;
        tsl_msg_header_encode((tsl_msg_type)t, (uint32_t)want, h);
        cr_assert_eq(tsl_msg_header_decode(h, &d, &code), TSL_OK, "%s", tsl_last_error());
        tsl_msg_header_encode((tsl_msg_type)t, (uint32_t)want + 1, h);
        cr_assert_eq(tsl_msg_header_decode(h, &d, &code), TSL_ERR_FORMAT);
        cr_assert_eq(code, TSL_MSG_ERR_TOO_LARGE);
        char msg[200];
        snprintf(msg, sizeof msg, "%s: payload of %zu bytes is over the limit of %zu bytes for %s",
                 tsl_msg_type_name(t), want + 1, want, tsl_msg_type_name(t));
        cr_assert_str_eq(tsl_last_error(), msg);
    }
    cr_assert_eq(tsl_msg_limit(0), 0);
    cr_assert_eq(tsl_msg_limit(TSL_MSG_TYPE_END), 0);
}

/* One header fault: the bytes, the code, the message. */
typedef struct header_case {
    uint8_t h[16];
    tsl_msg_err code;
    const char *msg;
} header_case;

static header_case header_cases[] = {
    {{'X', 'S', 'L', 'P', 1, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0}, TSL_MSG_ERR_BAD_MESSAGE,
     "message header: magic 0x504c5358 (bytes 58 53 4c 50) is not 'TSLP': not a tensile message"},
    {{'T', 'S', 'L', 'P', 2, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0}, TSL_MSG_ERR_VERSION,
     "message header: version 2 (this side speaks version 1)"},
    {{'T', 'S', 'L', 'P', 1, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0x80}, TSL_MSG_ERR_BAD_MESSAGE,
     "message header: flags 0x80000000 (must be 0)"},
    {{'T', 'S', 'L', 'P', 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}, TSL_MSG_ERR_BAD_MESSAGE,
     "message header: unknown message type 0"},
    {{'T', 'S', 'L', 'P', 1, 0, 99, 0, 2, 0, 0, 0, 0, 0, 0, 0}, TSL_MSG_ERR_BAD_MESSAGE,
     "message header: unknown message type 99"},
    {{'T', 'S', 'L', 'P', 1, 0, 1, 0, 0x01, 0, 1, 0, 0, 0, 0, 0}, TSL_MSG_ERR_TOO_LARGE,
     "HELLO: payload of 65537 bytes is over the limit of 65536 bytes for HELLO"},
    {{'T', 'S', 'L', 'P', 1, 0, 4, 0, 1, 0, 0, 1, 0, 0, 0, 0}, TSL_MSG_ERR_TOO_LARGE,
     "REGISTER: payload of 16777217 bytes is over the limit of 16777216 bytes for REGISTER"},
    {{'T', 'S', 'L', 'P', 1, 0, 8, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, TSL_MSG_ERR_TOO_LARGE,
     "REPORT: payload of 4294967295 bytes is over the limit of 4194304 bytes for REPORT"},
};

Test(ipc, every_header_fault_is_refused_with_its_code) {
    for (size_t i = 0; i < sizeof header_cases / sizeof header_cases[0]; i++) {
        const header_case *c = &header_cases[i];
        tsl_msg_header d;
        tsl_msg_err code;
        cr_assert_eq(tsl_msg_header_decode(c->h, &d, &code), TSL_ERR_FORMAT, "case %zu", i);
        cr_assert_str_eq(tsl_last_error(), c->msg);
        cr_assert_eq(code, c->code, "case %zu: code %s", i, tsl_msg_err_name(code));
        /* whole-message decode: the same */
        uint8_t buf[18];
        memcpy(buf, c->h, 16);
        buf[16] = '{', buf[17] = '}';
        tsl_msg m = {TSL_MSG_HELLO, (json_t *)1};
        cr_assert_eq(tsl_msg_decode(buf, 18, &m, &code), TSL_ERR_FORMAT);
        cr_assert(m.type == TSL_MSG_NONE && m.body == NULL);
        cr_assert_str_eq(tsl_last_error(), c->msg);
        cr_assert_eq(code, c->code);
        /* the reader: refused at the 16th byte, no payload byte taken */
        tsl_msg_reader *r = tsl_msg_reader_new();
        size_t used;
        cr_assert_eq(tsl_msg_reader_feed(r, buf, 18, &used, &m), TSL_ERR_FORMAT);
        cr_assert_eq(used, 16);
        cr_assert_str_eq(tsl_last_error(), c->msg);
        cr_assert_eq(tsl_msg_reader_err(r), c->code);
        /* it stays failed */
        cr_assert_eq(tsl_msg_reader_feed(r, "x", 1, &used, &m), TSL_ERR_FORMAT);
        cr_assert_eq(used, 0);
        cr_assert_str_eq(tsl_last_error(), c->msg);
        tsl_msg_reader_free(r);
    }
}

Test(ipc, oversized_length_is_refused_before_any_payload_byte) {
    /* a REGISTER that declares 17 MiB, followed by 1000 bytes of it */
    uint8_t buf[16 + 1000];
    tsl_msg_header_encode(TSL_MSG_REGISTER, (uint32_t)17 << 20, buf);
    memset(buf + 16, '{', 1000);
    tsl_msg_reader *r = tsl_msg_reader_new();
    tsl_msg m;
    size_t used;
    cr_assert_eq(tsl_msg_reader_feed(r, buf, sizeof buf, &used, &m), TSL_ERR_FORMAT);
    cr_assert_eq(used, 16, "took %zu bytes", used);
    cr_assert_eq(tsl_msg_reader_held(r), 16, "holds %zu bytes", tsl_msg_reader_held(r));
    cr_assert_eq(tsl_msg_reader_err(r), TSL_MSG_ERR_TOO_LARGE);
    tsl_msg_reader_free(r);

    /* from a socket: the payload bytes stay in the socket */
    int sv[2];
    pair(sv);
    cr_assert_eq(write(sv[0], buf, sizeof buf), (ssize_t)sizeof buf);
    r = tsl_msg_reader_new();
    cr_assert_eq(tsl_msg_reader_read(r, sv[1], &m), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "REGISTER: payload of 17825792 bytes is over the limit"),
              "%s", tsl_last_error());
    cr_assert_eq(tsl_msg_reader_held(r), 16);
    uint8_t rest[2000];
    cr_assert_eq(recv(sv[1], rest, sizeof rest, MSG_DONTWAIT), 1000);
    tsl_msg_reader_free(r);

    /* a legal 16 MiB declaration with a few bytes sent holds only what came */
    tsl_msg_header_encode(TSL_MSG_PLAN, (uint32_t)16 << 20, buf);
    r = tsl_msg_reader_new();
    cr_assert_eq(tsl_msg_reader_feed(r, buf, 116, &used, &m), TSL_OK);
    cr_assert(used == 116 && m.type == TSL_MSG_NONE);
    cr_assert_leq(tsl_msg_reader_held(r), (size_t)16 + (64 << 10));
    tsl_msg_reader_free(r);
    close(sv[0]);
    close(sv[1]);
}

/* ---- round trips -------------------------------------------------------------------- */

Test(ipc, every_type_round_trips_through_a_socket_pair) {
    int sv[2];
    pair(sv);
    for (int t = 1; t < TSL_MSG_TYPE_END; t++) {
        tsl_msg m = valid_msg(t);
        cr_assert_eq(tsl_msg_send(sv[0], &m, 1000), TSL_OK, "%s", tsl_last_error());
        tsl_msg_free(&m);
    }
    for (int t = 1; t < TSL_MSG_TYPE_END; t++) {
        tsl_msg got;
        tsl_msg_err code = TSL_MSG_ERR_INTERNAL;
        cr_assert_eq(tsl_msg_recv(sv[1], 1000, &got, &code), TSL_OK, "%s", tsl_last_error());
        cr_assert_eq(code, TSL_MSG_ERR_NONE);
        expect_same(&got, t);
        tsl_msg_free(&got);
    }
    close(sv[0]);
    close(sv[1]);
}

Test(ipc, encode_decode_is_exact) {
    for (int t = 1; t < TSL_MSG_TYPE_END; t++) {
        tsl_msg m = valid_msg(t), d;
        uint8_t *b;
        size_t n;
        cr_assert_eq(tsl_msg_encode(&m, &b, &n), TSL_OK);
        cr_assert_eq(tsl_msg_decode(b, n, &d, NULL), TSL_OK, "%s", tsl_last_error());
        expect_same(&d, t);
        tsl_msg_free(&d);
        /* one byte short: the length disagrees with the header */
        tsl_msg_err code;
        cr_assert_eq(tsl_msg_decode(b, n - 1, &d, &code), TSL_ERR_FORMAT);
        cr_assert(strstr(tsl_last_error(), "the header declares"), "%s", tsl_last_error());
        cr_assert_eq(code, TSL_MSG_ERR_BAD_MESSAGE);
        cr_assert_eq(tsl_msg_decode(b, 10, &d, &code), TSL_ERR_FORMAT);
        cr_assert(strstr(tsl_last_error(), "too short for a header"), "%s", tsl_last_error());
        free(b);
        tsl_msg_free(&m);
        tsl_msg_free(&d);
    }
}

/* Feeds stream[0..len) in chunks from next_chunk, checking every message
 * arrives in order and nothing else. */
static void feed_all(const uint8_t *stream, size_t len, size_t (*next_chunk)(uint64_t *),
                     uint64_t seed) {
    tsl_msg_reader *r = tsl_msg_reader_new();
    cr_assert_not_null(r);
    int t = 1;
    size_t off = 0;
    while (off < len) {
        size_t n = next_chunk(&seed);
        if (n > len - off) n = len - off;
        size_t done = 0;
        while (done < n) { /* a chunk may end one message and start the next */
            tsl_msg m;
            size_t used;
            cr_assert_eq(tsl_msg_reader_feed(r, stream + off + done, n - done, &used, &m), TSL_OK,
                         "%s", tsl_last_error());
            done += used;
            if (m.type != TSL_MSG_NONE) {
                cr_assert_lt(t, TSL_MSG_TYPE_END);
                expect_same(&m, t++);
                tsl_msg_free(&m);
            } else {
                cr_assert_eq(done, n, "no message, yet not every byte taken");
            }
        }
        off += n;
    }
    cr_assert_eq(t, TSL_MSG_TYPE_END, "only %d messages came out", t - 1);
    cr_assert_eq(tsl_msg_reader_held(r), 0);
    tsl_msg_reader_free(r);
}

static size_t one_byte(uint64_t *s) {
    (void)s;
    return 1;
}

static size_t random_chunk(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return 1 + (size_t)(*s % ((*s >> 40) % 3 == 0 ? 700 : 40));
}

static size_t everything(uint64_t *s) {
    (void)s;
    return SIZE_MAX;
}

Test(ipc, reader_fed_one_byte_at_a_time) {
    size_t len;
    uint8_t *all = stream_of_all(&len);
    feed_all(all, len, one_byte, 0);
    free(all);
}

Test(ipc, reader_fed_random_chunks) {
    size_t len;
    uint8_t *all = stream_of_all(&len);
    for (uint64_t seed = 1; seed <= 50; seed++) feed_all(all, len, random_chunk, seed * 0x9e3779b9u);
    feed_all(all, len, everything, 0);
    free(all);
}

Test(ipc, reader_reads_a_socket_as_bytes_arrive) {
    size_t len;
    uint8_t *all = stream_of_all(&len);
    int sv[2];
    pair(sv);
    tsl_msg_reader *r = tsl_msg_reader_new();
    uint64_t seed = 7;
    size_t off = 0;
    int t = 1;
    while (off < len) {
        size_t n = random_chunk(&seed);
        if (n > len - off) n = len - off;
        cr_assert_eq(write(sv[0], all + off, n), (ssize_t)n);
        off += n;
        for (;;) { /* a poll loop's POLLIN: until nothing more */
            tsl_msg m;
            cr_assert_eq(tsl_msg_reader_read(r, sv[1], &m), TSL_OK, "%s", tsl_last_error());
            if (m.type == TSL_MSG_NONE) break;
            expect_same(&m, t++);
            tsl_msg_free(&m);
        }
    }
    cr_assert_eq(t, TSL_MSG_TYPE_END);
    /* the peer closes between messages: a plain close, nothing to reply */
    close(sv[0]);
    tsl_msg m;
    cr_assert_eq(tsl_msg_reader_read(r, sv[1], &m), TSL_ERR_IO);
    cr_assert_str_eq(tsl_last_error(), "the peer closed the connection");
    cr_assert_eq(tsl_msg_reader_err(r), TSL_MSG_ERR_NONE);
    tsl_msg_reader_free(r);
    close(sv[1]);
    free(all);
}

Test(ipc, peer_closing_mid_message_is_named) {
    int sv[2];
    pair(sv);
    tsl_msg m = valid_msg(TSL_MSG_REPORT);
    uint8_t *b;
    size_t n;
    cr_assert_eq(tsl_msg_encode(&m, &b, &n), TSL_OK);
    cr_assert_eq(write(sv[0], b, 21), 21);
    close(sv[0]);
    tsl_msg_reader *r = tsl_msg_reader_new();
    tsl_msg got;
    cr_assert_eq(tsl_msg_reader_read(r, sv[1], &got), TSL_ERR_IO);
    char want[200];
    snprintf(want, sizeof want,
             "the peer closed the connection in the middle of a REPORT (5 of %zu payload bytes)",
             n - 16);
    cr_assert_str_eq(tsl_last_error(), want);
    cr_assert_eq(tsl_msg_reader_err(r), TSL_MSG_ERR_NONE);
    tsl_msg_reader_free(r);
    free(b);
    tsl_msg_free(&m);
    close(sv[1]);
}

/* A REPORT of about 1 MB (its payload buffer grows past its first 64 KiB),
 * sent by a thread while the main thread receives it. */
typedef struct sender {
    int fd;
    tsl_msg m;
    tsl_status st;
} sender;

static void *send_main(void *arg) {
    sender *s = arg;
    s->st = tsl_msg_send(s->fd, &s->m, 10000);
    return NULL;
}

Test(ipc, a_large_report_crosses_the_socket, .timeout = 60) {
    int sv[2];
    pair(sv);
    sender s = {.fd = sv[0], .m = valid_msg(TSL_MSG_REPORT)};
    json_t *lat = json_array();
    for (int i = 0; i < 100000; i++) json_array_append_new(lat, json_real(i * 0.125 + 1e-3));
    json_object_set_new(s.m.body, "latencies_us", lat);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, send_main, &s), 0);
    tsl_msg got;
    cr_assert_eq(tsl_msg_recv(sv[1], 10000, &got, NULL), TSL_OK, "%s", tsl_last_error());
    pthread_join(th, NULL);
    cr_assert_eq(s.st, TSL_OK);
    cr_assert(got.type == TSL_MSG_REPORT && json_equal(got.body, s.m.body));
    cr_assert_eq(json_array_size(json_object_get(got.body, "latencies_us")), 100000);
    tsl_msg_free(&got);
    tsl_msg_free(&s.m);
    close(sv[0]);
    close(sv[1]);
}

/* ---- payloads ------------------------------------------------------------------------- */

/* Parses text as a `type` payload, expects TSL_ERR_FORMAT with a message
 * equal to want (when it starts with '=') or holding every needle. */
static void refused(int type, const char *text, size_t len, const char *const *needles) {
    json_t *body = (json_t *)1;
    tsl_status st = tsl_msg_parse_payload((tsl_msg_type)type, text, len, &body);
    cr_assert_eq(st, TSL_ERR_FORMAT, "%s %.*s: accepted", tsl_msg_type_name(type), (int)(len < 80 ? len : 80), text);
    cr_assert_null(body);
    for (; *needles; needles++) {
        if ((*needles)[0] == '=')
            cr_assert_str_eq(tsl_last_error(), *needles + 1, "%s %.*s", tsl_msg_type_name(type),
                             (int)(len < 80 ? len : 80), text);
        else
            cr_assert(strstr(tsl_last_error(), *needles), "%s %.*s: '%s' lacks '%s'",
                      tsl_msg_type_name(type), (int)(len < 80 ? len : 80), text, tsl_last_error(),
                      *needles);
    }
}

#define REFUSED(type, text, ...) \
    refused(type, text, strlen(text), (const char *const[]){__VA_ARGS__, NULL})

Test(ipc, bad_payloads_are_refused) {
    REFUSED(TSL_MSG_PLAN_ACK, "{\"plan_seq\":1,", "PLAN_ACK: invalid JSON at line 1");
    REFUSED(TSL_MSG_PLAN_ACK, "{\"plan_seq\":1,\"iteration\":0,\"footprint_bytes\":1} x",
            "PLAN_ACK: invalid JSON", "end of file expected");
    REFUSED(TSL_MSG_PLAN_ACK, "{\"plan_seq\":1,\"iteration\":0,\"footprint_bytes\":1}{}",
            "PLAN_ACK: invalid JSON", "end of file expected");
    REFUSED(TSL_MSG_STATUS, "[1,2]", "=STATUS: the payload is an array [1,2], not a JSON object");
    REFUSED(TSL_MSG_SHUTDOWN, "7", "SHUTDOWN: invalid JSON");
    REFUSED(TSL_MSG_SHUTDOWN, "\"x\"", "SHUTDOWN: invalid JSON");
    REFUSED(TSL_MSG_SHUTDOWN, "", "SHUTDOWN: invalid JSON");
    REFUSED(TSL_MSG_CANCEL, "{\"job_id\":1,\"job_id\":2}", "CANCEL: invalid JSON",
            "duplicate object key");
    REFUSED(TSL_MSG_FAILED, "{\"message\":\"a\xff\"}", "FAILED: invalid JSON", "0xff");
    REFUSED(TSL_MSG_FAILED, "{\"message\":\"a\\u0000b\"}", "FAILED: invalid JSON");
    REFUSED(TSL_MSG_CANCEL, "{\"job_id\":99999999999999999999}", "CANCEL: invalid JSON",
            "too big integer");
    REFUSED(TSL_MSG_REPORT, "{\"iter_ms\":1e999}", "REPORT: invalid JSON");
    REFUSED(TSL_MSG_SHUTDOWN, "{\"a\":NaN}", "SHUTDOWN: invalid JSON");
    /* a NUL byte in the payload */
    refused(TSL_MSG_SHUTDOWN, "{}\0 ", 4,
            (const char *const[]){"=SHUTDOWN: the payload holds a NUL byte at offset 2", NULL});
    /* nesting deeper than jansson's limit is refused, not a stack overflow */
    size_t deep = 100000;
    char *d = malloc(2 * deep + 1);
    memset(d, '[', deep);
    memset(d + deep, ']', deep);
    d[2 * deep] = '\0';
    REFUSED(TSL_MSG_REGISTER, d, "REGISTER: invalid JSON", "maximum parsing depth");
    free(d);
    /* the control characters of jansson's message about the input are not passed on */
    REFUSED(TSL_MSG_SHUTDOWN, "{\"a\x01\":1}", "SHUTDOWN: invalid JSON");
    for (const char *c = tsl_last_error(); *c; c++) cr_assert_geq((unsigned char)*c, 0x20);
}

/* ---- fields ----------------------------------------------------------------------------- */

/* Validates valid[t] changed by f(body); expects a refusal naming the
 * type and holding each needle (a '=' needle: the whole message). */
static void field_refused(int t, json_t *body, const char *const *needles) {
    tsl_status st = tsl_msg_validate((tsl_msg_type)t, body);
    char *s = json_dumps(body, JSON_COMPACT);
    cr_assert_eq(st, TSL_ERR_FORMAT, "%s %s: accepted", tsl_msg_type_name(t), s);
    char prefix[40];
    snprintf(prefix, sizeof prefix, "%s: ", tsl_msg_type_name(t));
    cr_assert(strncmp(tsl_last_error(), prefix, strlen(prefix)) == 0, "'%s' does not name %s",
              tsl_last_error(), tsl_msg_type_name(t));
    for (; *needles; needles++) {
        if ((*needles)[0] == '=')
            cr_assert_str_eq(tsl_last_error(), *needles + 1, "%s", s);
        else
            cr_assert(strstr(tsl_last_error(), *needles), "%s: '%s' lacks '%s'", s,
                      tsl_last_error(), *needles);
    }
    free(s);
    json_decref(body);
}

static int optional_top_field(int t, const char *key) {
    return t == TSL_MSG_OK && strcmp(key, "job_id") == 0;
}

Test(ipc, every_required_field_missing_is_named) {
    for (int t = 1; t < TSL_MSG_TYPE_END; t++) {
        json_t *v = load(valid[t]);
        const char *key;
        json_t *val;
        json_object_foreach(v, key, val) {
            json_t *b = json_deep_copy(v);
            json_object_del(b, key);
            if (optional_top_field(t, key)) {
                cr_assert_eq(tsl_msg_validate((tsl_msg_type)t, b), TSL_OK, "%s", tsl_last_error());
                json_decref(b);
                continue;
            }
            char want[120];
            snprintf(want, sizeof want, "=%s: field '%s' is missing", tsl_msg_type_name(t), key);
            field_refused(t, b, (const char *const[]){want, NULL});
        }
        json_decref(v);
    }
}

Test(ipc, every_field_of_a_wrong_type_is_named_with_its_value) {
    for (int t = 1; t < TSL_MSG_TYPE_END; t++) {
        json_t *v = load(valid[t]);
        const char *key;
        json_t *val;
        json_object_foreach(v, key, val) {
            json_t *b = json_deep_copy(v);
            json_t *wrong;
            const char *shown, *expected;
            if (json_is_string(val)) {
                wrong = json_integer(12345);
                shown = "got an integer 12345";
                expected = "expected a"; /* a string, one of ..., ... */
            } else if (json_is_number(val)) { /* an integer field, or a number one */
                wrong = json_string("7");
                shown = "got a string \"7\"";
                expected = json_is_integer(val) ? "expected a" : "expected a number";
            } else if (json_is_object(val)) {
                wrong = json_pack("[i]", 5);
                shown = "got an array [5]";
                expected = "expected an object";
            } else {
                wrong = json_true();
                shown = "got true";
                expected = "expected an array";
            }
            json_object_set_new(b, key, wrong);
            char where[80];
            snprintf(where, sizeof where, "field '%s': ", key);
            field_refused(t, b, (const char *const[]){where, expected, shown, NULL});
        }
        json_decref(v);
    }
}

Test(ipc, an_unknown_field_is_refused_in_every_type) {
    for (int t = 1; t < TSL_MSG_TYPE_END; t++) {
        json_t *b = load(valid[t]);
        json_object_set_new(b, "batch_size", json_integer(7));
        char want[120];
        snprintf(want, sizeof want, "=%s: unknown field 'batch_size' (value 7)", tsl_msg_type_name(t));
        field_refused(t, b, (const char *const[]){want, NULL});
    }
    /* nested, and a key with a control character shown safely */
    json_t *b = load(valid[TSL_MSG_STATUS]);
    json_object_set_new(json_array_get(json_object_get(b, "jobs"), 1), "colour", json_string("red"));
    field_refused(TSL_MSG_STATUS, b,
                  (const char *const[]){"=STATUS: unknown field 'jobs[1].colour' (value \"red\")", NULL});
    b = load(valid[TSL_MSG_STATUS_REQ]);
    json_object_set_new(b, "a\nb", json_integer(1));
    field_refused(TSL_MSG_STATUS_REQ, b,
                  (const char *const[]){"=STATUS_REQ: unknown field 'a?b' (value 1)", NULL});
}

/* One out-of-range value: the type, the field set to `value` (JSON), the
 * exact message. */
typedef struct range_case {
    int type;
    const char *field, *value, *msg;
} range_case;

static const range_case range_cases[] = {
    {TSL_MSG_HELLO, "role", "\"daemon\"", "HELLO: field 'role': \"daemon\" is not one of \"job\", \"client\""},
    {TSL_MSG_HELLO, "pid", "0", "HELLO: field 'pid': 0 is not a positive integer"},
    {TSL_MSG_HELLO, "pid", "2147483648", "HELLO: field 'pid': 2147483648 is larger than 2147483647"},
    {TSL_MSG_HELLO, "client", "\"0123456789012345678901234567890123456789012345678901234567890123X\"",
     "HELLO: field 'client': \"01234567890123456789012345678901234567890123456789012345... has 65 characters (expected 1 to 64)"},
    {TSL_MSG_HELLO, "client", "\"\"", "HELLO: field 'client': \"\" has 0 characters (expected 1 to 64)"},
    {TSL_MSG_WELCOME, "daemon_pid", "-1", "WELCOME: field 'daemon_pid': -1 is not a positive integer"},
    {TSL_MSG_WELCOME, "capacity_bytes", "0", "WELCOME: field 'capacity_bytes': 0 is not a positive integer"},
    {TSL_MSG_WELCOME, "pcie_gbps", "-0.5", "WELCOME: field 'pcie_gbps': -0.5 is negative"},
    {TSL_MSG_WELCOME, "job_timeout_s", "0", "WELCOME: field 'job_timeout_s': 0 is not positive"},
    {TSL_MSG_WELCOME, "shm", "\"tensile\"", "WELCOME: field 'shm': \"tensile\" is not a POSIX shared memory name ('/' then 1 to 63 characters without '/')"},
    {TSL_MSG_WELCOME, "shm", "\"/a/b\"", "WELCOME: field 'shm': \"/a/b\" is not a POSIX shared memory name ('/' then 1 to 63 characters without '/')"},
    {TSL_MSG_ERROR, "code", "\"oops\"", "ERROR: field 'code': \"oops\" is not one of \"bad-message\", \"too-large\", \"version\", \"out-of-order\", \"refused\", \"timeout\", \"internal\""},
    {TSL_MSG_REGISTER, "batch", "-3", "REGISTER: field 'batch': -3 is not a positive integer"},
    {TSL_MSG_REGISTER, "batch", "3.0", "REGISTER: field 'batch': expected an integer, got a number 3.0"},
    {TSL_MSG_REGISTER, "iterations", "0", "REGISTER: field 'iterations': 0 is not a positive integer"},
    {TSL_MSG_REGISTER, "max_swap_rate", "1.5", "REGISTER: field 'max_swap_rate': 1.5 is not in [0, 1]"},
    {TSL_MSG_REGISTER, "max_swap_rate", "-0.1", "REGISTER: field 'max_swap_rate': -0.1 is not in [0, 1]"},
    {TSL_MSG_REGISTER, "name", "\"a\\nb\"", "REGISTER: field 'name': \"a\\nb\" contains a control character (0x0a)"},
    {TSL_MSG_REGISTER, "model", "\"0123456789012345678901234567890123456789012345678901234567890123\"",
     "REGISTER: field 'model': \"01234567890123456789012345678901234567890123456789012345... has 64 characters (expected 1 to 63)"},
    {TSL_MSG_QUEUED, "position", "0", "QUEUED: field 'position': 0 is not a positive integer"},
    {TSL_MSG_QUEUED, "needed_bytes", "-1", "QUEUED: field 'needed_bytes': -1 is negative"},
    {TSL_MSG_QUEUED, "job_id", "0", "QUEUED: field 'job_id': 0 is not a positive integer"},
    {TSL_MSG_PLAN, "reason", "\"whim\"", "PLAN: field 'reason': \"whim\" is not one of \"admitted\", \"arrival\", \"departure\", \"drift\", \"resume\""},
    {TSL_MSG_PLAN, "slot", "-1", "PLAN: field 'slot': -1 is negative"},
    {TSL_MSG_PLAN, "plan_seq", "0", "PLAN: field 'plan_seq': 0 is not a positive integer"},
    {TSL_MSG_PLAN, "region_bytes", "0", "PLAN: field 'region_bytes': 0 is not a positive integer"},
    {TSL_MSG_PLAN_ACK, "iteration", "-1", "PLAN_ACK: field 'iteration': -1 is negative"},
    {TSL_MSG_PLAN_ACK, "footprint_bytes", "-9223372036854775808", "PLAN_ACK: field 'footprint_bytes': -9223372036854775808 is negative"},
    {TSL_MSG_REPORT, "iteration", "0", "REPORT: field 'iteration': 0 is not a positive integer"},
    {TSL_MSG_REPORT, "iter_ms", "-1e-300", "REPORT: field 'iter_ms': -1e-300 is negative"},
    {TSL_MSG_REPORT, "latencies_us", "[]", "REPORT: field 'latencies_us': has 0 elements (expected 1 to 10000000)"},
    {TSL_MSG_REPORT, "latencies_us", "[1,2,-3]", "REPORT: field 'latencies_us[2]': -3 is negative"},
    {TSL_MSG_REPORT, "latencies_us", "[1,\"2\"]", "REPORT: field 'latencies_us[1]': expected a number, got a string \"2\""},
    {TSL_MSG_REPORT, "evictions", "-2", "REPORT: field 'evictions': -2 is negative"},
    {TSL_MSG_DONE, "param_checksum", "\"0123456789ABCDEF\"", "DONE: field 'param_checksum': \"0123456789ABCDEF\" is not 16 lowercase hexadecimal digits"},
    {TSL_MSG_DONE, "param_checksum", "\"0123456789abcdef0\"", "DONE: field 'param_checksum': \"0123456789abcdef0\" is not 16 lowercase hexadecimal digits"},
    {TSL_MSG_DONE, "iterations", "-1", "DONE: field 'iterations': -1 is negative"},
    {TSL_MSG_FAILED, "message", "\"\"", "FAILED: field 'message': \"\" has 0 characters (expected 1 to 1024)"},
    {TSL_MSG_RESUME, "iteration", "-1", "RESUME: field 'iteration': -1 is negative"},
    {TSL_MSG_RESUME, "batch", "0", "RESUME: field 'batch': 0 is not a positive integer"},
    {TSL_MSG_RESUME, "max_swap_rate", "2", "RESUME: field 'max_swap_rate': 2 is not in [0, 1]"},
    {TSL_MSG_STATUS, "capacity_bytes", "0", "STATUS: field 'capacity_bytes': 0 is not a positive integer"},
    {TSL_MSG_STATUS, "global", "{\"load_bytes\":-1,\"footprint_bytes\":0,\"peak_footprint_bytes\":0}", "STATUS: field 'global.load_bytes': -1 is negative"},
    {TSL_MSG_STATUS, "global", "{\"load_bytes\":1,\"footprint_bytes\":0}", "STATUS: field 'global.peak_footprint_bytes' is missing"},
    {TSL_MSG_STATUS, "jobs", "[7]", "STATUS: field 'jobs[0]': expected an object, got an integer 7"},
    {TSL_MSG_STATUS, "jobs", "[{\"id\":1,\"model\":\"m\",\"state\":\"paused\",\"region_bytes\":0,\"footprint_bytes\":0,\"peak_footprint_bytes\":0,\"iterations_done\":0}]",
     "STATUS: field 'jobs[0].state': \"paused\" is not one of \"queued\", \"running\", \"done\", \"failed\""},
    {TSL_MSG_STATUS, "jobs", "[{\"id\":1,\"model\":\"m\",\"state\":\"done\",\"region_bytes\":0,\"footprint_bytes\":0,\"peak_footprint_bytes\":0,\"iterations_done\":0,\"eor\":-1}]",
     "STATUS: field 'jobs[0].eor': -1 is negative"},
    {TSL_MSG_STATUS, "jobs", "[{\"id\":1,\"model\":\"m\",\"state\":\"done\",\"region_bytes\":0,\"footprint_bytes\":0,\"peak_footprint_bytes\":0,\"iterations_done\":0,\"param_checksum\":\"x\"}]",
     "STATUS: field 'jobs[0].param_checksum': \"x\" is not 16 lowercase hexadecimal digits"},
    {TSL_MSG_STATUS, "jobs", "[{\"model\":\"m\",\"state\":\"done\",\"region_bytes\":0,\"footprint_bytes\":0,\"peak_footprint_bytes\":0,\"iterations_done\":0}]",
     "STATUS: field 'jobs[0].id' is missing"},
    {TSL_MSG_CANCEL, "job_id", "0", "CANCEL: field 'job_id': 0 is not a positive integer"},
    {TSL_MSG_STOP, "reason", "\"\"", "STOP: field 'reason': \"\" has 0 characters (expected 1 to 1024)"},
    {TSL_MSG_OK, "job_id", "-5", "OK: field 'job_id': -5 is not a positive integer"},
};

Test(ipc, every_out_of_range_value_is_named) {
    for (size_t i = 0; i < sizeof range_cases / sizeof range_cases[0]; i++) {
        const range_case *c = &range_cases[i];
        json_t *b = load(valid[c->type]);
        json_error_t e;
        json_t *v = json_loads(c->value, JSON_DECODE_ANY, &e);
        cr_assert_not_null(v, "case %zu: %s", i, e.text);
        json_object_set_new(b, c->field, v);
        char want[400];
        snprintf(want, sizeof want, "=%s", c->msg);
        field_refused(c->type, b, (const char *const[]){want, NULL});
    }
    /* a FAILED message of 1025 bytes; 1024 is fine */
    char text[1026];
    memset(text, 'x', 1025);
    text[1025] = '\0';
    json_t *b = json_pack("{s:s}", "message", text);
    field_refused(TSL_MSG_FAILED, b, (const char *const[]){"has 1025 characters (expected 1 to 1024)", NULL});
    text[1024] = '\0';
    b = json_pack("{s:s}", "message", text);
    cr_assert_eq(tsl_msg_validate(TSL_MSG_FAILED, b), TSL_OK);
    json_decref(b);
}

Test(ipc, boundaries_that_are_valid) {
    const char *ok[][2] = {
        {"max_swap_rate", "0"}, {"max_swap_rate", "1"}, {"max_swap_rate", "1.0"}, {"batch", "9223372036854775807"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        json_t *b = load(valid[TSL_MSG_REGISTER]);
        json_object_set_new(b, ok[i][0], json_loads(ok[i][1], JSON_DECODE_ANY, NULL));
        cr_assert_eq(tsl_msg_validate(TSL_MSG_REGISTER, b), TSL_OK, "%s", tsl_last_error());
        json_decref(b);
    }
    json_t *b = json_object();
    cr_assert_eq(tsl_msg_validate(TSL_MSG_OK, b), TSL_OK); /* OK without a job id */
    cr_assert_eq(tsl_msg_validate(TSL_MSG_STATUS_REQ, b), TSL_OK);
    cr_assert_eq(tsl_msg_validate(TSL_MSG_HELLO, b), TSL_ERR_FORMAT);
    cr_assert_eq(tsl_msg_validate((tsl_msg_type)0, b), TSL_ERR_FORMAT);
    cr_assert_str_eq(tsl_last_error(), "message: unknown message type 0");
    cr_assert_eq(tsl_msg_validate(TSL_MSG_OK, NULL), TSL_ERR_FORMAT);
    json_decref(b);
    /* a STATUS with no job */
    b = load(valid[TSL_MSG_STATUS]);
    json_object_set_new(b, "jobs", json_array());
    cr_assert_eq(tsl_msg_validate(TSL_MSG_STATUS, b), TSL_OK, "%s", tsl_last_error());
    json_decref(b);
}

/* ---- building and sending ------------------------------------------------------------ */

Test(ipc, pack_validates_and_encode_refuses_what_it_may_not_send) {
    tsl_msg m;
    cr_assert_eq(tsl_msg_pack(&m, TSL_MSG_PLAN_ACK, "{s:I, s:I, s:I}", "plan_seq", (json_int_t)2,
                              "iteration", (json_int_t)5, "footprint_bytes", (json_int_t)100),
                 TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(m.type, TSL_MSG_PLAN_ACK);
    cr_assert_eq(tsl_msg_int(&m, "iteration", -1), 5);
    cr_assert_eq(tsl_msg_int(&m, "nothing", -1), -1);
    cr_assert_float_eq(tsl_msg_num(&m, "plan_seq", -1), 2.0, 0);
    cr_assert_str_eq(tsl_msg_str(&m, "plan_seq", "dflt"), "dflt");
    tsl_msg_free(&m);
    cr_assert(m.type == TSL_MSG_NONE && m.body == NULL);
    tsl_msg_free(NULL);

    m.type = TSL_MSG_HELLO;
    cr_assert_eq(tsl_msg_pack(&m, TSL_MSG_PLAN_ACK, "{s:I}", "plan_seq", (json_int_t)0), TSL_ERR_FORMAT);
    cr_assert(m.type == TSL_MSG_NONE && m.body == NULL);
    cr_assert_str_eq(tsl_last_error(), "PLAN_ACK: field 'plan_seq': 0 is not a positive integer");
    cr_assert_eq(tsl_msg_pack(&m, TSL_MSG_OK, "{s:", "x"), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "OK: cannot build the message"), "%s", tsl_last_error());

    /* encode validates: an invalid body is never put on the wire */
    tsl_msg bad = {TSL_MSG_CANCEL, json_pack("{s:i}", "job_id", -1)};
    uint8_t *b = (uint8_t *)1;
    size_t n = 1;
    cr_assert_eq(tsl_msg_encode(&bad, &b, &n), TSL_ERR_FORMAT);
    cr_assert(b == NULL && n == 0);
    int sv[2];
    pair(sv);
    cr_assert_eq(tsl_msg_send(sv[0], &bad, 100), TSL_ERR_FORMAT);
    tsl_msg got;
    cr_assert_eq(tsl_msg_recv(sv[1], 0, &got, NULL), TSL_ERR_TIMEOUT); /* nothing was sent */
    tsl_msg_free(&bad);

    /* too large for its type: a WELCOME is a control message (64 KiB) */
    char *big = malloc(70000);
    memset(big, 'a', 69999);
    big[69999] = '\0';
    tsl_msg over = valid_msg(TSL_MSG_WELCOME);
    json_object_set_new(over.body, "profile", json_pack("{s:s}", "notes", big));
    cr_assert_eq(tsl_msg_encode(&over, &b, &n), TSL_ERR_FORMAT);
    cr_assert_str_eq(tsl_last_error(),
                     "WELCOME: payload of 70122 bytes is over the limit of 65536 bytes for WELCOME");
    cr_assert(b == NULL && n == 0);
    tsl_msg_free(&over);
    free(big);
    tsl_msg rep = valid_msg(TSL_MSG_REPORT);
    json_t *lat = json_array();
    for (int i = 0; i < 300000; i++) json_array_append_new(lat, json_real(0.123456789 + i));
    json_object_set_new(rep.body, "latencies_us", lat);
    cr_assert_eq(tsl_msg_encode(&rep, &b, &n), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "REPORT: payload of ") &&
                  strstr(tsl_last_error(), "bytes is over the limit of 4194304 bytes for REPORT"),
              "%s", tsl_last_error());
    tsl_msg_free(&rep);

    cr_assert_eq(tsl_msg_sendf(sv[0], 100, TSL_MSG_CANCEL, "{s:I}", "job_id", (json_int_t)3), TSL_OK);
    cr_assert_eq(tsl_msg_recv(sv[1], 1000, &got, NULL), TSL_OK);
    cr_assert(got.type == TSL_MSG_CANCEL && tsl_msg_int(&got, "job_id", 0) == 3);
    tsl_msg_free(&got);
    close(sv[0]);
    close(sv[1]);
}

Test(ipc, text_is_made_printable_utf8_within_1024_bytes) {
    json_t *s = tsl_msg_text("a\nb\x01" "c\xff\xc3(d\xe2\x82\xac");
    cr_assert_str_eq(json_string_value(s), "a b c?" "?(d\xe2\x82\xac");
    json_decref(s);
    s = tsl_msg_text(NULL);
    cr_assert_str_eq(json_string_value(s), "(none)");
    json_decref(s);
    /* cut at a character boundary: 1023 bytes, then a 2-byte character */
    char big[1100];
    memset(big, 'a', 1023);
    strcpy(big + 1023, "\xc3\xa9zzz");
    s = tsl_msg_text(big);
    cr_assert_eq(json_string_length(s), 1023);
    json_decref(s);
    /* whatever the text, an ERROR built with it validates */
    tsl_msg m;
    cr_assert_eq(tsl_msg_pack(&m, TSL_MSG_ERROR, "{s:s, s:o}", "code", "internal", "message",
                              tsl_msg_text("\xf5\x80 \t bad")),
                 TSL_OK, "%s", tsl_last_error());
    tsl_msg_free(&m);
}

/* ---- errors reach the peer ----------------------------------------------------------------- */

/* The daemon's side of one connection, as in tsl/ipc.h's example: reads
 * what came, checks the conversation, replies ERROR on a fault. Returns
 * the number of messages accepted before the fault. */
static int serve_until_fault(int fd) {
    tsl_msg_reader *r = tsl_msg_reader_new();
    tsl_conv conv;
    tsl_conv_init(&conv, TSL_CONV_DAEMON);
    int accepted = 0;
    for (;;) {
        tsl_msg m;
        tsl_status st = tsl_msg_reader_read(r, fd, &m);
        cr_assert(st != TSL_OK || m.type != TSL_MSG_NONE, "the test sends the fault at once");
        tsl_msg_err code = tsl_msg_reader_err(r);
        if (st == TSL_OK && (st = tsl_conv_received(&conv, &m)) != TSL_OK)
            code = TSL_MSG_ERR_OUT_OF_ORDER;
        if (st != TSL_OK) {
            char logged[1024];
            snprintf(logged, sizeof logged, "%s", tsl_last_error());
            cr_assert_eq(tsl_msg_send_error(fd, code, tsl_last_error(), 1000), TSL_OK);
            cr_assert_str_eq(tsl_last_error(), logged); /* kept for the log */
            tsl_msg_free(&m);
            break;
        }
        if (m.type == TSL_MSG_HELLO) {
            tsl_msg w = {TSL_MSG_WELCOME, load(valid[TSL_MSG_WELCOME])};
            cr_assert_eq(tsl_conv_sending(&conv, &w), TSL_OK);
            cr_assert_eq(tsl_msg_send(fd, &w, 1000), TSL_OK);
            tsl_msg_free(&w);
        }
        accepted++;
        tsl_msg_free(&m);
    }
    tsl_msg_reader_free(r);
    return accepted;
}

/* Sends raw bytes after a valid HELLO, lets the daemon side answer, and
 * checks the client receives WELCOME then ERROR with `code` and a message
 * holding `needle`. */
static void fault_gets_error(const void *bytes, size_t n, const char *code, const char *needle) {
    int sv[2];
    pair(sv);
    tsl_conv conv;
    tsl_conv_init(&conv, TSL_CONV_JOB);
    tsl_msg hello = valid_msg(TSL_MSG_HELLO);
    cr_assert_eq(tsl_conv_sending(&conv, &hello), TSL_OK);
    cr_assert_eq(tsl_msg_send(sv[0], &hello, 1000), TSL_OK);
    tsl_msg_free(&hello);
    cr_assert_eq(write(sv[0], bytes, n), (ssize_t)n);
    cr_assert_eq(serve_until_fault(sv[1]), 1);
    close(sv[1]); /* the daemon closes after ERROR */
    tsl_msg m;
    cr_assert_eq(tsl_msg_recv(sv[0], 1000, &m, NULL), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_conv_received(&conv, &m), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(m.type, TSL_MSG_WELCOME);
    tsl_msg_free(&m);
    cr_assert_eq(tsl_msg_recv(sv[0], 1000, &m, NULL), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_conv_received(&conv, &m), TSL_OK);
    cr_assert_eq(m.type, TSL_MSG_ERROR);
    cr_assert_str_eq(tsl_msg_str(&m, "code", ""), code);
    cr_assert(strstr(tsl_msg_str(&m, "message", ""), needle), "'%s' lacks '%s'",
              tsl_msg_str(&m, "message", ""), needle);
    tsl_msg_free(&m);
    cr_assert_eq(tsl_msg_recv(sv[0], 1000, &m, NULL), TSL_ERR_IO); /* then the end */
    cr_assert_str_eq(tsl_last_error(), "the peer closed the connection");
    close(sv[0]);
}

Test(ipc, each_fault_gets_an_error_reply_then_the_end) {
    uint8_t h[16];
    tsl_msg_header_encode(TSL_MSG_REPORT, (uint32_t)5 << 20, h);
    fault_gets_error(h, 16, "too-large", "REPORT: payload of 5242880 bytes is over the limit");
    fault_gets_error(header_cases[1].h, 16, "version", "version 2 (this side speaks version 1)");
    fault_gets_error(header_cases[0].h, 16, "bad-message", "not a tensile message");
    uint8_t msg[16 + 12];
    tsl_msg_header_encode(TSL_MSG_CANCEL, 12, msg);
    memcpy(msg + 16, "{\"job_id\":0}", 12);
    fault_gets_error(msg, sizeof msg, "bad-message", "CANCEL: field 'job_id': 0 is not a positive integer");
    tsl_msg rep = valid_msg(TSL_MSG_REPORT);
    uint8_t *b;
    size_t n;
    cr_assert_eq(tsl_msg_encode(&rep, &b, &n), TSL_OK);
    fault_gets_error(b, n, "out-of-order", "REPORT out of order: the job has no plan yet");
    free(b);
    tsl_msg_free(&rep);
}

/* ---- the conversation ------------------------------------------------------------------------ */

static tsl_status recv_t(tsl_conv *c, int t) {
    tsl_msg m = valid_msg(t);
    tsl_status st = tsl_conv_received(c, &m);
    tsl_msg_free(&m);
    return st;
}

static tsl_status send_t(tsl_conv *c, int t) {
    tsl_msg m = valid_msg(t);
    tsl_status st = tsl_conv_sending(c, &m);
    tsl_msg_free(&m);
    return st;
}

static tsl_msg hello_as(const char *role) {
    tsl_msg m;
    cr_assert_eq(tsl_msg_pack(&m, TSL_MSG_HELLO, "{s:s, s:i, s:s}", "role", role, "pid", 5, "client",
                              "test"),
                 TSL_OK);
    return m;
}

#define OUT_OF_ORDER(st, msg)                                  \
    do {                                                       \
        cr_assert_eq((st), TSL_ERR_FORMAT, "accepted: %s", msg); \
        cr_assert_str_eq(tsl_last_error(), msg);               \
    } while (0)
#define NOT_NOW(st, msg)                                        \
    do {                                                        \
        cr_assert_eq((st), TSL_ERR_INVALID, "accepted: %s", msg); \
        cr_assert_str_eq(tsl_last_error(), msg);                \
    } while (0)

Test(ipc, daemon_side_of_a_job) {
    tsl_conv c;
    tsl_conv_init(&c, TSL_CONV_DAEMON);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_REGISTER), "REGISTER out of order: the first message must be HELLO");
    NOT_NOW(send_t(&c, TSL_MSG_WELCOME), "WELCOME may not be sent now: the client has not sent HELLO");
    cr_assert_eq(recv_t(&c, TSL_MSG_HELLO), TSL_OK);
    cr_assert_eq(c.role, TSL_ROLE_JOB);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_HELLO), "HELLO out of order: HELLO was already sent");
    NOT_NOW(send_t(&c, TSL_MSG_PLAN), "PLAN may not be sent now: the daemon's first message must be WELCOME");
    cr_assert_eq(send_t(&c, TSL_MSG_WELCOME), TSL_OK);
    NOT_NOW(send_t(&c, TSL_MSG_WELCOME), "WELCOME may not be sent now: WELCOME was already sent");
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_REPORT), "REPORT out of order: the job has no plan yet");
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_FAILED), "FAILED out of order: the job has not sent REGISTER or RESUME");
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_STATUS_REQ), "STATUS_REQ out of order: a job may send REGISTER or RESUME, then PLAN_ACK, REPORT, DONE and FAILED");
    NOT_NOW(send_t(&c, TSL_MSG_QUEUED), "QUEUED may not be sent now: the job has not sent REGISTER");
    cr_assert_eq(recv_t(&c, TSL_MSG_REGISTER), TSL_OK);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_RESUME), "RESUME out of order: the job has already sent REGISTER or RESUME");
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_PLAN_ACK), "PLAN_ACK out of order: no PLAN was sent to the job");
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_DONE), "DONE out of order: the job has no plan yet");
    cr_assert_eq(send_t(&c, TSL_MSG_QUEUED), TSL_OK);
    NOT_NOW(send_t(&c, TSL_MSG_STATUS), "STATUS may not be sent now: the daemon sends a job QUEUED, PLAN, STOP or ERROR");
    cr_assert_eq(send_t(&c, TSL_MSG_PLAN), TSL_OK);
    NOT_NOW(send_t(&c, TSL_MSG_QUEUED), "QUEUED may not be sent now: the job already has a plan");
    cr_assert_eq(recv_t(&c, TSL_MSG_PLAN_ACK), TSL_OK);
    cr_assert_eq(recv_t(&c, TSL_MSG_REPORT), TSL_OK);
    cr_assert_eq(recv_t(&c, TSL_MSG_REPORT), TSL_OK);
    cr_assert_eq(send_t(&c, TSL_MSG_PLAN), TSL_OK); /* a replan */
    cr_assert_eq(recv_t(&c, TSL_MSG_PLAN_ACK), TSL_OK);
    cr_assert_eq(recv_t(&c, TSL_MSG_DONE), TSL_OK);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_REPORT), "REPORT out of order: nothing may follow DONE or FAILED");
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_FAILED), "FAILED out of order: nothing may follow DONE or FAILED");
    cr_assert_eq(send_t(&c, TSL_MSG_ERROR), TSL_OK);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_ERROR), "ERROR out of order: nothing may follow ERROR");
    NOT_NOW(send_t(&c, TSL_MSG_STOP), "STOP may not be sent now: nothing may follow ERROR");
}

Test(ipc, daemon_side_of_a_resumed_job_and_of_a_stop) {
    tsl_conv c;
    tsl_conv_init(&c, TSL_CONV_DAEMON);
    cr_assert_eq(recv_t(&c, TSL_MSG_HELLO), TSL_OK);
    cr_assert_eq(recv_t(&c, TSL_MSG_RESUME), TSL_OK); /* before WELCOME went: pipelined */
    cr_assert_eq(send_t(&c, TSL_MSG_WELCOME), TSL_OK);
    cr_assert_eq(recv_t(&c, TSL_MSG_REPORT), TSL_OK); /* it runs its last plan */
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_PLAN_ACK), "PLAN_ACK out of order: no PLAN was sent to the job");
    NOT_NOW(send_t(&c, TSL_MSG_QUEUED), "QUEUED may not be sent now: the job has not sent REGISTER");
    cr_assert_eq(send_t(&c, TSL_MSG_STOP), TSL_OK);
    NOT_NOW(send_t(&c, TSL_MSG_PLAN), "PLAN may not be sent now: nothing but ERROR may follow STOP");
    cr_assert_eq(recv_t(&c, TSL_MSG_FAILED), TSL_OK);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_DONE), "DONE out of order: nothing may follow DONE or FAILED");
    /* an ERROR from the job is accepted and ends the conversation */
    tsl_conv_init(&c, TSL_CONV_DAEMON);
    cr_assert_eq(recv_t(&c, TSL_MSG_ERROR), TSL_OK);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_HELLO), "HELLO out of order: nothing may follow ERROR");
}

Test(ipc, daemon_side_of_a_client) {
    tsl_conv c;
    tsl_conv_init(&c, TSL_CONV_DAEMON);
    tsl_msg h = hello_as("client");
    cr_assert_eq(tsl_conv_received(&c, &h), TSL_OK);
    tsl_msg_free(&h);
    cr_assert_eq(c.role, TSL_ROLE_CLIENT);
    cr_assert_eq(send_t(&c, TSL_MSG_WELCOME), TSL_OK);
    NOT_NOW(send_t(&c, TSL_MSG_STATUS), "STATUS may not be sent now: the client has no request waiting for an answer");
    for (int i = 0; i < 3; i++) cr_assert_eq(recv_t(&c, TSL_MSG_STATUS_REQ), TSL_OK);
    cr_assert_eq(recv_t(&c, TSL_MSG_CANCEL), TSL_OK);
    cr_assert_eq(recv_t(&c, TSL_MSG_SHUTDOWN), TSL_OK);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_REGISTER), "REGISTER out of order: a client may send STATUS_REQ, CANCEL and SHUTDOWN");
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_DONE), "DONE out of order: a client may send STATUS_REQ, CANCEL and SHUTDOWN");
    NOT_NOW(send_t(&c, TSL_MSG_PLAN), "PLAN may not be sent now: the daemon answers a client with STATUS, OK or ERROR");
    for (int i = 0; i < 3; i++) cr_assert_eq(send_t(&c, TSL_MSG_STATUS), TSL_OK);
    cr_assert_eq(send_t(&c, TSL_MSG_OK), TSL_OK);
    cr_assert_eq(send_t(&c, TSL_MSG_OK), TSL_OK);
    NOT_NOW(send_t(&c, TSL_MSG_OK), "OK may not be sent now: the client has no request waiting for an answer");
}

Test(ipc, job_side) {
    tsl_conv c;
    tsl_conv_init(&c, TSL_CONV_JOB);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_WELCOME), "WELCOME out of order: the client has not sent HELLO");
    NOT_NOW(send_t(&c, TSL_MSG_REGISTER), "REGISTER may not be sent now: the first message must be HELLO");
    tsl_msg h = hello_as("client");
    NOT_NOW(tsl_conv_sending(&c, &h), "HELLO may not be sent now: a job's HELLO must have role \"job\"");
    tsl_msg_free(&h);
    cr_assert_eq(send_t(&c, TSL_MSG_HELLO), TSL_OK);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_PLAN), "PLAN out of order: the daemon's first message must be WELCOME");
    cr_assert_eq(send_t(&c, TSL_MSG_REGISTER), TSL_OK);
    cr_assert_eq(recv_t(&c, TSL_MSG_WELCOME), TSL_OK);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_WELCOME), "WELCOME out of order: WELCOME was already sent");
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_OK), "OK out of order: the daemon sends a job QUEUED, PLAN, STOP or ERROR");
    NOT_NOW(send_t(&c, TSL_MSG_REPORT), "REPORT may not be sent now: the job has no plan yet");
    NOT_NOW(send_t(&c, TSL_MSG_PLAN_ACK), "PLAN_ACK may not be sent now: no PLAN was sent to the job");
    cr_assert_eq(recv_t(&c, TSL_MSG_QUEUED), TSL_OK);
    cr_assert_eq(recv_t(&c, TSL_MSG_QUEUED), TSL_OK); /* its place moved */
    cr_assert_eq(recv_t(&c, TSL_MSG_PLAN), TSL_OK);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_QUEUED), "QUEUED out of order: the job already has a plan");
    cr_assert_eq(send_t(&c, TSL_MSG_PLAN_ACK), TSL_OK);
    cr_assert_eq(send_t(&c, TSL_MSG_REPORT), TSL_OK);
    cr_assert_eq(recv_t(&c, TSL_MSG_STOP), TSL_OK);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_PLAN), "PLAN out of order: nothing but ERROR may follow STOP");
    cr_assert_eq(send_t(&c, TSL_MSG_FAILED), TSL_OK);
    NOT_NOW(send_t(&c, TSL_MSG_DONE), "DONE may not be sent now: nothing may follow DONE or FAILED");
    cr_assert_eq(recv_t(&c, TSL_MSG_ERROR), TSL_OK);
    NOT_NOW(send_t(&c, TSL_MSG_ERROR), "ERROR may not be sent now: nothing may follow ERROR");
}

Test(ipc, client_side) {
    tsl_conv c;
    tsl_conv_init(&c, TSL_CONV_CLIENT);
    NOT_NOW(send_t(&c, TSL_MSG_HELLO), "HELLO may not be sent now: a client's HELLO must have role \"client\"");
    tsl_msg h = hello_as("client");
    cr_assert_eq(tsl_conv_sending(&c, &h), TSL_OK);
    tsl_msg_free(&h);
    NOT_NOW(send_t(&c, TSL_MSG_REGISTER), "REGISTER may not be sent now: a client may send STATUS_REQ, CANCEL and SHUTDOWN");
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_STATUS), "STATUS out of order: the daemon's first message must be WELCOME");
    cr_assert_eq(recv_t(&c, TSL_MSG_WELCOME), TSL_OK);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_STATUS), "STATUS out of order: the client has no request waiting for an answer");
    cr_assert_eq(send_t(&c, TSL_MSG_STATUS_REQ), TSL_OK);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_PLAN), "PLAN out of order: the daemon answers a client with STATUS, OK or ERROR");
    cr_assert_eq(recv_t(&c, TSL_MSG_STATUS), TSL_OK);
    OUT_OF_ORDER(recv_t(&c, TSL_MSG_OK), "OK out of order: the client has no request waiting for an answer");
    cr_assert_eq(send_t(&c, TSL_MSG_SHUTDOWN), TSL_OK);
    cr_assert_eq(recv_t(&c, TSL_MSG_OK), TSL_OK);
}
