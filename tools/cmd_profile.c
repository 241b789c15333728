/*
 * cmd_profile.c - `tensile profile`: cold start's measurements and
 * predictor (tensile/predict.h, docs/PREDICTOR.md). Profiles the op types
 * under background load, trains the per-op-type predictor, reports its
 * held-out accuracy beside the cost model and the cheaper kinds, and times
 * the prediction of a whole resnet50 workload.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "args.h"
#include "commands.h"
#include "progress.h"
#include "tensile/job.h"
#include "tensile/predict.h"

static const char help[] =
    "usage: tensile profile [--out DIR] [--minutes N] [--samples FILE] [--small]\n"
    "                       [--repeats R] [--max-load K] [--threads T] [--epochs E]\n"
    "                       [--hidden H] [--layers L] [--seed S] [--profile P]\n"
    "                       [--quiet] [--json]\n"
    "\n"
    "Cold start (paper IV-A): runs each op type, forward and backward, over a\n"
    "grid of shapes and parameters under levels of concurrent background load,\n"
    "writes the samples to DIR/op-samples.tss, trains one latency model per op\n"
    "type (an MLP trained by Tensile's own graph, autodiff and Adam; a\n"
    "log-linear fit; a roofline with a fitted efficiency; the most accurate on\n"
    "held-out samples is kept) and writes DIR/predictor.tsp, which `tensile run\n"
    "--cold-start` and the daemon's jobs plan their first iteration with. Prints\n"
    "each op type's held-out MAPE and R2 beside the analytic cost model's, and\n"
    "the time to predict a whole resnet50 workload. Files: docs/PREDICTOR.md.\n"
    "\n"
    "  --out DIR        folder of the two files (default profiles)\n"
    "  --minutes N      profiling time budget (default 2; e.g. 0.1)\n"
    "  --samples FILE   train from these samples instead of profiling\n"
    "  --small          a tiny grid of small shapes (tests)\n"
    "  --repeats R      timed runs per probe, the median kept (default 3)\n"
    "  --max-load K     background load levels 0..K busy threads (default: CPUs - 1)\n"
    "  --threads T      kernel threads of the probes (default 1, as a job's)\n"
    "  --epochs E       MLP training epochs (default 300)\n"
    "  --hidden H       MLP units per hidden layer (default 32)\n"
    "  --layers L       MLP hidden layers (default 3: four layers with the output)\n"
    "  --seed S         grid order, split and initial weights (default 1)\n"
    "  --profile P      device profile of the roofline (default: as tensile run)\n"
    "  --quiet          no progress bar\n"
    "  --json           one JSON object on stdout: files, samples, accuracy\n"
    "\n"
    "Exit status: 0 done, 1 error, 2 bad arguments (an output that cannot be\n"
    "written included, checked before profiling).\n";

typedef struct prog_ctx {
    tsl_progress bar;
} prog_ctx;

static void on_progress(double done, const char *what, void *user) {
    prog_ctx *c = user;
    progress_update(&c->bar, (int64_t)(done * 1000), what);
}

static void print_table(const tsl_pred_report *r) {
    printf("%-20s %6s %6s  %-17s %-17s %-17s %-17s  %s\n", "op type", "train", "test",
           "cost model", "roofline-fit", "linear", "mlp", "kept");
    printf("%-20s %6s %6s  %-17s %-17s %-17s %-17s\n", "", "", "", "MAPE%    R2", "MAPE%    R2",
           "MAPE%    R2", "MAPE%    R2");
    double sum[TSL_PRED_KINDS + 1] = {0};
    for (int i = 0; i < r->n_types; i++) {
        const tsl_pred_accuracy *a = &r->acc[i];
        printf("%-20s %6d %6d ", tsl_op_type_name(a->type), a->n_train, a->n_test);
        const int order[4] = {TSL_PRED_KINDS, TSL_PRED_ROOFLINE, TSL_PRED_LINEAR, TSL_PRED_MLP};
        for (int k = 0; k < 4; k++) {
            printf(" %8.1f %7.3f", a->mape[order[k]], a->r2[order[k]]);
            sum[order[k]] += a->mape[order[k]];
        }
        printf("  %s\n", a->cost_model_kept ? "cost model" : tsl_pred_kind_name(a->chosen));
    }
    if (r->n_types)
        printf("%-20s %13s  %8.1f %7s  %8.1f %7s  %8.1f %7s  %8.1f\n", "mean MAPE", "",
               sum[TSL_PRED_KINDS] / r->n_types, "", sum[0] / r->n_types, "", sum[1] / r->n_types,
               "", sum[2] / r->n_types);
}

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Times tsl_predictor_latencies over resnet50's training graph (batch 16,
 * 224x224): the mean of 20 runs in ms of wall time, *cpu_ms of this
 * thread's CPU time (the machine may be shared); *n_ops its ops. -1 if the
 * graph cannot be built. */
