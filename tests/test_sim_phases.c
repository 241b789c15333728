/*
 * test_sim_phases.c - the simulator with jobs out of phase (issue 10,
 * "Asynchronous jobs"): start offsets per job, the fair channel model
 * (TSL_SIM_CHANNELS_FAIR) and a compute resource per job
 * (TSL_SIM_COMPUTE_PER_JOB) against timelines computed by hand, and the rule
 * docs/SCHEDULING.md chose - every job planned on its share of the channels
 * - holding whatever the phases, where the paper's shared time axis does
 * not.
 *
 * Hand-made cases use sim_fixture.h's profile (1e9 B/s each way: k*1000
 * bytes take k us at the full bandwidth) and its swap pair. With two jobs
 * the compute resource is shared (ready time, then job index), which puts
 * the jobs' swap-outs one microsecond apart: j0.f0 [0,1] j1.f0 [1,2]
 * j0.f1 [2,7] j1.f1 [7,12] j0.f2 [12,14] j1.f2 [14,16] j0.f3 [16,26]
 * j1.f3 [26,36] j0.f4 [36,37] j1.f4 [37,38] (test_simulator.c,
 * channel_contention_between_two_jobs: the FIFO model's timeline).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "random_workload.h"
#include "sim_fixture.h"
#include "tensile/policy.h"
#include "tensile/policy_tensile.h"
#include "tensile/sim.h"
#include "tensile/verify.h"

static void free_jobs(tsl_workload **w, tsl_plan **p, int n) {
    for (int j = 0; j < n; j++) {
        if (p) tsl_plan_free(p[j]);
        rw_free(w[j]);
    }
}

/* Asserts that the k-th transfer of `kind` of job j in iteration 1 ran over
 * [start, end]; returns it. */
static const tsl__sim_span *expect_copy(const tsl__sim_log *log, int j, tsl__span_kind kind, int k,
                                        double start, double end) {
    const tsl__sim_span *x = span(log, j, 1, kind, k);
    cr_assert(fabs(x->start - start) <= 1e-9 && fabs(x->end - end) <= 1e-9,
              "job %d: %s %d over [%.17g, %.17g], expected [%g, %g]", j,
              kind == TSL__SPAN_SWAP_IN ? "swap-in" : "swap-out", k, x->start, x->end, start, end);
    return x;
}

/* ---- the fair model by hand ---------------------------------------------------- */

/* Two swap pairs, fair channels. D2H: j0's swap-out of A (4000 B) from 1,
 * alone until j1's from 2 (1000 B moved); then each at half the bandwidth:
 * j0's 3000 B left take 6 us (end 8), by when j1 moved 3000; j1's last
 * 1000 B alone: end 9. H2D: j0's swap-in from 20, alone until j1's at 22
 * (2000 B moved), then 2000 B at half: end 26; j1's last 2000 B alone: end
 * 28. No transfer waits for a FIFO; j0's release after f1 (at 7) waits for
 * its swap-out until 8. Compute as with FIFO channels: iterations end at
 * 37 and 38, no stall. */
Test(sim_phases, fair_channels_share_the_bandwidth_then_one_has_it_all) {
    tsl_workload *w[2] = {swap_pair("j0"), swap_pair("j1")};
    tsl_plan *p[2] = {swap_pair_plan("j0", 6, 6500), swap_pair_plan("j1", 6, 6500)};
    tsl_device_profile dev = sim_dev(1);
    tsl_sim_opts o = {.iterations = 3, .channels = TSL_SIM_CHANNELS_FAIR};
    tsl__sim_log log;
    tsl_sim_result r = run_opts(w, p, 2, &dev, &o, &log);
    static const double so[2][2] = {{1, 8}, {2, 9}}, si[2][2] = {{20, 26}, {22, 28}};
    for (int j = 0; j < 2; j++) {
        const tsl__sim_span *x = expect_copy(&log, j, TSL__SPAN_SWAP_OUT, 0, so[j][0], so[j][1]);
        cr_assert_eq(x->wait, 0.0, "job %d: its swap-out waited %g us", j, x->wait);
        x = expect_copy(&log, j, TSL__SPAN_SWAP_IN, 0, si[j][0], si[j][1]);
        cr_assert_eq(x->wait, 0.0);
        expect_us(iter_rec(&log, j, 1)->end, 37 + j, "iteration 1");
        cr_assert_eq(iter_rec(&log, j, 1)->stall_us, 0.0);
        cr_assert_eq(r.job[j].stall_total_us, 0.0);
    }
    /* j0's A is freed when its swap-out ends (8), not at the release (7) */
    int freed = 0;
    for (int64_t i = 0; i < log.n_mem && !freed; i++) {
        const tsl__sim_mem *m = &log.mem[i];
        if (m->job == 0 && m->t > 6.5 && m->t < 12) {
            expect_us(m->t, 8, "j0: A freed");
            freed = 1;
        }
    }
    cr_assert(freed, "j0 frees nothing between 7 and 12");
    run_free(&r, &log);
    free_jobs(w, p, 2);
}

