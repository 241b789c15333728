/*
 * client.c - a job process's side of the daemon (tensile/daemon.h): its
 * connection, its registration, the plans it receives (parsed and checked
 * against its own workload), its acknowledgements, reports and end, and
 * its reconnection to a restarted daemon.
 *
 * One thread uses a client at a time. Every receive goes through the
 * connection's state machine (tsl_conv), so a daemon that breaks the
 * conversation is refused like any bad message.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/assert.h"
#include "daemon/client_out.h"
#include "tensile/daemon.h"
#include "tensile/ipc.h"
#include "tensile/sched_json.h"

struct tsl_dclient {
    int fd;                  /* -1 when disconnected */
    char path[108];
    tsl_conv conv;
    tsl_msg_reader *reader;  /* for tsl_dclient_poll */
    tsl__outq out;           /* what is sent, until the socket takes it (client_out.h) */
    /* the registration, kept for RESUME */
    char name[64], model[64];
    int64_t batch, iterations;
    double rate;
    const tsl_workload *w;   /* the caller's */
    int64_t job_id;
};

void tsl_dplan_free(tsl_dplan *p) {
    if (!p) return;
    tsl_plan_free(p->plan);
    tsl_workload_free(p->w);
    memset(p, 0, sizeof *p);
}

int tsl_dclient_connected(const tsl_dclient *c) { return c && c->fd >= 0; }

static void disconnect(tsl_dclient *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    tsl__outq_reset(&c->out);
    tsl_msg_reader_free(c->reader);
    c->reader = NULL;
}

void tsl_dclient_free(tsl_dclient *c) {
    if (!c) return;
    disconnect(c);
    free(c);
}

/* Sends a message built from fmt through the conversation: queued
 * (client_out.h), then written. A REPORT is written as far as the socket
 * takes it now, and the rest later: a daemon busy planning never holds the
 * job up. Any other message is waited for until the daemon has it all,
 * up to TSL_DCLIENT_REPLY_MS. On a failure the connection is closed (part
 * of a message may have gone). */
static tsl_status send_msg(tsl_dclient *c, tsl_msg_type type, const char *fmt, ...) {
    if (c->fd < 0) return tsl_fail(TSL_ERR_IO, "not connected to a daemon");
    tsl_msg m;
    va_list ap;
    va_start(ap, fmt);
    json_error_t err;
    json_t *body = json_vpack_ex(&err, 0, fmt, ap);
    va_end(ap);
    if (!body) return tsl_fail(TSL_ERR_INVALID, "%s: %s", tsl_msg_type_name(type), err.text);
    tsl_status st = tsl_msg_validate(type, body);
    m.type = type;
    m.body = body;
    uint8_t *buf = NULL;
    size_t len = 0;
    if (st == TSL_OK) st = tsl_conv_sending(&c->conv, &m);
    if (st == TSL_OK) st = tsl_msg_encode(&m, &buf, &len);
    tsl_msg_free(&m);
    if (st != TSL_OK) return st;
    int report = type == TSL_MSG_REPORT;
    st = tsl__outq_put(&c->out, buf, len, report);
    free(buf);
    if (st == TSL_OK) st = tsl__outq_flush(&c->out, c->fd, report ? 0 : TSL_DCLIENT_REPLY_MS);
    if (st != TSL_OK) disconnect(c);
    return st;
}

/* Receives one message within timeout_ms through the conversation. An
 * ERROR from the daemon becomes TSL_ERR_INVALID with its text; anything
 * refused closes the connection. */
