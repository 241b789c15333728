/*
 * tensile/ipc.h - the daemon's wire protocol (docs/PROTOCOL.md): framed,
 * versioned, size-limited JSON messages over a Unix socket, validated per
 * message type; the incremental reader of a poll loop; the per-connection
 * state machine that says which message may come next; the socket's path,
 * listening, accepting (peer uid checked) and connecting (the ipc layer).
 *
 * A message is a 16-byte header (little-endian: magic "TSLP", version 1,
 * type, payload length, flags 0) and a payload of one JSON object. Every
 * message that is received is checked in full before it is handed over:
 * the header (its length against its type's limit before any payload byte
 * is read), the JSON (strict: no duplicate keys, no trailing data, an
 * object) and the fields of its type (each required one present, of its
 * type and in its range, no unknown one). A failure is TSL_ERR_FORMAT with
 * a message naming the message type, the field and the value ("REGISTER:
 * field 'batch': -3 is not a positive integer") and an error code
 * (tsl_msg_err) to reply with: the daemon answers ERROR and closes that
 * connection, and goes on serving the others.
 *
 * Every function here works on blocking and non-blocking sockets alike.
 * Nothing here keeps global state; a tsl_msg_reader or a tsl_conv belongs
 * to one connection and one thread at a time.
 *
 * Example usage (a job process):
 *
 *   char path[108]; int fd;
 *   if (tsl_ipc_default_path(path, sizeof path) != TSL_OK ||
 *       tsl_ipc_connect(path, 2000, &fd) != TSL_OK) die(tsl_last_error());
 *   tsl_conv conv; tsl_conv_init(&conv, TSL_CONV_JOB);
 *   tsl_msg m;
 *   tsl_msg_pack(&m, TSL_MSG_HELLO, "{s:s, s:I, s:s}", "role", "job", "pid",
 *                (json_int_t)getpid(), "client", "tensile 0.1.0");
 *   tsl_conv_sending(&conv, &m);
 *   tsl_msg_send(fd, &m, 5000);
 *   tsl_msg_free(&m);
 *   tsl_msg_err code;
 *   if (tsl_msg_recv(fd, 5000, &m, &code) != TSL_OK || tsl_conv_received(&conv, &m) != TSL_OK)
 *       die(tsl_last_error());   // "no message within 5000 ms", "PLAN out of order: ..."
 *   int64_t cap = tsl_msg_int(&m, "capacity_bytes", 0);   // a WELCOME
 *   tsl_msg_free(&m);
 *
 * and the daemon's side of one connection in its poll loop:
 *
 *   tsl_msg_reader *r = tsl_msg_reader_new();      // per connection
 *   tsl_conv conv; tsl_conv_init(&conv, TSL_CONV_DAEMON);
 *   ... POLLIN on fd:
 *   for (;;) {
 *       tsl_status st = tsl_msg_reader_read(r, fd, &m);
 *       if (st == TSL_OK && m.type == 0) break;                 // wait for more bytes
 *       if (st == TSL_OK && (st = tsl_conv_received(&conv, &m)) != TSL_OK)
 *           code = TSL_MSG_ERR_OUT_OF_ORDER;
 *       else code = tsl_msg_reader_err(r);
 *       if (st != TSL_OK) {                                      // log, reply, close
 *           if (code != TSL_MSG_ERR_NONE) tsl_msg_send_error(fd, code, tsl_last_error(), 1000);
 *           close(fd); tsl_msg_free(&m); break;
 *       }
 *       handle(&m); tsl_msg_free(&m);
 *   }
 */
#ifndef TENSILE_IPC_H
#define TENSILE_IPC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "tensile/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- framing ---------------------------------------------------------------- */

#define TSL_PROTO_MAGIC 0x504c5354u /* the bytes 'T','S','L','P' read as a little-endian u32 */
#define TSL_PROTO_VERSION 1
#define TSL_MSG_HEADER_BYTES 16
#define TSL_MSG_MAX_PAYLOAD ((size_t)16 << 20) /* the global ceiling of any type's limit */

/* The message types and their numbers on the wire (docs/PROTOCOL.md). */
typedef enum tsl_msg_type {
    TSL_MSG_NONE = 0, /* not a message: "nothing yet" from the reader */
    TSL_MSG_HELLO = 1,
    TSL_MSG_WELCOME = 2,
    TSL_MSG_ERROR = 3,
    TSL_MSG_REGISTER = 4,
    TSL_MSG_QUEUED = 5,
    TSL_MSG_PLAN = 6,
    TSL_MSG_PLAN_ACK = 7,
    TSL_MSG_REPORT = 8,
    TSL_MSG_DONE = 9,
    TSL_MSG_FAILED = 10,
    TSL_MSG_RESUME = 11,
    TSL_MSG_STATUS_REQ = 12,
    TSL_MSG_STATUS = 13,
    TSL_MSG_CANCEL = 14,
    TSL_MSG_STOP = 15,
    TSL_MSG_OK = 16,
    TSL_MSG_SHUTDOWN = 17,
    TSL_MSG_TYPE_END /* one past the last type */
} tsl_msg_type;

