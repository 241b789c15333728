/*
 * tensile/policy_autoswap.h - the options of the "autoswap" policy
 * (AutoSwap, Zhang et al., section IV: candidates, priority scores, their
 * weights by Bayesian optimisation, the swap schedule; src/sched/
 * policy_autoswap.c): for callers that set them as C fields rather than by
 * name (tsl_policy_opts_set with "size-threshold", "score",
 * "evaluations", "seed").
 *
 * Example usage:
 *
 *   tsl_autoswap_opts ao = tsl_autoswap_opts_default();
 *   ao.evaluations = 10;                               // fewer weightings tried
 *   tsl_plan_opts po = tsl_plan_opts_default();
 *   po.policy = tsl_policy_find("autoswap");
 *   po.opts = &ao;                                     // must outlive po's use
 *   po.budget = (size_t)6 << 30;                       // AutoSwap's memory load limit
 *   tsl_plan_jobs(w, 1, &dev, &po, plans, &rep);
 */
#ifndef TENSILE_POLICY_AUTOSWAP_H
#define TENSILE_POLICY_AUTOSWAP_H

#include "tensile/policy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The priority score candidates are ranked by (the "score" option). */
typedef enum tsl_autoswap_score {
    TSL_AUTOSWAP_BO = 0, /* the four combined, weights by Bayesian optimisation (the paper's BO) */
    TSL_AUTOSWAP_AOA,    /* area of absence */
    TSL_AUTOSWAP_DOA,    /* duration of absence */
    TSL_AUTOSWAP_WDOA,   /* weighted duration of absence */
    TSL_AUTOSWAP_SWDOA,  /* submodular weighted duration of absence */
} tsl_autoswap_score;

typedef struct tsl_autoswap_opts {
    double size_threshold; /* bytes: smaller tensors are not candidates; [0, 2^60] (default
                              1 MiB, the paper's "e.g., 1 MB") */
    int score;             /* a tsl_autoswap_score, 0..4 (default 0: BO) */
    int evaluations;       /* BO: weightings evaluated, the four single scores and 4 random
                              ones first; 1..1000 (default 30, the paper's "about 30") */
    int seed;              /* BO: the random weightings' and the search's seed, 0..2^31-1
                              (default 1) */
} tsl_autoswap_opts;

/* The defaults above. */
tsl_autoswap_opts tsl_autoswap_opts_default(void);

#ifdef __cplusplus
}
#endif
#endif
