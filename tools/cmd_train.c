/*
 * cmd_train.c - `tensile train`: train a model of the zoo on Fashion-MNIST
 * or synthetic data with the vanilla executor inside a device-memory budget.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "feed.h"
#include "progress.h"
#include "tensile/data.h"
#include "tensile/session.h"

static const char help[] =
    "usage: tensile train [--model M] [--dataset fashion-mnist|synthetic] [--epochs N]\n"
    "                     [--batch B] [--device-memory SIZE] [--optimizer sgd|adam]\n"
    "                     [--lr X] [--threads T] [--seed S] [--json] [more options]\n"
    "\n"
    "Trains a model and reports, per epoch, the mean loss, the test accuracy,\n"
    "the iteration time and the peak load and footprint of device memory.\n"
    "\n"
    "  --model M            a model of the zoo (default cnn; see tensile info --help)\n"
    "  --dataset D          fashion-mnist (default; Debian's dataset-fashion-mnist)\n"
    "                       or synthetic (ImageNet-shaped, generated from the seed)\n"
    "  --epochs N           passes over the training set (default 1)\n"
    "  --batch B            batch size (default 64)\n"
    "  --device-memory SIZE device arena capacity, e.g. 4GiB, 300MiB (default 4GiB);\n"
    "                       a step that does not fit stops with an out-of-memory error\n"
    "  --optimizer O        sgd (momentum 0.9, the default) or adam\n"
    "  --optimizer-step S   backward (default): each parameter's update right after\n"
    "                       its gradient is complete; end: every update after the\n"
    "                       backward pass (the seed papers' optimizer phase)\n"
    "  --lr X               learning rate (default 0.02 for sgd, 0.001 for adam)\n"
    "  --weight-decay X     L2 weight decay (default 0)\n"
    "  --threads T          CPU threads (default: all online CPUs)\n"
    "  --seed S             initialisation, shuffling and dropout seed (default 42)\n"
    "  --image-size S       synthetic data only: image size (default: the model's)\n"
    "  --train-examples N   use only the first N training examples (at most 2^31)\n"
    "  --test-examples N    use only the first N test examples (at most 2^31)\n"
    "  --kernels K          fast (oneDNN and own loops, default) or ref (plain loops)\n"
    "  --quiet              no progress display\n"
    "  --json               print a JSON summary as the last line of stdout\n"
    "\n"
    "Exit status: 0 done, 1 error (a write error on stdout included), 2 bad\n"
    "arguments, 3 out of device memory, 130 / 143 interrupted by SIGINT / SIGTERM.\n";

typedef struct train_opts {
    const char *model;
    int dataset; /* 0 fashion-mnist, 1 synthetic */
    int epochs, batch, threads, json, quiet, image, kernels, optimizer;
    int step; /* --optimizer-step: a tsl_optimizer_step */
    size_t device_memory;
    double lr, wd;
    uint64_t seed;
    int64_t train_n, test_n;
} train_opts;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void parse(int argc, char **argv, train_opts *t) {
    tsl_args a = {.cmd = "train", .argc = argc, .argv = argv};
    static const char *const datasets[] = {"fashion-mnist", "synthetic", NULL};
    static const char *const optims[] = {"sgd", "adam", NULL};
    static const char *const kernels[] = {"fast", "ref", NULL};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    *t = (train_opts){.model = "cnn", .epochs = 1, .batch = 64, .threads = cpus > 0 ? (int)cpus : 1,
                      .device_memory = (size_t)4 << 30, .lr = -1, .seed = 42};
    for (const char *o; (o = args_next(&a));) {
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(help, stdout);
            exit(0);
        } else if (!strcmp(o, "--model")) t->model = args_value(&a, o);
        else if (!strcmp(o, "--dataset")) t->dataset = args_choice(&a, o, datasets);
        else if (!strcmp(o, "--epochs")) t->epochs = (int)args_int(&a, o, 1, 100000);
        else if (!strcmp(o, "--batch")) t->batch = (int)args_int(&a, o, 1, 1 << 20);
        else if (!strcmp(o, "--device-memory")) t->device_memory = args_size(&a, o);
        else if (!strcmp(o, "--optimizer")) t->optimizer = args_choice(&a, o, optims);
        else if (!strcmp(o, "--optimizer-step")) t->step = args_choice(&a, o, tool_step_names);
        else if (!strcmp(o, "--lr")) t->lr = args_double(&a, o, 1e-12, 1e3);
        else if (!strcmp(o, "--weight-decay")) t->wd = args_double(&a, o, 0, 1);
        else if (!strcmp(o, "--threads")) t->threads = (int)args_int(&a, o, 1, 1024);
        else if (!strcmp(o, "--seed")) t->seed = (uint64_t)args_int(&a, o, 0, INT64_MAX);
        else if (!strcmp(o, "--image-size")) t->image = (int)args_int(&a, o, 1, 4096);
        else if (!strcmp(o, "--train-examples")) t->train_n = args_int(&a, o, 1, TOOL_MAX_EXAMPLES);
        else if (!strcmp(o, "--test-examples")) t->test_n = args_int(&a, o, 1, TOOL_MAX_EXAMPLES);
        else if (!strcmp(o, "--kernels")) t->kernels = args_choice(&a, o, kernels);
        else if (!strcmp(o, "--quiet")) t->quiet = 1;
        else if (!strcmp(o, "--json")) t->json = 1;
        else args_die(&a, "unknown option '%s'", o);
    }
    if (t->lr < 0) t->lr = t->optimizer ? 1e-3 : 0.02;
    if (t->image && t->dataset == 0)
        args_die(&a, "--image-size applies to --dataset synthetic only (Fashion-MNIST is 28x28)");
}

