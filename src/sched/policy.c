/*
 * policy.c - planning with a policy (tensile/policy.h, tsl_plan_jobs):
 * what every policy shares around its own `plan` function. The arguments
 * are checked and completed (the budget, the options' defaults, their
 * ranges), the jobs get their empty plans, the policy runs, and then every
 * plan is finished the same way whatever the policy: its events sorted,
 * its predicted peak and period (planned waits included) taken from the
 * shared accounting (tsl_peak_analysis), and the report filled from the
 * plans.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/kit.h"
#include "tensile/alloc.h"
#include "tensile/policy.h"

tsl_plan_opts tsl_plan_opts_default(void) {
    tsl_plan_opts o = {NULL, NULL, 0, 0, NULL};
    return o;
}

void tsl_plan_report_free(tsl_plan_report *r) {
    if (!r) return;
    free(r->vanilla_peak); /* the block every array lives in */
    memset(r, 0, sizeof *r);
}

/* The report's arrays for n jobs in one zeroed block. TSL_ERR_OOM. */
static tsl_status report_alloc(tsl_plan_report *r, int n) {
    memset(r, 0, sizeof *r);
    size_t z = (size_t)n;
    /* size_t arrays first, then doubles, then ints: each part stays aligned */
    char *b = calloc(1, z * (7 * sizeof(size_t) + sizeof(double) + 3 * sizeof(int)));
    if (!b) return tsl_fail(TSL_ERR_OOM, "planner: out of host memory for the report of %d jobs", n);
    r->n_jobs = n;
    r->vanilla_peak = (size_t *)b;
    r->planned_peak = r->vanilla_peak + z;
    r->vanilla_footprint = r->planned_peak + z;
    r->planned_footprint = r->vanilla_footprint + z;
    r->floor = r->planned_footprint + z;
    r->bytes_h2d = r->floor + z;
    r->bytes_d2h = r->bytes_h2d + z;
    r->stall_us = (double *)(r->bytes_d2h + z);
    r->swaps = (int *)(r->stall_us + z);
    r->recomputes = r->swaps + z;
    r->waits = r->recomputes + z;
    return TSL_OK;
}

/* What the planner indexes with: op times, tensor indices, producers.
 * TSL_OK, or TSL_ERR_INVALID naming the workload, the op or tensor and the
 * value. (Full validation is the workload reader's job.) */
static tsl_status check_workload(const tsl_workload *w, int j) {
    if (!w) return tsl_fail(TSL_ERR_INVALID, "planner: workload %d is NULL", j);
    if (w->n_tensors < 0 || w->n_ops < 0 || (w->n_tensors && !w->tensors) || (w->n_ops && !w->ops))
        return tsl_fail(TSL_ERR_INVALID, "planner: workload %d ('%s'): %d tensors, %d ops", j,
                        w->job, w->n_tensors, w->n_ops);
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_wl_op *op = &w->ops[i];
        if (!(op->end_us >= op->start_us) || !isfinite(op->end_us))
            return tsl_fail(TSL_ERR_INVALID,
                            "planner: workload '%s': op %d ('%s'): times [%g, %g] us", w->job, i,
                            op->name, op->start_us, op->end_us);
        for (int k = 0; k < op->n_in + op->n_out; k++) {
            int32_t t = k < op->n_in ? op->in[k] : op->out[k - op->n_in];
            if (t < 0 || t >= w->n_tensors)
                return tsl_fail(TSL_ERR_INVALID,
                                "planner: workload '%s': op %d ('%s'): tensor index %d out of "
                                "range (%d tensors)",
                                w->job, i, op->name, t, w->n_tensors);
        }
    }
    for (int32_t t = 0; t < w->n_tensors; t++) {
        int32_t q = w->tensors[t].producer;
        if (q < -1 || q >= w->n_ops)
            return tsl_fail(TSL_ERR_INVALID,
                            "planner: workload '%s': tensor %d ('%s'): producer %d out of range",
                            w->job, t, w->tensors[t].name, q);
    }
    return TSL_OK;
}

/* Monotonic wall clock, ms: only for the report's planning time. */
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The empty plan's figures of w into the report's entry j: its peak load,
 * its layout's extent, and the job's floor. */
