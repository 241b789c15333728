/*
 * profile.c - the arithmetic of a device profile (tensile/profile.h) that
 * the planner, the verifier and the simulator share. Reading and writing
 * profile files is the io layer's (io/profile_json.c).
 */
#include "core/assert.h"
#include <stdio.h>
#include <string.h>

#include "tensile/profile.h"

/* Transfer time of `bytes` in one direction, µs (docs/SCHEDULING.md):
 * copy_latency_us + bytes / bw * 1e6. */
double tsl_copy_us(const tsl_device_profile *p, size_t bytes, int to_device) {
    double b = tsl_copy_bytes_us(p, bytes, to_device); /* asserts p */
    return p->copy_latency_us + b;
}

double tsl_copy_bytes_us(const tsl_device_profile *p, size_t bytes, int to_device) {
    TSL_ASSERT(p);
    double bw = to_device ? p->h2d_bw : p->d2h_bw;
    TSL_ASSERT(bw > 0);
    return (double)bytes / bw * 1e6;
}

tsl_device_profile tsl_profile_channel_share(const tsl_device_profile *p, double share) {
    TSL_ASSERT(p && share > 0 && share <= 1);
    tsl_device_profile q = *p;
    q.h2d_bw *= share;
    q.d2h_bw *= share;
    if (share < 1) {
        char name[sizeof q.name];
        snprintf(name, sizeof name, "%s", p->name);
        int n = snprintf(q.name, sizeof q.name, "%s (a %.3g share of the channels)", name, share);
        if (n < 0 || (size_t)n >= sizeof q.name) snprintf(q.name, sizeof q.name, "%s", name);
    }
    return q;
}

tsl_device_profile tsl_profile_cpu_rough(void) {
    tsl_device_profile p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "cpu (rough figures; run tensile calibrate)");
    p.flops = 5e10;
    p.mem_bw = 1e10;
    p.h2d_bw = p.d2h_bw = 5e9;
    p.duplex = 1;
    p.launch_us = 5;
    p.copy_latency_us = 5;
    return p;
}
