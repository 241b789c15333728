/*
 * tensile_internal.h - what the files of the "tensile" policy share
 * (policy_tensile.c: Algorithm 3; tensile_swap.c: Algorithm 2 for one
 * candidate; tensile_across.c: across-iteration swaps; tensile_recompute.c:
 * recomputation; tensile_budget.c: planning on to a budget). Built on the planner kit (kit.h). Not part of the public
 * API.
 */
#ifndef TSL_SCHED_TENSILE_INTERNAL_H
#define TSL_SCHED_TENSILE_INTERNAL_H

#include "sched/kit.h"
#include "tensile/policy_tensile.h"

/* TENSILE's own state of one job, beside the kit's tsl__pjob. Per access
 * op (index into act.acc): the gap after it (the wrap gap for the last
 * access op of a persistent tensor). */
typedef struct tsl__tjob {
    uint8_t *gap_done;     /* swapped, recomputed, or given up */
    double *gap_fail_out;  /* largest peak time at which its swap-out did not fit */
    double *gap_fail_in;   /* smallest peak time at which its swap-in did not fit */
    int32_t *mpt;          /* the swap candidates at the peak, largest first */
    int32_t n_mpt;
    uint64_t mpt_at;       /* the kit job's `analyses` when mpt was collected (0: never;
                              stale once they differ) */
    size_t min_swap;       /* the smallest tensor it swaps (opts->min_swap_bytes resolved) */
    size_t min_wrap;       /* the smallest swap across the boundary the budget mode drafts
                              (min-swap-bytes' default whatever the option) */
} tsl__tjob;

/* A way of planning to a budget (policy_tensile.c, plan_tensile):
 * recomputing single-output producers only (`single`), every swap size
 * (`every`: min-swap-bytes 0, in the options the way plans with),
 * persistent tensors dropped clean where their swap-outs do not fit
 * (`clean`: tsl__try_clean_drop, tsl__drafter.clean_drops), persistent
 * tensors whose wrap gap holds the peak offered (`across`:
 * tsl__drafter.across), swap-ins landing by the peak turned into
 * recomputations (`convert`: tsl__drafter.convert), the op at the peak
 * waiting for a swap-out that does not end by it (`out_waits`:
 * tsl__drafter.out_waits). */
typedef struct tsl__way {
    int single, every, clean, across, convert, out_waits;
} tsl__way;

typedef struct tsl__tensile {
    tsl__kit K;
    const tsl_tensile_opts *opts;
    tsl__tjob *tj;         /* per job */
    int32_t total_swapped; /* tensors with a swap-out, all jobs */
    int32_t *pos;          /* per job: scratch of one swap step */
    tsl__way way;          /* how it plans on to a budget (all 0: the first way) */
} tsl__tensile;

/* One swap TENSILE may commit: draft d; with has_across, a clean drop (d a
 * release with no swap-out and a swap-in, in a gap of a persistent
 * tensor) that holds only once `across`, the tensor's across-iteration
 * swap, is committed first (tensile_across.c, tsl__try_clean_drop). d's
 * absence intervals include across's. */
typedef struct tsl__tdraft {
    tsl__swap_draft d;
    int has_across;
    tsl__swap_draft across;
} tsl__tdraft;

/* tensile_swap.c: Algorithm 2 for candidate t of job j at its current peak
 * (the gap of t around the peak). Returns 1 and fills *d if a swap fits on
 * the channels as they are (nothing is booked or added), 0 if not (the
 * gap's failure is recorded). */
int tsl__try_swap(tsl__tensile *T, int j, int32_t t, tsl__tdraft *d);
/* Completes draft d of job j, whose tensor leaves the device at `rel`: it
 * must have left by the peak time, then its swap-in is placed as late as
 * the H2D channel allows after the peak, ending by the start of op
 * `precede` less the slack (opts->swap_in_slack times its copy time). If
 * either fails the gap's failure time is recorded and 0 returned; else the
 * swap-in is filled in, d stored in *out, and 1 returned. */
int tsl__tensile_swap_in(tsl__tensile *T, int j, tsl__swap_draft d, double rel, int32_t precede,
                         tsl__swap_draft *out);
/* tensile_across.c: the wrap gap of persistent t (peak before its first or
 * after its last access op), as tsl__try_swap. */
int tsl__try_across(tsl__tensile *T, int j, int32_t t, int32_t gap, tsl__swap_draft *d);
/* tensile_across.c: the clean drop of persistent t of job j in its gap
 * after access index kb (read again at access index ka; the caller tries
 * it only with T->way.clean set): t has no events yet and is not
 * written in the iteration before the gap, so once it is swapped across
 * the iteration boundary (out after its last write, absent at time 0, in
 * before its first access) its device copy equals its host copy through
 * the gap, and it can leave at the gap's start with no copy at all and
 * come back after the peak. Returns 1 and fills *out (has_across set) if
 * both fit on the channels as they are, else 0 (nothing booked either
 * way). */
int tsl__try_clean_drop(tsl__tensile *T, int j, int32_t t, int32_t kb, int32_t ka,
                        tsl__tdraft *out);
/* tensile_recompute.c: one recomputation over all jobs (largest MSPS).
 * Returns the index of the job it was added to, or -1. */
int tsl__try_recompute(tsl__tensile *T);
/* tensile_budget.c: planning to a budget (opts->fit) after Algorithm 3:
 * while the jobs' peaks exceed `budget` (and it is not below their
 * floors, tsl_workload_op_floor), one choice per round - the candidate at
 * the peaks whose cheapest form (a hidden swap, a swap with a planned wait, a
 * chained recomputation) adds the least iteration time per byte. Returns
 * the rounds done (0: nothing to do); errors in T->K.status. */
int tsl__tensile_fit(tsl__tensile *T, size_t budget);
#endif
