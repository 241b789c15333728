/*
 * tensile/policy.h - planning policies: how the workloads of the jobs
 * sharing a device become their plans.
 *
 * A policy is a constant table (tsl_policy): its name, a one-line summary,
 * the descriptors of its own options, and its `plan` function. The
 * registry holds the built-in policies (src/sched/policy_registry.c: one
 * line each) and those registered at run time (tsl_policy_register).
 * Built in:
 *   "vanilla"   the empty plan: nothing is swapped or recomputed;
 *   "tensile"   the paper's Algorithm 3 over all the jobs (its options:
 *               tensile/policy_tensile.h);
 *   "vdnn-conv", "vdnn-all"  vDNN (Rhu et al. 2016): the input feature
 *               maps of the convolutions / of every layer offloaded in the
 *               forward pass, prefetched one layer ahead (no options);
 *   "autoswap"  AutoSwap (Zhang et al.): candidates across the peak ranked
 *               by priority scores, weighted by Bayesian optimisation,
 *               swapped until the budget (its options:
 *               tensile/policy_autoswap.h);
 *   "capuchin"  Capuchin (Peng et al. 2020): swaps whose copies hide in
 *               their free time first, then swap or recomputation (chained
 *               from the nearest resident tensors) by memory saving per
 *               second, until the budget, planned from the workload's
 *               accesses and latencies (in `tensile run` after a first
 *               iteration in passive mode; its options:
 *               tensile/policy_capuchin.h);
 *   "dtr"       DTR (Kirisame et al. 2021): its online greedy eviction by
 *               h = cost / (size x staleness) simulated over the iteration
 *               in the planner's model, its evictions and rematerialisations
 *               the plan's releases and (chained) recomputations.
 * docs/SCHEDULING.md describes each, and how it departs from its paper.
 *
 * Callers plan with tsl_plan_jobs, naming the policy, its options (the
 * policy's own options struct, or NULL for its defaults) and the memory
 * budget. Planning is pure and deterministic: the same workloads, profile
 * and options give the same plans, byte for byte. The plans a policy
 * returns are not verified here: tsl_plan_verify (tensile/verify.h)
 * judges them; a plan may let compute wait for a copy (a planned wait,
 * docs/SCHEDULING.md), and its predicted period then includes the stall.
 *
 * Example usage:
 *
 *   tsl_plan_opts po = tsl_plan_opts_default();     // TENSILE, its defaults
 *   po.policy = tsl_policy_find("tensile");          // NULL: tsl_last_error() lists the names
 *   po.budget = (size_t)8 << 30;
 *   tsl_plan *plans[2];
 *   tsl_plan_report rep;
 *   if (tsl_plan_jobs(w, 2, &dev, &po, plans, &rep) != TSL_OK) die(tsl_last_error());
 *   printf("%zu -> %zu\n", rep.vanilla_peak[0], rep.planned_peak[0]);
 *   tsl_plan_report_free(&rep);
 *
 * Options given by name (the command line, a daemon's messages):
 *
 *   tsl_policy_opts *o;
 *   tsl_policy_opts_new(po.policy, &o);
 *   if (tsl_policy_opts_set(o, "max-swap-rate", "0.5,1") != TSL_OK) die(tsl_last_error());
 *   po.opts = tsl_policy_opts_values(o);               // valid until tsl_policy_opts_free(o)
 *
 * A policy of one's own (tests/test_planner.c has one):
 *
 *   static tsl_status plan_mine(const tsl_plan_request *rq, tsl_plan **plans, int *iters);
 *   static const tsl_policy mine = {"mine", "what it does", 0, NULL, 0, plan_mine};
 *   tsl_policy_register(&mine);
 */
#ifndef TENSILE_POLICY_H
#define TENSILE_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- options of a policy ------------------------------------------------------ */

