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
#include "sim_fixture.h"
#include "tensile/models.h"
#include "tensile/policy.h"
#include "tensile/sim.h"
#include "tensile/verify.h"
#include "tensile/session.h"

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
    tsl_sim_result_free(&r);
    r = run_log(&w, &p, 1, &dev, 3, NULL, &log);
    static const double curve[][2] = {{0, 10},  {0, 110}, {0, 310}, {0, 360}, {2, 310}, {2, 210},
                                      {2, 510}, {5, 310}, {5, 311}, {6, 11},  {6, 10},  {6, 110}};
    expect_curve(&log, curve, 12);
    expect_us(op_span(&log, 0, 3, 2)->end, 18, "end of the third iteration's loss");
    run_free(&r, &log);
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
        tsl_optimizer_cfg opt = m ? tsl_adam_default(1e-3f) : tsl_sgd_default(0.1f);
        th_train_graph(g, loss, &opt);
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
        tsl_sim_result_free(&r);
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
    run_free(&r, &log);
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
    /* the plan says so too: a planned wait of 2 us (docs/SCHEDULING.md), in
     * the peak analysis and the verifier alike */
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK, "%s", tsl_last_error());
    cr_assert(pi.peak == 6500 && pi.period_us == 21.0 && pi.n_waits == 1 && pi.stall_us == 2.0,
              "peak %zu period %g waits %d stall %g", pi.peak, pi.period_us, pi.n_waits,
              pi.stall_us);
    tsl_peak_info_free(&pi);
    p->predicted_period_us = 21;
    tsl_verify_report vr;
    cr_assert_eq(tsl_plan_check((const tsl_workload *const *)&w, (const tsl_plan *const *)&p, 1,
                                &dev, &vr),
                 TSL_OK, "%s", tsl_last_error());
    cr_assert(vr.n_waits == 1 && vr.waits[0].op == F4 && vr.waits[0].stall_us == 2.0);
    tsl_verify_report_free(&vr);
    run_free(&r, &log);
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
    same_results(&r, &r2, "tsl_simulate and the engine differ");
    tsl_sim_result_free(&r2);
    tsl_sim_result_free(&r);

    at.us = fast;
    r = run_log(&w, &p, 1, &dev, 3, &at, &log);
    expect_us(r.job[0].stall_us, 5, "stall at 0.5x");
    expect_us(r.job[0].iter_us, 14.5, "iteration at 0.5x");
    expect_us(op_span(&log, 0, 1, F4)->start, 14, "f4 at 0.5x");
    cr_assert_eq(r.job[0].peak, 7000, "peak %zu at 0.5x", r.job[0].peak);
    run_free(&r, &log);
    tsl_plan_free(p);
    rw_free(w);
}

/* Recomputing A before f4 instead of swapping it: f0 (1 us, workspace 50,
 * reads in, which f4 also reads so it lives) runs again over [18, 19]; f4
 * moves to [19, 20], the period to 20. Load: 0: 100, 4100, 4150 | 1: 4100,
 * 5100 | 6: 1100 (release A), 3100 | 8: 2100, 2600 | 18: 600, 4600, 4650
 * (the recomputation holds f0's workspace) | 19: 4600, 4610 | 20: ...
 * Peak 5100 (f1), against 7100 vanilla. */
/* The swap pair with f0 holding a 50-byte workspace and f4 also reading
 * in (so that f0 can run again before f4). */
static tsl_workload *rc_pair(const char *job) {
    rw_builder *b = rw_build_begin(job);
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
    cr_assert_not_null(w);
    return w;
}

Test(simulator, recomputation_shifts_later_ops_by_the_producer_latency) {
    tsl_workload *w = rc_pair("rc");
    cr_assert_eq(rw_vanilla_peak(w), 7100);
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
    run_free(&r, &log);
    tsl_plan_free(p);
    rw_free(w);
}

/* ---- persistent tensors across iterations ---------------------------------- */

/* x 3000 (INPUT), P 1000 (PARAM), M 4000 (OPT_STATE), A 1000, G 1000:
 *   fwd [0,2]: x P -> A;  bwd [2,10]: A P -> G;  upd [10,11]: P G M -> P M.
 * M goes across the iteration: out after upd (D2H [11,15]), released then
 * (15), in at fwd + 4 (H2D [6,10]) before upd. The executor waits for the
 * swap-out (the paper's executor, III-D): every iteration lasts 15 us, 4 of
 * them a stall. (Whether a plan may let a copy outlast its iteration at all
 * is the verifier's call; the simulator runs it as the executor would.)
 * Iteration 1 (cold start, M resident, its swap-in copies nothing):
 *   5000 | 0: 8000, 9000 | 2: 6000, 7000 | ... peak 9000.
 * Steady state (M absent from the start):
 *   1000 | 0: 4000, 5000 | 2: 2000, 3000 | 6: 7000 | ... peak 7000. */
Test(simulator, persistent_tensor_swapped_across_iterations) {
    rw_builder *b = rw_build_begin("across");
    int32_t x = rw_build_tensor(b, "x", 3000, TSL_KIND_INPUT);
    int32_t P = rw_build_tensor(b, "P", 1000, TSL_KIND_PARAM);
    int32_t M = rw_build_tensor(b, "P.adam_m", 4000, TSL_KIND_OPT_STATE);
    int32_t A = rw_build_tensor(b, "A", 1000, ACT);
    int32_t G = rw_build_tensor(b, "G", 1000, GRAD);
    rw_build_op(b, "fwd", 2, 0, IDS(x, P), IDS(A));
    rw_build_op(b, "bwd", 8, 0, IDS(A, P), IDS(G));
    rw_build_mark_optimizer(b);
    rw_build_op(b, "upd", 1, 0, IDS(P, G, M), IDS(P, M));
    tsl_workload *w = rw_build_end(b);
    tsl_plan *p = tsl_plan_new("across");
    add_ev(p, TSL_EV_SWAP_OUT, M, 2, 0.0, NO_PRECEDE);
    add_ev(p, TSL_EV_RELEASE, M, 2, 0.0, NO_PRECEDE);
    add_ev(p, TSL_EV_SWAP_IN, M, 0, 4.0, 2);
    tsl_plan_sort(p);
    p->predicted_peak = 7000;
    p->predicted_period_us = 11;
    tsl_device_profile dev = sim_dev(1);

    tsl__sim_log log;
    tsl_sim_result r = run_log(&w, &p, 1, &dev, 3, NULL, &log);
    cr_assert_eq(iter_rec(&log, 0, 1)->peak, 9000, "cold start peak %zu",
                 iter_rec(&log, 0, 1)->peak);
    cr_assert_eq(iter_rec(&log, 0, 2)->peak, 7000, "second iteration peak %zu",
                 iter_rec(&log, 0, 2)->peak);
    cr_assert_eq(r.job[0].peak, 7000, "steady peak %zu", r.job[0].peak);
    expect_us(r.job[0].iter_us, 15, "iteration");
    expect_us(r.job[0].stall_us, 4, "stall (the wait for the swap-out)");
    expect_us(iter_rec(&log, 0, 2)->start, 15, "second iteration start");
    /* cold start: nothing to copy in during the first iteration */
    cr_assert_eq(count_spans(&log, 0, TSL__SPAN_SWAP_IN), 2);
    cr_assert_eq(count_spans(&log, 0, TSL__SPAN_SWAP_OUT), 3);
    expect_us(span(&log, 0, 2, TSL__SPAN_SWAP_IN, 0)->start, 21, "swap-in, iteration 2");

    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(pi.peak, 7000, "peak analysis %zu", pi.peak);
    tsl_peak_info_free(&pi);
    (void)G;
    (void)A;
    run_free(&r, &log);
    tsl_plan_free(p);
    rw_free(w);
}

