/*
 * test_policy_autoswap.c - the autoswap policy (src/sched/policy_autoswap.c,
 * autoswap_scores.c): candidates, the four priority scores, selection to
 * the budget, the swap schedule and the Bayesian optimisation of the
 * weights.
 *
 * Known answers on a hand-made workload (every op 10 us; copies at 1 GB/s
 * with no latency: B bytes copy in B/1000 us; times exact):
 *
 *   tensors  in 100 (input), w 2000 (parameter), a 10000, b 20000, c 5000,
 *            d 30000 (activations), gc gb 1000, gw 2000 (gradients)
 *   op0 f1  [in, w] -> a       op4 b3  [d, c] -> gc
 *   op1 f2  [a] -> b           op5 b2  [gc, b] -> gb
 *   op2 f3  [b] -> c           op6 b1  [gb, a, w] -> gw
 *   op3 big [c] -> d           op7 upd [w, gw] -> w   (the optimizer)
 *
 * Op i runs over [10i, 10i + 10]. The vanilla load during op0..op7 is
 * 12100, 32000, 37000, 67000, 68000, 34000, 15000, 4000 (2100 at time 0):
 * the peak, 68000, is at op4, which uses c, d and gc. Candidates (their
 * accesses around op4): w (op0 -> op6), a (op1 -> op6), b (op2 -> op5).
 *
 *           gap  t_out=t_in  DOA   AOA          absence    WDOA
 *   w        50      2        46   46 * 2000    [12, 58)   8*32000 + 37000*10 + 67000*10
 *                                                          + 68000*10 + 8*34000 = 2248000
 *   a        40     10        20   20 * 10000   [30, 50)   670000 + 680000 = 1350000
 *   b        20     20       -20   -20 / 20000  (none)     0
 *
 * SWDOA: w first (2248000); a's WDOA then falls by w's 2000 bytes times
 * the 20 us their absences share: 1310000; then b, 0.
 *
 * With the AOA score and a limit of 60000 bytes: a first; LOAD' without a
 * during op3 and op4 peaks at 58000 - within the limit, one candidate. The
 * schedule: a out right after f2 ([20, 30]), released when the copy ends
 * (30), back as late as the channel allows, [50, 60] before b1: the real
 * peak is 58000 too, and nothing waits.
 *
 * With only b a candidate (size threshold 15000): b out after f3 ([30,
 * 50]), released at 50; its swap-in cannot land by b2's start (50) - from
 * its release it starts at 50 and lands at 70: b2 waits 20 us for it (a
 * planned wait; the period 100 us), and the limit is not met (b is away
 * for no time at all).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "policy_check.h"
#include "random_workload.h"
#include "rt_fixture.h"
#include "sched/autoswap_internal.h"
#include "tensile/models.h"
#include "tensile/policy_autoswap.h"

/* ---- the hand-made workload ---------------------------------------------------------- */

enum { IN, W, A, B, C, D, GC, GB, GW };

static tsl_workload *small(void) {
    rw_builder *bl = rw_build_begin("small");
    struct { const char *n; size_t b; tsl_tensor_kind k; } t[] = {
        {"in", 100, TSL_KIND_INPUT},       {"w", 2000, TSL_KIND_PARAM},
        {"a", 10000, TSL_KIND_ACTIVATION}, {"b", 20000, TSL_KIND_ACTIVATION},
        {"c", 5000, TSL_KIND_ACTIVATION},  {"d", 30000, TSL_KIND_ACTIVATION},
        {"gc", 1000, TSL_KIND_GRADIENT},   {"gb", 1000, TSL_KIND_GRADIENT},
        {"gw", 2000, TSL_KIND_GRADIENT},
    };
    for (int i = 0; i < (int)(sizeof t / sizeof t[0]); i++)
        cr_assert_eq(rw_build_tensor(bl, t[i].n, t[i].b, t[i].k), i);
    PC_OP(bl, "f1", PC_L2(IN, W), PC_L1(A));
    PC_OP(bl, "f2", PC_L1(A), PC_L1(B));
    PC_OP(bl, "f3", PC_L1(B), PC_L1(C));
    PC_OP(bl, "big", PC_L1(C), PC_L1(D));
    PC_OP(bl, "b3", PC_L2(D, C), PC_L1(GC));
    PC_OP(bl, "b2", PC_L2(GC, B), PC_L1(GB));
    PC_OP(bl, "b1", PC_L3(GB, A, W), PC_L1(GW));
    rw_build_mark_optimizer(bl);
    PC_OP(bl, "upd", PC_L2(W, GW), PC_L1(W));
    tsl_workload *w = rw_build_end(bl);
    cr_assert_not_null(w);
    char why[256];
    cr_assert_eq(rw_check(w, why, sizeof why), 0, "%s", why);
    return w;
}

