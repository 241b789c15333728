/*
 * test_policy_capuchin.c - the "capuchin" policy (src/sched/policy_capuchin.c,
 * drafts.c): hidden swaps by free time first, then swap or chained
 * recomputation by memory saving per second, until the budget.
 *
 * A hand-made job (every op 10 us; copies at 1 GB/s, no latency: B bytes
 * copy in B/1000 us; times exact):
 *
 *   tensors  in 100 (input), w 2000 (parameter), a 10000, b 20000, c 5000,
 *            d 30000, gc gb 1000, gw 2000
 *   op0 f1 [in, w] -> a     op4 b3 [d, c] -> gc
 *   op1 f2 [a] -> b         op5 b2 [gc, b] -> gb
 *   op2 f3 [b] -> c         op6 b1 [gb, a, w, in] -> gw
 *   op3 big [c] -> d        op7 upd [w, gw] -> w
 *
 * Vanilla's peak is 68100 at op4 (in, w, a, b, c, d, gc). The candidates
 * there (resident, accessed on both sides of op4, not op4's): w (op0 ..
 * op6), a (op1 .. op6), b (op2 .. op5). A swap-out must have freed its
 * tensor by the peak (40), a swap-in start once op4 has ended (50): b's
 * swap-out, from op2's end (30) for 20 us, cannot free it in time, and b
 * is never swapped.
 *
 * Budget 60000. Round 1: w's swap hides with the largest free time (out
 * [10, 12], in [58, 60] landing by op6 at 60; FT 46; a's would be [50,
 * 60] from [20, 30], FT 20), released by its evicted access op0, taking
 * effect as its copy ends (12): 66100. Round 2: nothing else hides (w's
 * swap-in holds [58, 60]); by memory saving per second, b's recomputation
 * before op5 (20000 B in 10 us: 2000 B/us) beats a's swap as early as the
 * channel allows ([60, 70], op6 waiting 10 us: 1000 B/us; a cannot be
 * recomputed: its producer reads w, landing only at 60): b is released
 * after op2 and re-made before op5. The peak is 46100 at op4, the period
 * 80 + 10 us, no wait.
 *
 * Recomputation only, budget 40000: b first (as above: 48100), then a
 * would be released after op1 and recomputed before op6 - but b's
 * recomputation before op5 reads a: the commit is undone, and the budget
 * is not met.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "policy_check.h"
#include "random_workload.h"
#include "rt_fixture.h"
#include "tensile/policy_capuchin.h"

enum { IN, W, A, B, C, D, GC, GB, GW };

static tsl_workload *job(void) {
    rw_builder *bl = rw_build_begin("cap");
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
    rw_build_op(bl, "b1", 10.0, 0, (const int32_t[]){GB, A, W, IN}, 4, (const int32_t[]){GW}, 1);
    rw_build_mark_optimizer(bl);
    PC_OP(bl, "upd", PC_L2(W, GW), PC_L1(W));
    tsl_workload *w = rw_build_end(bl);
    cr_assert_not_null(w);
    char why[256];
    cr_assert_eq(rw_check(w, why, sizeof why), 0, "%s", why);
    return w;
}

static tsl_plan_opts exact_opts(const tsl_capuchin_opts *co, size_t budget) {
    tsl_plan_opts po = pc_opts("capuchin", co, budget);
    po.layout_align = 1;
    return po;
}

Test(capuchin, hidden_swap_by_free_time_then_msps) {
    tsl_workload *w = job();
    tsl_device_profile dev = pc_exact_profile();
    tsl_plan_opts po = exact_opts(NULL, 60000);
    pc_result r;
    pc_plan_and_check(&w, 1, &dev, &po, "capuchin at 60000", &r);
    const tsl_event want[] = {
        pc_ev(TSL_EV_RECOMPUTE, B, -1, 0, 5), pc_ev(TSL_EV_SWAP_OUT, W, 0, 0, -1),
        pc_ev(TSL_EV_RELEASE, W, 0, 0, -1),   pc_ev(TSL_EV_RELEASE, B, 2, 0, -1),
        pc_ev(TSL_EV_SWAP_IN, W, 4, 8, 6)};
    pc_expect_events(r.p[0], want, 5, "capuchin at 60000");
    cr_expect_eq(r.rep.vanilla_peak[0], 68100);
    cr_expect_eq(r.rep.planned_peak[0], 46100, "%zu", r.rep.planned_peak[0]);
    cr_expect_eq(r.waits, 0);
    cr_expect_eq(r.p[0]->predicted_period_us, 90.0, "%g", r.p[0]->predicted_period_us);
    cr_expect_eq(r.rep.iterations, 2, "one choice per round: w, then b");
    pc_result_free(&r);
    rw_free(w);
}

/* Recomputations only, at 40000: b is recomputed before b2 (from a),
 * then a, whose back access is b1. Released after f2, a must be back
 * before b2, where b's recomputation reads it: its recomputation runs
 * there, before b's (docs/SCHEDULING.md, "Where the recomputation runs"),
 * not before b1, which would leave b's recomputation without its input
 * (such a commit is undone: the plan then kept a resident and peaked at
 * 48100, above the budget). The peak is b3's: 2100 persistent + d 30000
 * + c 5000 + gc 1000. */
