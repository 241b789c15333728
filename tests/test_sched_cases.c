/*
 * test_sched_cases.c - known answers end to end: hand-made workloads whose
 * plans, peaks and times are computed by hand below (docs/SCHEDULING.md),
 * planned by tsl_plan_jobs, checked by the verifier and replayed by the
 * simulator; then real graphs (cnn, resnet18) with the a6000 profile.
 *
 * Hand-made cases use a profile with 1e9 B/s each way and no copy latency,
 * so a copy of k*1000 bytes takes exactly k us, and latencies that are
 * whole microseconds: every expected time below is exact.
 *
 *   chain (case 1):    the largest candidate cannot come back in time; the
 *                      second one fits exactly once.
 *   across iteration:  Adam-style state used only by its update is swapped
 *                      out after the update and in before it next iteration.
 *   recomputation:     no copy fits; the max-MSPS tensor (not the largest)
 *                      is released and recomputed.
 *   two jobs:          the chain twice on one device: the second job's copies
 *                      move around the first's bookings; a max swapping rate
 *                      of 0.4 forbids the second job's swap.
 *   late transfer:     a hand-made plan whose swap-out outlasts the iteration:
 *                      the verifier and the simulator must judge it alike.
 *
 * Real graphs (cnn, resnet18, Adam, cost-model latencies of the a6000
 * profile): the vanilla peak equals the dry run's, the plan verifies, the
 * simulation reproduces the predicted peak and period, and MSR > 0.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "random_workload.h"
#include "tensile/models.h"
#include "tensile/policy.h"
#include "tensile/sched_json.h"
#include "tensile/sim.h"
#include "tensile/verify.h"
#include "tensile/policy_tensile.h"
#include "tensile/session.h"

/* (list, count) of int32 ids */
#define IDS(...) \
    (const int32_t[]){__VA_ARGS__}, (int)(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

#define ACT TSL_KIND_ACTIVATION
#define GRAD TSL_KIND_GRADIENT

static tsl_device_profile case_dev(double bw) {
    tsl_device_profile d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "case");
    d.flops = 1e13;
    d.mem_bw = 1e12;
    d.mem_bytes = (size_t)1 << 30;
    d.h2d_bw = d.d2h_bw = bw;
    d.duplex = 1;
    d.launch_us = 0;
    d.copy_latency_us = 0;
    return d;
}

/* TENSILE within `budget` (0: the profile's memory, no budget named: the
 * paper's swaps, all the channels can hide), its options in *to (which
 * must outlive the result's use). */
static tsl_plan_opts case_opts(size_t budget, tsl_tensile_opts *to) {
    *to = tsl_tensile_opts_default();
    to->recompute = 1;
    to->swap_in_slack = 0; /* the cases are worked by hand with the paper's placement */
    to->prefetch = 0;
    to->max_swap_rate = (tsl_per_job){.all = 1.0};
    tsl_plan_opts o = tsl_plan_opts_default();
    o.policy = tsl_policy_find("tensile");
    o.opts = to;
    o.budget = budget;
    return o;
}

static const char *ev_name(tsl_event_type t) {
    switch (t) {
    case TSL_EV_SWAP_OUT: return "swap_out";
    case TSL_EV_SWAP_IN: return "swap_in";
    case TSL_EV_RELEASE: return "release";
    case TSL_EV_RECOMPUTE: return "recompute";
    }
    return "?";
}

static void print_plan(const tsl_workload *w, const tsl_plan *p) {
    printf("plan '%s': %d events, predicted peak %zu, period %.17g us\n", p->job, p->n_events,
           p->predicted_peak, p->predicted_period_us);
    for (int i = 0; i < p->n_events; i++) {
        const tsl_event *e = &p->events[i];
        printf("  %-9s %-8s trigger %-8s delay %.17g precede %s\n", ev_name(e->type),
               w->tensors[e->tensor].name, e->trigger >= 0 ? w->ops[e->trigger].name : "start",
               e->delay_us, e->precede >= 0 ? w->ops[e->precede].name : "-");
    }
    fflush(stdout);
}

/* The only event of `type` on tensor t (asserts there is exactly one). */
static const tsl_event *only_event(const tsl_workload *w, const tsl_plan *p, tsl_event_type type,
                                   int32_t t) {
    const tsl_event *found = NULL;
    int n = 0;
    for (int i = 0; i < p->n_events; i++)
        if (p->events[i].type == type && p->events[i].tensor == t) {
            found = &p->events[i];
            n++;
        }
    if (n != 1) print_plan(w, p);
    cr_assert_eq(n, 1, "job '%s': %d %s events of '%s', expected 1", p->job, n, ev_name(type),
                 w->tensors[t].name);
    return found;
}

/* Issue time of an event in a plan without recomputation (trigger end + delay). */
static double issue_at(const tsl_workload *w, const tsl_event *e) {
    return (e->trigger >= 0 ? w->ops[e->trigger].end_us : 0.0) + e->delay_us;
}

/* Times are exact to a picosecond (1e-6 us): the planner may keep a guard of
 * a few ulps so that a copy provably ends before its op starts. */
static void expect_time(double got, double want, const char *what) {
    double tol = fmax(1e-6, 1e-8 * fabs(want));
    cr_assert(fabs(got - want) <= tol, "%s at %.17g us, expected %.17g (diff %g)", what, got, want,
              got - want);
}

/* Verifies the plans (together), and simulates each job alone with exact
 * latencies: peak == predicted exactly, period == predicted, no stall. */
