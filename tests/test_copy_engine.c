/*
 * test_copy_engine.c - the CPU backend's copy streams (tensile/backend.h,
 * src/backend/cpu/streams.c) and its thread-safe arena allocator. (The
 * compute stream and cross-stream waits: test_backend_streams.c.)
 *
 * Bytes arrive intact in both directions (1 B .. 64 MiB, throttled or not);
 * each channel is FIFO and serial (a transfer starts after the previous one
 * ended); the two channels overlap in time (duplex); throttling makes a
 * transfer last at least n / G ns (the lower bound is asserted, measured
 * rates are printed, no upper bound); a throttled channel sleeps (its CPU
 * time far below its wall time); event_query before and after;
 * synchronize drains; destroying the backend drains; 10k small copies while the
 * channels run; submitters and waiters on several threads; the arena
 * allocator used from two threads stays consistent and never hands out
 * overlapping blocks.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "backend/cpu/cpu_backend.h"
#include "helpers.h"
#include "tensile/backend_cpu.h"

#define MiB ((size_t)1 << 20)

/* ---- helpers ------------------------------------------------------------- */

/* A copy as these tests see it: enqueued on a copy stream between two
 * events, so that when it started and ended can be read on the device's
 * clock (ms from the backend's anchor event, recorded when it was made). */
typedef struct xcopy {
    tsl_dev_event *start, *end;
    double anchor_ms;
} xcopy;

static struct {
    tsl_backend *b;
    tsl_dev_event *anchor;
    double lo_ms, hi_ms; /* tsl_backend_now_ms before its record and after its sync */
} anchors[32];

static int anchor_of(tsl_backend *b) {
    for (int i = 0; i < 32; i++)
        if (anchors[i].b == b) return i;
    cr_assert(0, "no anchor for this backend");
    return 0;
}

static tsl_status xsubmit(tsl_backend *b, tsl_stream dir, void *dst, const void *src, size_t n,
                          xcopy **out) {
    xcopy *x = calloc(1, sizeof *x);
    if (!x) return TSL_ERR_OOM;
    tsl_status st = b->iface->event_record(b, dir, &x->start);
    if (st == TSL_OK) st = tsl_backend_copy_async(b, dir, dst, src, n, &x->end);
    *out = x;
    return st;
}

static void xwait(tsl_backend *b, xcopy *x) {
    cr_assert_eq(b->iface->event_sync(b, x->end), TSL_OK, "%s", tsl_last_error());
}

static int xdone(tsl_backend *b, xcopy *x) { return b->iface->event_query(b, x->end); }

/* When the copy started and ended on the host's clock (tsl_backend_now_ms),
 * from the device's clock relative to the backend's anchor event, whose own
 * host time lies in [lo_ms, hi_ms]: the start is placed with hi_ms (never
 * earlier than it was), the end with lo_ms (never later), so that ordering
 * checks against host times and between copies hold; durations come from
 * the events alone (wait_release). */