typedef enum tsl_option_kind {
    TSL_OPT_BOOL = 0, /* an int field, 0 or 1 ("0", "1", "no", "yes", "false", "true",
                         "off", "on") */
    TSL_OPT_INT,      /* an int field */
    TSL_OPT_DOUBLE,   /* a double field */
    TSL_OPT_PER_JOB,  /* a tsl_per_job field: one value for every job ("0.5"), or one per
                         job ("0.5,1,1"), each a double */
} tsl_option_kind;

/* A value per job, for as many jobs as are planned (sized at run time). */
typedef struct tsl_per_job {
    double all;        /* every job's value while n == 0 */
    int n;             /* 0, or the number of values in v, which must then be the number
                          of jobs planned (tsl_plan_jobs refuses another count) */
    const double *v;   /* n values (not owned by the struct) */
} tsl_per_job;

/* The value of job `job` (0 <= job, and job < x->n when n > 0). */
static inline double tsl_per_job_at(const tsl_per_job *x, int job) {
    return x->n ? x->v[job] : x->all;
}

/* The descriptor of one option: a field of the policy's options struct. */
typedef struct tsl_policy_option {
    const char *name;  /* as on the command line without "--" ("swap-in-slack"); the
                          struct's field has the same name with '_' ("swap_in_slack"),
                          which error messages use */
    const char *help;  /* one line */
    tsl_option_kind kind;
    double min, max;   /* accepted values, inclusive (per job: each value) */
    double def;        /* the default (per job: every job's) */
    size_t offset;     /* offsetof(the options struct, the field) */
} tsl_policy_option;

/* ---- policies ------------------------------------------------------------------ */

/* What an integer-program policy's solver found (checkmate, mosos): for
 * the plan report and the command line. Zero (used = 0) for the others. */
typedef struct tsl_solver_report {
    int used;             /* 1 if the policy solved an integer program */
    char status[16];      /* the last solve's: "optimal", "feasible" (stopped at a limit with
                             a solution), "infeasible", "no solution" */
    int hit_limit;        /* 1 if a solve stopped at its time limit */
    double gap;           /* relative gap of the last solve: 0 when optimal, NAN without a
                             solution */
    double objective;     /* the last solve's objective (us of extra compute; with
                             budget_relaxed KiB over the budget) and */
    double bound;         /* the best bound proven on it */
    double seconds;       /* the solves' wall clock in all */
    int solves;           /* solves run */
    int n_cols, n_rows;   /* the program's size */
    int budget_relaxed;   /* 1: no schedule meets the budget in the policy's model; the one
                             of least memory was solved for instead */
} tsl_solver_report;

/* What a policy plans: checked and completed by tsl_plan_jobs before the
 * policy sees it. */