#define CLOSE(a, b, what)                                                                          \
    cr_assert(fabs((double)(a) - (double)(b)) <= 1e-9 * (1 + fabs((double)(b))),                   \
              "%s: %.17g, expected %.17g", what, (double)(a), (double)(b))

Test(autoswap, candidates_and_scores_by_hand) {
    tsl_workload *w = small();
    tsl_device_profile dev = pc_exact_profile();
    tsl_plan *plan = tsl_plan_new("small");
    const tsl_device_profile *job_dev = &dev;
    tsl_plan_request rq = {.w = &w, .n_jobs = 1, .dev = &dev, .job_dev = &job_dev,
                           .shared_channels = 1, .budget = dev.mem_bytes};
    tsl__kit K;
    cr_assert_eq(tsl__kit_init(&K, &rq, &plan), TSL_OK);
    cr_assert_eq(K.jobs[0].pk.peak, 68000);
    cr_assert_eq(K.jobs[0].pk.op, 4);
    tsl__as_load L;
    cr_assert_eq(tsl__as_load_build(&K.jobs[0], &L), TSL_OK);
    const size_t load[8] = {12100, 32000, 37000, 67000, 68000, 34000, 15000, 4000};
    cr_assert_eq(L.load0, 2100);
    for (int i = 0; i < 8; i++) cr_assert_eq(L.load[i], load[i], "op %d: %zu", i, L.load[i]);
    CLOSE(tsl__as_load_integral(&L, 12, 58), 2248000, "integral over [12, 58)");
    tsl__as_cand *c;
    int n;
    cr_assert_eq(tsl__as_candidates(&K, &L, 0, &c, &n), TSL_OK);
    cr_assert_eq(n, 3, "%d candidates", n);
    const int32_t tensor[3] = {W, A, B}, before[3] = {0, 1, 2}, after[3] = {6, 6, 5};
    const double doa[3] = {46, 20, -20}, aoa[3] = {92000, 200000, -20.0 / 20000};
    const double wdoa[3] = {2248000, 1350000, 0}, swdoa[3] = {2248000, 1310000, 0};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(c[i].tensor, tensor[i]);
        cr_assert_eq(c[i].before, before[i], "candidate %d: before op %d", i, c[i].before);
        cr_assert_eq(c[i].after, after[i], "candidate %d: after op %d", i, c[i].after);
        CLOSE(c[i].score[TSL__AS_DOA], doa[i], "DOA");
        CLOSE(c[i].score[TSL__AS_AOA], aoa[i], "AOA");
        CLOSE(c[i].score[TSL__AS_WDOA], wdoa[i], "WDOA");
        CLOSE(c[i].score[TSL__AS_SWDOA], swdoa[i], "SWDOA");
    }
    cr_assert_eq(c[2].n_abs, 0, "b is never away");
    /* standardised: mean 0, population standard deviation 1 */
    for (int k = 0; k < TSL__AS_N_SCORES; k++) {
        double m = 0, v = 0, raw_m = 0, raw_v = 0;
        for (int i = 0; i < 3; i++) raw_m += c[i].score[k] / 3;
        for (int i = 0; i < 3; i++) raw_v += (c[i].score[k] - raw_m) * (c[i].score[k] - raw_m) / 3;
        for (int i = 0; i < 3; i++) {
            m += c[i].z[k] / 3;
            CLOSE(c[i].z[k], (c[i].score[k] - raw_m) / sqrt(raw_v), "z");
        }
        for (int i = 0; i < 3; i++) v += c[i].z[k] * c[i].z[k] / 3;
        cr_assert(fabs(m) < 1e-12 && fabs(v - 1) < 1e-12, "score %d: mean %g, variance %g", k, m, v);
    }
    free(c);
    /* the size threshold: only b is at least 15000 bytes */
    cr_assert_eq(tsl__as_candidates(&K, &L, 15000, &c, &n), TSL_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(c[0].tensor, B);
    free(c);
    tsl__as_load_free(&L);
    tsl__kit_free(&K);
    tsl_plan_free(plan);
    rw_free(w);
}

/* Exact layouts (alignment 1), so that the budget of footprints is the
 * load's. */
