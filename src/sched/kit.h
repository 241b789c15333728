/*
 * kit.h - the planner kit: the machinery planning policies share (not part
 * of the public API; the semantics it implements are docs/SCHEDULING.md).
 * One concept per file:
 *
 *   plan.c         plans and the total order of events
 *   plan_algos.c   a plan's algorithm choices, the workload they make
 *   workload_algos.c  an op's algorithms, the ratio model
 *   activity.c     per-tensor access ops and implicit releases
 *   layers.c       the layers of a workload (forward ops, their backward
 *                  ops, convolutions) from the names autodiff gives
 *   timeline.c     op times under a plan (recomputations, planned waits),
 *                  issue and release times, anchoring a time as (trigger, delay)
 *   peak.c         the memory effects of a plan, the sweep and its peak,
 *                  tsl_peak_analysis
 *   channels.c     copy-channel bookings shared by the jobs of a device
 *   pjob.c         a job being planned: its plan with every event's times,
 *                  memory effects and peak, kept up to date as events come
 *                  and go; the kit over all jobs (tsl__kit)
 *   swap_place.c   placing a swap: the swap-out as early and the swap-in as
 *                  late as the channels allow, committing it
 *   swap_list.c    placing a policy's whole list of swaps in given orders,
 *                  compute waiting for late swap-ins (planned waits)
 *   rc_check.c     recomputation: can a tensor's producer be re-run exactly
 *                  before an op; re-booking a job's copies after its
 *                  timeline moved
 *   plan_layout.c  the blocks of a plan's iteration as the layout sees them
 *                  (tsl__laid), and the plan's layout
 *   prefetch.c     swap-ins moved as early as the layout and the channels
 *                  allow (a refinement of laid-out plans)
 *   floor.c        a job's memory floor: the largest working set one op needs
 *   drafts.c       one choice at a time at the peaks: candidates, hidden and
 *                  waiting swaps, chained recomputations, the rounds to a
 *                  budget (drafts.h; Capuchin, TENSILE's planning to a budget)
 *
 * A policy built on the kit (policy_tensile.c is one) holds a tsl__kit,
 * asks it where the jobs' peaks are and what is resident there, drafts
 * swaps and recomputations with it and commits the ones it chooses.
 *
 * Vocabulary: an "access op" of a tensor is one op that reads and/or writes
 * it (a TUA and a TGA of the same op are one access op, read flag and write
 * flag). A "gap" of a tensor is the time between two consecutive access ops
 * (gap k follows access op k); persistent tensors also have a "wrap gap"
 * from their last access op to the end of the iteration and on from the
 * start of the next iteration to their first access op.
 */
#ifndef TSL_SCHED_KIT_H
#define TSL_SCHED_KIT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "tensile/layout.h"
#include "tensile/policy.h"
#include "sched/waits.h"

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
/* The workload p is analysed on: w itself (*owned NULL) when p chooses no
 * algorithm (p NULL too), else tsl_workload_for_plan's copy in *owned
 * (the caller frees it). Errors as tsl_workload_for_plan. */
tsl_status tsl__workload_as_run(const tsl_workload *w, const tsl_plan *p,
                                const tsl_workload **use, tsl_workload **owned);

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
    int32_t *by_size;     /* n_tensors: every tensor, largest first (ties: lower index;
                             tsl__sort_by_size's order), so that a list of some of them in
                             that order is a filter, not a sort */
} tsl__activity;

/* Builds the activity of a workload (which the caller has validated:
 * indices in range). TSL_ERR_OOM if out of host memory (a is then freed). */
tsl_status tsl__activity_build(const tsl_workload *w, tsl__activity *a);
void tsl__activity_free(tsl__activity *a);

/* Index into a->acc of the last access op of t strictly before op `op`, or
 * -1 if none; likewise the first access op strictly after `op` (-1). */
int32_t tsl__acc_before(const tsl__activity *a, int32_t t, int32_t op);
int32_t tsl__acc_after(const tsl__activity *a, int32_t t, int32_t op);
/* The op of t's last access op, or -1 if it has none. */
int32_t tsl__last_access_op(const tsl__activity *a, int32_t t);
/* 1 if op `op` accesses tensor t. */
int tsl__op_accesses(const tsl_workload *w, int32_t op, int32_t t);