static double time_resnet50(const tsl_predictor *p, const tsl_device_profile *dev, int *n_ops,
                            double *cpu_ms) {
    tsl_model_cfg cfg = tsl_model_cfg_default("resnet50");
    cfg.batch = 16;
    tsl_optimizer_cfg opt = tsl_adam_default(1e-3f);
    tsl_graph *g = tool_build_training_graph("profile", "resnet50", &cfg, &opt, NULL);
    if (!g) return -1;
    *n_ops = tsl_graph_n_ops(g);
    double *us = malloc(sizeof *us * (size_t)*n_ops);
    double ms = -1;
    if (us) {
        double t0 = progress_now_s(), c0 = thread_cpu_s();
        for (int r = 0; r < 20; r++) tsl_predictor_latencies(p, g, 0.0, dev, us);
        ms = (progress_now_s() - t0) * 1e3 / 20;
        *cpu_ms = (thread_cpu_s() - c0) * 1e3 / 20;
    }
    free(us);
    tsl_graph_free(g);
    return ms;
}

int cmd_profile(int argc, char **argv) {
    tsl_args a = {.cmd = "profile", .argc = argc, .argv = argv};
    const char *dir = "profiles", *samples = NULL, *profile = NULL;
    int json = 0, quiet = 0;
    tsl_oprof_opts po = tsl_oprof_opts_default();
    tsl_pred_train_opts to = tsl_pred_train_opts_default();
    for (const char *opt; (opt = args_next(&a));) {
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (!strcmp(opt, "--out")) dir = args_value(&a, opt);
        else if (!strcmp(opt, "--minutes")) po.minutes = args_double(&a, opt, 1e-4, 1440);
        else if (!strcmp(opt, "--samples")) samples = args_value(&a, opt);
        else if (!strcmp(opt, "--small")) po.small = 1;
        else if (!strcmp(opt, "--repeats")) po.repeats = (int)args_int(&a, opt, 1, 1000);
        else if (!strcmp(opt, "--max-load")) po.max_load = (int)args_int(&a, opt, 0, 64);
        else if (!strcmp(opt, "--threads")) po.nthreads = (int)args_int(&a, opt, 1, 1024);
        else if (!strcmp(opt, "--epochs")) to.epochs = (int)args_int(&a, opt, 0, 1000000);
        else if (!strcmp(opt, "--hidden")) to.hidden = (int)args_int(&a, opt, 1, 256);
        else if (!strcmp(opt, "--layers")) to.layers = (int)args_int(&a, opt, 1, 4);
        else if (!strcmp(opt, "--seed")) to.seed = po.seed = (uint64_t)args_int(&a, opt, 0, INT64_MAX);
        else if (!strcmp(opt, "--profile")) profile = args_value(&a, opt);
        else if (!strcmp(opt, "--quiet")) quiet = 1;
        else if (!strcmp(opt, "--json")) json = 1;
        else args_die(&a, "unknown option '%s'", opt);
    }
    if (!dir[0]) args_die(&a, "--out: empty folder name");
    if (strlen(dir) > 3000) args_die(&a, "--out: folder name too long");
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "tensile profile: --out: cannot create folder %s: %s\n", dir, strerror(errno));
        return 2;
    }
    char spath[3100], ppath[3100];
    snprintf(spath, sizeof spath, "%s/op-samples.tss", dir);
    snprintf(ppath, sizeof ppath, "%s/predictor.tsp", dir);
    if ((!samples && !tool_check_output("profile", "--out", spath)) ||
        !tool_check_output("profile", "--out", ppath))
        return 2;
    tsl_device_profile dev;
    if (tsl_job_default_profile(profile, 0, 0, &dev) != TSL_OK) {
        fprintf(stderr, "tensile profile: --profile: %s\n", tsl_last_error());
        return 2;
    }
    to.dev = &dev;
    tsl_op_sample *s = NULL;
    size_t n = 0;
    double prof_s = 0;
    if (samples) {
        if (tsl_samples_load(samples, &s, &n) != TSL_OK) {
            fprintf(stderr, "tensile profile: --samples: %s\n", tsl_last_error());
            return 1;
        }
    } else {
        prog_ctx pc;
        progress_begin(&pc.bar, "profile", 1000, quiet);
        po.progress = on_progress;
        po.user = &pc;
        double t0 = progress_now_s();
        tsl_status st = tsl_profile_ops(&po, &s, &n);
        prof_s = progress_now_s() - t0;
        progress_end(&pc.bar);
        if (st != TSL_OK) {
            fprintf(stderr, "tensile profile: %s\n", tsl_last_error());
            return 1;
        }
        char src[256];
        snprintf(src, sizeof src,
                 "tensile profile: %s grid, %.2f minutes, %d repeats, load 0..%d threads, %d kernel "
                 "thread(s), seed %llu",
                 po.small ? "small" : "full", po.minutes, po.repeats, po.max_load, po.nthreads,
                 (unsigned long long)po.seed);
        if (tsl_samples_save(spath, s, n, src) != TSL_OK) {
            fprintf(stderr, "tensile profile: %s\n", tsl_last_error());
            free(s);
            return 1;
        }
    }
    tsl_predictor *p;
    tsl_pred_report rep;
    double t0 = progress_now_s();
    if (tsl_predictor_train(s, n, &to, &p, &rep) != TSL_OK) {
        fprintf(stderr, "tensile profile: %s\n", tsl_last_error());
        free(s);
        return 1;
    }
    double train_s = progress_now_s() - t0;
    free(s);
    if (tsl_predictor_save(p, ppath) != TSL_OK) {
        fprintf(stderr, "tensile profile: %s\n", tsl_last_error());
        tsl_predictor_free(p);
        return 1;
    }
    int r50_ops = 0;
    double r50_cpu = 0, r50_ms = time_resnet50(p, &dev, &r50_ops, &r50_cpu);
    if (json) {
        json_t *j = json_object(), *arr = json_array();
        json_object_set_new(j, "samples_file", json_string(samples ? samples : spath));
        json_object_set_new(j, "predictor_file", json_string(ppath));
        json_object_set_new(j, "samples", json_integer((json_int_t)n));
        json_object_set_new(j, "profile_s", json_real(prof_s));
        json_object_set_new(j, "train_s", json_real(train_s));
        json_object_set_new(j, "resnet50_ops", json_integer(r50_ops));
        json_object_set_new(j, "resnet50_predict_ms", json_real(r50_ms));
        json_object_set_new(j, "resnet50_predict_cpu_ms", json_real(r50_cpu));
        for (int i = 0; i < rep.n_types; i++) {
            const tsl_pred_accuracy *ac = &rep.acc[i];
            json_t *o = json_object();
            json_object_set_new(o, "op", json_string(tsl_op_type_name(ac->type)));
            json_object_set_new(o, "n_train", json_integer(ac->n_train));
            json_object_set_new(o, "n_test", json_integer(ac->n_test));
            json_object_set_new(o, "kept", json_string(ac->cost_model_kept ? "cost_model"
                                                                           : tsl_pred_kind_name(ac->chosen)));
            static const char *const keys[4] = {"roofline", "linear", "mlp", "cost_model"};
            for (int k = 0; k <= TSL_PRED_KINDS; k++) {
                json_t *m = json_object();
                json_object_set_new(m, "mape", isfinite(ac->mape[k]) ? json_real(ac->mape[k]) : json_null());
                json_object_set_new(m, "r2", isfinite(ac->r2[k]) ? json_real(ac->r2[k]) : json_null());
                json_object_set_new(o, keys[k], m);
            }
            json_array_append_new(arr, o);
        }
        json_object_set_new(j, "accuracy", arr);
        char *t = json_dumps(j, JSON_COMPACT);
        if (t) puts(t);
        free(t);
        json_decref(j);
    } else {
        printf("samples    %zu (%s)%s\n", n, samples ? samples : spath,
               samples ? "" : "");
        if (!samples) printf("profiling  %.1f s\n", prof_s);
        printf("training   %.1f s (MLP %dx%d, %d epochs)\n", train_s, to.layers, to.hidden, to.epochs);
        printf("predictor  %s\n\nheld-out accuracy per op type (MAPE of the latency, R2):\n", ppath);
        print_table(&rep);
        if (r50_ms >= 0)
            printf("\npredicting resnet50's workload (%d ops, batch 16): %.3f ms (%.3f ms of CPU "
                   "time)\n",
                   r50_ops, r50_ms, r50_cpu);
    }
    tsl_predictor_free(p);
    return 0;
}