/* The same with a copy latency of 2 us, paid before the bytes move and
 * taking no bandwidth. D2H: j0's bytes from 3 (alone until 4: 1000 B),
 * j1's from 4; at half: j0 ends at 10, j1's last 1000 B alone: 11. H2D:
 * j0's bytes from 22 (alone until 24: 2000 B), j1's from 24; at half j0
 * ends at 28, j1's last 2000 B alone: 30. One job alone takes tsl_copy_us
 * per copy, as with FIFO channels. */
Test(sim_phases, fair_channels_pay_the_copy_latency_before_the_bytes) {
    tsl_workload *w[2] = {swap_pair("j0"), swap_pair("j1")};
    tsl_plan *p[2] = {swap_pair_plan("j0", 6, 6500), swap_pair_plan("j1", 6, 6500)};
    tsl_device_profile dev = sim_dev(1);
    dev.copy_latency_us = 2;
    tsl_sim_opts o = {.iterations = 3, .channels = TSL_SIM_CHANNELS_FAIR};
    tsl__sim_log log;
    tsl_sim_result r = run_opts(w, p, 2, &dev, &o, &log);
    static const double so[2][2] = {{1, 10}, {2, 11}}, si[2][2] = {{20, 28}, {22, 30}};
    for (int j = 0; j < 2; j++) {
        expect_copy(&log, j, TSL__SPAN_SWAP_OUT, 0, so[j][0], so[j][1]);
        expect_copy(&log, j, TSL__SPAN_SWAP_IN, 0, si[j][0], si[j][1]);
        expect_us(iter_rec(&log, j, 1)->end, 37 + j, "iteration 1");
    }
    run_free(&r, &log);

    /* alone: the swap-out [1, 7], the swap-in issued at 14 lands at 20, f4
     * waits for it from 18: as the FIFO model, to the rounding */
    tsl_sim_result fifo;
    tsl__sim_log flog;
    o.iterations = 2;
    r = run_opts(w, p, 1, &dev, &o, &log);
    tsl_sim_opts fo = {.iterations = 2};
    fifo = run_opts(w, p, 1, &dev, &fo, &flog);
    cr_assert_eq(log.n_span, flog.n_span);
    for (int64_t i = 0; i < log.n_span; i++) {
        expect_us(log.span[i].start, flog.span[i].start, "alone: start as FIFO");
        expect_us(log.span[i].end, flog.span[i].end, "alone: end as FIFO");
    }
    expect_us(span(&log, 0, 2, TSL__SPAN_SWAP_OUT, 0)->rel_end, 7, "alone: swap-out end");
    expect_us(r.job[0].iter_us, fifo.job[0].iter_us, "alone: iteration");
    expect_us(r.job[0].stall_us, 2, "alone: f4 waits 2 us");
    cr_assert_eq(r.job[0].peak, fifo.job[0].peak);
    run_free(&r, &log);
    run_free(&fifo, &flog);
    free_jobs(w, p, 2);
}

/* A job's own transfers stay one at a time, in issue order. f0 writes A
 * (4000 B) and B (2000 B), both swapped out after it; f1 reads them.
 * Alone: A [1,5], B [5,7]. Two jobs (j1's swap-outs issued at 2): j0.A
 * alone from 1 (1000 B by 2), then at half with j1.A: ends 8, j1.A has
 * 1000 B left; j0.B from 8 at half with it: j1.A ends 10, j0.B has 1000 B
 * left; j1.B from 10 at half: j0.B ends 12, j1.B's last 1000 B alone: 13.
 * j0.B waited 7 us for j0.A, j1.B 8 us for j1.A. */
