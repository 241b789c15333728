/*
 * profile.c - the arithmetic of a device profile (tensile/profile.h) that
 * the planner, the verifier and the simulator share. Reading and writing
 * profile files is the io layer's (io/profile_json.c).
 */
#include "core/assert.h"
#include "tensile/profile.h"

/* Transfer time of `bytes` in one direction, µs (docs/SCHEDULING.md):
 * copy_latency_us + bytes / bw * 1e6. */
double tsl_copy_us(const tsl_device_profile *p, size_t bytes, int to_device) {
    TSL_ASSERT(p);
    double bw = to_device ? p->h2d_bw : p->d2h_bw;
    TSL_ASSERT(bw > 0);
    return p->copy_latency_us + (double)bytes / bw * 1e6;
}

