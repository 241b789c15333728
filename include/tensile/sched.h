/*
 * tensile/sched.h - TENSILE's scheduling method as a pure planning library:
 * device profiles, workloads (tensor access sequences), plans (swap-out,
 * swap-in, release, recompute events), the planner, the verifier and the
 * discrete-event simulator. Nothing here touches a backend; the planner is
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
 *   tsl_plan_opts po = tsl_plan_opts_default();
 *   tsl_plan *plans[1];
 *   tsl_plan_report rep;
 *   tsl_plan_jobs(&w, 1, &dev, &po, plans, &rep);
 *   tsl_violation *v; int nv;
 *   tsl_plan_verify(w, plans[0], &dev, &v, &nv);                // nv == 0
 *   tsl_sim_result sr;
 *   tsl_simulate(&w, plans, 1, &dev, NULL, &sr);
 */
#ifndef TENSILE_SCHED_H
#define TENSILE_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device profiles (profiles/NAME.json) -------------------------------- */
typedef struct tsl_device_profile {
    char name[64];
    double flops;          /* FP32 FLOP/s */
    double mem_bw;         /* device memory bandwidth, bytes/s */
    size_t mem_bytes;      /* device memory size */
    double h2d_bw, d2h_bw; /* host<->device copy bandwidth, bytes/s (pinned) */
    int duplex;            /* 1: the two directions run at once; 0: one shared channel */
    double launch_us;      /* per-op fixed overhead */
    double copy_latency_us;/* per-transfer fixed overhead */
} tsl_device_profile;

/* Loads a profile by file path, or by name from the profiles folder
 * (TSL_PROFILE_DIR, else the source tree's profiles/, else the installed
 * share/tensile/profiles). Strict: every field required, positive, named in
 * errors (TSL_ERR_IO / TSL_ERR_FORMAT). */
tsl_status tsl_profile_load(const char *name_or_path, tsl_device_profile *out);
tsl_status tsl_profile_save(const char *path, const tsl_device_profile *p);

/* Transfer time of `bytes` on a direction (1 = host to device), µs. */
double tsl_copy_us(const tsl_device_profile *p, size_t bytes, int to_device);

/* ---- workloads ------------------------------------------------------------ */
typedef struct tsl_wl_tensor {
    char name[TSL_NAME_MAX];
    size_t bytes;
    tsl_tensor_kind kind;
    int32_t producer;      /* op generating it in the iteration; -1: data load or persistent */
} tsl_wl_tensor;

typedef struct tsl_wl_op {
    char name[TSL_NAME_MAX];
    double start_us, end_us;   /* within the iteration; op i+1 starts when op i ends */
    size_t workspace;          /* scratch bytes held during the op */
    int n_in, n_out;
    int32_t *in, *out;         /* tensor indices (in-place: same index in both) */
} tsl_wl_op;

typedef struct tsl_workload {
    char job[64];
    int32_t n_tensors, n_ops;
    tsl_wl_tensor *tensors;
    tsl_wl_op *ops;
    int32_t optimizer_begin;   /* first op of the optimizer phase (n_ops if none) */
    double period_us;          /* iteration time = end of the last op */
} tsl_workload;

/* Per-op latencies in µs, indexed like the graph's ops (a measured table). */
typedef struct tsl_latency_table {
    int32_t n;
    const double *us;
} tsl_latency_table;

/* Builds the workload of a finalized graph. Latencies come from `table` if
 * non-NULL, else from the analytic cost model of `dev`: per op
 * max(FLOPs / flops, bytes / mem_bw) + launch_us. Workspace per op from
 * tsl_op_workspace. */
tsl_status tsl_workload_from_graph(const tsl_graph *g, const char *job,
                                   const tsl_latency_table *table,
                                   const tsl_device_profile *dev, tsl_workload **out);
double tsl_cost_model_us(const tsl_graph *g, const tsl_op *op, const tsl_device_profile *dev);
void tsl_workload_free(tsl_workload *w);
/* Documented JSON form (docs/SCHEDULING.md), strict validation naming the
 * file, the field and the value. */
tsl_status tsl_workload_read_json(const char *path, tsl_workload **out);
tsl_status tsl_workload_parse_json(const char *text, size_t len, const char *name,
                                   tsl_workload **out);
tsl_status tsl_workload_write_json(const tsl_workload *w, const char *path);

/* ---- plans ----------------------------------------------------------------- */
typedef enum tsl_event_type {
    TSL_EV_SWAP_OUT = 0,
    TSL_EV_SWAP_IN,
    TSL_EV_RELEASE,
    TSL_EV_RECOMPUTE,
} tsl_event_type;

typedef struct tsl_event {
    tsl_event_type type;
    int32_t tensor;        /* workload tensor index */
    int32_t trigger;       /* op whose end triggers the event; -1: iteration start (time 0) */
    double delay_us;       /* after the trigger's end (>= 0) */
    int32_t precede;       /* SWAP_IN, RECOMPUTE: the op that reads the tensor next; else -1.
                              A RELEASE has delay 0; a RECOMPUTE has trigger -1 and delay 0 */
} tsl_event;

typedef struct tsl_plan {
    char job[64];
    int32_t n_events, cap_events;
    tsl_event *events;     /* sorted by (trigger, delay, type, tensor) */
    size_t predicted_peak; /* bytes: the peak the events imply (docs/SCHEDULING.md) */
    double predicted_period_us; /* iteration time including recomputations */
} tsl_plan;

