/*
 * handle.c - what the daemon does with each message (daemon_internal.h),
 * and with the Memory Scheduler's decisions: admitting, replanning,
 * sending plans as memory allows (regions raised on the shared device
 * before a plan that needs more is sent, lowered once the job has
 * acknowledged a smaller one), reclaiming jobs that ended or died.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon_internal.h"
#include "tensile/sched_json.h"

static double mib(size_t b) { return (double)b / 1048576.0; }

/* The connection of job j, or -1. */
static int conn_of(tsl__daemon *d, const tsl__djob *j) {
    tsl__jobx *x = tsl__d_x(d, j);
    return x ? x->conn : -1;
}

/* Sends an ERROR with `code` and text on connection c (which is closed by
 * the caller returning -1). */
static int refuse(tsl__daemon *d, int c, tsl_msg_err code, const char *why) {
    tsl__d_log(d, "connection from pid %d refused: %s", (int)d->conns[c].pid, why);
    tsl_msg_send_error(d->conns[c].fd, code, why, 1000);
    return -1;
}

/* ---- plans ------------------------------------------------------------------------- */

/* The PLAN body of job j (a new reference), NULL if out of memory. */
static json_t *plan_body(tsl__daemon *d, tsl__djob *j, int slot) {
    (void)d;
    char *text;
    size_t len;
    const tsl_plan *ps[1] = {j->plan};
    const tsl_workload *ws[1] = {j->plan_w};
    if (tsl_plan_to_text(ps, 1, ws, &text, &len) != TSL_OK) return NULL;
    json_t *pj = json_loadb(text, len, 0, NULL);
    free(text);
    json_t *lat = json_array();
    for (int32_t i = 0; lat && i < j->plan_w->n_ops; i++) {
        const tsl_wl_op *o = &j->plan_w->ops[i];
        if (json_array_append_new(lat, json_real(o->end_us - o->start_us)) != 0) {
            json_decref(lat);
            lat = NULL;
        }
    }
    if (!pj || !lat) {
        json_decref(pj);
        json_decref(lat);
        return NULL;
    }
    return json_pack("{s:I, s:i, s:I, s:I, s:f, s:o, s:s, s:o}", "job_id", (json_int_t)j->id,
                     "slot", slot, "plan_seq", (json_int_t)j->seq, "region_bytes",
                     (json_int_t)j->plan->predicted_footprint, "channel_share", j->share,
                     "latencies_us", lat, "reason", j->why, "plan", pj);
}

/* Sends job j its plan: a slot claimed (its first plan) or its region
 * raised first when the plan needs more. 0 if sent, -1 if it must wait. */
static int send_plan(tsl__daemon *d, tsl__djob *j) {
    tsl__jobx *x = tsl__d_x(d, j);
    if (!x || x->conn < 0) return -1;
    size_t target = j->plan->predicted_footprint;
    tsl_status st = TSL_OK;
    if (x->slot < 0) {
        int s = tsl_shdev_free_slot(d->dev);
        if (s < 0) {
            tsl__d_log(d, "job %lld waits: every slot of the device is in use", (long long)j->id);
            return -1;
        }
        if ((st = tsl_shdev_claim(d->dev, s, (uint64_t)j->id, x->pid, target)) == TSL_OK)
            x->slot = s;
    } else if (target > j->region) {
        st = tsl_shdev_set_region(d->dev, x->slot, target);
    }
    if (st != TSL_OK) {
        tsl__d_log(d, "job %lld's plan %lld waits: %s", (long long)j->id, (long long)j->seq,
                   tsl_last_error());
        return -1;
    }
    json_t *body = plan_body(d, j, x->slot);
    tsl_msg m = {TSL_MSG_PLAN, body};
    if (!body || tsl_msg_validate(TSL_MSG_PLAN, body) != TSL_OK) {
        tsl__d_log(d, "job %lld: cannot build its PLAN: %s", (long long)j->id,
                   body ? tsl_last_error() : "out of host memory");
        json_decref(body);
        return -1;
    }
    int r = tsl__d_send(d, x->conn, &m);
    tsl_msg_free(&m);
    if (r < 0) return -1;
    int swaps = 0, rcs = 0;
    for (int32_t k = 0; k < j->plan->n_events; k++) {
        swaps += j->plan->events[k].type == TSL_EV_SWAP_OUT;
        rcs += j->plan->events[k].type == TSL_EV_RECOMPUTE;
    }
    tsl__ms_sent(&d->ms, j);
    tsl__d_log(d, "job %lld %s: plan %lld (%s) sent: footprint %.1f MiB (region %.1f MiB until "
                  "it is in force), %d swaps, %d recomputations, a %.3g share of the channels",
               (long long)j->id, j->name, (long long)j->seq, j->why, mib(target),
               mib(j->region > target ? j->region : target), swaps, rcs, j->share);
    return 0;
}

