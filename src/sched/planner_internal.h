/*
 * planner_internal.h - what the planner's files (src/sched/plan.c,
 * activity.c, timeline.c, peak.c, channels.c, swap.c, across_iter.c,
 * recompute.c, planner.c) share. Not part of the public API; the semantics
 * they implement are docs/SCHEDULING.md.
 *
 * Vocabulary: an "access op" of a tensor is one op that reads and/or writes
 * it (a TUA and a TGA of the same op are one access op, read flag and write
 * flag). A "gap" of a tensor is the time between two consecutive access ops
 * (gap k follows access op k); persistent tensors also have a "wrap gap"
 * from their last access op to the end of the iteration and on from the
 * start of the next iteration to their first access op.
 */
#ifndef TSL_SCHED_PLANNER_INTERNAL_H
#define TSL_SCHED_PLANNER_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "tensile/policy.h"

/* Slack the planner leaves where a planned time only has to come before
 * another (copies end this much before the period; a recomputation's
 * inputs have landed this much before it starts). Far above the rounding
 * of an implementation that sums the same times in another order, far
 * below anything measurable; it changes neither the peak nor the period.
 * A swap-in may end exactly when its op starts: that is the doc's own
 * comparison (copy end <= s_p) on the doc's own expressions. */
static inline double tsl__margin(double x) { return 1e-9 * fabs(x) + 1e-9; }

/* ---- plan.c ------------------------------------------------------------------ */
/* Total order of events: (trigger, delay, type, tensor, precede). */
int tsl__event_cmp(const tsl_event *a, const tsl_event *b);

/* ---- activity.c: per-tensor access ops and implicit releases ------------------ */
typedef struct tsl__acc {
    int32_t op;        /* op index, in execution order */
    uint8_t reads;     /* the op reads the tensor (TUA) */
    uint8_t writes;    /* the op writes the tensor (TGA) */
} tsl__acc;

typedef struct tsl__activity {
    int32_t n_tensors, n_ops;
    int32_t *acc_off;     /* n_tensors + 1: access ops of t are acc[acc_off[t] .. acc_off[t+1]) */
    tsl__acc *acc;
    int32_t *free_off;    /* n_ops + 2: implicit frees after op i (i = -1: the data load) are */
    int32_t *free_list;   /*   free_list[free_off[i+1] .. free_off[i+2]) */
    uint8_t *persistent;  /* per tensor: PARAM, BUFFER, OPT_STATE */
    uint8_t *data;        /* per tensor: INPUT, LABEL (allocated at time 0) */
} tsl__activity;

/* Builds the activity of a workload (which the caller has validated:
 * indices in range). TSL_ERR_OOM if out of host memory (a is then freed). */
tsl_status tsl__activity_build(const tsl_workload *w, tsl__activity *a);
void tsl__activity_free(tsl__activity *a);

/* Index into a->acc of the last access op of t strictly before op `op`, or
 * -1 if none; likewise the first access op strictly after `op` (-1). */
int32_t tsl__acc_before(const tsl__activity *a, int32_t t, int32_t op);
int32_t tsl__acc_after(const tsl__activity *a, int32_t t, int32_t op);
/* 1 if op `op` accesses tensor t. */
int tsl__op_accesses(const tsl_workload *w, int32_t op, int32_t t);

/* ---- timeline.c: times of one job under its plan ------------------------------ */
typedef struct tsl__timeline {
    int32_t n_ops;
    double *s, *e;        /* op start/end with recomputations inserted */
    double period;        /* end of the last op (0 if none) */
    int32_t n_rc;         /* recompute events in run order */
    int32_t *rc_off;      /* n_ops + 1: recomputes before op i: rc_ev[rc_off[i] .. rc_off[i+1]) */
    int32_t *rc_ev;       /* index of the recompute event in the plan */
    int32_t *rc_tensor;   /* the tensor it regenerates */
    double *rc_start;     /* its start time */
} tsl__timeline;

/* Builds the timeline of workload w under plan p (events validated by the
 * caller). Recomputations before op i run in event order (tsl__event_cmp)
 * right before it: op i and every later op move later by the producer's
 * latency end_us - start_us. s'_i = start_us + shift_i, e'_i = end_us +
 * shift_i, shift_i = the latencies of the recomputations at or before i
 * summed in run order. TSL_ERR_OOM if out of host memory. */
