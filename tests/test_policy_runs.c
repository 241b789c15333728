/*
 * test_policy_runs.c - the baseline policies' plans (vdnn-conv, vdnn-all,
 * autoswap, capuchin, dtr, checkmate, str, mosos) run by the runtime: DESIGN.md invariant 5 (no
 * policy changes the results) and the plans' predictions.
 *
 * Per model (small shapes, rt_fixture.h: batch 2, 10 classes, CPU-like
 * test profile): the vanilla executor's 3 iterations give the reference
 * parameter checksum; then each policy's plan (autoswap, capuchin, checkmate, str and
 * mosos half way from the persistent bytes to vanilla's peak with every tensor a
 * candidate - autoswap with 8 weightings; vDNN at the profile's memory) runs the
 * same 3 iterations in a fresh session with the runtime attached:
 *  - in the virtual clock (latencies exact): the parameters are vanilla's
 *    bit for bit, and every iteration holds exactly the plan's predicted
 *    peak load and footprint and lasts exactly its predicted period - the
 *    planned waits included;
 *  - for mlp and cnn also in the real-time clock with the copy channels
 *    throttled to the profile's rate: the parameters are vanilla's and the
 *    peak load never exceeds the predicted one.
 * DTR only recomputes, and at batch 2 these models' peaks are their
 * parameters and gradients: its runs are densenet121 and resnet18 at
 * batch 4 and 8 (32x32), within 90 % of vanilla's peak - plans with
 * (chained) recomputations, checked the same way.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "policy_check.h"
#include "rt_fixture.h"
#include "tensile/policy_autoswap.h"
#include "tensile/policy_capuchin.h"
#include "tensile/verify.h"

/* Set by a test that needs recomputations of multi-output producers (batch
 * norm's outputs: their block carries the scratch of the other outputs). */
static int want_multi_rc;

static void run_policy(rtf_case *c, const char *policy, int realtime) {
    tsl_autoswap_opts ao = tsl_autoswap_opts_default();
    ao.size_threshold = 0;
    ao.evaluations = 8;
    tsl_capuchin_opts co = tsl_capuchin_opts_default();
    co.min_bytes = 0; /* small shapes: every size a candidate (the paper) */
    int as = !strcmp(policy, "autoswap"), cap = !strcmp(policy, "capuchin");
    /* the budgeted policies half way from the persistent bytes to vanilla's peak */
    int half = as || cap || !strcmp(policy, "checkmate") || !strcmp(policy, "str") ||
               !strcmp(policy, "mosos");
    size_t budget = half ? c->persistent + (c->ref_peak - c->persistent) / 2 : 0;
    if (!strcmp(policy, "dtr")) budget = c->ref_peak / 10 * 9;
    tsl_plan *p = rtf_policy_plan(c, policy, as ? (const void *)&ao : cap ? (const void *)&co : NULL,
                                  budget);
    if (as || cap || !strcmp(policy, "dtr"))
        cr_assert_gt(p->n_events, 0, "%s %s: an empty plan", c->model, policy);
    int multi = pc_multi_output_recomputes(c->w, p);
    if (want_multi_rc)
        cr_assert_gt(multi, 0, "%s %s: no recomputation of a multi-output producer's output",
                     c->model, policy);
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(c->w, p, &c->dev, &pi), TSL_OK, "%s", tsl_last_error());
    char what[96];
    snprintf(what, sizeof what, "%s plan (%d events, %d waits)", policy, p->n_events, pi.n_waits);
    rtf_run o;
    rtf_run_plan(c, p, 1, 0, what, &o);
    cr_assert_eq(o.checksum, c->ref, "%s %s: parameters %016llx differ from vanilla's %016llx",
                 c->model, what, (unsigned long long)o.checksum, (unsigned long long)c->ref);
    cr_assert_gt(p->n_blocks, 0, "%s %s: no layout", c->model, what);
    for (int k = 0; k < RTF_ITERS; k++) {
        cr_assert_eq(o.peak[k], p->predicted_peak,
                     "%s %s: iteration %d peak %zu, predicted %zu (difference %lld)", c->model,
                     what, k + 1, o.peak[k], p->predicted_peak,
                     (long long)o.peak[k] - (long long)p->predicted_peak);
        cr_assert_eq(o.fp[k], p->predicted_footprint,
                     "%s %s: iteration %d footprint %zu, predicted %zu", c->model, what, k + 1,
                     o.fp[k], p->predicted_footprint);
        double want = p->predicted_period_us * 1e-3;
        cr_assert(o.ms[k] >= want - 1e-9 * want - 1e-9 && o.ms[k] <= want + 1e-9 * want + 1e-9,
                  "%s %s: iteration %d lasted %.9f ms, the plan's period is %.9f ms", c->model,
                  what, k + 1, o.ms[k], want);
    }
    printf("%-10s %-9s %3d events (%d recomputations of a multi-output op's output), %2d waits "
           "(%.1f us): virtual clock identical to vanilla %016llx, peak %zu of vanilla's %zu, "
           "period %.1f us",
           c->model, policy, p->n_events, multi, pi.n_waits, pi.stall_us, (unsigned long long)c->ref,
           p->predicted_peak, c->ref_peak, p->predicted_period_us);
    if (realtime) {
        rtf_run_plan(c, p, 0, c->dev.h2d_bw / 1e9, "real-time clock", &o);
        cr_assert_eq(o.checksum, c->ref, "%s %s real-time: parameters differ from vanilla's",
                     c->model, policy);
        for (int k = 0; k < RTF_ITERS; k++)
            cr_assert_leq(o.peak[k], p->predicted_peak,
                          "%s %s real-time: iteration %d peak %zu exceeds the predicted %zu",
                          c->model, policy, k + 1, o.peak[k], p->predicted_peak);
        printf("; real time identical, %lld stalls (%.2f ms)", (long long)o.rs.stalls,
               o.rs.stall_ms);
    }
    printf("\n");
    tsl_peak_info_free(&pi);
    tsl_plan_free(p);
}

