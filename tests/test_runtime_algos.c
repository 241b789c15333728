/*
 * test_runtime_algos.c - the runtime executes a plan's algorithm choices
 * (docs/SCHEDULING.md, "Algorithms"), and invariant 5 as it reads with
 * them: a plan is bitwise identical to vanilla *with the same choices* -
 * the plan holding the choices and no event.
 *
 * On cnn and resnet18 (the zoo cases of rt_fixture.h: batch 2, 32x32), the
 * workload gets every convolution's menu (tsl_workload_add_algos); the
 * choices give conv ops im2col and direct in turn. Then, on the virtual
 * clock:
 *   - the choices-only plan runs with the measured peak load and footprint
 *     equal to the predicted ones, which count the chosen workspaces (an
 *     im2col column is larger than oneDNN's scratch: the peak moves);
 *   - random valid plans (swaps, recomputations; tests/plan_gen.h) made on
 *     the workload as run, with the same choices, end with the choices-only
 *     plan's parameters bit for bit, and with exact peaks and footprints;
 *   - all-im2col choices on the forward convolutions alone give vanilla's
 *     own parameters only where the default is the reference kernel: with
 *     oneDNN as the default they differ (printed, not asserted), which is
 *     why the rule compares against vanilla with the same choices.
 * A plan whose workload gives an algorithm less workspace than the
 * backend's kernel needs is refused at installation, naming the op.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "plan_gen.h"
#include "rt_fixture.h"
#include "tensile/ops.h"
#include "tensile/verify.h"

/* A plan with the choices only: op i of a menu runs algorithm 1 + (k % 2)
 * for the k-th such op (im2col, direct, ...); fwd_only: CONV2D ops only. */
static tsl_plan *choices(const rtf_case *c, int fwd_only) {
    tsl_plan *p = tsl_plan_new(c->w->job);
    int k = 0;
    for (int32_t i = 0; i < c->w->n_ops; i++) {
        const tsl_op *op = tsl_graph_op(c->g, i);
        if (tsl_workload_op_n_algos(c->w, i) < 3) continue;
        if (fwd_only && op->type != TSL_OP_CONV2D) continue;
        cr_assert_eq(tsl_plan_set_algo(p, i, fwd_only ? TSL_ALGO_IM2COL : 1 + (k++ % 2)), TSL_OK);
    }
    cr_assert_gt(p->n_algos, 0);
    return p;
}

/* Lays p out on c's workload and sets its predicted figures; verifies it. */
static void finish(const rtf_case *c, tsl_plan *p) {
    tsl_plan_sort(p);
    cr_assert_eq(tsl_plan_layout(c->w, p, &c->dev, 0), TSL_OK, "%s", tsl_last_error());
    char why[512];
    cr_assert(pg_finish_and_verify(c->w, p, &c->dev, why, sizeof why), "%s", why);
}

static void expect_exact(const rtf_case *c, const tsl_plan *p, const rtf_run *o, const char *what) {
    for (int k = 1; k < RTF_ITERS; k++) { /* the steady iterations */
        cr_assert_eq(o->peak[k], p->predicted_peak, "%s %s: iteration %d peak %zu, predicted %zu",
                     c->model, what, k + 1, o->peak[k], p->predicted_peak);
        cr_assert_eq(o->fp[k], p->predicted_footprint,
                     "%s %s: iteration %d footprint %zu, predicted %zu", c->model, what, k + 1,
                     o->fp[k], p->predicted_footprint);
    }
}

/* cnn with its updates after the backward pass (TH_UPDATES_AFTER): with
 * them in the backward (the default) its peak is the update of fc1's
 * weight, which has no algorithm to choose, and the choices would change
 * no peak. */