static tsl_status recv_msg(tsl_dclient *c, int timeout_ms, tsl_msg *m) {
    if (c->fd < 0) return tsl_fail(TSL_ERR_IO, "not connected to a daemon");
    tsl_msg_err code = TSL_MSG_ERR_NONE;
    tsl_status st = tsl_msg_recv(c->fd, timeout_ms, m, &code);
    if (st == TSL_OK) st = tsl_conv_received(&c->conv, m);
    if (st != TSL_OK) {
        if ((code != TSL_MSG_ERR_NONE || st == TSL_ERR_FORMAT) &&
            tsl__outq_pending(&c->out) == 0) /* never inside a queued message */
            tsl_msg_send_error(c->fd, code ? code : TSL_MSG_ERR_OUT_OF_ORDER, tsl_last_error(),
                               1000);
        if (st != TSL_ERR_TIMEOUT) disconnect(c);
        tsl_msg_free(m);
        return st;
    }
    if (m->type == TSL_MSG_ERROR) {
        char why[1200];
        snprintf(why, sizeof why, "%s", tsl_msg_str(m, "message", "?"));
        tsl_msg_free(m);
        disconnect(c);
        return tsl_fail(TSL_ERR_INVALID, "the daemon refused: %s", why);
    }
    return TSL_OK;
}

/* Reads a WELCOME's figures into *dev. */
static tsl_status read_welcome(const tsl_msg *m, tsl_dclient_device *dev) {
    if (m->type != TSL_MSG_WELCOME)
        return tsl_fail(TSL_ERR_FORMAT, "the daemon answered %s, not WELCOME",
                        tsl_msg_type_name(m->type));
    if (!dev) return TSL_OK;
    memset(dev, 0, sizeof *dev);
    dev->capacity = (size_t)tsl_msg_int(m, "capacity_bytes", 0);
    dev->pcie_gbps = tsl_msg_num(m, "pcie_gbps", 0);
    dev->job_timeout_s = tsl_msg_num(m, "job_timeout_s", 0);
    snprintf(dev->shm, sizeof dev->shm, "%s", tsl_msg_str(m, "shm", ""));
    char *text = json_dumps(json_object_get(m->body, "profile"), JSON_COMPACT);
    if (!text) return tsl_fail(TSL_ERR_OOM, "out of host memory");
    tsl_status st = tsl_profile_parse_json(text, strlen(text), "WELCOME's profile", &dev->profile);
    free(text);
    return st;
}

/* HELLO, then the WELCOME. */
static tsl_status hello(tsl_dclient *c, int timeout_ms, tsl_dclient_device *dev) {
    tsl_conv_init(&c->conv, TSL_CONV_JOB);
    tsl_status st = send_msg(c, TSL_MSG_HELLO, "{s:s, s:I, s:s}", "role", "job", "pid", (json_int_t)getpid(),
                             "client", "tensile 0.1.0");
    tsl_msg m = {0};
    if (st == TSL_OK) st = recv_msg(c, timeout_ms, &m);
    if (st == TSL_OK) st = read_welcome(&m, dev);
    tsl_msg_free(&m);
    return st;
}

static tsl_status open_conn(tsl_dclient *c, int timeout_ms) {
    tsl_status st = tsl_ipc_connect(c->path, timeout_ms, &c->fd);
    if (st != TSL_OK) {
        c->fd = -1;
        return st;
    }
    if (!(c->reader = tsl_msg_reader_new())) {
        disconnect(c);
        return tsl_fail(TSL_ERR_OOM, "out of host memory");
    }
    return TSL_OK;
}

tsl_status tsl_dclient_connect(const char *socket_path, int timeout_ms, tsl_dclient **out,
                               tsl_dclient_device *dev) {
    *out = NULL;
    tsl_dclient *c = calloc(1, sizeof *c);
    if (!c) return tsl_fail(TSL_ERR_OOM, "out of host memory");
    c->fd = -1;
    tsl__outq_reset(&c->out);
    tsl_status st = TSL_OK;
    if (socket_path) {
        if (strlen(socket_path) >= sizeof c->path)
            st = tsl_fail(TSL_ERR_INVALID, "socket path '%s' is too long", socket_path);
        else snprintf(c->path, sizeof c->path, "%s", socket_path);
    } else {
        st = tsl_ipc_default_path(c->path, sizeof c->path);
    }
    if (st == TSL_OK) st = open_conn(c, timeout_ms);
    if (st == TSL_OK) st = hello(c, timeout_ms, dev);
    if (st != TSL_OK) {
        tsl_dclient_free(c);
        return st;
    }
    *out = c;
    return TSL_OK;
}