static tsl_plan_opts exact_opts(const tsl_autoswap_opts *ao, size_t budget) {
    tsl_plan_opts po = pc_opts("autoswap", ao, budget);
    po.layout_align = 1;
    return po;
}

Test(autoswap, aoa_selects_until_the_limit_and_schedules_as_late_as_it_can) {
    tsl_workload *w = small();
    tsl_device_profile dev = pc_exact_profile();
    tsl_autoswap_opts ao = tsl_autoswap_opts_default();
    ao.size_threshold = 0;
    ao.score = TSL_AUTOSWAP_AOA;
    tsl_plan_opts po = exact_opts(&ao, 60000);
    pc_result r;
    pc_plan_and_check(&w, 1, &dev, &po, "autoswap AOA", &r);
    const tsl_event want[] = {pc_ev(TSL_EV_SWAP_OUT, A, 1, 0, -1), pc_ev(TSL_EV_RELEASE, A, 1, 0, -1),
                              pc_ev(TSL_EV_SWAP_IN, A, 4, 0, 6)};
    pc_expect_events(r.p[0], want, 3, "AOA at 60000");
    cr_assert_eq(r.p[0]->predicted_peak, 58000);
    cr_assert_eq(r.waits, 0);
    cr_assert_eq(r.rep.budget_met, 1);
    cr_assert_eq(r.rep.iterations, 0, "a single score needs no BO");
    pc_result_free(&r);
    rw_free(w);
}

Test(autoswap, a_late_swap_in_makes_its_access_wait) {
    tsl_workload *w = small();
    tsl_device_profile dev = pc_exact_profile();
    tsl_autoswap_opts ao = tsl_autoswap_opts_default();
    ao.size_threshold = 15000;
    tsl_plan_opts po = exact_opts(&ao, 60000);
    pc_result r;
    pc_plan_and_check(&w, 1, &dev, &po, "autoswap, b alone", &r);
    const tsl_event want[] = {pc_ev(TSL_EV_SWAP_OUT, B, 2, 0, -1), pc_ev(TSL_EV_RELEASE, B, 2, 0, -1),
                              pc_ev(TSL_EV_SWAP_IN, B, 4, 0, 5)};
    pc_expect_events(r.p[0], want, 3, "b alone");
    cr_assert_eq(r.waits, 1);
    cr_assert_eq(r.stall_us, 20.0, "stall %.17g", r.stall_us);
    cr_assert_eq(r.p[0]->predicted_period_us, 100.0);
    cr_assert_eq(r.p[0]->predicted_peak, 68000);
    cr_assert_eq(r.rep.budget_met, 0, "b cannot bring the peak to the limit");
    pc_result_free(&r);
    rw_free(w);
}

Test(autoswap, bayesian_optimisation_meets_the_limit_at_no_overhead) {
    tsl_workload *w = small();
    tsl_device_profile dev = pc_exact_profile();
    tsl_autoswap_opts ao = tsl_autoswap_opts_default();
    ao.size_threshold = 0;
    tsl_plan_opts po = exact_opts(&ao, 60000);
    pc_result r;
    pc_plan_and_check(&w, 1, &dev, &po, "autoswap BO", &r);
    cr_assert_eq(r.rep.iterations, 30, "%d evaluations", r.rep.iterations);
    cr_assert_eq(r.rep.budget_met, 1);
    cr_assert_leq(r.p[0]->predicted_peak, 60000);
    cr_assert_eq(r.p[0]->predicted_period_us, 80.0, "no overhead");
    /* the four single scores come first: it is at least as good as AOA's
     * plan (the limit met at no overhead), and as low in peak */
    cr_assert_leq(r.p[0]->predicted_peak, 58000);
    pc_result_free(&r);
    /* fewer evaluations, another seed: still deterministic, still met */
    ao.evaluations = 5;
    ao.seed = 12345;
    pc_plan_and_check(&w, 1, &dev, &po, "autoswap BO, 5 evaluations", &r);
    cr_assert_eq(r.rep.iterations, 5);
    cr_assert_eq(r.rep.budget_met, 1);
    pc_result_free(&r);
    rw_free(w);
}

Test(autoswap, no_pressure_no_swaps) {
    /* the budget is the device's memory: the vanilla peak fits, AutoSwap
     * selects nothing (its own rule) */
    tsl_workload *w = small();
    tsl_device_profile dev = pc_exact_profile();
    tsl_autoswap_opts ao = tsl_autoswap_opts_default();
    ao.size_threshold = 0;
    tsl_plan_opts po = exact_opts(&ao, 0);
    pc_result r;
    pc_plan_and_check(&w, 1, &dev, &po, "autoswap, no pressure", &r);
    cr_assert_eq(r.p[0]->n_events, 0);
    cr_assert_eq(r.rep.iterations, 0);
    pc_result_free(&r);
    rw_free(w);
}

