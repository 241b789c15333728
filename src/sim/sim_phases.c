/* sim_phases.c - random phase offsets between jobs (tensile/sim.h). */
#include "core/assert.h"
#include "core/rand.h"
#include "tensile/sim.h"

/* offset_us[j] = u_j * period_j, u_j uniform in [0, 1) keyed by (seed, j). */
void tsl_sim_random_offsets(tsl_workload *const *w, int n_jobs, uint64_t seed,
                            double *offset_us) {
    TSL_ASSERT(w && offset_us && n_jobs >= 0);
    uint64_t base = tsl__mix64(seed);
    for (int j = 0; j < n_jobs; j++) {
        double u = tsl__u01(base + (uint64_t)j);
        offset_us[j] = u * w[j]->period_us;
    }
}