/* A clean drop (docs/SCHEDULING.md): P (PARAM) swapped across the
 * iteration boundary - in at the start (H2D [0,1]) for fwd, out after upd
 * (D2H [11,12]) and released then - is released after fwd with no
 * swap-out and swapped in again 2 us after fwd (H2D [6,7]) for bwd: its
 * host copy is the one it came back from. x 1000 (INPUT), P 1000, A0, A, B,
 * G, Z 1000 each:
 *   load [0,2]: x -> A0;  fwd [2,4]: A0 P -> A;  mid [4,8]: A -> B;
 *   bwd [8,10]: B P -> G;  upd [10,11]: P G -> P;  post [11,13]: B -> Z.
 * The simulator starts P with a host copy (as the runtime parks it), so the
 * first iteration runs too (its first swap-in finds P resident and copies
 * nothing); every iteration lasts 13 us with no stall. Without the
 * across-iteration swap, P's only host copy would be stale: the simulator
 * and the verifier refuse the drop. */
Test(simulator, clean_drop_of_a_parameter) {
    rw_builder *b = rw_build_begin("clean");
    int32_t x = rw_build_tensor(b, "x", 1000, TSL_KIND_INPUT);
    int32_t P = rw_build_tensor(b, "P", 1000, TSL_KIND_PARAM);
    int32_t A0 = rw_build_tensor(b, "A0", 1000, ACT);
    int32_t A = rw_build_tensor(b, "A", 1000, ACT);
    int32_t B = rw_build_tensor(b, "B", 1000, ACT);
    int32_t G = rw_build_tensor(b, "G", 1000, GRAD);
    int32_t Z = rw_build_tensor(b, "Z", 1000, ACT);
    rw_build_op(b, "load", 2, 0, IDS(x), IDS(A0));
    rw_build_op(b, "fwd", 2, 0, IDS(A0, P), IDS(A));
    rw_build_op(b, "mid", 4, 0, IDS(A), IDS(B));
    rw_build_op(b, "bwd", 2, 0, IDS(B, P), IDS(G));
    rw_build_mark_optimizer(b);
    rw_build_op(b, "upd", 1, 0, IDS(P, G), IDS(P));
    rw_build_op(b, "post", 2, 0, IDS(B), IDS(Z));
    tsl_workload *w = rw_build_end(b);
    tsl_device_profile dev = sim_dev(1);
    for (int across = 1; across >= 0; across--) {
        tsl_plan *p = tsl_plan_new("clean");
        if (across) {
            add_ev(p, TSL_EV_SWAP_IN, P, -1, 0.0, 1);
            add_ev(p, TSL_EV_SWAP_OUT, P, 4, 0.0, NO_PRECEDE);
            add_ev(p, TSL_EV_RELEASE, P, 4, 0.0, NO_PRECEDE);
        }
        add_ev(p, TSL_EV_RELEASE, P, 1, 0.0, NO_PRECEDE); /* the drop */
        add_ev(p, TSL_EV_SWAP_IN, P, 1, 2.0, 3);
        tsl_plan_sort(p);
        tsl_peak_info pi;
        cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK, "%s", tsl_last_error());
        p->predicted_peak = pi.peak;
        p->predicted_period_us = 13;
        tsl_violation *v = NULL;
        int nv = 0;
        tsl_status vs = tsl_plan_verify(w, p, &dev, &v, &nv);
        if (across) {
            cr_assert_eq(vs, TSL_OK, "%d violations: %s", nv, nv ? v[0].what : "");
            tsl__sim_log log;
            tsl_sim_result r = run_log(&w, &p, 1, &dev, 3, NULL, &log);
            expect_us(r.job[0].iter_us, 13, "iteration");
            expect_us(r.job[0].stall_us, 0, "stall");
            /* iteration 1 copies only the drop's swap-in, the others both */
            cr_assert_eq(count_spans(&log, 0, TSL__SPAN_SWAP_IN), 5);
            cr_assert_eq(count_spans(&log, 0, TSL__SPAN_SWAP_OUT), 3);
            expect_us(span(&log, 0, 1, TSL__SPAN_SWAP_IN, 0)->rel_start, 6, "drop's swap-in, 1");
            expect_us(span(&log, 0, 2, TSL__SPAN_SWAP_IN, 1)->rel_start, 6, "drop's swap-in, 2");
            cr_assert_eq(pi.peak, r.job[0].peak, "peak analysis %zu, simulated %zu", pi.peak,
                         r.job[0].peak);
            run_free(&r, &log);
        } else {
            cr_assert_eq(vs, TSL_ERR_INVALID);
            cr_assert_gt(nv, 0);
            cr_assert(strstr(v[0].what, "host copy"), "%s", v[0].what);
            tsl_sim_result r;
            cr_assert_eq(tsl_simulate(&w, &p, 1, &dev, NULL, &r), TSL_ERR_INVALID);
            cr_assert(strstr(tsl_last_error(), "no host copy"), "%s", tsl_last_error());
        }
        free(v);
        tsl_peak_info_free(&pi);
        tsl_plan_free(p);
    }
    (void)x;
    (void)A;
    (void)B;
    (void)G;
    (void)Z;
    rw_free(w);
}