/* ---- layers.c: layers of a workload, from its ops' names ----------------------- */
typedef struct tsl__layers {
    int32_t n_ops;
    int32_t bwd_begin;    /* the first op writing a GRADIENT tensor (n_ops if none): ops
                             before it are the forward layers */
    int32_t bwd_end;      /* the optimizer phase's first op (n_ops if none) */
    int32_t *layer;       /* per op: the forward op whose layer it is (a forward op: itself),
                             or -1 (a backward op of no forward layer, an optimizer op) */
    int32_t n_seg;        /* segments: maximal runs of consecutive ops of one layer (each */
    int32_t *seg;         /*   forward, optimizer or layer-less backward op is one): per op */
    int32_t *seg_start;   /*   its segment, per segment its first op */
    int32_t *bwd_start;   /* per forward op: the first op of its backward, or -1 */
    uint8_t *conv;        /* per forward op: a convolution */
} tsl__layers;

/* The layers of w (see layers.c for how names map ops to layers).
 * TSL_ERR_OOM (L is then freed). */
tsl_status tsl__layers_build(const tsl_workload *w, tsl__layers *L);
void tsl__layers_free(tsl__layers *L);

/* ---- timeline.c: times of one job under its plan ------------------------------ */

/* One planned wait (docs/SCHEDULING.md): the op, or a recomputation before
 * it, starts late for a swap-in still copying when it would start, or (the
 * first position of an op) for a release preceding the op that waits for
 * its swap-out. */
typedef struct tsl__wait {
    int32_t op;        /* the op; for a recomputation, the op it precedes */
    int32_t rc;        /* the recomputation (timeline index), or -1 */
    int32_t event;     /* the swap-in or release waited for: the last of them */
    double at;         /* when it would have started */
    double stall;      /* how much later it starts */
} tsl__wait;

typedef struct tsl__timeline {
    int32_t n_ops;
    double *s, *e;        /* op start/end with recomputations and waits */
    double period;        /* end of the last op (0 if none) */
    int32_t n_rc;         /* recompute events in run order */
    int32_t *rc_off;      /* n_ops + 1: recomputes before op i: rc_ev[rc_off[i] .. rc_off[i+1]) */
    int32_t *rc_ev;       /* index of the recompute event in the plan */
    int32_t *rc_tensor;   /* the tensor it regenerates */
    double *rc_start;     /* its start and end times */
    double *rc_end;
    int32_t n_wait;       /* planned waits, in execution order */
    tsl__wait *wait;
    double stall;         /* their total */
} tsl__timeline;

/* Builds the timeline of workload w under plan p (events validated by the
 * caller; dev may be NULL only if p has no swap-in) per docs/SCHEDULING.md
 * "Time" and "Planned waits". Positions run in order: the recomputations
 * before op i (in event order, tsl__event_cmp), then op i. Nominal times:
 * op i over [s_i + shift, e_i + shift], a recomputation of producer g
 * before op i over [s_i + shift, s_i + shift'], shift' = shift + (e_g -
 * s_g). A position would start at its nominal start while nothing has
 * waited, else when the previous one ends; it waits for the swap-ins of
 * the tensors it reads that are still copying then. TSL_ERR_OOM. */
tsl_status tsl__timeline_build(const tsl_workload *w, const tsl_plan *p,
                               const tsl_device_profile *dev, tsl__timeline *tl);
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

/* Where a memory effect of the plan falls among the steps of its time
 * point (docs/SCHEDULING.md, "Order at one time point"). */
enum {
    TSL__EF_DONE = 0,    /* step 1: a release that waited for a swap-out frees at that
                            copy's end */
    TSL__EF_RELEASE = 1, /* step 3: a release frees at its trigger's end */
    TSL__EF_SWAP_IN = 2, /* step 3: a swap-in allocates at its issue */
};

typedef struct tsl__effect {
    double time;
    int32_t tensor;
    int32_t alloc;     /* 1: swap-in allocates; 0: release frees */
    int32_t phase;     /* TSL__EF_*: TSL__EF_SWAP_IN iff alloc */
} tsl__effect;
/* Order of the effects: time, phase, tensor. */
int tsl__effect_cmp(const tsl__effect *a, const tsl__effect *b);
/* The effect of a release of t taking effect at `at` whose trigger ends at
 * te (at > te: it waited for a swap-out), or of a swap-in issued at `at`. */