/* The codes of an ERROR message: what was wrong with what the peer sent. */
typedef enum tsl_msg_err {
    TSL_MSG_ERR_NONE = 0,     /* nothing to reply: no error, or the peer is gone */
    TSL_MSG_ERR_BAD_MESSAGE,  /* "bad-message": bad magic, flags, type, JSON or field */
    TSL_MSG_ERR_TOO_LARGE,    /* "too-large": a length over its type's limit */
    TSL_MSG_ERR_VERSION,      /* "version": a version other than TSL_PROTO_VERSION */
    TSL_MSG_ERR_OUT_OF_ORDER, /* "out-of-order": a valid message the conversation forbids now */
    TSL_MSG_ERR_REFUSED,      /* "refused": a valid request the daemon will not serve */
    TSL_MSG_ERR_TIMEOUT,      /* "timeout": the peer was silent for too long */
    TSL_MSG_ERR_INTERNAL,     /* "internal": the sender failed on its own */
} tsl_msg_err;

/* A received or built message: its type and its JSON object, which has
 * been validated against the type (tsl_msg_validate). The message owns one
 * reference to body; tsl_msg_free drops it. type TSL_MSG_NONE with body
 * NULL is "no message". */
typedef struct tsl_msg {
    tsl_msg_type type;
    json_t *body;
} tsl_msg;

/* The header's fields as on the wire. */
typedef struct tsl_msg_header {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t length; /* payload bytes after the header */
    uint32_t flags;
} tsl_msg_header;

/* "HELLO", "WELCOME", ...; "?" for a number that is no message type. */
const char *tsl_msg_type_name(int type);

/* The largest payload in bytes a message of `type` may have: 16 MiB for
 * REGISTER, RESUME and PLAN, 4 MiB for REPORT and STATUS, 64 KiB for the
 * others; 0 for a number that is no message type. */
size_t tsl_msg_limit(int type);

/* The wire name of an error code ("bad-message", "too-large", ...); ""
 * for TSL_MSG_ERR_NONE and "internal" for a value out of the enum. */
const char *tsl_msg_err_name(tsl_msg_err code);

/* Writes the header of a `type` message with `length` payload bytes into
 * out[0..16): magic, version 1, flags 0, little-endian. */
void tsl_msg_header_encode(tsl_msg_type type, uint32_t length, uint8_t out[TSL_MSG_HEADER_BYTES]);

/* Reads and checks the 16 bytes of a header: the magic, the version, the
 * flags, the type and the length against the type's limit, in that order.
 * TSL_OK with *h filled (and *code NONE), or TSL_ERR_FORMAT with a message
 * naming the field and the value ("message header: version 2 (this side
 * speaks version 1)", "REGISTER: payload of 20000000 bytes is over the
 * limit of 16777216 bytes for REGISTER") and *code the error code to
 * reply with (VERSION, TOO_LARGE, else BAD_MESSAGE); *h is then filled as
 * far as it was read. code may be NULL. */
tsl_status tsl_msg_header_decode(const uint8_t in[TSL_MSG_HEADER_BYTES], tsl_msg_header *h,
                                 tsl_msg_err *code);

/* ---- messages ---------------------------------------------------------------- */

/* Checks that body is a valid payload of a `type` message: a JSON object
 * whose fields are exactly the type's (each required field present, each
 * of its JSON type and within its range; optional fields checked when
 * present; no other field). Does not look into the nested documents that
 * later layers parse (a REGISTER's workload, a PLAN's plan, a WELCOME's
 * profile: objects is all). TSL_OK, or TSL_ERR_FORMAT with a message
 * "TYPE: field 'NAME': VALUE is not ..." (the path of a nested field, e.g.
 * 'jobs[2].state', and "is missing", "unknown field 'x' (value 1)"). */
tsl_status tsl_msg_validate(tsl_msg_type type, const json_t *body);