static void xtimes(tsl_backend *b, xcopy *x, double *s, double *e) {
    int i = anchor_of(b);
    tsl_dev_event *a = anchors[i].anchor;
    cr_assert_eq(b->iface->event_elapsed_ms(b, a, x->start, s), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(b->iface->event_elapsed_ms(b, a, x->end, e), TSL_OK, "%s", tsl_last_error());
    *s += anchors[i].hi_ms;
    *e += anchors[i].lo_ms;
}

static void xrelease(tsl_backend *b, xcopy *x) {
    if (!x) return;
    b->iface->event_release(b, x->start);
    b->iface->event_release(b, x->end);
    free(x);
}

static void set_gbps(tsl_backend *b, double gbps) {
    cr_assert_eq(tsl_cpu_backend_set_pcie_gbps(b, gbps), TSL_OK, "%s", tsl_last_error());
}

/* Offset of the first differing byte, or (size_t)-1 if equal. */
static size_t first_diff(const void *a, const void *b, size_t n) {
    const uint8_t *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return i;
    return (size_t)-1;
}

static tsl_backend *new_backend(size_t cap) {
    tsl_backend *b = NULL;
    cr_assert_eq(tsl_cpu_backend_new(cap, TSL_KERNELS_REF, 1, &b), TSL_OK, "%s", tsl_last_error());
    int i = 0;
    while (i < 32 && anchors[i].b && anchors[i].b != b) i++; /* a freed backend's slot: reused */
    for (int k = 0; k < 32; k++)
        if (anchors[k].b == b) i = k;
    cr_assert_lt(i, 32);
    anchors[i].b = b;
    anchors[i].lo_ms = tsl_backend_now_ms();
    cr_assert_eq(b->iface->event_record(b, TSL_STREAM_COMPUTE, &anchors[i].anchor), TSL_OK);
    cr_assert_eq(b->iface->event_sync(b, anchors[i].anchor), TSL_OK);
    anchors[i].hi_ms = tsl_backend_now_ms();
    return b;
}

static void *dev_alloc(tsl_backend *b, size_t n) {
    void *p = NULL;
    cr_assert_eq(b->iface->alloc(b, n, &p), TSL_OK, "device alloc(%zu): %s", n, tsl_last_error());
    return p;
}

static void *host_alloc(tsl_backend *b, size_t n) {
    void *p = b->iface->host_alloc(b, n);
    cr_assert_not_null(p, "host_alloc(%zu)", n);
    return p;
}

static xcopy *submit(tsl_backend *b, tsl_stream dir, void *dst, const void *src, size_t n) {
    xcopy *ev = NULL;
    cr_assert_eq(xsubmit(b, dir, dst, src, n, &ev), TSL_OK, "%s", tsl_last_error());
    cr_assert_not_null(ev);
    return ev;
}

/* Waits for ev, returns its duration in ms and releases it. */
static double wait_release(tsl_backend *b, xcopy *ev, double *start, double *end) {
    xwait(b, ev);
    cr_assert(xdone(b, ev));
    double s, e, ms;
    xtimes(b, ev, &s, &e);
    cr_assert_eq(b->iface->event_elapsed_ms(b, ev->start, ev->end, &ms), TSL_OK);
    cr_assert_geq(ms, 0.0, "event start after its end by %.6f ms", -ms);
    xrelease(b, ev);
    if (start) *start = s;
    if (end) *end = e;
    return ms;
}

/* One round trip of n random bytes: host -> device -> host, checked. */
static void round_trip(tsl_backend *b, size_t n, uint64_t seed, double gbps) {
    uint8_t *h = host_alloc(b, n), *back = host_alloc(b, n);
    uint8_t *d = dev_alloc(b, n);
    th_fill_bytes(h, n, seed);
    memset(back, 0, n);
    set_gbps(b, gbps);
    wait_release(b, submit(b, TSL_STREAM_H2D, d, h, n), NULL, NULL);
    size_t at = first_diff(d, h, n);
    cr_assert_eq(at, (size_t)-1, "to device, %zu bytes at %g GB/s: first wrong byte at %zu", n, gbps, at);
    wait_release(b, submit(b, TSL_STREAM_D2H, back, d, n), NULL, NULL);
    at = first_diff(back, h, n);
    cr_assert_eq(at, (size_t)-1, "to host, %zu bytes at %g GB/s: first wrong byte at %zu", n, gbps, at);
    b->iface->free(b, d);
    b->iface->host_free(b, back);
    b->iface->host_free(b, h);
}

/* ---- bytes, host memory ---------------------------------------------------- */

Test(copy_engine, bytes_arrive_intact_both_directions) {
    size_t big = th_quick() ? 16 * MiB : 64 * MiB;
    const size_t sizes[] = {1, 3, 255, 4096, 65537, MiB - 1, MiB, MiB + 1, 5 * MiB + 7, big};
    tsl_backend *b = new_backend(big + 16 * MiB);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        round_trip(b, sizes[i], 100 + i, 0);     /* plain memcpy */
        round_trip(b, sizes[i], 200 + i, 50.0);  /* chunked, throttled */
    }
    tsl_alloc_stats st;
    b->iface->mem_stats(b, &st);
    cr_assert_eq(st.load, 0, "device load %zu after freeing everything", st.load);
    tsl_backend_free(b);
}

/* A zero-byte copy touches no memory (NULL pointers are fine) and still
 * keeps its channel's order: queued behind a 4 MiB copy, it completes only
 * after it, and starts no earlier than it ended. */
Test(copy_engine, zero_byte_copy_completes_in_channel_order) {
    tsl_backend *b = new_backend(8 * MiB);
    set_gbps(b, 1.0); /* 4 MiB: about 4 ms */
    uint8_t *h = host_alloc(b, 4 * MiB), *d = dev_alloc(b, 4 * MiB);
    memset(h, 0x5A, 4 * MiB);
    xcopy *big = submit(b, TSL_STREAM_H2D, d, h, 4 * MiB);
    xcopy *zero = submit(b, TSL_STREAM_H2D, NULL, NULL, 0);
    xwait(b, zero);
    cr_assert(xdone(b, big), "the zero-byte copy completed before the copy ahead of it");
    double zs, ze, bs, be;
    wait_release(b, zero, &zs, &ze);
    wait_release(b, big, &bs, &be);
    cr_assert_geq(zs, be, "zero-byte copy started at %.6f ms, before the copy ahead ended at %.6f", zs, be);
    cr_assert_lt(ze - zs, 1.0, "a zero-byte copy took %.3f ms", ze - zs);
    cr_assert_eq(d[0], 0x5A);
    cr_assert_eq(d[4 * MiB - 1], 0x5A);
    b->iface->free(b, d);
    b->iface->host_free(b, h);
    tsl_backend_free(b);
}