static tsl_status vanilla_figures(const tsl_workload *w, const tsl_device_profile *dev,
                                  size_t align, tsl_plan_report *r, int j) {
    tsl_peak_info pi;
    tsl_status st = tsl_peak_analysis(w, NULL, dev, &pi);
    if (st != TSL_OK) return st;
    r->vanilla_peak[j] = pi.peak;
    r->floor[j] = tsl_workload_op_floor(w, NULL);
    tsl_peak_info_free(&pi);
    tsl_plan *v = tsl_plan_new(w->job);
    if (!v) return tsl_fail(TSL_ERR_OOM, "planner: out of host memory");
    st = tsl_plan_layout(w, v, dev, align);
    r->vanilla_footprint[j] = v->predicted_footprint;
    tsl_plan_free(v);
    return st;
}

/* Sorts plan p of w and lays it out (tsl_plan_layout). */
static tsl_status lay_out(const tsl_workload *w, tsl_plan *p, const tsl_device_profile *dev,
                          size_t align) {
    tsl_plan_sort(p);
    return tsl_plan_layout(w, p, dev, align);
}

/* Sets the predicted figures of plan p of w (sorted, laid out) and counts
 * its events into the report's entry j. */
static tsl_status figures(const tsl_workload *w, tsl_plan *p, const tsl_device_profile *dev,
                          tsl_plan_report *r, int j) {
    tsl_peak_info pi;
    tsl_status st = tsl_peak_analysis(w, p, dev, &pi);
    if (st != TSL_OK) return st;
    p->predicted_peak = pi.peak;
    p->predicted_period_us = pi.period_us;
    r->planned_peak[j] = pi.peak;
    r->swaps[j] = r->recomputes[j] = 0;
    r->bytes_d2h[j] = r->bytes_h2d[j] = 0;
    r->waits[j] = pi.n_waits;
    r->stall_us[j] = pi.stall_us;
    tsl_peak_info_free(&pi);
    r->planned_footprint[j] = p->predicted_footprint;
    for (int32_t k = 0; k < p->n_events; k++) {
        const tsl_event *e = &p->events[k];
        size_t b = w->tensors[e->tensor].bytes;
        if (e->type == TSL_EV_SWAP_OUT) {
            r->swaps[j]++;
            r->bytes_d2h[j] += b;
        } else if (e->type == TSL_EV_SWAP_IN)
            r->bytes_h2d[j] += b;
        else if (e->type == TSL_EV_RECOMPUTE)
            r->recomputes[j]++;
    }
    return TSL_OK;
}

/* The plans' footprints, summed. */
static size_t sum_footprints(tsl_plan *const *plans, int n) {
    size_t s = 0;
    for (int j = 0; j < n; j++) s += plans[j]->predicted_footprint;
    return s;
}

/* A copy of p's events and algorithm choices (what the policy decided,
 * before the layout), or NULL if out of host memory. */
static tsl_plan *decisions_copy(const tsl_plan *p) {
    tsl_plan *c = tsl_plan_new(p->job);
    int ok = c != NULL;
    for (int32_t k = 0; ok && k < p->n_events; k++) ok = tsl_plan_add(c, p->events[k]) == TSL_OK;
    if (ok) ok = tsl_plan_copy_algos(c, p) == TSL_OK;
    if (!ok) {
        tsl_plan_free(c);
        return NULL;
    }
    return c;
}

/* 1 if plans a and b (sorted) hold the same events and algorithm
 * choices. */
static int same_decisions(const tsl_plan *a, const tsl_plan *b) {
    if (a->n_events != b->n_events || a->n_algos != b->n_algos) return 0;
    for (int32_t k = 0; k < a->n_events; k++)
        if (tsl__event_cmp(&a->events[k], &b->events[k])) return 0;
    return !a->n_algos || !memcmp(a->algos, b->algos, (size_t)a->n_algos * sizeof *a->algos);
}

/* Runs the policy for the budget b into fresh plans, lays them out, lets
 * the policy refine them, and takes their figures. decided[] (n_jobs
 * entries, NULL the first time) keeps a copy of the policy's sorted plans
 * of the last round laid out: if this round's are the same for every job
 * (a policy that gave its least memory already plans the same for a lower
 * budget), *same is set and the plans are left as the policy made them -
 * their layouts, refinement and figures would be the last round's. */
