/*
 * policy_checkmate.c - the "checkmate" policy: Checkmate (Jain et al.,
 * "Checkmate: Breaking the Memory Wall with Optimal Tensor
 * Rematerialization", MLSys 2020), the recomputation-only integer program
 * the MO-SOS paper compares against as "Checkmate-Auto". Every op runs
 * its default algorithm, which is what the "Auto" half (cuDNN's per-call
 * pick of the fastest algorithm that fits) picks on this menu: the default
 * is every op's fastest and the plan holds its workspace
 * (docs/SCHEDULING.md, "Integer programs").
 *
 * The program (ilp_build.c, docs/SCHEDULING.md "Integer programs") is
 * Checkmate's: a stage per op, S (kept) and R (recomputed) per candidate
 * and stage, the recomputation time minimised under the request's budget
 * of summed peak loads, solved by CBC under a time limit (a solution found
 * by then is used, and the report gives its gap) and a deadline for the
 * whole planning (option deadline: the solves are cut to fit; CBC runs in
 * a process of its own, killed past its limit, milp.h). Departures, and
 * why:
 *  - CBC starts from STR's greedy (policy_str.c) with recomputations only,
 *    on the same model: checkmate is never worse than that greedy (CBC
 *    found no schedule in 10 s on inception3 without it);
 *  - a recomputation runs right before the op that reads the tensor (a
 *    RECOMPUTE event), so R exists only where op t reads candidate k
 *    (Checkmate lets any stage recompute any earlier op: O(n^2) columns,
 *    and chains - recomputing an input of a recomputation - which the plan
 *    semantics cannot express: a RECOMPUTE precedes an op that reads its
 *    tensor, the verifier's rule; a recomputation earlier than its use
 *    only holds memory longer). The program can build chains
 *    (tsl__ilp_opts.max_chain) for when the semantics allow them;
 *  - frees are at stage granularity: a tensor dropped in stage t is
 *    released at the end of op t-1 (Checkmate's FREE variables free
 *    within a stage after the last reader); the memory of a stage is its
 *    op's load, the peak sweep's own (ilp_job.c), so the model's peak is
 *    the plan's;
 *  - only tensors the plan semantics can drop are candidates: generated
 *    once in the iteration by an op with one output and no workspace,
 *    neither persistent nor data (the kit's rule for exact recomputation,
 *    rc_check.c); everything else stays as in vanilla;
 *  - several jobs: one program, each job's peak a column, their sum
 *    within the budget;
 *  - a budget the program cannot meet gives the schedule of least memory
 *    (reported: budget_relaxed), the plans then miss the budget.
 */
#include <math.h>
#include <stddef.h>

#include "sched/ilp_internal.h"

static const tsl_policy_option options[] = {
    {"time-limit", "seconds CBC may spend per solve (a solution found by then is used)",
     TSL_OPT_DOUBLE, 0.01, 86400, 10, offsetof(tsl__ilp_popts, time_limit_s)},
    {"deadline", "seconds for the whole planning (the solves are cut to fit; a solution "
     "found by then is used)", TSL_OPT_DOUBLE, 1, 86400, 20, offsetof(tsl__ilp_popts, deadline_s)},
    {"threads", "CBC's threads (1: deterministic)", TSL_OPT_INT, 1, 64, 1,
     offsetof(tsl__ilp_popts, threads)},
};

static tsl_status plan_checkmate(const tsl_plan_request *rq, tsl_plan **plans, int *iterations) {
    (void)iterations;
    tsl__ilp_popts po = *(const tsl__ilp_popts *)rq->opts;
    po.recompute = 1;
    return tsl__ilp_plan(rq, plans, &po, 0);
}

const tsl_policy tsl__policy_checkmate = {
    "checkmate",
    "Checkmate (Jain et al. 2020): recomputation chosen by an integer program (CBC) under the "
    "budget",
    sizeof(tsl__ilp_popts), options, (int)(sizeof options / sizeof options[0]), plan_checkmate,
    NULL,
};
