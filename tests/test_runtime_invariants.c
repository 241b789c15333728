/*
 * test_runtime_invariants.c - DESIGN.md invariant 5 (no policy changes
 * results) and strict mode (invariant 7) through the runtime, for every
 * model of the zoo at small shapes (batch 2, images 32x32, 75x75 for the
 * Inceptions, 10 classes).
 *
 * Per model: the vanilla executor runs 3 iterations on 3 fixed batches and
 * gives the reference parameter checksum; then, each in a fresh session
 * with the runtime attached, the same 3 iterations run under
 *   - TENSILE's plans (tsl_plan_jobs) at three budgets: the profile's
 *     memory (swaps only), and half and a quarter of the way from the
 *     persistent bytes to vanilla's peak (recomputation allowed, and
 *     planning on to the budget: chained recomputations, planned waits),
 *     in the virtual clock;
 *   - random valid plans from tests/plan_gen.c (swaps and recomputations
 *     the verifier accepts), in the virtual clock;
 *   - for the lighter models, TENSILE's plan in the real-time clock with the
 *     copy channels throttled (strict mode with real copy threads).
 * Every run must end with the reference checksum, bit for bit. In the
 * virtual clock (latencies exact) every plan carries its layout and every
 * iteration - the first included: under a layout there is no cold start -
 * holds exactly the plan's predicted footprint (the allocator's peak
 * footprint: every block at its planned place) and predicted peak load,
 * nothing is displaced, nothing stalls (TENSILE planning to a budget may
 * plan waits: such a plan stalls as planned, every steady iteration
 * lasting its predicted period), and with random plans nothing is
 * swapped in passively or evicted; in the real-time clock the peak load
 * never exceeds the predicted peak (the footprint and what was displaced
 * are printed). Random plans with planned waits (swap-ins landing after
 * their op would start) run in the virtual clock for mlp and cnn: the
 * peak, the footprint and the iteration's time equal the plan's predicted
 * peak, footprint and period (the stalls included). The workload's op workspaces are set to the scratch the
 * fast kernels really take (pg_match_backend_workspace), so that the plan
 * describes the run exactly.
 *
 * How many random plans run where (each costs a session and 3 iterations;
 * the whole file stays under ~3 minutes on 2 cores): see plans_for() below:
 * 200 for mlp and cnn, 20 for resnet18 and densenet121, 6 for vgg11, 4 for
 * the other heavy models (vgg16, vgg19, resnet50, inception3, unet) and 3
 * for inception4; the real-time runs for mlp, cnn, resnet18 and
 * densenet121. Under th_quick() (the sanitizer build): 20 for mlp, 5 for
 * cnn, 1 elsewhere, real-time runs for mlp and cnn only; the sanitizer
 * build runs the smaller models only (CMakeLists.txt: TSL_INVARIANTS_SMALL,
 * the filter of the late-kernels twin below). The environment
 * variable TSL_TEST_PLANS=N runs N random plans for every model instead (a
 * longer soak: TSL_TEST_PLANS=200 is the full figure). The
 * late-kernels twin (CMakeLists.txt: TSL_TEST_PLANS=4, kernels up to 50 us
 * late) runs plan_gen, planned_waits and invariant5 for mlp, cnn, resnet18,
 * densenet121 and vgg11 (a Criterion --filter); the heavier models run here.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "plan_gen.h"
#include "rt_fixture.h"
#include "tensile/models.h"
#include "tensile/runtime.h"
#include "tensile/session.h"

#define ITERS RTF_ITERS

/* ---- running a plan ------------------------------------------------------------------ */

/* 1 if the plan releases a persistent tensor after its last access with no
 * swap-in after that release (absent at the iteration start, SCHEDULING.md):
 * without a layout the first iteration (cold start, everything resident)
 * then differs; under a layout there is no cold start (placement.c). */
