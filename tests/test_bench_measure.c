/*
 * test_bench_measure.c - `tensile bench`'s measurement of plans made from
 * other latencies than the ones they meet (tools/bench_measure.c,
 * bm_measure_from: Table I's cold-start plan, made from predicted
 * latencies and simulated on measured ones).
 *
 * A regression: CI's predictor, far from the measured latencies, gave
 * resnet18 a cold-start plan whose simulation failed ("swap_out of
 * 'fc.weight.adam_m' ... the tensor is not on the device"): the plans were
 * simulated on the measured workload, so their events' planned times were
 * anchored on the measured timeline, where a release could come before the
 * swap-out it waits for. Here plans are made from each op's latency scaled
 * by a factor in [0.05, 4] (seeded) and every measurement must succeed,
 * no faster than vanilla.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_measure.h"
#include "tensile/job.h"
#include "tensile/workload.h"

/* A factor in [0.05, 4] from the LCG state *s. */
static double factor(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return 0.05 + 3.95 * (double)(*s >> 11) / (double)(1ULL << 53);
}

Test(bench_measure, plans_from_other_latencies_simulate_on_the_measured_ones) {
    tsl_device_profile dev;
    cr_assert_eq(tsl_job_default_profile(NULL, 10.0, (size_t)1 << 40, &dev), TSL_OK);
    const char *models[] = {"resnet18", "mlp"};
    int failed = 0, runs = 0;
    for (int m = 0; m < 2; m++) {
        bm_spec s = {.batch = 4, .image = 32};
        snprintf(s.model, sizeof s.model, "%s", models[m]);
        bm_jobs J = {0};
        cr_assert_eq(bm_jobs_build(&J, &s, 1, &dev), 0, "%s", models[m]);
        const tsl_workload *w = J.w[0];
        double *us = malloc((size_t)w->n_ops * sizeof *us);
        cr_assert_not_null(us);
        for (uint64_t seed = 1; seed <= 12; seed++) {
            uint64_t st = seed;
            for (int32_t i = 0; i < w->n_ops; i++)
                us[i] = (w->ops[i].end_us - w->ops[i].start_us) * factor(&st);
            tsl_workload *pw = tsl_workload_copy(w, us);
            cr_assert_not_null(pw);
            bm_jobs P = {.n = 1, .w = &pw, .dev = &dev, .offset_us = J.offset_us};
            bm_result r;
            bm_state state = bm_measure_from(&J, &P, "tensile", 0, NULL, &r);
            runs++;
            if (!bm_has_numbers(&r)) {
                failed++;
                cr_log_error("%s seed %llu: %s", models[m], (unsigned long long)seed,
                             bm_state_text(&r));
            } else {
                cr_expect_eq(state, BM_OK, "%s seed %llu: %s", models[m],
                             (unsigned long long)seed, bm_state_text(&r));
                /* the plan meets the measured latencies: never faster than vanilla */
                cr_expect_geq(r.eor, 1.0 - 1e-9, "%s seed %llu: EOR %.6f", models[m],
                              (unsigned long long)seed, r.eor);
            }
            tsl_workload_free(pw);
        }
        free(us);
        bm_jobs_free(&J);
    }
    cr_expect_eq(failed, 0, "%d of %d measurements failed", failed, runs);
}