static tsl_status plan_round(const tsl_policy *pol, const tsl_plan_request *base,
                             size_t align, size_t b, tsl_plan **plans, tsl_plan_report *r,
                             tsl_plan **decided, int *same) {
    tsl_status st = TSL_OK;
    int n_jobs = base->n_jobs;
    tsl_workload *const *w = base->w;
    *same = 0;
    for (int j = 0; j < n_jobs && st == TSL_OK; j++)
        if (!(plans[j] = tsl_plan_new(w[j]->job)))
            st = tsl_fail(TSL_ERR_OOM, "planner: out of host memory");
    tsl_plan_request rq = *base; /* rq.missed: the footprint rounds' */
    rq.footprint_budget = base->budget;
    rq.budget = b;
    memset(&r->solver, 0, sizeof r->solver);
    rq.solver = &r->solver;
    r->least_memory = 0;
    rq.least_memory = &r->least_memory;
    r->spared = 0;
    rq.spared = &r->spared;
    r->iterations = 0;
    if (st == TSL_OK) st = pol->plan(&rq, plans, &r->iterations);
    for (int j = 0; j < n_jobs && st == TSL_OK; j++) tsl_plan_sort(plans[j]);
    if (st == TSL_OK && decided[0]) {
        *same = 1;
        for (int j = 0; j < n_jobs && *same; j++) *same = same_decisions(plans[j], decided[j]);
        if (*same) return TSL_OK;
    }
    for (int j = 0; j < n_jobs && st == TSL_OK; j++) {
        tsl_plan_free(decided[j]);
        if (!(decided[j] = decisions_copy(plans[j])))
            st = tsl_fail(TSL_ERR_OOM, "planner: out of host memory");
    }
    for (int j = 0; j < n_jobs && st == TSL_OK; j++)
        st = lay_out(w[j], plans[j], rq.job_dev[j], align);
    if (st == TSL_OK && pol->refine) {
        st = pol->refine(&rq, plans);
        for (int j = 0; j < n_jobs && st == TSL_OK; j++) tsl_plan_sort(plans[j]);
    }
    for (int j = 0; j < n_jobs && st == TSL_OK; j++)
        st = figures(w[j], plans[j], rq.job_dev[j], r, j);
    return st;
}

/* Rounds of planning allowed to bring the footprints under the budget. */
#define FOOTPRINT_ROUNDS 4

/* Budgets bisected between a round that met the budget and the faster one
 * before it that missed it (footprint_rounds), and how much faster that
 * one must be for them to be tried. */
#define BISECT_ROUNDS 3
#define BISECT_GAIN 0.05

/* The plans' predicted periods, summed. */
static double sum_periods(tsl_plan *const *plans, int n) {
    double s = 0.0;
    for (int j = 0; j < n; j++) s += plans[j]->predicted_period_us;
    return s;
}

/* The plans' loads (predicted peaks), summed. */
static size_t sum_loads(tsl_plan *const *plans, int n) {
    size_t s = 0;
    for (int j = 0; j < n; j++) s += plans[j]->predicted_peak;
    return s;
}

/* Allocates *to for n jobs with from's vanilla figures, floors and
 * budget (the rest zero). TSL_ERR_OOM. */
static tsl_status report_like(tsl_plan_report *to, const tsl_plan_report *from, int n) {
    tsl_status st = report_alloc(to, n);
    if (st != TSL_OK) return st;
    memcpy(to->vanilla_peak, from->vanilla_peak, (size_t)n * sizeof *to->vanilla_peak);
    memcpy(to->vanilla_footprint, from->vanilla_footprint,
           (size_t)n * sizeof *to->vanilla_footprint);
    memcpy(to->floor, from->floor, (size_t)n * sizeof *to->floor);
    to->budget = from->budget;
    return TSL_OK;
}

/* Frees a round's plans (n jobs, the array kept) and report. */
static void free_round(tsl_plan **plans, tsl_plan_report *r, int n) {
    for (int j = 0; j < n; j++) {
        tsl_plan_free(plans[j]);
        plans[j] = NULL;
    }
    tsl_plan_report_free(r);
}

/* Swaps the plans (n jobs) and reports of a and b. */
static void swap_rounds(tsl_plan **pa, tsl_plan_report *ra, tsl_plan **pb, tsl_plan_report *rb,
                        int n) {
    for (int j = 0; j < n; j++) {
        tsl_plan *x = pa[j];
        pa[j] = pb[j];
        pb[j] = x;
    }
    tsl_plan_report x = *ra;
    *ra = *rb;
    *rb = x;
}