static int releases_across(const tsl_workload *w, const tsl_plan *p) {
    for (int32_t k = 0; k < p->n_events; k++) {
        const tsl_event *e = &p->events[k];
        if (e->type != TSL_EV_RELEASE || !tsl_kind_is_persistent(w->tensors[e->tensor].kind)) continue;
        int later_in = 0;
        for (int32_t j = 0; j < p->n_events; j++)
            later_in |= p->events[j].type == TSL_EV_SWAP_IN && p->events[j].tensor == e->tensor &&
                        p->events[j].precede > e->trigger;
        if (!later_in) return 1;
    }
    return 0;
}

/* The checks of one virtual-clock run of a valid plan. `random`: a plan of
 * plan_gen (nothing may stall, be swapped in passively or evicted). */
static void check_virtual(const rtf_case *c, const tsl_plan *p, const rtf_run *o, const char *what,
                          int random) {
    cr_assert_eq(o->checksum, c->ref,
                 "%s %s (%d events): parameters %016llx differ from vanilla's %016llx", c->model,
                 what, (int)p->n_events, (unsigned long long)o->checksum, (unsigned long long)c->ref);
    int first_steady = p->n_blocks == 0 && releases_across(c->w, p) ? 1 : 0;
    for (int k = 0; k < ITERS; k++) {
        cr_assert_leq(o->peak[k], p->predicted_peak,
                      "%s %s: iteration %d peak load %zu exceeds the predicted %zu (by %zu)", c->model,
                      what, k + 1, o->peak[k], p->predicted_peak, o->peak[k] - p->predicted_peak);
        if (k >= first_steady)
            cr_assert_eq(o->peak[k], p->predicted_peak,
                         "%s %s: iteration %d peak load %zu, predicted %zu (difference %lld)", c->model,
                         what, k + 1, o->peak[k], p->predicted_peak,
                         (long long)o->peak[k] - (long long)p->predicted_peak);
    }
    /* the layout: every block at its place, so the device holds exactly
     * the predicted footprint, from the first iteration on */
    cr_assert_gt(p->n_blocks, 0, "%s %s: the plan has no layout", c->model, what);
    for (int k = 0; k < ITERS; k++) {
        cr_assert_leq(o->fp[k], p->predicted_footprint,
                      "%s %s: iteration %d footprint %zu exceeds the predicted %zu", c->model, what,
                      k + 1, o->fp[k], p->predicted_footprint);
        if (k >= first_steady)
            cr_assert_eq(o->fp[k], p->predicted_footprint,
                         "%s %s: iteration %d footprint %zu, predicted %zu (difference %lld)",
                         c->model, what, k + 1, o->fp[k], p->predicted_footprint,
                         (long long)o->fp[k] - (long long)p->predicted_footprint);
    }
    cr_assert_eq(o->rs.displaced, 0, "%s %s: %lld blocks displaced on the virtual clock", c->model,
                 what, (long long)o->rs.displaced);
    /* (the cold first iteration of a plan releasing tensors across
     * iterations starts with them resident: strict mode may wait there) */
    int64_t cold = first_steady ? o->stalls[0] : 0;
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(c->w, p, &c->dev, &pi), TSL_OK, "%s", tsl_last_error());
    int waits = pi.n_waits;
    tsl_peak_info_free(&pi);
    if (!waits)
        cr_assert_eq(o->rs.stalls - cold, 0,
                     "%s %s: %lld stalls in the steady iterations of the virtual clock", c->model,
                     what, (long long)(o->rs.stalls - cold));
    /* a plan with planned waits (TENSILE planning to a budget) stalls as
     * planned: every steady iteration lasts its predicted period */
    for (int k = first_steady; waits && k < ITERS; k++) {
        double want = p->predicted_period_us * 1e-3;
        cr_assert(o->ms[k] >= want - 1e-9 * want - 1e-9 && o->ms[k] <= want + 1e-9 * want + 1e-9,
                  "%s %s: iteration %d lasted %.9f ms, the plan's period is %.9f ms", c->model,
                  what, k + 1, o->ms[k], want);
    }
    if (random) {
        cr_assert_eq(o->rs.passive_swaps, 0, "%s %s: %lld passive swap-ins with a valid plan", c->model,
                     what, (long long)o->rs.passive_swaps);
        cr_assert_eq(o->rs.evictions, 0, "%s %s: %lld evictions in a roomy device", c->model, what,
                     (long long)o->rs.evictions);
    }
}