static inline tsl__effect tsl__effect_release(double at, double te, int32_t t) {
    return (tsl__effect){at, t, 0, at > te ? TSL__EF_DONE : TSL__EF_RELEASE};
}
static inline tsl__effect tsl__effect_swap_in(double at, int32_t t) {
    return (tsl__effect){at, t, 1, TSL__EF_SWAP_IN};
}

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

/* The blocks of one iteration's memory, as the sweep holds them (the
 * layout's input, plan_layout.c): a tensor's residency (op = -1) or a
 * workspace (tensor = -1), alive over the check points [start, end) of
 * the sweep (end = -1: still alive when the iteration ends). A block freed
 * before an allocation at one time point ends at that allocation's check
 * point, so the two do not overlap. */
typedef struct tsl__block {
    int32_t tensor, op;
    int64_t start, end;
    size_t bytes;
    uint8_t at_start;  /* resident from the iteration's start (a persistent tensor) */
} tsl__block;
typedef struct tsl__blocks {
    tsl__block *b;     /* in order of allocation */
    int32_t n, cap;
    int32_t *open;     /* per tensor: its block while resident, else -1 (scratch) */
    int64_t period;    /* check points of the iteration */
    double *time;      /* per check point: its time (period entries) */
    int64_t cap_time;
    tsl_status status;
} tsl__blocks;
/* Plays the iteration's memory (as tsl__sweep_run) recording every block
 * into *rec (free with tsl__blocks_free). resident: n_tensors bytes of
 * scratch. TSL_ERR_OOM (rec is then empty). */
tsl_status tsl__sweep_blocks(const tsl_workload *w, const tsl__activity *a,
                             const tsl__timeline *tl, const tsl__effect *eff, int32_t n_eff,
                             const uint8_t *absent0, uint8_t *resident, tsl__blocks *rec);
void tsl__blocks_free(tsl__blocks *rec);

/* The layout's view of a plan's iteration (plan_layout.c): the sweep's
 * blocks (R, with the time of every check point), the layout blocks they
 * form (lay[0..n): a persistent tensor resident across the boundary is one
 * wrapping block for its first and last residency; lifetimes in check
 * points, period R.period), per recorded block its layout block (of[]) and
 * its name (tensor, op, seq) in name[] (offset 0). */
typedef struct tsl__laid {
    tsl__blocks R;
    tsl_layout_block *lay;
    int32_t n;
    int32_t *of;
    tsl_plan_block *name;
} tsl__laid;
/* Builds it for plan p of w (validated by the caller; dev as for
 * tsl_peak_analysis). TSL_ERR_OOM (L is then empty). */
tsl_status tsl__laid_build(const tsl_workload *w, const tsl_plan *p,
                           const tsl_device_profile *dev, tsl__laid *L);
void tsl__laid_free(tsl__laid *L);

/* ---- prefetch.c: swap-ins as early as the layout allows ---------------------- */
/* Moves every swap-in of the n_jobs plans (sorted, laid out) as early as
 * its place in the layout and its channel allow: not before the last block
 * sharing its bytes, nor its tensor's previous residency, is freed; only
 * into time its channel is idle (every job's copies booked, on the shared
 * channels or each on its own: rq->shared_channels); its copy
 * ending no later than before. The footprints and the layouts stay; the
 * plans stay sorted. Jobs with planned waits are left alone. *moved (may
 * be NULL) counts the swap-ins moved. TSL_ERR_OOM. */
tsl_status tsl__prefetch(const tsl_plan_request *rq, tsl_plan **plans, int *moved);

/* Tensors resident at step `stop`, largest first (ties: lower index; a's
 * by_size filtered): writes them to out (n_tensors entries) and returns how
 * many. */
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
/* 1 if [a, b) overlaps no booking by more than the rounding of times
 * summed in another order (about 1e-12 relative: far below the verifier's
 * tolerance). */
int tsl__chan_is_free_rounded(const tsl__chan *c, double a, double b);
/* Books [a, b) (must be free within the rounding, tsl__chan_is_free_rounded:
 * TSL_ASSERT). TSL_ERR_OOM. */
tsl_status tsl__chan_book(tsl__chan *c, double a, double b);
/* Removes the booking [a, b) (must exist: TSL_ASSERT). */
void tsl__chan_unbook(tsl__chan *c, double a, double b);