/* The workload as JSON (a new reference), NULL if out of memory. */
static json_t *workload_json(const tsl_workload *w) {
    char *text;
    size_t len;
    if (tsl_workload_to_text(w, &text, &len) != TSL_OK) return NULL;
    json_t *j = json_loadb(text, len, 0, NULL);
    free(text);
    return j;
}

tsl_status tsl_dclient_register(tsl_dclient *c, const char *name, const char *model,
                                int64_t batch, int64_t iterations, double max_swap_rate,
                                const tsl_workload *w) {
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->model, sizeof c->model, "%s", model);
    c->batch = batch;
    c->iterations = iterations;
    c->rate = max_swap_rate;
    c->w = w;
    json_t *wj = workload_json(w);
    if (!wj) return tsl_fail(TSL_ERR_OOM, "out of host memory for the workload's JSON");
    return send_msg(c, TSL_MSG_REGISTER, "{s:s, s:s, s:I, s:I, s:f, s:o}", "name", name, "model",
                    model, "batch", (json_int_t)batch, "iterations", (json_int_t)iterations,
                    "max_swap_rate", max_swap_rate, "workload", wj);
}

/* Parses a PLAN against the job's workload: the latencies it was made
 * from, then the plan by names. */
static tsl_status read_plan(tsl_dclient *c, const tsl_msg *m, tsl_dplan *out) {
    memset(out, 0, sizeof *out);
    out->job_id = tsl_msg_int(m, "job_id", 0);
    out->seq = tsl_msg_int(m, "plan_seq", 0);
    out->slot = (int)tsl_msg_int(m, "slot", 0);
    out->region = (size_t)tsl_msg_int(m, "region_bytes", 0);
    out->share = tsl_msg_num(m, "channel_share", 0);
    snprintf(out->reason, sizeof out->reason, "%s", tsl_msg_str(m, "reason", "resume"));
    if (!(out->share > 0))
        return tsl_fail(TSL_ERR_FORMAT, "PLAN: field 'channel_share': %g is no share of the "
                                        "channels", out->share);
    json_t *lat = json_object_get(m->body, "latencies_us");
    int32_t n = c->w->n_ops;
    if ((int64_t)json_array_size(lat) != n)
        return tsl_fail(TSL_ERR_FORMAT, "PLAN: field 'latencies_us': %zu latencies for the "
                                        "workload's %d ops", json_array_size(lat), (int)n);
    double *us = malloc(sizeof *us * (size_t)n);
    if (!us) return tsl_fail(TSL_ERR_OOM, "out of host memory");
    for (int32_t i = 0; i < n; i++) us[i] = json_number_value(json_array_get(lat, (size_t)i));
    out->w = tsl_workload_copy(c->w, us);
    free(us);
    if (!out->w) return tsl_fail(TSL_ERR_OOM, "out of host memory");
    char *text = json_dumps(json_object_get(m->body, "plan"), JSON_COMPACT);
    if (!text) {
        tsl_dplan_free(out);
        return tsl_fail(TSL_ERR_OOM, "out of host memory");
    }
    const tsl_workload *ws[1] = {out->w};
    tsl_status st = tsl_plan_parse_json(text, strlen(text), "PLAN", ws, 1, &out->plan);
    free(text);
    if (st != TSL_OK) tsl_dplan_free(out);
    else c->job_id = out->job_id;
    return st;
}