static void verify_and_simulate(tsl_workload **w, tsl_plan **p, int n,
                                const tsl_device_profile *dev) {
    tsl_violation *v = NULL;
    int nv = 0;
    tsl_status st = tsl_plan_verify_jobs((const tsl_workload *const *)w, (const tsl_plan *const *)p,
                                         n, dev, &v, &nv);
    for (int i = 0; i < nv && i < 6; i++) printf("violation: %s\n", v[i].what);
    cr_assert(st == TSL_OK && nv == 0, "%d violation(s), first: %s", nv, nv ? v[0].what : "-");
    free(v);
    for (int j = 0; j < n; j++) {
        tsl_sim_opts so = {.iterations = 3, .trace_path = NULL, .actual = NULL};
        tsl_sim_result sr;
        st = tsl_simulate(&w[j], &p[j], 1, dev, &so, &sr);
        cr_assert_eq(st, TSL_OK, "simulate '%s': %s", w[j]->job, tsl_last_error());
        cr_assert_eq(sr.job[0].peak, p[j]->predicted_peak,
                     "'%s': simulated peak %zu != predicted %zu", w[j]->job, sr.job[0].peak,
                     p[j]->predicted_peak);
        cr_assert(fabs(sr.job[0].iter_us - p[j]->predicted_period_us) <= 1e-6,
                  "'%s': simulated period %.17g != predicted %.17g", w[j]->job, sr.job[0].iter_us,
                  p[j]->predicted_period_us);
        cr_assert(sr.job[0].stall_us == 0.0, "'%s': stall %g us", w[j]->job, sr.job[0].stall_us);
        tsl_sim_result_free(&sr);
    }
}

/* ---- case 1: a chain where exactly one swap fits ---------------------------------
 *
 *   op  name  reads   writes  [start, end] us     tensor bytes: in 1000, a 100000,
 *   0   f0    in      a       [0, 10]             b 150000, c d e f h 10000 each
 *   1   f1    a       b       [10, 210]
 *   2   f2    b       c       [210, 410]
 *   3   f3    c       d       [410, 420]
 *   4   g3    d c     e       [420, 430]          <- vanilla peak a+b+c+d+e = 280000
 *   5   g2    e b     f       [430, 630]
 *   6   g1    f a     h       [630, 640]
 *
 * At the peak (g3) the candidates are b (150000) and a (100000); g3 needs c,
 * d, e. b: last read before the peak ends at 410 and it is read again at
 * 430, no 150 us copy fits in between -> no swap. a: out over [10, 110]
 * after f0, released at the end of f1 (210), in over [530, 630] for g1
 * (trigger g3 + 100 us). The load then peaks at 270000 over [530, 630]
 * (b+e+f+a while g2 runs), where every resident tensor is needed or
 * already handled. */
static tsl_workload *chain(const char *job, double g2_us) {
    rw_builder *b = rw_build_begin(job);
    int32_t in = rw_build_tensor(b, "in", 1000, TSL_KIND_INPUT);
    int32_t a = rw_build_tensor(b, "a", 100000, ACT);
    int32_t bb = rw_build_tensor(b, "b", 150000, ACT);
    int32_t c = rw_build_tensor(b, "c", 10000, ACT);
    int32_t d = rw_build_tensor(b, "d", 10000, ACT);
    int32_t e = rw_build_tensor(b, "e", 10000, GRAD);
    int32_t f = rw_build_tensor(b, "f", 10000, GRAD);
    int32_t h = rw_build_tensor(b, "h", 10000, GRAD);
    rw_build_op(b, "f0", 10, 0, IDS(in), IDS(a));
    rw_build_op(b, "f1", 200, 0, IDS(a), IDS(bb));
    rw_build_op(b, "f2", 200, 0, IDS(bb), IDS(c));
    rw_build_op(b, "f3", 10, 0, IDS(c), IDS(d));
    rw_build_op(b, "g3", 10, 0, IDS(d, c), IDS(e));
    rw_build_op(b, "g2", g2_us, 0, IDS(e, bb), IDS(f));
    rw_build_op(b, "g1", 10, 0, IDS(f, a), IDS(h));
    tsl_workload *w = rw_build_end(b);
    cr_assert_not_null(w);
    char why[320];
    cr_assert_eq(rw_check(w, why, sizeof why), 0, "%s", why);
    return w;
}
enum { CH_IN = 0, CH_A, CH_B, CH_C };

/* Checks a plan of the chain: a out at out_at, released after f1, in at
 * in_at for g1; b untouched; peak 270000; the period unchanged. */
static void expect_chain_plan(const tsl_workload *w, const tsl_plan *p, double out_at,
                              double in_at) {
    print_plan(w, p);
    cr_assert_eq(p->n_events, 3, "'%s': %d events, expected 3", p->job, p->n_events);
    const tsl_event *so = only_event(w, p, TSL_EV_SWAP_OUT, CH_A);
    const tsl_event *rl = only_event(w, p, TSL_EV_RELEASE, CH_A);
    const tsl_event *si = only_event(w, p, TSL_EV_SWAP_IN, CH_A);
    expect_time(issue_at(w, so), out_at, "swap-out of a");
    cr_assert_eq(rl->trigger, 1, "release of a after op %d, expected 1 (f1)", rl->trigger);
    expect_time(issue_at(w, si), in_at, "swap-in of a");
    cr_assert_eq(si->precede, 6, "swap-in of a precedes op %d, expected 6 (g1)", si->precede);
    /* the trigger is the last op ending at or before the issue */
    double issue = issue_at(w, si);
    cr_assert(si->trigger < 0 || w->ops[si->trigger].end_us <= issue);
    cr_assert(si->trigger + 1 >= w->n_ops || w->ops[si->trigger + 1].end_us > issue,
              "swap-in trigger op %d is not the last op ending by %.17g", si->trigger, issue);
    cr_assert_eq(p->predicted_peak, 270000, "'%s': predicted peak %zu", p->job, p->predicted_peak);
    expect_time(p->predicted_period_us, w->period_us, "period");
}