/* A release or swap-in depends on the swap-outs of its tensor planned at or
 * before it, not on later ones. x 1000, P 4000 (PARAM), A, G 1000:
 *   load [0,4]: x -> A;  fwd [4,6]: A P -> G;  upd [6,7]: P G -> P.
 * P is absent at the start (released after upd, periodic rule), swapped in
 * at the start (H2D [0,4]) for fwd; a redundant swap-out of that value runs
 * over [1,5] (planned after the swap-in: the swap-in does not wait for it);
 * P goes out again after upd ([7,11]) and is released when that ends.
 * Steady state: 0: 1000, 5000, 6000 | 4: 5000, 6000 | 6: 5000 | 7: 4000 |
 * 11: 0. Peak 6000; 11 us per iteration, 4 of them waiting for the copy. */
Test(simulator, swap_in_does_not_wait_for_a_later_swap_out) {
    rw_builder *b = rw_build_begin("pair2");
    int32_t x = rw_build_tensor(b, "x", 1000, TSL_KIND_INPUT);
    int32_t P = rw_build_tensor(b, "P", 4000, TSL_KIND_PARAM);
    int32_t A = rw_build_tensor(b, "A", 1000, ACT);
    int32_t G = rw_build_tensor(b, "G", 1000, GRAD);
    rw_build_op(b, "load", 4, 0, IDS(x), IDS(A));
    rw_build_op(b, "fwd", 2, 0, IDS(A, P), IDS(G));
    rw_build_mark_optimizer(b);
    rw_build_op(b, "upd", 1, 0, IDS(P, G), IDS(P));
    tsl_workload *w = rw_build_end(b);
    tsl_plan *p = tsl_plan_new("pair2");
    add_ev(p, TSL_EV_SWAP_IN, P, -1, 0.0, 1);
    add_ev(p, TSL_EV_SWAP_OUT, P, -1, 1.0, NO_PRECEDE);
    add_ev(p, TSL_EV_SWAP_OUT, P, 2, 0.0, NO_PRECEDE);
    add_ev(p, TSL_EV_RELEASE, P, 2, 0.0, NO_PRECEDE);
    tsl_plan_sort(p);
    tsl_device_profile dev = sim_dev(1);
    tsl__sim_log log;
    tsl_sim_result r = run_log(&w, &p, 1, &dev, 3, NULL, &log);
    cr_assert_eq(r.job[0].peak, 6000, "peak %zu", r.job[0].peak);
    expect_us(r.job[0].iter_us, 11, "iteration");
    expect_us(r.job[0].stall_us, 4, "stall");
    const tsl__sim_span *si = span(&log, 0, 2, TSL__SPAN_SWAP_IN, 0);
    expect_us(si->rel_start, 0, "swap-in (iteration 2)");
    expect_us(si->rel_end, 4, "swap-in end (iteration 2)");
    expect_us(span(&log, 0, 2, TSL__SPAN_SWAP_OUT, 0)->rel_start, 1, "early swap-out");
    expect_us(span(&log, 0, 2, TSL__SPAN_SWAP_OUT, 1)->rel_start, 7, "late swap-out");
    cr_assert_eq(op_span(&log, 0, 2, 1)->wait, 0.0, "fwd stalled");
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(pi.peak, 6000, "peak analysis %zu", pi.peak);
    tsl_peak_info_free(&pi);
    (void)G;
    run_free(&r, &log);
    tsl_plan_free(p);
    rw_free(w);
}

/* The swap pair with A's swap-out issued 3 us after f0 (planned: D2H [4,8],
 * before the release after f1 at 6, which then frees A at 8). At 0.5x the
 * release (f1 ends at 3) comes before the swap-out is even issued (0.5 + 3):
 * it still waits for it and frees A at 7.5; the swap-in (f2 + 6 = 10, H2D
 * [10,14]) is late for f4 (due at 9): 5 us stall. Load: ... 3: 7000 (C while
 * A waits) | 4: 6000, 6500 | 7.5: 2500 | 9: 500 | 10: 4500 | 14: 4510. */
Test(simulator, release_waits_for_its_planned_swap_out_under_drift) {
    tsl_workload *w = swap_pair("late-out");
    tsl_plan *p = tsl_plan_new("late-out");
    add_ev(p, TSL_EV_SWAP_OUT, SP_A, F0, 3.0, NO_PRECEDE);
    add_ev(p, TSL_EV_RELEASE, SP_A, F1, 0.0, NO_PRECEDE);
    add_ev(p, TSL_EV_SWAP_IN, SP_A, F2, 6.0, F4);
    tsl_plan_sort(p);
    tsl_device_profile dev = sim_dev(1);
    double fast[5];
    for (int i = 0; i < 5; i++) fast[i] = 0.5 * (w->ops[i].end_us - w->ops[i].start_us);
    tsl_latency_table at = {5, fast};
    tsl__sim_log log;
    tsl_sim_result r = run_log(&w, &p, 1, &dev, 1, &at, &log);
    static const double curve[][2] = {{0, 0},    {0, 100},    {0, 4100},  {0.5, 4000},
                                      {0.5, 5000}, {3, 7000}, {4, 6000},  {4, 6500},
                                      {7.5, 2500}, {9, 500},  {10, 4500}, {14, 4510}};
    expect_curve(&log, curve, 12);
    expect_us(r.job[0].stall_us, 5, "stall");
    expect_us(r.job[0].iter_us, 14.5, "iteration");
    cr_assert_eq(r.job[0].peak, 7000);
    run_free(&r, &log);
    tsl_plan_free(p);
    rw_free(w);
}

/* ---- several jobs ------------------------------------------------------------- */

/* Two swap pairs share the compute resource and the channels. Compute, by
 * ready time then job index: j0.f0 [0,1] j1.f0 [1,2] j0.f1 [2,7] j1.f1
 * [7,12] j0.f2 [12,14] j1.f2 [14,16] j0.f3 [16,26] j1.f3 [26,36] j0.f4
 * [36,37] j1.f4 [37,38]. D2H: j0's swap-out [1,5]; j1's, issued at 2, waits
 * for it: [5,9]. H2D: j0's swap-in issued at 14+6 = 20, [20,24]; j1's at
 * 16+6 = 22 waits: [24,28]. Iterations: j0 [0,37], j1 [0,38]. No stall
 * (waiting for the compute resource is not waiting for data). */
