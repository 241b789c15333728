/*
 * test_runtime_dtr.c - DTR online in the runtime (tsl_runtime_opts.remat,
 * src/runtime/remat_online.c): the empty plan followed in a device smaller
 * than vanilla's peak, tensors dropped without copies by h and regenerated
 * by re-running their producers when read.
 *
 * Per model (resnet18 at batch 8 and densenet121 at batch 4, 32x32, SGD;
 * rt_fixture.h) in a device of the persistent bytes plus a fraction of
 * what vanilla holds beyond them, RTF_ITERS iterations:
 *  - the parameters are vanilla's bit for bit (DESIGN.md invariant 5: a
 *    regenerated tensor is its first value);
 *  - the load never exceeds the device (the ledger's peak);
 *  - DTR dropped and regenerated tensors (the mode is not a no-op), and
 *    regenerated no more often than something read a dropped tensor;
 *  - on the virtual clock and in real time (the Swap Executor's threads,
 *    kernels possibly late: the late-kernel twin), which TSan runs too.
 * The same device without remat evicts by passive swap-outs instead: the
 * flag is what makes the drops.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "plan_gen.h"
#include "rt_fixture.h"

/* The empty plan, finished and verified for c's workload. */
static tsl_plan *empty_plan(const rtf_case *c) {
    tsl_plan *p = tsl_plan_new(c->model);
    cr_assert_not_null(p);
    char why[400];
    cr_assert(pg_finish_and_verify(c->w, p, &c->dev, why, sizeof why), "%s: %s", c->model, why);
    return p;
}

/* RTF_ITERS iterations of the empty plan in a device of `capacity` bytes
 * with DTR on (remat) or off; the stats into *rs, the checksum returned. */
static uint64_t run(const rtf_case *c, size_t capacity, int remat, int vclock, size_t *peak,
                    tsl_runtime_stats *rs) {
    tsl_plan *p = empty_plan(c);
    tsl_runtime_opts ro = tsl_runtime_opts_default();
    ro.virtual_clock = vclock;
    ro.remat = remat;
    ro.online_placement = 1;
    char what[64];
    snprintf(what, sizeof what, "dtr remat=%d vclock=%d", remat, vclock);
    tsl_session *s = rtf_open_runtime_with(c, capacity, p, &ro, 0, what);
    *peak = 0;
    for (int k = 0; k < RTF_ITERS; k++) {
        tsl_step_stats st;
        cr_assert_eq(tsl_session_step(s, c->x[k], c->y[k], &st), TSL_OK, "%s %s: step %d: %s",
                     c->model, what, k + 1, tsl_last_error());
        if (st.peak_load > *peak) *peak = st.peak_load;
    }
    tsl_session_runtime_stats(s, rs);
    uint64_t sum = tsl_session_param_checksum(s);
    tsl_session_free(s);
    tsl_plan_free(p);
    return sum;
}

/* cnn with its updates after the backward pass (TH_UPDATES_AFTER): with
 * them in the backward (the default) the update of fc1's weight (weight,
 * gradient, momentum: one op's working set) is nearly all of vanilla's
 * peak, so the devices this test takes as fractions of the activations
 * would be below what that op needs. */
static void check_model(const char *model, int batch, double frac) {
    rtf_case c;
    rtf_zoo_case_at(&c, model, strcmp(model, "cnn") ? 0 : TH_UPDATES_AFTER, batch, 32);
    size_t cap = c.persistent + (size_t)(frac * (double)(c.ref_peak - c.persistent));
    for (int vclock = 1; vclock >= 0; vclock--) {
        size_t peak;
        tsl_runtime_stats rs;
        uint64_t sum = run(&c, cap, 1, vclock, &peak, &rs);
        cr_log_info("%s b%d vclock=%d: device %zu of vanilla's %zu: peak %zu, %lld drops, %lld "
                    "remats, %lld evictions", model, batch, vclock, cap, c.ref_peak, peak,
                    (long long)rs.drops, (long long)rs.remats, (long long)rs.evictions);
        cr_expect_eq(sum, c.ref, "%s vclock=%d: parameters differ from vanilla's", model, vclock);
        cr_expect_leq(peak, cap, "%s vclock=%d: peak %zu above the device's %zu", model, vclock,
                      peak, cap);
        cr_expect_gt(rs.drops, 0, "%s vclock=%d: nothing dropped", model, vclock);
        cr_expect_gt(rs.remats, 0, "%s vclock=%d: nothing regenerated", model, vclock);
        cr_expect_eq(rs.recomputes, 0, "%s: the empty plan recomputes nothing", model);
        cr_expect_eq(rs.swaps_in + rs.swaps_out, 0, "%s: the empty plan swaps nothing", model);
        if (vclock) { /* the same device without remat: no drops, passive swap-outs */
            size_t p0;
            tsl_runtime_stats r0;
            uint64_t s0 = run(&c, cap, 0, 1, &p0, &r0);
            cr_expect_eq(s0, c.ref, "%s without remat: parameters differ", model);
            cr_expect_eq(r0.drops + r0.remats, 0, "%s without remat: DTR ran", model);
            cr_expect_gt(r0.evictions, 0, "%s without remat: the device is not too small", model);
        }
    }
    rtf_free(&c);
}

/* a small convolutional net: its activations dropped and regenerated one by one */
Test(runtime_dtr, cnn_in_70_percent, .timeout = 600) { check_model("cnn", 8, 0.7); }

/* concatenations: chains of regenerations (a dropped input of a producer
 * re-run is regenerated first) */
Test(runtime_dtr, densenet121_in_60_percent, .timeout = 600) {
    check_model("densenet121", 2, 0.6);
}
