/*
 * graphs.h - small training graphs and a CPU-like device profile shared by
 * the runtime's and the job's tests.
 */
#ifndef TSL_TESTS_GRAPHS_H
#define TSL_TESTS_GRAPHS_H
#include "tensile/ops.h"
#include "tensile/profile.h"

/* x(8,12) -> linear 16 -> batchnorm -> relu -> linear 16 -> relu -> linear
 * 5 -> softmax_xent, SGD at 0.1; finalized. */
tsl_graph *th_small_graph(void);
/* An MLP whose activations outweigh its parameters: x(n,64) -> 3 x (linear
 * 128, relu) -> linear 10 -> softmax_xent, SGD at 0.05; finalized. */
tsl_graph *th_wide_graph(int n);
/* "small", "wide" (batch rows), or a zoo model at batch (image side
 * `image`, 0: the model's), SGD at 0.01; finalized. */
tsl_graph *th_model_graph(const char *model, int batch, int image);
/* A CPU-like device: 20 GFLOP/s, 10 GB/s memory, 4 GB/s per copy
 * direction, duplex, launch 2 us, copy latency 5 us, `mem` bytes. */
tsl_device_profile th_cpu_profile(size_t mem);
#endif
