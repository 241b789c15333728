/*
 * capuchin_internal.h - what the files of the "capuchin" policy share
 * (policy_capuchin.c: the hybrid policy's loop; capuchin_drafts.c: the
 * candidates, their swap and recomputation drafts, committing one). Built
 * on the planner kit (kit.h). Not part of the public API.
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
 * MSPS = bytes / recomputation time (the chain's producers included).
 */
#ifndef TSL_SCHED_CAPUCHIN_INTERNAL_H
#define TSL_SCHED_CAPUCHIN_INTERNAL_H

#include "sched/kit.h"
#include "tensile/policy_capuchin.h"

/* The longest recomputation chain (tensors regenerated before the one
 * recomputed). A longer lineage is not a recomputation candidate. */
#define TSL__CAP_CHAIN_MAX 32

/* One candidate and its drafts. */
typedef struct tsl__cap_cand {
    int job;
    int32_t tensor;
    int32_t gap;          /* index in the job's act.acc of its evicted access */
    int32_t evict_op;     /* the evicted access's op */
    int32_t back_op;      /* the back access's op */
    size_t bytes;
    /* its swap (tsl__cap_draft_swap) */
    int swap_ok;
    tsl__swap_draft sw;
    double ft;            /* free time: swap-in issue - swap-out end (or release) */
    double stall;         /* the wait of the back access for a late swap-in (0: hidden) */
    /* its recomputation (tsl__cap_draft_rc) */
    int rc_ok;
    int32_t chain[TSL__CAP_CHAIN_MAX]; /* ascending index: the order they run in */
    int n_chain;
    double rc_us;         /* the producers' latencies, the tensor's and the chain's */
} tsl__cap_cand;

typedef struct tsl__capuchin {
    tsl__kit K;
    const tsl_capuchin_opts *opts;
    uint8_t **done;       /* per job, per access op (act.acc): its gap was planned or given up */
    size_t *min_bytes;    /* per job: the smallest candidate (opts->min_bytes resolved) */
    tsl__cap_cand *cand;  /* scratch: the candidates of one round */
    int32_t n_cand, cap_cand;
} tsl__capuchin;

/* The candidates at every job's current peak into C->cand (gaps not done,
 * at least C->min_bytes, not data, not used by what runs at the peak),
 * nothing drafted yet. Returns their number (-1: out of host memory, in
 * C->K.status). */
int32_t tsl__cap_candidates(tsl__capuchin *C);
/* Drafts c's swap: the swap-out as early as the device-to-host channel
 * allows after the evicted access, the tensor gone by the peak; with
 * `hidden`, the swap-in as late as the host-to-device channel allows,
 * after the peak, landing by the back access (stall 0, ft set); else as
 * early as it allows after the peak, the back access waiting for it if it
 * is late (ft and stall set). Sets c->swap_ok (0: no such swap). */
void tsl__cap_draft_swap(tsl__capuchin *C, tsl__cap_cand *c, int hidden);
/* Drafts c's recomputation right before its back access with its chain
 * (see above): every tensor of it transient, its producer replayable
 * exactly (one output, not in place, a positive latency), its producer's
 * inputs not written since it ran; chain members dead by the back access
 * (no later read) and of lower index than what they feed. Sets c->rc_ok. */
void tsl__cap_draft_rc(tsl__capuchin *C, tsl__cap_cand *c);
/* Commits c's swap draft (its planned wait re-times the job and moves its
 * other copies) or its recomputation (releases, the chain, releases of the
 * chain after the back access), then checks that the job's peak did not
 * rise and that every recomputation of the job (this one's and the earlier
 * ones) still finds its inputs there: if not, the plan is as before.
 * Returns 1 if committed. */
int tsl__cap_commit_swap(tsl__capuchin *C, const tsl__cap_cand *c);
int tsl__cap_commit_rc(tsl__capuchin *C, const tsl__cap_cand *c);
#endif
