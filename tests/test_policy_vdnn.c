/*
 * test_policy_vdnn.c - the vdnn-conv and vdnn-all policies
 * (src/sched/policy_vdnn.c) and the layers they plan by (layers.c).
 *
 * Known answers on a hand-made 3-layer conv chain (every op 10 us; copies
 * at 1 GB/s with no latency, so a tensor of B bytes copies in B/1000 us;
 * times exact):
 *
 *   tensors  in 1000 (input), w1 w2 w3 100 (parameters), c1 30000, c2 8000,
 *            p2 4000, c3 1000, L 10 (activations), gp2 40000, the other
 *            gradients 1000 (g3, g2, g1) or 100 (dw1..dw3)
 *   op0 conv1 [in, w1] -> c1        op5  loss.dlogits     [L] -> g3
 *   op1 conv2 [c1, w2] -> c2        op6  conv3.bwd_data   [g3, w3] -> gp2
 *   op2 pool2 [c2] -> p2            op7  conv3.bwd_filter [g3, p2] -> dw3
 *   op3 conv3 [p2, w3] -> c3        op8  pool2.bwd        [gp2, c2] -> g2
 *   op4 loss  [c3] -> L             op9  conv2.bwd_data   [g2, w2] -> g1
 *                                   op10 conv2.bwd_filter [g2, c1] -> dw2
 *                                   op11 conv1.bwd_filter [g1, in] -> dw1
 *                                   op12..14 the three SGD updates
 *
 * Op i runs over [10i, 10i + 10]; the period is 150 us. The feature maps
 * the backward reads again are c1 (X of conv2), c2 (X of pool2) and p2 (X
 * of conv3); the input is data and c3 is not read again. Vanilla's peak is
 * 84400 bytes, at op7: in, w1..w3, c1, c2, p2, g3, gp2 and dw3.
 *
 * vdnn-conv offloads the X of the convolutions: c1 when conv2 starts (10,
 * copy [10, 40], released after conv2 once the copy ends: 40), p2 when
 * conv3 starts, behind c1 on the FIFO stream ([40, 44], released at 44).
 * findPrefetchLayer: at loss's backward (op5) it picks conv3 (p2 in at
 * 50, [50, 54], before op7); at conv3's backward (op6) it passes pool2
 * (not offloaded, not a convolution) and picks conv2 (c1 in at 60, [60,
 * 90], before op10 at 100): no wait. c1 is back for op7: the peak stays
 * 84400.
 *
 * vdnn-all offloads pool2's X too: c1 [10, 40]; c2 from pool2's start
 * queues behind it, [40, 48] (released at 48); p2 queues behind both,
 * [48, 52], released after op4 (50) once the copy ends (52). Prefetch one
 * layer ahead: p2 at loss's backward, from its release at 52 ([52, 56]);
 * c2 at conv3's backward (60, [60, 68], before pool2.bwd at 80); c1 at
 * pool2's backward (80, [80, 110]) - conv2.bwd_filter would start at 100
 * and waits 10 us for it: a planned wait, the period 160 us. p2 is
 * released at 52, inside op5, when its copy ends, and swapped in right
 * then (after the free: step 3 after step 1 of that time point). c1 is
 * away during op7 (54400 there); the peak is 80400 at op8, as c1 lands
 * (c1 back, c2, gp2, g2 and the rest).
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
#include "sched/kit.h"
#include "tensile/models.h"
#include "tensile/policy.h"

/* The planning options of a policy of no options, the profile's memory
 * (valid until the next call). */
static const tsl_plan_opts *PC_OPTS(const char *policy) {
    static tsl_plan_opts po;
    po = pc_opts(policy, NULL, 0);
    return &po;
}

/* ---- the hand-made chain ----------------------------------------------------------- */


