/*
 * init.h - deterministic initial values of parameters, buffers and
 * optimizer states.
 */
#ifndef TSL_RUNTIME_INIT_H
#define TSL_RUNTIME_INIT_H
#include <stdint.h>
#include "core/rand.h"
#include "tensile/graph.h"

/* Writes the initial value of tensor t (f32, numel elements) into dst,
 * from a counter-based generator keyed by (seed, t, element): the values
 * never depend on threads or on the order tensors are initialised in.
 * KAIMING_NORMAL uses fan_in = numel / d[0]; UNIFORM_FANIN on a 1-D tensor
 * "P.bias" uses the fan-in of "P.weight" when it exists (PyTorch's rule for
 * Linear and Conv biases). */
void tsl__init_tensor(const tsl_graph *g, tsl_tid t, uint64_t seed, float *dst);

/* tsl__u01 (core/rand.h) gives the uniform values. */
#endif