static tsl_workload *two_outs(const char *job) {
    rw_builder *b = rw_build_begin(job);
    int32_t in = rw_build_tensor(b, "in", 100, TSL_KIND_INPUT);
    int32_t a = rw_build_tensor(b, "A", 4000, ACT);
    int32_t bb = rw_build_tensor(b, "B", 2000, ACT);
    int32_t c = rw_build_tensor(b, "C", 10, GRAD);
    rw_build_op(b, "f0", 1, 0, IDS(in), IDS(a, bb));
    rw_build_op(b, "f1", 30, 0, IDS(a, bb), IDS(c));
    tsl_workload *w = rw_build_end(b);
    cr_assert_not_null(w);
    return w;
}

Test(sim_phases, fair_channels_keep_a_jobs_own_transfers_in_order) {
    tsl_workload *w[2] = {two_outs("j0"), two_outs("j1")};
    tsl_plan *p[2];
    for (int j = 0; j < 2; j++) {
        p[j] = tsl_plan_new(w[j]->job);
        add_ev(p[j], TSL_EV_SWAP_OUT, 1, 0, 0.0, NO_PRECEDE); /* A */
        add_ev(p[j], TSL_EV_SWAP_OUT, 2, 0, 0.0, NO_PRECEDE); /* B */
        tsl_plan_sort(p[j]);
    }
    tsl_device_profile dev = sim_dev(1);
    tsl_sim_opts o = {.iterations = 1, .channels = TSL_SIM_CHANNELS_FAIR};
    tsl__sim_log log;
    tsl_sim_result r = run_opts(w, p, 1, &dev, &o, &log);
    expect_us(span(&log, 0, 1, TSL__SPAN_SWAP_OUT, 0)->end, 5, "alone: A end");
    expect_us(span(&log, 0, 1, TSL__SPAN_SWAP_OUT, 1)->start, 5, "alone: B start");
    expect_us(span(&log, 0, 1, TSL__SPAN_SWAP_OUT, 1)->end, 7, "alone: B end");
    run_free(&r, &log);

    r = run_opts(w, p, 2, &dev, &o, &log);
    static const double want[2][2][3] = {{{1, 8, 0}, {8, 12, 7}}, {{2, 10, 0}, {10, 13, 8}}};
    for (int j = 0; j < 2; j++)
        for (int k = 0; k < 2; k++) {
            const tsl__sim_span *x =
                expect_copy(&log, j, TSL__SPAN_SWAP_OUT, k, want[j][k][0], want[j][k][1]);
            cr_assert_eq(x->tensor, 1 + k, "job %d: transfer %d is of tensor %d", j, k, x->tensor);
            expect_us(x->wait, want[j][k][2], "wait for the job's own transfer");
        }
    run_free(&r, &log);
    free_jobs(w, p, 2);
}

/* A compute resource per job: the two swap pairs run side by side, meeting
 * only on the channels, their swap-outs issued at 1 and swap-ins at 14
 * together. FIFO: j0 copies as alone ([1,5], [14,18]), j1 waits for it
 * ([5,9], [18,22]) and its f4 stalls 4 us: iteration 23. Fair: each copy at
 * half the bandwidth ([1,9], [14,22]): both stall 4 us. */
Test(sim_phases, a_compute_resource_per_job_shares_only_the_channels) {
    tsl_workload *w[2] = {swap_pair("j0"), swap_pair("j1")};
    tsl_plan *p[2] = {swap_pair_plan("j0", 6, 6500), swap_pair_plan("j1", 6, 6500)};
    tsl_device_profile dev = sim_dev(1);
    static const double want[2][2][5] = {/* so start, so end, si start, si end, stall */
                                         {{1, 5, 14, 18, 0}, {5, 9, 18, 22, 4}},
                                         {{1, 9, 14, 22, 4}, {1, 9, 14, 22, 4}}};
    for (int fair = 0; fair < 2; fair++) {
        tsl_sim_opts o = {.iterations = 3, .compute = TSL_SIM_COMPUTE_PER_JOB,
                          .channels = fair ? TSL_SIM_CHANNELS_FAIR : TSL_SIM_CHANNELS_FIFO};
        tsl__sim_log log;
        tsl_sim_result r = run_opts(w, p, 2, &dev, &o, &log);
        for (int j = 0; j < 2; j++) {
            const double *x = want[fair][j];
            expect_copy(&log, j, TSL__SPAN_SWAP_OUT, 0, x[0], x[1]);
            expect_copy(&log, j, TSL__SPAN_SWAP_IN, 0, x[2], x[3]);
            expect_us(op_span(&log, j, 1, F4)->wait, x[4], "f4 stall");
            expect_us(iter_rec(&log, j, 1)->end, 19 + x[4], "iteration 1");
            for (int i = 0; i < 4; i++) {
                const tsl__sim_span *op = op_span(&log, j, 1, i);
                cr_assert_eq(op->wait, 0.0);
                cr_assert_eq(op->start, w[j]->ops[i].start_us, "job %d op %d", j, i);
            }
        }
        run_free(&r, &log);
    }
    free_jobs(w, p, 2);
}

