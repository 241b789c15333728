/*
 * bench_phases.c - plans under random phases, simulated (issue 10,
 * "Asynchronous jobs"): jobs that start at random times run the plans made
 * for them on one device, three ways:
 *   (a) the paper's plans - every job's copies booked on the device's
 *       channels on one time axis, every iteration starting at 0 - on FIFO
 *       channels (one transfer per direction at a time);
 *   (b) the same plans on fair channels (the jobs copying share the
 *       bandwidth);
 *   (c) plans on equal channel shares (each of the n jobs planned on 1/n of
 *       the bandwidth, verified on it) on fair channels: the rule of
 *       docs/SCHEDULING.md, which holds whatever the phases.
 * For the five paper models at batch 16 on each profile: 2, 3 and 4
 * identical jobs of each model, and the five models together; each with
 * --seeds random phase draws (tsl_sim_random_offsets: each job's start
 * uniform in [0, its period)).
 *
 *   bench_phases [--profile P]... [--seeds 10] [--iterations 4]
 *                [--compute shared|per-job] [--models m1,m2,...] [--jobs 2,3,4]
 *
 * Reported per row: the sum of the jobs' vanilla footprints, the sum of the
 * planned footprints of the paper's plans (a, b) and of the share plans
 * (c) with their MSR (1 - planned / vanilla); per way, EOR - a job's last
 * simulated iteration over the same job's when the same jobs run vanilla on
 * the same device with the same phases - as the median and min..max over
 * all jobs and phase draws; and the stalls (compute waiting for copies,
 * all jobs, per iteration) as the median and max over the draws, with the
 * number of draws that stalled at all. Every plan is verified first.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_machine.h"
#include "bench_workload.h"
#include "tensile/policy.h"
#include "tensile/sched_json.h"
#include "tensile/sim.h"
#include "tensile/verify.h"

static const char *const PAPER_MODELS[] = {"vgg16", "inception3", "inception4", "resnet50",
                                           "densenet121"};
#define N_PAPER 5
#define MAX_JOBS 8
#define MAX_SEEDS 100

enum { WAY_A = 0, WAY_B, WAY_C, N_WAYS };
static const char *const WAY_NAME[N_WAYS] = {"(a) shared axis, FIFO", "(b) shared axis, fair",
                                             "(c) shares, fair"};

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v[0..n) and returns its median. */
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what) {
    fprintf(stderr, "bench_phases: %s: %s\n", what, tsl_last_error());
    exit(1);
}

/* Plans the jobs (share NULL: on the shared time axis) and verifies every
 * plan: together on the device, or each on its share. Returns the sum of
 * the planned footprints; *vanilla gets the vanilla footprints' sum. */
static size_t plan(tsl_workload **w, int n, const tsl_device_profile *dev, const double *share,
                   tsl_plan **p, size_t *vanilla) {
    tsl_plan_opts po = tsl_plan_opts_default();
    po.channel_share = share;
    tsl_plan_report rep;
    tsl_status st = tsl_plan_jobs(w, n, dev, &po, p, &rep);
    if (st != TSL_OK && st != TSL_ERR_BUDGET) die("planning");
    size_t fp = 0;
    *vanilla = 0;
    for (int j = 0; j < n; j++) {
        fp += rep.planned_footprint[j];
        *vanilla += rep.vanilla_footprint[j];
    }
    tsl_plan_report_free(&rep);
    for (int j = 0; j < (share ? n : 1); j++) {
        tsl_violation *v = NULL;
        int nv = 0;
        tsl_device_profile dj = share ? tsl_profile_channel_share(dev, share[j]) : *dev;
        st = share ? tsl_plan_verify(w[j], p[j], &dj, &v, &nv)
                   : tsl_plan_verify_jobs((const tsl_workload *const *)w,
                                          (const tsl_plan *const *)p, n, dev, &v, &nv);
        if (st != TSL_OK || nv) {
            fprintf(stderr, "bench_phases: a plan fails verification: %s\n",
                    nv ? v[0].what : tsl_last_error());
            exit(1);
        }
        free(v);
    }
    return fp;
}

