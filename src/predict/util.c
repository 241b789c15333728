/*
 * util.c - the device's utilisation by other work, for the CPU backend:
 * the busy fraction of the machine's CPUs from /proc/stat over a short
 * window (the paper's "GPU usage" feature, IV-A). A job about to start
 * measures it before predicting its latencies; profiling measures it
 * beside its own background load, since other processes share the
 * machine too.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tensile/predict.h"

/* Busy and total ticks of all CPUs since boot; 0 if /proc/stat cannot be
 * read. */
static int cpu_ticks(uint64_t *busy, uint64_t *total) {
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return 0;
    unsigned long long v[10] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
    fclose(f);
    if (n < 4) return 0;
    /* user nice system idle iowait irq softirq steal (guest counted in user) */
    uint64_t idle = v[3] + (n > 4 ? v[4] : 0), all = 0;
    for (int i = 0; i < n && i < 8; i++) all += v[i];
    *busy = all - idle;
    *total = all;
    return 1;
}

double tsl_cpu_utilisation(int window_ms) {
    if (window_ms < 1) window_ms = 1;
    if (window_ms > 10000) window_ms = 10000;
    uint64_t b0, t0, b1, t1;
    if (!cpu_ticks(&b0, &t0)) return -1;
    struct timespec ts = {window_ms / 1000, (long)(window_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
    if (!cpu_ticks(&b1, &t1) || t1 <= t0) return -1;
    double u = (double)(b1 - b0) / (double)(t1 - t0);
    return u < 0 ? 0 : u > 1 ? 1 : u;
}