Test(layers, of_the_chain_by_name) {
    tsl_workload *w = pc_conv_chain();
    tsl__layers L;
    cr_assert_eq(tsl__layers_build(w, &L), TSL_OK);
    cr_assert_eq(L.bwd_begin, 5, "the backward begins at op %d", L.bwd_begin);
    cr_assert_eq(L.bwd_end, 12);
    const int conv[5] = {1, 1, 0, 1, 0};
    for (int f = 0; f < 5; f++) {
        cr_assert_eq(L.layer[f], f);
        cr_assert_eq(L.conv[f], conv[f], "forward op %d: conv %d", f, L.conv[f]);
    }
    /* backward ops to their layers; segments: each forward op, then [5],
     * [6, 7], [8], [9, 10], [11], then each update */
    const int32_t layer[15] = {0, 1, 2, 3, 4, 4, 3, 3, 2, 1, 1, 0, -1, -1, -1};
    const int32_t seg[15] = {0, 1, 2, 3, 4, 5, 6, 6, 7, 8, 8, 9, 10, 11, 12};
    for (int i = 0; i < 15; i++) {
        cr_assert_eq(L.layer[i], layer[i], "op %d: layer %d, expected %d", i, L.layer[i], layer[i]);
        cr_assert_eq(L.seg[i], seg[i], "op %d: segment %d, expected %d", i, L.seg[i], seg[i]);
    }
    cr_assert_eq(L.n_seg, 13);
    const int32_t bwd[5] = {11, 9, 8, 6, 5};
    for (int f = 0; f < 5; f++) cr_assert_eq(L.bwd_start[f], bwd[f], "layer %d", f);
    tsl__layers_free(&L);
    rw_free(w);
}

Test(layers, gradient_sums_join_the_group_before_them) {
    /* resnet18's graph: "<tensor>.grad_acc" adds belong to the group of the
     * backward op before them; on names matching no forward op every
     * backward op is a layer of its own */
    tsl_device_profile dev = rtf_cpu_profile();
    tsl_workload *w = pc_zoo_workload("resnet18", &dev, 0);
    tsl__layers L;
    cr_assert_eq(tsl__layers_build(w, &L), TSL_OK);
    int sums = 0, convs = 0, updates = 0;
    for (int32_t i = L.bwd_begin; i < L.bwd_end; i++) {
        int32_t before = i - 1; /* the op before, passing over updates */
        while (before > L.bwd_begin && strstr(w->ops[before].name, ".sgd")) before--;
        if (strstr(w->ops[i].name, ".sgd")) { /* an update in the backward: on its own */
            updates++;
            cr_assert(L.layer[i] < 0 && L.seg_start[L.seg[i]] == i &&
                      (i + 1 == L.n_ops || L.seg[i + 1] != L.seg[i]), "'%s'", w->ops[i].name);
        } else if (strstr(w->ops[i].name, ".grad_acc")) {
            sums++;
            cr_assert_eq(L.layer[i], L.layer[before], "'%s' is not in its group",
                         w->ops[i].name);
            if (before == i - 1)
                cr_assert_eq(L.seg[i], L.seg[i - 1], "'%s' starts a segment", w->ops[i].name);
        } else
            cr_assert_geq(L.layer[i], 0, "backward op '%s' has no layer", w->ops[i].name);
    }
    cr_assert_gt(updates, 0, "no update in the backward pass");
    for (int32_t f = 0; f < L.bwd_begin; f++) convs += L.conv[f];
    cr_assert_gt(sums, 0);
    cr_assert_eq(convs, 20, "resnet18 has 20 convolutions, found %d", convs);
    tsl__layers_free(&L);
    for (int32_t i = 0; i < w->n_ops; i++) snprintf(w->ops[i].name, sizeof w->ops[i].name, "op%d", i);
    cr_assert_eq(tsl__layers_build(w, &L), TSL_OK);
    for (int32_t i = L.bwd_begin + 1; i < L.bwd_end; i++)
        cr_assert_eq(L.seg[i], L.seg[i - 1] + 1, "op %d", i);
    for (int32_t f = 0; f < L.bwd_begin; f++) cr_assert(!L.conv[f] && L.bwd_start[f] < 0);
    tsl__layers_free(&L);
    tsl_workload_free(w);
}

Test(vdnn, conv_offloads_the_convolutions_inputs_and_prefetches_a_convolution_ahead) {
    tsl_workload *w = pc_conv_chain();
    tsl_device_profile dev = pc_exact_profile();
    pc_result r;
    pc_plan_and_check(&w, 1, &dev, PC_OPTS("vdnn-conv"), "vdnn-conv chain", &r);
    const tsl_event want[] = {
        pc_ev(TSL_EV_SWAP_OUT, CH_C1, 0, 0, -1), pc_ev(TSL_EV_RELEASE, CH_C1, 1, 0, -1),
        pc_ev(TSL_EV_SWAP_OUT, CH_P2, 3, 0, -1), pc_ev(TSL_EV_RELEASE, CH_P2, 3, 0, -1),
        pc_ev(TSL_EV_SWAP_IN, CH_P2, 4, 0, 7),   pc_ev(TSL_EV_SWAP_IN, CH_C1, 5, 0, 10),
    };
    pc_expect_events(r.p[0], want, 6, "vdnn-conv");
    cr_assert_eq(r.waits, 0);
    cr_assert_eq(r.p[0]->predicted_period_us, 150.0);
    cr_assert_eq(r.rep.vanilla_peak[0], 84400);
    cr_assert_eq(r.rep.planned_peak[0], 84400);
    pc_result_free(&r);
    rw_free(w);
}