Test(sched_cases, chain_exactly_one_swap_fits) {
    tsl_workload *w = chain("chain", 200);
    tsl_device_profile dev = case_dev(1e9);
    cr_assert_eq(rw_vanilla_peak(w), 280000);
    tsl_tensile_opts to;
    tsl_plan_opts po = case_opts(0, &to);
    tsl_plan *p = NULL;
    tsl_plan_report rep;
    cr_assert(TH_PLANNED(tsl_plan_jobs(&w, 1, &dev, &po, &p, &rep)), "%s", tsl_last_error());
    cr_assert_eq(rep.vanilla_peak[0], 280000, "vanilla peak %zu", rep.vanilla_peak[0]);
    expect_chain_plan(w, p, 10, 530);
    cr_assert_eq(rep.swaps[0], 1);
    cr_assert_eq(rep.recomputes[0], 0);
    cr_assert_eq(rep.bytes_d2h[0], 100000);
    cr_assert_eq(rep.bytes_h2d[0], 100000);
    tsl_plan_report_free(&rep);
    verify_and_simulate(&w, &p, 1, &dev);
    printf("chain: vanilla 280000, planned %zu, MSR %.4f\n", p->predicted_peak,
           (280000.0 - (double)p->predicted_peak) / 280000.0);
    tsl_plan_free(p);
    rw_free(w);
}

/* The same chain with a swap-in slack of 0.25 of the copy time:
 * a's 100 us swap-in lands 25 us before g1, over [505, 605]; the peak is
 * unchanged (a is resident during g2 either way). */
Test(sched_cases, chain_swap_in_lands_early_by_the_slack) {
    tsl_workload *w = chain("chain-slack", 200);
    tsl_device_profile dev = case_dev(1e9);
    tsl_tensile_opts to;
    tsl_plan_opts po = case_opts(0, &to);
    to.swap_in_slack = 0.25;
    tsl_plan *p = NULL;
    tsl_plan_report rep;
    cr_assert(TH_PLANNED(tsl_plan_jobs(&w, 1, &dev, &po, &p, &rep)), "%s", tsl_last_error());
    expect_chain_plan(w, p, 10, 505);
    verify_and_simulate(&w, &p, 1, &dev);
    tsl_plan_free(p);
    tsl_plan_report_free(&rep);
    to.swap_in_slack = -0.5;
    cr_assert_eq(tsl_plan_jobs(&w, 1, &dev, &po, &p, &rep), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "swap_in_slack = -0.5"), "%s", tsl_last_error());
    rw_free(w);
}

/* ---- case 2: across iterations -------------------------------------------------
 *
 *   op  name     reads      writes   [start, end]    bytes: in 1000, P 1000, Q 1000,
 *   0   f0       in         x        [0, 200]        Pm (optimizer state) 100000,
 *   1   f1       x P Q      y        [200, 400]      x y 300000, gP gQ 1000
 *   2   f1.bwd   y P Q      gP gQ    [400, 600]
 *   3   P.upd    P gP Pm    P Pm     [600, 610]      (optimizer phase from op 3)
 *   4   Q.upd    Q gQ       Q        [610, 910]
 *
 * Vanilla peak x+y+P+Q+Pm = 702000 during f1, which needs x, y, P, Q; Pm is
 * the only candidate. Its only access is P.upd, so it goes across the
 * iteration boundary: out over [610, 710] after P.upd, released then (710),
 * in over [500, 600] before P.upd of the next iteration (trigger f1 +
 * 100 us). Absent over [0, 500) and [710, 910]: the peak falls to 602000. */
static tsl_workload *across_case(void) {
    rw_builder *b = rw_build_begin("across");
    int32_t in = rw_build_tensor(b, "in", 1000, TSL_KIND_INPUT);
    int32_t P = rw_build_tensor(b, "P", 1000, TSL_KIND_PARAM);
    int32_t Pm = rw_build_tensor(b, "P.adam_m", 100000, TSL_KIND_OPT_STATE);
    int32_t Q = rw_build_tensor(b, "Q", 1000, TSL_KIND_PARAM);
    int32_t x = rw_build_tensor(b, "x", 300000, ACT);
    int32_t y = rw_build_tensor(b, "y", 300000, ACT);
    int32_t gP = rw_build_tensor(b, "gP", 1000, GRAD);
    int32_t gQ = rw_build_tensor(b, "gQ", 1000, GRAD);
    rw_build_op(b, "f0", 200, 0, IDS(in), IDS(x));
    rw_build_op(b, "f1", 200, 0, IDS(x, P, Q), IDS(y));
    rw_build_op(b, "f1.bwd", 200, 0, IDS(y, P, Q), IDS(gP, gQ));
    rw_build_mark_optimizer(b);
    rw_build_op(b, "P.upd", 10, 0, IDS(P, gP, Pm), IDS(P, Pm));
    rw_build_op(b, "Q.upd", 300, 0, IDS(Q, gQ), IDS(Q));
    tsl_workload *w = rw_build_end(b);
    cr_assert_not_null(w);
    char why[320];
    cr_assert_eq(rw_check(w, why, sizeof why), 0, "%s", why);
    cr_assert_eq(w->optimizer_begin, 3);
    cr_assert_eq(rw_vanilla_peak(w), 702000);
    return w;
}
enum { AC_PM = 2 };