typedef struct tsl_plan_request {
    tsl_workload *const *w;         /* n_jobs workloads: tensor indices, producers and
                                       times in range and finite */
    int n_jobs;                     /* >= 1 */
    const tsl_device_profile *dev;  /* copy bandwidths > 0, copy latency >= 0 */
    const tsl_device_profile *const *job_dev; /* n_jobs profiles, the one each job's copies
                                       are timed with: dev itself, or with channel shares
                                       (tsl_plan_opts.channel_share) dev with its copy
                                       bandwidths times the job's share */
    int shared_channels;            /* 1: every job's copies share the device's two channels
                                       on one time axis on which every job's iteration
                                       starts at 0 (the paper); 0: each job has channels of
                                       its own (channel shares) */
    size_t budget;                  /* bytes for all the jobs together (never 0: the
                                       caller's 0 is the profile's mem_bytes) */
    int just_enough;                /* 1: save no more than the budget needs (the caller
                                       named it: tsl_plan_opts.budget != 0); 0: save all the
                                       policy can (no budget named: the profile's memory;
                                       or the plans that saved just enough missed it) */
    const void *opts;               /* the policy's options struct (its defaults when the
                                       caller gave none), every value in its range and
                                       every per-job value sized n_jobs; NULL if the
                                       policy has no options */
    tsl_solver_report *solver;      /* out, may be NULL: a policy that solves an integer
                                       program says here what the solver found (zeroed
                                       before each planning round) */
    int *least_memory;              /* out, may be NULL: a policy sets *least_memory = 1 when
                                       its plans leave the jobs above this budget and a lower
                                       budget (down to the jobs' floors) would plan exactly
                                       the same: they are its least memory, and tsl_plan_jobs
                                       plans no lower budget above the floors for the
                                       layouts' overhead (zeroed before each planning round) */
    int *spared;                    /* out, may be NULL: a policy sets *spared = 1 when, with
                                       just_enough, it left savings undone because the budget
                                       did not need them (zeroed before each round) */
    uint32_t *missed;               /* in/out, may be NULL: for a policy that plans several
                                       ways and keeps the best (TENSILE), bit i set when its
                                       way i left the jobs above a budget at or above this
                                       one, and a lower budget would plan that way exactly
                                       the same: the policy may skip it. tsl_plan_jobs keeps
                                       it across the rounds of one planning that lower the
                                       budget (the footprint rounds), zeroed first */
    size_t footprint_budget;        /* the budget the footprint rounds aim at (the caller's,
                                       or the profile's memory): `budget` is this round's,
                                       lowered by the layouts' overhead; 0: `budget` */
} tsl_plan_request;

/* A policy's planning: adds events to plans[j] (empty plans named after
 * their jobs, one per workload) and may set *iterations (its own count of
 * planning rounds, for the report; left 0 otherwise). It need not sort the
 * events nor fill the predicted figures: tsl_plan_jobs does both from the
 * shared accounting (tsl_peak_analysis). It must be deterministic and must
 * not keep rq or the plans. Returns TSL_OK, or an error with its message
 * (the plans are then freed by the caller). */
typedef tsl_status (*tsl_policy_plan_fn)(const tsl_plan_request *rq, tsl_plan **plans,
                                         int *iterations);

/* A policy's refinement of its plans once they are sorted and laid out
 * (tsl_plan_layout), before their predicted figures are taken: it may move
 * events so long as every plan's layout stays valid - the same blocks, by
 * name, at the same offsets, no two alive at once overlapping - and no op
 * comes to wait for a copy. tsl_plan_jobs sorts the plans again after it.
 * Deterministic; returns TSL_OK or an error with its message. */
typedef tsl_status (*tsl_policy_refine_fn)(const tsl_plan_request *rq, tsl_plan **plans);

typedef struct tsl_policy {
    const char *name;       /* the registry's key: lower-case letters, digits and '-' */
    const char *summary;    /* one line, for --help */
    size_t opts_size;       /* sizeof its options struct; 0 if it has no options */
    const tsl_policy_option *options; /* n_options descriptors, one per field */
    int n_options;
    tsl_policy_plan_fn plan;
    tsl_policy_refine_fn refine; /* optional (NULL: the plans stay as planned) */
    /* Online policies are planned here too: "dtr" plans DTR's decisions by
     * simulating it on the workload; "capuchin" plans from the workload's
     * accesses and latencies - in `tensile run`, the latencies its passive
     * first iteration measured, its evictions the runtime's eviction hook
     * (tsl_runtime_opts.evict). docs/SCHEDULING.md says why. */
} tsl_policy;

/* ---- the registry --------------------------------------------------------------- */

/* The policy called `name`, or NULL with a message naming it and listing
 * the known names (tsl_last_error()). */
const tsl_policy *tsl_policy_find(const char *name);
/* Number of policies, and the i-th (0 <= i < count; NULL otherwise): the
 * built-in ones in registry order, then the registered ones in order of
 * registration. For --help. */
