/*
 * verify.c - the plan verifier's entry points (tsl_plan_verify,
 * tsl_plan_verify_jobs, tsl_plan_check), its violation list and its report
 * of planned waits. The verifier checks DESIGN.md
 * invariant 2 as docs/SCHEDULING.md states it, with its own implementation of
 * the timeline and the memory accounting (see verify_internal.h for the
 * layout and the order of things at one time point); it never calls the
 * planner's tsl_peak_analysis, so that it catches that code's mistakes.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/verify_internal.h"

void tsl__vf_add(tsl__vf_list *l, const char *prefix, const char *fmt, ...) {
    if (l->n >= TSL__VF_MAX_VIOLATIONS) {
        l->dropped++;
        return;
    }
    if (l->n == l->cap) {
        int c = l->cap ? 2 * l->cap : 16;
        tsl_violation *nv = realloc(l->v, sizeof *nv * (size_t)c);
        if (!nv) {
            l->oom = 1;
            return;
        }
        l->v = nv;
        l->cap = c;
    }
    char *dst = l->v[l->n].what;
    size_t len = sizeof l->v[l->n].what;
    int at = snprintf(dst, len, "%s", prefix);
    if (at < 0) at = 0;
    if ((size_t)at < len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(dst + at, len - (size_t)at, fmt, ap);
        va_end(ap);
    }
    l->n++;
}

/* Checks the arguments a caller can get wrong; TSL_ERR_INVALID naming them. */
static tsl_status check_inputs(const tsl_workload *const *w, const tsl_plan *const *p, int n_jobs,
                               const tsl_device_profile *dev) {
    if (!(dev->h2d_bw > 0) || !(dev->d2h_bw > 0) || !isfinite(dev->h2d_bw) ||
        !isfinite(dev->d2h_bw) || !(dev->copy_latency_us >= 0) || !isfinite(dev->copy_latency_us))
        return tsl_fail(TSL_ERR_INVALID,
                        "verify: device profile '%s' has h2d_bw %g, d2h_bw %g, "
                        "copy_latency_us %g (bandwidths must be positive, the latency >= 0)",
                        dev->name, dev->h2d_bw, dev->d2h_bw, dev->copy_latency_us);
    for (int jj = 0; jj < n_jobs; jj++) {
        if (!w[jj] || !p[jj])
            return tsl_fail(TSL_ERR_INVALID, "verify: job %d has no %s", jj,
                            !w[jj] ? "workload" : "plan");
        tsl_status st = tsl__vf_check_workload(w[jj]);
        if (st != TSL_OK) return st;
        if (p[jj]->n_events < 0 || (p[jj]->n_events > 0 && !p[jj]->events))
            return tsl_fail(TSL_ERR_INVALID,
                            "verify: plan of job '%s' has n_events %d without events", p[jj]->job,
                            (int)p[jj]->n_events);
    }
    return TSL_OK;
}

/* Appends job j's planned waits to r->waits (growing *cap); per-job
 * figures. Returns 0 if out of host memory. */
static int report_job(const tsl__vf_job *j, tsl_verify_report *r, int *cap) {
    r->peak[j->job] = j->peak;
    r->period_us[j->job] = j->period;
    r->stall_us[j->job] = j->stall;
    for (int32_t k = 0; k < j->n_waits; k++) {
        if (r->n_waits == *cap) {
            int c = *cap ? 2 * *cap : 16;
            tsl_planned_wait *nw = realloc(r->waits, sizeof *nw * (size_t)c);
            if (!nw) return 0;
            r->waits = nw;
            *cap = c;
        }
        const tsl__vf_wait *x = &j->waits[k];
        const tsl_event *ev = &j->p->events[x->event];
        int32_t rc = j->pev[x->q];
        tsl_planned_wait *o = &r->waits[r->n_waits++];
        o->job = j->job;
        o->op = rc >= 0 ? j->p->events[rc].precede : j->pop[x->q];
        o->recompute = rc;
        o->event = x->event;
        o->tensor = ev->tensor;
        o->stall_us = x->stall;
        char pb[200], lb[400], b1[48], b2[48];
        tsl__vf_times(j->fin[x->event], x->at, b1, b2, sizeof b1);
        snprintf(o->what, sizeof o->what,
                 "%s%s waits %.1f us for %s: it would start at %s us, %s at %s us", j->prefix,
                 tsl__vf_pos_label(j, x->q, pb, sizeof pb), x->stall,
                 tsl__vf_ev_label(j, x->event, lb, sizeof lb), b2,
                 ev->type == TSL_EV_RELEASE ? "its swap-out ends and it frees the tensor"
                                            : "the copy lands",
                 b1);
    }
    return 1;
}

/* The verifier over n_jobs jobs: violations into *l; with r, the waits and
 * the per-job figures too (r's arrays allocated). */
