/*
 * ilp_internal.h - what the integer-program policies share (not part of
 * the public API): Checkmate's time discretisation of a job (a stage per
 * op), the decisions a schedule takes in it (keep, recompute, offload,
 * prefetch, per candidate tensor and stage), the integer program over them
 * (solved by CBC through milp.h) and the plan events a schedule becomes.
 * policy_checkmate.c (recomputation only), policy_mosos.c (offload,
 * prefetch and recomputation, and the hook for the convolution algorithm)
 * solve the program; policy_str.c fills the same decisions by a greedy
 * heuristic. docs/SCHEDULING.md ("Integer programs") gives the model.
 *
 * Files:
 *   ilp_job.c    the analysis of a job: stages, candidates, their uses,
 *                the memory that no decision changes, copy spans
 *   ilp_build.c  the program over all jobs, its solution into decisions
 *   ilp_emit.c   decisions into plan events
 *
 * Stage t is op t. In it, recomputations run right before op t (a
 * RECOMPUTE preceding t), copies start at its start (triggered by op t-1's
 * end) and the tensors it does not keep are released at its start
 * (RELEASE triggered by op t-1). A candidate is a tensor the decisions may
 * take off the device: generated once in the forward or backward pass by
 * one op (its producer q), read after it, not persistent nor data. It lives
 * over stages (q, last] where last is its last access (activity analysis
 * frees it after that op); at q it is always resident.
 */
#ifndef TSL_SCHED_ILP_INTERNAL_H
#define TSL_SCHED_ILP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "sched/kit.h"
#include "sched/milp.h"

/* Per-op alternatives a planner may choose between (MO-SOS's convolution
 * algorithms, tsl_workload_op_algo): n[t] alternatives of op t, each with
 * its latency and workspace (alternative 0: the workload's default). */
typedef struct tsl__ilp_algos {
    const int *n;            /* per op: alternatives (0 or 1: none to choose) */
    const double *const *us; /* per op: n[t] latencies */
    const size_t *const *ws; /* per op: n[t] workspaces */
} tsl__ilp_algos;

/* A candidate tensor of one job. */
typedef struct tsl__ilp_cand {
    int32_t tensor;
    int32_t q;          /* producer (op and stage) */
    int32_t last;       /* last access op */
    size_t bytes;
    double rc_us;       /* the producer's latency: a recomputation's cost */
    double out_us, in_us; /* copy times each way (the job's profile) */
    int rc_ok;          /* the producer can be re-run (single output, no workspace,
                           positive latency, does not read its output) */
    int swap_ok;        /* may be offloaded: generated in the forward pass (before the first
                           op generating a gradient; MO-SOS's "output tensors of the forward
                           pass") and at least the policy's min-swap-bytes */
} tsl__ilp_cand;

/* The analysis of one job. */
typedef struct tsl__ilp_job {
    const tsl_workload *w;
    const tsl_device_profile *dev;
    tsl__activity act;
    int32_t n;              /* stages (ops) */
    int32_t nc;             /* candidates */
    tsl__ilp_cand *c;
    int32_t *cand_of;       /* per tensor: its candidate index, or -1 */
    double *fixed;          /* per stage: bytes no decision changes (the vanilla load
                               during op t less the candidates alive over (q, last]) */
    uint8_t *reads;         /* n x nc: op t reads candidate k (reads[t * nc + k]) */
    int32_t *sf_out, *sf_in;/* n x nc: a copy of candidate k started at stage t has ended
                               by the start of stage sf (-1: not before k's last access) */
    uint8_t *rc_at;         /* n x nc: k may be recomputed before op t (its producer's
                               non-candidate inputs alive then and not written since q) */
    size_t vanilla_peak;    /* max over stages of the vanilla load */
    double *fast_s;         /* per stage (n + 1): its start with every op at its fastest
                               algorithm; copy spans (sf_out, sf_in) are taken on these
                               times (MO-SOS's ss/sf on the fastest algorithms), so they
                               hold whatever the choices */
    tsl__ilp_algos alg;     /* the ops' algorithms (tensile/workload.h): n[t] = their count,
                               us[t][k], ws[t][k] (k = 0 the default) */
    int *alg_n;             /* storage of alg */
    const double **alg_usp;
    const size_t **alg_wsp;
    double *alg_us;
    size_t *alg_ws;
} tsl__ilp_job;

/* Analyses job w on profile dev; swap_min: candidates below this many
 * bytes are not offloaded. TSL_ERR_OOM (J freed). */
tsl_status tsl__ilp_job_init(tsl__ilp_job *J, const tsl_workload *w,
                             const tsl_device_profile *dev, size_t swap_min);
void tsl__ilp_job_free(tsl__ilp_job *J);

/* A schedule of one job: n x nc decisions each (index t * nc + k). */
typedef struct tsl__ilp_sched {
    uint8_t *S;  /* k resident at the start of stage t, t in (q, last] */
    uint8_t *R;  /* k recomputed before op t */
    uint8_t *O;  /* an offload of k starts at stage t */
    uint8_t *P;  /* a prefetch of k starts at stage t */
    int32_t *algo; /* per op: its algorithm (0: the default) */
} tsl__ilp_sched;

