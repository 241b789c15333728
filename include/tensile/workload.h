/*
 * tensile/workload.h - a job's workload: its tensor access sequence (TAS), the
 * tensors' sizes and kinds, each op's time and workspace. What a policy
 * plans from. Built from a graph with measured or modelled latencies.
 */
#ifndef TENSILE_WORKLOAD_H
#define TENSILE_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/graph.h"
#include "tensile/ops.h"
#include "tensile/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- workloads ------------------------------------------------------------ */
typedef struct tsl_wl_tensor {
    char name[TSL_NAME_MAX];
    size_t bytes;
    tsl_tensor_kind kind;
    int32_t producer;      /* op generating it in the iteration; -1: data load or persistent */
} tsl_wl_tensor;

/* One of an op's other algorithms (docs/SCHEDULING.md, "Algorithms"): the
 * op's time and workspace when a plan runs it with this algorithm. */
typedef struct tsl_wl_algo {
    char name[TSL_ALGO_NAME_MAX]; /* "im2col", "direct", ...: 1 to 23 printable characters */
    double us;                 /* the op's latency with it, µs (finite, >= 0) */
    size_t workspace;          /* scratch bytes it holds during the op */
} tsl_wl_algo;

typedef struct tsl_wl_op {
    char name[TSL_NAME_MAX];
    double start_us, end_us;   /* within the iteration; op i+1 starts when op i ends */
    size_t workspace;          /* scratch bytes held during the op */
    int n_in, n_out;
    int32_t *in, *out;         /* tensor indices (in-place: same index in both) */
    /* The op's algorithms other than its default. Algorithm 0, the default,
     * is the op itself (end_us - start_us, workspace); algorithm k >= 1 is
     * alts[k - 1]. n_alts 0 and alts NULL: the op has one algorithm, as
     * every op of a workload made before algorithms existed (and the JSON
     * form omits the field). Own malloc block; set it with
     * tsl_workload_set_alts. */
    int32_t n_alts;
    tsl_wl_algo *alts;
} tsl_wl_op;

typedef struct tsl_workload {
    char job[64];
    int32_t n_tensors, n_ops;
    tsl_wl_tensor *tensors;
    tsl_wl_op *ops;
    int32_t optimizer_begin;   /* first op of the optimizer phase (n_ops if none: the
                                  updates run inside the backward pass, the default) */
    double period_us;          /* iteration time = end of the last op */
} tsl_workload;

/* Per-op latencies in µs, indexed like the graph's ops (a measured table). */
typedef struct tsl_latency_table {
    int32_t n;
    const double *us;
} tsl_latency_table;

/* Builds the workload of a finalized graph. Latencies come from `table` if
 * non-NULL, else from the analytic cost model of `dev`: per op
 * max(FLOPs / flops, bytes / mem_bw) + launch_us. Workspace per op from
 * tsl_op_workspace. */
tsl_status tsl_workload_from_graph(const tsl_graph *g, const char *job,
                                   const tsl_latency_table *table,
                                   const tsl_device_profile *dev, tsl_workload **out);
double tsl_cost_model_us(const tsl_graph *g, const tsl_op *op, const tsl_device_profile *dev);
void tsl_workload_free(tsl_workload *w);
/* A deep copy of w; with us (n_ops latencies in µs, each >= 0) its ops run
 * back to back with those latencies (same tensors, ops, workspaces). The
 * latencies are the default algorithms' (algorithm 0): the other
 * algorithms' times are copied as they are. NULL if out of host memory. */
tsl_workload *tsl_workload_copy(const tsl_workload *w, const double *us);

/* The op floor of w: the largest working set of any one op, the bytes that
 * must be resident while it runs - its distinct input and output tensors
 * (a tensor both read and written, or listed twice, counted once) plus the
 * least workspace among its algorithms. No plan of w has a peak load or a
 * footprint below it, whatever it swaps or recomputes (a budget below it
 * cannot be met). *op (may be NULL) gets the op that needs it, the first
 * one on a tie; a workload without ops gives 0 and *op = -1. Pure. */
size_t tsl_workload_op_floor(const tsl_workload *w, int32_t *op);