Test(vdnn, all_offloads_every_layers_input_and_waits_for_a_late_prefetch) {
    tsl_workload *w = pc_conv_chain();
    tsl_device_profile dev = pc_exact_profile();
    pc_result r;
    pc_plan_and_check(&w, 1, &dev, PC_OPTS("vdnn-all"), "vdnn-all chain", &r);
    const tsl_event want[] = {
        pc_ev(TSL_EV_SWAP_OUT, CH_C1, 0, 0, -1), pc_ev(TSL_EV_RELEASE, CH_C1, 1, 0, -1),
        pc_ev(TSL_EV_SWAP_OUT, CH_C2, 3, 0, -1), pc_ev(TSL_EV_RELEASE, CH_C2, 3, 0, -1),
        pc_ev(TSL_EV_SWAP_OUT, CH_P2, 3, 8, -1), pc_ev(TSL_EV_RELEASE, CH_P2, 4, 0, -1),
        pc_ev(TSL_EV_SWAP_IN, CH_P2, 4, 2, 7),   pc_ev(TSL_EV_SWAP_IN, CH_C2, 5, 0, 8),
        pc_ev(TSL_EV_SWAP_IN, CH_C1, 7, 0, 10),
    };
    pc_expect_events(r.p[0], want, 9, "vdnn-all");
    cr_assert_eq(r.waits, 1, "%d planned waits", r.waits);
    cr_assert_eq(r.stall_us, 10.0, "stall %.17g us, expected 10", r.stall_us);
    cr_assert_eq(r.p[0]->predicted_period_us, 160.0);
    cr_assert_eq(r.rep.planned_peak[0], 80400);
    pc_result_free(&r);
    rw_free(w);
}

Test(vdnn, ignores_the_budget_and_has_no_options) {
    tsl_workload *w = pc_conv_chain();
    tsl_device_profile dev = pc_exact_profile();
    const tsl_policy *p = tsl_policy_find("vdnn-all");
    cr_assert_not_null(p);
    cr_assert_eq(p->n_options, 0);
    tsl_policy_opts *o;
    cr_assert_eq(tsl_policy_opts_new(p, &o), TSL_OK);
    cr_assert_eq(tsl_policy_opts_set(o, "seed", "1"), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "policy 'vdnn-all' has no option 'seed'"), "%s",
              tsl_last_error());
    tsl_policy_opts_free(o);
    /* a budget below its plan: the same plan, reported unmet */
    tsl_plan_opts po = tsl_plan_opts_default();
    po.policy = p;
    po.budget = 1000;
    tsl_plan *plan;
    tsl_plan_report rep;
    cr_assert_eq(tsl_plan_jobs(&w, 1, &dev, &po, &plan, &rep), TSL_ERR_BUDGET);
    cr_assert_eq(plan->n_events, 9);
    cr_assert_eq(rep.budget_met, 0);
    tsl_plan_free(plan);
    tsl_plan_report_free(&rep);
    rw_free(w);
}

/* ---- the zoo ----------------------------------------------------------------------- */