Test(capuchin, a_recomputation_never_loses_its_inputs) {
    tsl_workload *w = job();
    tsl_device_profile dev = pc_exact_profile();
    tsl_capuchin_opts co = tsl_capuchin_opts_default();
    co.swap = 0;
    tsl_plan_opts po = exact_opts(&co, 40000);
    pc_result r;
    pc_plan_and_check(&w, 1, &dev, &po, "capuchin recomputing at 40000", &r);
    const tsl_event want[] = {
        pc_ev(TSL_EV_RECOMPUTE, A, -1, 0, 5), pc_ev(TSL_EV_RECOMPUTE, B, -1, 0, 5),
        pc_ev(TSL_EV_RELEASE, A, 1, 0, -1), pc_ev(TSL_EV_RELEASE, B, 2, 0, -1)};
    pc_expect_events(r.p[0], want, 4, "capuchin recomputing at 40000");
    cr_expect_eq(r.rep.planned_peak[0], 38100, "%zu", r.rep.planned_peak[0]);
    cr_expect(r.rep.budget_met);
    pc_result_free(&r);
    rw_free(w);
}

Test(capuchin, no_pressure_no_events) {
    tsl_workload *w = job();
    tsl_device_profile dev = pc_exact_profile();
    tsl_plan_opts po = exact_opts(NULL, 0);
    pc_result r;
    pc_plan_and_check(&w, 1, &dev, &po, "capuchin, no pressure", &r);
    cr_assert_eq(r.p[0]->n_events, 0);
    cr_assert_eq(r.rep.iterations, 0);
    pc_result_free(&r);
    rw_free(w);
}

Test(capuchin, options_by_name_and_defaults) {
    tsl_capuchin_opts d = tsl_capuchin_opts_default();
    cr_assert(d.swap == 1 && d.recompute == 1 && d.min_bytes == -1.0);
    const tsl_policy *p = tsl_policy_find("capuchin");
    cr_assert_not_null(p);
    tsl_policy_opts *o;
    cr_assert_eq(tsl_policy_opts_new(p, &o), TSL_OK);
    cr_assert_eq(tsl_policy_opts_set(o, "recompute", "no"), TSL_OK);
    cr_assert_eq(tsl_policy_opts_set(o, "min-bytes", "4096"), TSL_OK);
    const tsl_capuchin_opts *v = tsl_policy_opts_values(o);
    cr_assert(v->swap == 1 && v->recompute == 0 && v->min_bytes == 4096.0);
    cr_assert_neq(tsl_policy_opts_set(o, "min-bytes", "-2"), TSL_OK);
    cr_assert(strstr(tsl_last_error(), "min-bytes"), "%s", tsl_last_error());
    cr_assert_neq(tsl_policy_opts_set(o, "swap-in-slack", "1"), TSL_OK);
    tsl_policy_opts_free(o);
}

