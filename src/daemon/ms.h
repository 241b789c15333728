/*
 * ms.h - the Memory Scheduler (paper III-D; docs/DAEMON.md): the jobs of
 * one device, their plans, their memory regions and the queue. Pure: no
 * socket, no clock (times are passed in), no backend; the Global
 * Controller (daemon.c, handle.c) drives it and carries its decisions out.
 *
 * A job's life: submitted (QUEUED, its workload registered), ADMITTED when
 * the jobs planned together with it fit the device, RUNNING once its first
 * plan is sent, DONE or FAILED. Every job still to run or running is
 * planned together with the others (tsl_plan_jobs with the daemon's
 * policy, the device's memory as the budget, each job's max swap rate, and
 * equal channel shares: plans that hold whatever the jobs' phases, see
 * docs/SCHEDULING.md) on every arrival, departure and latency drift.
 *
 * Memory moves only at iteration boundaries and never overcommits. A job's
 * *region* is the memory it may hold: its last acknowledged plan's
 * footprint. A new plan whose footprint is no larger than the region is
 * sent at once (the job shrinks at its next boundary and acknowledges);
 * one that needs more (a growing job, a newly admitted one) is sent only
 * when the regions in force - each counted at the larger of its region and
 * the footprint of a plan it was sent and has not acknowledged - leave room
 * for it. So the regions in force never sum past the device's capacity,
 * and a job's memory is given to another only after that job has shrunk.
 *
 * The queue is first come, first served: only its head is tried for
 * admission (a large job is never starved by smaller ones behind it). A
 * head that would not fit even alone on the device, with the most
 * aggressive plan, fails with the figures; with no_queue (no admission
 * control, for comparisons) so does any head that does not fit now.
 */
#ifndef TSL_DAEMON_MS_H
#define TSL_DAEMON_MS_H

#include <stddef.h>
#include <stdint.h>

#include "tensile/policy.h"
#include "tensile/workload.h"

typedef enum tsl__dj_state {
    TSL__DJ_QUEUED = 0,
    TSL__DJ_ADMITTED, /* admitted; its first plan waits for the others to shrink */
    TSL__DJ_RUNNING,
    TSL__DJ_DONE,
    TSL__DJ_FAILED,
} tsl__dj_state;

/* "queued", "queued" (admitted: still waiting for its memory), "running",
 * "done", "failed": the protocol's states. */
const char *tsl__dj_state_name(tsl__dj_state s);

typedef struct tsl__djob {
    int64_t id;
    tsl__dj_state state;
    char name[64], model[64];
    int64_t batch, iterations;
    double max_swap_rate;
    tsl_workload *w;        /* its workload with the latest latency estimates (owned) */
    double base_sum;        /* summed op latencies of the workload its plan was made from */
    int drift_run;          /* reports in a row above the drift threshold */
    /* its plan */
    tsl_plan *plan;         /* the plan made last (owned), NULL before the first */
    tsl_workload *plan_w;   /* the workload it was made from (owned) */
    double share;           /* the channel share it was made for */
    int64_t seq;            /* its number (the daemon's, increasing) */
    int to_send;            /* it waits to be sent */
    int64_t sent_seq;       /* the last plan sent (0: none), and its footprint */
    size_t sent_target;
    int64_t acked_seq;      /* the last plan the job acknowledged */
    size_t region;          /* the memory in force: the acknowledged plan's footprint */
    int64_t replans;        /* plans made after its first */
    /* the queue */
    double t_submit, t_admit; /* ms, the controller's clock */
    size_t needed;          /* while queued: its footprint when last tried */
    char why[16];           /* why its plan was made: "admitted", "arrival", "departure",
                               "drift", "resume" (the PLAN message's reason) */
    char reason[512];       /* why it is queued, or failed */
    char told[512];         /* the reason last logged (the controller's) */
} tsl__djob;

