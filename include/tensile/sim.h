/*
 * tensile/sim.h - the discrete-event simulator: jobs running their plans on
 * one device, sharing compute and the two copy channels.
 */
#ifndef TENSILE_SIM_H
#define TENSILE_SIM_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the simulator ---------------------------------------------------------- */
typedef struct tsl_sim_job {
    double iter_us;            /* the last simulated iteration's time, including the
                                  wait for that iteration's copies at its end */
    double stall_us;           /* compute waiting for a copy, last iteration (with an exact
                                  plan alone on the device: its planned waits) */
    size_t peak;               /* this job's peak load over iterations 2..N (steady state) */
    double vanilla_iter_us;    /* ops back to back at the simulated latencies (the
                                  workload's period when `actual` is NULL) */
} tsl_sim_job;

typedef struct tsl_sim_result {
    int n_jobs;
    tsl_sim_job *job;          /* n_jobs entries (free with tsl_sim_result_free) */
    size_t global_peak;        /* all jobs together, from the moment every job has
                                  started its second iteration */
    int iterations;            /* simulated per job */
} tsl_sim_result;

typedef struct tsl_sim_opts {
    int iterations;            /* 0 means the default, 3; the last one is reported */
    const char *trace_path;    /* Chrome trace JSON, or NULL */
    /* optional actual latencies differing from the workload's (drift): NULL = exact */
    const tsl_latency_table *actual; /* n_jobs tables, or NULL */
} tsl_sim_opts;

/* Simulates n_jobs (>= 1) jobs running their plans (plans NULL, or a NULL
 * plan: the empty plan) on the device. Fills *out on success (free it with
 * tsl_sim_result_free); on failure *out is zeroed. TSL_ERR_INVALID for a
 * bad argument (named) or a plan that cannot run (a read of a tensor that
 * nothing brings back ...: the message names the job, iteration, op or
 * event and tensor), TSL_ERR_IO if the trace cannot be written,
 * TSL_ERR_OOM. */
tsl_status tsl_simulate(tsl_workload *const *w, tsl_plan *const *plans, int n_jobs,
                        const tsl_device_profile *dev, const tsl_sim_opts *opts,
                        tsl_sim_result *out);
/* Frees out->job and zeroes *out; a zeroed result is fine. */
void tsl_sim_result_free(tsl_sim_result *out);

#ifdef __cplusplus
}
#endif
#endif
