/*
 * autoswap_internal.h - what the files of the "autoswap" policy share
 * (autoswap_scores.c: candidates and priority scores, the paper's IV-A and
 * IV-B; policy_autoswap.c: selection, swap schedule and Bayesian
 * optimisation, IV-C to IV-E). Built on the planner kit (kit.h). Not part
 * of the public API.
 */
#ifndef TSL_SCHED_AUTOSWAP_INTERNAL_H
#define TSL_SCHED_AUTOSWAP_INTERNAL_H

#include "sched/kit.h"
#include "tensile/policy_autoswap.h"

/* The four priority scores, in the order of the paper's equation (3):
 * BO = a AOA + b DOA + c WDOA + d SWDOA. */
enum { TSL__AS_AOA = 0, TSL__AS_DOA, TSL__AS_WDOA, TSL__AS_SWDOA, TSL__AS_N_SCORES };

/* A candidate: the gap of one tensor of one job between the two
 * consecutive accesses around the job's (vanilla) peak. */
typedef struct tsl__as_cand {
    int job;
    int32_t tensor;
    int32_t before;        /* the access op before the gap: the tensor leaves after it */
    int32_t after;         /* the access op after it: the tensor is back before it;
                              after <= before: the gap wraps the iteration boundary (a
                              persistent tensor, back before its first access of the next
                              iteration) */
    size_t bytes;
    double gap;            /* the time between the two accesses (end of `before` to start of
                              `after`, across the boundary if it wraps), vanilla times */
    double t_out, t_in;    /* its copy times */
    int n_abs;             /* the intervals where it is away, [lo, hi), from the end of */
    double abs_lo[2], abs_hi[2]; /* its swap-out to the start of its swap-in */
    double score[TSL__AS_N_SCORES];  /* DOA, AOA, WDOA, SWDOA as the paper defines them */
    double z[TSL__AS_N_SCORES];      /* the same standardised over the candidates */
} tsl__as_cand;

/* A job's vanilla load over time: load0 at time 0, then during op i (from
 * s_i to e_i) load[i]; cum[i] is its integral from 0 to s_i. */
typedef struct tsl__as_load {
    int32_t n_ops;
    double *s, *e;         /* the job's vanilla op times (copied from its kit timeline,
                              which moves as plans change) */
    size_t load0;          /* at time 0, once the data is loaded */
    size_t *load;          /* n_ops */
    double *cum;           /* n_ops + 1 */
} tsl__as_load;

/* The load of kit job J with its empty plan (its check points: one per
 * op). TSL_ERR_OOM. */
tsl_status tsl__as_load_build(const tsl__pjob *J, tsl__as_load *L);
void tsl__as_load_free(tsl__as_load *L);
/* The integral of the load over [a, b) (0 if b <= a; times outside the
 * iteration count nothing). */
double tsl__as_load_integral(const tsl__as_load *L, double a, double b);

/* The candidates of every job of K, whose plans are empty (IV-A): each
 * tensor of at least min_bytes, not INPUT or LABEL, not used by the op
 * running at its job's peak, with an access before and after the peak
 * (one that reads after it) - for a persistent tensor whose accesses all
 * lie on one side of the peak, the gap across the iteration boundary - in
 * job then tensor order, with their four scores and standardised scores
 * (IV-B; loads: L[j], tsl__as_load_build). *out is malloc'd (NULL if
 * none). TSL_ERR_OOM. */
tsl_status tsl__as_candidates(const tsl__kit *K, const tsl__as_load *L, size_t min_bytes,
                              tsl__as_cand **out, int *n);
#endif