Test(autoswap, option_errors_name_the_option_and_the_value) {
    const tsl_policy *p = tsl_policy_find("autoswap");
    cr_assert_not_null(p);
    tsl_policy_opts *o;
    cr_assert_eq(tsl_policy_opts_new(p, &o), TSL_OK);
    const struct { const char *name, *value, *msg; } bad[] = {
        {"size-threshold", "-1", "option size-threshold: size_threshold = -1 outside [0, "},
        {"score", "5", "option score: score = 5 outside [0, 4]"},
        {"score", "1.5", "option score: '1.5' is not an integer"},
        {"evaluations", "0", "option evaluations: evaluations = 0 outside [1, 1000]"},
        {"seed", "-3", "option seed: seed = -3 outside [0, "},
        {"evaluation", "3", "policy 'autoswap' has no option 'evaluation' (its options: "
                            "size-threshold, score, evaluations, seed)"},
    };
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        cr_assert_eq(tsl_policy_opts_set(o, bad[i].name, bad[i].value), TSL_ERR_INVALID, "%s %s",
                     bad[i].name, bad[i].value);
        cr_assert(strstr(tsl_last_error(), bad[i].msg), "%s", tsl_last_error());
    }
    /* the options are unchanged; good values set */
    const tsl_autoswap_opts *v = tsl_policy_opts_values(o);
    cr_assert_eq(v->score, 0);
    cr_assert_eq(v->evaluations, 30);
    cr_assert_eq(v->size_threshold, 1048576.0);
    cr_assert_eq(tsl_policy_opts_set(o, "score", "4"), TSL_OK);
    cr_assert_eq(tsl_policy_opts_set(o, "size-threshold", "4096"), TSL_OK);
    v = tsl_policy_opts_values(o);
    cr_assert_eq(v->score, TSL_AUTOSWAP_SWDOA);
    cr_assert_eq(v->size_threshold, 4096.0);
    tsl_policy_opts_free(o);
    tsl_autoswap_opts d = tsl_autoswap_opts_default();
    cr_assert(d.score == 0 && d.evaluations == 30 && d.seed == 1 && d.size_threshold == 1048576.0);
}

/* ---- the zoo ------------------------------------------------------------------------- */


static void zoo(const char *model, int adam) {
    tsl_device_profile dev = rtf_cpu_profile();
    tsl_workload *w = pc_zoo_workload(model, &dev, adam);
    tsl_autoswap_opts ao = tsl_autoswap_opts_default();
    ao.size_threshold = 0; /* small shapes: the paper's 1 MB would leave little */
    ao.evaluations = th_quick() ? 5 : 10;
    size_t budget = pc_half_way(&w, 1, &dev);
    tsl_plan_opts po = pc_opts("autoswap", &ao, budget);
    pc_result r;
    char what[96];
    snprintf(what, sizeof what, "autoswap %s", model);
    pc_plan_and_check(&w, 1, &dev, &po, what, &r);
    printf("%-12s autoswap: budget %zu, %3d swaps, %2d waits (%7.1f us), peak %zu -> %zu, footprint "
           "%zu (met %d), period %.1f -> %.1f us, %d evaluations, %.1f ms\n",
           model, budget, r.rep.swaps[0], r.waits, r.stall_us, r.rep.vanilla_peak[0],
           r.rep.planned_peak[0], r.p[0]->predicted_footprint, r.rep.budget_met, w->period_us,
           r.p[0]->predicted_period_us, r.rep.iterations, r.rep.planning_ms);
    cr_assert_gt(r.rep.swaps[0], 0, "%s: nothing swapped", model);
    cr_assert_lt(r.rep.planned_peak[0], r.rep.vanilla_peak[0], "%s: no lower peak", model);
    pc_result_free(&r);
    tsl_workload_free(w);
}

