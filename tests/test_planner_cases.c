/*
 * test_planner_cases.c - the workloads of tests/cases/planner (found by
 * random search: each once made `tensile plan` end with an internal error)
 * as regression tests. Each must plan, verify with no violation (its
 * layout included), and simulate, with the simulator's peak load equal to
 * the plan's for a job alone.
 *
 *   zero_dur_0722      ops of zero latency: the planner, the verifier and
 *                      the simulator must order one time point alike
 *                      (docs/SCHEDULING.md, "Order at one time point");
 *   release_race_1481  a swap-out of a never-written parameter issued at
 *                      the instant its own release frees it;
 *   sim_reject_1161    two jobs: a recomputation's input that survives
 *                      only while a swap-out is pending.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "tensile/policy.h"
#include "tensile/sched_json.h"
#include "tensile/sim.h"
#include "tensile/verify.h"

/* Plans the case's jobs on the profile with the budget (0: the profile's),
 * and checks plan, layout, verification and simulation. */
static void run_case(const char *dir, int n_jobs, const char *profile, size_t budget) {
    const char *src = getenv("TSL_SOURCE_DIR");
    cr_assert(src, "TSL_SOURCE_DIR is not set (ctest sets it)");
    char path[1024];
    tsl_device_profile dev;
    snprintf(path, sizeof path, "%s/profiles/%s.json", src, profile);
    cr_assert_eq(tsl_profile_load(path, &dev), TSL_OK, "%s", tsl_last_error());
    tsl_workload *w[2] = {NULL, NULL};
    for (int j = 0; j < n_jobs; j++) {
        snprintf(path, sizeof path, "%s/tests/cases/planner/%s/job%d.json", src, dir, j);
        cr_assert_eq(tsl_workload_read_json(path, &w[j]), TSL_OK, "%s", tsl_last_error());
    }
    tsl_plan_opts po = tsl_plan_opts_default();
    po.budget = budget;
    tsl_plan *p[2] = {NULL, NULL};
    tsl_plan_report rep;
    tsl_status st = tsl_plan_jobs(w, n_jobs, &dev, &po, p, &rep);
    cr_assert(st == TSL_OK || st == TSL_ERR_BUDGET, "%s: %s", dir, tsl_last_error());
    cr_assert_eq(st == TSL_OK, rep.budget_met, "%s: the status and budget_met agree", dir);
    for (int j = 0; j < n_jobs; j++) {
        cr_assert_gt(p[j]->n_blocks, 0, "%s: job %d has its layout", dir, j);
        cr_assert_geq(p[j]->predicted_footprint, p[j]->predicted_peak, "%s", dir);
        cr_assert_eq(rep.planned_footprint[j], p[j]->predicted_footprint);
    }
    tsl_violation *v = NULL;
    int nv = 0;
    cr_assert_eq(tsl_plan_verify_jobs((const tsl_workload *const *)w, (const tsl_plan *const *)p,
                                      n_jobs, &dev, &v, &nv),
                 TSL_OK, "%s: %s", dir, tsl_last_error());
    cr_assert_eq(nv, 0, "%s: %d violations, first: %s", dir, nv, nv ? v[0].what : "");
    free(v);
    tsl_sim_result sim;
    cr_assert_eq(tsl_simulate(w, p, n_jobs, &dev, NULL, &sim), TSL_OK, "%s: %s", dir,
                 tsl_last_error());
    if (n_jobs == 1)
        cr_assert_eq(sim.job[0].peak, p[0]->predicted_peak,
                     "%s: simulated peak %zu, planned %zu", dir, sim.job[0].peak,
                     p[0]->predicted_peak);
    tsl_sim_result_free(&sim);
    tsl_plan_report_free(&rep);
    for (int j = 0; j < n_jobs; j++) {
        tsl_plan_free(p[j]);
        tsl_workload_free(w[j]);
    }
}

Test(planner_cases, zero_duration_ops) { run_case("zero_dur_0722", 1, "a6000", 0); }

Test(planner_cases, swap_out_at_its_own_release) {
    run_case("release_race_1481", 1, "h100-pcie", 520116949);
}

Test(planner_cases, recomputation_input_on_a_pending_swap_out) {
    run_case("sim_reject_1161", 2, "a6000", 148766716);
}