Test(simulator, channel_contention_between_two_jobs) {
    tsl_workload *w[2] = {swap_pair("j0"), swap_pair("j1")};
    tsl_plan *p[2] = {swap_pair_plan("j0", 6, 6500), swap_pair_plan("j1", 6, 6500)};
    tsl_device_profile dev = sim_dev(1);
    tsl__sim_log log;
    tsl_sim_result r = run_log(w, p, 2, &dev, 3, NULL, &log);
    static const double want[2][5][2] = {{{0, 1}, {2, 7}, {12, 14}, {16, 26}, {36, 37}},
                                         {{1, 2}, {7, 12}, {14, 16}, {26, 36}, {37, 38}}};
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 5; i++) {
            const tsl__sim_span *s = op_span(&log, j, 1, i);
            cr_assert(fabs(s->start - want[j][i][0]) <= 1e-9 && fabs(s->end - want[j][i][1]) <= 1e-9,
                      "job %d op %d over [%g, %g], expected [%g, %g]", j, i, s->start, s->end,
                      want[j][i][0], want[j][i][1]);
            cr_assert_eq(s->wait, 0.0, "job %d op %d stalled %g us", j, i, s->wait);
        }
    const tsl__sim_span *so0 = span(&log, 0, 1, TSL__SPAN_SWAP_OUT, 0);
    const tsl__sim_span *so1 = span(&log, 1, 1, TSL__SPAN_SWAP_OUT, 0);
    expect_us(so0->start, 1, "j0 swap-out start");
    cr_assert_eq(so0->wait, 0.0);
    expect_us(so1->ready, 2, "j1 swap-out issue");
    expect_us(so1->start, 5, "j1 swap-out start");
    expect_us(so1->end, 9, "j1 swap-out end");
    expect_us(so1->wait, 3, "j1 swap-out channel wait");
    const tsl__sim_span *si0 = span(&log, 0, 1, TSL__SPAN_SWAP_IN, 0);
    const tsl__sim_span *si1 = span(&log, 1, 1, TSL__SPAN_SWAP_IN, 0);
    expect_us(si0->start, 20, "j0 swap-in start");
    expect_us(si1->ready, 22, "j1 swap-in issue");
    expect_us(si1->start, 24, "j1 swap-in start");
    expect_us(si1->wait, 2, "j1 swap-in channel wait");
    expect_us(iter_rec(&log, 0, 1)->end, 37, "j0 iteration 1");
    expect_us(iter_rec(&log, 1, 1)->end, 38, "j1 iteration 1");
    cr_assert_eq(iter_rec(&log, 0, 1)->stall_us, 0.0);
    cr_assert_eq(iter_rec(&log, 1, 1)->stall_us, 0.0);
    for (int j = 0; j < 2; j++) {
        cr_assert(r.job[j].iter_us >= 37, "job %d iteration %g", j, r.job[j].iter_us);
        expect_us(r.job[j].vanilla_iter_us, 19, "vanilla");
    }
    /* the global load is the sum of the two jobs' at every change */
    size_t load[2] = {0, 0}, gmax = 0;
    for (int64_t i = 0; i < log.n_mem; i++) {
        load[log.mem[i].job] = log.mem[i].job_load;
        cr_assert_eq(log.mem[i].global_load, load[0] + load[1]);
        if (log.mem[i].global_load > gmax) gmax = log.mem[i].global_load;
    }
    cr_assert(r.global_peak > 0 && r.global_peak <= gmax);
    run_free(&r, &log);
    for (int j = 0; j < 2; j++) {
        tsl_plan_free(p[j]);
        rw_free(w[j]);
    }
}

/* One shared channel (not duplex): a swap-in issued while a swap-out runs
 * waits for it. x 100, X 2000, Y 4000, small others:
 *   g0 [0,1]: in -> X;   g1 [1,4]: X -> Y;   g2 [4,5]: Y -> Z;
 *   g3 [5,7]: Z -> Q;    g4 [7,8]: X Q -> R;  g5 [8,20]: R -> S;
 *   g6 [20,21]: Y S -> U.
 * X out after g0 [1,3], released after g1; Y out after g1 [4,8], released
 * after g2 (at 8); X in after g2 [5,7] for g4; Y in at g4 + 8 [16,20] for
 * g6. Duplex: no wait. Shared: X in waits until 8 ([8,10]): g4 stalls 3 us
 * ([10,11]), Y in at 11 + 8 = 19 ([19,23]), g6 [23,24]. */
