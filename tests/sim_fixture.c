/* sim_fixture.c - see sim_fixture.h. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_fixture.h"

tsl_device_profile sim_dev(int duplex) {
    tsl_device_profile d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "sim-test");
    d.flops = 1e13;
    d.mem_bw = 1e12;
    d.mem_bytes = (size_t)1 << 30;
    d.h2d_bw = d.d2h_bw = 1e9;
    d.duplex = duplex;
    d.launch_us = 0;
    d.copy_latency_us = 0;
    return d;
}

void add_ev(tsl_plan *p, tsl_event_type type, int32_t tensor, int32_t trigger, double delay,
            int32_t precede) {
    tsl_event e = {.type = type, .tensor = tensor, .trigger = trigger, .delay_us = delay,
                   .precede = precede};
    cr_assert_eq(tsl_plan_add(p, e), TSL_OK);
}

void expect_us(double got, double want, const char *what) {
    cr_assert(fabs(got - want) <= 1e-9, "%s: %.17g us, expected %.17g (diff %g)", what, got,
              want, got - want);
}

tsl_workload *swap_pair(const char *job) {
    rw_builder *b = rw_build_begin(job);
    rw_build_tensor(b, "in", 100, TSL_KIND_INPUT);
    rw_build_tensor(b, "A", 4000, ACT);
    rw_build_tensor(b, "B", 1000, ACT);
    rw_build_tensor(b, "C", 2000, ACT);
    rw_build_tensor(b, "D", 500, GRAD);
    rw_build_tensor(b, "E", 10, GRAD);
    rw_build_op(b, "f0", 1, 0, IDS(SP_IN), IDS(SP_A));
    rw_build_op(b, "f1", 5, 0, IDS(SP_A), IDS(SP_B));
    rw_build_op(b, "f2", 2, 0, IDS(SP_B), IDS(SP_C));
    rw_build_op(b, "f3", 10, 0, IDS(SP_C), IDS(SP_D));
    rw_build_op(b, "f4", 1, 0, IDS(SP_A, SP_D), IDS(SP_E));
    tsl_workload *w = rw_build_end(b);
    cr_assert_not_null(w);
    char why[320];
    cr_assert_eq(rw_check(w, why, sizeof why), 0, "%s", why);
    return w;
}

/* The swap pair's plan with the swap-in issued `in_delay` us after f2. */
tsl_plan *swap_pair_plan(const char *job, double in_delay, size_t predicted_peak) {
    tsl_plan *p = tsl_plan_new(job);
    cr_assert_not_null(p);
    add_ev(p, TSL_EV_SWAP_OUT, SP_A, F0, 0.0, NO_PRECEDE);
    add_ev(p, TSL_EV_RELEASE, SP_A, F1, 0.0, NO_PRECEDE);
    add_ev(p, TSL_EV_SWAP_IN, SP_A, F2, in_delay, F4);
    tsl_plan_sort(p);
    p->predicted_peak = predicted_peak;
    p->predicted_period_us = 19;
    return p;
}

tsl_sim_result run_opts(tsl_workload **w, tsl_plan **p, int n, const tsl_device_profile *dev,
                        const tsl_sim_opts *o, tsl__sim_log *log) {
    tsl_sim_result r;
    memset(log, 0, sizeof *log);
    tsl_status st = tsl__sim_run(w, p, n, dev, o, log, &r);
    cr_assert_eq(st, TSL_OK, "simulate: %s", tsl_last_error());
    return r;
}

tsl_sim_result run_log(tsl_workload **w, tsl_plan **p, int n, const tsl_device_profile *dev,
                       int iterations, const tsl_latency_table *actual, tsl__sim_log *log) {
    tsl_sim_opts o = {.iterations = iterations, .actual = actual};
    return run_opts(w, p, n, dev, &o, log);
}

/* Frees a run's result and timeline. */
void run_free(tsl_sim_result *r, tsl__sim_log *log) {
    tsl_sim_result_free(r);
    tsl__sim_log_free(log);
}

/* Asserts that two results are the same, field by field. */
void same_results(const tsl_sim_result *a, const tsl_sim_result *b, const char *what) {
    cr_assert(a->n_jobs == b->n_jobs && a->global_peak == b->global_peak &&
                  a->iterations == b->iterations &&
                  memcmp(a->job, b->job, sizeof *a->job * (size_t)a->n_jobs) == 0,
              "%s", what);
}

/* The k-th span of `kind` of job `job` in iteration `iter` (asserts it exists). */
const tsl__sim_span *span(const tsl__sim_log *log, int job, int iter, tsl__span_kind kind, int k) {
    for (int64_t i = 0; i < log->n_span; i++) {
        const tsl__sim_span *s = &log->span[i];
        if (s->job == job && s->iter == iter && s->kind == kind && k-- == 0) return s;
    }
    cr_assert_fail("no span %d of kind %d for job %d iteration %d", k, kind, job, iter);
    return NULL;
}

/* The span of op `op` of job `job` in iteration `iter`. */
const tsl__sim_span *op_span(const tsl__sim_log *log, int job, int iter, int32_t op) {
    for (int64_t i = 0; i < log->n_span; i++) {
        const tsl__sim_span *s = &log->span[i];
        if (s->job == job && s->iter == iter && s->kind == TSL__SPAN_OP && s->op == op) return s;
    }
    cr_assert_fail("no span of op %d for job %d iteration %d", op, job, iter);
    return NULL;
}

const tsl__sim_iter *iter_rec(const tsl__sim_log *log, int job, int iter) {
    for (int64_t i = 0; i < log->n_iter; i++)
        if (log->iter[i].job == job && log->iter[i].iter == iter) return &log->iter[i];
    cr_assert_fail("no record of iteration %d of job %d", iter, job);
    return NULL;
}

int count_spans(const tsl__sim_log *log, int job, tsl__span_kind kind) {
    int n = 0;
    for (int64_t i = 0; i < log->n_span; i++)
        n += log->span[i].job == job && log->span[i].kind == kind;
    return n;
}