/* Context of tsl__canon_tl: a job's timeline and the anchor of the last
 * canonicalised time. */
typedef struct tsl__canon_ctx {
    const tsl__timeline *tl;
    int32_t trigger;
    double delay;
    int capped;          /* 1: the trigger is at most max_trigger (a later time is anchored */
    int32_t max_trigger; /* on it with a longer delay) */
} tsl__canon_ctx;
/* canon callback (timeline.c): ctx is a tsl__canon_ctx; anchors x on its
 * timeline (tsl__anchor, or with `capped` on no op after max_trigger) and
 * keeps the anchor. */
double tsl__canon_tl(void *ctx, double x, int up);

/* ---- pjob.c: a job being planned, and the kit over all jobs --------------------- */
typedef struct tsl__pjob {
    const tsl_workload *w;
    int index;             /* among the kit's jobs */
    const tsl_device_profile *dev; /* its profile: the device's, or with channel shares the
                                      device's copy bandwidths times its share */
    tsl__chan own_d2h, own_h2d; /* its own channels, with channel shares (else unused) */
    tsl__activity act;
    tsl__timeline tl;
    tsl_plan *plan;        /* owned by the caller of tsl__kit_init */
    /* per event of plan: issue/effect time and copy end, per tensor list */
    double *ev_time;       /* issue (swap), effect (release), start (recompute) */
    double *ev_end;        /* copy end (swaps), else ev_time */
    int32_t *ev_next;      /* next event of the same tensor, -1 */
    int32_t *ev_head;      /* per tensor: the latest event added, -1 */
    int32_t cap_ev;
    /* memory */
    tsl__effect *eff;      /* sorted by tsl__effect_cmp */
    int32_t n_eff, cap_eff;
    uint8_t *absent0;      /* per tensor: absent at time 0 (across-iteration rule) */
    uint8_t *resident;     /* per tensor: scratch of the sweeps */
    tsl__sweep pk;         /* the peak under the plan (tsl__pjob_analyse) */
    tsl__profile prof;     /* check points of the last analysis (n = -1 if missing) */
    uint64_t analyses;     /* bumped by every analysis: what a policy derives from pk is
                              stale once this moved */
    uint8_t *swapped;      /* per tensor: has a swap-out */
    uint8_t *recomputed;   /* per tensor: has a recompute */
    int32_t n_swapped;     /* tensors with a swap-out */
} tsl__pjob;

typedef struct tsl__kit {
    const tsl_device_profile *dev;
    int n_jobs;
    tsl__pjob *jobs;
    int shared;            /* 1: every job's copies on the shared channels d2h/h2d (one time
                              axis, the paper); 0: each job on its own (channel shares) */
    tsl__chan d2h, h2d;    /* if !dev->duplex, h2d is unused and every copy books d2h */
    int rebook_rounded;    /* 1: tsl__kit_rebook accepts a copy moved onto its neighbour by
                              no more than the rounding (tsl__chan_is_free_rounded: two
                              copies back to back, moved by the same shift, summed in
                              another order); 0 (tsl__kit_init): exactly free, as the
                              paper's planning always had it */
    tsl_status status;     /* first error (out of host memory) met while planning */
} tsl__kit;

/* The kit over the request's jobs with their empty plans plans[j] (kept,
 * not owned), each job analysed (pk: its vanilla peak). TSL_ERR_OOM (the
 * kit is then freed). */
tsl_status tsl__kit_init(tsl__kit *K, const tsl_plan_request *rq, tsl_plan **plans);
/* Frees the jobs' states and the channels (not the plans). */
void tsl__kit_free(tsl__kit *K);
/* Takes every event out of every job's plan and every booking off the
 * channels: the kit is again as tsl__kit_init left it (each job re-timed
 * and analysed), for a policy that plans again from scratch. TSL_ERR_OOM
 * (also in K->status). */
tsl_status tsl__kit_reset(tsl__kit *K);

/* The channel job J's copies of a direction (1: host to device) book. */
static inline tsl__chan *tsl__chan_of(tsl__kit *K, tsl__pjob *J, int to_device) {
    if (!K->shared) return to_device && J->dev->duplex ? &J->own_h2d : &J->own_d2h;
    return to_device && K->dev->duplex ? &K->h2d : &K->d2h;
}

