/*
 * tensile/backend.h - a device, as a table of function pointers with a
 * context (ggml style). The executor only talks to devices through it.
 *
 * Every slot is required unless marked optional. Device memory comes from a
 * fixed-capacity arena managed by the allocator of tensile/alloc.h, so that
 * "out of device memory" happens on the CPU exactly as on a GPU.
 *
 * Example usage:
 *
 *   tsl_backend *b;
 *   tsl_cpu_backend_new(1ull << 30, TSL_KERNELS_FAST, 2, &b);
 *   void *p;
 *   if (b->iface->alloc(b, 4096, &p) == TSL_ERR_OOM) ...;
 *   b->iface->free(b, p);
 *   tsl_backend_free(b);
 */
#ifndef TENSILE_BACKEND_H
#define TENSILE_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/alloc.h"
#include "tensile/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsl_backend tsl_backend;

/* The two copy channels. */
typedef enum tsl_copy_dir { TSL_TO_DEVICE = 0, TSL_TO_HOST = 1 } tsl_copy_dir;

/* Completion of one asynchronous copy (opaque; owned by the backend until
 * released). */
typedef struct tsl_copy_event tsl_copy_event;

/* What one op execution needs beyond its tensors. */
typedef struct tsl_run_ctx {
    int64_t step;     /* 1-based training step */
    int training;     /* 0 in evaluation */
} tsl_run_ctx;

struct tsl_backend_i {
    const char *(*name)(tsl_backend *b);
    /* Device memory from the arena: TSL_ERR_OOM (message recorded) when no
     * free block is large enough. */
    tsl_status (*alloc)(tsl_backend *b, size_t nbytes, void **ptr);
    void (*free)(tsl_backend *b, void *ptr);
    /* The arena's ledger (exact, tensile/alloc.h). */
    void (*mem_stats)(tsl_backend *b, tsl_alloc_stats *st);
    void (*reset_peaks)(tsl_backend *b);
    /* Optional: make the k-th allocation from now fail (fault injection). */
    void (*fail_alloc_at)(tsl_backend *b, uint64_t k);
    /* Runs op's kernel on device pointers in[] / out[]; allocates and frees
     * the op's scratch workspace in the arena (TSL_ERR_OOM if it does not
     * fit, nothing run). Writes the kernel's wall time in *ms if non-NULL. */
    tsl_status (*run_op)(tsl_backend *b, const tsl_graph *g, const tsl_op *op, void *const *in,
                         void *const *out, const tsl_run_ctx *ctx, double *ms);
    /* The scratch workspace run_op allocates for op, in bytes (a fast
     * kernel's prepared scratchpad, or tsl_op_workspace for a reference
     * kernel): what a plan must count for the op. May prepare the kernel
     * (the preparation is kept for run_op); an error if it cannot be. */
    tsl_status (*op_workspace)(tsl_backend *b, const tsl_graph *g, const tsl_op *op, size_t *bytes);
    /* Synchronous copies between host memory and device memory. */
    tsl_status (*copy_to_device)(tsl_backend *b, void *dst, const void *src, size_t n);
    tsl_status (*copy_to_host)(tsl_backend *b, void *dst, const void *src, size_t n);
    /* Waits for everything issued: kernels and both copy channels. */
    tsl_status (*sync)(tsl_backend *b);

    /* ---- asynchronous copies (the Swap Executor's channels) ---------------
     * Optional as a group (NULL: the backend has no copy engine).
     * copy_async enqueues one transfer on the channel of `dir`; each channel
     * carries one transfer at a time, in enqueue order. *ev is set to a new
     * event that completes when the bytes have arrived. alloc, free,
     * mem_stats, reset_peaks and fail_alloc_at are thread-safe (the Swap
     * Executor allocates swap-in destinations from its own thread). */
    tsl_status (*copy_async)(tsl_backend *b, tsl_copy_dir dir, void *dst, const void *src,
                             size_t n, tsl_copy_event **ev);
    int (*event_done)(tsl_backend *b, tsl_copy_event *ev);   /* non-blocking */
    void (*event_wait)(tsl_backend *b, tsl_copy_event *ev);  /* blocks until done */
    /* When the transfer started and ended, ms on the backend's clock
     * (tsl_backend_now_ms); valid once done. */
    void (*event_times)(tsl_backend *b, tsl_copy_event *ev, double *start_ms, double *end_ms);
    /* The event must be done (event_wait or event_done first); releasing one
     * in flight is a bug (assert). Events never released are freed when the
     * backend is destroyed. */
    void (*event_release)(tsl_backend *b, tsl_copy_event *ev);
    /* Host staging memory (pinned on CUDA); NULL when out of host memory. */
    void *(*host_alloc)(tsl_backend *b, size_t n);
    void (*host_free)(tsl_backend *b, void *p);
    /* CPU only (optional): throttle each channel to gbps GB/s; 0 = unthrottled. */
    void (*set_channel_gbps)(tsl_backend *b, double gbps);
    void (*destroy)(tsl_backend *b);
};

struct tsl_backend {
    const struct tsl_backend_i *iface;
    void *context;
};

void tsl_backend_free(tsl_backend *b); /* NULL is fine */

/* Monotonic milliseconds, the clock of copy event times and op timings. */
double tsl_backend_now_ms(void);

#ifdef __cplusplus
}
#endif
#endif