Test(copy_engine, host_memory_is_page_aligned_and_writable) {
    tsl_backend *b = new_backend(MiB);
    const size_t sizes[] = {0, 1, 4095, 4096, 3 * MiB + 1};
    for (size_t i = 0; i < 5; i++) {
        uint8_t *p = host_alloc(b, sizes[i]);
        cr_assert_eq((uintptr_t)p % 4096, 0, "host_alloc(%zu) = %p not 4096-aligned", sizes[i], (void *)p);
        memset(p, 0xA5, sizes[i]);
        b->iface->host_free(b, p);
    }
    b->iface->host_free(b, NULL);
    tsl_backend_free(b);
}

/* ---- order, overlap, throttling ------------------------------------------ */

/* Each channel is FIFO and serial: transfer k+1 of a channel starts no
 * earlier than transfer k ended, and the bytes are right. */
Test(copy_engine, fifo_and_serial_per_channel) {
    enum { K = 200 };
    size_t stride = 256 * 1024;
    tsl_backend *b = new_backend(2 * K * stride + MiB);
    uint8_t *h = host_alloc(b, K * stride), *hb = host_alloc(b, K * stride);
    uint8_t *d = dev_alloc(b, K * stride), *d2 = dev_alloc(b, K * stride);
    th_fill_bytes(h, K * stride, 1);
    th_fill_bytes(d2, K * stride, 2);
    uint64_t rng = 3;
    size_t n[K];
    xcopy *up[K], *down[K];
    for (int k = 0; k < K; k++) {
        n[k] = 1 + th_splitmix64(&rng) % stride;
        up[k] = submit(b, TSL_STREAM_H2D, d + k * stride, h + k * stride, n[k]);
        down[k] = submit(b, TSL_STREAM_D2H, hb + k * stride, d2 + k * stride, n[k]);
    }
    double us[K], ue[K], ds[K], de[K];
    /* wait in reverse order: completion order must not depend on it */
    for (int k = K - 1; k >= 0; k--) {
        wait_release(b, up[k], &us[k], &ue[k]);
        wait_release(b, down[k], &ds[k], &de[k]);
    }
    for (int k = 0; k + 1 < K; k++) {
        cr_assert_geq(us[k + 1], ue[k], "to device: transfer %d started at %.6f before %d ended at %.6f",
                      k + 1, us[k + 1], k, ue[k]);
        cr_assert_geq(ds[k + 1], de[k], "to host: transfer %d started at %.6f before %d ended at %.6f",
                      k + 1, ds[k + 1], k, de[k]);
    }
    for (int k = 0; k < K; k++) {
        cr_assert_eq(first_diff(d + k * stride, h + k * stride, n[k]), (size_t)-1, "up %d", k);
        cr_assert_eq(first_diff(hb + k * stride, d2 + k * stride, n[k]), (size_t)-1, "down %d", k);
    }
    b->iface->free(b, d2);
    b->iface->free(b, d);
    b->iface->host_free(b, hb);
    b->iface->host_free(b, h);
    tsl_backend_free(b);
}

/* A long H2D and a long D2H run at the same time, each at the full
 * channel bandwidth. */
Test(copy_engine, channels_overlap_duplex) {
    size_t n = th_quick() ? 16 * MiB : 64 * MiB;
    double gbps = 1.0, min_ms = (double)n / gbps * 1e-6;
    tsl_backend *b = new_backend(2 * n + MiB);
    uint8_t *h = host_alloc(b, n), *hb = host_alloc(b, n);
    uint8_t *d = dev_alloc(b, n), *d2 = dev_alloc(b, n);
    th_fill_bytes(h, n, 11);
    th_fill_bytes(d2, n, 12);
    set_gbps(b, gbps);
    xcopy *up = submit(b, TSL_STREAM_H2D, d, h, n);
    xcopy *down = submit(b, TSL_STREAM_D2H, hb, d2, n);
    double us, ue, ds, de;
    double up_ms = wait_release(b, up, &us, &ue);
    double down_ms = wait_release(b, down, &ds, &de);
    double lo = us > ds ? us : ds, hi = ue < de ? ue : de;
    printf("duplex, %zu MiB each way at %g GB/s: H2D [%.1f, %.1f] ms, D2H [%.1f, %.1f] ms, overlap %.1f ms\n",
           n / MiB, gbps, 0.0, ue - us, ds - us, de - us, hi - lo);
    cr_assert_lt(lo, hi, "the channels did not overlap: H2D [%.3f, %.3f], D2H [%.3f, %.3f]", us, ue, ds, de);
    cr_assert_geq(up_ms, min_ms, "H2D took %.3f ms < %.3f ms", up_ms, min_ms);
    cr_assert_geq(down_ms, min_ms, "D2H took %.3f ms < %.3f ms", down_ms, min_ms);
    cr_assert_eq(first_diff(d, h, n), (size_t)-1);
    cr_assert_eq(first_diff(hb, d2, n), (size_t)-1);
    b->iface->free(b, d2);
    b->iface->free(b, d);
    b->iface->host_free(b, hb);
    b->iface->host_free(b, h);
    tsl_backend_free(b);
}

