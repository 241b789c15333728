/*
 * ilp_policy.c - the planning both integer-program policies share
 * (checkmate, mosos): every job analysed (ilp_job.c), one program over all
 * of them for the request's budget (ilp_build.c), the solution turned
 * into events (ilp_emit.c), and the solver's outcome for the report.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/ilp_internal.h"

/* The outcome into the request's solver report. */
static void report(const tsl_plan_request *rq, const tsl__ilp_outcome *out) {
    if (rq->least_memory && out->budget_relaxed) *rq->least_memory = 1;
    tsl_solver_report *r = rq->solver;
    if (!r) return;
    memset(r, 0, sizeof *r);
    r->used = 1;
    snprintf(r->status, sizeof r->status, "%s", tsl__milp_status_name(out->status));
    r->hit_limit = out->hit_limit;
    r->gap = out->gap;
    r->objective = out->objective;
    r->bound = out->bound;
    r->seconds = out->seconds;
    r->solves = out->solves;
    r->n_cols = out->n_cols;
    r->n_rows = out->n_rows;
    r->budget_relaxed = out->budget_relaxed;
}

tsl_status tsl__ilp_plan(const tsl_plan_request *rq, tsl_plan **plans, const tsl__ilp_popts *po,
                         int swap) {
    double t0 = tsl__milp_now();
    int n = rq->n_jobs;
    tsl__ilp_job *J = calloc((size_t)n, sizeof *J);
    tsl__ilp_sched *s = calloc((size_t)n, sizeof *s);
    tsl_status st = J && s ? TSL_OK : tsl_fail(TSL_ERR_OOM, "ilp: out of host memory");
    int built = 0;
    for (; built < n && st == TSL_OK; built++) {
        st = tsl__ilp_job_init(&J[built], rq->w[built], rq->job_dev[built],
                               (size_t)po->min_swap_bytes);
        if (st == TSL_OK) st = tsl__ilp_sched_init(&s[built], &J[built]);
        if (st != TSL_OK) {
            if (J[built].w) tsl__ilp_job_free(&J[built]);
            break;
        }
    }
    tsl__ilp_opts o = {.time_limit_s = po->time_limit_s,
                       .deadline = t0 + po->deadline_s,
                       .threads = po->threads,
                       .max_chain = po->recompute ? 1 : 0,
                       .swap = swap,
                       .choose_algos = swap, /* mosos chooses the algorithms */
                       .window = po->window > 0 ? po->window : 1};
    tsl__ilp_outcome out = {.status = TSL__MILP_OPTIMAL};
    size_t vanilla = 0;
    int alts = 0; /* algorithms to choose: the program runs even without pressure */
    for (int j = 0; j < built; j++) {
        vanilla += J[j].vanilla_peak;
        for (int32_t t = 0; t < J[j].n && o.choose_algos; t++) alts |= J[j].alg.n[t] > 1;
    }
    int solve = vanilla > rq->budget || alts;
    /* the vanilla loads fit and no algorithm to choose: nothing to decide (the
     * empty plan, optimal) */
    /* CBC starts from STR's greedy on the same model with the decisions the
     * program has (never worse than it; checkmate: recomputations only) */
    tsl__ilp_sched *g = st == TSL_OK && solve ? calloc((size_t)n, sizeof *g) : NULL;
    int n_g = 0, steps;
    for (; g && n_g < n && st == TSL_OK; n_g++) st = tsl__ilp_sched_init(&g[n_g], &J[n_g]);
    if (g && st == TSL_OK) st = tsl__str_greedy(J, g, n, rq->budget, swap, o.max_chain > 0, &steps);
    if (st == TSL_OK && solve) st = tsl__ilp_solve_from(J, n, rq->budget, &o, g, s, &out);
    for (int j = 0; j < n_g; j++) tsl__ilp_sched_free(&g[j]);
    free(g);
    if (st == TSL_OK) report(rq, &out);
    for (int j = 0; j < n && st == TSL_OK; j++) st = tsl__ilp_emit(&J[j], &s[j], plans[j]);
    for (int j = 0; j < built; j++) {
        tsl__ilp_job_free(&J[j]);
        tsl__ilp_sched_free(&s[j]);
    }
    free(J);
    free(s);
    return st;
}
