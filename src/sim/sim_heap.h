/*
 * sim_heap.h - the simulator's agenda: a binary min-heap of timed events.
 *
 * Events are ordered by (epoch, t, phase, job, seq). The engine sets epoch
 * and t: with one job, epoch is the iteration and t the time from its start
 * (no rounding of absolute times can then reorder one iteration's events);
 * with several jobs, epoch is 0 and t the absolute time. At one time point
 * the phases run in order (completions, zero-duration ops, swap-out issues,
 * releases, swap-in issues, iteration starts and compute dispatch), so that
 * frees come before allocations as docs/SCHEDULING.md requires; seq
 * (insertion order) breaks the remaining ties, which makes the order total
 * and deterministic.
 */
#ifndef TSL_SIM_SIM_HEAP_H
#define TSL_SIM_SIM_HEAP_H

#include <stdint.h>

typedef struct tsl__sim_key {
    int64_t epoch;
    double t;
} tsl__sim_key;

typedef struct tsl__sim_ev {
    tsl__sim_key at;
    int32_t phase;
    int32_t job;            /* tie-break after phase; INT32_MAX for device-wide events */
    uint64_t seq;
    int32_t kind;           /* engine-defined */
    int32_t arg;            /* engine-defined: event index, transfer id, ... */
    double rel;             /* the job's time from its iteration's start */
} tsl__sim_ev;

typedef struct tsl__sim_heap {
    tsl__sim_ev *a;
    int64_t n, cap;
    uint64_t next_seq;
} tsl__sim_heap;

/* -1, 0, 1 as a is before, equal to, after b. */
static inline int tsl__sim_key_cmp(tsl__sim_key a, tsl__sim_key b) {
    if (a.epoch != b.epoch) return a.epoch < b.epoch ? -1 : 1;
    if (a.t != b.t) return a.t < b.t ? -1 : 1;
    return 0;
}

/* Pushes e (its seq is assigned here). Returns 0, or -1 if out of memory. */
int tsl__sim_heap_push(tsl__sim_heap *h, tsl__sim_ev e);
/* Pops the least event into *e. Returns 0, or -1 if the heap is empty. */
int tsl__sim_heap_pop(tsl__sim_heap *h, tsl__sim_ev *e);
void tsl__sim_heap_free(tsl__sim_heap *h);
#endif