/* 64 MiB at 1 GB/s lasts at least 67.1 ms in each direction (asserted);
 * the measured rates, throttled and not, are printed. */
Test(copy_engine, throttling_lower_bound_and_rates) {
    size_t n = 64 * MiB;
    tsl_backend *b = new_backend(n + MiB);
    uint8_t *h = host_alloc(b, n);
    uint8_t *d = dev_alloc(b, n);
    th_fill_bytes(h, n, 21);
    memset(d, 0, n); /* touch the arena's pages before timing */
    const double rates[] = {0, 1.0, 4.0};
    for (int r = 0; r < 3; r++) {
        double g = rates[r];
        set_gbps(b, g);
        for (int dir = 0; dir < 2; dir++) {
            double t0 = tsl_backend_now_ms();
            xcopy *ev = dir == TSL_STREAM_H2D ? submit(b, TSL_STREAM_H2D, d, h, n)
                                                      : submit(b, TSL_STREAM_D2H, h, d, n);
            double s, e;
            double ms = wait_release(b, ev, &s, &e);
            double t1 = tsl_backend_now_ms();
            cr_assert_leq(t0, s, "event started at %.6f before the submit at %.6f", s, t0);
            cr_assert_leq(e, t1, "event ended at %.6f after the wait returned at %.6f", e, t1);
            double gbs = (double)n / (ms * 1e6);
            if (g > 0) {
                double min_ms = (double)n / g * 1e-6;
                printf("throttled %g GB/s, %s: %.2f ms for 64 MiB (>= %.2f), measured %.3f GB/s (%.2fx the bound)\n",
                       g, dir == TSL_STREAM_H2D ? "H2D" : "D2H", ms, min_ms, gbs, ms / min_ms);
                cr_assert_geq(ms, min_ms, "64 MiB at %g GB/s took %.4f ms < %.4f ms", g, ms, min_ms);
            } else {
                printf("unthrottled, %s: %.2f ms for 64 MiB, measured %.2f GB/s\n",
                       dir == TSL_STREAM_H2D ? "H2D" : "D2H", ms, gbs);
            }
        }
    }
    cr_assert_eq(first_diff(d, h, n), (size_t)-1);
    b->iface->free(b, d);
    b->iface->host_free(b, h);
    tsl_backend_free(b);
}

/* A throttled channel sleeps until its next chunk is due, as a GPU's copy
 * engine leaves the cores to the kernels: over a long throttled copy in each
 * direction at once (8 MiB of memcpy in about 0.2 s of wall time) the
 * process's CPU time stays far below the wall time. Not a timing assertion
 * of speed: a sleeping channel costs its memcpy alone (a few ms, however
 * loaded the machine, since waiting for a core costs no CPU time), while a
 * channel that spun would take about the wall time each, or, on a machine
 * so loaded that the two spinning channels got less than a quarter of one
 * core between them (more than 14 other busy threads on 2 cores), still
 * more than a few ms. The test thread itself sleeps in event_sync. */
static double cpu_ms_of(const struct rusage *r) {
    return ((double)(r->ru_utime.tv_sec + r->ru_stime.tv_sec)) * 1e3 +
           ((double)(r->ru_utime.tv_usec + r->ru_stime.tv_usec)) * 1e-3;
}

/* Library pool threads (OpenMP's, after the last parallel region) spin for
 * a while before they sleep: they would be counted in the process's CPU
 * time. Waits (at most 3 s) until a 50 ms
 * window costs the process less than 1 ms of CPU time. */
static void settle_library_threads(void) {
    for (int k = 0; k < 60; k++) {
        struct rusage a, z;
        cr_assert_eq(getrusage(RUSAGE_SELF, &a), 0);
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        cr_assert_eq(getrusage(RUSAGE_SELF, &z), 0);
        if (cpu_ms_of(&z) - cpu_ms_of(&a) < 1.0) return;
    }
}