static tsl_sim_result simulate(tsl_workload **w, tsl_plan **p, int n, const tsl_device_profile *dev,
                               const tsl_sim_opts *o) {
    tsl_sim_result r;
    if (tsl_simulate(w, p, n, dev, o, &r) != TSL_OK) die("simulation");
    return r;
}

/* One row: the jobs w[0..n) (label `label`) under `seeds` phase draws. */
static void row(const char *profile, const char *label, tsl_workload **w, int n,
                const tsl_device_profile *dev, int seeds, int iterations, tsl_sim_compute cm) {
    tsl_plan *axis[MAX_JOBS], *shares[MAX_JOBS], *empty[MAX_JOBS];
    double share[MAX_JOBS];
    for (int j = 0; j < n; j++) share[j] = 1.0 / n;
    size_t vanilla, fp_axis = plan(w, n, dev, NULL, axis, &vanilla);
    size_t fp_share = plan(w, n, dev, share, shares, &vanilla);
    for (int j = 0; j < n; j++)
        if (!(empty[j] = tsl_plan_new(w[j]->job))) die("plans");
    static double eor[N_WAYS][MAX_JOBS * MAX_SEEDS], stall[N_WAYS][MAX_SEEDS];
    int stalled[N_WAYS] = {0, 0, 0};
    for (int s = 0; s < seeds; s++) {
        double off[MAX_JOBS];
        tsl_sim_random_offsets(w, n, (uint64_t)s + 1, off);
        tsl_sim_opts o = {.iterations = iterations, .offset_us = off, .compute = cm};
        tsl_sim_result rv = simulate(w, empty, n, dev, &o);
        for (int k = 0; k < N_WAYS; k++) {
            o.channels = k == WAY_A ? TSL_SIM_CHANNELS_FIFO : TSL_SIM_CHANNELS_FAIR;
            o.channel_share = k == WAY_C ? share : NULL;
            tsl_sim_result r = simulate(w, k == WAY_C ? shares : axis, n, dev, &o);
            double st = 0;
            for (int j = 0; j < n; j++) {
                eor[k][s * n + j] = r.job[j].iter_us / rv.job[j].iter_us;
                st += r.job[j].stall_total_us;
            }
            stall[k][s] = st / iterations;
            stalled[k] += st > 0;
            tsl_sim_result_free(&r);
        }
        tsl_sim_result_free(&rv);
    }
    printf("| %s | %s | %.0f | %.0f (%.3f) | %.0f (%.3f) |", profile, label, vanilla / 1048576.0,
           fp_axis / 1048576.0, 1.0 - (double)fp_axis / (double)vanilla, fp_share / 1048576.0,
           1.0 - (double)fp_share / (double)vanilla);
    for (int k = 0; k < N_WAYS; k++) {
        int m = seeds * n;
        double med = median(eor[k], m);
        printf(" %.3f (%.3f..%.3f) |", med, eor[k][0], eor[k][m - 1]);
    }
    for (int k = 0; k < N_WAYS; k++) {
        double med = median(stall[k], seeds);
        printf(" %.2f, max %.2f (%d/%d) |", med / 1e3, stall[k][seeds - 1] / 1e3, stalled[k],
               seeds);
    }
    printf("\n");
    fflush(stdout);
    for (int j = 0; j < n; j++) {
        tsl_plan_free(axis[j]);
        tsl_plan_free(shares[j]);
        tsl_plan_free(empty[j]);
    }
}

/* Splits a comma list into at most max items (pointers into buf). */
static int split(char *buf, const char **item, int max) {
    int n = 0;
    for (char *t = strtok(buf, ","); t && n < max; t = strtok(NULL, ",")) item[n++] = t;
    return n;
}