/* A profile that is not duplex: both directions share one channel, in the
 * fair model as in the FIFO one. A compute resource per job, j1 offset by
 * 6 us: j1's swap-in (issued at 6 + 14) and j0's second swap-out (issued
 * at 19 + 1) start together at 20. Duplex: each alone on its direction,
 * [20, 24]. Not duplex: each at half the channel, [20, 28], and j1's f4
 * (due at 6 + 18 = 24) stalls 4 us. */
Test(sim_phases, fair_channels_not_duplex_share_both_directions) {
    tsl_workload *w[2] = {swap_pair("j0"), swap_pair("j1")};
    tsl_plan *p[2] = {swap_pair_plan("j0", 6, 6500), swap_pair_plan("j1", 6, 6500)};
    double off[2] = {0, 6};
    for (int duplex = 0; duplex < 2; duplex++) {
        tsl_device_profile dev = sim_dev(duplex);
        tsl_sim_opts o = {.iterations = 3, .offset_us = off, .channels = TSL_SIM_CHANNELS_FAIR,
                          .compute = TSL_SIM_COMPUTE_PER_JOB};
        tsl__sim_log log;
        tsl_sim_result r = run_opts(w, p, 2, &dev, &o, &log);
        double end = duplex ? 24 : 28;
        expect_copy(&log, 1, TSL__SPAN_SWAP_OUT, 0, 7, 11);
        expect_copy(&log, 0, TSL__SPAN_SWAP_IN, 0, 14, 18);
        expect_copy(&log, 1, TSL__SPAN_SWAP_IN, 0, 20, end);
        const tsl__sim_span *so = span(&log, 0, 2, TSL__SPAN_SWAP_OUT, 0);
        expect_us(so->start, 20, "j0's second swap-out start");
        expect_us(so->end, end, "j0's second swap-out end");
        expect_us(op_span(&log, 1, 1, F4)->wait, duplex ? 0 : 4, "j1's f4 stall");
        run_free(&r, &log);
    }
    free_jobs(w, p, 2);
}

/* ---- phases ---------------------------------------------------------------------- */

/* One job offset by X: everything happens X later, the results are the
 * same; two jobs, the second offset by X: its first iteration begins at X,
 * and nothing of it happens before. */
Test(sim_phases, a_job_offset_by_x_starts_x_later) {
    tsl_workload *w[2] = {swap_pair("j0"), swap_pair("j1")};
    tsl_plan *p[2] = {swap_pair_plan("j0", 6, 6500), swap_pair_plan("j1", 6, 6500)};
    tsl_device_profile dev = sim_dev(1);
    const double X = 123.25;
    double off1[1] = {X};
    tsl_sim_opts o0 = {.iterations = 3}, o1 = {.iterations = 3, .offset_us = off1};
    tsl__sim_log l0, l1;
    tsl_sim_result r0 = run_opts(w, p, 1, &dev, &o0, &l0);
    tsl_sim_result r1 = run_opts(w, p, 1, &dev, &o1, &l1);
    same_results(&r0, &r1, "one job: the results depend on its offset");
    cr_assert_eq(l0.n_span, l1.n_span);
    for (int64_t i = 0; i < l0.n_span; i++) {
        cr_assert_eq(l1.span[i].start, X + l0.span[i].start, "span %ld", (long)i);
        cr_assert_eq(l1.span[i].end, X + l0.span[i].end);
        cr_assert_eq(l1.span[i].rel_start, l0.span[i].rel_start);
    }
    for (int64_t i = 0; i < l0.n_iter; i++) cr_assert_eq(l1.iter[i].start, X + l0.iter[i].start);
    run_free(&r0, &l0);
    run_free(&r1, &l1);

    double off2[2] = {0, X};
    o1.offset_us = off2;
    r1 = run_opts(w, p, 2, &dev, &o1, &l1);
    cr_assert_eq(iter_rec(&l1, 1, 1)->start, X);
    expect_us(op_span(&l1, 1, 1, F0)->ready, X, "j1's first op ready");
    cr_assert(op_span(&l1, 1, 1, F0)->start >= X);
    for (int64_t i = 0; i < l1.n_span; i++)
        if (l1.span[i].job == 1) cr_assert(l1.span[i].start >= X);
    expect_us(iter_rec(&l1, 0, 1)->end, 19, "j0 runs alone until X");
    run_free(&r1, &l1);
    free_jobs(w, p, 2);
}