Test(copy_engine, throttled_channels_sleep) {
    size_t n = 4 * MiB;
    double gbps = 0.02, min_ms = (double)n / gbps * 1e-6; /* 210 ms */
    tsl_backend *b = new_backend(2 * n + MiB);
    uint8_t *h = host_alloc(b, n), *hb = host_alloc(b, n);
    uint8_t *d = dev_alloc(b, n), *d2 = dev_alloc(b, n);
    th_fill_bytes(h, n, 61);
    th_fill_bytes(d2, n, 62);
    memset(hb, 0, n); /* every page touched before: no page faults in the copies */
    memset(d, 0, n);
    set_gbps(b, gbps);
    settle_library_threads();
    struct rusage r0, r1;
    cr_assert_eq(getrusage(RUSAGE_SELF, &r0), 0);
    double t0 = tsl_backend_now_ms();
    xcopy *up = submit(b, TSL_STREAM_H2D, d, h, n);
    xcopy *down = submit(b, TSL_STREAM_D2H, hb, d2, n);
    double up_ms = wait_release(b, up, NULL, NULL);
    double down_ms = wait_release(b, down, NULL, NULL);
    double wall_ms = tsl_backend_now_ms() - t0;
    cr_assert_eq(getrusage(RUSAGE_SELF, &r1), 0);
    double cpu_ms = cpu_ms_of(&r1) - cpu_ms_of(&r0);
    printf("throttled channels, %zu MiB each way at %g GB/s: %.1f ms of wall time, %.2f ms of CPU "
           "time (%.1f %%)\n", n / MiB, gbps, wall_ms, cpu_ms, 100.0 * cpu_ms / wall_ms);
    cr_assert_geq(up_ms, min_ms, "H2D took %.3f ms < %.3f ms", up_ms, min_ms);
    cr_assert_geq(down_ms, min_ms, "D2H took %.3f ms < %.3f ms", down_ms, min_ms);
    cr_assert_lt(cpu_ms, wall_ms / 4, "the throttled channels took %.2f ms of CPU time in %.2f ms: "
                 "they spin instead of sleeping", cpu_ms, wall_ms);
    cr_assert_eq(first_diff(d, h, n), (size_t)-1);
    cr_assert_eq(first_diff(hb, d2, n), (size_t)-1);
    b->iface->free(b, d2);
    b->iface->free(b, d);
    b->iface->host_free(b, hb);
    b->iface->host_free(b, h);
    tsl_backend_free(b);
}

/* ---- events ---------------------------------------------------------------- */

/* Before completion event_done is 0: a transfer of n bytes at G GB/s cannot
 * be done earlier than n/G ns after its submission, so a done observed
 * sooner is a failure (and one observed later is only printed). After the
 * wait it is 1, and stays 1. */
Test(copy_engine, event_done_before_and_after) {
    size_t n = th_quick() ? 8 * MiB : 16 * MiB;
    double gbps = 0.1, min_ms = (double)n / gbps * 1e-6; /* 84 or 168 ms */
    tsl_backend *b = new_backend(n + MiB);
    uint8_t *h = host_alloc(b, n);
    uint8_t *d = dev_alloc(b, n);
    th_fill_bytes(d, n, 31);
    set_gbps(b, gbps);
    double t0 = tsl_backend_now_ms();
    xcopy *ev = submit(b, TSL_STREAM_D2H, h, d, n);
    int done = xdone(b, ev);
    double t1 = tsl_backend_now_ms();
    if (done)
        cr_assert_geq(t1 - t0, min_ms, "done after %.3f ms, a %.3f ms transfer", t1 - t0, min_ms);
    else
        printf("event_done = 0 at %.3f ms into a %.1f ms transfer\n", t1 - t0, min_ms);
    xwait(b, ev);
    cr_assert_eq(xdone(b, ev), 1);
    xwait(b, ev); /* waiting again returns at once */
    cr_assert_eq(xdone(b, ev), 1);
    double ms; /* the events' own clock: the host placement (xtimes) widens by its anchor */
    cr_assert_eq(b->iface->event_elapsed_ms(b, ev->start, ev->end, &ms), TSL_OK);
    cr_assert_geq(ms, min_ms, "transfer lasted %.3f ms < %.3f ms", ms, min_ms);
    cr_assert_eq(first_diff(h, d, n), (size_t)-1);
    xrelease(b, ev);
    xrelease(b, NULL);
    b->iface->free(b, d);
    b->iface->host_free(b, h);
    tsl_backend_free(b);
}

/* Releasing the events of a copy still in flight is allowed (the contract:
 * the backend keeps an event while a stream needs it): the copy still
 * completes, its bytes arrive, and a later marker on the same stream
 * completes after it. The transfer lasts about 0.08 s, so the release
 * comes long before it ends. */
Test(copy_engine, release_in_flight_is_safe) {
    size_t n = 8 * MiB;
    tsl_backend *b = new_backend(n + MiB);
    uint8_t *h = host_alloc(b, n);
    uint8_t *d = dev_alloc(b, n);
    th_fill_bytes(d, n, 7);
    memset(h, 0, n);
    set_gbps(b, 0.1);
    xcopy *ev = submit(b, TSL_STREAM_D2H, h, d, n);
    cr_assert(!xdone(b, ev), "an 8 MiB copy at 0.1 GB/s was done at once");
    xrelease(b, ev);
    tsl_dev_event *after;
    cr_assert_eq(b->iface->event_record(b, TSL_STREAM_D2H, &after), TSL_OK);
    cr_assert_eq(b->iface->event_sync(b, after), TSL_OK);
    b->iface->event_release(b, after);
    cr_assert_eq(first_diff(h, d, n), (size_t)-1, "the bytes of a copy whose events were released");
    b->iface->free(b, d);
    b->iface->host_free(b, h);
    tsl_backend_free(b);
}

