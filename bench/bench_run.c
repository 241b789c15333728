/*
 * bench_run.c - the runtime's targets (issue 4, section 8) on the CPU
 * backend, through `tensile run`:
 *
 *   1. resnet18, vgg11 and densenet121 at 32x32, batch 32 (synthetic data),
 *      TENSILE's plan at the planner's defaults, run for real with the copy
 *      channels throttled to a GPU-like ratio: the measured MSR against the
 *      simulator's MSR for the same plan (target: within 0.02) and the EOR
 *      (target: at most 1.10);
 *   2. cnn on Fashion-MNIST under a budget of 60 % of vanilla's peak load:
 *      vanilla refused, TENSILE reaching vanilla's test accuracy with
 *      bitwise identical weights.
 *
 *   bench_run [--tensile PATH] [--models resnet18,vgg11,densenet121]
 *             [--batch 32] [--image 32] [--reps 3] [--iters 12] [--threads T]
 *             [--gbps G] [--epochs 1] [--no-fashion]
 *
 * The GPU-like ratio: an RTX A6000 computes profiles/a6000.json's `flops`
 * (60 % of its FP32 peak) while PCIe moves `h2d_bw` bytes per second, i.e.
 * about 970 FLOP per byte transferred. This machine's FLOP rate is measured
 * by tsl_calibrate_cpu (the figure `tensile calibrate` writes), and each
 * copy channel is throttled to flops_cpu / (flops_a6000 / h2d_a6000): the
 * CPU then waits for a copy as long, relative to its compute, as the A6000
 * does. --gbps overrides it.
 *
 * Kernels run on one thread by default (--threads): a GPU's copy engines
 * are hardware of their own, while on the CPU backend the copy channels and
 * the Swap Executor are threads; with every core busy in the kernels they
 * would preempt the kernels' threads and the time measured would be the
 * CPU's contention, not the schedule's. The FLOP rate is calibrated at the
 * same thread count.
 *
 * Each repetition is one `tensile run`: vanilla and TENSILE side by side in
 * one process on the same batches (after vanilla's first iterations, which
 * give the kernel times, the two runs alternate iteration by iteration, so
 * that machine noise hits both alike). Tables give the median over
 * repetitions and the min..max spread. Machine, thread count and library
 * versions are printed first. Exit status: 0 every target met, 3 a target
 * missed, 1 an error, 2 bad arguments.
 */
#include <jansson.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "bench_machine.h"
#include "tensile/calibrate.h"
#include "tensile/policy_tensile.h"
#include "tensile/sched_json.h"

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorted in place) and its min..max. */
static double med(double *v, int n, double *lo, double *hi) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    *lo = v[0];
    *hi = v[n - 1];
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Runs `cmd`, returns the JSON object of its last stdout line (NULL on
 * failure, reported) and its exit status in *status. */
static json_t *run_json(const char *cmd, int *status) {
    FILE *p = popen(cmd, "r");
    if (!p) {
        perror("bench_run: popen");
        return NULL;
    }
    static char line[1 << 16], last[1 << 16];
    last[0] = 0;
    while (fgets(line, sizeof line, p))
        if (line[0] == '{') snprintf(last, sizeof last, "%s", line);
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    json_error_t err;
    json_t *o = last[0] ? json_loads(last, 0, &err) : NULL;
    if (!o) fprintf(stderr, "bench_run: no JSON from: %s (exit %d)\n", cmd, *status);
    return o;
}

static double jnum(json_t *o, const char *path) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *cur = o;
    for (char *save = NULL, *tok = strtok_r(buf, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save))
        cur = json_object_get(cur, tok);
    if (!cur) return NAN;
    if (json_is_true(cur)) return 1;
    if (json_is_false(cur)) return 0;
    return json_number_value(cur);
}

/* The tensile command next to this executable. */
static void default_tensile(char *out, size_t len) {
    char self[3072];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(out, len, "tensile");
        return;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    snprintf(out, len, "%s/tensile", self);
}

#define MAXR 32

