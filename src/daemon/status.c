/*
 * status.c - the daemon's STATUS (daemon_internal.h, docs/PROTOCOL.md): the
 * device's global ledger as the shared device holds it, and every job.
 */
#include <stdlib.h>

#include "daemon/daemon_internal.h"

/* Sets key to integer v in o; 0 if out of memory. */
static int put_int(json_t *o, const char *key, int64_t v) {
    return json_object_set_new(o, key, json_integer((json_int_t)v)) == 0;
}

static int put_num(json_t *o, const char *key, double v) {
    return json_object_set_new(o, key, json_real(v)) == 0;
}

/* One job's entry, NULL if out of memory. */
static json_t *job_entry(tsl__daemon *d, const tsl__djob *j, const tsl_shdev_info *in,
                         double now) {
    tsl__jobx *x = tsl__d_x(d, j);
    if (!x) return NULL;
    json_t *o = json_object();
    if (!o) return NULL;
    size_t fp = x->footprint, peak = x->peak_footprint;
    if (x->slot >= 0) { /* the shared ledger's figures, exact to the byte */
        fp = in->slot[x->slot].footprint_bytes;
        peak = in->slot[x->slot].peak_footprint_bytes;
    }
    int ok = put_int(o, "id", j->id) &&
             json_object_set_new(o, "model", json_string(j->model)) == 0 &&
             json_object_set_new(o, "state", json_string(tsl__dj_state_name(j->state))) == 0 &&
             put_int(o, "region_bytes", (int64_t)j->region) &&
             put_int(o, "footprint_bytes", (int64_t)fp) &&
             put_int(o, "peak_footprint_bytes", (int64_t)peak) &&
             put_int(o, "iterations_done", x->iterations_done);
    if (ok && j->state == TSL__DJ_DONE && x->checksum[0])
        ok = json_object_set_new(o, "param_checksum", json_string(x->checksum)) == 0;
    if (ok && (j->state == TSL__DJ_QUEUED || j->state == TSL__DJ_ADMITTED ||
               j->state == TSL__DJ_FAILED) && j->reason[0])
        ok = json_object_set_new(o, "reason", tsl_msg_text(j->reason)) == 0;
    if (ok && x->iter_ms > 0) ok = put_num(o, "iter_ms", x->iter_ms);
    if (ok && x->iter_ms > 0 && x->kernel_ms > 0) ok = put_num(o, "eor", x->iter_ms / x->kernel_ms);
    if (ok) ok = put_num(o, "swaps", (double)x->swaps) && put_num(o, "replans", (double)j->replans);
    if (ok && j->plan) ok = put_num(o, "plan_footprint_bytes", (double)j->plan->predicted_footprint);
    /* time in the queue: until now, or until it was admitted */
    double until = j->state == TSL__DJ_QUEUED || j->t_admit <= 0 ? now : j->t_admit;
    if (ok && j->state != TSL__DJ_FAILED)
        ok = put_num(o, "queued_ms", until - j->t_submit > 0 ? until - j->t_submit : 0);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *tsl__d_status(tsl__daemon *d) {
    tsl_shdev_info *in = malloc(sizeof *in);
    if (!in) return NULL;
    tsl_shdev_read(d->dev, in);
    double now = tsl__d_now() - d->t0_ms;
    json_t *jobs = json_array();
    for (int i = 0; jobs && i < d->ms.n; i++) {
        json_t *e = job_entry(d, d->ms.jobs[i], in, now);
        if (!e || json_array_append_new(jobs, e) != 0) {
            json_decref(jobs);
            jobs = NULL;
        }
    }
    json_t *b = jobs ? json_pack("{s:I, s:{s:I, s:I, s:I}, s:o}", "capacity_bytes",
                                 (json_int_t)d->ms.capacity, "global", "load_bytes",
                                 (json_int_t)in->load_bytes, "footprint_bytes",
                                 (json_int_t)in->footprint_bytes, "peak_footprint_bytes",
                                 (json_int_t)in->peak_footprint_bytes, "jobs", jobs)
                     : NULL;
    free(in);
    return b;
}
