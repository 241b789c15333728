/*
 * copy_engine.h - the CPU backend's two copy channels (internal).
 *
 * The engine plays a GPU's PCIe copy engines on the CPU: one thread per
 * direction (host-to-device, device-to-host), each serving its FIFO queue
 * one transfer at a time, so that the two directions run concurrently
 * (duplex) and each is serial. Every transfer has a completion event that
 * records when the channel started and finished it, in milliseconds on
 * tsl_backend_now_ms's clock (CLOCK_MONOTONIC).
 *
 * Throttling: with a bandwidth of G GB/s, a transfer of n bytes is copied in
 * 1 MiB chunks, each released no earlier than its due time (start + bytes
 * so far / G ns), so a transfer takes at least n / (G * 1e9) seconds and its
 * progress is smooth. G = 0 is a plain memcpy.
 *
 * Events belong to the engine until released. Releasing an event that is
 * not done yet is a bug (TSL_ASSERT): the channel thread still writes it.
 * Events still unreleased when the engine is destroyed are freed with it.
 *
 * Thread safety: submit, wait, done, times, release, drain and set_gbps may
 * be called from any threads concurrently; an event is released once, by
 * one thread, after which nobody touches it.
 *
 * Example usage:
 *
 *   tsl__copy_engine *e;
 *   if (tsl__copy_engine_new(&e) != TSL_OK) ...;
 *   tsl__copy_engine_set_gbps(e, 12.0);
 *   tsl_copy_event *ev;
 *   tsl__copy_engine_submit(e, TSL_TO_HOST, host, dev, n, &ev);
 *   tsl__copy_event_wait(ev);
 *   double t0, t1; tsl__copy_event_times(ev, &t0, &t1);
 *   tsl__copy_event_release(ev);
 *   tsl__copy_engine_free(e);   // drains, joins the threads
 */
#ifndef TSL_BACKEND_CPU_COPY_ENGINE_H
#define TSL_BACKEND_CPU_COPY_ENGINE_H

#include <stddef.h>
#include "tensile/backend_cpu.h"

typedef struct tsl__copy_engine tsl__copy_engine;

/* Chunk of a throttled copy. */
#define TSL__COPY_CHUNK ((size_t)1 << 20)

/* Starts both channel threads, unthrottled. TSL_ERR_OOM if out of host
 * memory, TSL_ERR_INTERNAL if a thread cannot be created (nothing leaked). */
tsl_status tsl__copy_engine_new(tsl__copy_engine **out);

/* Drains both channels, joins the threads, frees unreleased events and the
 * engine. NULL is fine. */
void tsl__copy_engine_free(tsl__copy_engine *e);

/* Enqueues a copy of n bytes from src to dst on the channel of `dir`
 * (n may be 0; dst and src must not be NULL when n > 0, must stay valid
 * until the event is done, and must not overlap). *ev is set to a new event.
 * TSL_ERR_OOM (nothing enqueued, *ev untouched) if out of host memory. */
tsl_status tsl__copy_engine_submit(tsl__copy_engine *e, tsl_copy_dir dir, void *dst,
                                   const void *src, size_t n, tsl_copy_event **ev);

/* Blocks (without spinning) until every transfer enqueued on both channels
 * before the call has completed. */
void tsl__copy_engine_drain(tsl__copy_engine *e);

/* Throttles both channels to gbps GB/s (0: unthrottled); applies to the
 * transfers a channel starts after the call. gbps must be finite and >= 0
 * (TSL_ASSERT). */
void tsl__copy_engine_set_gbps(tsl__copy_engine *e, double gbps);

/* 1 if the transfer has completed (its bytes have arrived), else 0. Never
 * blocks. */
int tsl__copy_event_done(tsl_copy_event *ev);

/* Blocks on a condition variable until the transfer has completed. */
void tsl__copy_event_wait(tsl_copy_event *ev);

/* Start and end of the transfer on tsl_backend_now_ms's clock. The event
 * must be done (TSL_ASSERT). */
void tsl__copy_event_times(tsl_copy_event *ev, double *start_ms, double *end_ms);

/* Frees a completed event (TSL_ASSERT that it is done). NULL is fine. */
void tsl__copy_event_release(tsl_copy_event *ev);

/* ---- CPU backend internals used by tests --------------------------------
 * (They belong to cpu_backend.c, which has no internal header of its own.) */

/* Runs tsl_alloc_check on the CPU backend's arena allocator while holding
 * the arena's lock: 1 if consistent, else 0 with the message recorded.
 * `b` must come from tsl_cpu_backend_new (TSL_ASSERT on the name slot). */
int tsl__cpu_backend_check(tsl_backend *b);

#endif