/* ---- algorithms per op (the API a planner that chooses them uses) -----------
 * Contract for planners (MO-SOS's integer program, tensile/plan.h):
 *   for op i, algorithms k = 0 .. tsl_workload_op_n_algos(w, i) - 1;
 *   tsl_workload_op_algo(w, i, k) gives k's latency (us) and workspace;
 *   a plan records its choice with tsl_plan_set_algo(p, i, k) (0: default);
 *   tsl_workload_for_plan(w, p) is the workload the plan's events are timed
 *   against: each op with its chosen algorithm's latency and workspace.
 * Everything that analyses a plan (peak analysis, layout, verifier,
 * simulator, runtime) works on that workload; a plan that chooses nothing
 * is analysed on w itself, exactly as before algorithms existed.
 * A planner that chooses: set the choices (tsl_plan_set_algo), time the
 * events on tsl_workload_for_plan(w, p) (its ops' start/end); then
 * tsl_plan_layout(w, p) and tsl_peak_analysis(w, p) apply the choices
 * themselves, and predicted_peak / predicted_period_us are those of
 * tsl_peak_analysis(w, p). A workload without alternatives (every n_alts
 * 0) offers nothing to choose; the existing policies choose nothing
 * (every op its default), so their plans are unchanged. */

/* The number of algorithms of op i of w: 1 + w->ops[i].n_alts (i in range:
 * TSL_ASSERT). */
int32_t tsl_workload_op_n_algos(const tsl_workload *w, int32_t i);
/* Algorithm k of op i (both in range: TSL_ASSERT): k = 0 is the op itself,
 * named "default", with us = end_us - start_us and its workspace; k >= 1 is
 * a copy of w->ops[i].alts[k - 1]. */
tsl_wl_algo tsl_workload_op_algo(const tsl_workload *w, int32_t i, int32_t k);
/* Replaces the other algorithms of op i with alts[0..n) (copied; n 0
 * removes them). TSL_ERR_INVALID (op unchanged) for i out of range, n
 * outside [0, TSL_ALGO_MAX), a name that is empty, too long or holds a
 * control character, two alternatives with the same name or one named
 * "default", a time not finite and >= 0 (each named); TSL_ERR_OOM. */
tsl_status tsl_workload_set_alts(tsl_workload *w, int32_t i, const tsl_wl_algo *alts,
                                 int32_t n);

/* The ratio model of the algorithms' latencies: the latency of algorithm k
 * of an op is its default's times ratio[type][k], where type indexes the
 * ops with an algorithm menu (tsl_algo_ratio_slot). The defaults are
 * the development machine's (bench_conv_algos on resnet18 and vgg11,
 * docs/RESULTS.md, issue 11: im2col 5x, 5x, 18x and direct 60x, 60x, 40x
 * oneDNN's time for CONV2D, BWD_DATA, BWD_FILTER), rough; measured
 * latencies (tsl_calibrate_algos, tensile/calibrate.h) are better. */
#define TSL_ALGO_RATIO_TYPES 3 /* CONV2D, CONV2D_BWD_DATA, CONV2D_BWD_FILTER */
typedef struct tsl_algo_ratios {
    double ratio[TSL_ALGO_RATIO_TYPES][TSL_ALGO_MAX]; /* [.][0] = 1; > 0 where defined */
} tsl_algo_ratios;
tsl_algo_ratios tsl_algo_ratios_default(void);
/* The row of tsl_algo_ratios.ratio for ops of type t, or -1 if t has one
 * algorithm. */
int tsl_algo_ratio_slot(tsl_op_type t);

/* Fills the other algorithms of every op of w that has several
 * (tsl_op_n_algos), w made from finalized graph g (tsl_workload_from_graph:
 * same ops): names and workspaces from the op vocabulary
 * (tsl_op_algo_workspace), latencies from `measured` where it has them,
 * else the op's default latency times `ratios` (NULL: the defaults).
 * measured (may be NULL) holds n_ops * TSL_ALGO_MAX µs, op i's algorithm k
 * at [i * TSL_ALGO_MAX + k]; a negative or non-finite entry means "not
 * measured" (measured on the backend by the caller). Ops with one
 * algorithm are left as they are. TSL_ERR_INVALID (g not w's graph, a
 * ratio <= 0 or not finite: named), TSL_ERR_OOM; w is then unchanged. */
tsl_status tsl_workload_add_algos(tsl_workload *w, const tsl_graph *g, const double *measured,
                                  const tsl_algo_ratios *ratios);

#ifdef __cplusplus
}
#endif
#endif