Test(sched_cases, across_iteration_swap_of_an_optimizer_state) {
    tsl_workload *w = across_case();
    int32_t Pm = AC_PM;
    tsl_device_profile dev = case_dev(1e9);
    tsl_tensile_opts to;
    tsl_plan_opts po = case_opts(0, &to);
    tsl_plan *p = NULL;
    tsl_plan_report rep;
    cr_assert(TH_PLANNED(tsl_plan_jobs(&w, 1, &dev, &po, &p, &rep)), "%s", tsl_last_error());
    print_plan(w, p);
    cr_assert_eq(rep.vanilla_peak[0], 702000, "vanilla peak %zu", rep.vanilla_peak[0]);
    tsl_plan_report_free(&rep);
    cr_assert_eq(p->n_events, 3, "%d events, expected 3", p->n_events);
    const tsl_event *so = only_event(w, p, TSL_EV_SWAP_OUT, Pm);
    const tsl_event *rl = only_event(w, p, TSL_EV_RELEASE, Pm);
    const tsl_event *si = only_event(w, p, TSL_EV_SWAP_IN, Pm);
    cr_assert_eq(so->trigger, 3, "swap-out after op %d, expected 3 (P.upd)", so->trigger);
    expect_time(issue_at(w, so), 610, "swap-out of P.adam_m");
    cr_assert_eq(rl->trigger, 3, "release after op %d, expected 3 (P.upd)", rl->trigger);
    expect_time(issue_at(w, si), 500, "swap-in of P.adam_m");
    cr_assert_eq(si->precede, 3, "swap-in precedes op %d, expected 3 (P.upd)", si->precede);
    cr_assert_eq(p->predicted_peak, 602000, "predicted peak %zu", p->predicted_peak);
    expect_time(p->predicted_period_us, 910, "period");
    verify_and_simulate(&w, &p, 1, &dev);
    printf("across iteration: vanilla 702000, planned %zu\n", p->predicted_peak);
    tsl_plan_free(p);
    rw_free(w);
}

/* ---- a transfer that runs past the end of the iteration ---------------------------
 *
 * The across-iteration workload above with P.adam_m swapped out after the
 * LAST op (Q.upd ends at 910; the copy runs over [910, 1010]) instead of
 * after P.upd. Whatever the contract decides - such a plan is invalid (the
 * verifier rejects it), or it is valid and the next iteration does not wait
 * for the copy (the simulator's period stays 910) - the verifier and the
 * simulator must agree: an accepted plan runs in its predicted period with
 * no stall. */
Test(sched_cases, transfer_past_the_iteration_end_is_judged_consistently) {
    tsl_workload *w = across_case();
    tsl_device_profile dev = case_dev(1e9);
    tsl_plan *p = tsl_plan_new("across");
    tsl_event ev[3] = {{TSL_EV_SWAP_OUT, AC_PM, 4, 0.0, -1},
                       {TSL_EV_RELEASE, AC_PM, 4, 0.0, -1},
                       {TSL_EV_SWAP_IN, AC_PM, 1, 100.0, 3}};
    for (int i = 0; i < 3; i++) cr_assert_eq(tsl_plan_add(p, ev[i]), TSL_OK);
    tsl_plan_sort(p);
    p->predicted_peak = 602000; /* Pm absent over [0, 500) */
    p->predicted_period_us = 910;
    tsl_violation *v = NULL;
    int nv = 0;
    tsl_status st = tsl_plan_verify(w, p, &dev, &v, &nv);
    for (int i = 0; i < nv; i++) printf("violation: %s\n", v[i].what);
    free(v);
    tsl_sim_opts so = {.iterations = 3, .trace_path = NULL, .actual = NULL};
    tsl_sim_result sr;
    tsl_status ss = tsl_simulate(&w, &p, 1, &dev, &so, &sr);
    printf("late swap-out: verifier %s (%d violations); simulator status %d, iteration %.17g us, "
           "stall %.17g us, peak %zu\n",
           st == TSL_OK ? "accepts" : "rejects", nv, (int)ss, sr.job[0].iter_us, sr.job[0].stall_us,
           sr.job[0].peak);
    char sim_err[400];
    snprintf(sim_err, sizeof sim_err, "%s", ss == TSL_OK ? "" : tsl_last_error());
    double iter_us = ss == TSL_OK ? sr.job[0].iter_us : 0, stall_us = ss == TSL_OK ? sr.job[0].stall_us : 0;
    tsl_sim_result_free(&sr);
    tsl_plan_free(p);
    rw_free(w);
    if (st == TSL_OK) {
        cr_assert_eq(ss, TSL_OK, "the verifier accepts, the simulator refuses: %s", sim_err);
        cr_assert(fabs(iter_us - 910) <= 1e-6 && stall_us == 0.0,
                  "the verifier accepts a swap-out ending at 1010 us, after the iteration's end "
                  "at 910 us, but the simulator runs the iteration in %.17g us with a %.17g us "
                  "stall: one of them must change (docs/SCHEDULING.md does not say whether a "
                  "transfer may outlast its iteration)",
                  iter_us, stall_us);
    }
}

/* ---- case 3: recomputation ---------------------------------------------------------
 *
 *   op  name  reads        writes  [start, end]    bytes: in x W 1000, a 100000,
 *   0   f0    in           x       [0, 10]         a2 120000, b 100000, c 50000,
 *   1   f1    x W          a       [10, 20]        d 10000, e 1000
 *   2   f2    x W          a2      [20, 80]
 *   3   f3    a a2         b       [80, 130]
 *   4   f4    b            c       [130, 140]
 *   5   f5    c b          d       [140, 150]      <- vanilla peak 382000
 *   6   f6    d a a2 x     e       [150, 160]
 *
 * Copies run at 1000 B/s: nothing can be swapped. Budget 300000. At the
 * peak, a (MSPS 100000 B / 10 us) and a2 (120000 B / 60 us) can be
 * recomputed (their producers read x and W, both resident at f6); x cannot
 * (its producer's input is gone). The max-MSPS choice is a, not the larger
 * a2: release a after f3, recompute it right before f6 (f6 moves to
 * [160, 170]). The peak falls to 322000 during f3 (which needs a, a2, b);
 * nothing else is possible, so the plan stops there, above the budget. */
