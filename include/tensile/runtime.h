/*
 * tensile/runtime.h - running plans for real: the copy engine, the Swap
 * Executor and the plan-following Executor (paper III-D), and the latency
 * estimates plan updates are made from (IV-E). The runtime executes the
 * plan it is given and measures; it never plans. Whoever owns the job
 * (src/job: tsl_job, or tsl_replanner) decides when to replan, from the
 * boundary callback or a snapshot, outside the runtime's lock.
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
 *   tsl_session *s; tsl_session_new(g, &so, &s);
 *   tsl_session_attach_runtime(s, &ro, w);     // w: the graph's workload
 *   tsl_session_set_plan(s, plan);             // verified plan, next boundary
 *   tsl_session_step(s, x, y, &st);
 *   tsl_runtime_stats rs; tsl_session_runtime_stats(s, &rs);
 */
#ifndef TENSILE_RUNTIME_H
#define TENSILE_RUNTIME_H

#include "tensile/verify.h"
#include "tensile/session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Chooses what to evict when an allocation does not fit (the passive
 * swap-out of DESIGN.md invariant 6). The runtime offers every resident
 * tensor it may move (not in use by the running op or a kernel in flight,
 * not being copied): cand[0..n) - where the arena holds the bytes asked
 * for but not in one block, only those whose eviction opens such a block,
 * if there are any. Returns the index in cand of the tensor to
 * evict, or -1 to evict nothing (the allocation then fails with
 * TSL_ERR_OOM unless memory is freed otherwise). Called with the runtime's
 * lock held, on the compute thread: it must not call back into the
 * session. The default (NULL) is the farthest next use (ties: the larger,
 * then the lower id). Online policies (Capuchin's passive mode, DTR) bring
 * their own. */
typedef struct tsl_evict_candidate {
    int32_t tensor;
    size_t bytes;
    int32_t next_use;      /* next op reading or writing it; persistent tensors wrap to
                              the next iteration (+ n_ops); INT32_MAX: dead (no use left) */
    int host_valid;        /* its host copy holds its value: evicting it needs no copy */
} tsl_evict_candidate;
typedef int (*tsl_evict_fn)(void *user, int32_t pos, const tsl_evict_candidate *cand, int n);

/* What the runtime measured by an iteration boundary: the per-op latency
 * estimates against the latencies of the workload the current plan was
 * made for (paper IV-E). The runtime only measures; whoever owns the job
 * decides whether to replan (src/job/replan.c). */
typedef struct tsl_latency_report {
    int64_t iteration;         /* plan-following iterations completed */
    int64_t plans_installed;   /* plans that have taken effect so far */
    int has_plan;              /* a plan is installed */
    int plan_pending;          /* a plan was set and waits for the next boundary */
    double plan_latency_us;    /* summed op latencies of the plan's workload */
    double ewma_latency_us;    /* summed EWMA estimates now */
    double change_rate;        /* |ewma - plan| / plan; 0 without a plan */
} tsl_latency_report;

/* Called at the end of every training step that followed a plan, on the
 * stepping thread, with the runtime's lock NOT held: it may read the
 * estimates (tsl_session_latency_snapshot), plan, and install a plan with
 * tsl_session_set_plan (effective at the next boundary). */
typedef void (*tsl_boundary_fn)(void *user, tsl_session *s, const tsl_latency_report *r);

typedef struct tsl_runtime_opts {
    int strict;                /* 1: never exceed min(predicted peak, budget) (default 1) */
    double ewma_weight;        /* weight of the new latency sample (default 0.9, as the paper's code) */
    tsl_device_profile profile;/* the device plans are verified against; the virtual
                                  clock's copy times */
    int virtual_clock;         /* 1: deterministic virtual clock, one thread (tests; default 0):
                                  each op takes its workload latency, each copy tsl_copy_us of
                                  `profile`, events run at exactly their due times (frees before
                                  allocations); data still moves and kernels still run. With a
                                  valid plan the measured peak load equals predicted_peak;
                                  tsl_step_stats.ms is then the iteration's virtual time. */
    tsl_evict_fn evict;        /* eviction policy (NULL: farthest next use) */
    void *evict_user;
    tsl_boundary_fn on_boundary; /* NULL: none */
    void *boundary_user;
    int online_placement;      /* 1: ignore plans' layouts, every block from the online
                                  best-fit allocator (for comparison; default 0: blocks at
                                  their planned places, footprint = predicted footprint) */
    int remat;                 /* 1: DTR online (Kirisame et al. 2021) under the plan: when
                                  an allocation does not fit, a dead tensor is freed, else the
                                  droppable tensor with the smallest h = cost / (size x
                                  staleness) is dropped without a copy, and regenerated by
                                  re-running its producer when something reads it; the passive
                                  swap-out only when nothing is droppable. Tensors the plan has
                                  events for are the plan's. With the empty plan: DTR alone.
                                  Use with online_placement. (default 0) */
} tsl_runtime_opts;

tsl_runtime_opts tsl_runtime_opts_default(void);

typedef struct tsl_runtime_stats {
    int64_t swaps_out, swaps_in;   /* planned copies done */
    int64_t recomputes;            /* the plan's recomputations run */
    int64_t drops;                 /* DTR (opts.remat): tensors dropped without a copy */
    int64_t remats;                /* DTR: dropped tensors regenerated at a read */
    int64_t passive_swaps;         /* inputs missing at their op, swapped in on the spot */
    int64_t evictions;             /* passive swap-outs after a failed allocation */
    int64_t stalls;                /* times compute waited for a copy */
    double stall_ms;               /* total wait */
    int64_t plans_installed;       /* plans that took effect at a boundary */
    int64_t displaced;             /* blocks allocated away from their planned place (the
                                      place was held and waiting could not free it) */
    size_t bytes_h2d, bytes_d2h;
} tsl_runtime_stats;

/* Sets each op's workspace in w (a workload of the session's graph, e.g.
 * from tsl_workload_from_graph, which counts the reference kernels'
 * tsl_op_workspace) to what the session's backend really allocates
 * (tsl_session_op_workspace: oneDNN's scratchpads differ). Call it before
 * planning with w, so that the plan's predicted peak and the strict limit
 * count the kernels' scratch. */
tsl_status tsl_workload_match_session(tsl_workload *w, tsl_session *s);
/* The same with any backend that will run graph g (one with no device
 * memory in use will do: op_workspace allocates nothing). TSL_ERR_INVALID
 * when w's ops are not g's. */
tsl_status tsl_workload_match_backend(tsl_workload *w, const tsl_graph *g, tsl_backend *b);

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
/* The same for a plan made for workload w: the graph's workload with other
 * latencies (a replan from measured estimates; tsl_workload_copy). The
 * plan is verified against w, and w's latencies become the base of the
 * change rate. w NULL: the attached workload. TSL_ERR_INVALID if w is not
 * the graph's (checked as at attach). */
tsl_status tsl_session_set_plan_for(tsl_session *s, const tsl_plan *p, const tsl_workload *w);
/* The same with the profile the plan was made for (NULL: the runtime's):
 * the plan is verified against it, and it becomes the runtime's profile
 * (copy times of the virtual clock) when the plan takes effect - a plan
 * made on another share of the device's channels. Fields left 0 are
 * filled as at attach. */
tsl_status tsl_session_set_plan_on(tsl_session *s, const tsl_plan *p, const tsl_workload *w,
                                   const tsl_device_profile *dev);
void tsl_session_runtime_stats(const tsl_session *s, tsl_runtime_stats *st);
/* A consistent copy of the runtime's latency estimates: us[i] (n_ops values,
 * may be NULL) the EWMA of op i in µs, and the report *r (may be NULL).
 * Takes the runtime's lock briefly. TSL_ERR_INVALID without a runtime. */
tsl_status tsl_session_latency_snapshot(tsl_session *s, double *us, tsl_latency_report *r);
/* Sets (or clears, fn NULL) the boundary callback of the attached runtime
 * (see tsl_boundary_fn). TSL_ERR_INVALID without a runtime. */
tsl_status tsl_session_on_boundary(tsl_session *s, tsl_boundary_fn fn, void *user);
/* Writes a Chrome trace of the steps run since attach (compute, both
 * channels, memory as a counter), in the simulator's format. */
tsl_status tsl_session_write_trace(const tsl_session *s, const char *path);

#ifdef __cplusplus
}
#endif
#endif