typedef struct tsl__ms {
    tsl_device_profile dev; /* the device: channels, memory (mem_bytes = capacity) */
    size_t capacity;
    const tsl_policy *policy; /* NULL: tensile */
    int no_queue;             /* a head that does not fit fails instead of waiting */
    double drift_threshold;   /* change rate of a job's summed latencies (default 0.3) */
    int drift_patience;       /* reports in a row above it before replanning (default 3) */
    tsl__djob **jobs;         /* every job submitted, in order */
    int n, cap;
    int64_t next_id, next_seq;
    double last_planning_ms;
    size_t reserved;          /* bytes held by jobs a restarted daemon has not heard from yet
                                 (the device's adopted regions): not planned with */
} tsl__ms;

/* An empty scheduler for a device of `capacity` bytes described by dev
 * (its copy channels) under `policy` (NULL: tensile). */
void tsl__ms_init(tsl__ms *ms, const tsl_device_profile *dev, size_t capacity,
                  const tsl_policy *policy);
/* Frees every job and its plans. */
void tsl__ms_free(tsl__ms *ms);

/* Submits a job (QUEUED) with its workload w (taken over, freed on
 * failure too). TSL_OK with *out the job; TSL_ERR_INVALID for a bad rate
 * or workload (named), TSL_ERR_OOM. */
tsl_status tsl__ms_submit(tsl__ms *ms, const char *name, const char *model, int64_t batch,
                          int64_t iterations, double max_swap_rate, tsl_workload *w, double now,
                          tsl__djob **out);

/* Tries to admit the head of the queue: the jobs to run and it planned
 * together. Returns 1 if it was admitted (every job's new plan then waits
 * to be sent), 0 if it stays queued (its reason and `needed` set) or the
 * queue is empty, -1 if it can never fit and was failed (reason set), -2 on
 * an internal error (planning failed: message in tsl_last_error()). */
int tsl__ms_admit(tsl__ms *ms, double now);

/* Plans every job to run again (a departure, drift, a resumed job):
 * TSL_OK with their new plans waiting to be sent, or TSL_ERR_BUDGET when
 * they would not fit (the plans in force stay), or the planner's error. */
tsl_status tsl__ms_replan(tsl__ms *ms, const char *why);

/* A job that was running under a previous daemon tells who it is (RESUME):
 * it is RUNNING again with id `id`, its workload w (with the latencies its
 * plan was made from) and plan (both taken over, freed on failure too), its
 * plan `seq` acknowledged, its region and share. TSL_ERR_INVALID for an id
 * that is known already (named). */
tsl_status tsl__ms_resume(tsl__ms *ms, int64_t id, const char *name, const char *model,
                          int64_t batch, int64_t iterations, double max_swap_rate,
                          tsl_workload *w, tsl_plan *plan, int64_t seq, size_t region,
                          double share, double now, tsl__djob **out);

/* 1 if j's plan may be sent now (see the head of the file). */
int tsl__ms_sendable(const tsl__ms *ms, const tsl__djob *j);
/* Records that j's plan was sent (an ADMITTED job becomes RUNNING). */
void tsl__ms_sent(tsl__ms *ms, tsl__djob *j);
/* Records j's acknowledgement of plan `seq`: its region becomes that
 * plan's footprint. 0 if seq is not the plan it was sent last (ignored). */
int tsl__ms_acked(tsl__ms *ms, tsl__djob *j, int64_t seq);

/* Takes j's latest latency estimates (us[0..n), its workload's ops) and
 * returns 1 when they have drifted from its plan's by more than the
 * threshold for `drift_patience` reports in a row (a replan is due), 0
 * otherwise, -1 for estimates that do not fit its workload (named). */
int tsl__ms_report(tsl__ms *ms, tsl__djob *j, const double *us, int32_t n);

/* Ends j (DONE or FAILED with `reason`): its region is free. */
void tsl__ms_end(tsl__ms *ms, tsl__djob *j, tsl__dj_state state, const char *reason);

/* Bytes the regions in force hold (each job counted as in tsl__ms_sendable). */
size_t tsl__ms_committed(const tsl__ms *ms);
/* The job with id `id`, or NULL. */
tsl__djob *tsl__ms_find(const tsl__ms *ms, int64_t id);
/* Jobs to run: ADMITTED or RUNNING. */
int tsl__ms_active(const tsl__ms *ms);

#endif