void tsl__d_dispatch(tsl__daemon *d) {
    for (int moved = 1; moved;) {
        moved = 0;
        for (int i = 0; i < d->ms.n; i++) {
            tsl__djob *j = d->ms.jobs[i];
            if ((j->state == TSL__DJ_ADMITTED || j->state == TSL__DJ_RUNNING) &&
                tsl__ms_sendable(&d->ms, j) && send_plan(d, j) == 0)
                moved = 1;
        }
    }
}

/* Tells every queued job where it stands (QUEUED). */
static void tell_queue(tsl__daemon *d) {
    int pos = 0;
    size_t free_bytes = d->ms.capacity > tsl__ms_committed(&d->ms) + d->ms.reserved
                            ? d->ms.capacity - tsl__ms_committed(&d->ms) - d->ms.reserved
                            : 0;
    for (int i = 0; i < d->ms.n; i++) {
        tsl__djob *j = d->ms.jobs[i];
        if (j->state != TSL__DJ_QUEUED) continue;
        pos++;
        int c = conn_of(d, j);
        if (c < 0) continue;
        json_t *reason = tsl_msg_text(j->reason);
        json_t *b = reason ? json_pack("{s:I, s:o, s:I, s:I, s:i}", "job_id", (json_int_t)j->id,
                                       "reason", reason, "needed_bytes", (json_int_t)j->needed,
                                       "available_bytes", (json_int_t)free_bytes, "position", pos)
                           : NULL;
        tsl_msg m = {TSL_MSG_QUEUED, b};
        if (b) tsl__d_send(d, c, &m);
        tsl_msg_free(&m);
        if (strcmp(j->reason, j->told) != 0) { /* a line when its reason changes */
            tsl__d_log(d, "job %lld %s queued (position %d): %s", (long long)j->id, j->name, pos,
                       j->reason);
            snprintf(j->told, sizeof j->told, "%s", j->reason);
        }
    }
}

void tsl__d_reschedule(tsl__daemon *d, const char *why) {
    double now = tsl__d_now() - d->t0_ms;
    int admitted = 0;
    for (;;) {
        int r = tsl__ms_admit(&d->ms, now);
        if (r == 0) break;
        if (r == -2) {
            tsl__d_log(d, "planning failed: %s", tsl_last_error());
            break;
        }
        tsl__djob *h = NULL;
        for (int i = d->ms.n - 1; i >= 0 && !h; i--)
            if (d->ms.jobs[i]->state == TSL__DJ_ADMITTED && d->ms.jobs[i]->to_send &&
                d->ms.jobs[i]->sent_seq == 0)
                h = d->ms.jobs[i];
        if (r == 1) {
            admitted++;
            if (h)
                tsl__d_log(d, "job %lld %s admitted: %d job%s planned together in %.1f ms",
                           (long long)h->id, h->name, tsl__ms_active(&d->ms),
                           tsl__ms_active(&d->ms) == 1 ? "" : "s", d->ms.last_planning_ms);
            continue;
        }
        /* r == -1: the head can never fit; it was failed */
        for (int i = 0; i < d->ms.n; i++) {
            tsl__djob *j = d->ms.jobs[i];
            tsl__jobx *x = tsl__d_x(d, j);
            if (j->state != TSL__DJ_FAILED || !x || x->conn < 0 || x->kill_ms < 0) continue;
            tsl__d_log(d, "job %lld %s refused: %s", (long long)j->id, j->name, j->reason);
            int c = x->conn;
            x->kill_ms = -1; /* told */
            refuse(d, c, TSL_MSG_ERR_REFUSED, j->reason);
            tsl__d_close(d, c);
        }
    }
    if (!admitted && why && tsl__ms_active(&d->ms) > 0) {
        tsl_status st = tsl__ms_replan(&d->ms, why);
        if (st == TSL_OK)
            tsl__d_log(d, "replanned %d job%s (%s) in %.1f ms", tsl__ms_active(&d->ms),
                       tsl__ms_active(&d->ms) == 1 ? "" : "s", why, d->ms.last_planning_ms);
        else
            tsl__d_log(d, "replanning (%s) kept the plans in force: %s", why, tsl_last_error());
    }
    if (admitted || (why && tsl__ms_active(&d->ms) > 0))
        d->drift_hold_ms = tsl__d_now() + 4 * d->ms.last_planning_ms;
    tsl__d_dispatch(d);
    tell_queue(d);
}

