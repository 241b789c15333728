/*
 * tensile/backend.h - a device, as a table of function pointers with a
 * context (ggml style). The executors talk to devices only through it.
 *
 * The contract is asynchronous, as a GPU is, and is what a CUDA backend
 * implements without synchronising per op:
 *
 *   tensile                 CUDA
 *   ----------------------  -------------------------------------------
 *   three streams           one compute stream, one stream per copy
 *                           direction (cudaStreamCreateWithFlags)
 *   launch_op               cuDNN / cuBLAS / own kernels on the compute
 *                           stream, on the executor's workspace block
 *   memcpy_async            cudaMemcpyAsync on the copy streams (pinned
 *                           host memory from host_alloc); on the compute
 *                           stream, device to device
 *   event_record            cudaEventRecord
 *   stream_wait             cudaStreamWaitEvent
 *   event_query / _sync     cudaEventQuery / cudaEventSynchronize
 *   event_elapsed_ms        cudaEventElapsedTime
 *   host_func               cudaLaunchHostFunc, handing fn to a host
 *                           thread of the backend's own (a CUDA callback
 *                           may not call CUDA; fn may enqueue work)
 *   alloc / free            one cudaMalloc'd arena, Tensile's allocator
 *
 * Order and completion. Work enqueued on one stream runs in enqueue order;
 * streams run concurrently with each other and with the host. A call that
 * enqueues returns once the work is enqueued, not done: the only ways to
 * know that work has finished are its events. An event recorded on a
 * stream completes when everything enqueued on that stream before it has
 * completed; stream_wait makes the work enqueued on a stream after the call
 * wait for an event (of any stream). Events carry the device's clock:
 * event_elapsed_ms between two completed events.
 *
 * Memory. Device memory comes from a fixed-capacity arena managed by the
 * allocator of tensile/alloc.h (so that "out of device memory" happens on
 * the CPU exactly as on a GPU). alloc and free are immediate bookkeeping
 * on the host; they do not wait for streams. The caller therefore frees a
 * block only when no enqueued work still uses it: after the event of its
 * last user has completed (the executors keep such frees pending until
 * then), or when its last user and the block's next user are on the same
 * stream. Kernels get their scratch workspace from the caller, who
 * allocates op_workspace bytes for them.
 *
 * Errors. Enqueueing calls return TSL_ERR_OOM when out of host memory (the
 * work is then not enqueued) or TSL_ERR_INVALID for bad arguments. An error
 * met while running enqueued work (a kernel's failure) is sticky: it is
 * returned by the next event_sync or synchronize, with its message.
 *
 * Thread safety: alloc, alloc_at, free, mem_stats, reset_peaks, fail_alloc_at,
 * host_alloc, host_free and every event call may be made from any thread
 * (the Swap Executor allocates and copies from its own threads); enqueueing
 * on the compute stream is done from one thread at a time.
 *
 * Example usage (one op, its time measured on the device's clock):
 *
 *   tsl_backend *b;
 *   tsl_cpu_backend_new(1ull << 30, TSL_KERNELS_FAST, 2, &b);   // backend_cpu.h
 *   size_t ws;  b->iface->op_workspace(b, g, op, &ws);
 *   void *w = NULL;  if (ws) b->iface->alloc(b, ws, &w);
 *   tsl_dev_event *e0, *e1;
 *   b->iface->event_record(b, TSL_STREAM_COMPUTE, &e0);
 *   b->iface->launch_op(b, g, op, in, out, w, &ctx);            // returns at once
 *   b->iface->event_record(b, TSL_STREAM_COMPUTE, &e1);
 *   b->iface->event_sync(b, e1);                                // the op is done
 *   double ms;  b->iface->event_elapsed_ms(b, e0, e1, &ms);
 *   b->iface->event_release(b, e0);  b->iface->event_release(b, e1);
 *   if (w) b->iface->free(b, w);                                // its user is done
 *   tsl_backend_free(b);
 *
 * The synchronous helpers at the end of this header (tsl_backend_run_op,
 * tsl_backend_upload, tsl_backend_download) wrap these calls for code that
 * has nothing to overlap (tests, calibration, the data load).
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

/* The three streams. */
typedef enum tsl_stream {
    TSL_STREAM_COMPUTE = 0, /* kernels, and device-to-device copies */
    TSL_STREAM_H2D = 1,     /* host-to-device copies (swap-ins) */
    TSL_STREAM_D2H = 2,     /* device-to-host copies (swap-outs) */
} tsl_stream;
#define TSL_N_STREAMS 3