/* Adds an event to job J's plan with its times, keeping the per-tensor
 * lists; adds its memory effect (release, swap-in). A swap-in landing
 * after the op it precedes would start (a planned wait) moves the later
 * ops: J is then re-timed (tsl__pjob_retime), and its copies booked on the
 * channels must be re-booked by the caller (tsl__kit_rebook). TSL_ERR_OOM
 * (J unchanged). */
tsl_status tsl__pjob_add_event(tsl__pjob *J, const tsl_device_profile *dev, tsl_event e);
/* Replaces event k of J's plan by e in place - the same tensor, neither a
 * swap-out (a swap-in turned into a recomputation, and back) - and
 * re-times J (tsl__pjob_retime). The copy bookings are the caller's.
 * TSL_ERR_OOM (e in place, J's times those of the last timeline). */
tsl_status tsl__pjob_set_event(tsl__pjob *J, const tsl_device_profile *dev, int32_t k,
                               tsl_event e);
/* Removes the last `n` events added (and their effects). */
void tsl__pjob_pop_events(tsl__pjob *J, int n);
/* Re-runs the peak analysis of J (J->pk, J->prof; bumps J->analyses). */
void tsl__pjob_analyse(tsl__pjob *J);
/* Clears J->resident (filled by a sweep to J's peak) for what runs at the
 * peak and must stay: the peak op's inputs and outputs, and, when a
 * recomputation runs there, its tensor and its producer's inputs. Shared
 * by the planners that pick what to move at the peak (TENSILE's swap
 * candidates, the drafts of Capuchin and the budget mode). */
void tsl__pjob_keep_peak_users(tsl__pjob *J);
/* Rebuilds J's timeline from its plan (after a recomputation or a planned
 * wait was added or removed) and every event time and memory effect.
 * TSL_ERR_OOM. */
tsl_status tsl__pjob_retime(tsl__pjob *J, const tsl_device_profile *dev);
/* When position (op, rc) of J's timeline would start (docs/SCHEDULING.md,
 * "Planned waits"; rc: a recomputation before op, or -1 for the op
 * itself): its start, or, if it waits for a copy, when it would have
 * started. */
double tsl__pjob_would_start(const tsl__pjob *J, int32_t op, int32_t rc);
/* Tensor t of J is resident when a position of positive duration starts
 * at time x (step 4 of the time point: after every free at x) under J's
 * current plan. (Conservative: a swap-in issued at x, or t generated by an
 * op of zero duration at x, does not count.) */
int tsl__pjob_resident_at(const tsl__pjob *J, int32_t t, double x);
/* 1 if a swap-out of t issued at x, copying until `end`, finds t resident
 * with its data in place at its issue (after the frees of time point x:
 * docs/SCHEDULING.md, "Order at one time point") and keeps it until the
 * copy ends: no release that does not wait for it frees t meanwhile, none
 * that would wait for it changes its time, and t does not die before. */
int tsl__pjob_can_swap_out(const tsl__pjob *J, int32_t t, double x, double end);
/* Index of a swap-out event of t issued in [from, to] (the latest), or -1. */
int32_t tsl__find_swap_out(const tsl__pjob *J, int32_t t, double from, double to);
/* Release time of a release of t triggered by r given t's current
 * swap-outs plus, if extra_issue >= 0, one more [extra_issue, extra_end). */
double tsl__release_time_with(const tsl__pjob *J, int32_t t, int32_t r, double extra_issue,
                              double extra_end);
/* The same for a release of t issued at te (a release preceding an op may
 * be issued after its trigger's end: docs/SCHEDULING.md). */
double tsl__release_time_issued(const tsl__pjob *J, int32_t t, double te, double extra_issue,
                                double extra_end);

/* ---- swap_place.c: placing and committing a swap ------------------------------------ */

/* A swap being assembled for one gap of one tensor: an optional swap-out,
 * a release, a swap-in (times as the events will have them). */