static tsl_workload *recompute_case(void) {
    rw_builder *b = rw_build_begin("recompute");
    int32_t in = rw_build_tensor(b, "in", 1000, TSL_KIND_INPUT);
    int32_t W = rw_build_tensor(b, "W", 1000, TSL_KIND_PARAM);
    int32_t x = rw_build_tensor(b, "x", 1000, ACT);
    int32_t a = rw_build_tensor(b, "a", 100000, ACT);
    int32_t a2 = rw_build_tensor(b, "a2", 120000, ACT);
    int32_t bb = rw_build_tensor(b, "b", 100000, ACT);
    int32_t c = rw_build_tensor(b, "c", 50000, ACT);
    int32_t d = rw_build_tensor(b, "d", 10000, ACT);
    int32_t e = rw_build_tensor(b, "e", 1000, ACT);
    rw_build_op(b, "f0", 10, 0, IDS(in), IDS(x));
    rw_build_op(b, "f1", 10, 0, IDS(x, W), IDS(a));
    rw_build_op(b, "f2", 60, 0, IDS(x, W), IDS(a2));
    rw_build_op(b, "f3", 50, 0, IDS(a, a2), IDS(bb));
    rw_build_op(b, "f4", 10, 0, IDS(bb), IDS(c));
    rw_build_op(b, "f5", 10, 0, IDS(c, bb), IDS(d));
    rw_build_op(b, "f6", 10, 0, IDS(d, a, a2, x), IDS(e));
    tsl_workload *w = rw_build_end(b);
    char why[320];
    cr_assert_eq(rw_check(w, why, sizeof why), 0, "%s", why);
    return w;
}
enum { RC_A = 3 };

Test(sched_cases, recomputation_takes_the_max_msps_tensor) {
    tsl_workload *w = recompute_case();
    cr_assert_eq(rw_vanilla_peak(w), 382000);
    tsl_device_profile dev = case_dev(1e3);
    tsl_tensile_opts to;
    tsl_plan_opts po = case_opts(300000, &to);
    tsl_plan *p = NULL;
    tsl_plan_report rep;
    cr_assert(TH_PLANNED(tsl_plan_jobs(&w, 1, &dev, &po, &p, &rep)), "%s", tsl_last_error());
    print_plan(w, p);
    cr_assert_eq(p->n_events, 2, "%d events, expected 2", p->n_events);
    const tsl_event *rl = only_event(w, p, TSL_EV_RELEASE, RC_A);
    const tsl_event *rc = only_event(w, p, TSL_EV_RECOMPUTE, RC_A);
    cr_assert_eq(rl->trigger, 3, "release of a after op %d, expected 3 (f3)", rl->trigger);
    cr_assert_eq(rc->precede, 6, "recompute of a before op %d, expected 6 (f6)", rc->precede);
    cr_assert_eq(rep.recomputes[0], 1);
    cr_assert_eq(rep.swaps[0], 0);
    cr_assert_eq(p->predicted_peak, 322000, "predicted peak %zu", p->predicted_peak);
    expect_time(p->predicted_period_us, 170, "period with the recomputation");
    verify_and_simulate(&w, &p, 1, &dev);
    tsl_plan_free(p);
    tsl_plan_report_free(&rep);

    /* without recomputation nothing can be done */
    to.recompute = 0;
    cr_assert(TH_PLANNED(tsl_plan_jobs(&w, 1, &dev, &po, &p, &rep)), "%s", tsl_last_error());
    tsl_plan_report_free(&rep);
    cr_assert_eq(p->n_events, 0, "%d events without recomputation", p->n_events);
    cr_assert_eq(p->predicted_peak, 382000);
    expect_time(p->predicted_period_us, 160, "period");
    verify_and_simulate(&w, &p, 1, &dev);
    tsl_plan_free(p);
    rw_free(w);
}

/* ---- case 4: two jobs, one device --------------------------------------------------
 *
 * The chain twice, with g2 taking 300 us (g2 [430, 730], g1 [730, 740]) so
 * that the second job's swap-in does not end exactly at an op boundary.
 * Job 0 is planned first (equal candidates: lower job index) and gets case
 * 1's plan shifted: D2H [10, 110], H2D [630, 730]. Job 1's a cannot go out
 * at 10 (D2H busy): out over [110, 210], released at 210 (end of f1 and of
 * the copy); in by 730 but H2D is busy over [630, 730]: in over [530, 630]
 * (trigger g3 + 100 us). Both peaks are 270000 (b+e+f+a during g2). With
 * max swapping rate 0.4 for job 1, its swap would make its share 1/2 > 0.4:
 * job 1 keeps the vanilla peak 280000 and an empty plan. */
static void copy_interval(const tsl_workload *w, const tsl_event *e, const tsl_device_profile *dev,
                          double *s, double *t) {
    *s = issue_at(w, e);
    *t = *s + tsl_copy_us(dev, w->tensors[e->tensor].bytes, e->type == TSL_EV_SWAP_IN);
}

