/*
 * inflight.h - the kernels launched but not yet retired, in launch order:
 * what an executor must not assume is done because launch_op returned
 * (tensile/backend.h). Each entry holds the kernel's start and end events
 * (recorded around it on the compute stream) and the device blocks that
 * may be freed only once it has completed (its workspace block; a
 * recomputation's holds the scratch of its other outputs too). Owned by the one thread that launches; no locking.
 *
 * Example usage:
 *
 *   tsl__launched *l = tsl__inflight_push(&q);          // NULL: out of memory
 *   l->item = i; l->start = e0; l->end = e1; l->ws = w;
 *   while (q.n && b->iface->event_query(b, tsl__inflight_oldest(&q)->end))
 *       retire(tsl__inflight_pop(&q));                 // frees, times, triggers
 */
#ifndef TSL_RUNTIME_INFLIGHT_H
#define TSL_RUNTIME_INFLIGHT_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/backend.h"

#define TSL__MAX_OUT 16 /* outputs of one op (TSL_ASSERT'd by the executors) */

typedef struct tsl__launched {
    int32_t item;                      /* op index, or item of the executed sequence
                                          (< 0: DTR's rematerialisation of -1 - item) */
    tsl_dev_event *start, *end;        /* around the kernel on the compute stream */
    void *ws;                          /* workspace block (NULL if none); a recomputation's
                                          holds its scratch too (remat.h, tsl__replay_block) */
    size_t ws_bytes;
    double launched_at;                /* host µs of the launch (the executor's clock) */
} tsl__launched;

typedef struct tsl__inflight {
    tsl__launched *a;
    int32_t head, n, cap;
} tsl__inflight;

/* A zeroed entry at the tail, or NULL if out of host memory. */
tsl__launched *tsl__inflight_push(tsl__inflight *q);
/* The oldest entry (q->n > 0). */
tsl__launched *tsl__inflight_oldest(tsl__inflight *q);
/* Removes the oldest entry and returns a copy of it (q->n > 0). */
tsl__launched tsl__inflight_pop(tsl__inflight *q);
void tsl__inflight_free(tsl__inflight *q);
#endif
