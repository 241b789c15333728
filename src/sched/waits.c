/*
 * waits.c - what a position waits for (waits.h): the copies of each
 * tensor and the releases preceding each op, indexed once per timeline,
 * and the one rule that says when a position starts.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensile/status.h"
#include "sched/plan_order.h"
#include "sched/waits.h"

static int is_copy(const tsl_event *e) {
    return e->type == TSL_EV_SWAP_IN || e->type == TSL_EV_SWAP_OUT;
}

/* Counting sort of the copies by tensor into (off[0..n_keys], ev), event
 * order kept within a tensor. Returns 0 if out of host memory. */
static int copies_by_tensor(const tsl_plan *p, int32_t n_keys, int32_t **off_out,
                            int32_t **ev_out) {
    int32_t ne = p->n_events;
    int32_t *off = calloc((size_t)n_keys + 2, sizeof *off);
    int32_t *ev = malloc(((size_t)ne + 1) * sizeof *ev);
    if (!off || !ev) {
        free(off);
        free(ev);
        return 0;
    }
    for (int32_t k = 0; k < ne; k++) {
        const tsl_event *e = &p->events[k];
        if (is_copy(e)) off[e->tensor + 2]++;
    }
    for (int32_t t = 0; t < n_keys; t++) off[t + 2] += off[t + 1];
    for (int32_t k = 0; k < ne; k++) {
        const tsl_event *e = &p->events[k];
        if (is_copy(e)) ev[off[e->tensor + 1]++] = k;
    }
    *off_out = off;
    *ev_out = ev;
    return 1;
}

tsl_status tsl__waits_build(const tsl_workload *w, const tsl_plan *p, tsl__waits *x) {
    memset(x, 0, sizeof *x);
    int32_t n_si = 0;
    for (int32_t k = 0; p && k < p->n_events; k++) n_si += p->events[k].type == TSL_EV_SWAP_IN;
    if (!tsl__preceding_releases(p, w->n_ops, &x->pre_off, &x->pre_ev)) goto oom;
    if (!n_si && !x->pre_off) return TSL_OK; /* nothing can wait */
    if (!copies_by_tensor(p, w->n_tensors, &x->off, &x->ev)) goto oom;
    return TSL_OK;
oom:
    tsl__waits_free(x);
    return tsl_fail(TSL_ERR_OOM, "plan '%s': out of host memory for its waits", p->job);
}

void tsl__waits_free(tsl__waits *x) {
    free(x->off);
    free(x->ev);
    free(x->pre_off);
    free(x->pre_ev);
    memset(x, 0, sizeof *x);
}

/* When release k, preceding op `op`, frees its tensor (see waits.h). */
static double release_frees_at(const tsl__waits *x, const tsl_workload *w, const tsl_plan *p,
                               const tsl_device_profile *dev, const double *end, int32_t k,
                               int32_t op) {
    const tsl_event *r = &p->events[k];
    int32_t t = r->tensor;
    double te = tsl__event_plan_time(r, end), best = -INFINITY, at = te;
    for (int32_t q = x->off[t]; q < x->off[t + 1]; q++) {
        const tsl_event *o = &p->events[x->ev[q]];
        if (o->type != TSL_EV_SWAP_OUT || o->trigger >= op) continue;
        double issue = tsl__event_plan_time(o, end);
        if (issue <= te && issue > best) {
            best = issue;
            at = issue + tsl_copy_us(dev, w->tensors[t].bytes, 0);
        }
    }
    return at > te ? at : te;
}

double tsl__waits_ready(const tsl__waits *x, const tsl_workload *w, const tsl_plan *p,
                        const tsl_device_profile *dev, const double *end, int32_t g, int32_t op,
                        int first, double at, int32_t *event) {
    double ready = at;
    *event = -1;
    const tsl_wl_op *o = &w->ops[g];
    for (int j = 0; j < o->n_in; j++) {
        int32_t t = o->in[j], best = -1;
        double best_issue = -INFINITY, best_end = 0.0;
        for (int32_t q = x->off[t]; q < x->off[t + 1]; q++) {
            const tsl_event *ev = &p->events[x->ev[q]];
            if (ev->type != TSL_EV_SWAP_IN || ev->trigger >= op) continue;
            double issue = tsl__event_plan_time(ev, end);
            if (issue > at) continue;
            double fin = issue + tsl_copy_us(dev, w->tensors[t].bytes, 1);
            if (best < 0 || issue > best_issue || (issue == best_issue && fin > best_end)) {
                best = x->ev[q];
                best_issue = issue;
                best_end = fin;
            }
        }
        if (best >= 0 && best_end - at > TSL__WAIT_EPS_US && best_end > ready) {
            ready = best_end;
            *event = best;
        }
    }
    if (!first || !x->pre_off) return ready;
    for (int32_t q = x->pre_off[op]; q < x->pre_off[op + 1]; q++) {
        int32_t k = x->pre_ev[q];
        if (p->events[k].trigger >= op) continue; /* malformed: the verifier says so */
        double f = release_frees_at(x, w, p, dev, end, k, op);
        if (f - at > TSL__WAIT_EPS_US && f > ready) {
            ready = f;
            *event = k;
        }
    }
    return ready;
}
