/*
 * bench_measure.h - one measurement of `tensile bench paper` on the
 * simulator: jobs (zoo models as training workloads on a device profile)
 * planned together by a policy named in the registry, under a budget,
 * verified, simulated, and compared with the same jobs under vanilla
 * (nothing swapped or recomputed) simulated alike.
 *
 * The figures are those of `tensile plan` (tools/cmd_plan.c), summed over
 * the jobs as the paper sums its memory peaks:
 *   MSR = 1 - sum of planned footprints / sum of vanilla footprints (a
 *         footprint is a plan's layout's extent: what the device holds);
 *   MSR load: the same on the peak loads (live bytes);
 *   EOR = sum of simulated iteration times / the same under vanilla;
 *   CBR = MSR / EOR (TENSILE's section V-A).
 * A policy the registry does not know gives a result marked "not
 * available in this build" and no number; a plan that fails verification
 * or simulation gives "failed: why"; a plan above its budget keeps its
 * numbers and says "budget not met".
 *
 * Example usage:
 *
 *   bm_jobs J;
 *   bm_spec s = {.model = "vgg16", .batch = 16};
 *   if (bm_jobs_build(&J, &s, 1, &dev) != 0) exit(1);  // message printed
 *   bm_result r;
 *   if (bm_measure(&J, "tensile", 0, NULL, &r) == BM_OK) printf("%.3f\n", r.msr);
 *   bm_jobs_free(&J);
 */
#ifndef TSL_TOOLS_BENCH_MEASURE_H
#define TSL_TOOLS_BENCH_MEASURE_H
#include <stddef.h>
#include <stdint.h>

#include "tensile/graph.h"
#include "tensile/policy.h"
#include "tensile/sim.h"

/* One job: a zoo model's training iteration (Adam). */
typedef struct bm_spec {
    char model[64];
    int batch;
    int image;   /* 0: the model's default */
    int classes; /* 0: the model's default */
    tsl_optimizer_step step; /* where Adam's updates run (0: in the backward, the default) */
} bm_spec;

/* The jobs of one measurement and their vanilla simulation (made at the
 * first measurement, with the same phases). */
typedef struct bm_jobs {
    int n;
    tsl_workload **w;               /* n workloads, named "model:batch#k" */
    const tsl_device_profile *dev;  /* borrowed */
    double *offset_us;              /* n phases (all 0 unless bm_jobs_phases) */
    int have_vanilla;
    tsl_sim_result vanilla;         /* the empty plans simulated */
} bm_jobs;

/* Builds the workloads of n (>= 1) jobs from their specs on dev (borrowed, must outlive J).
 * Returns 0, or -1 with "tensile bench: ..." printed (an unknown model, a
 * shape the model cannot take, out of memory) and J zeroed. */
int bm_jobs_build(bm_jobs *J, const bm_spec *specs, int n, const tsl_device_profile *dev);
/* Random phases (each job's start uniform in [0, its period), from seed:
 * tsl_sim_random_offsets); drops the vanilla simulation made before. */
void bm_jobs_phases(bm_jobs *J, uint64_t seed);
void bm_jobs_free(bm_jobs *J); /* a zeroed J is fine */

typedef enum bm_state {
    BM_OK = 0,
    BM_BUDGET_UNMET, /* planned, verified, simulated; above the budget */
    BM_UNAVAILABLE,  /* the policy is not registered in this build */
    BM_FAILED,       /* planning, verification or simulation failed (why) */
} bm_state;

typedef struct bm_result {
    bm_state state;
    char why[320];                /* the state in words ("ok", "not available ...") */
    size_t vanilla_fp, planned_fp;     /* sums of footprints (bytes) */
    size_t vanilla_load, planned_load; /* sums of peak loads (bytes) */
    double iter_us, vanilla_iter_us;   /* sums of simulated iteration times */
    double msr, msr_load, eor, cbr;
    int swaps, recomputes, waits;
    double planning_ms;
    tsl_solver_report solver;     /* an integer-program policy's solver (used = 0 otherwise) */
} bm_result;

/* Plans J's jobs with the policy called `policy` (its defaults) for
 * `budget` bytes of footprint over all the jobs (0: the profile's memory),
 * verifies the plans together, simulates them (3 iterations, the last
 * reported; J's phases, FIFO channels, one compute resource) and fills
 * *r. With trace_path, the plans' simulation is also written there as a
 * Chrome trace (bm_memory_curve reads it). Returns r->state. */
bm_state bm_measure(bm_jobs *J, const char *policy, size_t budget, const char *trace_path,
                    bm_result *r);

/* bm_measure with the plans made from P's workloads (the same jobs' graphs
 * with other latencies, e.g. predicted; P's device), verified against P
 * (a plan is judged on the timeline it was made for) and simulated on J's
 * (e.g. measured latencies): the plans run where the latencies they were
 * made from are wrong. P NULL: J (bm_measure). The footprints are the
 * plans' (their layouts do not depend on the latencies they meet). */
bm_state bm_measure_from(bm_jobs *J, const bm_jobs *P, const char *policy, size_t budget,
                         const char *trace_path, bm_result *r);

/* bm_measure (without a trace) in a child process, so that a crash of the
 * planner or its solver (a signal) fails this measurement alone: r then
 * says "failed: the measurement crashed (signal N, NAME)". J's vanilla
 * simulation is made here first, in this process, so that the children
 * share it. Returns r->state. */
bm_state bm_measure_isolated(bm_jobs *J, const char *policy, size_t budget, bm_result *r);

/* "ok", "budget not met", "not available in this build" or "failed: ..."
 * (r->why). */
const char *bm_state_text(const bm_result *r);
/* 1 if r has numbers (BM_OK or BM_BUDGET_UNMET). */
int bm_has_numbers(const bm_result *r);
/* The budget of a sweep's cell: `fraction` (> 0) x `vanilla_fp` bytes,
 * rounded down. */
size_t bm_budget(double fraction, size_t vanilla_fp);
/* A sweep's cell in words, into buf: the EOR ("1.0123"; with time_ms the
 * simulated iteration time in ms) when r met its budget, "unmet (MSR x)"
 * when its plan is above it, "n/a" when the policy is not in this build,
 * "failed" otherwise. Returns buf. */
const char *bm_cell(const bm_result *r, int time_ms, char *buf, size_t n);
#endif