Test(sched_cases, two_jobs_compete_for_one_channel) {
    tsl_workload *w[2] = {chain("job0", 300), chain("job1", 300)};
    tsl_device_profile dev = case_dev(1e9);
    tsl_tensile_opts to;
    tsl_plan_opts po = case_opts(0, &to);
    tsl_plan *p[2] = {0};
    tsl_plan_report rep;
    cr_assert(TH_PLANNED(tsl_plan_jobs(w, 2, &dev, &po, p, &rep)), "%s", tsl_last_error());
    tsl_plan_report_free(&rep);
    expect_chain_plan(w[0], p[0], 10, 630);
    expect_chain_plan(w[1], p[1], 110, 530);
    /* bookings of the two jobs never overlap on a channel */
    for (int dir = 0; dir < 2; dir++) {
        tsl_event_type ty = dir ? TSL_EV_SWAP_IN : TSL_EV_SWAP_OUT;
        double s0, t0, s1, t1;
        copy_interval(w[0], only_event(w[0], p[0], ty, CH_A), &dev, &s0, &t0);
        copy_interval(w[1], only_event(w[1], p[1], ty, CH_A), &dev, &s1, &t1);
        cr_assert(t0 <= s1 || t1 <= s0, "%s copies overlap: [%g, %g] and [%g, %g]",
                  dir ? "H2D" : "D2H", s0, t0, s1, t1);
    }
    verify_and_simulate(w, p, 2, &dev);
    /* together on one compute resource the timing changes; it still runs */
    tsl_sim_opts so = {.iterations = 3, .trace_path = NULL, .actual = NULL};
    tsl_sim_result sr;
    cr_assert_eq(tsl_simulate(w, p, 2, &dev, &so, &sr), TSL_OK, "%s", tsl_last_error());
    printf("two jobs together: iter %.1f / %.1f us, stall %.1f / %.1f us, peaks %zu / %zu, "
           "global %zu\n",
           sr.job[0].iter_us, sr.job[1].iter_us, sr.job[0].stall_us, sr.job[1].stall_us,
           sr.job[0].peak, sr.job[1].peak, sr.global_peak);
    tsl_sim_result_free(&sr);
    tsl_plan_free(p[0]);
    tsl_plan_free(p[1]);

    /* job 1's max swapping rate 0.4 forbids its swap */
    double rates[2] = {1.0, 0.4};
    to.max_swap_rate = (tsl_per_job){.n = 2, .v = rates};
    cr_assert(TH_PLANNED(tsl_plan_jobs(w, 2, &dev, &po, p, &rep)), "%s", tsl_last_error());
    expect_chain_plan(w[0], p[0], 10, 630);
    print_plan(w[1], p[1]);
    cr_assert_eq(p[1]->n_events, 0, "job1 has %d events under rate 0.4", p[1]->n_events);
    cr_assert_eq(p[1]->predicted_peak, 280000);
    cr_assert_eq(rep.swaps[1], 0);
    tsl_plan_report_free(&rep);
    verify_and_simulate(w, p, 2, &dev);
    tsl_plan_free(p[0]);
    tsl_plan_free(p[1]);
    rw_free(w[0]);
    rw_free(w[1]);
}

/* ---- real graphs with the a6000 profile ---------------------------------------------- */

