/*
 * clock.h - the CPU backend's clock (internal): CLOCK_MONOTONIC in
 * nanoseconds, and waits to absolute deadlines on it. Shared by the copy
 * streams (streams.c) and the cross-process copy channels (shchan.c), whose
 * "channel free at" times are on this clock: CLOCK_MONOTONIC is one clock
 * for every process of the machine.
 *
 * No state, no locking: every function may be called from any thread.
 */
#ifndef TSL_BACKEND_CPU_CLOCK_H
#define TSL_BACKEND_CPU_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

/* Waits shorter than this spin instead of sleeping (tsl__wait_until_ns). */
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

/* Returns once CLOCK_MONOTONIC has reached due_ns, and not much later: a
 * wait above TSL__SPIN_NS sleeps, the rest spins. A sleep overshoots by the
 * thread's timer slack and wake-up (tens of µs), which would make every
 * small throttled copy cost far more than its bytes (a GPU copy engine has
 * a few µs of fixed cost); the copy threads also lower their timer slack to
 * 1 ns (streams.c). */
static inline void tsl__wait_until_ns(int64_t due_ns) {
    if (due_ns - tsl__mono_ns() > TSL__SPIN_NS) tsl__sleep_until_ns(due_ns);
    while (tsl__mono_ns() < due_ns) {
    }
}

#endif
