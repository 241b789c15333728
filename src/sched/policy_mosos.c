/*
 * policy_mosos.c - the "mosos" policy: MO-SOS (Wei, Li et al., 2023: one
 * integer program for offload, prefetch, recomputation and the
 * convolution algorithm with its workspace), solved by CBC.
 *
 * The program (ilp_build.c, docs/SCHEDULING.md "Integer programs") is the
 * paper's section 2: Checkmate's stages with S and R, plus O (an offload
 * starting at a stage, at most one per tensor: the host copy serves every
 * later prefetch) and P (a prefetch starting at a stage, after the
 * offload has ended), copies starting at the start of a stage and holding
 * their channel until the stage they have ended by (ss/sf from the
 * bandwidths and the ops' times), a prefetch's memory counted from its
 * start, and per op the alternatives' columns A (one chosen, its time in
 * the objective, its workspace in the stage's memory). Departures, and
 * why:
 *  - the convolution algorithm: per op with several algorithms (the
 *    workload's alternatives, tsl_workload_op_algo) the program picks one
 *    (its workspace in the stage's memory, its extra time in the
 *    objective), the copy spans taken on the fastest algorithms; the
 *    choice goes into the plan (tsl_plan_set_algo). An op with several
 *    algorithms is not recomputed;
 *  - offloads of forward tensors only (the paper's "output tensors of the
 *    forward pass"), O and P only within `window` stages (default 16) of
 *    the producer and before a read (the paper has them at every stage:
 *    too many columns for CBC on the zoo's graphs); CBC starts from STR's
 *    greedy (policy_str.c) on the same model, so mosos is never worse;
 *  - a deadline for the whole planning (option deadline, 20 s): the
 *    solves' limits are cut to fit it (CBC runs in a process of its own,
 *    killed past its limit: milp.h), the report says the limit was hit;
 *  - the paper limits each stage to one copy starting per direction; here
 *    a channel carries one copy at a time over the stages it spans, so
 *    copies never overlap and no op waits for one (the plans have no
 *    planned waits);
 *  - recomputations as checkmate's (right before the op that reads the
 *    tensor, no chains); frees at stage granularity;
 *  - several jobs: one program with a peak column per job; their copies
 *    are kept apart per job only, so several jobs need channel shares
 *    (tsl_plan_opts.channel_share, --channel-share equal): on the shared
 *    time axis the stages of different jobs do not line up;
 *  - a budget the program cannot meet gives the schedule of least memory.
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
    {"recompute", "recomputation besides offload and prefetch (0: offload only)", TSL_OPT_BOOL,
     0, 1, 1, offsetof(tsl__ilp_popts, recompute)},
    {"window", "an offload starts within this many ops of its producer, a prefetch within this "
     "many before a read", TSL_OPT_INT, 1, 1000000, 16, offsetof(tsl__ilp_popts, window)},
    {"min-swap-bytes", "tensors smaller than this are never offloaded", TSL_OPT_DOUBLE, 0,
     1152921504606846976.0, 0, offsetof(tsl__ilp_popts, min_swap_bytes)},
};

static tsl_status plan_mosos(const tsl_plan_request *rq, tsl_plan **plans, int *iterations) {
    (void)iterations;
    if (rq->n_jobs > 1 && rq->shared_channels)
        return tsl_fail(TSL_ERR_INVALID,
                        "mosos: %d jobs on the shared channels: plan them on channel shares "
                        "(--channel-share equal), the program keeps each job's copies apart "
                        "only on its own channels",
                        rq->n_jobs);
    return tsl__ilp_plan(rq, plans, rq->opts, 1);
}

const tsl_policy tsl__policy_mosos = {
    "mosos",
    "MO-SOS (2023): offload, prefetch and recomputation in one integer program (CBC) under the "
    "budget",
    sizeof(tsl__ilp_popts), options, (int)(sizeof options / sizeof options[0]), plan_mosos, NULL,
};