static tsl_status run(const tsl_workload *const *w, const tsl_plan *const *p, int n_jobs,
                      const tsl_device_profile *dev, tsl__vf_list *l, tsl_verify_report *r) {
    tsl_status st = check_inputs(w, p, n_jobs, dev);
    if (st != TSL_OK) return st;
    tsl__vf_job *jobs = calloc((size_t)(n_jobs ? n_jobs : 1), sizeof *jobs);
    if (!jobs) return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    int cap = 0;
    if (r) {
        size_t z = (size_t)(n_jobs ? n_jobs : 1);
        r->n_jobs = n_jobs;
        r->peak = calloc(z, sizeof *r->peak);
        r->period_us = calloc(z, sizeof *r->period_us);
        r->stall_us = calloc(z, sizeof *r->stall_us);
        if (!r->peak || !r->period_us || !r->stall_us)
            st = tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    }
    tsl_workload **as_run = calloc((size_t)(n_jobs ? n_jobs : 1), sizeof *as_run);
    if (!as_run) st = tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    for (int jj = 0; jj < n_jobs && st == TSL_OK; jj++) {
        tsl__vf_job *j = &jobs[jj];
        j->w = w[jj];
        j->p = p[jj];
        j->dev = dev;
        j->job = jj;
        if (n_jobs > 1) snprintf(j->prefix, sizeof j->prefix, "job '%s': ", w[jj]->job);
        st = tsl__vf_as_run(w[jj], p[jj], j->prefix, l, &as_run[jj]);
        if (st == TSL_OK && as_run[jj]) j->w = as_run[jj]; /* its chosen algorithms */
        if (st == TSL_OK) st = tsl__vf_build(j, l);
        if (st == TSL_OK) st = tsl__vf_tensors(j, l);
        if (st == TSL_OK) st = tsl__vf_memory(j, l);
        if (st == TSL_OK) st = tsl__vf_layout(j, l);
        if (st == TSL_OK && r && !report_job(j, r, &cap))
            st = tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    }
    if (st == TSL_OK) st = tsl__vf_channels(jobs, n_jobs, l);
    for (int jj = 0; jj < n_jobs; jj++) tsl__vf_free(&jobs[jj]);
    for (int jj = 0; as_run && jj < n_jobs; jj++) tsl_workload_free(as_run[jj]);
    free(as_run);
    free(jobs);
    if (st == TSL_OK && l->oom) st = tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    if (st == TSL_OK && l->dropped) {
        l->n--; /* the last slot says how many were left out */
        snprintf(l->v[l->n].what, sizeof l->v[l->n].what, "... and %ld more violations",
                 l->dropped + 1);
        l->n++;
    }
    return st;
}

/* The status of a finished run with n violations, the first in v. */
static tsl_status verdict(const tsl_violation *v, int n) {
    if (n == 0) return TSL_OK;
    return tsl_fail(TSL_ERR_INVALID, "plan verification: %d violation%s; first: %s", n,
                    n == 1 ? "" : "s", v[0].what);
}

/* See tensile/verify.h. Preconditions (bugs otherwise): v, n, dev non-NULL;
 * w and p hold n_jobs entries. Returns TSL_OK with *v = NULL, *n = 0 for
 * valid plans; TSL_ERR_INVALID with the violations in *v (malloc'd, the
 * caller frees) and the first one in tsl_last_error(); TSL_ERR_INVALID with
 * *n = 0 when the inputs themselves are malformed (a workload's tensor index
 * out of range, times not finite and ordered, a profile without positive
 * copy bandwidths: the message names the field); TSL_ERR_OOM. */
tsl_status tsl_plan_verify_jobs(const tsl_workload *const *w, const tsl_plan *const *p, int n_jobs,
                                const tsl_device_profile *dev, tsl_violation **v, int *n) {
    TSL_ASSERT(v && n && dev && n_jobs >= 0 && (n_jobs == 0 || (w && p)));
    *v = NULL;
    *n = 0;
    tsl__vf_list l = {0};
    tsl_status st = run(w, p, n_jobs, dev, &l, NULL);
    if (st != TSL_OK || l.n == 0) {
        free(l.v);
        return st;
    }
    *v = l.v;
    *n = l.n;
    return verdict(l.v, l.n);
}

/* One job on its own channels: tsl_plan_verify_jobs with n_jobs = 1. */
tsl_status tsl_plan_verify(const tsl_workload *w, const tsl_plan *p, const tsl_device_profile *dev,
                           tsl_violation **v, int *n) {
    TSL_ASSERT(w && p);
    return tsl_plan_verify_jobs(&w, &p, 1, dev, v, n);
}

/* See tensile/verify.h. Preconditions as tsl_plan_verify_jobs (out
 * non-NULL). */
tsl_status tsl_plan_check(const tsl_workload *const *w, const tsl_plan *const *p, int n_jobs,
                          const tsl_device_profile *dev, tsl_verify_report *out) {
    TSL_ASSERT(out && dev && n_jobs >= 0 && (n_jobs == 0 || (w && p)));
    memset(out, 0, sizeof *out);
    tsl__vf_list l = {0};
    tsl_status st = run(w, p, n_jobs, dev, &l, out);
    if (st != TSL_OK) {
        free(l.v);
        tsl_verify_report_free(out);
        return st;
    }
    out->violations = l.v;
    out->n_violations = l.n;
    return verdict(l.v, l.n);
}

void tsl_verify_report_free(tsl_verify_report *r) {
    if (!r) return;
    free(r->violations);
    free(r->waits);
    free(r->peak);
    free(r->period_us);
    free(r->stall_us);
    memset(r, 0, sizeof *r);
}