/* sync returns only once every transfer on both channels is done. */
Test(copy_engine, sync_drains_both_channels) {
    enum { K = 40 };
    size_t n = 512 * 1024;
    tsl_backend *b = new_backend(2 * K * n + MiB);
    uint8_t *h = host_alloc(b, K * n), *hb = host_alloc(b, K * n);
    uint8_t *d = dev_alloc(b, K * n), *d2 = dev_alloc(b, K * n);
    th_fill_bytes(h, K * n, 41);
    th_fill_bytes(d2, K * n, 42);
    set_gbps(b, 2.0); /* 40 x 0.26 ms per channel */
    xcopy *ev[2 * K];
    for (int k = 0; k < K; k++) {
        ev[2 * k] = submit(b, TSL_STREAM_H2D, d + k * n, h + k * n, n);
        ev[2 * k + 1] = submit(b, TSL_STREAM_D2H, hb + k * n, d2 + k * n, n);
    }
    cr_assert_eq(b->iface->synchronize(b), TSL_OK);
    for (int k = 0; k < 2 * K; k++) cr_assert(xdone(b, ev[k]), "event %d not done after sync", k);
    cr_assert_eq(first_diff(d, h, K * n), (size_t)-1);
    cr_assert_eq(first_diff(hb, d2, K * n), (size_t)-1);
    for (int k = 0; k < 2 * K; k++) xrelease(b, ev[k]);
    cr_assert_eq(b->iface->synchronize(b), TSL_OK); /* nothing in flight: returns at once */
    b->iface->free(b, d2);
    b->iface->free(b, d);
    b->iface->host_free(b, hb);
    b->iface->host_free(b, h);
    tsl_backend_free(b);
}

/* Destroying the backend drains the queues before joining: the bytes of
 * transfers never waited for arrive, and their unreleased events are freed
 * (the leak checker of the sanitizer build proves the latter). */
Test(copy_engine, destroy_drains_queued_transfers) {
    enum { K = 8 };
    size_t n = MiB;
    tsl_backend *b = new_backend(K * n + MiB);
    uint8_t *out = malloc(K * n), *want = malloc(K * n);
    cr_assert(out && want);
    memset(out, 0, K * n);
    uint8_t *d = dev_alloc(b, K * n);
    th_fill_bytes(d, K * n, 51);
    memcpy(want, d, K * n);
    set_gbps(b, 1.0); /* ~1 ms each */
    for (int k = 0; k < K; k++) submit(b, TSL_STREAM_D2H, out + k * n, d + k * n, n);
    tsl_backend_free(b);
    size_t at = first_diff(out, want, K * n);
    cr_assert_eq(at, (size_t)-1, "byte %zu did not arrive before the backend was destroyed", at);
    free(want);
    free(out);
}

/* ---- stress ------------------------------------------------------------------ */

/* 10k small copies in random directions from the test thread while the
 * channels run; events are waited for, polled or left to sync in random
 * order; per channel the end times follow the submission order and every
 * byte arrives. */