/* Parses payload[0..len) as the body of a `type` message: UTF-8 JSON with
 * no NUL byte, one object, no duplicate key, nothing after it, then
 * tsl_msg_validate. On success *body is a new reference (the caller
 * decrefs it); on failure *body is NULL and TSL_ERR_FORMAT names the type
 * and what is wrong ("PLAN_ACK: invalid JSON at line 1, column 5: ...",
 * "STATUS: the payload is an array, not a JSON object"); TSL_ERR_OOM. */
tsl_status tsl_msg_parse_payload(tsl_msg_type type, const char *payload, size_t len,
                                 json_t **body);

/* Builds a message from jansson's json_pack format and arguments ("o"
 * arguments are stolen, as json_pack does, also on failure) and validates
 * it. TSL_OK with *out owning the body; else *out is {NONE, NULL} and
 * TSL_ERR_INVALID names the format (a pack error) or TSL_ERR_FORMAT the
 * field (as tsl_msg_validate). */
tsl_status tsl_msg_pack(tsl_msg *out, tsl_msg_type type, const char *fmt, ...);

/* Drops m's body and makes m "no message". NULL is a no-op. */
void tsl_msg_free(tsl_msg *m);

/* The whole message (header and compact JSON payload) in *buf (malloc'd,
 * the caller frees it), *len bytes. m is validated first: a message this
 * side may not send is never encoded. TSL_ERR_FORMAT (as tsl_msg_validate,
 * or a payload over its type's limit, named), TSL_ERR_OOM; *buf NULL then. */
tsl_status tsl_msg_encode(const tsl_msg *m, uint8_t **buf, size_t *len);

/* Decodes one whole message held in buf[0..len): its header checked as
 * tsl_msg_header_decode, len exactly 16 + the header's length (a short or
 * long buffer is named), the payload as tsl_msg_parse_payload. TSL_OK with
 * *out owning the body and *code NONE; else *out is {NONE, NULL},
 * TSL_ERR_FORMAT (or TSL_ERR_OOM) and *code the error code to reply with
 * (code may be NULL). */
tsl_status tsl_msg_decode(const uint8_t *buf, size_t len, tsl_msg *out, tsl_msg_err *code);

/* A JSON string for a free-text field (ERROR's message, a reason): s with
 * every byte that is not part of valid UTF-8 replaced by '?' and every
 * control character by ' ', cut at a character boundary to at most 1024
 * bytes ("(none)" for NULL or ""), so that it always validates. A new
 * reference; NULL only when out of memory. */
json_t *tsl_msg_text(const char *s);

/* Accessors of a validated message: the value of top-level field `field`
 * as an integer, a number (an integer widened) or a string; `dflt` when
 * the field is absent (an optional field) or of another type. The string
 * lives as long as m's body. */
int64_t tsl_msg_int(const tsl_msg *m, const char *field, int64_t dflt);
double tsl_msg_num(const tsl_msg *m, const char *field, double dflt);
const char *tsl_msg_str(const tsl_msg *m, const char *field, const char *dflt);

/* ---- sending and receiving on a socket --------------------------------------- */

/* Writes b[*off..n) to socket fd, advancing *off, without SIGPIPE,
 * resuming after EINTR and partial writes: with timeout_ms < 0 what the
 * socket takes now (TSL_OK with *off possibly < n: the rest goes later);
 * otherwise all of it within timeout_ms, waiting for room. `what` names
 * the bytes in errors: TSL_ERR_TIMEOUT "could not send WHAT within N ms
 * (K of N bytes sent)", TSL_ERR_IO ("the peer closed the connection", the
 * system's reason); after an error part of a message may have gone, so
 * the connection must be closed. */
tsl_status tsl_ipc_write(int fd, const uint8_t *b, size_t n, size_t *off, int timeout_ms,
                         const char *what);

/* Encodes m (tsl_msg_encode) and writes all of it to socket fd within
 * timeout_ms (>= 0), resuming after EINTR and partial writes, without
 * SIGPIPE (MSG_NOSIGNAL). TSL_OK; TSL_ERR_FORMAT/OOM from the encoding
 * (nothing written); TSL_ERR_TIMEOUT "could not send TYPE within N ms"
 * or TSL_ERR_IO ("the peer closed the connection", the system's reason):
 * part of the message may have gone, so the connection must be closed. */
tsl_status tsl_msg_send(int fd, const tsl_msg *m, int timeout_ms);

/* tsl_msg_pack then tsl_msg_send, the body freed in every case. */
tsl_status tsl_msg_sendf(int fd, int timeout_ms, tsl_msg_type type, const char *fmt, ...);

/* Sends ERROR {code, message} (message through tsl_msg_text: any text is
 * fine, e.g. tsl_last_error()) within timeout_ms, as tsl_msg_send. Keeps
 * the calling thread's last error as it was, so that the caller can still
 * log it. The sender closes the connection after it. */
