/*
 * tensile/backend_cpu.h - the CPU backend (tensile/backend.h): device memory
 * is a fixed-capacity arena of ordinary memory, so that running out of
 * device memory happens exactly as on a GPU; kernels are the reference loops
 * (the oracle) or the fast paths through oneDNN and own loops; two copy
 * streams with threads of their own play the PCIe copy engines; kernels run
 * on the caller's thread, or on a compute thread (async_compute).
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
#include "tensile/shdev.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tsl_kernel_mode {
    TSL_KERNELS_FAST = 0, /* oneDNN / own fast loops where available, else reference */
    TSL_KERNELS_REF,      /* reference kernels only (the oracle)               */
} tsl_kernel_mode;

typedef struct tsl_cpu_backend_opts {
    size_t capacity;         /* bytes of the arena (reserved, not touched until used) */
    tsl_kernel_mode kernels; /* default TSL_KERNELS_FAST */
    int nthreads;            /* kernel threads, >= 1 (default 1) */
    double pcie_gbps;        /* throttle of each copy stream, GB/s, to reproduce a GPU's
                                compute-to-transfer ratio; 0: unthrottled (default) */
    int async_compute;       /* 1: kernels run on a compute thread of the backend's own, so
                                that launch_op returns before the kernel ran, as on a GPU;
                                0: they run inside launch_op (default: no thread handoff) */
    double kernel_delay_us;  /* with async_compute: each kernel starts up to this much later
                                than it could (a deterministic sequence in [0, delay]): the
                                test device for executors that must not assume a kernel is
                                done because a call returned (default 0) */
    tsl_shdev *shdev;        /* NULL (default): a private device. Else the shared device
                                (tensile/shdev.h) this backend is a job on, which must stay
                                open until the backend is freed: the arena is reserved at the
                                device's capacity and its capacity is the job's arena, at
                                most its slot's region (capacity 0: the whole region); every
                                allocation and free is published in the slot and the global
                                ledger; copies go through the device's channels at the
                                device's rate (pcie_gbps: 0 or that rate) */
    int shdev_slot;          /* with shdev: the slot claimed for this job (tsl_shdev_claim),
                                with this process's pid or 0; one backend per slot */
} tsl_cpu_backend_opts;

/* The defaults above, with the given capacity. */
tsl_cpu_backend_opts tsl_cpu_backend_opts_default(size_t capacity);

/* A CPU backend. TSL_ERR_INVALID for a bad option (named; on a shared
 * device also: a slot that is not claimed, another process's, attached
 * already, or a capacity above its region), TSL_ERR_OOM if the arena cannot
 * be reserved, TSL_ERR_INTERNAL if a stream thread cannot start. On
 * failure nothing is left attached. */
tsl_status tsl_cpu_backend_new_opts(const tsl_cpu_backend_opts *o, tsl_backend **out);

/* The same with the other options at their defaults. */
tsl_status tsl_cpu_backend_new(size_t capacity, tsl_kernel_mode kernels, int nthreads,
                               tsl_backend **out);

/* 1 if b is a CPU backend. */
int tsl_backend_is_cpu(const tsl_backend *b);

/* Throttles a CPU backend's copy streams to gbps GB/s from their next copy
 * (0: unthrottled). TSL_ERR_INVALID if b is not a CPU backend, is a job on
 * a shared device (whose rate is the device's), or gbps is not finite and
 * >= 0. */
tsl_status tsl_cpu_backend_set_pcie_gbps(tsl_backend *b, double gbps);

/* Sets the arena's capacity to `bytes` (what caps and the allocator then
 * report), at an iteration boundary or whenever no allocation relies on
 * the room above it: no block moves. The arena reserved at creation bounds
 * it (a private device: its initial capacity; a shared one: the device's
 * capacity). On a shared device the slot records it as the job's arena.
 * Errors (nothing changed): TSL_ERR_INVALID if b is not a CPU backend,
 * bytes is 0 or above the reservation, or (shared) above the slot's region;
 * TSL_ERR_BUSY if live blocks reach above it (the highest named:
 * tsl_alloc_set_capacity); TSL_ERR_OOM if the host is out of memory. */
tsl_status tsl_cpu_backend_set_capacity(tsl_backend *b, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
