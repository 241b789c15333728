/*
 * tensile/backend_cpu.h - the CPU backend (tensile/backend.h): device memory
 * is a fixed-capacity arena of ordinary memory, so that running out of
 * device memory happens exactly as on a GPU; kernels are the reference loops
 * (the oracle) or the fast paths through oneDNN and OpenBLAS; two copy
 * threads play the PCIe channels.
 *
 * Example usage:
 *
 *   tsl_backend *b;
 *   if (tsl_cpu_backend_new(1ull << 30, TSL_KERNELS_FAST, 2, &b) != TSL_OK)
 *       die(tsl_last_error());
 *   ...
 *   tsl_backend_free(b);
 */
#ifndef TENSILE_BACKEND_CPU_H
#define TENSILE_BACKEND_CPU_H

#include "tensile/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tsl_kernel_mode {
    TSL_KERNELS_FAST = 0, /* oneDNN / OpenBLAS where available, else reference */
    TSL_KERNELS_REF,      /* reference kernels only (the oracle)               */
} tsl_kernel_mode;

/* The CPU backend: an arena of `capacity` bytes (reserved, not touched until
 * used), the given kernels and thread count. TSL_ERR_OOM if the arena cannot
 * be reserved. */
tsl_status tsl_cpu_backend_new(size_t capacity, tsl_kernel_mode kernels, int nthreads,
                               tsl_backend **out);
#ifdef __cplusplus
}
#endif
#endif