/* Offsets of 0 with FIFO channels are today's simulation, byte for byte:
 * the two swap pairs' contention (test_simulator.c's numbers), and random
 * jobs (results and the whole timeline). */
Test(sim_phases, fifo_with_zero_offsets_is_the_simulation_without_offsets) {
    tsl_workload *w[4];
    tsl_plan *p[4];
    w[0] = swap_pair("j0");
    w[1] = swap_pair("j1");
    p[0] = swap_pair_plan("j0", 6, 6500);
    p[1] = swap_pair_plan("j1", 6, 6500);
    tsl_device_profile dev = sim_dev(1);
    double zero[4] = {0, 0, 0, 0};
    tsl_sim_opts o = {.iterations = 3, .offset_us = zero};
    tsl__sim_log log;
    tsl_sim_result r = run_opts(w, p, 2, &dev, &o, &log);
    const tsl__sim_span *so1 = span(&log, 1, 1, TSL__SPAN_SWAP_OUT, 0);
    expect_us(so1->start, 5, "j1 swap-out start");
    expect_us(so1->end, 9, "j1 swap-out end");
    expect_us(span(&log, 1, 1, TSL__SPAN_SWAP_IN, 0)->start, 24, "j1 swap-in start");
    expect_us(iter_rec(&log, 0, 1)->end, 37, "j0 iteration 1");
    expect_us(iter_rec(&log, 1, 1)->end, 38, "j1 iteration 1");
    run_free(&r, &log);
    free_jobs(w, p, 2);

    for (int seed = 300; seed < 306; seed++) {
        int nj = 2 + seed % 3;
        rw_opts ro = rw_opts_default();
        cr_assert_eq(rw_generate_jobs((uint64_t)seed, &ro, nj, w), 0);
        dev = rw_profile((uint64_t)seed);
        tsl_plan_opts po = tsl_plan_opts_default();
        po.budget = 1;
        cr_assert(TH_PLANNED(tsl_plan_jobs(w, nj, &dev, &po, p, NULL)), "%s", tsl_last_error());
        tsl__sim_log a, b;
        tsl_sim_opts on = {.iterations = 3};
        tsl_sim_result ra = run_opts(w, p, nj, &dev, &on, &a);
        tsl_sim_result rb = run_opts(w, p, nj, &dev, &o, &b);
        same_results(&ra, &rb, "zero offsets differ from none");
        cr_assert(a.n_span == b.n_span && a.n_mem == b.n_mem && a.n_iter == b.n_iter);
        cr_assert(memcmp(a.span, b.span, (size_t)a.n_span * sizeof *a.span) == 0);
        cr_assert(memcmp(a.mem, b.mem, (size_t)a.n_mem * sizeof *a.mem) == 0);
        cr_assert(memcmp(a.iter, b.iter, (size_t)a.n_iter * sizeof *a.iter) == 0);
        run_free(&ra, &a);
        run_free(&rb, &b);
        free_jobs(w, p, nj);
    }
}

/* Random offsets: each in [0, its job's period), reproducible from the seed. */
Test(sim_phases, random_offsets_lie_within_each_period) {
    tsl_workload *w[3];
    rw_opts ro = rw_opts_default();
    cr_assert_eq(rw_generate_jobs(11, &ro, 3, w), 0);
    double a[3], b[3], c[3];
    tsl_sim_random_offsets(w, 3, 5, a);
    tsl_sim_random_offsets(w, 3, 5, b);
    tsl_sim_random_offsets(w, 3, 6, c);
    cr_assert(memcmp(a, b, sizeof a) == 0);
    cr_assert(memcmp(a, c, sizeof a) != 0);
    for (int j = 0; j < 3; j++) cr_assert(a[j] >= 0 && a[j] < w[j]->period_us);
    free_jobs(w, NULL, 3);
}

/* ---- arguments -------------------------------------------------------------------- */