int tsl_policy_count(void);
const tsl_policy *tsl_policy_at(int i);
/* Adds a policy defined outside the library; p must stay valid for the
 * rest of the program (a static const table). TSL_ERR_INVALID if p is
 * malformed (the message names the field: a name outside [a-z0-9-], no
 * plan function, an option whose kind, range, default or offset does not
 * fit its options struct) or its name is taken; TSL_ERR_OOM. Thread-safe:
 * registration and lookups may run concurrently from any threads (one lock
 * guards the registry); a policy, once registered, stays. */
tsl_status tsl_policy_register(const tsl_policy *p);

/* ---- options -------------------------------------------------------------------- */

/* The descriptor of p's option `name` (without "--"), or NULL with a
 * message naming the policy and the option and listing its options. */
const tsl_policy_option *tsl_policy_option_find(const tsl_policy *p, const char *name);
/* Writes every option's default into opts (p->opts_size bytes; per-job
 * options: n = 0, all = the default). */
void tsl_policy_defaults(const tsl_policy *p, void *opts);
/* Checks opts (p's options struct) for planning n_jobs jobs: every value in
 * its descriptor's range, every per-job option with 0 or n_jobs values.
 * TSL_OK, or TSL_ERR_INVALID naming the policy, the option, the field and
 * the value ("policy 'tensile': option swap-in-slack: swap_in_slack = -0.5
 * outside [0, 10]"). */
tsl_status tsl_policy_opts_check(const tsl_policy *p, const void *opts, int n_jobs);

/* A policy's options as values set by name, owning their storage (the
 * per-job lists). */
typedef struct tsl_policy_opts tsl_policy_opts;
/* p's defaults. TSL_ERR_INVALID if p is NULL, TSL_ERR_OOM. */
tsl_status tsl_policy_opts_new(const tsl_policy *p, tsl_policy_opts **out);
/* Sets option `name` (without "--") from its text: a number (an integer
 * for INT), a boolean word for BOOL, a number or a comma list of numbers
 * (one per job) for PER_JOB. TSL_ERR_INVALID naming the policy, the option
 * and the value when the option is unknown (listing the policy's options),
 * the text is not of its kind, or a value is outside the option's range;
 * the options are then unchanged. TSL_ERR_OOM. */
tsl_status tsl_policy_opts_set(tsl_policy_opts *o, const char *name, const char *value);
/* The options struct, for tsl_plan_opts.opts (valid until the next set or
 * the free); NULL for a policy without options. */
const void *tsl_policy_opts_values(const tsl_policy_opts *o);
const tsl_policy *tsl_policy_opts_policy(const tsl_policy_opts *o);
void tsl_policy_opts_free(tsl_policy_opts *o); /* NULL is fine */

/* ---- planning ------------------------------------------------------------------- */

typedef struct tsl_plan_opts {
    const tsl_policy *policy;  /* NULL: "tensile" */
    const void *opts;          /* the policy's options struct (tensile: tsl_tensile_opts),
                                  or NULL for its defaults. Not copied: it must stay valid
                                  as long as this struct is used (a tsl_job plans again
                                  with it when it replans) */
    size_t budget;             /* device memory for all the jobs' footprints; 0: the
                                  profile's */
    size_t layout_align;       /* the layouts' alignment: the device allocator's (0:
                                  TSL_ALLOC_ALIGN, 256 bytes; hand-made examples use 1) */
    const double *channel_share; /* NULL: the jobs share the device's channels on one time
                                  axis, every iteration starting at 0 (the paper; plans hold
                                  when the jobs run in step). Else n_jobs shares in (0, 1]
                                  summing to at most 1: job j plans its copies on channels of
                                  its own with the profile's bandwidths times share[j]
                                  (tsl_profile_channel_share): what a job gets, whatever the
                                  other jobs' phases, from channels shared chunk by chunk
                                  among the jobs copying. Its plan is then valid, verified
                                  and simulated against that profile. */
} tsl_plan_opts;