/* Plans for r->budget so that the footprints fit it where the policy can
 * (see tsl_plan_jobs): while they do not, plans again for the budget
 * lowered by the layouts' overhead (see tsl_plan_jobs), keeping the
 * round with the smallest footprint; then, where that round fits and the
 * round it replaced missed the budget but took more than BISECT_GAIN less
 * time, bisects the budgets between them (BISECT_ROUNDS), keeping a plan
 * that fits in less time. plans[] hold the kept round's plans;
 * *spared is set if the policy spared savings in any round. */
static tsl_status footprint_rounds(const tsl_policy *pol, const tsl_plan_request *rq,
                                   size_t align, tsl_plan **plans, tsl_plan_report *r,
                                   int *spared) {
    size_t b = r->budget;
    int n_jobs = rq->n_jobs;
    tsl_plan **decided = calloc((size_t)n_jobs, sizeof *decided);
    if (!decided) return tsl_fail(TSL_ERR_OOM, "planner: out of host memory");
    int same = 0;
    /* the ways that missed a round's budget miss the lower ones too */
    uint32_t missed = 0;
    tsl_plan_request rounds_rq = *rq;
    rounds_rq.missed = &missed;
    rq = &rounds_rq;
    tsl_status st = plan_round(pol, rq, align, b, plans, r, decided, &same);
    *spared = r->spared;
    tsl_plan **alt = NULL;
    tsl_plan_report ar = {0};
    size_t floors = 0;
    for (int j = 0; j < n_jobs; j++) floors += r->floor[j];
    /* the last round kept that missed the budget: its load and period, and
     * the budget of the round kept after it */
    size_t miss_load = 0, kept_b = b;
    double miss_period = 0.0;
    for (int round = 1; st == TSL_OK && round < FOOTPRINT_ROUNDS; round++) {
        size_t fp = sum_footprints(plans, n_jobs), load = sum_loads(plans, n_jobs);
        if (fp <= r->budget) break;
        /* what the layouts add to the load; where the refinement took the
         * load itself above the budget (the policy met it before), at
         * least what the footprints exceed the budget by */
        size_t over = fp - load;
        if (load > r->budget && fp - r->budget > over) over = fp - r->budget;
        size_t nb = b > over + 1 ? b - over : 1;
        if (nb >= b) nb = b - b / 8; /* no overhead to take off: ask for less */
        if (nb == b || nb == 0) break;
        /* a policy that gave its least memory already (an integer program
         * that found no schedule within the budget; TENSILE with nothing
         * left to take off its peaks) plans the same for a lower budget
         * down to the jobs' floors (below them TENSILE keeps the paper's
         * plan, whose layout may be the smaller) */
        if (r->least_memory && nb >= floors) break;
        b = nb;
        if (!alt && !(alt = calloc((size_t)n_jobs, sizeof *alt))) {
            st = tsl_fail(TSL_ERR_OOM, "planner: out of host memory");
            break;
        }
        if ((st = report_like(&ar, r, n_jobs)) != TSL_OK) break;
        st = plan_round(pol, rq, align, b, alt, &ar, decided, &same);
        *spared |= ar.spared;
        int better = st == TSL_OK && !same && sum_footprints(alt, n_jobs) < fp;
        if (better) { /* keep the new round */
            miss_load = load;
            miss_period = sum_periods(plans, n_jobs);
            kept_b = b;
            swap_rounds(plans, r, alt, &ar, n_jobs);
        }
        free_round(alt, &ar, n_jobs);
        if (st != TSL_OK || !better) break;
    }
    /* the kept round meets the budget, a round before it missed it with
     * its load above this round's budget and took much less time (its
     * layout's overhead put it over; the lower budget cost far more): the
     * budgets in between, by bisection - one that meets the budget with
     * less time is kept; below a budget whose plan meets it, the budgets
     * only cost more, above one whose plan misses it they miss too */
    size_t lo = kept_b, hi = miss_load;
    int last_fit = 1; /* the last round laid out (decided[]) met the budget: the kept one */
    for (int k = 0; st == TSL_OK && alt && k < BISECT_ROUNDS && hi > lo + 1 &&
                    sum_footprints(plans, n_jobs) <= r->budget &&
                    sum_periods(plans, n_jobs) > miss_period * (1.0 + BISECT_GAIN);
         k++) {
        size_t mid = lo + (hi - lo) / 2;
        if ((st = report_like(&ar, r, n_jobs)) != TSL_OK) break;
        st = plan_round(pol, rq, align, mid, alt, &ar, decided, &same);
        *spared |= ar.spared;
        /* the same decisions as the last round laid out: its outcome */
        int fits = same ? last_fit : st == TSL_OK && sum_footprints(alt, n_jobs) <= r->budget;
        if (st == TSL_OK && !same) {
            last_fit = fits;
            if (fits && sum_periods(alt, n_jobs) < sum_periods(plans, n_jobs))
                swap_rounds(plans, r, alt, &ar, n_jobs); /* keep it */
        }
        if (fits) lo = mid;
        else hi = mid;
        free_round(alt, &ar, n_jobs);
    }
    for (int j = 0; j < n_jobs; j++) tsl_plan_free(decided[j]);
    free(decided);
    free(alt);
    return st;
}

