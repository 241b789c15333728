/*
 * test_simulator.c - the discrete-event simulator (tsl_simulate) against
 * timelines computed by hand (docs/SCHEDULING.md), against the planner's
 * own peak analysis and the verifier, against the vanilla dry run of real
 * graphs, and its Chrome trace parsed back with jansson.
 *
 * Hand-made cases use a profile with 1e9 B/s each way and no copy latency,
 * so a copy of k*1000 bytes takes exactly k us, and whole-microsecond
 * latencies: every expected time below is exact.
 *
 * The swap pair used by several tests (tensor bytes: in 100, A 4000,
 * B 1000, C 2000, D 500, E 10):
 *
 *   op  name  reads     writes  [start, end]
 *   0   f0    in        A       [0, 1]
 *   1   f1    A         B       [1, 6]
 *   2   f2    B         C       [6, 8]
 *   3   f3    C         D       [8, 18]
 *   4   f4    A D       E       [18, 19]
 *
 * Vanilla peak 7000 (in+A+B+C... in dies at 1: A+B+C = 7000 as f2 starts).
 * Plan: swap_out A after f0 (D2H [1, 5]), release A after f1 (at 6, its
 * swap-out ended at 5), swap_in A at f2 + 6 us (H2D [14, 18]) before f4.
 * Load: 0: 100, 4100 | 1: 4000, 5000 | 6: 1000, 3000 | 8: 2000, 2500 |
 * 14: 6500 | 18: 4500, 4510 | 19: 510, 10, 0. Peak 6500, period 19.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "random_workload.h"
#include "sim/sim_internal.h"
#include "tensile/models.h"
#include "tensile/sched.h"
#include "tensile/session.h"

/* (list, count) of int32 ids */
#define IDS(...) (const int32_t[]){__VA_ARGS__}, (int)(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t))
#define ACT TSL_KIND_ACTIVATION
#define GRAD TSL_KIND_GRADIENT
#define NO_PRECEDE (-1)

