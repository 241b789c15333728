/*
 * conv.c - the conversation on one connection (docs/PROTOCOL.md, "The
 * conversation"): which message each end may send next, kept at each end.
 *
 *   client -> daemon  HELLO first; then, for a job, REGISTER or RESUME
 *                     once, then PLAN_ACK (after a PLAN), REPORT and DONE
 *                     (once it has a plan: a PLAN or its RESUME), FAILED;
 *                     nothing after DONE or FAILED. For a client,
 *                     STATUS_REQ, CANCEL and SHUTDOWN, any number of times.
 *   daemon -> client  WELCOME first (after HELLO); then, to a job, QUEUED
 *                     (before its first PLAN), PLAN, STOP (nothing after
 *                     it); to a client, one STATUS or OK per request.
 *   either way        ERROR at any time; nothing after it.
 *
 * Both directions are checked at each end: an end records what it sends
 * (tsl_conv_sending) and what it receives (tsl_conv_received), and the
 * flags of tsl_conv say what has happened so far.
 */
#include <string.h>

#include "tensile/ipc.h"

void tsl_conv_init(tsl_conv *c, tsl_conv_side side) {
    memset(c, 0, sizeof *c);
    c->side = side;
}

/* The role a HELLO names (validated: "job" or "client"). */
static tsl_conv_role hello_role(const tsl_msg *m) {
    const char *r = tsl_msg_str(m, "role", "");
    return strcmp(r, "job") == 0 ? TSL_ROLE_JOB : TSL_ROLE_CLIENT;
}

/* Why a message from the client end (job or client) may not come now, or
 * NULL if it may; records it when `apply`. */
static const char *client_msg(tsl_conv *c, const tsl_msg *m, int apply) {
    tsl_msg_type t = m->type;
    if (!c->hello) {
        if (t != TSL_MSG_HELLO) return "the first message must be HELLO";
        if (c->side == TSL_CONV_JOB && hello_role(m) != TSL_ROLE_JOB)
            return "a job's HELLO must have role \"job\"";
        if (c->side == TSL_CONV_CLIENT && hello_role(m) != TSL_ROLE_CLIENT)
            return "a client's HELLO must have role \"client\"";
        if (apply) {
            c->hello = 1;
            c->role = hello_role(m);
        }
        return NULL;
    }
    if (t == TSL_MSG_HELLO) return "HELLO was already sent";
    if (c->role == TSL_ROLE_CLIENT) {
        if (t != TSL_MSG_STATUS_REQ && t != TSL_MSG_CANCEL && t != TSL_MSG_SHUTDOWN)
            return "a client may send STATUS_REQ, CANCEL and SHUTDOWN";
        if (apply) c->pending++;
        return NULL;
    }
    if (c->ended) return "nothing may follow DONE or FAILED";
    switch (t) {
    case TSL_MSG_REGISTER:
    case TSL_MSG_RESUME:
        if (c->registered) return "the job has already sent REGISTER or RESUME";
        if (apply) {
            c->registered = 1;
            c->resumed = t == TSL_MSG_RESUME;
        }
        return NULL;
    case TSL_MSG_PLAN_ACK:
        if (!c->planned) return "no PLAN was sent to the job";
        return NULL;
    case TSL_MSG_REPORT:
    case TSL_MSG_DONE:
        if (!c->planned && !c->resumed) return "the job has no plan yet";
        if (apply && t == TSL_MSG_DONE) c->ended = 1;
        return NULL;
    case TSL_MSG_FAILED:
        if (!c->registered) return "the job has not sent REGISTER or RESUME";
        if (apply) c->ended = 1;
        return NULL;
    default: return "a job may send REGISTER or RESUME, then PLAN_ACK, REPORT, DONE and FAILED";
    }
}

/* Why a message from the daemon may not come now, or NULL; records it when
 * `apply`. */
static const char *daemon_msg(tsl_conv *c, const tsl_msg *m, int apply) {
    tsl_msg_type t = m->type;
    if (!c->hello) return "the client has not sent HELLO";
    if (!c->welcome) {
        if (t != TSL_MSG_WELCOME) return "the daemon's first message must be WELCOME";
        if (apply) c->welcome = 1;
        return NULL;
    }
    if (t == TSL_MSG_WELCOME) return "WELCOME was already sent";
    if (c->role == TSL_ROLE_CLIENT) {
        if (t != TSL_MSG_STATUS && t != TSL_MSG_OK)
            return "the daemon answers a client with STATUS, OK or ERROR";
        if (c->pending == 0) return "the client has no request waiting for an answer";
        if (apply) c->pending--;
        return NULL;
    }
    if (c->stopped) return "nothing but ERROR may follow STOP";
    switch (t) {
    case TSL_MSG_QUEUED:
        if (!c->registered || c->resumed) return "the job has not sent REGISTER";
        if (c->planned) return "the job already has a plan";
        return NULL;
    case TSL_MSG_PLAN:
        if (!c->registered) return "the job has not sent REGISTER or RESUME";
        if (apply) c->planned = 1;
        return NULL;
    case TSL_MSG_STOP:
        if (apply) c->stopped = 1;
        return NULL;
    default: return "the daemon sends a job QUEUED, PLAN, STOP or ERROR";
    }
}

/* Why m may not go now, from the daemon (from_daemon) or from the other
 * end, or NULL if it may; records it when `apply`. */
static const char *check(tsl_conv *c, const tsl_msg *m, int from_daemon, int apply) {
    if (c->closed) return "nothing may follow ERROR";
    if (m->type == TSL_MSG_ERROR) {
        if (apply) c->closed = 1;
        return NULL;
    }
    return from_daemon ? daemon_msg(c, m, apply) : client_msg(c, m, apply);
}

tsl_status tsl_conv_received(tsl_conv *c, const tsl_msg *m) {
    const char *why = check(c, m, c->side != TSL_CONV_DAEMON, 0);
    if (why)
        return tsl_fail(TSL_ERR_FORMAT, "%s out of order: %s", tsl_msg_type_name(m->type), why);
    check(c, m, c->side != TSL_CONV_DAEMON, 1);
    return TSL_OK;
}

tsl_status tsl_conv_sending(tsl_conv *c, const tsl_msg *m) {
    const char *why = check(c, m, c->side == TSL_CONV_DAEMON, 0);
    if (why)
        return tsl_fail(TSL_ERR_INVALID, "%s may not be sent now: %s", tsl_msg_type_name(m->type),
                        why);
    check(c, m, c->side == TSL_CONV_DAEMON, 1);
    return TSL_OK;
}