/* A marker in a stream (opaque; owned by the backend until released). */
typedef struct tsl_dev_event tsl_dev_event;

/* What one op execution needs beyond its tensors. */
typedef struct tsl_run_ctx {
    int64_t step;     /* 1-based training step: Adam's t, the dropout stream */
    int training;     /* 0 in evaluation */
    int algo;         /* the op's algorithm (tensile/ops.h, "algorithms"): 0 the
                         default; k >= 1 only on a backend with op_algo_workspace,
                         whose workspace the caller then passes */
} tsl_run_ctx;

typedef struct tsl_backend_caps {
    size_t capacity;       /* bytes of the device arena */
    int async_compute;     /* 1: launch_op may return before the kernel ran */
    int copy_engines;      /* copy streams that run concurrently with compute (0, 1 or 2;
                              1: both directions share one engine) */
    int host_addressable;  /* 1: device pointers can be read by the host (CPU) */
} tsl_backend_caps;

struct tsl_backend_i {
    const char *(*name)(tsl_backend *b);
    void (*caps)(tsl_backend *b, tsl_backend_caps *c);

    /* ---- memory ------------------------------------------------------------
     * Device memory from the arena: TSL_ERR_OOM (message recorded) when no
     * free block is large enough. Immediate; see "Memory" above for when a
     * block may be freed. */
    tsl_status (*alloc)(tsl_backend *b, size_t nbytes, void **ptr);
    /* Optional (NULL: the backend cannot place, and the runtime ignores
     * plans' layouts): the block [offset, offset + nbytes rounded up to
     * TSL_ALLOC_ALIGN) of the arena, as an offline layout planned it
     * (tensile/layout.h, tsl_alloc_alloc_at). offset is a multiple of
     * TSL_ALLOC_ALIGN. *ptr is the arena's base + offset (CUDA: the
     * cudaMalloc'd arena's pointer + offset), the same base for every
     * block, alloc's included: the runtime finds where any block of the
     * arena lies as its pointer less that base. TSL_ERR_BUSY while any of
     * the range is held by a live block (nothing counted as failed: wait
     * for it to go and retry), TSL_ERR_OOM past the capacity or on an
     * injected fault (fail_alloc_at counts placements too). Freed with
     * free like any block. */
    tsl_status (*alloc_at)(tsl_backend *b, size_t offset, size_t nbytes, void **ptr);
    void (*free)(tsl_backend *b, void *ptr);
    /* The arena's ledger (exact, tensile/alloc.h). */
    void (*mem_stats)(tsl_backend *b, tsl_alloc_stats *st);
    /* Optional (NULL: not known): the contiguous free bytes there would be
     * if the live block ptr were freed, the free blocks either side of it
     * included (tsl_alloc_free_run): which eviction opens a large block. */
    size_t (*free_run)(tsl_backend *b, void *ptr);
    void (*reset_peaks)(tsl_backend *b);
    /* Optional: make the k-th allocation from now fail (fault injection). */
    void (*fail_alloc_at)(tsl_backend *b, uint64_t k);
    /* Host staging memory that the copy streams can move asynchronously
     * (pinned on CUDA); NULL when out of host memory. */
    void *(*host_alloc)(tsl_backend *b, size_t n);
    void (*host_free)(tsl_backend *b, void *p);

    /* ---- kernels -----------------------------------------------------------
     * The scratch workspace op's kernel needs, in bytes: what the caller
     * allocates and passes to launch_op, and what a plan must count for the
     * op. May prepare the kernel (kept for launch_op); an error if it cannot
     * be prepared. */
    tsl_status (*op_workspace)(tsl_backend *b, const tsl_graph *g, const tsl_op *op, size_t *bytes);
    /* Optional (NULL: every op runs its default algorithm only): the
     * scratch bytes op needs when run with algorithm `algo` (tensile/ops.h,
     * "algorithms"; 0 is op_workspace's figure), what launch_op with
     * ctx->algo = algo then expects. TSL_ERR_INVALID naming the op when it
     * has no such algorithm here. */
    tsl_status (*op_algo_workspace)(tsl_backend *b, const tsl_graph *g, const tsl_op *op,
                                    int algo, size_t *bytes);
    /* Enqueues op's kernel on the compute stream, reading in[] and writing
     * out[] (device pointers, op->n_in and op->n_out of them; the arrays
     * themselves are copied) with `workspace` (op_workspace bytes, NULL
     * when 0), with algorithm ctx->algo (op_algo_workspace's bytes then).
     * Returns when enqueued; the kernel may not have run yet. */
    tsl_status (*launch_op)(tsl_backend *b, const tsl_graph *g, const tsl_op *op,
                            void *const *in, void *const *out, void *workspace,
                            const tsl_run_ctx *ctx);

