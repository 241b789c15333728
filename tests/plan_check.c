/* plan_check.c - see plan_check.h. */
#include "plan_check.h"
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include "sched/kit.h"

/* Plans, checks the plan against the verifier, and the predicted peak and
 * period against tsl_peak_analysis. */
void th_plan_checked(tsl_workload **w, int n, const tsl_device_profile *dev,
                     const tsl_plan_opts *o, tsl_plan **p, tsl_plan_report *rep) {
    tsl_status ps = tsl_plan_jobs(w, n, dev, o, p, rep);
    cr_assert(ps == TSL_OK || ps == TSL_ERR_BUDGET, "plan: %s", tsl_last_error());
    /* the footprints fit the budget exactly when the status says so */
    size_t fp = 0;
    for (int j = 0; j < n; j++) {
        cr_assert_gt(p[j]->n_blocks, 0, "job %d has its layout", j);
        cr_assert_geq(p[j]->predicted_footprint, p[j]->predicted_peak, "job %d", j);
        cr_assert_eq(rep->planned_footprint[j], p[j]->predicted_footprint);
        fp += p[j]->predicted_footprint;
    }
    cr_assert_eq(rep->budget_met, fp <= rep->budget, "budget_met %d, footprints %zu, budget %zu",
                 rep->budget_met, fp, rep->budget);
    cr_assert_eq(ps == TSL_OK, rep->budget_met);
    tsl_violation *v = NULL;
    int nv = 0;
    tsl_status st = tsl_plan_verify_jobs((const tsl_workload *const *)w, (const tsl_plan *const *)p,
                                         n, dev, &v, &nv);
    if (nv) fprintf(stderr, "first violation: %s\n", v[0].what);
    cr_assert(st == TSL_OK && nv == 0, "the verifier rejects the plan (%d violations)", nv);
    free(v);
    for (int j = 0; j < n; j++) {
        tsl_peak_info pi;
        cr_assert_eq(tsl_peak_analysis(w[j], p[j], dev, &pi), TSL_OK);
        cr_assert_eq(pi.peak, p[j]->predicted_peak, "job %d: predicted %zu, analysis %zu", j,
                     p[j]->predicted_peak, pi.peak);
        cr_assert_eq(pi.period_us, p[j]->predicted_period_us);
        cr_assert_eq(rep->planned_peak[j], p[j]->predicted_peak);
        cr_assert_leq(rep->planned_peak[j], rep->vanilla_peak[j],
                      "job %d: planned %zu > vanilla %zu", j, rep->planned_peak[j],
                      rep->vanilla_peak[j]);
        tsl_peak_info_free(&pi);
        /* events are sorted */
        for (int32_t k = 1; k < p[j]->n_events; k++)
            cr_assert_lt(tsl__event_cmp(&p[j]->events[k - 1], &p[j]->events[k]), 0);
    }
}


/* 1 if no two bookings of direction `in` (1: swap-ins) overlap, over every
 * job, with times from the events (one time axis). */
int th_channels_disjoint(tsl_workload **w, tsl_plan **p, int n, const tsl_device_profile *dev,
                         int dir_in) {
    static double s[2048], e[2048];
    int m = 0;
    for (int j = 0; j < n; j++)
        for (int32_t k = 0; k < p[j]->n_events; k++) {
            const tsl_event *ev = &p[j]->events[k];
            if (ev->type != (dir_in ? TSL_EV_SWAP_IN : TSL_EV_SWAP_OUT)) continue;
            cr_assert_lt(m, 2048);
            s[m] = (ev->trigger < 0 ? 0.0 : w[j]->ops[ev->trigger].end_us) + ev->delay_us;
            e[m] = s[m] + tsl_copy_us(dev, w[j]->tensors[ev->tensor].bytes, dir_in);
            m++;
        }
    for (int i = 0; i < m; i++)
        for (int k = i + 1; k < m; k++)
            if (s[i] < e[k] && s[k] < e[i]) {
                fprintf(stderr, "overlap: [%g, %g) and [%g, %g)\n", s[i], e[i], s[k], e[k]);
                return 0;
            }
    return 1;
}