int main(int argc, char **argv) {
    char tensile[4096], models[256] = "resnet18,vgg11,densenet121";
    default_tensile(tensile, sizeof tensile);
    int batch = 32, image = 32, reps = 3, iters = 12, epochs = 1, fashion = 1;
    int threads = 1; /* the other core(s) play the copy engines (see the head comment) */
    double gbps = 0, slack = tsl_tensile_opts_default().swap_in_slack;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tensile") && i + 1 < argc)
            snprintf(tensile, sizeof tensile, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--models") && i + 1 < argc)
            snprintf(models, sizeof models, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--image") && i + 1 < argc) image = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gbps") && i + 1 < argc) gbps = atof(argv[++i]);
        else if (!strcmp(argv[i], "--slack") && i + 1 < argc) slack = atof(argv[++i]);
        else if (!strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-fashion")) fashion = 0;
        else {
            fprintf(stderr,
                    "usage: %s [--tensile PATH] [--models a,b] [--batch B] [--image S] [--reps R]\n"
                    "          [--iters N] [--threads T] [--gbps G] [--slack F] [--epochs E]\n"
                    "          [--no-fashion]\n",
                    argv[0]);
            return 2;
        }
    }
    if (batch < 1 || image < 1 || reps < 1 || reps > MAXR || iters < 2 || threads < 1 || epochs < 1 ||
        gbps < 0 || !(slack >= 0) || slack > 10) {
        fprintf(stderr, "bench_run: bad arguments (reps 1..%d, iters >= 2, slack 0..10)\n", MAXR);
        return 2;
    }
    if (access(tensile, X_OK) != 0) {
        fprintf(stderr, "bench_run: cannot run '%s' (build the tensile target, or give --tensile)\n",
                tensile);
        return 1;
    }
    {
        char extra[64];
        snprintf(extra, sizeof extra, "%d kernel threads", threads);
        bench_print_machine(extra);
    }

    /* this machine's FLOP rate and the GPU-like channel rate */
    tsl_calib_opts co = tsl_calib_opts_default();
    co.nthreads = threads;
    tsl_calib_result cr;
    tsl_device_profile a6000;
    if (tsl_calibrate_cpu(&co, &cr) != TSL_OK || tsl_profile_load("a6000", &a6000) != TSL_OK) {
        fprintf(stderr, "bench_run: %s\n", tsl_last_error());
        return 1;
    }
    double ratio = a6000.flops / a6000.h2d_bw; /* FLOP per byte over PCIe */
    if (gbps == 0) gbps = cr.profile.flops / ratio / 1e9;
    tsl_device_profile prof = cr.profile;
    prof.h2d_bw = prof.d2h_bw = gbps * 1e9;
    char profile_path[] = "/tmp/tsl_bench_run_XXXXXX.json";
    int fd = mkstemps(profile_path, 5);
    if (fd < 0 ||
        tsl_profile_save_source(profile_path, &prof, cr.source, "bench_run: channels throttled") != TSL_OK) {
        fprintf(stderr, "bench_run: cannot write the profile: %s\n", tsl_last_error());
        return 1;
    }
    close(fd);
    printf("CPU: %.1f GFLOP/s measured (conv %.1f, sgemm %.1f), memcpy host<->arena %.1f GB/s\n",
           cr.profile.flops / 1e9, cr.conv_flops / 1e9, cr.gemm_flops / 1e9, cr.h2d_bw / 1e9);
    printf("GPU-like ratio: A6000 %.0f FLOP per PCIe byte (%.2f TFLOP/s planned rate, %.0f GB/s);\n"
           "each copy channel throttled to %.3f GB/s (CPU GFLOP/s / %.0f)\n\n",
           ratio, a6000.flops / 1e12, a6000.h2d_bw / 1e9, gbps, ratio);

    /* 1. MSR against the simulator, EOR */
    printf("### Measured against predicted, %dx%d, batch %d, %d iterations per run, %d runs, "
           "swap-in slack %g\n\n", image, image, batch, iters, reps, slack);
    printf("MSR on the footprint (what the device holds), measured against the plan's "
           "predicted footprint; MSR on the peak load beside it, measured and simulated\n\n");
    printf("| model | vanilla footprint | tensile footprint | MSR measured | MSR planned | diff | "
           "MSR load measured / simulated | "
           "iteration vanilla / tensile | EOR measured | EOR simulated | swap-outs/iter | "
           "stall ms/iter | replans | identical | targets |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int all_ok = 1, failed = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", models);
    for (char *save = NULL, *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        double msr[MAXR], smsr[MAXR], eor[MAXR], seor[MAXR], stall[MAXR], vms[MAXR], tms[MAXR];
        double lmsr[MAXR], lsmsr[MAXR];
        double vpk = 0, tpk = 0, swaps = 0, replans = 0;
        int identical = 1, n = 0;
        for (int r = 0; r < reps; r++) {
            char cmd[8192];
            snprintf(cmd, sizeof cmd,
                     "'%s' run --model %s --batch %d --dataset synthetic --image-size %d --policy tensile "
                     "--pcie-gbps %.6f --swap-in-slack %g --iterations %d --threads %d --profile '%s' "
                     "--json --quiet",
                     tensile, m, batch, image, gbps, slack, iters, threads, profile_path);
            int status;
            json_t *o = run_json(cmd, &status);
            if (!o || (status != 0 && status != 4)) {
                fprintf(stderr, "bench_run: %s failed (exit %d)\n", m, status);
                json_decref(o);
                failed = 1;
                continue;
            }
            msr[n] = jnum(o, "msr");
            smsr[n] = jnum(o, "predicted_msr");
            lmsr[n] = jnum(o, "msr_load");
            lsmsr[n] = jnum(o, "simulated_msr");
            eor[n] = jnum(o, "eor");
            seor[n] = jnum(o, "predicted_eor");
            stall[n] = jnum(o, "scheduled.stall_ms") / iters;
            vms[n] = jnum(o, "vanilla.iter_ms");
            tms[n] = jnum(o, "scheduled.iter_ms");
            vpk = jnum(o, "vanilla.footprint_bytes");
            tpk = jnum(o, "scheduled.footprint_bytes");
            swaps = jnum(o, "scheduled.swaps") / iters;
            replans += jnum(o, "scheduled.replans");
            identical &= jnum(o, "identical") == 1;
            n++;
            json_decref(o);
        }
        if (n == 0) continue;
        double lo[7], hi[7];
        double mm = med(msr, n, &lo[0], &hi[0]), ms = med(smsr, n, &lo[1], &hi[1]);
        double me = med(eor, n, &lo[2], &hi[2]), se = med(seor, n, &lo[3], &hi[3]);
        double st = med(stall, n, &lo[4], &hi[4]);
        double vm = med(vms, n, &lo[5], &hi[5]), tm = med(tms, n, &lo[6], &hi[6]);
        double l1, l2, lm = med(lmsr, n, &l1, &l2), ls = med(lsmsr, n, &l1, &l2);
        int ok = fabs(mm - ms) <= 0.02 && me <= 1.10 && identical;
        all_ok &= ok;
        printf("| %s | %.1f MiB | %.1f MiB | %.3f (%.3f..%.3f) | %.3f | %.3f | %.3f / %.3f | "
               "%.1f / %.1f ms | "
               "%.3f (%.3f..%.3f) | %.3f | %.1f | %.1f (%.1f..%.1f) | %.1f | %s | %s |\n",
               m, vpk / 1048576.0, tpk / 1048576.0, mm, lo[0], hi[0], ms, fabs(mm - ms), lm, ls,
               vm, tm, me,
               lo[2], hi[2], se, swaps, st, lo[4], hi[4], replans / n, identical ? "yes" : "NO",
               ok ? "met" : "missed");
        fflush(stdout);
    }

    /* 2. cnn on Fashion-MNIST in 60 % of vanilla's peak */
    if (fashion) {
        printf("\n### cnn on Fashion-MNIST, batch 64, %d epoch%s, device memory 60%% of vanilla's peak load\n\n",
               epochs, epochs == 1 ? "" : "s");
        char cmd[8192];
        snprintf(cmd, sizeof cmd,
                 "'%s' run --model cnn --dataset fashion-mnist --batch 64 --epochs %d --device-memory 60%% "
                 "--policy tensile --pcie-gbps %.6f --threads %d --profile '%s' --eval --json --quiet",
                 tensile, epochs, gbps, threads, profile_path);
        int status;
        json_t *o = run_json(cmd, &status);
        if (!o) {
            failed = 1;
        } else {
            double va = jnum(o, "vanilla.test_accuracy"), ta = jnum(o, "scheduled.test_accuracy");
            int ident = jnum(o, "identical") == 1, refused = jnum(o, "vanilla.refused") == 1;
            printf("| budget | vanilla | vanilla peak | tensile peak | accuracy vanilla / tensile | "
                   "iteration vanilla / tensile | evictions | passive | identical |\n|---|---|---|---|---|---|---|---|---|\n");
            printf("| %.1f MiB | %s | %.1f MiB | %.1f MiB | %.2f %% / %.2f %% | %.1f / %.1f ms | %.0f | %.0f | %s |\n",
                   jnum(o, "device_memory_bytes") / 1048576.0, refused ? "refused (out of memory)" : "fits",
                   jnum(o, "vanilla.peak_load_bytes") / 1048576.0, jnum(o, "scheduled.peak_load_bytes") / 1048576.0,
                   100 * va, 100 * ta, jnum(o, "vanilla.iter_ms"), jnum(o, "scheduled.iter_ms"),
                   jnum(o, "scheduled.evictions"), jnum(o, "scheduled.passive_swaps"), ident ? "yes" : "NO");
            int ok = refused && ident && ta >= va && status == 0;
            printf("\ntarget (vanilla refused, same accuracy, identical weights): %s\n", ok ? "met" : "missed");
            all_ok &= ok;
            json_decref(o);
        }
    }
    unlink(profile_path);
    return failed ? 1 : all_ok ? 0 : 3;
}
