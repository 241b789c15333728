/*
 * capuchin_internal.h - the state of the "capuchin" policy
 * (policy_capuchin.c): the planner kit (kit.h) and the one-choice-per-round
 * drafting it shares with TENSILE's planning to a budget (drafts.h: the
 * candidates at the peaks, their swap and chained-recomputation drafts,
 * committing one). Not part of the public API.
 *
 * MSPS (Capuchin's memory saving per second) = bytes / recomputation time
 * (the chain's producers included).
 */
#ifndef TSL_SCHED_CAPUCHIN_INTERNAL_H
#define TSL_SCHED_CAPUCHIN_INTERNAL_H

#include "sched/drafts.h"
#include "tensile/policy_capuchin.h"

typedef struct tsl__capuchin {
    tsl__kit K;
    const tsl_capuchin_opts *opts;
    tsl__drafter D;       /* over K */
    uint8_t **done;       /* per job, per access op (act.acc): its gap was planned or given up */
    size_t *min_bytes;    /* per job: the smallest candidate (opts->min_bytes resolved) */
} tsl__capuchin;
#endif