static tsl_device_profile sim_dev(int duplex) {
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

static void add_ev(tsl_plan *p, tsl_event_type type, int32_t tensor, int32_t trigger,
                   double delay, int32_t precede) {
    tsl_event e = {.type = type, .tensor = tensor, .trigger = trigger, .delay_us = delay,
                   .precede = precede};
    cr_assert_eq(tsl_plan_add(p, e), TSL_OK);
}

static void expect_us(double got, double want, const char *what) {
    cr_assert(fabs(got - want) <= 1e-9, "%s: %.17g us, expected %.17g (diff %g)", what, got,
              want, got - want);
}

/* ---- the swap pair ----------------------------------------------------------- */

enum { SP_IN = 0, SP_A, SP_B, SP_C, SP_D, SP_E };
enum { F0 = 0, F1, F2, F3, F4 };

static tsl_workload *swap_pair(const char *job) {
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
static tsl_plan *swap_pair_plan(const char *job, double in_delay, size_t predicted_peak) {
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

/* Runs the engine with a timeline; asserts success. */
static tsl_sim_result run_log(tsl_workload **w, tsl_plan **p, int n, const tsl_device_profile *dev,
                              int iterations, const tsl_latency_table *actual, tsl__sim_log *log) {
    tsl_sim_result r;
    memset(log, 0, sizeof *log);
    tsl_status st = tsl__sim_run(w, p, n, dev, iterations, actual, log, &r);
    cr_assert_eq(st, TSL_OK, "simulate: %s", tsl_last_error());
    return r;
}

/* The k-th span of `kind` of job `job` in iteration `iter` (asserts it exists). */
static const tsl__sim_span *span(const tsl__sim_log *log, int job, int iter, tsl__span_kind kind,
                                 int k) {
    for (int64_t i = 0; i < log->n_span; i++) {
        const tsl__sim_span *s = &log->span[i];
        if (s->job == job && s->iter == iter && s->kind == kind && k-- == 0) return s;
    }
    cr_assert_fail("no span %d of kind %d for job %d iteration %d", k, kind, job, iter);
    return NULL;
}

/* The span of op `op` of job `job` in iteration `iter`. */
static const tsl__sim_span *op_span(const tsl__sim_log *log, int job, int iter, int32_t op) {
    for (int64_t i = 0; i < log->n_span; i++) {
        const tsl__sim_span *s = &log->span[i];
        if (s->job == job && s->iter == iter && s->kind == TSL__SPAN_OP && s->op == op) return s;
    }
    cr_assert_fail("no span of op %d for job %d iteration %d", op, job, iter);
    return NULL;
}

static const tsl__sim_iter *iter_rec(const tsl__sim_log *log, int job, int iter) {
    for (int64_t i = 0; i < log->n_iter; i++)
        if (log->iter[i].job == job && log->iter[i].iter == iter) return &log->iter[i];
    cr_assert_fail("no record of iteration %d of job %d", iter, job);
    return NULL;
}

static int count_spans(const tsl__sim_log *log, int job, tsl__span_kind kind) {
    int n = 0;
    for (int64_t i = 0; i < log->n_span; i++)
        n += log->span[i].job == job && log->span[i].kind == kind;
    return n;
}

/* Compares job 0's first memory samples with (time, load) pairs. */
static void expect_curve(const tsl__sim_log *log, const double (*want)[2], int n) {
    int k = 0;
    for (int64_t i = 0; i < log->n_mem && k < n; i++) {
        const tsl__sim_mem *m = &log->mem[i];
        if (m->job != 0) continue;
        cr_assert(fabs(m->t - want[k][0]) <= 1e-9 && m->job_load == (size_t)want[k][1],
                  "memory change %d: (%.17g us, %zu bytes), expected (%g, %.0f)", k, m->t,
                  m->job_load, want[k][0], want[k][1]);
        k++;
    }
    cr_assert_eq(k, n, "only %d memory changes, expected at least %d", k, n);
}

/* ---- a chain without a plan --------------------------------------------------- */

/* in 100, w 10 (PARAM); fc [0,2] (workspace 50) -> a1 200; relu [2,5] ->
 * a2 300; loss [5,6] -> l 1. Load: 10 | 0: 110, 310, 360 | 2: 310, 210,
 * 510 | 5: 310, 311 | 6: 11, 10. Peak 510 (relu), period 6. */
Test(simulator, chain_without_plan_gives_the_vanilla_period_and_peak) {
    rw_builder *b = rw_build_begin("chain");
    int32_t in = rw_build_tensor(b, "in", 100, TSL_KIND_INPUT);
    int32_t wt = rw_build_tensor(b, "w", 10, TSL_KIND_PARAM);
    int32_t a1 = rw_build_tensor(b, "a1", 200, ACT);
    int32_t a2 = rw_build_tensor(b, "a2", 300, ACT);
    int32_t l = rw_build_tensor(b, "l", 1, ACT);
    rw_build_op(b, "fc", 2, 50, IDS(in, wt), IDS(a1));
    rw_build_op(b, "relu", 3, 0, IDS(a1), IDS(a2));
    rw_build_op(b, "loss", 1, 0, IDS(a2), IDS(l));
    tsl_workload *w = rw_build_end(b);
    tsl_device_profile dev = sim_dev(1);

    tsl_sim_result r;
    tsl_status st = tsl_simulate(&w, NULL, 1, &dev, NULL, &r);
    cr_assert_eq(st, TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(r.n_jobs, 1);
    cr_assert_eq(r.iterations, 3);
    cr_assert_eq(r.job[0].peak, 510, "peak %zu, expected 510", r.job[0].peak);
    cr_assert_eq(r.global_peak, 510, "global peak %zu", r.global_peak);
    expect_us(r.job[0].iter_us, 6, "iteration");
    expect_us(r.job[0].vanilla_iter_us, 6, "vanilla iteration");
    cr_assert_eq(r.job[0].stall_us, 0.0, "stall %g", r.job[0].stall_us);
    cr_assert_eq(rw_vanilla_peak(w), 510);

    /* the empty plan's peak is the planner's and the verifier's too */
    tsl_plan *p = tsl_plan_new("chain");
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(pi.peak, 510, "peak analysis %zu", pi.peak);
    tsl_peak_info_free(&pi);

    tsl__sim_log log;
    run_log(&w, &p, 1, &dev, 3, NULL, &log);
    static const double curve[][2] = {{0, 10},  {0, 110}, {0, 310}, {0, 360}, {2, 310}, {2, 210},
                                      {2, 510}, {5, 310}, {5, 311}, {6, 11},  {6, 10},  {6, 110}};
    expect_curve(&log, curve, 12);
    expect_us(op_span(&log, 0, 3, 2)->end, 18, "end of the third iteration's loss");
    tsl__sim_log_free(&log);
    tsl_plan_free(p);
    rw_free(w);
}

/* The empty plan of a real training graph: the simulated peak is the vanilla
 * executor's dry-run peak load, to the byte. */
Test(simulator, empty_plan_of_a_real_graph_matches_the_dry_run) {
    const char *models[] = {"cnn", "mlp"};
    for (int m = 0; m < 2; m++) {
        tsl_model_cfg cfg = tsl_model_cfg_default(models[m]);
        cfg.batch = 8;
        tsl_graph *g = tsl_graph_new(models[m]);
        tsl_tid loss;
        cr_assert_eq(tsl_model_build(g, models[m], &cfg, &loss), TSL_OK, "%s", tsl_last_error());
        cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
        tsl_optimizer_cfg opt = m ? tsl_adam_default(1e-3f) : tsl_sgd_default(0.1f);
        cr_assert_eq(tsl_graph_optimizer(g, &opt), TSL_OK, "%s", tsl_last_error());
        cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
        tsl_mem_report mr;
        cr_assert_eq(tsl_graph_dry_run(g, (size_t)1 << 32, &mr), TSL_OK, "%s", tsl_last_error());

        tsl_device_profile dev = sim_dev(1);
        dev.launch_us = 5;
        tsl_workload *w;
        cr_assert_eq(tsl_workload_from_graph(g, NULL, NULL, &dev, &w), TSL_OK, "%s",
                     tsl_last_error());
        tsl_sim_opts so = {.iterations = 2};
        tsl_sim_result r;
        cr_assert_eq(tsl_simulate(&w, NULL, 1, &dev, &so, &r), TSL_OK, "%s", tsl_last_error());
        printf("%s: %d ops, dry-run peak %zu, simulated %zu, period %.3f us\n", models[m],
               w->n_ops, mr.peak_load, r.job[0].peak, r.job[0].iter_us);
        cr_assert_eq(r.job[0].peak, mr.peak_load, "%s: simulated peak %zu, dry run %zu",
                     models[m], r.job[0].peak, mr.peak_load);
        cr_assert_eq(r.job[0].iter_us, w->period_us, "%s: period %.17g, workload %.17g",
                     models[m], r.job[0].iter_us, w->period_us);
        cr_assert_eq(r.job[0].stall_us, 0.0);
        tsl_workload_free(w);
        tsl_graph_free(g);
    }
}

/* ---- the swap pair ---------------------------------------------------------- */

Test(simulator, swap_pair_exact_memory_curve_and_peak) {
    tsl_workload *w = swap_pair("pair");
    tsl_plan *p = swap_pair_plan("pair", 6, 6500);
    tsl_device_profile dev = sim_dev(1);
    cr_assert_eq(rw_vanilla_peak(w), 7000);

    tsl__sim_log log;
    tsl_sim_result r = run_log(&w, &p, 1, &dev, 3, NULL, &log);
    static const double curve[][2] = {
        {0, 0},     {0, 100},   {0, 4100},  {1, 4000}, {1, 5000}, {6, 1000},
        {6, 3000},  {8, 2000},  {8, 2500},  {14, 6500}, {18, 4500}, {18, 4510},
        {19, 510},  {19, 10},   {19, 0},    {19, 100}};
    expect_curve(&log, curve, 16);
    cr_assert_eq(r.job[0].peak, 6500, "peak %zu, expected 6500", r.job[0].peak);
    cr_assert_eq(r.global_peak, 6500);
    expect_us(r.job[0].iter_us, 19, "iteration");
    cr_assert_eq(r.job[0].stall_us, 0.0);
    for (int it = 1; it <= 3; it++) {
        const tsl__sim_span *so = span(&log, 0, it, TSL__SPAN_SWAP_OUT, 0);
        const tsl__sim_span *si = span(&log, 0, it, TSL__SPAN_SWAP_IN, 0);
        double t0 = 19.0 * (it - 1);
        expect_us(so->start, t0 + 1, "swap-out start");
        expect_us(so->end, t0 + 5, "swap-out end");
        expect_us(si->start, t0 + 14, "swap-in start");
        expect_us(si->end, t0 + 18, "swap-in end");
        cr_assert_eq(so->wait, 0.0);
        cr_assert_eq(si->wait, 0.0);
        cr_assert_eq(iter_rec(&log, 0, it)->peak, 6500);
    }

    /* the planner's analysis and the verifier agree */
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(pi.peak, 6500, "peak analysis %zu", pi.peak);
    tsl_peak_info_free(&pi);
    tsl_violation *v = NULL;
    int nv = 0;
    tsl_plan_verify(w, p, &dev, &v, &nv);
    cr_assert_eq(nv, 0, "%d violations, first: %s", nv, nv ? v[0].what : "");
    free(v);
    tsl__sim_log_free(&log);
    tsl_plan_free(p);
    rw_free(w);
}

/* The swap-in issued 2 us late (f2 + 8: H2D [16, 20]) makes f4 wait from 18
 * to 20: a stall of exactly 2 us, every later time 2 us later. */
Test(simulator, late_swap_in_stalls_for_exactly_the_missing_time) {
    tsl_workload *w = swap_pair("late");
    tsl_plan *p = swap_pair_plan("late", 8, 6500);
    tsl_device_profile dev = sim_dev(1);
    tsl__sim_log log;
    tsl_sim_result r = run_log(&w, &p, 1, &dev, 3, NULL, &log);
    expect_us(r.job[0].stall_us, 2, "stall");
    expect_us(r.job[0].iter_us, 21, "iteration");
    expect_us(r.job[0].vanilla_iter_us, 19, "vanilla iteration");
    const tsl__sim_span *f4 = op_span(&log, 0, 1, F4);
    expect_us(f4->ready, 20, "f4 ready");
    expect_us(f4->start, 20, "f4 start");
    expect_us(f4->end, 21, "f4 end");
    expect_us(f4->wait, 2, "f4 stall");
    expect_us(op_span(&log, 0, 2, F0)->start, 21, "second iteration start");
    /* A is allocated at the swap-in's issue (16) instead of 14: same peak */
    cr_assert_eq(r.job[0].peak, 6500);
    tsl__sim_log_free(&log);
    tsl_plan_free(p);
    rw_free(w);
}

/* Latencies 1.5x the workload's: ops [0,1.5] [1.5,9] [9,12] [12,27]
 * [27,28.5]; swap-out [1.5,5.5], release at 9, swap-in at 12+6 = 18 (H2D
 * [18,22]), before f4 at 27: the same order of frees and allocations, the
 * same peak, no stall, times scaled. At 0.5x the swap-in (f2 ends at 4,
 * issue 10, H2D [10,14]) comes after f4 is due (9): a 5 us stall; and the
 * release after f1 (3) waits for the swap-out (0.5+4): A is still there
 * when f2 allocates C, so the peak rises to 7000. */
Test(simulator, drifted_latencies_change_times_not_plan_semantics) {
    tsl_workload *w = swap_pair("drift");
    tsl_plan *p = swap_pair_plan("drift", 6, 6500);
    tsl_device_profile dev = sim_dev(1);
    double slow[5], fast[5];
    for (int i = 0; i < 5; i++) {
        double lat = w->ops[i].end_us - w->ops[i].start_us;
        slow[i] = 1.5 * lat;
        fast[i] = 0.5 * lat;
    }
    tsl_latency_table at = {5, slow};
    tsl__sim_log log;
    tsl_sim_result r = run_log(&w, &p, 1, &dev, 3, &at, &log);
    cr_assert_eq(r.job[0].peak, 6500, "peak %zu at 1.5x", r.job[0].peak);
    expect_us(r.job[0].iter_us, 28.5, "iteration at 1.5x");
    expect_us(r.job[0].vanilla_iter_us, 28.5, "vanilla at 1.5x");
    cr_assert_eq(r.job[0].stall_us, 0.0);
    expect_us(span(&log, 0, 1, TSL__SPAN_SWAP_OUT, 0)->start, 1.5, "swap-out at 1.5x");
    expect_us(span(&log, 0, 1, TSL__SPAN_SWAP_IN, 0)->start, 18, "swap-in at 1.5x");
    expect_us(op_span(&log, 0, 1, F4)->start, 27, "f4 at 1.5x");
    tsl__sim_log_free(&log);

    /* the public entry point agrees */
    tsl_sim_opts so = {.iterations = 3, .actual = &at};
    tsl_sim_result r2;
    cr_assert_eq(tsl_simulate(&w, &p, 1, &dev, &so, &r2), TSL_OK, "%s", tsl_last_error());
    cr_assert(memcmp(&r, &r2, sizeof r) == 0);

    at.us = fast;
    r = run_log(&w, &p, 1, &dev, 3, &at, &log);
    expect_us(r.job[0].stall_us, 5, "stall at 0.5x");
    expect_us(r.job[0].iter_us, 14.5, "iteration at 0.5x");
    expect_us(op_span(&log, 0, 1, F4)->start, 14, "f4 at 0.5x");
    cr_assert_eq(r.job[0].peak, 7000, "peak %zu at 0.5x", r.job[0].peak);
    tsl__sim_log_free(&log);
    tsl_plan_free(p);
    rw_free(w);
}

/* Recomputing A before f4 instead of swapping it: f0 (1 us, workspace 50,
 * reads in, which f4 also reads so it lives) runs again over [18, 19]; f4
 * moves to [19, 20], the period to 20. Load: 0: 100, 4100, 4150 | 1: 4100,
 * 5100 | 6: 1100 (release A), 3100 | 8: 2100, 2600 | 18: 600, 4600, 4650
 * (the recomputation holds f0's workspace) | 19: 4600, 4610 | 20: ...
 * Peak 5100 (f1), against 7100 vanilla. */
Test(simulator, recomputation_shifts_later_ops_by_the_producer_latency) {
    rw_builder *b = rw_build_begin("rc");
    rw_build_tensor(b, "in", 100, TSL_KIND_INPUT);
    rw_build_tensor(b, "A", 4000, ACT);
    rw_build_tensor(b, "B", 1000, ACT);
    rw_build_tensor(b, "C", 2000, ACT);
    rw_build_tensor(b, "D", 500, GRAD);
    rw_build_tensor(b, "E", 10, GRAD);
    rw_build_op(b, "f0", 1, 50, IDS(SP_IN), IDS(SP_A));
    rw_build_op(b, "f1", 5, 0, IDS(SP_A), IDS(SP_B));
    rw_build_op(b, "f2", 2, 0, IDS(SP_B), IDS(SP_C));
    rw_build_op(b, "f3", 10, 0, IDS(SP_C), IDS(SP_D));
    rw_build_op(b, "f4", 1, 0, IDS(SP_A, SP_D, SP_IN), IDS(SP_E));
    tsl_workload *w = rw_build_end(b);
    cr_assert_eq(rw_vanilla_peak(w), 7150);
    tsl_plan *p = tsl_plan_new("rc");
    add_ev(p, TSL_EV_RELEASE, SP_A, F1, 0.0, NO_PRECEDE);
    add_ev(p, TSL_EV_RECOMPUTE, SP_A, -1, 0.0, F4);
    tsl_plan_sort(p);
    p->predicted_peak = 5100;
    p->predicted_period_us = 20;
    tsl_device_profile dev = sim_dev(1);

    tsl__sim_log log;
    tsl_sim_result r = run_log(&w, &p, 1, &dev, 3, NULL, &log);
    cr_assert_eq(r.job[0].peak, 5100, "peak %zu, expected 5100", r.job[0].peak);
    expect_us(r.job[0].iter_us, 20, "iteration");
    expect_us(r.job[0].vanilla_iter_us, 19, "vanilla iteration");
    cr_assert_eq(r.job[0].stall_us, 0.0);
    const tsl__sim_span *rc = span(&log, 0, 1, TSL__SPAN_RECOMPUTE, 0);
    cr_assert_eq(rc->op, F0);
    cr_assert_eq(rc->tensor, SP_A);
    expect_us(rc->start, 18, "recomputation start");
    expect_us(rc->end, 19, "recomputation end");
    expect_us(op_span(&log, 0, 1, F4)->start, 19, "f4 start");
    expect_us(op_span(&log, 0, 1, F4)->end, 20, "f4 end");
    expect_us(op_span(&log, 0, 2, F0)->start, 20, "second iteration");
    static const double curve[][2] = {{0, 0},    {0, 100},  {0, 4100}, {0, 4150}, {1, 4100},
                                      {1, 5100}, {6, 1100}, {6, 3100}, {8, 2100}, {8, 2600},
                                      {18, 600}, {18, 4600}, {18, 4650}, {19, 4600},
                                      {19, 4610}};
    expect_curve(&log, curve, 15);
    cr_assert_eq(count_spans(&log, 0, TSL__SPAN_RECOMPUTE), 3);

    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(pi.peak, 5100, "peak analysis %zu", pi.peak);
    expect_us(pi.period_us, 20, "planned period");
    tsl_peak_info_free(&pi);
    tsl_violation *v = NULL;
    int nv = 0;
    tsl_plan_verify(w, p, &dev, &v, &nv);
    cr_assert_eq(nv, 0, "%d violations, first: %s", nv, nv ? v[0].what : "");
    free(v);
    tsl__sim_log_free(&log);
    tsl_plan_free(p);
    rw_free(w);
}
