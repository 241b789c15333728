/*
 * clock.h - the CPU backend's clock (internal): CLOCK_MONOTONIC in
 * nanoseconds, and waits to absolute deadlines on it. Shared by the copy
 * streams (streams.c) and the cross-process copy channels (shchan.c), whose
 * "channel free at" times are on this clock: CLOCK_MONOTONIC is one clock
 * for every process of the machine.
 *
 * No shared state, no locking: every function may be called from any
 * thread (tsl__wait_until_ns keeps one figure per thread).
 */
#ifndef TSL_BACKEND_CPU_CLOCK_H
#define TSL_BACKEND_CPU_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

/* A thread's first guess of how late a sleep wakes (tsl__wait_until_ns). */
#define TSL__SPIN_NS 20000

/* CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t tsl__mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

/* Sleeps until CLOCK_MONOTONIC reaches due_ns (returns at once if past). */
static inline void tsl__sleep_until_ns(int64_t due_ns) {
    struct timespec ts = {.tv_sec = (time_t)(due_ns / 1000000000),
                          .tv_nsec = (long)(due_ns % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* Returns once CLOCK_MONOTONIC has reached due_ns, and not much later: it
 * sleeps until the thread's usual oversleep before due_ns, then spins the
 * rest. A sleep overshoots by the timer slack and the wake-up (tens of µs:
 * 35 µs a copy was measured on a shared 2-core VM when the sleep ran to
 * the deadline itself), which would make every throttled copy cost far
 * more than its bytes (a GPU copy engine has a few µs of fixed cost). The
 * oversleep is learned per thread (a moving average of what the sleeps
 * overshot, between TSL__SPIN_NS / 4 and 10 x TSL__SPIN_NS, TSL__SPIN_NS
 * at first), so that the spin is short where wake-ups are prompt and the
 * deadline is still met where they are slow; the copy threads also lower
 * their timer slack to 1 ns (streams.c). */
static inline void tsl__wait_until_ns(int64_t due_ns) {
    static _Thread_local int64_t oversleep = TSL__SPIN_NS;
    int64_t target = due_ns - oversleep;
    if (target - tsl__mono_ns() > 0) {
        tsl__sleep_until_ns(target);
        int64_t late = tsl__mono_ns() - target; /* what this sleep overshot */
        oversleep += (late + late / 4 - oversleep) / 8; /* aim a quarter beyond it */
        if (oversleep < TSL__SPIN_NS / 4) oversleep = TSL__SPIN_NS / 4;
        if (oversleep > 10 * TSL__SPIN_NS) oversleep = 10 * TSL__SPIN_NS;
    }
    while (tsl__mono_ns() < due_ns) {
    }
}

#endif