tsl_status tsl_dclient_wait_plan(tsl_dclient *c, int timeout_ms, tsl_dclient_queued_fn on_queued,
                                 void *user, tsl_dplan *out) {
    memset(out, 0, sizeof *out);
    for (;;) {
        tsl_msg m = {0};
        tsl_status st = recv_msg(c, timeout_ms < 0 ? 24 * 3600 * 1000 : timeout_ms, &m);
        if (st == TSL_ERR_TIMEOUT && timeout_ms < 0) continue;
        if (st != TSL_OK) return st;
        if (m.type == TSL_MSG_QUEUED) {
            c->job_id = tsl_msg_int(&m, "job_id", 0);
            if (on_queued)
                on_queued(user, c->job_id, tsl_msg_str(&m, "reason", ""),
                          (size_t)tsl_msg_int(&m, "needed_bytes", 0),
                          (size_t)tsl_msg_int(&m, "available_bytes", 0),
                          (int)tsl_msg_int(&m, "position", 1));
            tsl_msg_free(&m);
            continue;
        }
        if (m.type == TSL_MSG_STOP) {
            char why[1200];
            snprintf(why, sizeof why, "%s", tsl_msg_str(&m, "reason", "?"));
            tsl_msg_free(&m);
            return tsl_fail(TSL_ERR_INVALID, "stopped by the daemon: %s", why);
        }
        st = m.type == TSL_MSG_PLAN ? read_plan(c, &m, out)
                                    : tsl_fail(TSL_ERR_FORMAT, "the daemon sent %s, not a PLAN",
                                               tsl_msg_type_name(m.type));
        tsl_msg_free(&m);
        return st;
    }
}

tsl_status tsl_dclient_poll(tsl_dclient *c, int *got, tsl_dplan *out, char *reason,
                            size_t reason_len) {
    *got = 0;
    if (c->fd < 0) return tsl_fail(TSL_ERR_IO, "not connected to a daemon");
    tsl_status st = tsl__outq_flush(&c->out, c->fd, 0); /* a queued REPORT, if the daemon reads */
    if (st != TSL_OK) {
        disconnect(c);
        return st;
    }
    tsl_msg m = {0};
    st = tsl_msg_reader_read(c->reader, c->fd, &m);
    if (st == TSL_OK && m.type == TSL_MSG_NONE) return TSL_OK;
    if (st == TSL_OK) st = tsl_conv_received(&c->conv, &m);
    if (st != TSL_OK) {
        disconnect(c);
        tsl_msg_free(&m);
        return st == TSL_ERR_IO ? st : tsl_fail(TSL_ERR_IO, "the daemon's message was refused: %s",
                                                tsl_last_error());
    }
    if (m.type == TSL_MSG_PLAN) {
        st = read_plan(c, &m, out);
        if (st == TSL_OK) *got = 1;
    } else if (m.type == TSL_MSG_STOP) {
        snprintf(reason, reason_len, "%s", tsl_msg_str(&m, "reason", "?"));
        *got = 2;
    } else if (m.type == TSL_MSG_ERROR) {
        snprintf(reason, reason_len, "%s", tsl_msg_str(&m, "message", "?"));
        disconnect(c);
        st = tsl_fail(TSL_ERR_IO, "the daemon closed the connection: %s", reason);
    }
    tsl_msg_free(&m);
    return st;
}

tsl_status tsl_dclient_ack(tsl_dclient *c, int64_t seq, int64_t iteration,
                           size_t footprint_bytes) {
    return send_msg(c, TSL_MSG_PLAN_ACK, "{s:I, s:I, s:I}", "plan_seq", (json_int_t)seq,
                    "iteration", (json_int_t)iteration, "footprint_bytes",
                    (json_int_t)footprint_bytes);
}

