/*
 * tensile/sched.h - TENSILE's scheduling method, every header of it at once:
 * device profiles, workloads (tensor access sequences), plans (swap-out,
 * swap-in, release, recompute events), the planning policies, the verifier
 * and the discrete-event simulator. Nothing here touches a backend; the planner is
 * deterministic (same workloads and options, same plans byte for byte).
 *
 * The exact semantics of times, memory and events are in docs/SCHEDULING.md;
 * the planner, the verifier and the simulator each implement them and the
 * tests hold them to agree.
 *
 * Example usage:
 *
 *   tsl_device_profile dev;
 *   tsl_profile_load("a6000", &dev);
 *   tsl_workload *w;
 *   tsl_workload_from_graph(g, "resnet50", NULL, &dev, &w);   // cost model latencies
 *   tsl_plan_opts po = tsl_plan_opts_default();               // TENSILE, its defaults
 *   tsl_plan *plans[1];
 *   tsl_plan_report rep;
 *   tsl_plan_jobs(&w, 1, &dev, &po, plans, &rep);
 *   tsl_violation *v; int nv;
 *   tsl_plan_verify(w, plans[0], &dev, &v, &nv);                // nv == 0
 *   tsl_sim_result sr;
 *   tsl_simulate(&w, plans, 1, &dev, NULL, &sr);
 *   tsl_sim_result_free(&sr);
 *   tsl_plan_report_free(&rep);
 */
#ifndef TENSILE_SCHED_H
#define TENSILE_SCHED_H

/* One header per component; this one includes them all, for programs that
 * use the whole scheduler. The library's own sources include the component
 * headers they use (tests/test_layers.sh checks it). */
#include "tensile/profile.h"    /* devices, copy times            (sched) */
#include "tensile/workload.h"   /* tensor access sequences        (sched) */
#include "tensile/plan.h"       /* events, plans, peak analysis   (sched) */
#include "tensile/verify.h"     /* the verifier                   (sched) */
#include "tensile/policy.h"     /* planning policies              (sched) */
#include "tensile/policy_tensile.h" /* the tensile policy's options (sched) */
#include "tensile/sim.h"        /* the simulator                  (sim)   */
#include "tensile/sched_json.h" /* profiles, workloads, plans as JSON (io) */

#endif
