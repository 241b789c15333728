/*
 * tensile/runtime.h - running plans for real: the copy engine, the Swap
 * Executor and the plan-following Executor (paper III-D), plan updates as
 * latencies drift (IV-E).
 *
 * A session (tensile/session.h) runs the vanilla executor until a plan is
 * attached; with a plan, each step follows it: the Swap Executor's
 * execution queue releases the events triggered by each op at (end of the
 * op + delay), the buffer issues their copies on the backend's two copy
 * channels; the Executor checks every input is resident before an op (a
 * swap-in in flight is waited for; a missing input is swapped in passively
 * and counted), evicts the resident tensor whose next use is farthest when
 * an allocation fails (passive swap-out, counted), applies releases after
 * an op (blocking only on a pending swap-out of the same tensor), re-runs
 * producers for recompute events, and waits for the iteration's events at
 * its end. A new plan takes effect only at an iteration boundary.
 *
 * Strict mode (the default when a budget is given): the load never exceeds
 * min(plan's predicted peak, budget); a late swap-out makes compute wait,
 * counted as a stall with its duration.
 *
 * Example usage:
 *
 *   tsl_runtime_opts ro = tsl_runtime_opts_default();
 *   ro.pcie_gbps = 2.0;                       // throttle each channel
 *   tsl_session *s; tsl_session_new(g, &so, &s);
 *   tsl_session_attach_runtime(s, &ro, w);     // w: the graph's workload
 *   tsl_session_set_plan(s, plan);             // verified plan, next boundary
 *   tsl_session_step(s, x, y, &st);
 *   tsl_runtime_stats rs; tsl_session_runtime_stats(s, &rs);
 */
#ifndef TENSILE_RUNTIME_H
#define TENSILE_RUNTIME_H

#include "tensile/policy.h"
#include "tensile/verify.h"
#include "tensile/session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsl_runtime_opts {
    double pcie_gbps;          /* throttle of each CPU copy channel, GB/s; 0: unthrottled */
    int strict;                /* 1: never exceed min(predicted peak, budget) (default 1) */
    double ewma_weight;        /* weight of the new latency sample (default 0.9, as the paper's code) */
    double replan_threshold;   /* |s'-s|/s of summed latencies that triggers a replan (default 0.3) */
    int replan_patience;       /* replan only when the change rate stays above the threshold
                                  this many iteration boundaries in a row (default 3; 1:
                                  the paper's rule), so that one noisy iteration does not
                                  cost a replan */
    int replan;                /* 1: replan on drift with `profile` (default 1) */
    tsl_device_profile profile;/* for replanning: channel bandwidths and memory */
    tsl_plan_opts plan_opts;   /* for replanning */
    int virtual_clock;         /* 1: deterministic virtual clock, one thread (tests; default 0):
                                  each op takes its workload latency, each copy tsl_copy_us of
                                  `profile`, events run at exactly their due times (frees before
                                  allocations); data still moves and kernels still run. With a
                                  valid plan the measured peak load equals predicted_peak;
                                  tsl_step_stats.ms is then the iteration's virtual time. */
} tsl_runtime_opts;

tsl_runtime_opts tsl_runtime_opts_default(void);

typedef struct tsl_runtime_stats {
    int64_t swaps_out, swaps_in;   /* planned copies done */
    int64_t recomputes;
    int64_t passive_swaps;         /* inputs missing at their op, swapped in on the spot */
    int64_t evictions;             /* passive swap-outs after a failed allocation */
    int64_t stalls;                /* times compute waited for a copy */
    double stall_ms;               /* total wait */
    int64_t replans;               /* plans replaced because latencies drifted */
    int64_t drift_ignored;         /* boundaries above the threshold not (yet) acted on:
                                    the drift had not lasted replan_patience boundaries */
    char last_replan_reason[160];
    size_t bytes_h2d, bytes_d2h;
} tsl_runtime_stats;

/* Sets each op's workspace in w (a workload of the session's graph, e.g.
 * from tsl_workload_from_graph, which counts the reference kernels'
 * tsl_op_workspace) to what the session's backend really allocates
 * (tsl_session_op_workspace: oneDNN's scratchpads differ). Call it before
 * planning with w, so that the plan's predicted peak and the strict limit
 * count the kernels' scratch. */
tsl_status tsl_workload_match_session(tsl_workload *w, tsl_session *s);

/* Attaches the runtime to a session: starts the copy channel threads, and
 * takes `w` (the workload of the session's graph, same indices; copied) as
 * the latency model the EWMA corrects. TSL_ERR_INVALID if w does not match
 * the graph, or counts less workspace for an op than the backend allocates
 * (see tsl_workload_match_session). */
tsl_status tsl_session_attach_runtime(tsl_session *s, const tsl_runtime_opts *o,
                                      const tsl_workload *w);
/* Installs a plan (copied; NULL: vanilla) to take effect at the next
 * iteration boundary. The plan is verified against the workload first;
 * an invalid plan is refused with TSL_ERR_INVALID naming the first
 * violation. */
tsl_status tsl_session_set_plan(tsl_session *s, const tsl_plan *p);
void tsl_session_runtime_stats(const tsl_session *s, tsl_runtime_stats *st);
/* Per-op latency EWMA in µs (n_ops values) as the runtime currently sees it. */
const double *tsl_session_latency_ewma(const tsl_session *s);
/* Writes a Chrome trace of the steps run since attach (compute, both
 * channels, memory as a counter), in the simulator's format. */
tsl_status tsl_session_write_trace(const tsl_session *s, const char *path);

#ifdef __cplusplus
}
#endif
#endif
