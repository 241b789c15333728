/*
 * verify.c - the plan verifier's entry points (tsl_plan_verify,
 * tsl_plan_verify_jobs) and its violation list. The verifier checks DESIGN.md
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

/* See sched.h. Preconditions (bugs otherwise): v, n, dev non-NULL; w and p
 * hold n_jobs entries. Returns TSL_OK with *v = NULL, *n = 0 for valid
 * plans; TSL_ERR_INVALID with the violations in *v (malloc'd, the caller
 * frees) and the first one in tsl_last_error(); TSL_ERR_INVALID with *n = 0
 * when the inputs themselves are malformed (a workload's tensor index out of
 * range, times not finite and ordered, a profile without positive copy
 * bandwidths: the message names the field); TSL_ERR_OOM. */
tsl_status tsl_plan_verify_jobs(const tsl_workload *const *w, const tsl_plan *const *p, int n_jobs,
                                const tsl_device_profile *dev, tsl_violation **v, int *n) {
    TSL_ASSERT(v && n && dev && n_jobs >= 0 && (n_jobs == 0 || (w && p)));
    *v = NULL;
    *n = 0;
    tsl_status st = check_inputs(w, p, n_jobs, dev);
    if (st != TSL_OK) return st;
    tsl__vf_job *jobs = calloc((size_t)(n_jobs ? n_jobs : 1), sizeof *jobs);
    if (!jobs) return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    tsl__vf_list l = {0};
    for (int jj = 0; jj < n_jobs && st == TSL_OK; jj++) {
        tsl__vf_job *j = &jobs[jj];
        j->w = w[jj];
        j->p = p[jj];
        j->dev = dev;
        j->job = jj;
        if (n_jobs > 1) snprintf(j->prefix, sizeof j->prefix, "job '%s': ", w[jj]->job);
        st = tsl__vf_build(j, &l);
        if (st == TSL_OK) st = tsl__vf_tensors(j, &l);
        if (st == TSL_OK) st = tsl__vf_memory(j, &l);
    }
    if (st == TSL_OK) st = tsl__vf_channels(jobs, n_jobs, &l);
    for (int jj = 0; jj < n_jobs; jj++) tsl__vf_free(&jobs[jj]);
    free(jobs);
    if (st == TSL_OK && l.oom) st = tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    if (st != TSL_OK) {
        free(l.v);
        return st;
    }
    if (l.dropped) {
        l.n--; /* the last slot says how many were left out */
        snprintf(l.v[l.n].what, sizeof l.v[l.n].what, "... and %ld more violations", l.dropped + 1);
        l.n++;
    }
    if (l.n == 0) {
        free(l.v);
        return TSL_OK;
    }
    *v = l.v;
    *n = l.n;
    return tsl_fail(TSL_ERR_INVALID, "plan verification: %d violation%s; first: %s", l.n,
                    l.n == 1 ? "" : "s", l.v[0].what);
}

/* One job on its own channels: tsl_plan_verify_jobs with n_jobs = 1. */
tsl_status tsl_plan_verify(const tsl_workload *w, const tsl_plan *p, const tsl_device_profile *dev,
                           tsl_violation **v, int *n) {
    TSL_ASSERT(w && p);
    return tsl_plan_verify_jobs(&w, &p, 1, dev, v, n);
}