tsl_status tsl_dclient_report_send(tsl_dclient *c, const tsl_dclient_report *r) {
    json_t *lat = json_array();
    for (int32_t i = 0; lat && i < r->n_ops; i++)
        if (json_array_append_new(lat, json_real(r->latencies_us[i])) != 0) {
            json_decref(lat);
            lat = NULL;
        }
    if (!lat) return tsl_fail(TSL_ERR_OOM, "out of host memory for a report");
    return send_msg(c, TSL_MSG_REPORT, "{s:I, s:f, s:f, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:f}",
                    "iteration", (json_int_t)r->iteration, "iter_ms", r->iter_ms, "kernel_ms",
                    r->kernel_ms, "latencies_us", lat, "load_bytes", (json_int_t)r->load,
                    "footprint_bytes", (json_int_t)r->footprint, "peak_footprint_bytes",
                    (json_int_t)r->peak_footprint, "swaps", (json_int_t)r->swaps, "evictions",
                    (json_int_t)r->evictions, "passive_swaps", (json_int_t)r->passive_swaps,
                    "stall_ms", r->stall_ms);
}

tsl_status tsl_dclient_done(tsl_dclient *c, int64_t iterations, uint64_t param_checksum,
                            double iter_ms, size_t peak_footprint) {
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)param_checksum);
    return send_msg(c, TSL_MSG_DONE, "{s:I, s:s, s:f, s:I}", "iterations", (json_int_t)iterations,
                    "param_checksum", hex, "iter_ms", iter_ms, "peak_footprint_bytes",
                    (json_int_t)peak_footprint);
}

tsl_status tsl_dclient_failed(tsl_dclient *c, const char *message) {
    json_t *t = tsl_msg_text(message);
    if (!t) return tsl_fail(TSL_ERR_OOM, "out of host memory");
    return send_msg(c, TSL_MSG_FAILED, "{s:o}", "message", t);
}

/* The latencies of workload w as a JSON array (a new reference). */
static json_t *latencies_json(const tsl_workload *w) {
    json_t *a = json_array();
    for (int32_t i = 0; a && i < w->n_ops; i++)
        if (json_array_append_new(a, json_real(w->ops[i].end_us - w->ops[i].start_us)) != 0) {
            json_decref(a);
            a = NULL;
        }
    return a;
}

tsl_status tsl_dclient_resume(tsl_dclient *c, int timeout_ms, const tsl_dplan *p,
                              int64_t iteration, tsl_dclient_device *dev) {
    if (c->fd >= 0) return tsl_fail(TSL_ERR_INVALID, "resume: still connected");
    tsl_status st = open_conn(c, timeout_ms);
    if (st == TSL_OK) st = hello(c, timeout_ms, dev);
    json_t *wj = NULL, *pj = NULL, *lat = NULL;
    if (st == TSL_OK) {
        char *text;
        size_t len;
        const tsl_plan *ps[1] = {p->plan};
        const tsl_workload *ws[1] = {p->w};
        wj = workload_json(c->w);
        lat = latencies_json(p->w);
        if (tsl_plan_to_text(ps, 1, ws, &text, &len) == TSL_OK) {
            pj = json_loadb(text, len, 0, NULL); /* the plan file's form, as PLAN carries it */
            free(text);
        }
        if (!wj || !pj || !lat) st = tsl_fail(TSL_ERR_OOM, "out of host memory for RESUME");
    }
    if (st == TSL_OK)
        st = send_msg(c, TSL_MSG_RESUME,
                      "{s:I, s:s, s:s, s:I, s:I, s:f, s:I, s:I, s:I, s:f, s:o, s:I, s:o, s:o}",
                      "job_id", (json_int_t)p->job_id, "name", c->name, "model", c->model,
                      "batch", (json_int_t)c->batch, "iterations", (json_int_t)c->iterations,
                      "max_swap_rate", c->rate, "slot", (json_int_t)p->slot, "plan_seq",
                      (json_int_t)p->seq, "region_bytes", (json_int_t)p->region, "channel_share",
                      p->share, "latencies_us", lat, "iteration", (json_int_t)iteration,
                      "workload", wj, "plan", pj);
    else {
        json_decref(wj);
        json_decref(pj);
        json_decref(lat);
    }
    if (st != TSL_OK) disconnect(c);
    return st;
}