Test(autoswap_zoo, mlp) { zoo("mlp", 1); }
Test(autoswap_zoo, cnn) { zoo("cnn", 0); }
Test(autoswap_zoo, vgg11) { zoo("vgg11", 0); }
Test(autoswap_zoo, vgg16) { zoo("vgg16", 1); }
Test(autoswap_zoo, vgg19) { zoo("vgg19", 0); }
Test(autoswap_zoo, resnet18) { zoo("resnet18", 1); }
Test(autoswap_zoo, resnet50, .timeout = 600) { zoo("resnet50", 0); }
Test(autoswap_zoo, inception3, .timeout = 600) { zoo("inception3", 0); }
Test(autoswap_zoo, inception4, .timeout = 600) { zoo("inception4", 1); }
Test(autoswap_zoo, densenet121, .timeout = 600) { zoo("densenet121", 0); }
Test(autoswap_zoo, unet) { zoo("unet", 1); }

Test(autoswap_zoo, several_jobs_and_the_default_options) {
    tsl_device_profile dev = rtf_cpu_profile();
    const char *models[3] = {"cnn", "resnet18", "mlp"};
    tsl_workload *w[3];
    for (int j = 0; j < 3; j++) w[j] = pc_zoo_workload(models[j], &dev, j == 1);
    tsl_autoswap_opts ao = tsl_autoswap_opts_default();
    ao.size_threshold = 0;
    ao.evaluations = th_quick() ? 5 : 12;
    tsl_plan_opts po = pc_opts("autoswap", &ao, pc_half_way(w, 3, &dev));
    pc_result r;
    pc_plan_and_check(w, 3, &dev, &po, "autoswap, 3 jobs", &r);
    int sw = 0;
    for (int j = 0; j < 3; j++) sw += r.rep.swaps[j];
    cr_assert_gt(sw, 0);
    pc_result_free(&r);
    /* the defaults (1 MiB, 30 evaluations) on resnet18 alone */
    po = pc_opts("autoswap", NULL, pc_half_way(&w[1], 1, &dev));
    pc_plan_and_check(&w[1], 1, &dev, &po, "autoswap resnet18, defaults", &r);
    cr_assert_eq(r.rep.iterations, 30);
    pc_result_free(&r);
    for (int j = 0; j < 3; j++) tsl_workload_free(w[j]);
}

/* ---- random workloads ------------------------------------------------------------------ */

static void random_cases(int n_jobs, int cases) {
    int swaps = 0, waits = 0, met = 0;
    for (int s = 1; s <= cases; s++) {
        uint64_t seed = (uint64_t)s * 7919u + (uint64_t)n_jobs * 31u;
        rw_opts o = rw_opts_default();
        if (s % 10 == 3) {
            o.max_fwd = 40;
            o.max_params = 8;
        }
        tsl_workload *w[4];
        cr_assert_eq(rw_generate_jobs(seed, &o, n_jobs, w), 0);
        tsl_device_profile dev = rw_profile(seed);
        uint64_t rs = seed ^ 0x5DEECE66Dull;
        size_t pers = 0, van = 0;
        for (int j = 0; j < n_jobs; j++) {
            pers += rw_persistent_bytes(w[j]);
            van += rw_vanilla_peak(w[j]);
        }
        tsl_autoswap_opts ao = tsl_autoswap_opts_default();
        ao.size_threshold = s % 4 == 0 ? 65536 : 0;
        ao.evaluations = s % 5 == 0 ? 9 : 4;
        ao.score = s % 7 == 1 ? (int)(s % 5) : 0;
        ao.seed = (int)(seed % 1000);
        size_t budget = pers + (size_t)((double)(van - pers) * th_uniform(&rs, 0, 1));
        tsl_plan_opts po = pc_opts("autoswap", &ao, budget ? budget : 1);
        pc_result r;
        char what[96];
        snprintf(what, sizeof what, "autoswap, seed %llu, %d jobs", (unsigned long long)seed,
                 n_jobs);
        pc_plan_and_check(w, n_jobs, &dev, &po, what, &r);
        for (int j = 0; j < n_jobs; j++) swaps += r.rep.swaps[j];
        waits += r.waits;
        met += r.rep.budget_met;
        pc_result_free(&r);
        for (int j = 0; j < n_jobs; j++) rw_free(w[j]);
    }
    printf("autoswap on %d random cases of %d job(s): %d swaps, %d planned waits, budget met in "
           "%d\n", cases, n_jobs, swaps, waits, met);
    cr_assert_gt(swaps, cases / 2, "only %d swaps", swaps);
}

Test(autoswap_random, single_jobs, .timeout = 900) { random_cases(1, th_quick() ? 25 : 120); }
Test(autoswap_random, several_jobs, .timeout = 900) {
    random_cases(2, th_quick() ? 8 : 30);
    random_cases(4, th_quick() ? 4 : 15);
}
