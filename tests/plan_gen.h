/*
 * plan_gen.h - seeded generator of random VALID plans for the workload of a
 * real training graph (tsl_workload_from_graph: tensor i = graph tensor i,
 * op i = graph op i), for the runtime's invariant tests: whatever valid plan
 * the executor is given, the parameters must come out bitwise identical
 * (DESIGN.md invariant 5) and the measured peak must be the predicted one.
 *
 * A plan is grown item by item. An item is either
 *   - a swap triple on a random gap (u, v) between two consecutive accesses
 *     of a random tensor, v reading it: SWAP_OUT after the write of its
 *     current value and at or before the end of u, RELEASE after u, SWAP_IN
 *     whose copy ends by the start of v (or, with chance p_wait, issued by
 *     the start of v and ending after it: v waits for it); the copies are
 *     placed on their channel so that they overlap no copy already booked
 *     (one transfer at a time per channel, docs/SCHEDULING.md), at random
 *     positions within their windows (often the earliest swap-out and the
 *     latest swap-in, as a planner would), or
 *   - a recomputation: RELEASE after u and RECOMPUTE before v of a tensor
 *     whose producer is side-effect free (one output, not in place, not
 *     dropout, batch norm or an optimizer update), whose inputs are still
 *     live at v (non-persistent ones read at or after v) and unchanged since
 *     the producer ran.
 * Times are taken on the timeline of the plan so far (recomputations shift
 * the later ops, docs/SCHEDULING.md "Time"; with p_wait > 0, planned waits
 * too: the shared accounting's timeline). After each item the candidate
 * plan gets predicted_peak and predicted_period_us from tsl_peak_analysis
 * and is kept only if tsl_plan_verify accepts it; otherwise the item is
 * dropped. Everything follows from the seed: the same graph, workload,
 * profile, seed and options give the same plan, event for event.
 *
 * Example usage:
 *
 *   pg_opts o = pg_opts_default();
 *   pg_stats st;
 *   tsl_plan *p = pg_random_plan(g, w, &dev, seed, &o, &st);   // verified
 *   ... run it ...
 *   tsl_plan_free(p);
 */
#ifndef TSL_TESTS_PLAN_GEN_H
#define TSL_TESTS_PLAN_GEN_H
#include <stdint.h>
#include "tensile/verify.h"

typedef struct pg_opts {
    int max_items;       /* items kept per plan: a random target in [1, max_items] (default 6) */
    int attempts;        /* candidate items tried per plan, at most (default 4 * max_items) */
    double p_recompute;  /* chance a candidate is a recomputation (default 0.35) */
    double p_wait;       /* chance a swap candidate's swap-in is placed to land after its op
                            would start, so that the op waits for it (a planned wait,
                            docs/SCHEDULING.md; default 0: never) */
} pg_opts;

pg_opts pg_opts_default(void);

typedef struct pg_stats {
    int tried;           /* candidate items built */
    int swaps;           /* swap triples kept */
    int recomputes;      /* recomputations kept */
    int rejected;        /* candidates the verifier (or peak analysis) refused */
    int no_room;         /* candidates without a window or a free channel slot */
    int waits;           /* planned waits in the plan returned */
} pg_stats;

/* A random plan for w (made from graph g by tsl_workload_from_graph; g may
 * be NULL, then recomputation candidates are judged from the workload
 * alone) on profile dev (its copy times and duplex flag). The plan returned
 * is valid: tsl_plan_verify accepts it, with predicted_peak and
 * predicted_period_us filled from tsl_peak_analysis; it may be empty when
 * no candidate was accepted. `st` may be NULL. Returns NULL if out of host
 * memory before any item was accepted (later, the plan so far is returned)
 * or if even the empty plan fails verification (a malformed workload: the
 * verifier's message is in tsl_last_error()). The caller frees it with
 * tsl_plan_free. */
tsl_plan *pg_random_plan(const tsl_graph *g, const tsl_workload *w, const tsl_device_profile *dev,
                         uint64_t seed, const pg_opts *o, pg_stats *st);

/* Sets every op's workspace in w (a workload of graph g, same indices) to
 * the scratch the CPU backend really allocates for it with the given kernels
 * and thread count (its op_workspace: a fast kernel's prepared scratchpad,
 * else the reference kernel's tsl_op_workspace). tsl_workload_from_graph takes
 * tsl_op_workspace, which the fast kernels' scratch does not match; with
 * this the ledger of a virtual-clock run can equal the predicted peak.
 * Returns TSL_OK or a kernel's preparation error. */
tsl_status pg_match_backend_workspace(const tsl_graph *g, tsl_workload *w, int fast, int nthreads);

/* Fills p->predicted_peak and p->predicted_period_us from tsl_peak_analysis
 * and verifies p. Returns 1 if valid; 0 otherwise, with the reason (the
 * first violation or the analysis error) written into why (if non-NULL). */
int pg_finish_and_verify(const tsl_workload *w, tsl_plan *p, const tsl_device_profile *dev,
                         char *why, size_t len);
#endif
