/*
 * fuzz_proto.c - libFuzzer harness for the daemon's wire protocol
 * (src/ipc/: the incremental reader, the header checks, the payload parser
 * and the per-type validator, the conversation).
 *
 * Each input is a byte stream from a peer. It is fed to a reader whole and
 * again in small chunks (sizes from the input's length); both must give the
 * same messages and end alike: either every byte taken as whole messages,
 * or a partial message waiting for more, or one clean error (TSL_ERR_FORMAT
 * or TSL_ERR_OOM, a message naming a message type or the header, an error
 * code to reply with, and the reader failed for good: later feeds take
 * nothing and repeat the error). The reader never holds more than a header
 * and its type's limit. Every message must validate, re-encode, decode
 * from its own bytes exactly as the reader gave it, and encode to the same
 * bytes twice. The messages also go through the daemon's and a job's
 * conversation, which may refuse them only as out of order. An input that
 * starts with '{' is also parsed as the payload of every type. Anything
 * else aborts, which libFuzzer reports as a crash.
 *
 * Built with the libraries of the line below (and what they link) by
 * scripts/fuzz.sh with libFuzzer, and by the suite as fuzz_proto_replay over
 * fuzz/corpus/fuzz_proto (CMakeLists.txt reads the same line).
 * fuzz-link: tsl_ipc
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensile/ipc.h"

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "fuzz_proto: check failed at line %d: %s (last error: %s)\n", \
                    __LINE__, #cond, tsl_last_error());                                     \
            abort();                                                                        \
        }                                                                                   \
    } while (0)

/* What a run of the reader over a stream gave. */
typedef struct outcome {
    tsl_msg *msgs;
    size_t n, cap;
    tsl_status st;   /* TSL_OK: no error */
    char err[1024];  /* the error's message */
    tsl_msg_err code;
    size_t taken;    /* bytes taken in all */
} outcome;

/* A message as the reader gave it, from its own bytes data[0..len). */
static void check_message(const tsl_msg *m, const uint8_t *data, size_t len) {
    CHECK(m->type > TSL_MSG_NONE && m->type < TSL_MSG_TYPE_END);
    CHECK(json_is_object(m->body));
    CHECK(tsl_msg_validate(m->type, m->body) == TSL_OK);
    CHECK(len >= TSL_MSG_HEADER_BYTES && len - TSL_MSG_HEADER_BYTES <= tsl_msg_limit(m->type));
    /* the same bytes decoded whole give the same message */
    tsl_msg d;
    tsl_msg_err code = TSL_MSG_ERR_INTERNAL;
    CHECK(tsl_msg_decode(data, len, &d, &code) == TSL_OK);
    CHECK(code == TSL_MSG_ERR_NONE && d.type == m->type && json_equal(d.body, m->body));
    tsl_msg_free(&d);
    /* re-encoded, it decodes to the same JSON, and encodes to the same bytes again */
    uint8_t *b1, *b2;
    size_t n1, n2;
    CHECK(tsl_msg_encode(m, &b1, &n1) == TSL_OK);
    CHECK(tsl_msg_decode(b1, n1, &d, &code) == TSL_OK);
    CHECK(d.type == m->type && json_equal(d.body, m->body));
    CHECK(tsl_msg_encode(&d, &b2, &n2) == TSL_OK);
    CHECK(n1 == n2 && memcmp(b1, b2, n1) == 0);
    free(b1);
    free(b2);
    tsl_msg_free(&d);
}

static void check_error(const tsl_msg_reader *r, tsl_status st) {
    CHECK(st == TSL_ERR_FORMAT || st == TSL_ERR_OOM);
    const char *e = tsl_last_error();
    CHECK(e[0] != '\0');
    int named = strncmp(e, "message header: ", 16) == 0;
    for (int t = 1; t < TSL_MSG_TYPE_END && !named; t++) {
        size_t k = strlen(tsl_msg_type_name(t));
        named = strncmp(e, tsl_msg_type_name(t), k) == 0 && e[k] == ':';
    }
    CHECK(named);
    CHECK(tsl_msg_reader_err(r) != TSL_MSG_ERR_NONE);
}

/* Feeds data[0..size) to a new reader in chunks of `chunk` bytes (0: all
 * at once), checking each message and the end. */