static void check_model(const char *model, int adam, int realtime) {
    rtf_case c;
    rtf_zoo_case(&c, model, adam);
    run_policy(&c, "vdnn-conv", realtime);
    run_policy(&c, "vdnn-all", realtime);
    run_policy(&c, "autoswap", realtime);
    run_policy(&c, "capuchin", realtime);
    /* the stage-model policies on the smaller graphs (densenet121's 2400 ops
     * took the test past its 600 s; unet has a test of its own below) */
    if (!strcmp(model, "mlp") || !strcmp(model, "cnn") || !strcmp(model, "resnet18")) {
        run_policy(&c, "checkmate", realtime);
        run_policy(&c, "str", realtime);
        run_policy(&c, "mosos", realtime);
    }
    rtf_free(&c);
}

/* DTR's plans recompute batch norm's outputs too (several outputs: the
 * others go to scratch in the recomputation's block, remat.h), exactly as
 * planned. */
static void check_dtr(const char *model, int batch) {
    rtf_case c;
    rtf_zoo_case_at(&c, model, 0, batch, 32);
    want_multi_rc = 1;
    run_policy(&c, "dtr", 0);
    want_multi_rc = 0;
    rtf_free(&c);
}

Test(baseline_runs, mlp, .timeout = 600) { check_model("mlp", 1, 1); }
Test(baseline_runs, cnn, .timeout = 600) { check_model("cnn", 0, 1); }
Test(baseline_runs, resnet18, .timeout = 600) { check_model("resnet18", 1, 0); }
Test(baseline_runs, vgg11, .timeout = 600) {
    if (th_quick()) cr_skip_test("vgg11 runs in the release build (TSL_TEST_QUICK is set)");
    check_model("vgg11", 0, 0);
}
Test(baseline_runs, densenet121, .timeout = 600) {
    if (th_quick()) cr_skip_test("densenet121 runs in the release build (TSL_TEST_QUICK is set)");
    check_model("densenet121", 0, 0);
}
Test(baseline_runs, dtr_resnet18, .timeout = 600) { check_dtr("resnet18", 8); }
Test(baseline_runs, dtr_densenet121, .timeout = 600) {
    if (th_quick()) cr_skip_test("DTR on densenet121 runs in the release build (TSL_TEST_QUICK is set)");
    check_dtr("densenet121", 4);
}

/* checkmate's recomputations run for real: unet's pool outputs, recomputed
 * from the ReLU outputs the backward keeps */
Test(baseline_runs, unet_checkmate, .timeout = 600) {
    rtf_case c;
    rtf_zoo_case(&c, "unet", 0);
    run_policy(&c, "checkmate", 0);
    run_policy(&c, "mosos", 0);
    rtf_free(&c);
}