tsl_status tsl__timeline_build(const tsl_workload *w, const tsl_plan *p, tsl__timeline *tl);
void tsl__timeline_free(tsl__timeline *tl);

/* End of a trigger: 0 for -1, else e'_trigger. */
static inline double tsl__trig_end(const tsl__timeline *tl, int32_t trigger) {
    return trigger < 0 ? 0.0 : tl->e[trigger];
}
/* Issue time of an event anchored at (trigger, delay). */
static inline double tsl__issue(const tsl__timeline *tl, int32_t trigger, double delay) {
    return tsl__trig_end(tl, trigger) + delay;
}
/* The last op ending at or before x (-1 if none). */
int32_t tsl__op_ending_by(const tsl__timeline *tl, double x);
/* The first op ending at or after x (n_ops if none). */
int32_t tsl__op_ending_from(const tsl__timeline *tl, double x);
/* Anchors a wanted time x >= 0 as (trigger = last op ending at or before x,
 * delay): returns the issue time trig_end + delay as it will be computed,
 * the nearest such value >= x (up != 0) or <= x (up == 0). */
double tsl__anchor(const tsl__timeline *tl, double x, int up, int32_t *trigger, double *delay);

/* Time at which a RELEASE with trigger end te takes effect, given the
 * issue and end times of the tensor's n swap-outs: max(te, end of the
 * latest swap-out issued at or before te). */
double tsl__release_at(double te, const double *so_issue, const double *so_end, int32_t n);

/* ---- peak.c: the memory sweep ---------------------------------------------------- */
typedef struct tsl__effect {
    double time;
    int32_t tensor;
    int32_t alloc;     /* 1: swap-in allocates; 0: release frees */
} tsl__effect;
int tsl__effect_cmp(const tsl__effect *a, const tsl__effect *b);

/* Builds the memory effects of plan p (releases and swap-ins, sorted by
 * tsl__effect_cmp) and the persistent tensors absent at time 0. *eff is
 * malloc'd (caller frees). TSL_ERR_OOM. */
tsl_status tsl__effects_build(const tsl_workload *w, const tsl__activity *a,
                              const tsl__timeline *tl, const tsl_plan *p,
                              const tsl_device_profile *dev, tsl__effect **eff, int32_t *n_eff,
                              uint8_t *absent0);

typedef struct tsl__sweep {
    size_t peak;
    double time;
    int32_t op;        /* op running at the peak (-1: the data load); for a
                          recomputation, the op it precedes */
    int32_t rc;        /* recomputation running at the peak (timeline index), or -1 */
    int64_t step;      /* position in the sweep where the peak was reached */
} tsl__sweep;

/* The load after every allocation of a sweep (its check points), in sweep
 * order (times non-decreasing). */
typedef struct tsl__profile {
    double *time;
    size_t *load;
    int64_t n, cap;    /* cap >= 2 + n_ops + recomputes + swap-ins */
} tsl__profile;

/* Plays the iteration's memory: returns the peak in *out. With stop >= 0,
 * stops right after step `stop` and leaves resident[] (n_tensors bytes,
 * scratch) describing the tensors resident there. If prof is non-NULL, the
 * check points are written to it. */
void tsl__sweep_run(const tsl_workload *w, const tsl__activity *a, const tsl__timeline *tl,
                    const tsl__effect *eff, int32_t n_eff, const uint8_t *absent0,
                    uint8_t *resident, int64_t stop, tsl__sweep *out, tsl__profile *prof);

/* Tensors resident at step `stop`, largest first (ties: lower index): writes
 * them to out (n_tensors entries) and returns how many. */
int32_t tsl__resident_at(const tsl_workload *w, const tsl__activity *a, const tsl__timeline *tl,
                         const tsl__effect *eff, int32_t n_eff, const uint8_t *absent0,
                         uint8_t *resident, int64_t stop, int32_t *out);

/* Sorts tensor indices ts[0..n) largest first (ties: lower index).
 * TSL_ERR_OOM. */