void tsl__d_job_gone(tsl__daemon *d, tsl__djob *j, const char *why) {
    tsl__jobx *x = tsl__d_x(d, j);
    if (x && x->slot >= 0) {
        if (tsl_shdev_reclaim(d->dev, x->slot) != TSL_OK) {
            tsl__d_log(d, "job %lld: its slot %d cannot be reclaimed yet: %s", (long long)j->id,
                       x->slot, tsl_last_error());
            return; /* retried by the timers */
        }
        x->slot = -1;
    }
    int was = j->state;
    if (was == TSL__DJ_DONE || was == TSL__DJ_FAILED) return;
    char reason[300];
    snprintf(reason, sizeof reason, "%s", why);
    tsl__ms_end(&d->ms, j, TSL__DJ_FAILED, reason);
    tsl__d_log(d, "job %lld %s %s: its memory is reclaimed", (long long)j->id, j->name, why);
    tsl__d_reschedule(d, "departure");
}

/* ---- messages ---------------------------------------------------------------------- */

static int on_hello(tsl__daemon *d, int c) {
    char *ptext;
    size_t plen;
    if (tsl_profile_to_text(&d->ms.dev, "the device as the daemon plans it", &ptext, &plen) !=
        TSL_OK)
        return refuse(d, c, TSL_MSG_ERR_INTERNAL, tsl_last_error());
    json_t *prof = json_loadb(ptext, plen, 0, NULL);
    free(ptext);
    json_t *b = prof ? json_pack("{s:i, s:I, s:f, s:o, s:s, s:f}", "daemon_pid", (int)getpid(),
                                 "capacity_bytes", (json_int_t)d->ms.capacity, "pcie_gbps",
                                 d->o.pcie_gbps, "profile", prof, "shm", d->shm, "job_timeout_s",
                                 d->o.job_timeout_s)
                     : NULL;
    tsl_msg m = {TSL_MSG_WELCOME, b};
    if (!b) return refuse(d, c, TSL_MSG_ERR_INTERNAL, "out of host memory");
    int r = tsl__d_send(d, c, &m);
    tsl_msg_free(&m);
    return r;
}

/* The workload of a REGISTER or RESUME (the caller frees it), NULL with the
 * error. */
static tsl_workload *workload_of(const tsl_msg *m, const char *what) {
    char *text = json_dumps(json_object_get(m->body, "workload"), JSON_COMPACT);
    if (!text) {
        tsl_fail(TSL_ERR_OOM, "out of host memory");
        return NULL;
    }
    tsl_workload *w = NULL;
    tsl_workload_parse_json(text, strlen(text), what, &w);
    free(text);
    return w;
}

static int on_register(tsl__daemon *d, int c, const tsl_msg *m) {
    tsl_workload *w = workload_of(m, "REGISTER's workload");
    if (!w) return refuse(d, c, TSL_MSG_ERR_BAD_MESSAGE, tsl_last_error());
    tsl__djob *j;
    double now = tsl__d_now() - d->t0_ms;
    if (tsl__ms_submit(&d->ms, tsl_msg_str(m, "name", "?"), tsl_msg_str(m, "model", "?"),
                       tsl_msg_int(m, "batch", 1), tsl_msg_int(m, "iterations", 1),
                       tsl_msg_num(m, "max_swap_rate", 1), w, now, &j) != TSL_OK)
        return refuse(d, c, TSL_MSG_ERR_REFUSED, tsl_last_error());
    tsl__jobx *x = tsl__d_x(d, j);
    if (!x) return refuse(d, c, TSL_MSG_ERR_INTERNAL, "out of host memory");
    x->pid = d->conns[c].pid;
    x->conn = c;
    x->last_ms = tsl__d_now();
    d->conns[c].job = j->id;
    tsl__d_log(d, "job %lld %s (%s, batch %lld, %lld iterations, pid %d) registered: %d ops, "
                  "max swap rate %g",
               (long long)j->id, j->name, j->model, (long long)j->batch, (long long)j->iterations,
               (int)x->pid, (int)j->w->n_ops, j->max_swap_rate);
    tsl__d_reschedule(d, NULL);
    return d->conns[c].fd >= 0 ? 0 : -1;
}