    /* ---- copies ------------------------------------------------------------
     * Enqueues a copy of n bytes on `stream`: TSL_STREAM_H2D from host
     * memory to the device, TSL_STREAM_D2H from the device to host memory,
     * TSL_STREAM_COMPUTE from the device to the device. n may be 0; the
     * buffers must stay valid until the copy is done and must not overlap. */
    tsl_status (*memcpy_async)(tsl_backend *b, tsl_stream stream, void *dst, const void *src,
                               size_t n);

    /* ---- events ------------------------------------------------------------ */
    /* Records a new event at the current tail of `stream` (*ev set). */
    tsl_status (*event_record)(tsl_backend *b, tsl_stream stream, tsl_dev_event **ev);
    /* Work enqueued on `stream` after this call waits for ev. ev may be
     * released right after the call. */
    tsl_status (*stream_wait)(tsl_backend *b, tsl_stream stream, tsl_dev_event *ev);
    /* 1 if ev has completed; never blocks. */
    int (*event_query)(tsl_backend *b, tsl_dev_event *ev);
    /* Blocks the calling thread until ev has completed. Returns TSL_OK, or
     * the sticky error of work that failed (see "Errors"). */
    tsl_status (*event_sync)(tsl_backend *b, tsl_dev_event *ev);
    /* Milliseconds of the device's clock from `from` to `to`, both
     * completed (TSL_ERR_INVALID otherwise). */
    tsl_status (*event_elapsed_ms)(tsl_backend *b, tsl_dev_event *from, tsl_dev_event *to,
                                   double *ms);
    /* Gives up the caller's hold on an event; it may not have completed
     * yet (the backend keeps it as long as a stream still needs it). NULL
     * is fine. */
    void (*event_release)(tsl_backend *b, tsl_dev_event *ev);
    /* Optional (NULL: the caller waits for events on threads of its own).
     * Enqueues a call of fn(arg) on `stream`: it runs on a thread of the
     * backend once the work enqueued on the stream before it has
     * completed, and the stream's later work waits until it returns. fn
     * may enqueue work on any stream, call alloc and free and take the
     * caller's locks; it must not wait for work of its own stream, and it
     * is called even when earlier work failed (the error stays sticky).
     * TSL_ERR_OOM when out of host memory (nothing enqueued). The runtime
     * learns that its copies ended this way: a thread watching their
     * events would cost a wake-up per copy on cores that also run the
     * kernels. */
    tsl_status (*host_func)(tsl_backend *b, tsl_stream stream, void (*fn)(void *arg), void *arg);

    /* Waits for everything enqueued on every stream. TSL_OK or the sticky
     * error. */
    tsl_status (*synchronize)(tsl_backend *b);
    void (*destroy)(tsl_backend *b);
};

struct tsl_backend {
    const struct tsl_backend_i *iface;
    void *context;
};

void tsl_backend_free(tsl_backend *b); /* NULL is fine */

/* ---- synchronous helpers on the contract (backend/backend_sync.c) -------- */

/* Runs op to completion with algorithm ctx->algo: allocates its workspace
 * (op_workspace, or op_algo_workspace for an algorithm k >= 1:
 * TSL_ERR_INVALID on a backend without) in the arena, launches it
 * between two events, waits, frees the workspace. *ms (may be NULL) is the
 * kernel's time between the events. TSL_ERR_OOM if the workspace does not
 * fit (message names the op), or the kernel's error. */
tsl_status tsl_backend_run_op(tsl_backend *b, const tsl_graph *g, const tsl_op *op,
                              void *const *in, void *const *out, const tsl_run_ctx *ctx,
                              double *ms);
/* Copies n bytes from host memory to the device, or back, and waits. */
tsl_status tsl_backend_upload(tsl_backend *b, void *dev, const void *host, size_t n);
tsl_status tsl_backend_download(tsl_backend *b, void *host, const void *dev, size_t n);
/* Enqueues a copy on `stream` and records its completion event (*done).
 * TSL_ERR_OOM when out of host memory (nothing enqueued). */
tsl_status tsl_backend_copy_async(tsl_backend *b, tsl_stream stream, void *dst, const void *src,
                                  size_t n, tsl_dev_event **done);

/* Monotonic milliseconds of the host (CLOCK_MONOTONIC). */
double tsl_backend_now_ms(void);

#ifdef __cplusplus
}
#endif
#endif