/* TENSILE with its defaults, the profile's memory. */
tsl_plan_opts tsl_plan_opts_default(void);

/* What planning found, per job (arrays of n_jobs entries) and overall. */
typedef struct tsl_plan_report {
    int n_jobs;
    size_t *vanilla_peak;      /* the empty plan's peak load */
    size_t *planned_peak;      /* the plan's predicted peak load */
    size_t *vanilla_footprint; /* the empty plan's layout extent: what vanilla must hold */
    size_t *planned_footprint; /* the plan's predicted footprint (its layout's extent) */
    size_t *floor;             /* the largest working set one op needs (its inputs, outputs
                                  and workspace): no plan's peak load is below it, so a
                                  budget below the jobs' floors cannot be met */
    int *swaps;                /* swap-out events */
    int *recomputes;           /* recompute events */
    size_t *bytes_h2d;         /* bytes swapped in per iteration */
    size_t *bytes_d2h;         /* bytes swapped out per iteration */
    int *waits;                /* planned waits: ops that start late for a copy */
    double *stall_us;          /* their total stall per iteration (in the predicted period) */
    int iterations;            /* the policy's planning rounds (tensile: Algorithm 3's
                                  loop); 0 if it has none */
    double planning_ms;        /* wall clock */
    size_t budget;             /* the budget planned for (the profile's memory if none given) */
    int budget_met;            /* 1 if the plans' footprints sum to at most the budget */
    tsl_solver_report solver;  /* the kept round's integer program (used = 0 if none) */
    int least_memory;          /* 1 if the kept round's policy said its plans are its least
                                  memory (tsl_plan_request.least_memory) */
    int spared;                /* 1 if the kept round's policy saved just enough for the
                                  budget (tsl_plan_request.spared) */
} tsl_plan_report;

/* Frees the report's arrays (they share one block) and zeroes it; a zeroed
 * or already freed report is fine. */
void tsl_plan_report_free(tsl_plan_report *r);

/* Plans n_jobs jobs sharing the device `dev` with opts->policy (opts NULL:
 * tsl_plan_opts_default()). Checks the arguments, runs the policy, sorts
 * every plan's events, sets its predicted_peak and predicted_period_us
 * from tsl_peak_analysis and gives it its layout (tsl_plan_layout: the
 * blocks and predicted_footprint). The budget holds the footprints: when
 * the plans' footprints sum above it, the policy plans again for a budget
 * lowered by the layouts' overhead (footprints less loads; where the loads
 * themselves are above the budget, at least what the footprints exceed it
 * by), at most a few rounds and none above the jobs' floors after the
 * policy said its plans are its least memory
 * (tsl_plan_request.least_memory), so that a policy that
 * plans to a budget of load meets it in footprint; where the round kept
 * meets the budget and one before it that missed it took more than 5 %
 * less time, a few budgets in between (bisection), keeping a plan that
 * meets the budget in less time.
 * plans[j] is allocated for every job (free each with tsl_plan_free);
 * rep, if non-NULL, is filled (free it with tsl_plan_report_free).
 * Returns TSL_OK when the footprints fit the budget; TSL_ERR_BUDGET when
 * they do not - the plans and the report are then the best reached and
 * are filled as on success (the caller uses or frees them), the message
 * names the footprints and the budget. Else TSL_ERR_INVALID naming the
 * argument at fault (n_jobs < 1; a NULL or malformed workload: the op,
 * tensor and value; a profile without positive copy bandwidths; an option
 * out of range or a per-job option with another count of values), the
 * policy's own errors, TSL_ERR_OOM; on those failures no plan is left
 * allocated and rep is zeroed. */
tsl_status tsl_plan_jobs(tsl_workload *const *w, int n_jobs, const tsl_device_profile *dev,
                         const tsl_plan_opts *opts, tsl_plan **plans, tsl_plan_report *rep);

#ifdef __cplusplus
}
#endif
#endif
