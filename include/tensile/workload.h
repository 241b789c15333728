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

typedef struct tsl_wl_op {
    char name[TSL_NAME_MAX];
    double start_us, end_us;   /* within the iteration; op i+1 starts when op i ends */
    size_t workspace;          /* scratch bytes held during the op */
    int n_in, n_out;
    int32_t *in, *out;         /* tensor indices (in-place: same index in both) */
} tsl_wl_op;

typedef struct tsl_workload {
    char job[64];
    int32_t n_tensors, n_ops;
    tsl_wl_tensor *tensors;
    tsl_wl_op *ops;
    int32_t optimizer_begin;   /* first op of the optimizer phase (n_ops if none) */
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
 * back to back with those latencies (same tensors, ops, workspaces). NULL
 * if out of host memory. */
tsl_workload *tsl_workload_copy(const tsl_workload *w, const double *us);

#ifdef __cplusplus
}
#endif
#endif