tsl_status tsl_msg_send_error(int fd, tsl_msg_err code, const char *message, int timeout_ms);

/* Waits at most timeout_ms (>= 0) for one whole message on fd and decodes
 * it as the incremental reader does (never reading past its end, so the
 * next message stays in the socket). TSL_OK with *out owning the message;
 * else *out is {NONE, NULL} and: TSL_ERR_TIMEOUT "no message within N ms"
 * (bytes of a message already read are lost: close the connection),
 * TSL_ERR_IO when the peer closed the connection (*code NONE) or the
 * socket failed, TSL_ERR_FORMAT/OOM as tsl_msg_decode with *code the
 * error code to reply with (code may be NULL). */
tsl_status tsl_msg_recv(int fd, int timeout_ms, tsl_msg *out, tsl_msg_err *code);

/* ---- the incremental reader (a poll loop's) ----------------------------------- */

/* One connection's reader: bytes go in as they arrive, whole validated
 * messages come out. It holds at most one message's bytes: the header,
 * then a payload buffer that grows with what arrives up to the header's
 * declared length, which was checked against the type's limit before any
 * payload byte was taken. After an error it stays failed. */
typedef struct tsl_msg_reader tsl_msg_reader;

/* A new reader, waiting for a header; NULL when out of memory. */
tsl_msg_reader *tsl_msg_reader_new(void);

/* Frees r and any partial message it holds. NULL is a no-op. */
void tsl_msg_reader_free(tsl_msg_reader *r);

/* Takes bytes from data[0..n), never past the end of the message being
 * read; *used says how many. TSL_OK with *out a message when one was
 * completed (the bytes after it are not taken: feed data + *used again),
 * else TSL_OK with *out {NONE, NULL} (every byte taken, the message not
 * complete yet). On an error (the header or the payload refused, as
 * tsl_msg_decode; TSL_ERR_OOM) *out is {NONE, NULL}, *used counts the bytes
 * taken up to the fault (16 for a refused header: no payload byte), the
 * reader keeps its code (tsl_msg_reader_err) and every later call returns
 * the same status and message without taking anything. */
tsl_status tsl_msg_reader_feed(tsl_msg_reader *r, const void *data, size_t n, size_t *used,
                               tsl_msg *out);

/* Reads from socket fd what has arrived, without blocking (MSG_DONTWAIT),
 * never past the end of the message being read, as tsl_msg_reader_feed
 * takes bytes: TSL_OK with *out a message (call it again: more may have
 * arrived), TSL_OK with *out {NONE, NULL} when the socket has nothing more
 * for now; TSL_ERR_IO when the peer closed the connection ("the peer
 * closed the connection", or "... in the middle of a REPORT (10 of 200
 * payload bytes)"; code NONE: nobody to reply to) or the socket failed;
 * the errors of tsl_msg_reader_feed. After an error the reader stays
 * failed as there. */
tsl_status tsl_msg_reader_read(tsl_msg_reader *r, int fd, tsl_msg *out);

/* The error code to reply with after a failed feed or read (NONE while
 * the reader is fine, or when the peer closed the connection). */
tsl_msg_err tsl_msg_reader_err(const tsl_msg_reader *r);

/* The bytes r holds now: of the header, then of the payload buffer
 * (allocated, not only received). For tests and the daemon's accounting. */
size_t tsl_msg_reader_held(const tsl_msg_reader *r);

/* ---- the conversation ---------------------------------------------------------- */

/* Which end of a connection a state machine is kept for. */
typedef enum tsl_conv_side {
    TSL_CONV_DAEMON = 1, /* the daemon, talking to a job or a client */
    TSL_CONV_JOB,        /* a job process, talking to the daemon */
    TSL_CONV_CLIENT,     /* a client (tensile status, cancel, shutdown) */
} tsl_conv_side;

/* The role a connection has taken with its HELLO. */
typedef enum tsl_conv_role { TSL_ROLE_NONE = 0, TSL_ROLE_JOB, TSL_ROLE_CLIENT } tsl_conv_role;

/* One connection's state (docs/PROTOCOL.md, "The conversation"): which
 * message each end may send next. A plain value, set up by tsl_conv_init;
 * the fields are read-only outside ipc. */