static int env_plans(void) {
    const char *v = getenv("TSL_TEST_PLANS");
    return v && atoi(v) > 0 ? atoi(v) : 0;
}

/* Random plans per model (see the file comment). */
static int plans_for(const char *m) {
    if (env_plans()) return env_plans();
    int light = !strcmp(m, "mlp") || !strcmp(m, "cnn");
    if (th_quick()) return !strcmp(m, "mlp") ? 20 : !strcmp(m, "cnn") ? 5 : 1;
    if (light) return 200;
    if (!strcmp(m, "densenet121") || !strcmp(m, "resnet18")) return 20;
    if (!strcmp(m, "vgg11")) return 6;
    if (!strcmp(m, "inception4")) return 3;
    return 4;
}

/* Whether the real-time clock run is done for this model. */
static int realtime_for(const char *m) {
    if (th_quick()) return !strcmp(m, "mlp") || !strcmp(m, "cnn");
    return !strcmp(m, "mlp") || !strcmp(m, "cnn") || !strcmp(m, "resnet18") || !strcmp(m, "densenet121");
}

static void check_model(const char *model, int adam) {
    rtf_case c;
    rtf_zoo_case(&c, model, adam);
    rtf_run o;
    char what[96];
    /* TENSILE at three budgets: the profile's memory (swaps only), half and
     * a quarter of the way from the persistent bytes to vanilla's peak
     * (recomputation where swapping is not enough) */
    size_t budgets[3] = {0, c.persistent + (c.ref_peak - c.persistent) / 2,
                         c.persistent + (c.ref_peak - c.persistent) / 4};
    int planned_events = 0, planned_rc = 0;
    for (int b = 0; b < 3; b++) {
        tsl_plan *p = rtf_tensile_plan(&c, budgets[b]);
        planned_events += p->n_events;
        for (int32_t k = 0; k < p->n_events; k++) planned_rc += p->events[k].type == TSL_EV_RECOMPUTE;
        snprintf(what, sizeof what, "tensile plan (budget %zu)", budgets[b]);
        rtf_run_plan(&c, p, 1, 0, what, &o);
        check_virtual(&c, p, &o, what, 0);
        if (b == 0 && realtime_for(model)) {
            /* strict mode in real time: copies throttled to the profile's rate */
            rtf_run_plan(&c, p, 0, c.dev.h2d_bw / 1e9, "tensile plan, real-time clock", &o);
            cr_assert_eq(o.checksum, c.ref, "%s real-time: parameters %016llx differ from %016llx",
                         model, (unsigned long long)o.checksum, (unsigned long long)c.ref);
            for (int k = 0; k < ITERS; k++)
                cr_assert_leq(o.peak[k], p->predicted_peak,
                              "%s real-time: iteration %d peak load %zu exceeds the predicted %zu",
                              model, k + 1, o.peak[k], p->predicted_peak);
            size_t fp = 0;
            for (int k = 0; k < ITERS; k++) fp = o.fp[k] > fp ? o.fp[k] : fp;
            printf("%-12s real-time: %lld swap-outs, %lld stalls (%.2f ms), %lld passive, %lld "
                   "evictions, %lld displaced, footprint %zu of the predicted %zu\n",
                   model, (long long)o.rs.swaps_out, (long long)o.rs.stalls, o.rs.stall_ms,
                   (long long)o.rs.passive_swaps, (long long)o.rs.evictions,
                   (long long)o.rs.displaced, fp, p->predicted_footprint);
        }
        tsl_plan_free(p);
    }
    cr_assert_gt(planned_events, 0, "%s: the planner planned nothing at either budget", model);
    /* random valid plans */
    int n = plans_for(model), swaps = 0, rcs = 0, events = 0;
    pg_opts po = pg_opts_default();
    for (int i = 0; i < n; i++) {
        pg_stats st;
        tsl_plan *p = pg_random_plan(c.g, c.w, &c.dev, (uint64_t)i * 7919 + 17, &po, &st);
        cr_assert_not_null(p, "%s: %s", model, tsl_last_error());
        cr_assert_eq(tsl_plan_layout(c.w, p, &c.dev, 0), TSL_OK, "%s: %s", model, tsl_last_error());
        swaps += st.swaps;
        rcs += st.recomputes;
        events += p->n_events;
        snprintf(what, sizeof what, "random plan %d", i);
        rtf_run_plan(&c, p, 1, 0, what, &o);
        check_virtual(&c, p, &o, what, 1);
        tsl_plan_free(p);
    }
    printf("%-12s %3d random plans (%d swaps, %d recomputations, %d events), tensile plans %d events "
           "(%d recomputations): identical to vanilla %016llx\n",
           model, n, swaps, rcs, events, planned_events, planned_rc, (unsigned long long)c.ref);
    cr_assert_gt(swaps, 0, "%s: no random plan swaps anything", model);
    rtf_free(&c);
}

