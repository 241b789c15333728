/*
 * bench_layout_drift.c - the competitive ratio (footprint / peak load) of
 * TENSILE's plans as the latencies they are planned from vary, on the
 * shapes `tensile run` trains (bench/budget_runs.py).
 *
 *   bench_layout_drift [--trials 30] [--gbps 2] [--seed 1]
 *
 * bench_plan measures the ratio on the cost model's latencies of a GPU
 * profile. A run plans from the kernel times it measures, which differ
 * from any model, and from run to run. Here each trial plans the model on
 * the rough CPU profile (copies at --gbps each way) with every op's
 * latency scaled by its own random factor in [0.2, 5] (trial 0: the cost
 * model's), lays the plan out, and records footprint / peak load. The
 * lower bound the ratio is measured against, the peak load, is not always
 * reachable: residencies that cross the iteration's boundary (a persistent
 * tensor swapped in late and kept into the next iteration) make conflicts
 * that wrap around, and blocks that pairwise overlap with no moment in
 * common each need their own place (docs/RESULTS.md, issue 9).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_machine.h"
#include "bench_workload.h"
#include "tensile/models.h"
#include "tensile/ops.h"
#include "tensile/policy.h"
#include "tensile/profile.h"
#include "tensile/session.h"

static const struct { const char *model; int batch, image; } CASES[] = {
    {"cnn", 64, 0}, {"resnet18", 24, 40}, {"vgg11", 16, 32}, {"densenet121", 7, 48},
};

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* xorshift64*: a uniform double in [0, 1). */
static double uniform(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

static tsl_workload *workload(const char *m, int batch, int image, const tsl_device_profile *dev) {
    return bench_workload("bench_layout_drift", m, batch, image, 0, dev);
}

int main(int argc, char **argv) {
    int trials = 30;
    double gbps = 2.0;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--trials") && i + 1 < argc) trials = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gbps") && i + 1 < argc) gbps = atof(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_layout_drift [--trials N] [--gbps G] [--seed S]\n");
            return 2;
        }
    }
    if (trials < 1 || trials > 10000 || gbps <= 0 || !seed) {
        fprintf(stderr, "bench_layout_drift: --trials in [1, 10000], --gbps > 0, --seed > 0\n");
        return 2;
    }
    bench_print_machine("single-threaded planner");
    tsl_device_profile dev = tsl_profile_cpu_rough();
    dev.h2d_bw = dev.d2h_bw = gbps * 1e9;
    dev.mem_bytes = (size_t)1 << 40; /* no budget: the plan as tensile run makes it */
    printf("profile: rough CPU, copies %g GB/s each way, SGD; %d trials per model, latencies "
           "scaled per op by U[0.2, 5] (trial 0: unscaled), seed %llu\n\n",
           gbps, trials, (unsigned long long)seed);
    printf("| model | batch, px | ratio, cost model | ratio median (min..max) | trials > 1.02 | "
           "worst: peak load -> footprint |\n|---|---|---|---|---|---|\n");
    double *r = malloc(sizeof *r * (size_t)trials);
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        tsl_workload *w = workload(CASES[c].model, CASES[c].batch, CASES[c].image, &dev);
        double *us = malloc(sizeof *us * (size_t)w->n_ops);
        uint64_t s = seed;
        int over = 0;
        size_t worst_peak = 0, worst_fp = 0;
        for (int k = 0; k < trials; k++) {
            for (int32_t i = 0; i < w->n_ops; i++)
                us[i] = (w->ops[i].end_us - w->ops[i].start_us) * (k ? 0.2 + 4.8 * uniform(&s) : 1.0);
            tsl_workload *wk = tsl_workload_copy(w, us);
            tsl_plan *p[1];
            tsl_plan_report rep;
            tsl_plan_opts po = tsl_plan_opts_default();
            if (!wk || tsl_plan_jobs(&wk, 1, &dev, &po, p, &rep) != TSL_OK) {
                fprintf(stderr, "bench_layout_drift: %s: %s\n", CASES[c].model, tsl_last_error());
                return 1;
            }
            r[k] = (double)p[0]->predicted_footprint / (double)p[0]->predicted_peak;
            over += r[k] > 1.02;
            if (!worst_peak || r[k] > (double)worst_fp / (double)worst_peak) {
                worst_peak = p[0]->predicted_peak;
                worst_fp = p[0]->predicted_footprint;
            }
            tsl_plan_free(p[0]);
            tsl_plan_report_free(&rep);
            tsl_workload_free(wk);
            fprintf(stderr, "\r%s: %d/%d", CASES[c].model, k + 1, trials);
        }
        fprintf(stderr, "\n");
        double r0 = r[0];
        qsort(r, (size_t)trials, sizeof *r, cmp);
        printf("| %s | %d, %d | %.4f | %.4f (%.4f..%.4f) | %d of %d | %.2f -> %.2f MiB |\n",
               CASES[c].model, CASES[c].batch, CASES[c].image ? CASES[c].image : 28, r0,
               r[trials / 2], r[0], r[trials - 1], over, trials, (double)worst_peak / 1048576.0,
               (double)worst_fp / 1048576.0);
        fflush(stdout);
        free(us);
        tsl_workload_free(w);
    }
    free(r);
    return 0;
}
