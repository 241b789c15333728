/*
 * bench_plan.c - the TENSILE policy's targets (issue 3): per model at batch
 * 16 on a device profile, the vanilla peak (liveness-freeing), the planned
 * peak, MSR, the simulated EOR and the planning time; then all the models
 * planned together as one multi-job instance.
 *
 *   bench_plan [--profile a6000] [--batch 16] [--reps 5] [--optimizer adam|sgd]
 *
 * The planner is single-threaded; planning times are wall-clock medians
 * over --reps runs with the min..max spread. Every plan is verified before
 * it is simulated. The paper's TENSILE MSR (Table III) is printed beside
 * each model for comparison.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "tensile/ops.h"
#include "tensile/models.h"
#include "tensile/policy.h"
#include "tensile/session.h"
#include "tensile/sched_json.h"
#include "tensile/sim.h"
#include "tensile/verify.h"
#include "bench_workload.h"

static const struct { const char *model; double paper_msr; } MODELS[] = {
    {"vgg16", 0.267}, {"inception3", 0.436}, {"inception4", 0.515},
    {"resnet50", 0.426}, {"densenet121", 0.514},
};
#define N_MODELS 5

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static tsl_workload *workload(const char *m, int batch, int adam, const tsl_device_profile *dev) {
    return bench_workload("bench_plan", m, batch, 0, adam, dev);
}

/* Plans `n` jobs `reps` times; keeps the last plans; returns the median ms
 * and writes the spread. */