static void zoo(const char *model, int adam) {
    tsl_device_profile dev = rtf_cpu_profile();
    tsl_workload *w = pc_zoo_workload(model, &dev, adam);
    const char *pol[2] = {"vdnn-conv", "vdnn-all"};
    int swaps[2];
    for (int k = 0; k < 2; k++) {
        pc_result r;
        char what[96];
        snprintf(what, sizeof what, "%s %s", pol[k], model);
        pc_plan_and_check(&w, 1, &dev, PC_OPTS(pol[k]), what, &r);
        swaps[k] = r.rep.swaps[0];
        printf("%-12s %-9s %3d swaps, %3d waits (%8.1f us), peak %zu -> %zu, period %.1f -> "
               "%.1f us\n",
               model, pol[k], r.rep.swaps[0], r.waits, r.stall_us, r.rep.vanilla_peak[0],
               r.rep.planned_peak[0], w->period_us, r.p[0]->predicted_period_us);
        pc_result_free(&r);
    }
    /* every model but the mlp has convolutions whose inputs come back */
    if (strcmp(model, "mlp")) cr_assert_gt(swaps[0], 0, "%s: vdnn-conv swaps nothing", model);
    cr_assert_gt(swaps[1], 0, "%s: vdnn-all swaps nothing", model);
    tsl_workload_free(w);
}

Test(vdnn_zoo, mlp) { zoo("mlp", 1); }
Test(vdnn_zoo, cnn) { zoo("cnn", 0); }
Test(vdnn_zoo, vgg11) { zoo("vgg11", 0); }
Test(vdnn_zoo, vgg16) { zoo("vgg16", 1); }
Test(vdnn_zoo, vgg19) { zoo("vgg19", 0); }
Test(vdnn_zoo, resnet18) { zoo("resnet18", 1); }
Test(vdnn_zoo, resnet50) { zoo("resnet50", 0); }
Test(vdnn_zoo, inception3) { zoo("inception3", 0); }
Test(vdnn_zoo, inception4, .timeout = 600) { zoo("inception4", 1); }
Test(vdnn_zoo, densenet121) { zoo("densenet121", 0); }
Test(vdnn_zoo, unet) { zoo("unet", 1); }

Test(vdnn_zoo, several_jobs_share_the_channels) {
    tsl_device_profile dev = rtf_cpu_profile();
    const char *models[3] = {"cnn", "resnet18", "mlp"};
    tsl_workload *w[3];
    for (int j = 0; j < 3; j++) w[j] = pc_zoo_workload(models[j], &dev, j == 1);
    for (int k = 0; k < 2; k++) {
        pc_result r;
        const char *pol = k ? "vdnn-all" : "vdnn-conv";
        pc_plan_and_check(w, 3, &dev, PC_OPTS(pol), pol, &r);
        int sw = 0;
        for (int j = 0; j < 3; j++) sw += r.rep.swaps[j];
        cr_assert_gt(sw, 0);
        pc_result_free(&r);
    }
    for (int j = 0; j < 3; j++) tsl_workload_free(w[j]);
}

/* ---- random workloads -------------------------------------------------------------- */

static void random_cases(int n_jobs, int cases) {
    int swaps = 0, waits = 0, with = 0;
    for (int s = 1; s <= cases; s++) {
        uint64_t seed = (uint64_t)s * 1000003u + (uint64_t)n_jobs;
        rw_opts o = rw_opts_default();
        if (s % 10 == 3) {
            o.max_fwd = 40;
            o.max_params = 8;
        }
        tsl_workload *w[4];
        cr_assert_eq(rw_generate_jobs(seed, &o, n_jobs, w), 0);
        tsl_device_profile dev = rw_profile(seed);
        for (int k = 0; k < 2; k++) {
            pc_result r;
            char what[96];
            snprintf(what, sizeof what, "%s, seed %llu, %d jobs", k ? "vdnn-all" : "vdnn-conv",
                     (unsigned long long)seed, n_jobs);
            pc_plan_and_check(w, n_jobs, &dev, PC_OPTS(k ? "vdnn-all" : "vdnn-conv"), what, &r);
            for (int j = 0; j < n_jobs; j++) swaps += r.rep.swaps[j];
            waits += r.waits;
            with += r.waits > 0;
            pc_result_free(&r);
        }
        for (int j = 0; j < n_jobs; j++) rw_free(w[j]);
    }
    printf("vdnn on %d random cases of %d job(s): %d swaps, %d planned waits (%d plans with "
           "waits)\n", cases, n_jobs, swaps, waits, with);
    cr_assert_gt(swaps, cases / 2, "only %d swaps", swaps);
    cr_assert_gt(with, 0, "no random plan waits");
}

Test(vdnn_random, single_jobs, .timeout = 900) { random_cases(1, th_quick() ? 30 : 150); }
Test(vdnn_random, several_jobs, .timeout = 900) {
    random_cases(2, th_quick() ? 10 : 40);
    random_cases(4, th_quick() ? 5 : 20);
}