Test(simulator, non_duplex_profile_shares_one_channel) {
    rw_builder *b = rw_build_begin("nd");
    int32_t in = rw_build_tensor(b, "in", 100, TSL_KIND_INPUT);
    int32_t X = rw_build_tensor(b, "X", 2000, ACT);
    int32_t Y = rw_build_tensor(b, "Y", 4000, ACT);
    int32_t Z = rw_build_tensor(b, "Z", 10, ACT);
    int32_t Q = rw_build_tensor(b, "Q", 10, ACT);
    int32_t R = rw_build_tensor(b, "R", 10, ACT);
    int32_t S = rw_build_tensor(b, "S", 10, ACT);
    int32_t U = rw_build_tensor(b, "U", 10, GRAD);
    rw_build_op(b, "g0", 1, 0, IDS(in), IDS(X));
    rw_build_op(b, "g1", 3, 0, IDS(X), IDS(Y));
    rw_build_op(b, "g2", 1, 0, IDS(Y), IDS(Z));
    rw_build_op(b, "g3", 2, 0, IDS(Z), IDS(Q));
    rw_build_op(b, "g4", 1, 0, IDS(X, Q), IDS(R));
    rw_build_op(b, "g5", 12, 0, IDS(R), IDS(S));
    rw_build_op(b, "g6", 1, 0, IDS(Y, S), IDS(U));
    tsl_workload *w = rw_build_end(b);
    tsl_plan *p = tsl_plan_new("nd");
    add_ev(p, TSL_EV_SWAP_OUT, X, 0, 0.0, NO_PRECEDE);
    add_ev(p, TSL_EV_RELEASE, X, 1, 0.0, NO_PRECEDE);
    add_ev(p, TSL_EV_SWAP_OUT, Y, 1, 0.0, NO_PRECEDE);
    add_ev(p, TSL_EV_RELEASE, Y, 2, 0.0, NO_PRECEDE);
    add_ev(p, TSL_EV_SWAP_IN, X, 2, 0.0, 4);
    add_ev(p, TSL_EV_SWAP_IN, Y, 4, 8.0, 6);
    tsl_plan_sort(p);

    tsl_device_profile duplex = sim_dev(1), shared = sim_dev(0);
    tsl__sim_log log;
    tsl_sim_result r = run_log(&w, &p, 1, &duplex, 2, NULL, &log);
    expect_us(r.job[0].iter_us, 21, "duplex iteration");
    cr_assert_eq(r.job[0].stall_us, 0.0);
    expect_us(span(&log, 0, 1, TSL__SPAN_SWAP_IN, 0)->start, 5, "duplex: X in");
    run_free(&r, &log);

    r = run_log(&w, &p, 1, &shared, 2, NULL, &log);
    expect_us(r.job[0].iter_us, 24, "shared-channel iteration");
    expect_us(r.job[0].stall_us, 3, "shared-channel stall");
    const tsl__sim_span *xin = span(&log, 0, 1, TSL__SPAN_SWAP_IN, 0);
    cr_assert_eq(xin->tensor, X);
    expect_us(xin->ready, 5, "X in issue");
    expect_us(xin->start, 8, "X in start");
    expect_us(xin->wait, 3, "X in channel wait");
    expect_us(op_span(&log, 0, 1, 4)->start, 10, "g4 start");
    expect_us(op_span(&log, 0, 1, 4)->wait, 3, "g4 stall");
    const tsl__sim_span *yin = span(&log, 0, 1, TSL__SPAN_SWAP_IN, 1);
    cr_assert_eq(yin->tensor, Y);
    expect_us(yin->start, 19, "Y in start");
    expect_us(op_span(&log, 0, 1, 6)->start, 23, "g6 start");
    (void)Z, (void)R, (void)S, (void)U;
    run_free(&r, &log);
    tsl_plan_free(p);
    rw_free(w);
}

/* A job that finishes early keeps running (uncounted) until the slowest job
 * has run its iterations, so the device stays shared as in a real run. */
Test(simulator, a_fast_job_keeps_running_while_a_slow_one_finishes) {
    rw_builder *b = rw_build_begin("fast");
    int32_t in = rw_build_tensor(b, "in", 100, TSL_KIND_INPUT);
    int32_t a = rw_build_tensor(b, "a", 1000, ACT);
    rw_build_op(b, "only", 1, 0, IDS(in), IDS(a));
    tsl_workload *w[2] = {swap_pair("slow"), rw_build_end(b)};
    tsl_plan *p[2] = {swap_pair_plan("slow", 6, 6500), NULL};
    tsl_device_profile dev = sim_dev(1);
    tsl__sim_log log;
    tsl_sim_result r = run_log(w, p, 2, &dev, 3, NULL, &log);
    int fillers = 0, counted[2] = {0, 0};
    double slow_end = 0;
    for (int64_t i = 0; i < log.n_iter; i++) {
        const tsl__sim_iter *it = &log.iter[i];
        if (it->counted) counted[it->job]++;
        else fillers += it->job == 1;
        cr_assert(it->counted == (it->iter <= 3));
        if (it->job == 0 && it->iter == 3) slow_end = it->end;
    }
    cr_assert_eq(counted[0], 3);
    cr_assert_eq(counted[1], 3);
    cr_assert(fillers > 3, "the fast job ran %d uncounted iterations", fillers);
    for (int64_t i = 0; i < log.n_span; i++) cr_assert(log.span[i].end <= slow_end + 1e-9);
    cr_assert_eq(r.job[1].peak, 1100, "fast job peak %zu", r.job[1].peak);
    cr_assert_eq(r.job[0].peak, 6500, "slow job peak %zu", r.job[0].peak);
    expect_us(r.job[1].vanilla_iter_us, 1, "fast vanilla");
    printf("fast job: %d uncounted iterations; global peak %zu; slow job %.1f us/iteration\n",
           fillers, r.global_peak, r.job[0].iter_us);
    (void)in, (void)a;
    run_free(&r, &log);
    tsl_plan_free(p[0]);
    rw_free(w[0]);
    rw_free(w[1]);
}

/* ---- the Chrome trace ------------------------------------------------------- */

/* A temporary file name (created empty). */
static void temp_path(char *buf, size_t len, const char *tag) {
    snprintf(buf, len, "/tmp/tsl_sim_%s_XXXXXX", tag);
    int fd = mkstemp(buf);
    cr_assert(fd >= 0, "mkstemp %s", buf);
    close(fd);
}

typedef struct trace_count {
    int x[8][8];          /* complete events per (pid, tid) */
    int c[8];             /* counter events per pid */
    double cmax[8];       /* largest counter value per pid */
    int meta_process[8];  /* process_name seen per pid */
    char thread[8][8][32];/* thread names */
    int swap_in_named, swap_out_named, recompute_named;
} trace_count;