typedef struct tsl__swap_draft {
    int32_t tensor;
    int has_out;
    int32_t so_trig;
    double so_delay, so_issue, so_end;
    int32_t rel_trig;
    int rel_waits;       /* 1: the release precedes op rel_before, issued rel_delay after its */
    int32_t rel_before;  /* trigger's end - the op waits for the swap-out (a planned wait); */
    double rel_delay;    /* 0: it acts at its trigger's end and nothing waits for it */
    int32_t si_trig, si_precede;
    double si_delay, si_issue, si_end;
    int32_t gap;         /* index in act.acc of the gap it fills (the policy's bookkeeping) */
    int n_abs;           /* the intervals [abs_lo, abs_hi) where the tensor */
    double abs_lo[3], abs_hi[3]; /* becomes absent (the policy's estimate) */
} tsl__swap_draft;

/* The leaving half of a swap of t whose value was generated by `gen_end`
 * and is read last by op `last` before it goes: if a swap-out of that value
 * is planned already it is reused and t is released after `last`; so it
 * is, with no copy at all, for a persistent t absent at time 0 that the
 * iteration has not written by `last` (a clean drop: the host copy it came
 * back from is current, docs/SCHEDULING.md); else a swap-out is placed as
 * early as the D2H channel allows from gen_end, ending by `by`, and t is
 * released after the op during which it ends (not before `last`). Fills
 * d's swap-out and release fields (nothing is booked) and returns the
 * release time, or -1 if no swap-out fits. */
double tsl__place_swap_out(tsl__kit *K, tsl__pjob *J, int32_t t, double gen_end, int32_t last,
                           double by, tsl__swap_draft *d);
/* The coming-back half: a swap-in of d->tensor placed as late as the H2D
 * channel allows, starting at or after lo and ending by end_by, preceding
 * op `precede`. Fills d's swap-in fields and returns 1, or 0 if none fits
 * (d unchanged). */
int tsl__place_swap_in(tsl__kit *K, tsl__pjob *J, double lo, double end_by,
                       int32_t precede, tsl__swap_draft *d);
/* 1 if persistent t of J may be dropped clean in its gap after access
 * index kb (docs/SCHEDULING.md, "Clean drops"): J plans nothing for t yet,
 * t is not written in the iteration up to that access and is written after
 * it (its update). Once t is swapped across the iteration boundary
 * (tsl__place_across) it is absent at time 0 and comes back as a copy of
 * its host copy, which stays current through the gap: it can be released
 * there with no swap-out. */
int tsl__clean_drop_ok(const tsl__pjob *J, int32_t t, int32_t kb);
/* The across-iteration swap of persistent t into *x: a swap-out after its
 * last write, as early as the D2H channel allows, ending by the end of the
 * iteration; released after its last access (absent at time 0 by the
 * periodic rule); a swap-in as late as the H2D channel allows, landing by
 * its first access. x->gap is its last access index; x's absence
 * intervals are set. Returns 1, or 0 if t is never written or a copy does
 * not fit (nothing is booked either way). */
int tsl__place_across(tsl__kit *K, tsl__pjob *J, int32_t t, tsl__swap_draft *x);
/* 1 if no copy of draft x overlaps one of draft d on a channel they share
 * (both drafted against the same bookings, to be committed together: on
 * a profile that is not duplex both directions share one channel). */
int tsl__drafts_disjoint(tsl__kit *K, tsl__pjob *J, const tsl__swap_draft *x,
                         const tsl__swap_draft *d);
/* Books the draft's copies and adds its events to J. Returns 1, or 0 with
 * K->status set if out of host memory (nothing added then). */
int tsl__commit_swap(tsl__kit *K, tsl__pjob *J, const tsl__swap_draft *d);
/* Its two halves: the leaving half (the swap-out booked, if the draft has
 * one, and the SWAP_OUT and RELEASE events added), and the coming-back half
 * (the swap-in booked and its event added; a swap-in landing after its op
 * would start re-times J - a planned wait - and re-booking J's other copies
 * is then the caller's, tsl__kit_rebook). Each returns 1, or 0 with
 * K->status set if out of host memory (nothing of that half added). */
int tsl__commit_swap_out(tsl__kit *K, tsl__pjob *J, const tsl__swap_draft *d);
int tsl__commit_swap_in(tsl__kit *K, tsl__pjob *J, const tsl__swap_draft *d);

/* ---- swap_list.c: a policy's whole list of swaps, compute waiting for late copies ---- */

/* One swap a policy asks for: tensor `tensor` of job `job` leaves the
 * device after op `last` and comes back before op `precede`. */