static void real_graph(const char *model, int batch, int image) {
    tsl_model_cfg cfg = tsl_model_cfg_default(model);
    cfg.batch = batch;
    if (image) cfg.image_size = image;
    tsl_graph *g = tsl_graph_new(model);
    tsl_tid loss;
    cr_assert_eq(tsl_model_build(g, model, &cfg, &loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    tsl_optimizer_cfg oc = tsl_adam_default(1e-3f);
    cr_assert_eq(tsl_graph_optimizer(g, &oc), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    tsl_device_profile dev;
    cr_assert_eq(tsl_profile_load("a6000", &dev), TSL_OK, "%s", tsl_last_error());
    tsl_workload *w = NULL;
    cr_assert_eq(tsl_workload_from_graph(g, model, NULL, &dev, &w), TSL_OK, "%s", tsl_last_error());
    tsl_mem_report mr;
    cr_assert_eq(tsl_graph_dry_run(g, (size_t)1 << 40, &mr), TSL_OK, "%s", tsl_last_error());
    /* the vanilla peak: dry run == reference == planner */
    cr_assert_eq(rw_vanilla_peak(w), mr.peak_load, "%s: reference %zu != dry run %zu", model,
                 rw_vanilla_peak(w), mr.peak_load);

    tsl_plan_opts po = tsl_plan_opts_default();
    po.policy = tsl_policy_find("tensile");
    tsl_plan *p = NULL;
    tsl_plan_report rep;
    cr_assert(TH_PLANNED(tsl_plan_jobs(&w, 1, &dev, &po, &p, &rep)), "%s", tsl_last_error());
    cr_assert_eq(rep.vanilla_peak[0], mr.peak_load, "%s: planner's vanilla %zu != dry run %zu",
                 model, rep.vanilla_peak[0], mr.peak_load);
    cr_assert_lt(p->predicted_peak, mr.peak_load, "%s: MSR 0 (planned %zu, vanilla %zu)", model,
                 p->predicted_peak, mr.peak_load);
    verify_and_simulate(&w, &p, 1, &dev);
    double msr = (double)(mr.peak_load - p->predicted_peak) / (double)mr.peak_load;
    printf("%s batch %d: %d ops, %d tensors, vanilla %zu, planned %zu, MSR %.3f, %d swaps, %d "
           "recomputes, period %.1f -> %.1f us (EOR %.4f), planning %.1f ms\n",
           model, batch, w->n_ops, w->n_tensors, mr.peak_load, p->predicted_peak, msr,
           rep.swaps[0], rep.recomputes[0], w->period_us, p->predicted_period_us,
           p->predicted_period_us / w->period_us, rep.planning_ms);
    fflush(stdout);
    tsl_plan_report_free(&rep);
    tsl_plan_free(p);
    tsl_workload_free(w);
    tsl_graph_free(g);
}

/* quick: batch 32, the smallest whose activations are worth a copy (min-swap-bytes) */
Test(sched_cases, cnn_with_the_a6000_profile) { real_graph("cnn", th_quick() ? 32 : 64, 0); }

Test(sched_cases, resnet18_with_the_a6000_profile) {
    if (th_quick())
        real_graph("resnet18", 2, 64);
    else
        real_graph("resnet18", 16, 0);
}

/* The peak falls inside a recomputation whose producer holds a workspace:
 * planner (tsl_peak_analysis), verifier and simulator count it alike.
 * w (param 100) -f[ws 3000]-> a (1000) -g-> b (1000) -h-> c (1000);
 * q reads a and c. Plan: release a after g, recompute a before q.
 * At the recomputation: w 100 + c 1000 + a 1000 + workspace 3000 = 5100
 * (during f itself: 100 + 1000 + 3000 = 4100). */
Test(sched_cases, recomputation_holds_its_producers_workspace) {
    rw_builder *b = rw_build_begin("rcws");
    int32_t w = rw_build_tensor(b, "w", 100, TSL_KIND_PARAM);
    int32_t a = rw_build_tensor(b, "a", 1000, TSL_KIND_ACTIVATION);
    int32_t bb = rw_build_tensor(b, "b", 1000, TSL_KIND_ACTIVATION);
    int32_t c = rw_build_tensor(b, "c", 1000, TSL_KIND_ACTIVATION);
    int32_t d = rw_build_tensor(b, "d", 10, TSL_KIND_ACTIVATION);
    int32_t f = rw_build_op(b, "f", 2.0, 3000, &w, 1, &a, 1);
    int32_t g = rw_build_op(b, "g", 1.0, 0, &a, 1, &bb, 1);
    rw_build_op(b, "h", 1.0, 0, &bb, 1, &c, 1);
    int32_t q_in[2] = {a, c};
    int32_t q = rw_build_op(b, "q", 1.0, 0, q_in, 2, &d, 1);
    tsl_workload *wl = rw_build_end(b);
    cr_assert_not_null(wl);
    cr_assert_eq(f, 0);
    tsl_device_profile dev = rw_profile(1);
    tsl_plan *p = tsl_plan_new("rcws");
    cr_assert_eq(tsl_plan_add(p, (tsl_event){TSL_EV_RELEASE, a, g, 0.0, -1}), TSL_OK);
    cr_assert_eq(tsl_plan_add(p, (tsl_event){TSL_EV_RECOMPUTE, a, -1, 0.0, q}), TSL_OK);
    tsl_plan_sort(p);
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(wl, p, &dev, &pi), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(pi.peak, 5100, "planner peak %zu, want 5100 (workspace of the recomputation)", pi.peak);
    cr_assert_float_eq(pi.period_us, 7.0, 1e-9);
    p->predicted_peak = pi.peak;
    p->predicted_period_us = pi.period_us;
    tsl_peak_info_free(&pi);
    tsl_violation *v = NULL;
    int nv = 0;
    tsl_plan_verify(wl, p, &dev, &v, &nv);
    cr_assert_eq(nv, 0, "verifier: %s", nv ? v[0].what : "");
    free(v);
    tsl_sim_result sr;
    tsl_sim_opts so = {.iterations = 3};
    cr_assert_eq(tsl_simulate(&wl, &p, 1, &dev, &so, &sr), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(sr.job[0].peak, 5100, "simulated peak %zu", sr.job[0].peak);
    tsl_sim_result_free(&sr);
    tsl_plan_free(p);
    rw_free(wl);
}

/* ---- planned waits, judged by all three ------------------------------------------------
 *
 * Case 1's chain with a's swap-in issued 150 us after g3 (430): over
 * [580, 680], while g1 would start at 630. g1 waits 50 us and runs over
 * [680, 690]: the period is 690. The load at 580 is b + e + f + a =
 * 270000 (b and e die when g2 ends at 630), the peak; at f1 (10) a + b =
 * 250000. The peak analysis, the verifier and the simulator (each job
 * alone, three iterations) agree on the peak to the byte, on the period
 * and on the stall to the microsecond. */

/* The peak analysis, the verifier (the jobs together) and the simulator
 * (each job alone) agree on every job's peak, period and stall, and they
 * are the expected ones; the verifier finds no violation and `waits`
 * planned waits in all. */
static void three_way(tsl_workload **w, tsl_plan **p, int n, const tsl_device_profile *dev,
                      const size_t *peak, const double *period, const double *stall, int waits) {
    for (int j = 0; j < n; j++) {
        tsl_peak_info pi;
        cr_assert_eq(tsl_peak_analysis(w[j], p[j], dev, &pi), TSL_OK, "%s", tsl_last_error());
        printf("'%s': peak analysis: peak %zu, period %.17g, %d waits, stall %.17g\n", w[j]->job,
               pi.peak, pi.period_us, pi.n_waits, pi.stall_us);
        cr_assert_eq(pi.peak, peak[j], "'%s': peak %zu, expected %zu", w[j]->job, pi.peak, peak[j]);
        expect_time(pi.period_us, period[j], "peak analysis period");
        expect_time(pi.stall_us, stall[j], "peak analysis stall");
        p[j]->predicted_peak = pi.peak;
        p[j]->predicted_period_us = pi.period_us;
        tsl_peak_info_free(&pi);
    }
    tsl_verify_report r;
    tsl_status st = tsl_plan_check((const tsl_workload *const *)w, (const tsl_plan *const *)p, n,
                                   dev, &r);
    for (int i = 0; i < r.n_violations; i++) printf("violation: %s\n", r.violations[i].what);
    for (int i = 0; i < r.n_waits; i++) printf("planned wait: %s\n", r.waits[i].what);
    cr_assert_eq(st, TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(r.n_waits, waits);
    for (int j = 0; j < n; j++) {
        cr_assert_eq(r.peak[j], peak[j], "'%s': verifier's peak %zu", w[j]->job, r.peak[j]);
        cr_assert_eq(r.period_us[j], p[j]->predicted_period_us, "'%s'", w[j]->job);
        expect_time(r.stall_us[j], stall[j], "verifier's stall");
        tsl_sim_opts so = {.iterations = 3};
        tsl_sim_result sr;
        cr_assert_eq(tsl_simulate(&w[j], &p[j], 1, dev, &so, &sr), TSL_OK, "%s", tsl_last_error());
        cr_assert_eq(sr.job[0].peak, peak[j], "'%s': simulated peak %zu", w[j]->job,
                     sr.job[0].peak);
        expect_time(sr.job[0].iter_us, period[j], "simulated period");
        expect_time(sr.job[0].stall_us, stall[j], "simulated stall");
        tsl_sim_result_free(&sr);
    }
    tsl_verify_report_free(&r);
}

Test(sched_cases, planned_wait_agreed_by_all_three) {
    tsl_workload *w = chain("wait", 200);
    tsl_device_profile dev = case_dev(1e9);
    tsl_plan *p = tsl_plan_new("wait");
    tsl_event ev[3] = {{TSL_EV_SWAP_OUT, CH_A, 0, 0.0, -1},
                       {TSL_EV_RELEASE, CH_A, 1, 0.0, -1},
                       {TSL_EV_SWAP_IN, CH_A, 4, 150.0, 6}};
    for (int i = 0; i < 3; i++) cr_assert_eq(tsl_plan_add(p, ev[i]), TSL_OK);
    tsl_plan_sort(p);
    size_t peak = 270000;
    double period = 690, stall = 50;
    three_way(&w, &p, 1, &dev, &peak, &period, &stall, 1);
    /* the plan as JSON and back: the same figures */
    char path[] = "/tmp/tsl_wait_plan_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(tsl_plan_write_json((const tsl_plan *const *)&p, 1,
                                     (const tsl_workload *const *)&w, path),
                 TSL_OK, "%s", tsl_last_error());
    tsl_plan *q = NULL;
    cr_assert_eq(tsl_plan_read_json(path, (const tsl_workload *const *)&w, 1, &q), TSL_OK, "%s",
                 tsl_last_error());
    unlink(path);
    cr_assert_eq(q->predicted_period_us, 690.0);
    three_way(&w, &q, 1, &dev, &peak, &period, &stall, 1);
    tsl_plan_free(q);
    tsl_plan_free(p);
    rw_free(w);
}

/* Two chains with g2 taking 300 us (g1 would start at 730) sharing the
 * channels: job0 is case 4's plan (a out over [10, 110], in over [630, 730]
 * on time); job1's a goes out after it (over [110, 210]) and comes back
 * issued right when its g1 would start (g2's end, 730), over [730, 830]
 * after job0's swap-in: g1 waits 100 us, over [830, 840]. job1's peak is
 * at f1 (a + b = 250000): a comes back after g2 freed b and e. */
Test(sched_cases, a_late_swap_in_in_a_two_job_plan) {
    tsl_workload *w[2] = {chain("job0", 300), chain("job1", 300)};
    tsl_device_profile dev = case_dev(1e9);
    tsl_plan *p[2] = {tsl_plan_new("job0"), tsl_plan_new("job1")};
    tsl_event e0[3] = {{TSL_EV_SWAP_OUT, CH_A, 0, 0.0, -1},
                       {TSL_EV_RELEASE, CH_A, 1, 0.0, -1},
                       {TSL_EV_SWAP_IN, CH_A, 4, 200.0, 6}};
    tsl_event e1[3] = {{TSL_EV_SWAP_OUT, CH_A, 0, 100.0, -1},
                       {TSL_EV_RELEASE, CH_A, 1, 0.0, -1},
                       {TSL_EV_SWAP_IN, CH_A, 5, 0.0, 6}};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(tsl_plan_add(p[0], e0[i]), TSL_OK);
        cr_assert_eq(tsl_plan_add(p[1], e1[i]), TSL_OK);
    }
    tsl_plan_sort(p[0]);
    tsl_plan_sort(p[1]);
    size_t peak[2] = {270000, 250000};
    double period[2] = {740, 840}, stall[2] = {0, 100};
    three_way(w, p, 2, &dev, peak, period, stall, 1);
    /* 1 us earlier, job1's swap-in would overlap job0's on the H2D channel */
    p[1]->events[2].trigger = 4; /* g3 ends at 430 */
    p[1]->events[2].delay_us = 299;
    tsl_violation *v = NULL;
    int nv = 0;
    cr_assert_eq(tsl_plan_verify_jobs((const tsl_workload *const *)w, (const tsl_plan *const *)p,
                                      2, &dev, &v, &nv),
                 TSL_ERR_INVALID);
    int overlap = 0;
    for (int i = 0; i < nv; i++) overlap |= strstr(v[i].what, "overlapping job 'job0'") != NULL;
    cr_assert(overlap, "%d violations, none an overlap with job0", nv);
    free(v);
    /* together on one device the simulation runs */
    p[1]->events[2].trigger = 5;
    p[1]->events[2].delay_us = 0;
    tsl_sim_opts so = {.iterations = 3};
    tsl_sim_result sr;
    cr_assert_eq(tsl_simulate(w, p, 2, &dev, &so, &sr), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(sr.n_jobs, 2);
    tsl_sim_result_free(&sr);
    tsl_plan_free(p[0]);
    tsl_plan_free(p[1]);
    rw_free(w[0]);
    rw_free(w[1]);
}