int main(int argc, char **argv) {
    const char *profiles[4] = {"a6000", "h100-pcie"};
    int n_prof = 0, seeds = 10, iterations = 4, n_models = N_PAPER, n_counts = 3;
    int counts[8] = {2, 3, 4};
    const char *models[N_PAPER];
    for (int m = 0; m < N_PAPER; m++) models[m] = PAPER_MODELS[m];
    tsl_sim_compute cm = TSL_SIM_COMPUTE_SHARED;
    char mbuf[256], cbuf[64];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) goto usage;
        if (!strcmp(a, "--profile") && n_prof < 4) profiles[n_prof++] = v;
        else if (!strcmp(a, "--seeds")) seeds = atoi(v);
        else if (!strcmp(a, "--iterations")) iterations = atoi(v);
        else if (!strcmp(a, "--compute") && (!strcmp(v, "shared") || !strcmp(v, "per-job")))
            cm = strcmp(v, "shared") ? TSL_SIM_COMPUTE_PER_JOB : TSL_SIM_COMPUTE_SHARED;
        else if (!strcmp(a, "--models")) {
            snprintf(mbuf, sizeof mbuf, "%s", v);
            n_models = split(mbuf, models, N_PAPER);
        } else if (!strcmp(a, "--jobs")) {
            snprintf(cbuf, sizeof cbuf, "%s", v);
            const char *c[8];
            n_counts = split(cbuf, c, 8);
            for (int k = 0; k < n_counts; k++) counts[k] = atoi(c[k]);
        } else goto usage;
        i++;
    }
    if (n_prof == 0) n_prof = 2;
    if (seeds < 1 || seeds > MAX_SEEDS || iterations < 2 || n_models < 1) goto usage;
    for (int k = 0; k < n_counts; k++)
        if (counts[k] < 1 || counts[k] > MAX_JOBS) goto usage;

    bench_print_machine("the simulator is single-threaded");
    printf("command:");
    for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
    printf("\n%d phase draws per row (seeds 1..%d), %d simulated iterations (stalls over all of "
           "them), %s; batch 16, Adam, latencies from each profile's cost model; TENSILE with "
           "its defaults, budget: the profile's memory\n\n",
           seeds, seeds, iterations,
           cm == TSL_SIM_COMPUTE_SHARED ? "one compute resource for all the jobs"
                                        : "a compute resource per job (only the channels shared)");
    printf("| profile | jobs | vanilla footprints MiB | (a, b) planned MiB (MSR) | (c) planned MiB "
           "(MSR) | EOR %s | EOR %s | EOR %s | stall ms/iteration %s | %s | %s |\n",
           WAY_NAME[0], WAY_NAME[1], WAY_NAME[2], WAY_NAME[0], WAY_NAME[1], WAY_NAME[2]);
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int pi = 0; pi < n_prof; pi++) {
        tsl_device_profile dev;
        if (tsl_profile_load(profiles[pi], &dev) != TSL_OK) die(profiles[pi]);
        tsl_workload *w[N_PAPER];
        for (int m = 0; m < n_models; m++)
            w[m] = bench_workload("bench_phases", models[m], 16, 0, 1, &dev);
        for (int m = 0; m < n_models; m++)
            for (int k = 0; k < n_counts; k++) {
                tsl_workload *jobs[MAX_JOBS];
                for (int j = 0; j < counts[k]; j++) jobs[j] = w[m];
                char label[64];
                snprintf(label, sizeof label, "%d x %s", counts[k], models[m]);
                row(profiles[pi], label, jobs, counts[k], &dev, seeds, iterations, cm);
            }
        if (n_models > 1) {
            char label[64];
            snprintf(label, sizeof label, "the %d models, one each", n_models);
            row(profiles[pi], label, w, n_models, &dev, seeds, iterations, cm);
        }
        for (int m = 0; m < n_models; m++) tsl_workload_free(w[m]);
    }
    printf("\nEOR: median (min..max) over the jobs and draws; stalls: all jobs' per iteration, "
           "median and max over the draws (draws that stalled / draws)\n");
    return 0;
usage:
    fprintf(stderr, "usage: bench_phases [--profile P]... [--seeds 1..%d] [--iterations N>=2] "
            "[--compute shared|per-job] [--models m1,m2,...] [--jobs 2,3,4]\n", MAX_SEEDS);
    return 2;
}