typedef struct tsl__swap_req {
    int job;            /* index among the kit's jobs */
    int32_t tensor;
    int32_t out_after;  /* the swap-out starts at or after this op's end (-1: time 0), as
                           early as the device-to-host channel allows */
    int32_t last;       /* the last op using the tensor before it leaves: the release is
                           triggered by it, or by the op during which the swap-out starts
                           if that is later */
    int32_t precede;    /* the op reading it next; precede <= last: in the next iteration
                           (a persistent tensor swapped across the iteration boundary:
                           released after `last`, absent at time 0, swapped in before
                           `precede` within the iteration) */
    int32_t in_after;   /* the swap-in starts at or after this op's end (-1: time 0), and
                           after the release */
    int in_early;       /* 1: the swap-in starts as early as the host-to-device channel
                           allows (its op waits if it is late); 0: as late as it allows,
                           landing by the start of `precede` */
    double out_key;     /* the swap-outs are placed in ascending order of out_key, the */
    double in_key;      /* swap-ins in ascending order of in_key (ties: job, precede,
                           tensor) */
    int placed;         /* out: 1 if the swap is in the plan */
} tsl__swap_req;

/* Places the swaps reqs[0..n) (at most one per job and tensor) into the
 * kit's plans, which must be empty: every swap-out in its order, then
 * every swap-in in its order, ops waiting for late swap-ins (planned
 * waits). A swap whose swap-out does not fit before the next read is left
 * out; so is one whose swap-in does not fit (the kit is then reset and the
 * list placed again without it). Sets reqs[i].placed; returns the number
 * placed. K->status: TSL_ERR_OOM if out of host memory. */
int tsl__place_swaps(tsl__kit *K, tsl__swap_req *reqs, int n);

/* ---- rc_check.c: recomputation candidates, re-booking -------------------------------- */

/* 1 if every input of op q is resident while a recomputation by q before
 * op b runs from `at` to `at` + its latency, under J's plan: resident at
 * `at` with its data landed (no swap-in of it still copying), no release
 * of it taking effect before the end, and none triggered before b still
 * pending at `at` (waiting for a swap-out: the input would be there only
 * because that copy is slower than the ops in between). */
int tsl__rc_inputs_ready(const tsl__pjob *J, int32_t q, int32_t b, double at);
/* The same for one input x of a recomputation before op b running from
 * `at` to `end` (Capuchin's chains check the inputs they do not
 * regenerate one by one). */
int tsl__rc_input_ready(const tsl__pjob *J, int32_t x, int32_t b, double at, double end);
/* 1 if tensor t's producer q can be re-run exactly right before op b: it
 * has one output (t), no workspace, a positive latency, does not read t,
 * none of its inputs is written between q and b, and they are all ready
 * (tsl__rc_inputs_ready) at b's start. */
int tsl__rc_producer_ok(const tsl__pjob *J, int32_t t, int32_t q, int32_t b);
/* Moves every copy booking of J from its old times to its current ones
 * (after J's timeline moved). old[] holds (issue, end) pairs of J's swap
 * events in event order. Returns 1, or 0 if a new booking clashes (beyond
 * the rounding if K->rebook_rounded) or ends after J's period (the old
 * bookings are then restored). */
int tsl__kit_rebook(tsl__kit *K, tsl__pjob *J, const double *old);
/* Writes the (issue, end) of every copy of J (its swap-outs and swap-ins,
 * in event order) into old, two doubles per copy - tsl__kit_rebook's
 * input - and returns how many copies. */
int32_t tsl__pjob_copy_times(const tsl__pjob *J, double *old);
/* Room for the (issue, end) pairs of J's copies and `more` more: a
 * malloc'd buffer (the caller's), or NULL with K->status TSL_ERR_OOM. */
double *tsl__kit_copy_buf(tsl__kit *K, const tsl__pjob *J, int more);
/* Undoes the events J gained since it had n0: its copies unbooked (at the
 * pairs cur holds, tsl__pjob_copy_times' order, or with cur NULL at their
 * current times), the events popped, J re-timed, its remaining copies
 * booked at the pairs old holds again, J analysed. Errors go to
 * K->status. */
void tsl__kit_undo(tsl__kit *K, tsl__pjob *J, int32_t n0, const double *cur, const double *old);
#endif