Test(sim_phases, bad_phases_channels_and_shares_are_named) {
    tsl_workload *w[2] = {swap_pair("j0"), swap_pair("j1")};
    tsl_device_profile dev = sim_dev(1);
    tsl_sim_result r;
    double off[2] = {0, -1}, inf[2] = {0, INFINITY};
    tsl_sim_opts o = {.offset_us = off};
    cr_assert_eq(tsl_simulate(w, NULL, 2, &dev, &o, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "offset_us[1]"), "%s", tsl_last_error());
    o.offset_us = inf;
    cr_assert_eq(tsl_simulate(w, NULL, 2, &dev, &o, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "offset_us[1]"), "%s", tsl_last_error());
    o = (tsl_sim_opts){.channels = (tsl_sim_channels)7};
    cr_assert_eq(tsl_simulate(w, NULL, 2, &dev, &o, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "channels 7"), "%s", tsl_last_error());
    o = (tsl_sim_opts){.compute = (tsl_sim_compute)5};
    cr_assert_eq(tsl_simulate(w, NULL, 2, &dev, &o, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "compute 5"), "%s", tsl_last_error());
    double zero[2] = {0.5, 0}, over[2] = {0.6, 0.6};
    o = (tsl_sim_opts){.channel_share = zero};
    cr_assert_eq(tsl_simulate(w, NULL, 2, &dev, &o, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "channel_share[1]"), "%s", tsl_last_error());
    o.channel_share = over;
    cr_assert_eq(tsl_simulate(w, NULL, 2, &dev, &o, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "sum to 1.2"), "%s", tsl_last_error());
    free_jobs(w, NULL, 2);
}

/* ---- the rule: plans on channel shares hold whatever the phases ------------------ */

/* Random jobs planned by TENSILE together (a budget of 1 byte: as much
 * swapping as the policy finds; recomputation off, so that a plan's ops
 * are vanilla's) on equal channel shares, or on the paper's shared time
 * axis. */
typedef struct phase_case {
    int n;
    tsl_workload *w[4];
    tsl_device_profile dev;
    double share[4];
    tsl_plan *share_plan[4], *axis_plan[4], *empty[4];
    int swaps;
} phase_case;

static void phase_case_make(phase_case *c, int seed) {
    memset(c, 0, sizeof *c);
    c->n = 2 + seed % 3;
    rw_opts ro = rw_opts_default();
    cr_assert_eq(rw_generate_jobs((uint64_t)seed, &ro, c->n, c->w), 0);
    c->dev = rw_profile((uint64_t)seed);
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.recompute = 0;
    tsl_plan_opts po = tsl_plan_opts_default();
    po.budget = 1;
    po.opts = &to;
    for (int j = 0; j < c->n; j++) c->share[j] = 1.0 / c->n;
    po.channel_share = c->share;
    tsl_plan_report rep;
    cr_assert(TH_PLANNED(tsl_plan_jobs(c->w, c->n, &c->dev, &po, c->share_plan, &rep)), "%s",
              tsl_last_error());
    for (int j = 0; j < c->n; j++) {
        /* valid on its share, with no planned wait (TENSILE plans none) */
        tsl_device_profile dj = tsl_profile_channel_share(&c->dev, c->share[j]);
        tsl_violation *v = NULL;
        int nv = 0;
        cr_assert_eq(tsl_plan_verify(c->w[j], c->share_plan[j], &dj, &v, &nv), TSL_OK,
                     "seed %d job %d: %s", seed, j, nv ? v[0].what : tsl_last_error());
        free(v);
        cr_assert_eq(rep.waits[j], 0);
        c->swaps += rep.swaps[j];
        c->empty[j] = tsl_plan_new(c->w[j]->job);
    }
    tsl_plan_report_free(&rep);
    po.channel_share = NULL;
    cr_assert(TH_PLANNED(tsl_plan_jobs(c->w, c->n, &c->dev, &po, c->axis_plan, NULL)), "%s",
              tsl_last_error());
}

static void phase_case_free(phase_case *c) {
    for (int j = 0; j < c->n; j++) {
        tsl_plan_free(c->axis_plan[j]);
        tsl_plan_free(c->empty[j]);
    }
    free_jobs(c->w, c->share_plan, c->n);
}

static tsl_sim_result simulate(phase_case *c, tsl_plan **p, const tsl_sim_opts *o) {
    tsl_sim_result r;
    cr_assert_eq(tsl_simulate(c->w, p, c->n, &c->dev, o, &r), TSL_OK, "%s", tsl_last_error());
    return r;
}