Test(copy_engine, stress_ten_thousand_small_copies) {
    enum { K = 10000, SLOT = 1024 };
    tsl_backend *b = new_backend((size_t)K * SLOT + MiB);
    uint8_t *hsrc = host_alloc(b, (size_t)K * SLOT), *hdst = host_alloc(b, (size_t)K * SLOT);
    uint8_t *d = dev_alloc(b, (size_t)K * SLOT);
    th_fill_bytes(hsrc, (size_t)K * SLOT, 61);
    th_fill_bytes(d, (size_t)K * SLOT, 62);
    memset(hdst, 0, (size_t)K * SLOT);
    xcopy **ev = calloc(K, sizeof *ev);
    double *start = calloc(K, sizeof *start), *end = calloc(K, sizeof *end);
    uint8_t *dir = calloc(K, 1), *released = calloc(K, 1);
    size_t *n = calloc(K, sizeof *n);
    cr_assert(ev && start && end && dir && released && n);
    uint64_t rng = 63;
    int polled_done = 0;
    for (int k = 0; k < K; k++) {
        size_t off = (size_t)k * SLOT;
        dir[k] = (uint8_t)(th_splitmix64(&rng) & 1);
        n[k] = 1 + th_splitmix64(&rng) % SLOT;
        ev[k] = dir[k] == TSL_STREAM_H2D ? submit(b, TSL_STREAM_H2D, d + off, hsrc + off, n[k])
                                        : submit(b, TSL_STREAM_D2H, hdst + off, d + off, n[k]);
        uint64_t what = th_splitmix64(&rng) % 8;
        int j = (int)(th_splitmix64(&rng) % (uint64_t)(k + 1));
        if (released[j]) continue;
        if (what == 0) { /* wait for a random earlier one */
            xwait(b, ev[j]);
        } else if (what < 3) { /* poll it */
            if (!xdone(b, ev[j])) continue;
            polled_done++;
        } else {
            continue;
        }
        xtimes(b, ev[j], &start[j], &end[j]);
        xrelease(b, ev[j]);
        released[j] = 1;
    }
    cr_assert_eq(b->iface->synchronize(b), TSL_OK);
    int late = 0;
    for (int k = 0; k < K; k++) {
        if (released[k]) continue;
        cr_assert(xdone(b, ev[k]), "event %d not done after sync", k);
        xtimes(b, ev[k], &start[k], &end[k]);
        xrelease(b, ev[k]);
        late++;
    }
    printf("stress: %d copies, %d released after a poll, %d after sync\n", K, polled_done, late);
    int last[2] = {-1, -1};
    for (int k = 0; k < K; k++) {
        int p = last[dir[k]];
        if (p >= 0)
            cr_assert_geq(start[k], end[p], "channel %d: copy %d started at %.6f before copy %d ended at %.6f",
                          dir[k], k, start[k], p, end[p]);
        last[dir[k]] = k;
        size_t off = (size_t)k * SLOT;
        const uint8_t *got = dir[k] == TSL_STREAM_H2D ? d + off : hdst + off;
        const uint8_t *want = dir[k] == TSL_STREAM_H2D ? hsrc + off : d + off;
        size_t at = first_diff(got, want, n[k]);
        cr_assert_eq(at, (size_t)-1, "copy %d (dir %d, %zu bytes): wrong byte at %zu", k, dir[k], n[k], at);
    }
    free(n);
    free(released);
    free(dir);
    free(end);
    free(start);
    free(ev);
    b->iface->free(b, d);
    b->iface->host_free(b, hdst);
    b->iface->host_free(b, hsrc);
    tsl_backend_free(b);
}

/* Several threads submit at once and other threads wait for and release the
 * events (the Swap Executor issues copies, the Executor waits for them). */
typedef struct submitter {
    tsl_backend *b;
    uint8_t *h, *d; /* this thread's regions, `count` slots of SLOT2 bytes */
    int count;
    uint64_t seed;
    xcopy **ev;
    int fail;
} submitter;

#define SLOT2 512

static void *submit_main(void *arg) {
    submitter *s = arg;
    uint64_t rng = s->seed;
    for (int k = 0; k < s->count; k++) {
        size_t off = (size_t)k * SLOT2;
        size_t n = 1 + th_splitmix64(&rng) % SLOT2;
        tsl_stream dir = (k & 1) ? TSL_STREAM_D2H : TSL_STREAM_H2D;
        /* even slots go up (h -> d), odd ones come down (d -> h) */
        void *dst = dir == TSL_STREAM_H2D ? (void *)(s->d + off) : (void *)(s->h + off);
        const void *src = dir == TSL_STREAM_H2D ? (const void *)(s->h + off) : (const void *)(s->d + off);
        if (xsubmit(s->b, dir, dst, src, n, &s->ev[k]) != TSL_OK) s->fail = 1;
    }
    return NULL;
}

static void *release_main(void *arg) {
    submitter *s = arg;
    for (int k = 0; k < s->count; k++) {
        xwait(s->b, s->ev[k]);
        xrelease(s->b, s->ev[k]);
    }
    return NULL;
}

Test(copy_engine, concurrent_submitters_and_waiters) {
    enum { T = 2, C = 2000 };
    tsl_backend *b = new_backend((size_t)T * C * SLOT2 + MiB);
    uint8_t *h = host_alloc(b, (size_t)T * C * SLOT2);
    uint8_t *d = dev_alloc(b, (size_t)T * C * SLOT2);
    th_fill_bytes(h, (size_t)T * C * SLOT2, 71);
    th_fill_bytes(d, (size_t)T * C * SLOT2, 72);
    /* afterwards the first n bytes of a slot hold its source's bytes on
     * both sides: h0's for up-slots, d0's for down-slots */
    uint8_t *h0 = malloc((size_t)T * C * SLOT2), *d0 = malloc((size_t)T * C * SLOT2);
    cr_assert(h0 && d0);
    memcpy(h0, h, (size_t)T * C * SLOT2);
    memcpy(d0, d, (size_t)T * C * SLOT2);
    submitter s[T];
    pthread_t th[T];
    for (int t = 0; t < T; t++) {
        s[t] = (submitter){.b = b, .h = h + (size_t)t * C * SLOT2, .d = d + (size_t)t * C * SLOT2,
                           .count = C, .seed = 80 + (uint64_t)t, .ev = calloc(C, sizeof(xcopy *))};
        cr_assert_not_null(s[t].ev);
        cr_assert_eq(pthread_create(&th[t], NULL, submit_main, &s[t]), 0);
    }
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < T; t++) cr_assert_eq(pthread_create(&th[t], NULL, release_main, &s[t]), 0);
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < T; t++) {
        cr_assert_eq(s[t].fail, 0);
        uint64_t rng = s[t].seed;
        for (int k = 0; k < C; k++) {
            size_t off = ((size_t)t * C + (size_t)k) * SLOT2;
            size_t n = 1 + th_splitmix64(&rng) % SLOT2;
            const uint8_t *src0 = (k & 1) ? d0 + off : h0 + off;
            cr_assert_eq(first_diff(h + off, src0, n), (size_t)-1, "thread %d slot %d host side", t, k);
            cr_assert_eq(first_diff(d + off, src0, n), (size_t)-1, "thread %d slot %d device side", t, k);
        }
        free(s[t].ev);
    }
    free(d0);
    free(h0);
    b->iface->free(b, d);
    b->iface->host_free(b, h);
    tsl_backend_free(b);
}