static void run(const uint8_t *data, size_t size, size_t chunk, outcome *o) {
    memset(o, 0, sizeof *o);
    tsl_msg_reader *r = tsl_msg_reader_new();
    CHECK(r);
    size_t off = 0, start = 0; /* start: where the message being read began */
    while (off < size && o->st == TSL_OK) {
        size_t n = chunk && chunk < size - off ? chunk : size - off;
        tsl_msg m;
        size_t used = 0;
        tsl_status st = tsl_msg_reader_feed(r, data + off, n, &used, &m);
        CHECK(used <= n);
        off += used;
        CHECK(tsl_msg_reader_held(r) <= TSL_MSG_HEADER_BYTES + TSL_MSG_MAX_PAYLOAD);
        if (st != TSL_OK) {
            CHECK(m.type == TSL_MSG_NONE && m.body == NULL);
            check_error(r, st);
            o->st = st;
            o->code = tsl_msg_reader_err(r);
            snprintf(o->err, sizeof o->err, "%s", tsl_last_error());
            /* failed for good */
            tsl_msg again;
            size_t used2 = 7;
            CHECK(tsl_msg_reader_feed(r, data, size, &used2, &again) == st);
            CHECK(used2 == 0 && again.body == NULL && strcmp(tsl_last_error(), o->err) == 0);
            break;
        }
        if (m.type == TSL_MSG_NONE) {
            CHECK(m.body == NULL && used == n); /* nothing complete: every byte taken */
            continue;
        }
        check_message(&m, data + start, off - start);
        start = off;
        if (o->n == o->cap) {
            o->cap = o->cap ? 2 * o->cap : 16;
            o->msgs = realloc(o->msgs, o->cap * sizeof *o->msgs);
            CHECK(o->msgs);
        }
        o->msgs[o->n++] = m;
    }
    o->taken = off;
    if (o->st == TSL_OK) CHECK(off == size);
    tsl_msg_reader_free(r);
}

static void drop(outcome *o) {
    for (size_t i = 0; i < o->n; i++) tsl_msg_free(&o->msgs[i]);
    free(o->msgs);
}

/* The messages through the conversation at the daemon's end and at a
 * job's: accepted, or refused as out of order and nothing else. */
static void converse(const outcome *o) {
    tsl_conv daemon, job;
    tsl_conv_init(&daemon, TSL_CONV_DAEMON);
    tsl_conv_init(&job, TSL_CONV_JOB);
    tsl_msg hello;
    CHECK(tsl_msg_pack(&hello, TSL_MSG_HELLO, "{s:s, s:i, s:s}", "role", "job", "pid", 1, "client",
                       "fuzz") == TSL_OK);
    CHECK(tsl_conv_sending(&job, &hello) == TSL_OK);
    tsl_msg_free(&hello);
    for (size_t i = 0; i < o->n; i++) {
        tsl_status st = tsl_conv_received(&daemon, &o->msgs[i]);
        CHECK(st == TSL_OK ||
              (st == TSL_ERR_FORMAT && strstr(tsl_last_error(), " out of order: ")));
        st = tsl_conv_received(&job, &o->msgs[i]);
        CHECK(st == TSL_OK ||
              (st == TSL_ERR_FORMAT && strstr(tsl_last_error(), " out of order: ")));
        st = tsl_conv_sending(&daemon, &o->msgs[i]);
        CHECK(st == TSL_OK ||
              (st == TSL_ERR_INVALID && strstr(tsl_last_error(), " may not be sent now: ")));
    }
}

/* An input that looks like a JSON object: a payload of every type. */
static void as_payloads(const uint8_t *data, size_t size) {
    for (int t = 1; t < TSL_MSG_TYPE_END; t++) {
        json_t *body = (json_t *)&body;
        tsl_status st = tsl_msg_parse_payload((tsl_msg_type)t, (const char *)data, size, &body);
        if (st != TSL_OK) {
            CHECK(st == TSL_ERR_FORMAT || st == TSL_ERR_OOM);
            CHECK(body == NULL);
            size_t k = strlen(tsl_msg_type_name(t));
            CHECK(strncmp(tsl_last_error(), tsl_msg_type_name(t), k) == 0);
            continue;
        }
        tsl_msg m = {(tsl_msg_type)t, body};
        uint8_t *b;
        size_t n;
        CHECK(tsl_msg_encode(&m, &b, &n) == TSL_OK);
        check_message(&m, b, n);
        free(b);
        tsl_msg_free(&m);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    outcome whole, chunked;
    run(data, size, 0, &whole);
    run(data, size, 1 + size % 7, &chunked);
    /* the same messages and the same end, however the bytes came */
    CHECK(whole.n == chunked.n && whole.st == chunked.st && whole.code == chunked.code);
    CHECK(whole.taken == chunked.taken && strcmp(whole.err, chunked.err) == 0);
    for (size_t i = 0; i < whole.n; i++)
        CHECK(whole.msgs[i].type == chunked.msgs[i].type &&
              json_equal(whole.msgs[i].body, chunked.msgs[i].body));
    converse(&whole);
    drop(&whole);
    drop(&chunked);
    if (size > 0 && data[0] == '{') as_payloads(data, size);
    return 0;
}
