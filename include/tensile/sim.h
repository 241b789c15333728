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
    double stall_total_us;     /* the same over all its counted iterations */
    size_t peak;               /* this job's peak load over iterations 2..N (steady state) */
    double vanilla_iter_us;    /* ops back to back at the simulated latencies (the
                                  workload's period when `actual` is NULL) */
} tsl_sim_job;

typedef struct tsl_sim_result {
    int n_jobs;
    tsl_sim_job *job;          /* n_jobs entries (free with tsl_sim_result_free) */
    size_t global_peak;        /* all jobs together, from the moment every job has
                                  started its second iteration (whatever their phases:
                                  a job's persistent tensors count from time 0, before
                                  its first iteration, as its process holds them) */
    int iterations;            /* simulated per job */
} tsl_sim_result;

/* How the jobs share the copy channels (tsl_sim_opts.channels). A channel
 * is a direction (host to device, device to host), or both directions when
 * the profile is not duplex. */
typedef enum tsl_sim_channels {
    TSL_SIM_CHANNELS_FIFO = 0, /* one transfer at a time per channel, first come first
                                  served over all the jobs, each taking tsl_copy_us */
    TSL_SIM_CHANNELS_FAIR,     /* processor sharing: a transfer first pays the copy latency
                                  without taking bandwidth, then moves its bytes; the k
                                  transfers moving bytes on a channel at a moment each get
                                  1/k of its bandwidth; a job's own transfers on a channel
                                  run one at a time, in issue order */
} tsl_sim_channels;

/* How the jobs share compute (tsl_sim_opts.compute). */
typedef enum tsl_sim_compute {
    TSL_SIM_COMPUTE_SHARED = 0, /* one compute resource for all the jobs, an op at a time:
                                   the ready op with the earliest ready time first (ties:
                                   job index) */
    TSL_SIM_COMPUTE_PER_JOB,    /* each job on a compute resource of its own (the device
                                   partitioned among the jobs, or latencies measured with
                                   the neighbours running): its ops never wait for another
                                   job's; only the copy channels are shared */
} tsl_sim_compute;

typedef struct tsl_sim_opts {
    int iterations;            /* 0 means the default, 3; the last one is reported */
    const char *trace_path;    /* Chrome trace JSON, or NULL */
    /* optional actual latencies differing from the workload's (drift): NULL = exact */
    const tsl_latency_table *actual; /* n_jobs tables, or NULL */
    /* phases: job j's first iteration starts at offset_us[j] (finite, in [0, 1e12]);
       its later ones follow back to back. NULL: every job starts at 0 */
    const double *offset_us;
    tsl_sim_channels channels; /* the channel model (default FIFO) */
    tsl_sim_compute compute;   /* the compute model (default SHARED) */
    /* the channel shares the plans were made on (tsl_plan_opts.channel_share): n_jobs
       values in (0, 1] summing to at most 1. Job j's plan is then read against
       tsl_profile_channel_share(dev, channel_share[j]) - its planned waits, and the
       planned times that decide which swap-outs its releases and swap-ins wait for -
       while its copies run on dev's channels as `channels` says. NULL: the plans were
       made on dev itself (the shared time axis) */
    const double *channel_share;
} tsl_sim_opts;

/* Simulates n_jobs (>= 1) jobs running their plans (plans NULL, or a NULL
 * plan: the empty plan) on the device, as opts says (NULL: the defaults).
 * Fills *out on success (free it with
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

/* Random phases for tsl_sim_opts.offset_us: offset_us[j] uniform in [0, the
 * period of w[j]) (0 for a period of 0), from `seed` alone: the same seed
 * and periods give the same offsets, bit for bit. w[0 .. n_jobs) and
 * offset_us must be valid. */
void tsl_sim_random_offsets(tsl_workload *const *w, int n_jobs, uint64_t seed,
                            double *offset_us);

#ifdef __cplusplus
}
#endif
#endif