tsl_status tsl__sort_by_size(const tsl_workload *w, int32_t *ts, int32_t n);

/* ---- channels.c: copy channel occupancy shared by all jobs ---------------------- */
typedef struct tsl__chan {
    double *s, *e;     /* bookings [s, e), sorted, disjoint */
    int32_t n, cap;
} tsl__chan;

/* Maps a wanted start x to the issue time an event anchored near x will
 * really have: >= x if up, <= x otherwise. */
typedef double (*tsl__canon_fn)(void *ctx, double x, int up);

void tsl__chan_free(tsl__chan *c);
/* Earliest start c >= lo (as canonicalised) with [c, c + d) free and
 * c + d <= deadline; -1 if none. */
double tsl__chan_earliest(const tsl__chan *c, double lo, double d, double deadline,
                          tsl__canon_fn canon, void *ctx);
/* Latest start c >= lo with [c, c + d) free and c + d <= end_by; -1 if none. */
double tsl__chan_latest(const tsl__chan *c, double lo, double d, double end_by,
                        tsl__canon_fn canon, void *ctx);
/* 1 if [a, b) overlaps no booking. */
int tsl__chan_is_free(const tsl__chan *c, double a, double b);
/* Books [a, b) (must be free: TSL_ASSERT). TSL_ERR_OOM. */
tsl_status tsl__chan_book(tsl__chan *c, double a, double b);
/* Removes the booking [a, b) (must exist: TSL_ASSERT). */
void tsl__chan_unbook(tsl__chan *c, double a, double b);

/* ---- the planner's per-job state (planner.c) ---------------------------------- */
typedef struct tsl__job {
    const tsl_workload *w;
    int index;
    tsl__activity act;
    tsl__timeline tl;
    tsl_plan *plan;
    /* per event of plan: issue/effect time and copy end, per tensor list */
    double *ev_time;       /* issue (swap), effect (release), start (recompute) */
    double *ev_end;        /* copy end (swaps), else ev_time */
    int32_t *ev_next;      /* next event of the same tensor, -1 */
    int32_t *ev_head;      /* per tensor: first event, -1 */
    int32_t cap_ev;
    /* memory */
    tsl__effect *eff;
    int32_t n_eff, cap_eff;
    uint8_t *absent0;
    uint8_t *resident;     /* scratch */
    tsl__sweep pk;
    int32_t *mpt;          /* resident at the peak, candidates order */
    int32_t n_mpt;
    int mpt_valid;
    tsl__profile prof;     /* check points of the last full analysis */
    /* per access op (index into act.acc): the gap after it (the wrap gap for
     * the last access op of a persistent tensor) */
    uint8_t *gap_done;     /* swapped, recomputed, or given up */
    double *gap_fail_out;  /* largest peak time at which its swap-out did not fit */
    double *gap_fail_in;   /* smallest peak time at which its swap-in did not fit */
    uint8_t *swapped;      /* per tensor: has a swap-out */
    uint8_t *recomputed;   /* per tensor: has a recompute */
    int32_t n_swapped;     /* tensors with a swap-out */
} tsl__job;

typedef struct tsl__planner {
    const tsl_device_profile *dev;
    const tsl_plan_opts *opts;
    int n_jobs;
    tsl__job *jobs;
    tsl__chan d2h, h2d;    /* if !dev->duplex, h2d is unused and every copy books d2h */
    int32_t total_swapped; /* tensors with a swap-out, all jobs */
    tsl_status status;     /* first error (out of host memory) met while planning */
} tsl__planner;

/* A swap being assembled for one gap of one tensor: an optional swap-out,
 * a release, a swap-in (times as the events will have them). */
typedef struct tsl__swap_draft {
    int32_t tensor;
    int has_out;
    int32_t so_trig;
    double so_delay, so_issue, so_end;
    int32_t rel_trig;
    int32_t si_trig, si_precede;
    double si_delay, si_issue, si_end;
    int32_t gap;         /* index in act.acc of the gap it fills */
    int n_abs;           /* the intervals [abs_lo, abs_hi) where the tensor */
    double abs_lo[2], abs_hi[2]; /* becomes absent */
} tsl__swap_draft;