/* Parses the trace and counts its events; asserts the structure of each. */
static void read_trace(const char *path, trace_count *tc) {
    memset(tc, 0, sizeof *tc);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    cr_assert_not_null(root, "trace %s is not valid JSON: line %d: %s", path, err.line, err.text);
    json_t *evs = json_object_get(root, "traceEvents");
    cr_assert(json_is_array(evs), "no traceEvents array");
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        const char *name = json_string_value(json_object_get(ev, "name"));
        json_t *pidj = json_object_get(ev, "pid");
        cr_assert(ph && name && json_is_integer(pidj), "event %zu lacks ph, name or pid", i);
        int pid = (int)json_integer_value(pidj);
        cr_assert(pid >= 1 && pid < 8, "pid %d", pid);
        if (strcmp(ph, "X") == 0) {
            int tid = (int)json_integer_value(json_object_get(ev, "tid"));
            double ts = json_number_value(json_object_get(ev, "ts"));
            double dur = json_number_value(json_object_get(ev, "dur"));
            cr_assert(tid >= 1 && tid < 8 && ts >= 0 && dur >= 0, "X event %zu: tid %d ts %g dur %g",
                      i, tid, ts, dur);
            tc->x[pid][tid]++;
            tc->swap_in_named += strncmp(name, "swap_in ", 8) == 0 && tid == 2;
            tc->swap_out_named += strncmp(name, "swap_out ", 9) == 0 && tid == 3;
            tc->recompute_named += strncmp(name, "recompute ", 10) == 0 && tid == 1;
        } else if (strcmp(ph, "C") == 0) {
            json_t *args = json_object_get(ev, "args");
            double v = json_number_value(json_object_get(args, "bytes"));
            cr_assert(json_is_number(json_object_get(args, "bytes")), "counter without bytes");
            tc->c[pid]++;
            if (v > tc->cmax[pid]) tc->cmax[pid] = v;
        } else if (strcmp(ph, "M") == 0) {
            json_t *args = json_object_get(ev, "args");
            if (strcmp(name, "process_name") == 0) tc->meta_process[pid]++;
            if (strcmp(name, "thread_name") == 0) {
                int tid = (int)json_integer_value(json_object_get(ev, "tid"));
                snprintf(tc->thread[pid][tid], sizeof tc->thread[pid][tid], "%s",
                         json_string_value(json_object_get(args, "name")));
            }
        } else {
            cr_assert_fail("unexpected phase '%s'", ph);
        }
    }
    json_decref(root);
}

Test(simulator, chrome_trace_has_the_tracks_and_events_of_the_timeline) {
    tsl_workload *w[2] = {swap_pair("j0"), rc_pair("j1")};
    tsl_plan *p[2] = {swap_pair_plan("j0", 6, 6500), tsl_plan_new("j1")};
    add_ev(p[1], TSL_EV_RELEASE, SP_A, F1, 0.0, NO_PRECEDE);
    add_ev(p[1], TSL_EV_RECOMPUTE, SP_A, -1, 0.0, F4);
    tsl_device_profile dev = sim_dev(1);
    char path[64];
    temp_path(path, sizeof path, "trace");
    tsl_sim_opts so = {.iterations = 3, .trace_path = path};
    tsl_sim_result r;
    cr_assert_eq(tsl_simulate(w, p, 2, &dev, &so, &r), TSL_OK, "%s", tsl_last_error());
    tsl__sim_log log;
    tsl_sim_result r2 = run_log(w, p, 2, &dev, 3, NULL, &log);
    same_results(&r, &r2, "the trace changed the result");
    tsl_sim_result_free(&r2);

    trace_count tc;
    read_trace(path, &tc);
    unlink(path);
    const char *tracks[5] = {NULL, "compute", "H2D", "D2H", "iterations"};
    for (int j = 0; j < 2; j++) {
        int pid = j + 1;
        cr_assert_eq(tc.meta_process[pid], 1, "process name of job %d", j);
        for (int tid = 1; tid <= 4; tid++)
            cr_assert_str_eq(tc.thread[pid][tid], tracks[tid], "job %d track %d", j, tid);
        int items = 0, ins = 0, outs = 0, iters = 0;
        for (int64_t i = 0; i < log.n_span; i++) {
            if (log.span[i].job != j) continue;
            items += log.span[i].kind == TSL__SPAN_OP || log.span[i].kind == TSL__SPAN_RECOMPUTE;
            ins += log.span[i].kind == TSL__SPAN_SWAP_IN;
            outs += log.span[i].kind == TSL__SPAN_SWAP_OUT;
        }
        for (int64_t i = 0; i < log.n_iter; i++) iters += log.iter[i].job == j;
        cr_assert_eq(tc.x[pid][1], items, "job %d: %d compute events, timeline %d", j,
                     tc.x[pid][1], items);
        cr_assert_eq(tc.x[pid][2], ins);
        cr_assert_eq(tc.x[pid][3], outs);
        cr_assert_eq(tc.x[pid][4], iters);
        int samples = 0;
        size_t lmax = 0;
        for (int64_t i = 0; i < log.n_mem; i++)
            if (log.mem[i].job == j) {
                samples++;
                if (log.mem[i].job_load > lmax) lmax = log.mem[i].job_load;
            }
        cr_assert_eq(tc.c[pid], samples, "job %d: %d counter events, %d changes", j, tc.c[pid],
                     samples);
        cr_assert_eq((size_t)tc.cmax[pid], lmax);
    }
    /* job 0 swaps (one each way per iteration; it finishes first and keeps
     * running), job 1 recomputes (6 items per iteration, exactly 3) */
    cr_assert(tc.x[1][1] >= 15 && tc.x[1][2] >= 3 && tc.x[1][3] >= 3);
    cr_assert_eq(tc.x[2][1], 18, "job 1: %d compute events", tc.x[2][1]);
    cr_assert_eq(tc.x[2][2] + tc.x[2][3], 0);
    cr_assert_eq(tc.x[2][4], 3);
    cr_assert_eq(tc.swap_in_named, tc.x[1][2]);
    cr_assert_eq(tc.swap_out_named, tc.x[1][3]);
    cr_assert_eq(tc.recompute_named, 3);
    /* the device process: the global counter, one sample per change */
    cr_assert_eq(tc.meta_process[3], 1);
    cr_assert_eq(tc.c[3], (int)log.n_mem);
    printf("trace: %d + %d compute, %d counters per job; global max %.0f bytes\n", tc.x[1][1],
           tc.x[2][1], tc.c[1], tc.cmax[3]);
    run_free(&r, &log);
    for (int j = 0; j < 2; j++) {
        tsl_plan_free(p[j]);
        rw_free(w[j]);
    }
}

Test(simulator, unwritable_trace_path_is_an_io_error) {
    tsl_workload *w = swap_pair("io");
    tsl_device_profile dev = sim_dev(1);
    tsl_sim_opts so = {.iterations = 1, .trace_path = "/nonexistent-dir/trace.json"};
    tsl_sim_result r;
    cr_assert_eq(tsl_simulate(&w, NULL, 1, &dev, &so, &r), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "/nonexistent-dir/trace.json"), "%s", tsl_last_error());
    rw_free(w);
}

/* ---- determinism ------------------------------------------------------------ */

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

