/*
 * drafts.h - planning one choice at a time at the jobs' peaks (not part of
 * the public API; built on the planner kit, kit.h): the candidates resident
 * at every job's peak, what each may become - a swap whose copies hide, a
 * swap whose late swap-in makes compute wait (a planned wait), a
 * recomputation chained back to the nearest resident tensors - committing
 * one (undone if it does not hold), and the loop that takes one choice per
 * round until the jobs' peaks fit a budget, the choice left to the policy.
 * Shared by Capuchin (policy_capuchin.c: hidden swaps by free time, then
 * memory saving per second) and TENSILE's planning to a budget
 * (tensile_budget.c: the least cost per byte).
 *
 * Vocabulary (Capuchin's): a candidate is a tensor resident at its job's
 * peak and accessed on both sides of it; its *evicted access* is its last
 * access before the op running at the peak (it leaves the device after
 * it), its *back access* the first read after that op (it must be back
 * before it). Its *free time* FT is the time its swap leaves between the
 * two copies: swap-in start - swap-out end. Its *recomputation* re-runs its
 * producer right before the back access, and first, in a *chain*, the
 * producers of those of the producer's inputs that are no longer resident
 * there (recursively: the chain stops at the nearest resident tensors).
 *
 * Example usage:
 *
 *   tsl__drafter D = {.K = &kit, .swap = 1, .recompute = 1, .done = done,
 *                     .min_bytes = min_bytes};
 *   int rounds = tsl__drafts_run(&D, budget, my_pick, ctx);
 *   tsl__drafter_free(&D);
 */
#ifndef TSL_SCHED_DRAFTS_H
#define TSL_SCHED_DRAFTS_H

#include "sched/kit.h"

/* The longest recomputation chain (tensors regenerated before the one
 * recomputed). A longer lineage is not a recomputation candidate. */
#define TSL__CHAIN_MAX 32

/* One candidate and its drafts. */
typedef struct tsl__draft_cand {
    int job;
    int32_t tensor;
    int32_t gap;          /* index in the job's act.acc of its evicted access */
    int32_t evict_op;     /* the evicted access's op */
    int32_t back_op;      /* the back access's op */
    int wrap;             /* 1: the peak lies in the tensor's wrap gap (a persistent tensor,
                             D->across): evict_op is its last access, back_op its first, gap
                             its last access's index; its swap crosses the iteration's
                             boundary and it has no recomputation */
    int32_t late_in;      /* -1; or the plan swaps the tensor in this gap already and this
                             swap-in event of it, issued by the peak, lands it there: its
                             swap draft moves that swap-in after the peak */
    size_t bytes;
    /* its swap (tsl__draft_swap) */
    int swap_ok;
    tsl__swap_draft sw;
    int has_across;       /* sw is a clean drop (no swap-out) that holds once `across`, the */
    tsl__swap_draft across; /* tensor's across-iteration swap, is committed first */
    double ft;            /* free time: swap-in issue - swap-out end (or release) */
    double stall;         /* the wait of the back access for a late swap-in (0: hidden) */
    /* its recomputation (tsl__draft_rc) */
    int rc_ok;
    int32_t chain[TSL__CHAIN_MAX]; /* ascending index: the order they run in */
    int n_chain;
    double rc_us;         /* the producers' latencies, the tensor's and the chain's */
    int32_t rc_before;    /* the op it runs before: the back access, or an earlier one where
                             a recomputation of the plan reads the tensor first */
} tsl__draft_cand;

/* The state of one-choice-at-a-time planning over a kit's jobs. The
 * caller sets K, swap, recompute, done and min_bytes (owned by the caller);
 * cand is scratch (free with tsl__drafter_free). */
typedef struct tsl__drafter {
    tsl__kit *K;
    int swap, recompute;  /* which drafts may be made */
    int single_output;    /* recomputations re-run single-output producers only (not batch
                             norm's: remat.h) */
    int clean_drops;      /* a swap of a persistent tensor whose swap-out does not fit may be
                             a clean drop (tsl__clean_drop_ok) */
    int late_ins;         /* a tensor the plan swaps in the gap around the peak already, but
                             brings back by the peak, is a candidate (its swap-in moved) */
    int across;           /* a persistent tensor whose wrap gap (its last access to the end,
                             time 0 to its first access) holds the peak is a candidate: its
                             swap across the boundary (tensile_across.c's option A) */
    int out_waits;        /* a swap whose swap-out does not end by the peak may make the op
                             at the peak wait for it (a release preceding that op: a planned
                             wait for a swap-out), its stall in the cost */
    int convert;          /* with late_ins: a late swap-in's candidate may also become a
                             recomputation, that swap-in turned into it (its swap-out and
                             release stay; the host copy goes unread) */
    uint8_t **late_done;  /* with late_ins (the caller's, zeroed): per job, per access op: that
                             gap's swap-in was moved or given up */
    uint8_t **done;       /* per job, per access op (act.acc): its gap was planned or given up */
    const size_t *min_bytes; /* per job: the smallest candidate */
    const size_t *min_wrap;  /* with across: per job, the smallest wrap-gap candidate */
    tsl__draft_cand *cand; /* the candidates of one round */
    int32_t n_cand, cap_cand;
} tsl__drafter;