static double plan_reps(tsl_workload **w, int n, const tsl_device_profile *dev, int reps,
                        tsl_plan **plans, tsl_plan_report *rep, double *lo, double *hi) {
    double t[64];
    for (int r = 0; r < reps; r++) {
        if (r) {
            for (int i = 0; i < n; i++) tsl_plan_free(plans[i]);
            tsl_plan_report_free(rep);
        }
        tsl_plan_opts po = tsl_plan_opts_default();
        double t0 = now_ms();
        if (tsl_plan_jobs(w, n, dev, &po, plans, rep) != TSL_OK) {
            fprintf(stderr, "bench_plan: planning failed: %s\n", tsl_last_error());
            exit(1);
        }
        t[r] = now_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    *lo = t[0];
    *hi = t[reps - 1];
    return t[reps / 2];
}

static void verify(tsl_workload **w, tsl_plan **p, int n, const tsl_device_profile *dev);

/* Every zoo model at the batch: the competitive ratio (layout extent /
 * peak load) of the empty plan's layout and of TENSILE's, beside the
 * online best-fit allocator's ratio for the vanilla executor (the dry
 * run's footprint / load). */
static void layout_table(int batch, int adam, const tsl_device_profile *dev) {
    printf("Layouts (SmartPool's offline placement) of every zoo model, batch %d: competitive "
           "ratio = footprint / peak load; SmartPool's Table I: 1.0005 - 1.016\n\n", batch);
    printf("| model | blocks (tensile) | vanilla load | vanilla footprint | ratio | online best fit (vanilla dry run) | tensile load | tensile footprint | ratio | layout ms |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    double worst = 0;
    for (const char *const *mn = tsl_model_names(); *mn; mn++) {
        const char *name = *mn;
        tsl_workload *w = workload(name, batch, adam, dev);
        tsl_plan *p[1];
        tsl_plan_report rep;
        tsl_plan_opts po = tsl_plan_opts_default();
        if (tsl_plan_jobs(&w, 1, dev, &po, p, &rep) != TSL_OK) {
            fprintf(stderr, "bench_plan: %s: %s\n", name, tsl_last_error());
            exit(1);
        }
        verify(&w, p, 1, dev);
        double t0 = now_ms();
        tsl_plan_layout(w, p[0], dev, 0);
        double lay_ms = now_ms() - t0;
        double rv = (double)rep.vanilla_footprint[0] / (double)rep.vanilla_peak[0];
        double rt = (double)rep.planned_footprint[0] / (double)rep.planned_peak[0];
        if (rv > worst) worst = rv;
        if (rt > worst) worst = rt;
        tsl_model_cfg cfg = tsl_model_cfg_default(name);
        cfg.batch = batch;
        tsl_graph *g = tsl_graph_new(name);
        tsl_tid loss;
        tsl_optimizer_cfg o = adam ? tsl_adam_default(1e-3f) : tsl_sgd_default(0.01f);
        tsl_mem_report dr = {0};
        if (tsl_model_build(g, name, &cfg, &loss) != TSL_OK || tsl_graph_backward(g, loss) != TSL_OK ||
            tsl_graph_optimizer(g, &o) != TSL_OK || tsl_graph_finalize(g) != TSL_OK ||
            tsl_graph_dry_run(g, (size_t)1 << 50, &dr) != TSL_OK) {
            fprintf(stderr, "bench_plan: %s: %s\n", name, tsl_last_error());
            exit(1);
        }
        tsl_graph_free(g);
        printf("| %s | %d | %.2f MiB | %.2f MiB | %.4f | %.4f | %.2f MiB | %.2f MiB | %.4f | %.1f |\n",
               name, p[0]->n_blocks, rep.vanilla_peak[0] / 1048576.0,
               rep.vanilla_footprint[0] / 1048576.0, rv,
               (double)dr.peak_footprint / (double)dr.peak_load, rep.planned_peak[0] / 1048576.0,
               rep.planned_footprint[0] / 1048576.0, rt, lay_ms);
        fflush(stdout);
        tsl_plan_free(p[0]);
        tsl_plan_report_free(&rep);
        tsl_workload_free(w);
    }
    printf("\nworst competitive ratio: %.4f (target <= 1.02)\n", worst);
}

static void verify(tsl_workload **w, tsl_plan **p, int n, const tsl_device_profile *dev) {
    tsl_violation *v = NULL;
    int nv = 0;
    if (tsl_plan_verify_jobs((const tsl_workload *const *)w, (const tsl_plan *const *)p, n, dev, &v, &nv) != TSL_OK || nv) {
        fprintf(stderr, "bench_plan: plan fails verification (%d): %s\n", nv, nv ? v[0].what : tsl_last_error());
        exit(1);
    }
    free(v);
}

int main(int argc, char **argv) {
    const char *profile = "a6000";
    int batch = 16, reps = 5, adam = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--profile") && i + 1 < argc) profile = argv[++i];
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--optimizer") && i + 1 < argc) adam = strcmp(argv[++i], "sgd") != 0;
        else {
            fprintf(stderr, "usage: %s [--profile P] [--batch B] [--reps R] [--optimizer adam|sgd]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || reps > 64 || batch < 1) {
        fprintf(stderr, "bench_plan: bad arguments\n");
        return 2;
    }
    tsl_device_profile dev;
    if (tsl_profile_load(profile, &dev) != TSL_OK) {
        fprintf(stderr, "bench_plan: %s\n", tsl_last_error());
        return 2;
    }
    struct utsname u;
    uname(&u);
    printf("machine: %s %s, %ld online CPUs; planner single-threaded; gcc %s\n", u.sysname, u.machine,
           sysconf(_SC_NPROCESSORS_ONLN), __VERSION__);
    printf("profile %s: %.1f TFLOP/s, %.0f GB/s memory, h2d %.1f GB/s, d2h %.1f GB/s, %s; batch %d, %s; "
           "latencies from the cost model; %d planning runs per row\n\n",
           dev.name, dev.flops * 1e-12, dev.mem_bw * 1e-9, dev.h2d_bw * 1e-9, dev.d2h_bw * 1e-9,
           dev.duplex ? "duplex" : "one shared channel", batch, adam ? "Adam" : "SGD momentum", reps);
    layout_table(batch, adam, &dev);
    printf("\nTENSILE on the paper's five models: MSR on the footprint (each plan's layout's "
           "extent, what the device must hold), MSR on the peak load beside it\n\n");
    printf("| model | vanilla footprint | planned footprint | MSR | MSR load | MSR / MSR load | paper MSR (TENSILE) | simulated EOR | swaps | recomputes | planning ms (median, min..max) |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    tsl_workload *all[N_MODELS];
    for (int m = 0; m < N_MODELS; m++) {
        tsl_workload *w = workload(MODELS[m].model, batch, adam, &dev);
        all[m] = w;
        tsl_plan *p[1];
        tsl_plan_report rep;
        double lo, hi, med = plan_reps(&w, 1, &dev, reps, p, &rep, &lo, &hi);
        verify(&w, p, 1, &dev);
        tsl_sim_opts so = {.iterations = 3};
        tsl_sim_result sr;
        if (tsl_simulate(&w, p, 1, &dev, &so, &sr) != TSL_OK) {
            fprintf(stderr, "bench_plan: simulation failed: %s\n", tsl_last_error());
            return 1;
        }
        double msr_load = 1.0 - (double)rep.planned_peak[0] / (double)rep.vanilla_peak[0];
        double msr = 1.0 - (double)rep.planned_footprint[0] / (double)rep.vanilla_footprint[0];
        printf("| %s | %.1f MiB | %.1f MiB | %.3f | %.3f | %.3f | %.3f | %.3f | %d | %d | %.2f (%.2f..%.2f) |\n",
               MODELS[m].model, rep.vanilla_footprint[0] / 1048576.0,
               rep.planned_footprint[0] / 1048576.0, msr, msr_load,
               msr_load > 0 ? msr / msr_load : 0.0, MODELS[m].paper_msr,
               sr.job[0].iter_us / sr.job[0].vanilla_iter_us, rep.swaps[0], rep.recomputes[0],
               med, lo, hi);
        fflush(stdout);
        tsl_plan_free(p[0]);
        tsl_plan_report_free(&rep);
        tsl_sim_result_free(&sr);
    }
    tsl_plan *p[N_MODELS];
    tsl_plan_report rep;
    double lo, hi, med = plan_reps(all, N_MODELS, &dev, reps, p, &rep, &lo, &hi);
    verify(all, p, N_MODELS, &dev);
    tsl_sim_opts so = {.iterations = 3};
    tsl_sim_result sr, vr;
    tsl_plan *none[N_MODELS];
    for (int i = 0; i < N_MODELS; i++) none[i] = tsl_plan_new(all[i]->job);
    if (tsl_simulate(all, p, N_MODELS, &dev, &so, &sr) != TSL_OK ||
        tsl_simulate(all, none, N_MODELS, &dev, &so, &vr) != TSL_OK) {
        fprintf(stderr, "bench_plan: simulation failed: %s\n", tsl_last_error());
        return 1;
    }
    size_t sv = 0, sp = 0, svf = 0, spf = 0;
    double st = 0, vt = 0;
    for (int i = 0; i < N_MODELS; i++) {
        sv += rep.vanilla_peak[i];
        sp += rep.planned_peak[i];
        svf += rep.vanilla_footprint[i];
        spf += rep.planned_footprint[i];
        st += sr.job[i].iter_us;
        vt += vr.job[i].iter_us; /* vanilla jobs sharing the same device */
    }
    printf("\nall five models as five jobs on one device: sum of vanilla footprints %.1f MiB, sum of "
           "planned footprints %.1f MiB (MSR %.3f; on the peak loads %.1f -> %.1f MiB, MSR load "
           "%.3f), simulated together peak load %.1f MiB, EOR %.3f; planning %.2f ms (%.2f..%.2f), "
           "%d planner iterations\n",
           svf / 1048576.0, spf / 1048576.0, 1.0 - (double)spf / (double)svf, sv / 1048576.0,
           sp / 1048576.0, 1.0 - (double)sp / (double)sv, sr.global_peak / 1048576.0, st / vt,
           med, lo, hi, rep.iterations);
    for (int i = 0; i < N_MODELS; i++) {
        tsl_plan_free(p[i]);
        tsl_plan_free(none[i]);
        tsl_workload_free(all[i]);
    }
    tsl_plan_report_free(&rep);
    tsl_sim_result_free(&sr);
    tsl_sim_result_free(&vr);
    return 0;
}
