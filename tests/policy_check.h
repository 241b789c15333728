/*
 * policy_check.h - what the tests of the baseline policies (vDNN,
 * AutoSwap, Capuchin, DTR, the integer programs: test_policy_*.c) check on every plan
 * they make, and the workloads they make them for: the zoo's models at
 * small shapes, and the random workloads of tests/random_workload.h.
 *
 * Example usage:
 *
 *   tsl_device_profile dev = rtf_cpu_profile();
 *   tsl_workload *w = pc_zoo_workload("resnet18", &dev);
 *   pc_result r;
 *   tsl_plan_opts po = pc_opts("vdnn-all", NULL, 0);
 *   pc_plan_and_check(&w, 1, &dev, &po, "resnet18", &r);
 *   ... r.rep.waits[0], r.p[0]->n_events ...
 *   pc_result_free(&r);
 *   tsl_workload_free(w);
 */
#ifndef TSL_TESTS_POLICY_CHECK_H
#define TSL_TESTS_POLICY_CHECK_H
#include <stddef.h>
#include "tensile/models.h"
#include "tensile/policy.h"

#define PC_MAXJ 8

/* Plans and their report. */
typedef struct pc_result {
    int n;
    tsl_plan *p[PC_MAXJ];
    tsl_plan_report rep;
    int waits;                 /* planned waits over the jobs (the verifier's) */
    double stall_us;           /* their stall */
} pc_result;

/* Planning options for the policy called `policy` (failing the calling
 * test if there is none) with its options opts (NULL: its defaults) and
 * the budget (0: the profile's memory). */
tsl_plan_opts pc_opts(const char *policy, const void *opts, size_t budget);

/* Plans the n (<= PC_MAXJ) workloads w with po and fails the calling test
 * unless: planning succeeds or reports the budget
 * unmet (TSL_ERR_BUDGET); the plans verify together (tsl_plan_check: no
 * violation; planned waits are counted into r) with each predicted peak
 * and period equal to tsl_peak_analysis's and no peak above vanilla's
 * (th_plan_checked); every copy ends within its iteration; each job
 * simulated alone with exact latencies reproduces its predicted peak
 * exactly, its predicted period and its planned stall (to 1e-6 relative);
 * the jobs simulate together; and planning the same inputs again gives
 * the same plans, byte for byte as JSON. `what` names the case in
 * failure messages. */
void pc_plan_and_check(tsl_workload **w, int n, const tsl_device_profile *dev,
                       const tsl_plan_opts *po, const char *what, pc_result *r);
void pc_result_free(pc_result *r);

/* The training workload of zoo model `model` at small shapes (batch 2,
 * images 32x32, 75x75 for the Inceptions, 10 classes; the optimizer
 * th_optimizer(adam), helpers.h) on dev's cost model. Free with tsl_workload_free. */
tsl_workload *pc_zoo_workload(const char *model, const tsl_device_profile *dev, int adam);
/* The same at batch `batch` and images image x image (activations large
 * enough beside the parameters for the policies that only recompute). */
tsl_workload *pc_zoo_workload_at(const char *model, const tsl_device_profile *dev, int adam,
                                 int batch, int image);
/* The same with the model's configuration cfg as it is (its classes too:
 * `tensile frontier`'s shapes). */
tsl_workload *pc_zoo_workload_cfg(const char *model, const tsl_device_profile *dev, int adam,
                                  const tsl_model_cfg *cfg);

/* The bytes of w's PARAM, BUFFER and OPT_STATE tensors. */
size_t pc_persistent_bytes(const tsl_workload *w);

/* The budget half way from the persistent bytes to the vanilla peak of
 * the n workloads w planned together (dev's cost model). */
size_t pc_half_way(tsl_workload **w, int n, const tsl_device_profile *dev);

/* The recomputations of plan p (for w) of a tensor the op they precede
 * does not read: links of chained recomputations. */
int pc_chained(const tsl_workload *w, const tsl_plan *p);
/* The links of p's chained recomputations (as pc_chained) of a tensor some
 * op after the one they precede reads again: a chain through a tensor the
 * plan brought back or recomputes for a later read as well. */
int pc_chained_rereads(const tsl_workload *w, const tsl_plan *p);
/* The recomputations of p whose producer has several outputs (batch
 * norm's: the others go to scratch in the recomputation's block). */
int pc_multi_output_recomputes(const tsl_workload *w, const tsl_plan *p);
/* Clean drops in p (docs/SCHEDULING.md): releases of a persistent tensor
 * before its last access op with no swap-out of it triggered at or before
 * them (its host copy is the one it came back from). */
int pc_clean_drops(const tsl_workload *w, const tsl_plan *p);
/* Swaps of p across the iteration's boundary: releases of a persistent
 * tensor after its last access op (it is absent at time 0 and swapped in
 * before its first access). */
int pc_across_swaps(const tsl_workload *w, const tsl_plan *p);
/* Tensors p recomputes and swaps out more often than in: a swap-in turned
 * into a recomputation (its host copy goes unread); a tensor swapped in one
 * gap and recomputed in another does not count. */
int pc_converted(const tsl_plan *p);
/* Recomputations of p run before an op that does not read their tensor
 * and not released after it (not a chain's link): placed before an earlier
 * recomputation that reads the tensor, which found it resident there
 * before. */
int pc_early_recomputes(const tsl_workload *w, const tsl_plan *p);

/* The profile of the hand-made cases: 1 GB/s both ways, duplex, no copy
 * latency (a copy of B bytes takes B/1000 us, exactly), 1 GiB. */
tsl_device_profile pc_exact_profile(void);

/* An op of latency 10 us appended to hand-made workload builder b
 * (random_workload.h), its inputs and outputs given as PC_L1(x),
 * PC_L2(x, y) or PC_L3(x, y, z). */
#define PC_OP(b, name, ins, outs)                                                                  \
    rw_build_op(b, name, 10.0, 0, (const int32_t[])ins, (int)(sizeof((int32_t[])ins) / 4),        \
                (const int32_t[])outs, (int)(sizeof((int32_t[])outs) / 4))
#define PC_L1(x) {x}
#define PC_L2(x, y) {x, y}
#define PC_L3(x, y, z) {x, y, z}

/* An event, for the lists below. */
static inline tsl_event pc_ev(tsl_event_type ty, int32_t t, int32_t trig, double delay,
                              int32_t precede) {
    return (tsl_event){ty, t, trig, delay, precede};
}
/* Fails the calling test (printing both lists) unless p's events are
 * exactly want[0..n), in order, field by field. */
void pc_expect_events(const tsl_plan *p, const tsl_event *want, int n, const char *what);

/* A hand-made three-layer convolutional chain with a pool (16 tensors
 * named by enum pc_chain_tensor, SGD updates), built with
 * tests/random_workload.h and checked (rw_check); the calling test fails
 * if it cannot be built. Free with tsl_workload_free. */
enum pc_chain_tensor { CH_IN, CH_W1, CH_W2, CH_W3, CH_C1, CH_C2, CH_P2, CH_C3, CH_LO, CH_G3, CH_GP2, CH_DW3, CH_G2, CH_G1, CH_DW2, CH_DW1 };
tsl_workload *pc_conv_chain(void);

#endif