/* ---- the arena allocator from two threads ------------------------------------ */

/* Each thread keeps up to LIVE blocks, filled with its own cookie, and
 * checks the cookie before freeing: an overlap with the other thread's
 * blocks would overwrite it. tsl_alloc_check runs under the lock every 256
 * operations. */
typedef struct alloc_worker {
    tsl_backend *b;
    uint64_t seed;
    int ops;
    uint8_t cookie;
    int bad_cookie, bad_check, ooms;
} alloc_worker;

enum { LIVE = 48, MAXB = 8192 };

static int cookie_ok(const uint8_t *p, size_t n, uint8_t c) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != c) return 0;
    return 1;
}

static void *alloc_main(void *arg) {
    alloc_worker *w = arg;
    uint8_t *blk[LIVE] = {0};
    size_t len[LIVE] = {0};
    uint64_t rng = w->seed;
    for (int i = 0; i < w->ops; i++) {
        int j = (int)(th_splitmix64(&rng) % LIVE);
        if (blk[j]) {
            if (!cookie_ok(blk[j], len[j], w->cookie)) w->bad_cookie++;
            w->b->iface->free(w->b, blk[j]);
            blk[j] = NULL;
        } else {
            size_t n = 1 + th_splitmix64(&rng) % MAXB;
            void *p;
            if (w->b->iface->alloc(w->b, n, &p) != TSL_OK) {
                w->ooms++;
                continue;
            }
            memset(p, w->cookie, n);
            blk[j] = p;
            len[j] = n;
        }
        if (i % 256 == 0 && !tsl__cpu_backend_check(w->b)) w->bad_check++;
        if (i % 512 == 0) {
            tsl_alloc_stats st;
            w->b->iface->mem_stats(w->b, &st);
        }
    }
    for (int j = 0; j < LIVE; j++) {
        if (!blk[j]) continue;
        if (!cookie_ok(blk[j], len[j], w->cookie)) w->bad_cookie++;
        w->b->iface->free(w->b, blk[j]);
    }
    return NULL;
}

Test(copy_engine, arena_allocator_from_two_threads) {
    int ops = th_quick() ? 5000 : 40000;
    /* 2 x 48 blocks of <= 8 KiB (+ alignment) always fit in 1 MiB */
    tsl_backend *b = new_backend(MiB);
    alloc_worker a = {.b = b, .seed = 91, .ops = ops, .cookie = 0x5A};
    alloc_worker m = {.b = b, .seed = 92, .ops = ops, .cookie = 0xC3};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, alloc_main, &a), 0);
    alloc_main(&m);
    pthread_join(th, NULL);
    tsl_alloc_stats st;
    b->iface->mem_stats(b, &st);
    printf("allocator, 2 threads x %d ops: %llu allocations, %llu frees\n", ops,
           (unsigned long long)st.n_allocs, (unsigned long long)st.n_frees);
    for (int t = 0; t < 2; t++) {
        alloc_worker *w = t ? &a : &m;
        cr_assert_eq(w->bad_cookie, 0, "thread %d: %d blocks overwritten by the other thread", t, w->bad_cookie);
        cr_assert_eq(w->bad_check, 0, "thread %d: tsl_alloc_check failed %d times: %s", t, w->bad_check,
                     tsl_last_error());
        cr_assert_eq(w->ooms, 0, "thread %d: %d allocations failed", t, w->ooms);
    }
    cr_assert(tsl__cpu_backend_check(b), "%s", tsl_last_error());
    cr_assert_eq(st.load, 0, "load %zu after every block was freed", st.load);
    cr_assert_eq(st.n_live, 0);
    cr_assert_eq(st.n_allocs, st.n_frees, "%llu allocations, %llu frees", (unsigned long long)st.n_allocs,
                 (unsigned long long)st.n_frees);
    cr_assert_gt(st.n_allocs, (uint64_t)ops / 2, "only %llu allocations", (unsigned long long)st.n_allocs);
    cr_assert_eq(st.largest_free, st.capacity);
    tsl_backend_free(b);
}