/* Books the draft's copies and adds its events to J. Returns 1, or 0 with
 * P->status set if out of host memory (nothing added then). */
int tsl__commit_swap(tsl__planner *P, tsl__job *J, const tsl__swap_draft *d);

/* Context of tsl__canon_tl: the job's timeline and the anchor of the last
 * canonicalised time. */
typedef struct tsl__canon_ctx {
    const tsl__timeline *tl;
    int32_t trigger;
    double delay;
} tsl__canon_ctx;

/* Index of a swap-out event of t issued in [from, to] (the latest), or -1. */
int32_t tsl__find_swap_out(const tsl__job *J, int32_t t, double from, double to);
/* Release time of a release of t triggered by r given t's current
 * swap-outs plus, if extra_issue >= 0, one more [extra_issue, extra_end). */
double tsl__release_time_with(const tsl__job *J, int32_t t, int32_t r, double extra_issue,
                              double extra_end);

static inline tsl__chan *tsl__chan_of(tsl__planner *P, int to_device) {
    return to_device && P->dev->duplex ? &P->h2d : &P->d2h;
}

/* Adds an event to job J's plan with its times, keeping the per-tensor
 * lists; adds its memory effect (release, swap-in). TSL_ERR_OOM. */
tsl_status tsl__job_add_event(tsl__job *J, const tsl_device_profile *dev, tsl_event e);
/* Removes the last `n` events added (and their effects). */
void tsl__job_pop_events(tsl__job *J, int n);
/* Re-runs the peak analysis of J (J->pk; the candidates are recollected). */
void tsl__job_analyse(tsl__job *J);
/* Rebuilds J's timeline from its plan (after a recomputation was added or
 * removed) and every event time and memory effect. TSL_ERR_OOM. */
tsl_status tsl__job_retime(tsl__job *J, const tsl_device_profile *dev);

/* canon callback: ctx is a tsl__canon_ctx. */
double tsl__canon_tl(void *ctx, double x, int up);

/* swap.c: Algorithm 2 for candidate t of job J at its current peak (the
 * gap of t around the peak). Returns 1 and fills *d if a swap fits on the
 * channels as they are (nothing is booked or added), 0 if not. */
int tsl__try_swap(tsl__planner *P, tsl__job *J, int32_t t, tsl__swap_draft *d);
/* The leaving half of a swap of t whose value was generated by `gen_end`
 * and is read last by op `last` before it goes: if a swap-out of that value
 * is planned already it is reused and t is released after `last`; else a
 * swap-out is placed as early as the D2H channel allows from gen_end,
 * ending by `by`, and t is released after the op during which it ends (not
 * before `last`). Fills d's swap-out and release fields (nothing is booked)
 * and returns the release time, or -1 if no swap-out fits. */
double tsl__place_swap_out(tsl__planner *P, tsl__job *J, int32_t t, double gen_end, int32_t last,
                           double by, tsl__swap_draft *d);
/* Completes draft d, whose tensor leaves the device at `rel`: it must have
 * left by the peak time, then its swap-in is placed as late as the H2D
 * channel allows, ending by the start of op `precede` less the slack
 * (opts->swap_in_slack times its copy time). If either fails the
 * gap's failure time is recorded and 0 returned; else the swap-in is filled
 * in, d stored in *out, and 1 returned. */
int tsl__place_swap_in(tsl__planner *P, tsl__job *J, tsl__swap_draft d, double rel,
                       int32_t precede, tsl__swap_draft *out);
/* across_iter.c: the wrap gap of persistent t (peak before its first or
 * after its last access op), as tsl__try_swap. */
int tsl__try_across(tsl__planner *P, tsl__job *J, int32_t t, int32_t gap, tsl__swap_draft *d);
/* recompute.c: one recomputation over all jobs (largest MSPS). Returns the
 * index of the job it was added to, or -1. */
int tsl__try_recompute(tsl__planner *P);

/* Tensor t of J is resident right after the frees at time x (the moment an
 * allocation at x sees) under J's current plan. */
int tsl__job_resident_at(const tsl__job *J, int32_t t, double x);
#endif