/* ---- the generator itself ------------------------------------------------------------- */

Test(plan_gen, plans_are_valid_deterministic_and_varied) {
    rtf_case c;
    rtf_zoo_case(&c, "cnn", 0);
    pg_opts po = pg_opts_default();
    int swaps = 0, rcs = 0, empty = 0, n = th_quick() ? 20 : 100;
    for (int i = 0; i < n; i++) {
        pg_stats s1, s2;
        tsl_plan *a = pg_random_plan(c.g, c.w, &c.dev, (uint64_t)i, &po, &s1);
        tsl_plan *b = pg_random_plan(c.g, c.w, &c.dev, (uint64_t)i, &po, &s2);
        cr_assert(a && b);
        cr_assert_eq(a->n_events, b->n_events, "seed %d: %d then %d events", i, a->n_events, b->n_events);
        cr_assert(!memcmp(a->events, b->events, sizeof *a->events * (size_t)a->n_events),
                  "seed %d: same seed, different plans", i);
        cr_assert_eq(a->predicted_peak, b->predicted_peak);
        char why[400];
        cr_assert(pg_finish_and_verify(c.w, a, &c.dev, why, sizeof why), "seed %d: %s", i, why);
        swaps += s1.swaps;
        rcs += s1.recomputes;
        empty += a->n_events == 0;
        tsl_plan_free(a);
        tsl_plan_free(b);
    }
    printf("plan_gen on cnn: %d plans, %d swaps, %d recomputations, %d empty\n", n, swaps, rcs, empty);
    cr_assert_gt(swaps, n, "only %d swaps in %d plans", swaps, n);
    cr_assert_gt(rcs, n / 10, "only %d recomputations in %d plans", rcs, n);
    cr_assert_lt(empty, n / 10, "%d of %d plans are empty", empty, n);
    rtf_free(&c);
}


/* ---- planned waits: the runtime's virtual clock agrees with the plan ------------------- */

/* Random valid plans whose swap-ins are often placed to land after their op
 * would start (planned waits, docs/SCHEDULING.md): in the virtual clock the
 * run is bitwise identical to vanilla, the ledger's peak equals the
 * predicted peak, and every steady iteration lasts the predicted period -
 * the planned stalls included - and stalls exactly as planned. */