static void check_model(const char *model, int n_random) {
    rtf_case c;
    rtf_zoo_case(&c, model, strcmp(model, "cnn") ? 0 : TH_UPDATES_AFTER);
    cr_assert_eq(tsl_workload_add_algos(c.w, c.g, NULL, NULL), TSL_OK, "%s", tsl_last_error());

    tsl_plan *v = choices(&c, 0);
    finish(&c, v);
    tsl_plan *empty = tsl_plan_new(c.w->job);
    finish(&c, empty);
    printf("%-10s %d choices: predicted peak %zu (default algorithms %zu), period %.0f us "
           "(%.0f)\n",
           model, (int)v->n_algos, v->predicted_peak, empty->predicted_peak,
           v->predicted_period_us, empty->predicted_period_us);
    cr_assert_neq(v->predicted_peak, empty->predicted_peak, "%s: the choices change no peak",
                  model);
    rtf_run ov;
    rtf_run_plan(&c, v, 1, 0, "choices only", &ov);
    expect_exact(&c, v, &ov, "choices only");

    /* random valid plans on the workload as run, with the same choices */
    tsl_workload *wr;
    cr_assert_eq(tsl_workload_for_plan(c.w, v, &wr), TSL_OK);
    pg_opts po = pg_opts_default();
    int events = 0;
    for (int i = 0; i < n_random; i++) {
        pg_stats st;
        tsl_plan *p = pg_random_plan(c.g, wr, &c.dev, (uint64_t)i * 7919 + 5, &po, &st);
        cr_assert_not_null(p, "%s: %s", model, tsl_last_error());
        cr_assert_eq(tsl_plan_copy_algos(p, v), TSL_OK);
        free(p->blocks);
        p->blocks = NULL;
        p->n_blocks = 0;
        finish(&c, p);
        events += p->n_events;
        char what[64];
        snprintf(what, sizeof what, "random plan %d (%d events)", i, (int)p->n_events);
        rtf_run o;
        rtf_run_plan(&c, p, 1, 0, what, &o);
        cr_assert_eq(o.checksum, ov.checksum,
                     "%s %s: parameters %016llx differ from vanilla with the same choices %016llx",
                     model, what, (unsigned long long)o.checksum, (unsigned long long)ov.checksum);
        expect_exact(&c, p, &o, what);
        tsl_plan_free(p);
    }
    cr_assert_gt(events, 0, "%s: the random plans hold no event", model);
    printf("%-10s %d random plans (%d events) with the choices: identical to vanilla with the "
           "choices %016llx (vanilla, default algorithms: %016llx)\n",
           model, n_random, events, (unsigned long long)ov.checksum, (unsigned long long)c.ref);
    tsl_workload_free(wr);

    tsl_plan *f = choices(&c, 1);
    finish(&c, f);
    rtf_run of;
    rtf_run_plan(&c, f, 1, 0, "im2col forward", &of);
    printf("%-10s im2col on the forward convolutions: %016llx (%s vanilla's: oneDNN is the "
           "default)\n",
           model, (unsigned long long)of.checksum, of.checksum == c.ref ? "equal to" : "not");
    tsl_plan_free(f);
    tsl_plan_free(empty);
    tsl_plan_free(v);
    rtf_free(&c);
}

Test(runtime_algos, cnn, .timeout = 600) { check_model("cnn", th_quick() ? 3 : 12); }
Test(runtime_algos, resnet18, .timeout = 600) { check_model("resnet18", th_quick() ? 1 : 3); }

Test(runtime_algos, too_small_a_workspace_is_refused_naming_the_op) {
    rtf_case c;
    rtf_zoo_case(&c, "cnn", 0);
    cr_assert_eq(tsl_workload_add_algos(c.w, c.g, NULL, NULL), TSL_OK);
    tsl_plan *v = choices(&c, 1);
    int32_t op = v->algos[0].op;
    tsl_wl_algo alts[2] = {c.w->ops[op].alts[0], c.w->ops[op].alts[1]};
    alts[0].workspace -= 4; /* im2col's column, 4 bytes short */
    cr_assert_eq(tsl_workload_set_alts(c.w, op, alts, 2), TSL_OK);
    finish(&c, v);
    tsl_session *s = rtf_open_runtime(&c, (size_t)1 << 30, NULL, 1, 0, "short workspace");
    cr_assert_eq(tsl_session_set_plan_for(s, v, c.w), TSL_ERR_INVALID);
    char want[160];
    snprintf(want, sizeof want, "op %d ('%s') with algorithm 1 ('im2col'): the workload gives it",
             op, c.w->ops[op].name);
    cr_assert(strstr(tsl_last_error(), want), "%s", tsl_last_error());
    tsl_session_free(s);
    tsl_plan_free(v);
    rtf_free(&c);
}