static int on_ack(tsl__daemon *d, int c, const tsl_msg *m) {
    tsl__djob *j = tsl__ms_find(&d->ms, d->conns[c].job);
    if (!j) return refuse(d, c, TSL_MSG_ERR_OUT_OF_ORDER, "PLAN_ACK of an unknown job");
    tsl__jobx *x = tsl__d_x(d, j);
    x->last_ms = tsl__d_now();
    int64_t seq = tsl_msg_int(m, "plan_seq", 0);
    size_t before = j->region;
    if (!tsl__ms_acked(&d->ms, j, seq)) {
        tsl__d_log(d, "job %lld acknowledged plan %lld, not the plan %lld it was sent: ignored",
                   (long long)j->id, (long long)seq, (long long)j->sent_seq);
        return 0;
    }
    x->footprint = (size_t)tsl_msg_int(m, "footprint_bytes", 0);
    if (j->region < before && x->slot >= 0 &&
        tsl_shdev_set_region(d->dev, x->slot, j->region) != TSL_OK)
        tsl__d_log(d, "job %lld: its region stays %.1f MiB on the device: %s", (long long)j->id,
                   mib(before), tsl_last_error());
    tsl__d_log(d, "job %lld %s: plan %lld in force since iteration %lld: region %.1f MiB "
                  "(footprint %.1f MiB)",
               (long long)j->id, j->name, (long long)seq,
               (long long)tsl_msg_int(m, "iteration", 0), mib(j->region), mib(x->footprint));
    tsl__d_dispatch(d);
    return 0;
}

static int on_report(tsl__daemon *d, int c, const tsl_msg *m) {
    tsl__djob *j = tsl__ms_find(&d->ms, d->conns[c].job);
    if (!j) return refuse(d, c, TSL_MSG_ERR_OUT_OF_ORDER, "REPORT of an unknown job");
    tsl__jobx *x = tsl__d_x(d, j);
    x->last_ms = tsl__d_now();
    x->iterations_done = tsl_msg_int(m, "iteration", 0);
    x->iter_ms = tsl_msg_num(m, "iter_ms", 0);
    x->kernel_ms = tsl_msg_num(m, "kernel_ms", 0);
    x->stall_ms = tsl_msg_num(m, "stall_ms", 0);
    x->load = (size_t)tsl_msg_int(m, "load_bytes", 0);
    x->footprint = (size_t)tsl_msg_int(m, "footprint_bytes", 0);
    x->peak_footprint = (size_t)tsl_msg_int(m, "peak_footprint_bytes", 0);
    x->swaps = tsl_msg_int(m, "swaps", 0);
    x->evictions = tsl_msg_int(m, "evictions", 0);
    x->passive_swaps = tsl_msg_int(m, "passive_swaps", 0);
    json_t *lat = json_object_get(m->body, "latencies_us");
    size_t n = json_array_size(lat);
    double *us = malloc(sizeof *us * (n ? n : 1));
    if (!us) return refuse(d, c, TSL_MSG_ERR_INTERNAL, "out of host memory");
    for (size_t i = 0; i < n; i++) us[i] = json_number_value(json_array_get(lat, i));
    int r = j->state == TSL__DJ_RUNNING ? tsl__ms_report(&d->ms, j, us, (int32_t)n) : 0;
    free(us);
    if (r < 0) return refuse(d, c, TSL_MSG_ERR_REFUSED, tsl_last_error());
    /* drift replans wait while the last planning is recent: on a loaded
     * machine drift is constant and every replan stops the loop for
     * seconds; the job's drift run stands, so a later report replans */
    if (r > 0 && tsl__d_now() < d->drift_hold_ms) r = 0;
    if (r > 0) {
        char why[64];
        snprintf(why, sizeof why, "drift");
        tsl__d_log(d, "job %lld %s: its latencies drifted from its plan's for %d reports: "
                      "replanning",
                   (long long)j->id, j->name, d->ms.drift_patience);
        tsl__d_reschedule(d, why);
    }
    return 0;
}

