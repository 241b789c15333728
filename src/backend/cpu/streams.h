/*
 * streams.h - the CPU backend's three streams and its events (internal),
 * the CPU's implementation of tensile/backend.h's asynchronous contract.
 *
 * A stream is a FIFO of work items served in order: kernels, copies, event
 * records and waits for events. The two copy streams (host-to-device,
 * device-to-host) each have a thread, so that they run concurrently with
 * each other and with compute (a GPU's two copy engines). The compute
 * stream runs its items either on the thread that enqueues them, at once
 * (synchronous mode, the default: a kernel has run when launch returns,
 * which the contract allows), or on a thread of its own (asynchronous
 * mode: launch returns at once and the kernel runs later; with a delay, as
 * late as `kernel_delay_us` after it could have started - the test device
 * that proves an executor never assumes a kernel is done because a call
 * returned).
 *
 * Events. An event is recorded at a stream's tail; it completes when the
 * stream reaches it, and takes the time then (CLOCK_MONOTONIC, ms). A wait
 * item blocks its stream until the event completes. Events are reference
 * counted: the caller's reference (dropped by release) and one per queue
 * item that names it; the last drop frees it, so an event may be released
 * before it completes. Completion is published under one mutex and
 * condition variable of the streams object (few waiters: the copy threads,
 * the compute thread, the executors).
 *
 * Throttling: with a bandwidth of G GB/s, a copy stream copies n bytes in
 * 1 MiB chunks, each released no earlier than its due time (start + bytes
 * so far / G ns), so that a transfer takes at least n / (G * 1e9) s and its
 * progress is smooth. G = 0 is a plain memcpy. The compute stream's
 * device-to-device copies are never throttled.
 *
 * On a shared device (tensile/shdev.h, opts.shdev) each copy stream's
 * chunks go through the device's channel of its direction instead
 * (shchan.h): one chunk at a time across every attached process, in FIFO
 * order of tickets, each chunk throttled on the channel's clock at the
 * device's pcie_gbps (tsl__streams_set_gbps is then not used), and the
 * bytes counted in the job's slot.
 *
 * Errors: a kernel that fails on the compute thread records the first
 * failure (status and message); event_sync and sync return it from then
 * on. In synchronous mode the kernel's status is returned by enqueue itself.
 *
 * Thread safety: every function may be called from any thread; enqueueing
 * on one stream from several threads at once keeps each call's items
 * together, in some order.
 */
#ifndef TSL_BACKEND_CPU_STREAMS_H
#define TSL_BACKEND_CPU_STREAMS_H

#include <stddef.h>
#include "backend/cpu/kernel.h"
#include "tensile/backend.h"
#include "tensile/shdev.h"

typedef struct tsl__streams tsl__streams;

/* Chunk of a throttled copy. */
#define TSL__COPY_CHUNK ((size_t)1 << 20)

typedef struct tsl__streams_opts {
    int async_compute;      /* 1: the compute stream has its own thread */
    double kernel_delay_us; /* async only: each kernel starts up to this late (tests) */
    int nthreads;           /* the compute thread's kernel threads (OpenMP)         */
    tsl_shdev *shdev;       /* NULL: private channels; else the shared device's (attached) */
    int shdev_slot;         /* with shdev: the job's slot */
} tsl__streams_opts;

/* Starts the streams' threads, unthrottled. TSL_ERR_OOM, or
 * TSL_ERR_INTERNAL if a thread cannot be created (nothing leaked). */
tsl_status tsl__streams_new(const tsl__streams_opts *o, tsl__streams **out);

/* Drains every stream, joins the threads, frees the events still held by
 * the caller and the object. NULL is fine. */
void tsl__streams_free(tsl__streams *s);

/* Throttles both copy streams to gbps GB/s (0: unthrottled), from the next
 * copy each starts. gbps finite and >= 0 (TSL_ASSERT). */
void tsl__streams_set_gbps(tsl__streams *s, double gbps);

/* Enqueues a kernel on the compute stream: a copy of *a is kept, with its
 * in/out arrays (a->op->n_in, n_out pointers). */
tsl_status tsl__streams_kernel(tsl__streams *s, tsl_kernel_fn fn, const tsl_kernel_args *a);

/* Enqueues a copy of n bytes (see memcpy_async in tensile/backend.h). */
tsl_status tsl__streams_copy(tsl__streams *s, tsl_stream st, void *dst, const void *src,
                             size_t n);

tsl_status tsl__streams_record(tsl__streams *s, tsl_stream st, tsl_dev_event **ev);
/* Enqueues fn(arg) on stream st (host_func in tensile/backend.h): run by
 * the stream's thread in its turn (by the caller at once on a synchronous
 * compute stream). TSL_ERR_OOM when out of host memory. */
tsl_status tsl__streams_host_func(tsl__streams *s, tsl_stream st, void (*fn)(void *arg), void *arg);
tsl_status tsl__streams_wait(tsl__streams *s, tsl_stream st, tsl_dev_event *ev);
int tsl__event_query(tsl_dev_event *ev);
tsl_status tsl__event_sync(tsl__streams *s, tsl_dev_event *ev);
tsl_status tsl__event_elapsed_ms(tsl_dev_event *from, tsl_dev_event *to, double *ms);
void tsl__event_release(tsl__streams *s, tsl_dev_event *ev);

/* Waits until everything enqueued on every stream before the call has
 * completed; TSL_OK or the sticky error. */
tsl_status tsl__streams_sync(tsl__streams *s);

#endif