Test(simulator, same_inputs_give_identical_results_and_traces) {
    rw_opts o = rw_opts_default();
    tsl_workload *w[3];
    cr_assert_eq(rw_generate_jobs(7, &o, 3, w), 0);
    tsl_device_profile dev = rw_profile(7);
    tsl_plan_opts po = tsl_plan_opts_default();
    po.policy = tsl_policy_find("tensile");
    po.budget = 1;
    tsl_plan *p[3];
    tsl_plan_report rep;
    cr_assert(TH_PLANNED(tsl_plan_jobs(w, 3, &dev, &po, p, &rep)), "%s", tsl_last_error());
    char path[2][64];
    char *bytes[2];
    size_t len[2];
    tsl_sim_result r[2];
    for (int k = 0; k < 2; k++) {
        temp_path(path[k], sizeof path[k], "det");
        tsl_sim_opts so = {.iterations = 3, .trace_path = path[k]};
        cr_assert_eq(tsl_simulate(w, p, 3, &dev, &so, &r[k]), TSL_OK, "%s", tsl_last_error());
        bytes[k] = slurp(path[k], &len[k]);
        unlink(path[k]);
    }
    same_results(&r[0], &r[1], "results differ");
    cr_assert(len[0] == len[1] && memcmp(bytes[0], bytes[1], len[0]) == 0, "traces differ");
    printf("determinism: 3 jobs, %d+%d+%d events, trace %zu bytes, global peak %zu\n",
           p[0]->n_events, p[1]->n_events, p[2]->n_events, len[0], r[0].global_peak);
    for (int k = 0; k < 2; k++) {
        free(bytes[k]);
        tsl_sim_result_free(&r[k]);
    }
    tsl_plan_report_free(&rep);
    for (int j = 0; j < 3; j++) {
        tsl_plan_free(p[j]);
        rw_free(w[j]);
    }
}

/* ---- against the planner and the verifier on random workloads ---------------- */

/* Empty plans: the simulated peak is the independent vanilla reference and
 * the peak analysis, the period is the workload's. Planned: every plan the
 * verifier accepts runs with no op waiting for data, its peak is the
 * predicted one and the peak analysis', to the byte; its iteration is the
 * predicted period plus the final wait for the iteration's copies. */
Test(simulator, random_workloads_agree_with_the_planner_and_the_verifier) {
    int n = th_quick() ? 40 : 300;
    int planned = 0, with_events = 0, rejected = 0, waited = 0;
    for (int seed = 0; seed < n; seed++) {
        rw_opts o = rw_opts_default();
        o.dyadic_times = seed % 2;
        tsl_workload *w = rw_generate((uint64_t)seed, &o, "job0");
        cr_assert_not_null(w);
        tsl_device_profile dev = rw_profile((uint64_t)seed);
        tsl_sim_result r;
        tsl_sim_opts so = {.iterations = 3};
        cr_assert_eq(tsl_simulate(&w, NULL, 1, &dev, &so, &r), TSL_OK, "seed %d: %s", seed,
                     tsl_last_error());
        size_t vp = rw_vanilla_peak(w);
        cr_assert_eq(r.job[0].peak, vp, "seed %d: empty plan peak %zu, reference %zu", seed,
                     r.job[0].peak, vp);
        cr_assert_eq(r.job[0].iter_us, w->period_us, "seed %d: period %.17g vs %.17g", seed,
                     r.job[0].iter_us, w->period_us);

        tsl_sim_result_free(&r);
        tsl_plan_opts po = tsl_plan_opts_default();
        po.policy = tsl_policy_find("tensile");
        size_t pers = rw_persistent_bytes(w);
        po.budget = pers + (vp - pers) / 2;
        tsl_plan *p = NULL;
        cr_assert(TH_PLANNED(tsl_plan_jobs(&w, 1, &dev, &po, &p, NULL)), "seed %d: %s", seed,
                     tsl_last_error());
        tsl_violation *v = NULL;
        int nv = 0;
        tsl_plan_verify(w, p, &dev, &v, &nv);
        free(v);
        if (nv) {
            rejected++;
        } else {
            planned++;
            with_events += p->n_events > 0;
            tsl__sim_log log;
            r = run_log(&w, &p, 1, &dev, 3, NULL, &log);
            tsl_peak_info pi;
            cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK, "%s", tsl_last_error());
            if (r.job[0].peak != p->predicted_peak || pi.peak != p->predicted_peak)
                rw_print(w, stdout);
            cr_assert_eq(r.job[0].peak, p->predicted_peak,
                         "seed %d: simulated peak %zu, predicted %zu (analysis %zu), %d events",
                         seed, r.job[0].peak, p->predicted_peak, pi.peak, p->n_events);
            cr_assert_eq(pi.peak, p->predicted_peak);
            /* the paper's plans never wait; planning on to the budget may
             * plan waits: the ops then wait exactly as planned */
            double plan_stall = pi.stall_us, waits[4] = {0};
            tsl_peak_info_free(&pi);
            for (int64_t i = 0; i < log.n_span; i++)
                if (log.span[i].kind == TSL__SPAN_OP || log.span[i].kind == TSL__SPAN_RECOMPUTE) {
                    if (plan_stall == 0.0)
                        cr_assert_eq(log.span[i].wait, 0.0, "seed %d: op %d waited %g us", seed,
                                     log.span[i].op, log.span[i].wait);
                    cr_assert(log.span[i].iter >= 1 && log.span[i].iter <= 3);
                    waits[log.span[i].iter] += log.span[i].wait;
                }
            /* the steady state waits as planned; the cold start (every
             * persistent tensor resident) skips the swap-in of one the plan
             * has absent at time 0, and a planned wait for it (a swap
             * across the boundary landing late, planning to a budget) */
            for (int it = 2; it <= 3; it++)
                cr_assert(fabs(waits[it] - plan_stall) <= 1e-6 * (1 + plan_stall),
                          "seed %d: the ops waited %.17g us in iteration %d, planned %.17g",
                          seed, waits[it], it, plan_stall);
            cr_assert(waits[1] <= plan_stall + 1e-6 * (1 + plan_stall),
                      "seed %d: the ops waited %.17g us in the first iteration, planned %.17g",
                      seed, waits[1], plan_stall);
            double want = p->predicted_period_us + r.job[0].stall_us - plan_stall;
            cr_assert(fabs(r.job[0].iter_us - want) <= 1e-9 * (1 + want),
                      "seed %d: iteration %.17g, predicted %.17g + wait %.17g", seed,
                      r.job[0].iter_us, p->predicted_period_us, r.job[0].stall_us);
            waited += r.job[0].stall_us > 0;
            run_free(&r, &log);
        }
        tsl_plan_free(p);
        rw_free(w);
    }
    printf("random: %d workloads, %d plans verified (%d with events, %d waiting for their last "
           "copies), %d rejected by the verifier\n",
           n, planned, with_events, waited, rejected);
    cr_assert(with_events >= n / 4, "only %d plans with events", with_events);
}