int cmd_train(int argc, char **argv) {
    train_opts t;
    parse(argc, argv, &t);
    if (!tool_check_model("train", "--model", t.model)) return 2;
    tsl_model_cfg cfg = tsl_model_cfg_default(t.model);
    cfg.batch = t.batch;
    cfg.seed = t.seed;
    if (t.dataset == 0) {
        cfg.in_channels = 1;
        cfg.image_size = 28;
        cfg.n_classes = 10;
    } else if (t.image) {
        cfg.image_size = t.image;
    }
    tsl_dataset train = {0}, test = {0};
    int rc = 0;
    if (!tool_load_data("train", t.dataset, &cfg, t.train_n, t.test_n, t.seed, t.batch, &train,
                        &test, &rc))
        return rc;
    tsl_optimizer_cfg opt = t.optimizer ? tsl_adam_default((float)t.lr) : tsl_sgd_default((float)t.lr);
    opt.step = (tsl_optimizer_step)t.step;
    opt.weight_decay = (float)t.wd;
    tsl_graph *g = tool_build_training_graph("train", t.model, &cfg, &opt, &rc);
    if (!g) {
        tsl_dataset_free(&train);
        tsl_dataset_free(&test);
        return rc;
    }
    tsl_session_opts so = tsl_session_opts_default();
    so.device_memory = t.device_memory;
    so.nthreads = t.threads;
    so.kernels = t.kernels ? TSL_KERNELS_REF : TSL_KERNELS_FAST;
    so.seed = t.seed;
    tsl_session *s;
    tsl_status sst = tsl_session_new(g, &so, &s);
    if (sst != TSL_OK) {
        fprintf(stderr, "tensile train: %s\n", tsl_last_error());
        tsl_graph_free(g);
        tsl_dataset_free(&train);
        tsl_dataset_free(&test);
        return sst == TSL_ERR_OOM ? 3 : 1;
    }
    size_t img = (size_t)cfg.in_channels * cfg.image_size * cfg.image_size;
    float *x = malloc(sizeof *x * img * (size_t)t.batch);
    size_t lbl = 1; /* labels per example (per-pixel models: H*W) */
    if (!strcmp(t.model, "unet")) lbl = (size_t)cfg.image_size * cfg.image_size;
    int32_t *y = malloc(sizeof *y * (size_t)t.batch * lbl);
    tsl_batcher *b = tsl_batcher_new(&train, t.batch, t.seed, 1);
    if (!b) fprintf(stderr, "tensile train: the training set of %lld examples: %s\n",
                    (long long)train.n, tsl_last_error());
    int64_t per_epoch = b ? tsl_batcher_batches_per_epoch(b) : 0;
    double *times = b ? malloc(sizeof *times * (size_t)(per_epoch > 0 ? per_epoch : 1)) : NULL;
    if (b && (!x || !y || !times))
        fprintf(stderr, "tensile train: out of host memory for a batch of %d (%zu floats) or the "
                "times of %lld iterations\n", t.batch, img * (size_t)t.batch, (long long)per_epoch);
    if (!b || !x || !y || !times) rc = 1;
    size_t peak_load = 0, peak_fp = 0;
    double acc = 0, last_loss = NAN, iter_ms = 0;
    int64_t n_eval = 0;
    double t_start = progress_now_s();
    char b1[32], b2[32];
    if (rc == 0 && (!t.json || !t.quiet))
        fprintf(stderr, "training %s on %s: %lld examples, batch %d, %s lr %g, %d threads, device %s\n",
                t.model, t.dataset ? "synthetic" : "fashion-mnist", (long long)train.n, t.batch,
                t.optimizer ? "adam" : "sgd", t.lr, t.threads, fmt_bytes(t.device_memory, b1, sizeof b1));
    for (int e = 1; e <= t.epochs && rc == 0; e++) {
        tsl_progress p;
        char label[32];
        snprintf(label, sizeof label, "epoch %d/%d", e, t.epochs);
        progress_begin(&p, label, per_epoch, t.quiet);
        double loss_sum = 0;
        int64_t it = 0;
        while (tsl_batcher_next(b, x, y)) {
            tsl_step_stats st;
            tool_spread_labels(y, t.batch, lbl);
            if (tsl_session_step(s, x, y, &st) != TSL_OK) {
                progress_end(&p);
                fprintf(stderr, "tensile train: %s\n", tsl_last_error());
                rc = strstr(tsl_last_error(), "out of memory") ? 3 : 1;
                break;
            }
            if (!isfinite(st.loss)) {
                progress_end(&p);
                fprintf(stderr, "tensile train: the loss diverged (%g) at epoch %d step %lld; try a smaller --lr\n",
                        st.loss, e, (long long)it + 1);
                rc = 1;
                break;
            }
            loss_sum += st.loss;
            times[it++] = st.ms;
            if (st.peak_load > peak_load) peak_load = st.peak_load;
            if (st.peak_footprint > peak_fp) peak_fp = st.peak_footprint;
            char note[64];
            snprintf(note, sizeof note, "loss %.4f", loss_sum / (double)it);
            progress_update(&p, it, note);
        }
        progress_end(&p);
        if (rc) break;
        last_loss = it ? loss_sum / (double)it : NAN;
        qsort(times, (size_t)it, sizeof *times, cmp_double);
        iter_ms = it ? times[it / 2] : 0;
        if (!tool_evaluate(s, &test, t.batch, img, lbl, x, y, &acc, &n_eval)) {
            fprintf(stderr, "tensile train: evaluation failed: %s\n", tsl_last_error());
            rc = strstr(tsl_last_error(), "out of memory") ? 3 : 1;
            break;
        }
        fprintf(t.json ? stderr : stdout,
                "epoch %d/%d: loss %.4f, test accuracy %.2f%% (%lld %s), iteration %.2f ms "
                "(median), peak load %s, footprint %s\n",
                e, t.epochs, last_loss, 100 * acc, (long long)n_eval, lbl > 1 ? "pixels" : "images", iter_ms,
                fmt_bytes(peak_load, b1, sizeof b1), fmt_bytes(peak_fp, b2, sizeof b2));
    }
    double wall = progress_now_s() - t_start;
    if (rc == 0 && t.json) {
        json_t *o = json_object();
        json_object_set_new(o, "model", json_string(t.model));
        json_object_set_new(o, "dataset", json_string(t.dataset ? "synthetic" : "fashion-mnist"));
        json_object_set_new(o, "epochs", json_integer(t.epochs));
        json_object_set_new(o, "batch", json_integer(t.batch));
        json_object_set_new(o, "threads", json_integer(t.threads));
        json_object_set_new(o, "train_loss", json_real(last_loss));
        json_object_set_new(o, "test_accuracy", json_real(acc));
        json_object_set_new(o, "test_examples", json_integer(n_eval));
        json_object_set_new(o, "peak_load_bytes", json_integer((json_int_t)peak_load));
        json_object_set_new(o, "footprint_bytes", json_integer((json_int_t)peak_fp));
        json_object_set_new(o, "device_memory_bytes", json_integer((json_int_t)t.device_memory));
        json_object_set_new(o, "iter_ms", json_real(iter_ms));
        json_object_set_new(o, "wall_s", json_real(wall));
        char ck[32];
        snprintf(ck, sizeof ck, "%016llx", (unsigned long long)tsl_session_param_checksum(s));
        json_object_set_new(o, "param_checksum", json_string(ck));
        char *str = json_dumps(o, JSON_COMPACT);
        puts(str);
        free(str);
        json_decref(o);
    } else if (rc == 0) {
        printf("done in %.1f s; parameter checksum %016llx\n", wall,
               (unsigned long long)tsl_session_param_checksum(s));
    }
    tsl_batcher_free(b);
    free(times);
    free(x);
    free(y);
    tsl_session_free(s);
    tsl_graph_free(g);
    tsl_dataset_free(&train);
    tsl_dataset_free(&test);
    return rc;
}