typedef struct tsl_conv {
    tsl_conv_side side;
    tsl_conv_role role;    /* from the HELLO sent or received; NONE before it */
    unsigned hello : 1;    /* HELLO exchanged */
    unsigned welcome : 1;  /* WELCOME exchanged */
    unsigned registered : 1; /* REGISTER or RESUME exchanged */
    unsigned resumed : 1;  /* ... and it was a RESUME: the job already has a plan */
    unsigned planned : 1;  /* a PLAN exchanged */
    unsigned ended : 1;    /* the job said DONE or FAILED */
    unsigned stopped : 1;  /* the daemon said STOP */
    unsigned closed : 1;   /* an ERROR went either way: nothing more */
    int64_t pending;       /* a client's requests not answered yet */
} tsl_conv;

/* Sets c up for the start of a connection at `side`. */
void tsl_conv_init(tsl_conv *c, tsl_conv_side side);

/* Checks that validated message m may arrive now at c's side, and records
 * it. TSL_OK; else TSL_ERR_FORMAT "TYPE out of order: WHY" ("the first
 * message must be HELLO", "the job has no plan yet", "a client may send
 * STATUS_REQ, CANCEL and SHUTDOWN", "nothing may follow DONE"), to be
 * answered with ERROR code TSL_MSG_ERR_OUT_OF_ORDER; c is unchanged. An
 * ERROR is always accepted and closes the conversation. */
tsl_status tsl_conv_received(tsl_conv *c, const tsl_msg *m);

/* Checks that c's side may send validated message m now, and records it:
 * TSL_OK, or TSL_ERR_INVALID "TYPE may not be sent now: WHY" (a bug of the
 * caller; c unchanged). ERROR may always be sent and closes the
 * conversation. The daemon's side must record its WELCOME, QUEUED, PLAN,
 * STATUS and OK here: what it sent decides what it may receive (a
 * PLAN_ACK only after a PLAN, a REPORT only once the job has a plan). */
tsl_status tsl_conv_sending(tsl_conv *c, const tsl_msg *m);

/* ---- sockets ------------------------------------------------------------------- */

/* The daemon's default socket path into buf[0..n): 
 * $XDG_RUNTIME_DIR/tensile/tensiled.sock when XDG_RUNTIME_DIR is set to a
 * folder, else /tmp/tensile-UID/tensiled.sock. The folder is created with
 * mode 0700 when missing; one that exists must be a folder (not a link)
 * owned by this uid and writable by no one else. TSL_OK; TSL_ERR_IO naming
 * the folder and what is wrong ("/tmp/tensile-1000 is owned by uid 0, not
 * by uid 1000", "... is writable by its group or others (mode 0777)"), or
 * TSL_ERR_INVALID when the path does not fit buf or a socket address. */
tsl_status tsl_ipc_default_path(char *buf, size_t n);

/* Listens on a Unix stream socket at `path`; *fd (close-on-exec, blocking)
 * on success, -1 otherwise. A socket file that no one answers on is stale
 * and replaced; one that a daemon answers on is refused with TSL_ERR_IO
 * "PATH is already served by a running daemon"; anything else at path (a
 * file, a folder) with TSL_ERR_IO. The socket file has mode 0600 and
 * appears only once the socket listens. TSL_ERR_INVALID for a path too
 * long for a socket address; TSL_ERR_IO naming the path and the system's
 * reason. */
tsl_status tsl_ipc_listen(const char *path, int *fd);

/* Closes listening socket fd (if >= 0) and removes the socket file at
 * path unless another daemon now answers there. */
void tsl_ipc_unlisten(int fd, const char *path);

/* Accepts one connection from listening socket lfd: *fd (close-on-exec)
 * and *pid, the peer's pid (SO_PEERCRED). TSL_OK with *fd -1 when no
 * connection is waiting on a non-blocking lfd. A peer of another uid is
 * closed at once: TSL_ERR_IO "refused a connection from pid P of uid U:
 * only uid V may use this daemon". TSL_ERR_IO with the system's reason
 * otherwise (e.g. out of file descriptors). pid may be NULL. */
tsl_status tsl_ipc_accept(int lfd, int *fd, pid_t *pid);

/* Connects to the daemon's socket at path within timeout_ms (>= 0; a
 * connection waits only while the daemon's backlog is full) and checks the
 * daemon runs as this uid. *fd (close-on-exec, blocking) or -1. TSL_ERR_IO
 * "no daemon at PATH; start one with 'tensile serve'" when nothing listens
 * there, "the daemon at PATH runs as uid U, not as uid V", or the system's
 * reason; TSL_ERR_TIMEOUT; TSL_ERR_INVALID for a path too long. */
tsl_status tsl_ipc_connect(const char *path, int timeout_ms, int *fd);

#ifdef __cplusplus
}
#endif
#endif