/* Several random jobs planned together and simulated on one device: runs,
 * and the global load is the sum of the jobs' at every change. */
Test(simulator, random_jobs_share_one_device) {
    int n = th_quick() ? 5 : 30;
    for (int seed = 100; seed < 100 + n; seed++) {
        int nj = 2 + seed % 3;
        rw_opts o = rw_opts_default();
        tsl_workload *w[4];
        cr_assert_eq(rw_generate_jobs((uint64_t)seed, &o, nj, w), 0);
        tsl_device_profile dev = rw_profile((uint64_t)seed);
        tsl_plan_opts po = tsl_plan_opts_default();
        po.policy = tsl_policy_find("tensile");
        po.budget = 1;
        tsl_plan *p[4];
        cr_assert(TH_PLANNED(tsl_plan_jobs(w, nj, &dev, &po, p, NULL)), "%s", tsl_last_error());
        tsl__sim_log log;
        tsl_sim_result r = run_log(w, p, nj, &dev, 3, NULL, &log);
        size_t load[4] = {0};
        for (int j = 0; j < nj; j++) load[j] = rw_persistent_bytes(w[j]);
        for (int64_t i = 0; i < log.n_mem; i++) {
            load[log.mem[i].job] = log.mem[i].job_load;
            size_t sum = 0;
            for (int j = 0; j < nj; j++) sum += load[j];
            cr_assert_eq(log.mem[i].global_load, sum);
        }
        for (int j = 0; j < nj; j++) {
            cr_assert(r.job[j].iter_us > 0 && r.job[j].peak > 0);
            cr_assert(r.job[j].peak >= rw_persistent_bytes(w[j]));
        }
        run_free(&r, &log);
        for (int j = 0; j < nj; j++) {
            tsl_plan_free(p[j]);
            rw_free(w[j]);
        }
    }
}

/* ---- errors ------------------------------------------------------------------ */

Test(simulator, bad_arguments_are_named) {
    tsl_workload *w = swap_pair("bad");
    tsl_device_profile dev = sim_dev(1);
    tsl_sim_result r;
    cr_assert_eq(tsl_simulate(&w, NULL, 0, &dev, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "n_jobs 0"), "%s", tsl_last_error());
    tsl_device_profile nobw = dev;
    nobw.h2d_bw = 0;
    cr_assert_eq(tsl_simulate(&w, NULL, 1, &nobw, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "h2d_bw"), "%s", tsl_last_error());

    tsl_plan *p = tsl_plan_new("bad");
    add_ev(p, TSL_EV_SWAP_OUT, 99, F0, 0.0, NO_PRECEDE);
    cr_assert_eq(tsl_simulate(&w, &p, 1, &dev, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "tensor 99"), "%s", tsl_last_error());
    p->events[0] = (tsl_event){TSL_EV_SWAP_IN, SP_A, F2, 0.0, 7};
    cr_assert_eq(tsl_simulate(&w, &p, 1, &dev, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "precede 7"), "%s", tsl_last_error());
    p->events[0] = (tsl_event){TSL_EV_SWAP_OUT, SP_A, F0, -1.0, -1};
    cr_assert_eq(tsl_simulate(&w, &p, 1, &dev, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "delay_us -1"), "%s", tsl_last_error());
    p->events[0] = (tsl_event){TSL_EV_RECOMPUTE, SP_IN, -1, 0.0, F4};
    cr_assert_eq(tsl_simulate(&w, &p, 1, &dev, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "'in'"), "%s", tsl_last_error());

    double lat[3] = {1, 1, 1};
    tsl_latency_table at = {3, lat};
    tsl_sim_opts so = {.iterations = 3, .actual = &at};
    cr_assert_eq(tsl_simulate(&w, NULL, 1, &dev, &so, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "3 entries"), "%s", tsl_last_error());
    so = (tsl_sim_opts){.iterations = -2};
    cr_assert_eq(tsl_simulate(&w, NULL, 1, &dev, &so, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "iterations -2"), "%s", tsl_last_error());
    w->ops[2].start_us = 9; /* after its own end (8) */
    cr_assert_eq(tsl_simulate(&w, NULL, 1, &dev, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "'f2'") && strstr(tsl_last_error(), "start_us 9"), "%s",
              tsl_last_error());
    w->ops[2].start_us = 6;
    tsl_plan_free(p);
    rw_free(w);
}

/* Plans that cannot run are reported, naming the job, the op and the tensor. */
Test(simulator, plans_that_cannot_run_are_reported) {
    tsl_workload *w = swap_pair("broken");
    tsl_device_profile dev = sim_dev(1);
    tsl_sim_result r;
    /* A released after f1 and never brought back: f4 waits forever */
    tsl_plan *p = tsl_plan_new("broken");
    add_ev(p, TSL_EV_RELEASE, SP_A, F1, 0.0, NO_PRECEDE);
    cr_assert_eq(tsl_simulate(&w, &p, 1, &dev, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "'broken'") && strstr(tsl_last_error(), "'f4'") &&
                  strstr(tsl_last_error(), "'A'"),
              "%s", tsl_last_error());
    /* ... and swapped in without a host copy */
    add_ev(p, TSL_EV_SWAP_IN, SP_A, F2, 0.0, F4);
    tsl_plan_sort(p);
    cr_assert_eq(tsl_simulate(&w, &p, 1, &dev, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "no host copy"), "%s", tsl_last_error());
    tsl_plan_free(p);
    /* a swap-out of a tensor that is not there yet */
    p = tsl_plan_new("broken");
    add_ev(p, TSL_EV_SWAP_OUT, SP_C, F0, 0.0, NO_PRECEDE);
    cr_assert_eq(tsl_simulate(&w, &p, 1, &dev, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "swap_out of 'C'"), "%s", tsl_last_error());
    tsl_plan_free(p);
    rw_free(w);
}