/* Frees D's scratch (not what the caller owns). */
void tsl__drafter_free(tsl__drafter *D);

/* The candidates at every job's current peak into D->cand (gaps not done,
 * at least D->min_bytes, not data, not used by what runs at the peak),
 * nothing drafted yet; with D->late_ins also the tensors whose gap around
 * the peak the plan swaps already but whose swap-in is issued by the peak
 * (a swap-in placed after an earlier peak, before this one; not moved or
 * given up before): their swap draft is that swap-in moved after the peak
 * (c->late_in). Returns their number (-1: out of host memory, in
 * D->K->status). */
int32_t tsl__drafts_candidates(tsl__drafter *D);
/* Drafts c's swap: the swap-out as early as the device-to-host channel
 * allows after the evicted access, the tensor gone by the peak; with
 * `hidden`, the swap-in as late as the host-to-device channel allows,
 * after the peak, landing by the back access (stall 0, ft set); else as
 * early as it allows after the peak, the back access waiting for it if it
 * is late (ft and stall set). With D->clean_drops, a persistent tensor
 * whose swap-out does not fit may leave with no copy (a clean drop,
 * c->has_across: its across-iteration swap goes with it).
 * Sets c->swap_ok (0: no such swap, or D->swap is 0). */
void tsl__draft_swap(tsl__drafter *D, tsl__draft_cand *c, int hidden);
/* Drafts c's recomputation right before its back access - or, where a
 * recomputation the plan has already reads the tensor before that, after
 * the peak, right before the first such one (c->rc_before): released after
 * its evicted access, the tensor must be back there - with its chain
 * (see above): every tensor of it transient, its producer replayable
 * exactly (one output, not in place, a positive latency), its producer's
 * inputs not written since it ran; chain members dead by the back access
 * (no later read) or brought back for their later reads only after it
 * (their swap-ins issued after it ends, their recomputations before later
 * ops), and of lower index than what they feed. Sets c->rc_ok (0 also if
 * D->recompute is 0). */
void tsl__draft_rc(tsl__drafter *D, tsl__draft_cand *c);
/* Commits c's swap draft (its planned wait re-times the job and moves its
 * other copies) or its recomputation (releases, the chain, releases of the
 * chain after the back access), then checks that the job's peak did not
 * rise and that every recomputation of the job (this one's and the earlier
 * ones) still finds its inputs there: if not, the plan is as before. A
 * late swap-in (c->late_in >= 0) re-anchors that swap-in event at the
 * draft's trigger and delay, the job re-timed and its copies re-booked; a
 * clean drop commits its across-iteration swap first. A late swap-in's
 * recomputation (D->convert) turns that swap-in event into it, before
 * c->rc_before. Returns 1 if committed. */
int tsl__draft_commit_swap(tsl__drafter *D, const tsl__draft_cand *c);
int tsl__draft_commit_rc(tsl__drafter *D, const tsl__draft_cand *c);

/* A policy's choice among D->cand[0 .. D->n_cand) (the candidates of this
 * round, nothing drafted yet): the index of the one to commit and, in
 * *swap, 1 for its swap draft or 0 for its recomputation; -1 if none. */
typedef int32_t (*tsl__draft_pick_fn)(tsl__drafter *D, void *ctx, int *swap);

/* While the sum of the jobs' peaks is above `budget` (and no error): the
 * candidates at the peaks, the one `pick` chooses marked done (never tried
 * again, committed or not) and committed. Stops when the peaks fit, no
 * candidate is left or pick chooses none. Returns the rounds done. */
int tsl__drafts_run(tsl__drafter *D, size_t budget, tsl__draft_pick_fn pick, void *ctx);
/* The sum of the kit's jobs' current peaks. */
size_t tsl__kit_peaks(const tsl__kit *K);
/* 1 if a comes before b among equals: larger, then lower job, then lower
 * tensor (a deterministic order whatever the collection order). */
int tsl__draft_first_of_equals(const tsl__draft_cand *a, const tsl__draft_cand *b);
#endif