static int on_end(tsl__daemon *d, int c, const tsl_msg *m) {
    tsl__djob *j = tsl__ms_find(&d->ms, d->conns[c].job);
    if (!j) return -1;
    tsl__jobx *x = tsl__d_x(d, j);
    x->last_ms = tsl__d_now();
    int done = m->type == TSL_MSG_DONE;
    if (done) {
        x->iterations_done = tsl_msg_int(m, "iterations", 0);
        snprintf(x->checksum, sizeof x->checksum, "%s", tsl_msg_str(m, "param_checksum", ""));
        x->iter_ms = tsl_msg_num(m, "iter_ms", x->iter_ms);
        x->peak_footprint = (size_t)tsl_msg_int(m, "peak_footprint_bytes", 0);
    }
    if (x->slot >= 0 && tsl_shdev_reclaim(d->dev, x->slot) == TSL_OK) x->slot = -1;
    tsl__ms_end(&d->ms, j, done ? TSL__DJ_DONE : TSL__DJ_FAILED,
                done ? "" : tsl_msg_str(m, "message", "failed"));
    if (done)
        tsl__d_log(d, "job %lld %s done: %lld iterations, %.1f ms per iteration, peak footprint "
                      "%.1f MiB, parameters %s",
                   (long long)j->id, j->name, (long long)x->iterations_done, x->iter_ms,
                   mib(x->peak_footprint), x->checksum);
    else
        tsl__d_log(d, "job %lld %s failed: %s", (long long)j->id, j->name, j->reason);
    tsl__d_reschedule(d, "departure");
    return 0;
}

static int on_resume(tsl__daemon *d, int c, const tsl_msg *m) {
    tsl_workload *w = workload_of(m, "RESUME's workload");
    if (!w) return refuse(d, c, TSL_MSG_ERR_BAD_MESSAGE, tsl_last_error());
    json_t *lat = json_object_get(m->body, "latencies_us");
    if ((int64_t)json_array_size(lat) != w->n_ops) {
        tsl_workload_free(w);
        return refuse(d, c, TSL_MSG_ERR_BAD_MESSAGE, "RESUME: latencies_us does not match the "
                                                     "workload's ops");
    }
    double *us = malloc(sizeof *us * (size_t)w->n_ops);
    tsl_workload *pw = NULL;
    if (us) {
        for (int32_t i = 0; i < w->n_ops; i++)
            us[i] = json_number_value(json_array_get(lat, (size_t)i));
        pw = tsl_workload_copy(w, us);
        free(us);
    }
    tsl_workload_free(w);
    if (!pw) return refuse(d, c, TSL_MSG_ERR_INTERNAL, "out of host memory");
    char *text = json_dumps(json_object_get(m->body, "plan"), JSON_COMPACT);
    tsl_plan *plan = NULL;
    const tsl_workload *ws[1] = {pw};
    tsl_status st = text ? tsl_plan_parse_json(text, strlen(text), "RESUME's plan", ws, 1, &plan)
                         : tsl_fail(TSL_ERR_OOM, "out of host memory");
    free(text);
    if (st != TSL_OK) {
        tsl_workload_free(pw);
        return refuse(d, c, TSL_MSG_ERR_BAD_MESSAGE, tsl_last_error());
    }
    int64_t id = tsl_msg_int(m, "job_id", 0);
    int slot = (int)tsl_msg_int(m, "slot", -1);
    size_t region = (size_t)tsl_msg_int(m, "region_bytes", 0);
    /* the device must hold its slot, as this job, with at least the region
     * its plan needs: a daemon that died after sending a smaller plan left
     * the slot at the larger region until that plan was in force (the job
     * counts the plan's), and the slot's region is what stays reserved */
    tsl_shdev_info *in = malloc(sizeof *in);
    int ok = in != NULL;
    if (ok) {
        tsl_shdev_read(d->dev, in);
        ok = slot >= 0 && slot < d->o.max_jobs && in->slot[slot].in_use &&
             in->slot[slot].job_id == (uint64_t)id && region <= in->slot[slot].region_bytes;
        if (ok) region = in->slot[slot].region_bytes;
    }
    free(in);
    if (!ok) {
        tsl_workload_free(pw);
        tsl_plan_free(plan);
        return refuse(d, c, TSL_MSG_ERR_REFUSED,
                      "RESUME: the device holds no such job in that slot with room for its "
                      "region (a daemon started afresh cannot adopt it)");
    }
    tsl__djob *j;
    st = tsl__ms_resume(&d->ms, id, tsl_msg_str(m, "name", "?"), tsl_msg_str(m, "model", "?"),
                        tsl_msg_int(m, "batch", 1), tsl_msg_int(m, "iterations", 1),
                        tsl_msg_num(m, "max_swap_rate", 1), tsl_workload_copy(pw, NULL), plan,
                        tsl_msg_int(m, "plan_seq", 1), region, tsl_msg_num(m, "channel_share", 1),
                        tsl__d_now() - d->t0_ms, &j);
    tsl_workload_free(pw);
    if (st != TSL_OK) return refuse(d, c, TSL_MSG_ERR_REFUSED, tsl_last_error());
    tsl__jobx *x = tsl__d_x(d, j);
    if (!x) return refuse(d, c, TSL_MSG_ERR_INTERNAL, "out of host memory");
    x->pid = d->conns[c].pid;
    x->conn = c;
    x->slot = slot;
    x->last_ms = tsl__d_now();
    x->iterations_done = tsl_msg_int(m, "iteration", 0);
    d->conns[c].job = j->id;
    tsl__d_log(d, "job %lld %s resumed at iteration %lld with plan %lld, region %.1f MiB "
                  "(slot %d)",
               (long long)id, j->name, (long long)x->iterations_done, (long long)j->seq,
               mib(region), slot);
    tsl__d_reschedule(d, d->ms.reserved == 0 ? "resume" : NULL);
    return 0;
}

