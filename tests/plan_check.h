/*
 * plan_check.h - planning with every check a test wants (sched layer only).
 */
#ifndef TSL_TESTS_PLAN_CHECK_H
#define TSL_TESTS_PLAN_CHECK_H
#include "tensile/policy.h"
#include "tensile/verify.h"

/* Plans the n jobs w with dev and o into p (rep filled: the caller frees it
 * with tsl_plan_report_free); fails the calling test unless the plans
 * verify together, each predicted peak and period equal
 * tsl_peak_analysis's, no planned peak is above vanilla's and each plan's
 * events are sorted. */
void th_plan_checked(tsl_workload **w, int n, const tsl_device_profile *dev,
                     const tsl_plan_opts *o, tsl_plan **p, tsl_plan_report *rep);
/* 1 if no two copies of direction dir_in (1: swap-ins, 0: swap-outs)
 * overlap over every job's plan, with times from the events (one time
 * axis); 0 after printing the first overlap. */
int th_channels_disjoint(tsl_workload **w, tsl_plan **p, int n, const tsl_device_profile *dev,
                         int dir_in);
#endif
