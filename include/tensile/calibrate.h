/*
 * tensile/calibrate.h - measuring this machine's CPU backend as a device
 * profile (tensile/profile.h), so that the cost model, the planner and the
 * simulator can be run with the figures of the device the jobs really use.
 *
 * What is measured (each the median of several timed runs after a warm-up):
 *   flops            FP32 FLOP/s through the fast kernels: a oneDNN
 *                    convolution and a oneDNN sgemm (a linear layer);
 *                    the profile keeps their harmonic mean (the rate of
 *                    equal work split between the two)
 *   mem_bw           memcpy of a large buffer, counting the bytes read and
 *                    the bytes written (the cost model's bytes are read +
 *                    written too)
 *   h2d_bw, d2h_bw   memcpy between a malloc'd host buffer and a block of
 *                    the backend's arena, each direction; duplex 1 (the CPU
 *                    backend's copy channels are threads)
 *   launch_us        a tiny op (relu of 16 floats) through the backend
 *   copy_latency_us  a 256-byte copy into the arena
 *   mem_bytes        the machine's physical memory
 *
 * Example usage:
 *
 *   tsl_calib_opts o = tsl_calib_opts_default();
 *   o.nthreads = 2;
 *   tsl_calib_result r;
 *   if (tsl_calibrate_cpu(&o, &r) != TSL_OK) die(tsl_last_error());
 *   tsl_profile_save_source("profiles/cpu-local.json", &r.profile, r.source, NULL);
 */
#ifndef TENSILE_CALIBRATE_H
#define TENSILE_CALIBRATE_H

#include <stddef.h>
#include "tensile/backend.h"
#include "tensile/graph.h"
#include "tensile/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsl_calib_opts {
    int nthreads;   /* kernel threads, >= 1 (default 1) */
    int repeats;    /* timed runs per figure, the median is kept, 1..1000 (default 5) */
    int quick;      /* small sizes, for tests: rougher figures (default 0) */
    /* Called before each measurement with a short description; may be NULL. */
    void (*progress)(const char *what, void *user);
    void *user;
} tsl_calib_opts;

tsl_calib_opts tsl_calib_opts_default(void);

typedef struct tsl_calib_result {
    double conv_flops;          /* FLOP/s of the convolution */
    double gemm_flops;          /* FLOP/s of the sgemm */
    double memcpy_bw;           /* bytes read + written per second */
    double h2d_bw, d2h_bw;      /* bytes per second, host buffer <-> arena */
    double launch_us;           /* µs per tiny op */
    double copy_latency_us;     /* µs per tiny copy */
    size_t copy_bytes;          /* size of the buffers copied */
    char conv_desc[160];        /* what was run, e.g. "conv (16,64,56,56) * (64,64,3,3) pad 1" */
    char gemm_desc[160];
    tsl_device_profile profile; /* name "cpu-local" */
    char source[1024];          /* how the figures were measured, for the profile file */
} tsl_calib_result;

/* Measures the CPU backend with the fast kernels. TSL_ERR_INVALID for bad
 * options (named), TSL_ERR_OOM, or a kernel's error. Takes a few seconds
 * (well under a second with quick). */
tsl_status tsl_calibrate_cpu(const tsl_calib_opts *o, tsl_calib_result *r);

/* Measures every algorithm (tensile/ops.h, "algorithms") of every op of
 * finalized graph g that has several, on backend b: the median µs of
 * `repeats` (1..1000) timed runs after one warm-up (tsl_backend_run_op),
 * each op on arena blocks of its own, inputs filled with a fixed pattern
 * of small values, freed after it. us holds tsl_graph_n_ops(g) *
 * TSL_ALGO_MAX entries: op i's algorithm k at [i * TSL_ALGO_MAX + k], -1
 * where not measured (ops with one algorithm, unused slots) - the table
 * tsl_workload_add_algos reads. TSL_ERR_INVALID (g not finalized, repeats
 * out of range, a backend without op_algo_workspace), TSL_ERR_OOM (an op's
 * blocks do not fit in the arena: named), or a kernel's error. Example:
 *
 *   double *us = malloc(sizeof *us * n_ops * TSL_ALGO_MAX);
 *   tsl_calibrate_algos(g, b, 3, us);
 *   tsl_workload_add_algos(w, g, us, NULL);   // tensile/workload.h
 */
tsl_status tsl_calibrate_algos(const tsl_graph *g, tsl_backend *b, int repeats, double *us);

#ifdef __cplusplus
}
#endif
#endif