static int on_cancel(tsl__daemon *d, int c, const tsl_msg *m) {
    int64_t id = tsl_msg_int(m, "job_id", 0);
    tsl__djob *j = tsl__ms_find(&d->ms, id);
    char why[120];
    if (!j || j->state == TSL__DJ_DONE || j->state == TSL__DJ_FAILED) {
        snprintf(why, sizeof why, "no job %lld is queued or running", (long long)id);
        return refuse(d, c, TSL_MSG_ERR_REFUSED, why);
    }
    int jc = conn_of(d, j);
    if (jc >= 0) {
        json_t *b = json_pack("{s:s}", "reason", "cancelled by tensile cancel");
        tsl_msg s = {TSL_MSG_STOP, b};
        if (b) tsl__d_send(d, jc, &s);
        tsl_msg_free(&s);
    }
    if (j->state == TSL__DJ_QUEUED) {
        tsl__ms_end(&d->ms, j, TSL__DJ_FAILED, "cancelled while queued");
        tsl__d_reschedule(d, NULL);
    }
    tsl__d_log(d, "job %lld %s: cancelled", (long long)id, j->name);
    json_t *b = json_pack("{s:I}", "job_id", (json_int_t)id);
    tsl_msg ok = {TSL_MSG_OK, b};
    int r = b ? tsl__d_send(d, c, &ok) : -1;
    tsl_msg_free(&ok);
    return r;
}

int tsl__d_handle(tsl__daemon *d, int c, const tsl_msg *m) {
    switch (m->type) {
    case TSL_MSG_HELLO: return on_hello(d, c);
    case TSL_MSG_REGISTER: return on_register(d, c, m);
    case TSL_MSG_RESUME: return on_resume(d, c, m);
    case TSL_MSG_PLAN_ACK: return on_ack(d, c, m);
    case TSL_MSG_REPORT: return on_report(d, c, m);
    case TSL_MSG_DONE:
    case TSL_MSG_FAILED: return on_end(d, c, m);
    case TSL_MSG_CANCEL: return on_cancel(d, c, m);
    case TSL_MSG_STATUS_REQ: {
        json_t *b = tsl__d_status(d);
        tsl_msg s = {TSL_MSG_STATUS, b};
        if (!b) return refuse(d, c, TSL_MSG_ERR_INTERNAL, "out of host memory");
        int r = tsl__d_send(d, c, &s);
        tsl_msg_free(&s);
        return r;
    }
    case TSL_MSG_SHUTDOWN: {
        tsl__d_log(d, "shutdown asked by pid %d", (int)d->conns[c].pid);
        d->shutdown = 1;
        json_t *b = json_object();
        tsl_msg ok = {TSL_MSG_OK, b};
        if (b) tsl__d_send(d, c, &ok);
        tsl_msg_free(&ok);
        return 0;
    }
    case TSL_MSG_ERROR:
        tsl__d_log(d, "connection from pid %d sent ERROR: %s", (int)d->conns[c].pid,
                   tsl_msg_str(m, "message", "?"));
        return -1;
    default:
        return refuse(d, c, TSL_MSG_ERR_OUT_OF_ORDER, "a message the daemon does not take");
    }
}