/* The footprint rounds (footprint_rounds) for rq; where the policy saved
 * just enough for a named budget in some round and the plans still miss
 * it in footprint - the layouts' overhead outran the rounds, or a lower
 * budget's plan saved less than all would have - the rounds once more
 * saving all the policy can (just_enough 0), keeping the smaller
 * footprints. */
static tsl_status plan_to_footprint(const tsl_policy *pol, const tsl_plan_request *rq,
                                    size_t align, tsl_plan **plans, tsl_plan_report *r) {
    int spared = 0, ignored = 0;
    tsl_status st = footprint_rounds(pol, rq, align, plans, r, &spared);
    int n = rq->n_jobs;
    size_t fp = st == TSL_OK ? sum_footprints(plans, n) : 0;
    if (st != TSL_OK || !spared || fp <= r->budget) return st;
    tsl_plan_request all = *rq;
    all.just_enough = 0;
    tsl_plan **alt = calloc((size_t)n, sizeof *alt);
    tsl_plan_report ar = {0};
    st = alt ? report_like(&ar, r, n) : tsl_fail(TSL_ERR_OOM, "planner: out of host memory");
    if (st == TSL_OK) st = footprint_rounds(pol, &all, align, alt, &ar, &ignored);
    if (st == TSL_OK && sum_footprints(alt, n) < fp) swap_rounds(plans, r, alt, &ar, n);
    if (alt) free_round(alt, &ar, n);
    else tsl_plan_report_free(&ar);
    free(alt);
    return st;
}

/* Each job's profile into devs[] and jd[] (pointers to them): dev itself,
 * or with channel shares (tsl_plan_opts.channel_share) dev on job j's
 * share. TSL_ERR_INVALID for a share outside (0, 1] or shares summing
 * past 1. */
static tsl_status job_profiles(const tsl_device_profile *dev, const double *share, int n,
                               tsl_device_profile *devs, const tsl_device_profile **jd) {
    double sum = 0;
    for (int j = 0; j < n; j++) {
        if (share && !(share[j] > 0 && share[j] <= 1))
            return tsl_fail(TSL_ERR_INVALID,
                            "planner: channel_share[%d] = %g: a share must be in (0, 1]", j,
                            share[j]);
        sum += share ? share[j] : 0;
        devs[j] = share ? tsl_profile_channel_share(dev, share[j]) : *dev;
        jd[j] = &devs[j];
    }
    if (share && sum > 1 + 1e-9)
        return tsl_fail(TSL_ERR_INVALID,
                        "planner: the %d channel shares sum to %g, more than the device's "
                        "channels (1)",
                        n, sum);
    return TSL_OK;
}

/* Checks everything but the options; resolves the policy. */
static tsl_status check_args(tsl_workload *const *w, int n_jobs, const tsl_device_profile *dev,
                             const tsl_plan_opts *o, tsl_plan **plans, const tsl_policy **pol) {
    if (!w || !plans || !dev)
        return tsl_fail(TSL_ERR_INVALID, "planner: workloads, plans or profile is NULL");
    if (n_jobs < 1) return tsl_fail(TSL_ERR_INVALID, "planner: n_jobs %d: at least one job", n_jobs);
    *pol = o->policy ? o->policy : tsl_policy_find("tensile");
    if (!*pol || !(*pol)->plan)
        return tsl_fail(TSL_ERR_INVALID, "planner: the policy has no plan function");
    for (int j = 0; j < n_jobs; j++) {
        tsl_status st = check_workload(w[j], j);
        if (st != TSL_OK) return st;
    }
    if (!(dev->h2d_bw > 0) || !(dev->d2h_bw > 0) || !(dev->copy_latency_us >= 0))
        return tsl_fail(TSL_ERR_INVALID,
                        "planner: profile '%s': h2d_bw %g, d2h_bw %g must be > 0 and "
                        "copy_latency_us %g >= 0",
                        dev->name, dev->h2d_bw, dev->d2h_bw, dev->copy_latency_us);
    return TSL_OK;
}