/* 1 if some job of r stalled. */
static int stalled(const tsl_sim_result *r) {
    int any = 0;
    for (int j = 0; j < r->n_jobs; j++) any |= r->job[j].stall_total_us > 0;
    return any;
}

/* The claim (docs/SCHEDULING.md, "Copies and channels"): with equal shares
 * and fair channels, whatever the phases, no job stalls, every job's
 * steady-state peak is its predicted peak, and its iteration takes its
 * period - with a compute resource per job, so that only the channels are
 * shared; on one shared compute resource, as long as the same jobs run
 * vanilla with the same phases (the plans cost no time). The contrast: the
 * same jobs planned on the shared time axis, under FIFO channels and the
 * same phases, do stall (and the shares themselves need fair channels:
 * under FIFO ones they stall too, counted and printed). */
Test(sim_phases, plans_on_channel_shares_hold_whatever_the_phases) {
    int n = th_quick() ? 12 : 40, runs = 0, swaps = 0, axis_stalls[2] = {0, 0}, fifo_stalls = 0;
    for (int seed = 500; seed < 500 + n; seed++) {
        phase_case c;
        phase_case_make(&c, seed);
        swaps += c.swaps;
        for (int k = 0; k < 3; k++) {
            double off[4];
            tsl_sim_random_offsets(c.w, c.n, (uint64_t)(seed * 7 + k), off);
            for (int cm = 0; cm < 2; cm++) {
                tsl_sim_opts fair = {.iterations = 4, .offset_us = off,
                                     .channels = TSL_SIM_CHANNELS_FAIR,
                                     .compute = (tsl_sim_compute)cm, .channel_share = c.share};
                tsl_sim_opts fifo = {.iterations = 4, .offset_us = off,
                                     .compute = (tsl_sim_compute)cm};
                tsl_sim_result rs = simulate(&c, c.share_plan, &fair);
                tsl_sim_result rv = simulate(&c, c.empty, &fifo);
                tsl_sim_result ra = simulate(&c, c.axis_plan, &fifo);
                for (int j = 0; j < c.n; j++) {
                    const tsl_plan *p = c.share_plan[j];
                    cr_assert_eq(rs.job[j].stall_total_us, 0.0,
                                 "seed %d phases %d compute %d job %d: stalls %g us", seed, k, cm,
                                 j, rs.job[j].stall_total_us);
                    cr_assert_eq(rs.job[j].peak, p->predicted_peak,
                                 "seed %d phases %d compute %d job %d: peak %zu, predicted %zu",
                                 seed, k, cm, j, rs.job[j].peak, p->predicted_peak);
                    double want = cm == TSL_SIM_COMPUTE_PER_JOB ? p->predicted_period_us
                                                                : rv.job[j].iter_us;
                    cr_assert(fabs(rs.job[j].iter_us - want) <= 1e-9 * (1 + want),
                              "seed %d phases %d compute %d job %d: iteration %.17g us, "
                              "expected %.17g",
                              seed, k, cm, j, rs.job[j].iter_us, want);
                }
                axis_stalls[cm] += stalled(&ra);
                runs += cm == 0;
                if (cm == TSL_SIM_COMPUTE_PER_JOB) { /* the shares need fair channels */
                    tsl_sim_opts sf = fifo;
                    sf.channel_share = c.share;
                    tsl_sim_result rf = simulate(&c, c.share_plan, &sf);
                    fifo_stalls += stalled(&rf);
                    tsl_sim_result_free(&rf);
                }
                tsl_sim_result_free(&rs);
                tsl_sim_result_free(&rv);
                tsl_sim_result_free(&ra);
            }
        }
        phase_case_free(&c);
    }
    printf("phases: %d runs (%d workloads x 3 phases; %d swaps planned on shares): the shared "
           "time axis under FIFO channels stalls in %d runs on one compute resource, %d with one "
           "per job; the shares under fair channels in none (under FIFO channels, one compute "
           "resource per job: %d)\n",
           runs, n, swaps, axis_stalls[0], axis_stalls[1], fifo_stalls);
    cr_assert(swaps >= n, "only %d swaps: the case proves little", swaps);
    cr_assert(axis_stalls[0] > 0 && axis_stalls[1] > 0,
              "the shared time axis never stalled: the claim is vacuous");
}