/* All-resident (vanilla) decisions for J. TSL_ERR_OOM. */
tsl_status tsl__ilp_sched_init(tsl__ilp_sched *s, const tsl__ilp_job *J);
void tsl__ilp_sched_free(tsl__ilp_sched *s);
/* The loads the model predicts for every stage under s (bytes), into
 * load[0 .. J->n). */
void tsl__ilp_stage_loads(const tsl__ilp_job *J, const tsl__ilp_sched *s, double *load);

/* What the program may decide. */
typedef struct tsl__ilp_opts {
    double time_limit_s;  /* per solve (INFINITY: none) */
    double deadline;      /* tsl__milp_now() by which every solve has ended (0: none):
                             a solve gets the time left (less its grace), none when too
                             little is left */
    int threads;          /* CBC's */
    int max_chain;        /* recomputations chained before one op: 1 = only the tensors the
                             op reads, 2 = also their producers' inputs, ... (0: none). The
                             plan semantics have a RECOMPUTE only before an op reading its
                             tensor (the verifier's rule), so the policies pass 0 or 1; deeper
                             chains are Checkmate's, kept for when the semantics allow them */
    int swap;             /* offload and prefetch (MO-SOS) */
    int window;           /* an offload starts within this many stages of the producer, a
                             prefetch within this many stages before a read (>= 1) */
    int choose_algos;     /* choose each op's algorithm (MO-SOS; the jobs' alg tables) */
} tsl__ilp_opts;

/* The solver's outcome, for the plan report. */
typedef struct tsl__ilp_outcome {
    tsl__milp_status status;
    double objective, bound, gap, seconds;
    int hit_limit, n_cols, n_rows, solves;
    int budget_relaxed;   /* the budget had no solution: the schedule is the one of least
                             memory the solver found */
    int deadline_hit;     /* a solve was cut short or skipped for the whole-plan deadline
                             (hit_limit too) */
    int crashed;          /* CBC's process died in a solve (taken as no solution) */
} tsl__ilp_outcome;

/* STR's greedy (policy_str.c) over the n jobs J, their schedules s
 * (vanilla on entry) taken until the summed peaks of the stage model fit
 * budget or nothing frees a peak stage; swaps, recomputations: which
 * decisions it may take (the programs' start: checkmate's recomputations
 * only, mosos's without them at recompute 0); *steps: decisions taken.
 * TSL_ERR_OOM. */
tsl_status tsl__str_greedy(tsl__ilp_job *J, tsl__ilp_sched *s, int n, size_t budget, int swaps,
                           int recomputations, int *steps);

/* Builds the program over the n_jobs jobs for a budget of `budget` bytes
 * of summed peak loads, solves it and writes its decisions into s[j]
 * (initialised by the caller). With no solution in the limits the
 * schedules stay vanilla. TSL_OK whatever the solver found (out says),
 * TSL_ERR_OOM, the solver's errors. */
tsl_status tsl__ilp_solve(tsl__ilp_job *J, int n_jobs, size_t budget, const tsl__ilp_opts *o,
                          tsl__ilp_sched *s, tsl__ilp_outcome *out);
/* ... with start (n_jobs schedules, or NULL) offered to CBC as a first
 * solution where the program has its every decision (the vanilla schedule
 * otherwise, for the least-memory solve). */
tsl_status tsl__ilp_solve_from(tsl__ilp_job *J, int n_jobs, size_t budget,
                               const tsl__ilp_opts *o, const tsl__ilp_sched *start,
                               tsl__ilp_sched *s, tsl__ilp_outcome *out);

/* Turns job J's schedule into events of plan p (empty). TSL_ERR_OOM, or
 * TSL_ERR_INTERNAL naming the candidate and stage where s is not
 * consistent (a use finding its tensor absent). */
tsl_status tsl__ilp_emit(const tsl__ilp_job *J, const tsl__ilp_sched *s, tsl_plan *p);

/* The options the integer-program policies share (their tables:
 * policy_checkmate.c, policy_mosos.c). */
typedef struct tsl__ilp_popts {
    double time_limit_s;  /* "time-limit": seconds per solve */
    double deadline_s;    /* "deadline": seconds for the whole planning call (analysis, STR's
                             greedy, every solve); the solves are cut to fit */
    int threads;          /* "threads": CBC's (1: deterministic) */
    int recompute;        /* "recompute" (mosos): 0 = offload only; checkmate: 1 */
    double min_swap_bytes;/* "min-swap-bytes" (mosos): smaller tensors stay on the device */
    int window;           /* "window" (mosos): see tsl__ilp_opts */
} tsl__ilp_popts;

/* Plans the request's jobs with the program (ilp_policy.c): analyses
 * every job, solves for rq->budget (the summed peak loads), turns the
 * decisions into events of plans[j] and says in rq->solver what the
 * solver found. swap: offloads allowed (MO-SOS). TSL_ERR_OOM, the
 * solver's errors, TSL_ERR_INTERNAL for an inconsistent solution. */
tsl_status tsl__ilp_plan(const tsl_plan_request *rq, tsl_plan **plans, const tsl__ilp_popts *po,
                         int swap);
#endif