tsl_status tsl_plan_jobs(tsl_workload *const *w, int n_jobs, const tsl_device_profile *dev,
                         const tsl_plan_opts *opts, tsl_plan **plans, tsl_plan_report *rep) {
    double t0 = now_ms();
    if (rep) memset(rep, 0, sizeof *rep);
    tsl_plan_opts def = tsl_plan_opts_default();
    if (!opts) opts = &def;
    const tsl_policy *pol = NULL;
    tsl_status st = check_args(w, n_jobs, dev, opts, plans, &pol);
    if (st != TSL_OK) return st;
    void *own = NULL; /* the policy's defaults when the caller gave no options */
    const void *values = opts->opts;
    if (!values && pol->opts_size) {
        own = malloc(pol->opts_size);
        if (!own) return tsl_fail(TSL_ERR_OOM, "planner: out of host memory");
        tsl_policy_defaults(pol, own);
        values = own;
    }
    if (values) st = tsl_policy_opts_check(pol, values, n_jobs);
    if (st != TSL_OK) {
        char why[400];
        snprintf(why, sizeof why, "%s", tsl_last_error());
        free(own);
        return tsl_fail(st, "planner: %s", why);
    }
    tsl_plan_report r;
    st = report_alloc(&r, n_jobs);
    r.budget = opts->budget ? opts->budget : dev->mem_bytes;
    for (int j = 0; j < n_jobs; j++) plans[j] = NULL;
    size_t align = opts->layout_align ? opts->layout_align : TSL_ALLOC_ALIGN;
    if (st == TSL_OK && (align & (align - 1)))
        st = tsl_fail(TSL_ERR_INVALID, "planner: layout_align %zu is not a power of two", align);
    /* each job's profile: the device's, or on its share of the channels */
    tsl_device_profile *devs = malloc((size_t)n_jobs * sizeof *devs);
    const tsl_device_profile **jd = malloc((size_t)n_jobs * sizeof *jd);
    if (st == TSL_OK && (!devs || !jd)) st = tsl_fail(TSL_ERR_OOM, "planner: out of host memory");
    if (st == TSL_OK) st = job_profiles(dev, opts->channel_share, n_jobs, devs, jd);
    for (int j = 0; j < n_jobs && st == TSL_OK; j++)
        st = vanilla_figures(w[j], jd[j], align, &r, j);
    tsl_plan_request rq = {w, n_jobs, dev, jd, !opts->channel_share, r.budget, opts->budget != 0,
                           pol->opts_size ? values : NULL, NULL, NULL, NULL, NULL, r.budget};
    if (st == TSL_OK) st = plan_to_footprint(pol, &rq, align, plans, &r);
    free(devs);
    free(jd);
    free(own);
    if (st != TSL_OK) {
        for (int j = 0; j < n_jobs; j++) {
            tsl_plan_free(plans[j]);
            plans[j] = NULL;
        }
        tsl_plan_report_free(&r);
        return st;
    }
    r.planning_ms = now_ms() - t0;
    size_t fp = 0;
    for (int j = 0; j < n_jobs; j++) fp += r.planned_footprint[j];
    r.budget_met = fp <= r.budget;
    size_t floor_b = 0;
    for (int j = 0; j < n_jobs; j++) floor_b += r.floor[j];
    if (!r.budget_met && r.budget < floor_b)
        st = tsl_fail(TSL_ERR_BUDGET,
                      "planner: the budget of %zu bytes is below the floor of %zu bytes (the "
                      "largest working set one op needs, summed over the %d job%s): no plan "
                      "meets it; policy '%s' reached footprints summing to %zu bytes",
                      r.budget, floor_b, n_jobs, n_jobs == 1 ? "" : "s", pol->name, fp);
    else if (!r.budget_met)
        st = tsl_fail(TSL_ERR_BUDGET,
                      "planner: policy '%s' cannot meet the budget: the %d job%s' planned "
                      "footprints sum to %zu bytes, more than the budget of %zu bytes",
                      pol->name, n_jobs, n_jobs == 1 ? "" : "s", fp, r.budget);
    if (rep) *rep = r;
    else tsl_plan_report_free(&r);
    return st;
}