static void check_waits(const char *model, int adam, int n) {
    rtf_case c;
    rtf_zoo_case(&c, model, adam);
    pg_opts po = pg_opts_default();
    po.p_wait = 0.6;
    int waits = 0, plans_waiting = 0;
    for (int i = 0; i < n; i++) {
        pg_stats st;
        tsl_plan *p = pg_random_plan(c.g, c.w, &c.dev, (uint64_t)i * 7919 + 17, &po, &st);
        cr_assert_not_null(p, "%s: %s", model, tsl_last_error());
        cr_assert_eq(tsl_plan_layout(c.w, p, &c.dev, 0), TSL_OK, "%s: %s", model, tsl_last_error());
        tsl_peak_info pi;
        cr_assert_eq(tsl_peak_analysis(c.w, p, &c.dev, &pi), TSL_OK, "%s", tsl_last_error());
        waits += pi.n_waits;
        plans_waiting += pi.n_waits > 0;
        char what[64];
        snprintf(what, sizeof what, "waiting plan %d (%d waits, %.1f us)", i, pi.n_waits, pi.stall_us);
        rtf_run o;
        rtf_run_plan(&c, p, 1, 0, what, &o);
        cr_assert_eq(o.checksum, c.ref, "%s %s: parameters differ from vanilla's", model, what);
        int first = p->n_blocks == 0 && releases_across(c.w, p) ? 1 : 0;
        for (int k = first; k < ITERS; k++) {
            cr_assert_eq(o.peak[k], p->predicted_peak, "%s %s: iteration %d peak %zu, predicted %zu "
                         "(difference %lld)", model, what, k + 1, o.peak[k], p->predicted_peak,
                         (long long)o.peak[k] - (long long)p->predicted_peak);
            cr_assert_eq(o.fp[k], p->predicted_footprint, "%s %s: iteration %d footprint %zu, "
                         "predicted %zu", model, what, k + 1, o.fp[k], p->predicted_footprint);
            double want = p->predicted_period_us * 1e-3;
            cr_assert(o.ms[k] >= want - 1e-9 * want - 1e-9 && o.ms[k] <= want + 1e-9 * want + 1e-9,
                      "%s %s: iteration %d lasted %.9f ms, the plan's period is %.9f ms", model, what,
                      k + 1, o.ms[k], want);
        }
        tsl_peak_info_free(&pi);
        tsl_plan_free(p);
    }
    printf("%-6s %d waiting plans: %d with waits, %d waits; peaks, periods and results as planned\n",
           model, n, plans_waiting, waits);
    cr_assert_gt(plans_waiting, n / 4, "%s: only %d of %d plans wait", model, plans_waiting, n);
    rtf_free(&c);
}

Test(planned_waits, mlp, .timeout = 600) { check_waits("mlp", 1, th_quick() ? 10 : 60); }
Test(planned_waits, cnn, .timeout = 600) { check_waits("cnn", 0, th_quick() ? 3 : 20); }

/* ---- invariant 5 and strict mode, model by model -------------------------------------- */

Test(invariant5, mlp, .timeout = 600) { check_model("mlp", 1); }
Test(invariant5, cnn, .timeout = 600) { check_model("cnn", 0); }
Test(invariant5, vgg11, .timeout = 600) { check_model("vgg11", 0); }
Test(invariant5, vgg16, .timeout = 600) { check_model("vgg16", 0); }
Test(invariant5, vgg19, .timeout = 600) { check_model("vgg19", 0); }
Test(invariant5, resnet18, .timeout = 600) { check_model("resnet18", 1); }
Test(invariant5, resnet50, .timeout = 600) { check_model("resnet50", 0); }
Test(invariant5, inception3, .timeout = 600) { check_model("inception3", 0); }
Test(invariant5, inception4, .timeout = 600) { check_model("inception4", 0); }
Test(invariant5, densenet121, .timeout = 600) { check_model("densenet121", 0); }
Test(invariant5, unet, .timeout = 600) { check_model("unet", 1); }
