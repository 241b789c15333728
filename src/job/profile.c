/*
 * profile.c - the device profile a job plans with on this machine
 * (tsl_job_default_profile, tensile/job.h): a named one, else the
 * calibrated cpu-local, else the one rough CPU profile. A cpu-local.json
 * that exists but cannot be read as a profile is an error, not a reason to
 * guess.
 */
#include <stdio.h>
#include <string.h>

#include "tensile/job.h"
#include "tensile/sched_json.h"

tsl_status tsl_job_default_profile(const char *name, double pcie_gbps, size_t capacity,
                                   tsl_device_profile *out) {
    if (name) {
        tsl_status st = tsl_profile_load(name, out);
        if (st != TSL_OK) return st;
    } else {
        tsl_status st = tsl_profile_load("cpu-local", out);
        /* there, but corrupt or unreadable (a FIFO, no permission): say
         * so, never guess; only a profile found in no folder means "never
         * calibrated" (tsl_profile_load's message: "... not found (searched") */
        if (st == TSL_ERR_FORMAT || (st != TSL_OK && !strstr(tsl_last_error(), "not found (searched")))
            return st;
        if (st != TSL_OK) {
            tsl_clear_error(); /* never calibrated: rough figures */
            *out = tsl_profile_cpu_rough();
        }
    }
    if (pcie_gbps > 0) out->h2d_bw = out->d2h_bw = pcie_gbps * 1e9;
    out->mem_bytes = capacity;
    return TSL_OK;
}