tsl_plan *tsl_plan_new(const char *job);
void tsl_plan_free(tsl_plan *p);
tsl_status tsl_plan_add(tsl_plan *p, tsl_event e);
void tsl_plan_sort(tsl_plan *p);
/* JSON form: {"job", "predicted_peak_bytes", "predicted_period_us",
 * "events": [{"type", "tensor" (name), "trigger" (op name or "start"),
 * "delay_us", "precede" (op name)}]}; tensor and op names resolved against
 * the workload; strict validation naming the file, field and value. */
tsl_status tsl_plan_write_json(const tsl_plan *const *plans, int n, const tsl_workload *const *w,
                               const char *path);
tsl_status tsl_plan_read_json(const char *path, const tsl_workload *const *w, int n,
                              tsl_plan **plans);
tsl_status tsl_plan_parse_json(const char *text, size_t len, const char *name,
                               const tsl_workload *const *w, int n, tsl_plan **plans);

/* ---- memory and time implied by a plan (shared accounting) ---------------- */
/* The timeline of one iteration of one job under its plan, and the memory
 * load over it, per docs/SCHEDULING.md. */
typedef struct tsl_peak_info {
    size_t peak;           /* bytes */
    double peak_time_us;
    int32_t peak_op;       /* op running (or last ended) at the peak */
    int32_t last_input_op; /* LUA: last op before the peak that read a tensor it keeps */
    int32_t *resident;     /* tensors resident at the peak (malloc'd), */
    int32_t n_resident;    /* largest first */
    double period_us;      /* with recomputations */
} tsl_peak_info;
tsl_status tsl_peak_analysis(const tsl_workload *w, const tsl_plan *p,
                             const tsl_device_profile *dev, tsl_peak_info *out);
void tsl_peak_info_free(tsl_peak_info *pi);

/* ---- the verifier ---------------------------------------------------------- */
typedef struct tsl_violation {
    char what[320];        /* names the event, the access and the tensor */
} tsl_violation;
/* Checks DESIGN.md invariant 2 for one job's plan on its own channels.
 * Returns TSL_OK and *n = 0 when the plan is valid; TSL_ERR_INVALID and every
 * violation otherwise (caller frees *v); TSL_ERR_INVALID with *n == 0 when
 * the workload or the profile itself is malformed (the message names it). */
tsl_status tsl_plan_verify(const tsl_workload *w, const tsl_plan *p,
                           const tsl_device_profile *dev, tsl_violation **v, int *n);
/* Same, for several jobs sharing the device's channels. */
tsl_status tsl_plan_verify_jobs(const tsl_workload *const *w, const tsl_plan *const *p, int n_jobs,
                                const tsl_device_profile *dev, tsl_violation **v, int *n);

/* ---- the planner ------------------------------------------------------------ */
typedef enum tsl_policy { TSL_POLICY_VANILLA = 0, TSL_POLICY_TENSILE } tsl_policy;

typedef struct tsl_plan_opts {
    tsl_policy policy;
    size_t budget;             /* device memory for the jobs (0: the profile's) */
    double max_swap_rate[16];  /* per job, its priority; 1.0 = no limit */
    int recompute;             /* allow recomputation (default 1) */
    int max_iterations;        /* hard cap on Algorithm 3's loop (default 10000) */
    double swap_in_slack;      /* a swap-in is placed to land this fraction of its copy
                                  time before its access, so that ops running faster
                                  than their latency estimates do not make compute wait
                                  for the copy (default 0: exactly at the access, the
                                  paper's placement; docs/RESULTS.md compares 0.25) */
} tsl_plan_opts;
tsl_plan_opts tsl_plan_opts_default(void);

typedef struct tsl_plan_report {
    size_t vanilla_peak[16], planned_peak[16];
    int swaps[16], recomputes[16];
    size_t bytes_h2d[16], bytes_d2h[16];
    int iterations;            /* of Algorithm 3 */
    double planning_ms;
} tsl_plan_report;

/* Plans all jobs together (Algorithm 3 over every workload): minimises the
 * sum of per-job peaks; never plans compute waiting for a copy. plans[i] is
 * allocated for every job. */
tsl_status tsl_plan_jobs(tsl_workload *const *w, int n_jobs, const tsl_device_profile *dev,
                         const tsl_plan_opts *opts, tsl_plan **plans, tsl_plan_report *rep);

/* ---- the simulator ---------------------------------------------------------- */
typedef struct tsl_sim_job {
    double iter_us;            /* the last simulated iteration's time, including the
                                  wait for that iteration's copies at its end */
    double stall_us;           /* compute waiting for a copy, last iteration */
    size_t peak;               /* this job's peak load over iterations 2..N (steady state) */
    double vanilla_iter_us;    /* ops back to back at the simulated latencies (the
                                  workload's period when `actual` is NULL) */
} tsl_sim_job;

typedef struct tsl_sim_result {
    int n_jobs;
    tsl_sim_job job[16];
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

tsl_status tsl_simulate(tsl_workload *const *w, tsl_plan *const *plans, int n_jobs,
                        const tsl_device_profile *dev, const tsl_sim_opts *opts,
                        tsl_sim_result *out);

#ifdef __cplusplus
}
#endif
#endif