/* ---- the zoo and random jobs ---------------------------------------------------------- */



/* Capuchin on zoo model `model` half way down, with swaps (and
 * recomputations; pc_zoo_workload's shapes) or recomputations only (batch
 * 16, 64x64 images); returns the chained recomputations. */
static int zoo(const char *model, int adam, int swap) {
    tsl_device_profile dev = rtf_cpu_profile();
    tsl_workload *w = swap ? pc_zoo_workload(model, &dev, adam)
                           : pc_zoo_workload_at(model, &dev, adam, 16, 64);
    tsl_capuchin_opts co = tsl_capuchin_opts_default();
    co.swap = swap;
    co.min_bytes = 0; /* small shapes: every size a candidate (the paper) */
    tsl_plan_opts po = pc_opts("capuchin", &co, pc_half_way(&w, 1, &dev));
    pc_result r;
    char what[96];
    snprintf(what, sizeof what, "capuchin %s%s", model, swap ? "" : " (recompute only)");
    pc_plan_and_check(&w, 1, &dev, &po, what, &r);
    int ch = pc_chained(w, r.p[0]);
    printf("%-12s capuchin%s: budget %zu, %3d swaps, %3d recomputations (%d chained), %2d waits, "
           "peak %zu -> %zu (met %d), period %.1f -> %.1f us, %d rounds\n",
           model, swap ? "" : " (rc only)", po.budget, r.rep.swaps[0], r.rep.recomputes[0], ch,
           r.waits, r.rep.vanilla_peak[0], r.rep.planned_peak[0], r.rep.budget_met, w->period_us,
           r.p[0]->predicted_period_us, r.rep.iterations);
    if (!swap) cr_assert_eq(r.rep.swaps[0], 0, "%s: swapped with swap 0", what);
    cr_assert_gt(r.rep.swaps[0] + r.rep.recomputes[0], 0, "%s: nothing planned", what);
    cr_assert_lt(r.rep.planned_peak[0], r.rep.vanilla_peak[0], "%s: no lower peak", what);
    pc_result_free(&r);
    tsl_workload_free(w);
    return ch;
}

Test(capuchin_zoo, mlp) { zoo("mlp", 1, 1); }
Test(capuchin_zoo, cnn) { zoo("cnn", 0, 1); }
Test(capuchin_zoo, resnet18) { zoo("resnet18", 1, 1); }
Test(capuchin_zoo, vgg11) { zoo("vgg11", 0, 1); }
Test(capuchin_zoo, densenet121, .timeout = 600) { zoo("densenet121", 0, 1); }
Test(capuchin_zoo, recomputation_only_chains, .timeout = 600) {
    /* at batch 16, 64x64: activations worth recomputing */
    int ch = zoo("densenet121", 0, 0) + zoo("resnet18", 0, 0);
    cr_assert_gt(ch, 0, "no chained recomputation in densenet121 nor resnet18");
}

Test(capuchin_random, random_jobs_verify, .timeout = 600) {
    rw_opts o = rw_opts_default();
    int n = th_quick() ? 20 : 60, planned = 0;
    for (int s = 1; s <= n; s++) {
        tsl_workload *w[2];
        int nj = 1 + s % 2;
        cr_assert_eq(rw_generate_jobs((uint64_t)s, &o, nj, w), 0);
        tsl_device_profile dev = rw_profile((uint64_t)s);
        tsl_plan_opts po = pc_opts("capuchin", NULL, pc_half_way(w, nj, &dev));
        pc_result r;
        char what[64];
        snprintf(what, sizeof what, "capuchin random seed %d (%d jobs)", s, nj);
        pc_plan_and_check(w, nj, &dev, &po, what, &r);
        for (int j = 0; j < nj; j++) planned += r.p[j]->n_events > 0;
        pc_result_free(&r);
        for (int j = 0; j < nj; j++) rw_free(w[j]);
    }
    cr_assert_gt(planned, 0, "no random job got a single event");
}
