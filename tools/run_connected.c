/*
 * run_connected.c - `tensile run --connect`: one training job under the
 * daemon (tensile/daemon.h): it registers its workload, waits in the queue
 * if it must, runs in the region the daemon grants it on the shared device
 * with the plans the daemon sends (taken at iteration boundaries, each
 * acknowledged once in force), reports every iteration, and tells the
 * daemon its end with its parameters' checksum. If the daemon goes away,
 * the job keeps its last plan and region and reconnects to the next one
 * (RESUME).
 *
 * The data, the initialisation and the kernels are those of `tensile run`
 * with the same options, so that the final parameters equal a solo run's
 * (`tensile run --policy vanilla`, same --threads) bit for bit.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "feed.h"
#include "tensile/backend_cpu.h"
#include "tensile/daemon.h"
#include "tensile/job.h"
#include "tensile/predict.h"
#include "tensile/shdev.h"

static const char help[] =
    "usage: tensile run --connect [--socket PATH] --model M --batch B [--iterations N | --epochs E]\n"
    "                   [--dataset fashion-mnist|synthetic] [--image-size S] [--max-swap-rate R]\n"
    "                   [--name NAME] [--threads T] [--seed S] [--json] [--quiet]\n"
    "\n"
    "Runs one training job under the daemon (tensile serve): registers its\n"
    "workload, waits in the daemon's queue if the device cannot hold it yet,\n"
    "then trains in the memory region the daemon grants, following the plans\n"
    "it sends, and reports every iteration. Prints its figures and the\n"
    "checksum of its final parameters, which equal a solo run's\n"
    "(tensile run --policy vanilla with the same options and --threads).\n"
    "\n"
    "  --connect            run under the daemon (required for this form)\n"
    "  --socket PATH        the daemon's socket (default: $XDG_RUNTIME_DIR/tensile/\n"
    "                       tensiled.sock, else /tmp/tensile-UID/tensiled.sock)\n"
    "  --model M, --batch B, --dataset D, --image-size S, --iterations N, --epochs E,\n"
    "  --optimizer O, --optimizer-step S, --lr X, --seed S, --train-examples N\n"
    "                       as tensile run (default: 20 iterations)\n"
    "  --predictor FILE     the op-latency predictor its first plan's workload comes\n"
    "                       from (cold start: no warm-up iteration; default\n"
    "                       profiles/predictor.tsp when it exists, made by tensile\n"
    "                       profile, else the device profile's cost model)\n"
    "  --cost-model         the cost model's latencies even if a predictor exists\n"
    "  --utilisation U      the device's load by other work for the predictor, in\n"
    "                       [0, 1] (default: measured over 200 ms before registering)\n"
    "  --max-swap-rate R    the job's priority: its largest share of all the jobs'\n"
    "                       swapped tensors, in [0, 1] (default 1)\n"
    "  --name NAME          the job's name (default MODEL:BATCH)\n"
    "  --threads T          kernel threads (default 1: the device's cores are shared)\n"
    "  --id-fd FD           write the job's id to file descriptor FD once the daemon\n"
    "                       gives it (tensile submit uses it)\n"
    "  --quiet              no progress lines\n"
    "  --json               one JSON object on stdout at the end\n"
    "\n"
    "Exit status: 0 done, 1 error (the daemon refused or stopped the job, a\n"
    "failure while training), 2 bad arguments, 3 out of device memory.\n";

typedef struct conn_opts {
    const char *socket, *model, *name;
    int dataset, batch, image, optimizer, threads, json, quiet, epochs, id_fd;
    int step; /* --optimizer-step: a tsl_optimizer_step */
    int64_t iterations, train_n;
    double rate, lr, util;
    uint64_t seed;
    const char *predictor; /* --predictor */
    int cost_model;        /* --cost-model */
} conn_opts;

static void parse(int argc, char **argv, conn_opts *t) {
    tsl_args a = {.cmd = "run", .argc = argc, .argv = argv};
    static const char *const datasets[] = {"fashion-mnist", "synthetic", NULL};
    static const char *const optims[] = {"sgd", "adam", NULL};
    *t = (conn_opts){.batch = 64, .threads = 1, .lr = -1, .seed = 42, .iterations = 20,
                     .rate = 1.0, .id_fd = -1, .util = -1};
    int have_iter = 0;
    for (const char *o; (o = args_next(&a));) {
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(help, stdout);
            exit(0);
        } else if (!strcmp(o, "--connect")) {
        } else if (!strcmp(o, "--socket")) t->socket = args_value(&a, o);
        else if (!strcmp(o, "--model")) t->model = args_value(&a, o);
        else if (!strcmp(o, "--name")) t->name = args_value(&a, o);
        else if (!strcmp(o, "--batch")) t->batch = (int)args_int(&a, o, 1, 1 << 20);
        else if (!strcmp(o, "--dataset")) t->dataset = args_choice(&a, o, datasets);
        else if (!strcmp(o, "--image-size")) t->image = (int)args_int(&a, o, 1, 4096);
        else if (!strcmp(o, "--iterations")) {
            t->iterations = args_int(&a, o, 1, 100000000);
            have_iter = 1;
        } else if (!strcmp(o, "--epochs")) t->epochs = (int)args_int(&a, o, 1, 100000);
        else if (!strcmp(o, "--max-swap-rate")) t->rate = args_double(&a, o, 0, 1);
        else if (!strcmp(o, "--predictor")) t->predictor = args_value(&a, o);
        else if (!strcmp(o, "--cost-model")) t->cost_model = 1;
        else if (!strcmp(o, "--utilisation")) t->util = args_double(&a, o, 0, 1);
        else if (!strcmp(o, "--optimizer")) t->optimizer = args_choice(&a, o, optims);
        else if (!strcmp(o, "--optimizer-step")) t->step = args_choice(&a, o, tool_step_names);
        else if (!strcmp(o, "--lr")) t->lr = args_double(&a, o, 1e-12, 1e3);
        else if (!strcmp(o, "--threads")) t->threads = (int)args_int(&a, o, 1, 1024);
        else if (!strcmp(o, "--seed")) t->seed = (uint64_t)args_int(&a, o, 0, INT64_MAX);
        else if (!strcmp(o, "--train-examples")) t->train_n = args_int(&a, o, 1, TOOL_MAX_EXAMPLES);
        else if (!strcmp(o, "--id-fd")) t->id_fd = (int)args_int(&a, o, 0, 1 << 20);
        else if (!strcmp(o, "--quiet")) t->quiet = 1;
        else if (!strcmp(o, "--json")) t->json = 1;
        else args_die(&a, "unknown option '%s' (with --connect: tensile run --connect --help)", o);
    }
    if (!t->model) args_die(&a, "--model is required");
    if (have_iter && t->epochs) args_die(&a, "give --iterations or --epochs, not both");
    if (t->image && t->dataset == 0)
        args_die(&a, "--image-size applies to --dataset synthetic only (Fashion-MNIST is 28x28)");
    if (t->name && (!t->name[0] || strlen(t->name) > 63))
        args_die(&a, "--name: '%s' must have 1 to 63 characters", t->name);
    if (t->lr < 0) t->lr = t->optimizer ? 1e-3 : 0.02;
    if (t->predictor && t->cost_model) args_die(&a, "give --predictor or --cost-model, not both");
    if (t->predictor && !t->predictor[0]) args_die(&a, "--predictor: empty file name");
}

/* The predictor of the job's first workload: --predictor (an error if it
 * cannot be loaded: *bad set), else the default file when it exists, else
 * none (the cost model). */
static tsl_predictor *load_predictor(const conn_opts *t, char *path, size_t cap, int *bad) {
    *bad = 0;
    path[0] = '\0';
    if (t->cost_model) return NULL;
    if (t->predictor) snprintf(path, cap, "%s", t->predictor);
    else {
        tsl_predictor_default_path(path, cap);
        if (access(path, F_OK) != 0) {
            path[0] = '\0';
            return NULL;
        }
    }
    tsl_predictor *p;
    if (tsl_predictor_load(path, &p) == TSL_OK) return p;
    fprintf(stderr, "tensile run: --predictor: %s\n", tsl_last_error());
    *bad = 1;
    return NULL;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void say_id(conn_opts *t, int64_t id) {
    if (t->id_fd < 0) return;
    char b[32];
    int n = snprintf(b, sizeof b, "%lld\n", (long long)id);
    ssize_t w = write(t->id_fd, b, (size_t)n);
    (void)w;
    close(t->id_fd);
    t->id_fd = -1;
}

typedef struct queued_ctx {
    conn_opts *t;
} queued_ctx;

static void on_queued(void *user, int64_t id, const char *reason, size_t needed,
                      size_t available, int position) {
    queued_ctx *q = user;
    say_id(q->t, id);
    if (q->t->quiet) return;
    char b1[32], b2[32];
    fprintf(stderr, "tensile run: job %lld queued (position %d): %s [needs %s, %s free]\n",
            (long long)id, position, reason, fmt_bytes(needed, b1, sizeof b1),
            fmt_bytes(available, b2, sizeof b2));
}

/* The job under the daemon: its device, its backend, its job. */
typedef struct running {
    tsl_dclient *c;
    tsl_dclient_device dev;
    tsl_shdev *shdev;
    tsl_backend *b;
    tsl_job *job;
    tsl_dplan cur;          /* the plan in force (its plan and workload are the job's) */
    tsl_dplan next;         /* set with tsl_job_set_plan, not in force yet (seq 0: none) */
    int64_t installed_seen; /* the job's installed plans when `next` was set */
    size_t capacity;        /* the backend's arena */
} running;

/* Starts the job on its first plan p (taken over). */
static int start(running *u, const tsl_graph *g, conn_opts *t, tsl_dplan *p) {
    tsl_status st = tsl_shdev_open(u->dev.shm, &u->shdev);
    tsl_cpu_backend_opts bo = tsl_cpu_backend_opts_default(0); /* the whole region */
    bo.nthreads = t->threads;
    bo.shdev = u->shdev;
    bo.shdev_slot = p->slot;
    if (st == TSL_OK) st = tsl_cpu_backend_new_opts(&bo, &u->b);
    tsl_device_profile prof = tsl_profile_channel_share(&u->dev.profile, p->share);
    tsl_job_opts jo = tsl_job_opts_default();
    jo.name = NULL;
    jo.session.seed = t->seed;
    jo.session.nthreads = t->threads;
    jo.backend = u->b;
    jo.device_profile = &prof;
    if (st == TSL_OK) {
        st = tsl_job_new_planned(g, &jo, p->w, p->plan, &u->job);
        p->w = NULL;
        p->plan = NULL;
    }
    if (st != TSL_OK) {
        fprintf(stderr, "tensile run: cannot start the job on its region: %s\n", tsl_last_error());
        return 0;
    }
    u->cur = *p;
    u->capacity = p->region;
    return 1;
}

/* Takes plan p (taken over) for the next boundary; a larger region is
 * granted already: the arena grows now. */
static int take(running *u, tsl_dplan *p) {
    if (p->region > u->capacity) {
        if (tsl_cpu_backend_set_capacity(u->b, p->region) != TSL_OK) {
            fprintf(stderr, "tensile run: cannot grow to the region granted: %s\n",
                    tsl_last_error());
            tsl_dplan_free(p);
            return 0;
        }
        u->capacity = p->region;
    }
    tsl_device_profile prof = tsl_profile_channel_share(&u->dev.profile, p->share);
    tsl_workload *w = p->w;
    tsl_plan *plan = p->plan;
    p->w = NULL;
    p->plan = NULL;
    tsl_dplan_free(&u->next);
    u->installed_seen = tsl_job_plans_installed(u->job);
    if (tsl_job_set_plan(u->job, w, plan, &prof) != TSL_OK) {
        fprintf(stderr, "tensile run: the daemon's plan %lld is refused: %s\n", (long long)p->seq,
                tsl_last_error());
        return 0;
    }
    u->next = *p;
    return 1;
}

/* After a step: a plan set earlier now in force shrinks the arena to its
 * region and is acknowledged. */
static void after_step(running *u, int64_t iteration) {
    if (u->next.seq == 0 || tsl_job_plans_installed(u->job) == u->installed_seen) return;
    if (u->next.region < u->capacity) {
        if (tsl_cpu_backend_set_capacity(u->b, u->next.region) != TSL_OK) return; /* next time */
        u->capacity = u->next.region;
    }
    tsl_alloc_stats ms;
    u->b->iface->mem_stats(u->b, &ms);
    if (tsl_dclient_connected(u->c)) tsl_dclient_ack(u->c, u->next.seq, iteration, ms.footprint);
    u->cur.seq = u->next.seq;
    u->cur.region = u->next.region;
    u->cur.share = u->next.share;
    snprintf(u->cur.reason, sizeof u->cur.reason, "%s", u->next.reason);
    memset(&u->next, 0, sizeof u->next);
}

/* The plan in force, for RESUME (the job's own plan and workload). */
static tsl_dplan in_force(running *u) {
    tsl_dplan p = u->cur;
    p.plan = (tsl_plan *)tsl_job_plan(u->job);
    p.w = (tsl_workload *)tsl_job_workload(u->job);
    return p;
}

int cmd_run_connected(int argc, char **argv) {
    conn_opts t;
    parse(argc, argv, &t);
    if (!tool_check_model("run", "--model", t.model)) return 2;
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
    tsl_dataset train = {0};
    int rc = 0;
    if (!tool_load_data("run", t.dataset, &cfg, t.train_n, 0, t.seed, t.batch, &train, NULL, &rc))
        return rc;
    tsl_optimizer_cfg opt = t.optimizer ? tsl_adam_default((float)t.lr) : tsl_sgd_default((float)t.lr);
    opt.step = (tsl_optimizer_step)t.step;
    tsl_graph *g = tool_build_training_graph("run", t.model, &cfg, &opt, &rc);
    if (!g) {
        tsl_dataset_free(&train);
        return rc;
    }
    char name[64];
    if (t.name) snprintf(name, sizeof name, "%s", t.name);
    else snprintf(name, sizeof name, "%s:%d", t.model, t.batch);
    size_t img = (size_t)cfg.in_channels * cfg.image_size * cfg.image_size;
    size_t lbl = strcmp(t.model, "unet") ? 1 : (size_t)cfg.image_size * cfg.image_size;
    float *x = malloc(sizeof *x * img * (size_t)t.batch);
    int32_t *y = malloc(sizeof *y * (size_t)t.batch * lbl);
    tsl_batcher *bt = tsl_batcher_new(&train, t.batch, t.seed, 1);
    int32_t n_ops = tsl_graph_n_ops(g);
    double *lat = malloc(sizeof *lat * (size_t)n_ops);
    running u;
    memset(&u, 0, sizeof u);
    tsl_predictor *pred = NULL;
    char pred_path[1024] = "";
    tsl_workload *w = NULL;
    if (!x || !y || !bt || !lat) {
        fprintf(stderr, "tensile run: out of host memory (or the training set: %s)\n",
                tsl_last_error());
        rc = 1;
        goto out;
    }
    if (t.epochs) t.iterations = (int64_t)t.epochs * tsl_batcher_batches_per_epoch(bt);
    /* the daemon, the workload, the registration */
    if (tsl_dclient_connect(t.socket, TSL_DCLIENT_REPLY_MS, &u.c, &u.dev) != TSL_OK) {
        fprintf(stderr, "tensile run: %s\n", tsl_last_error());
        rc = 1;
        goto out;
    }
    tsl_job_opts jo = tsl_job_opts_default();
    jo.session.nthreads = t.threads;
    /* cold start: the workload the daemon plans and admits the job from
     * is predicted, with no warm-up iteration */
    int bad_pred;
    pred = load_predictor(&t, pred_path, sizeof pred_path, &bad_pred);
    if (bad_pred) {
        rc = t.predictor ? 2 : 1;
        goto out;
    }
    jo.predictor = pred;
    jo.utilisation = t.util;
    if (!t.quiet)
        fprintf(stderr, "tensile run: the first workload's latencies: %s%s\n",
                pred ? "predicted by " : "the device profile's cost model",
                pred ? pred_path : "");
    if (tsl_job_workload_new(g, &jo, &u.dev.profile, &w) != TSL_OK ||
        tsl_dclient_register(u.c, name, t.model, t.batch, t.iterations, t.rate, w) != TSL_OK) {
        fprintf(stderr, "tensile run: %s\n", tsl_last_error());
        rc = 1;
        goto out;
    }
    if (!t.quiet)
        fprintf(stderr, "tensile run: job %s registered with the daemon (%d ops, device %s)\n",
                name, (int)n_ops, u.dev.shm);
    queued_ctx qc = {&t};
    tsl_dplan first;
    if (tsl_dclient_wait_plan(u.c, -1, on_queued, &qc, &first) != TSL_OK) {
        fprintf(stderr, "tensile run: %s\n", tsl_last_error());
        rc = 1;
        goto out;
    }
    say_id(&t, first.job_id);
    if (!start(&u, g, &t, &first)) {
        tsl_dplan_free(&first);
        tsl_dclient_failed(u.c, tsl_last_error());
        rc = 1;
        goto out;
    }
    if (!t.quiet) {
        char b1[32];
        fprintf(stderr, "tensile run: job %lld running in a region of %s (slot %d)\n",
                (long long)u.cur.job_id, fmt_bytes(u.cur.region, b1, sizeof b1), u.cur.slot);
    }
    tsl_alloc_stats ms;
    u.b->iface->mem_stats(u.b, &ms);
    tsl_dclient_ack(u.c, u.cur.seq, 0, ms.footprint);
    /* training */
    tsl_session *s = tsl_job_session(u.job);
    double sum_ms = 0, last_try = 0, first_ms = 0;
    size_t peak_fp = 0;
    int64_t it = 0;
    char stop_reason[1100] = "";
    for (; it < t.iterations; it++) {
        if (!tsl_batcher_next(bt, x, y)) tsl_batcher_next(bt, x, y);
        tool_spread_labels(y, t.batch, lbl);
        tsl_step_stats st;
        if (tsl_job_step(u.job, x, y, &st) != TSL_OK) {
            fprintf(stderr, "tensile run: iteration %lld: %s\n", (long long)it + 1, tsl_last_error());
            rc = strstr(tsl_last_error(), "out of memory") ? 3 : 1;
            break;
        }
        sum_ms += st.ms;
        if (it == 0) first_ms = st.ms;
        if (st.peak_footprint > peak_fp) peak_fp = st.peak_footprint;
        after_step(&u, it + 1);
        if (tsl_dclient_connected(u.c)) {
            tsl_runtime_stats rs;
            tsl_session_runtime_stats(s, &rs);
            tsl_session_latency_snapshot(s, lat, NULL);
            u.b->iface->mem_stats(u.b, &ms);
            tsl_dclient_report r = {.iteration = it + 1, .iter_ms = st.ms, .kernel_ms = st.kernel_ms,
                                    .stall_ms = rs.stall_ms, .latencies_us = lat, .n_ops = n_ops,
                                    .load = ms.load, .footprint = ms.footprint,
                                    .peak_footprint = st.peak_footprint,
                                    .swaps = rs.swaps_out, .evictions = rs.evictions,
                                    .passive_swaps = rs.passive_swaps};
            tsl_dclient_report_send(u.c, &r);
            int got = 0;
            tsl_dplan p;
            if (tsl_dclient_connected(u.c) &&
                tsl_dclient_poll(u.c, &got, &p, stop_reason, sizeof stop_reason) == TSL_OK) {
                if (got == 1 && !take(&u, &p)) {
                    rc = 1;
                    break;
                }
                if (got == 2) break;
            }
            if (!tsl_dclient_connected(u.c) && !t.quiet)
                fprintf(stderr, "tensile run: the daemon is gone: going on with plan %lld, "
                                "reconnecting\n",
                        (long long)u.cur.seq);
        } else if (now_ms() - last_try > 1000) { /* the next daemon, once a second */
            last_try = now_ms();
            tsl_dplan p = in_force(&u);
            if (u.next.seq == 0 && tsl_dclient_resume(u.c, 200, &p, it + 1, NULL) == TSL_OK &&
                !t.quiet)
                fprintf(stderr, "tensile run: reconnected to the daemon at iteration %lld\n",
                        (long long)it + 1);
        }
    }
    uint64_t checksum = tsl_session_param_checksum(s);
    double iter_ms = it ? sum_ms / (double)it : 0;
    tsl_runtime_stats rs;
    tsl_session_runtime_stats(s, &rs);
    int64_t job_id = u.cur.job_id;
    /* a job that lost its daemon tells the next one, if there is one, how it
     * ended: unheard, the daemon would count it failed ("its process ended") */
    if (!tsl_dclient_connected(u.c) && u.next.seq == 0) {
        tsl_dplan p = in_force(&u);
        if (tsl_dclient_resume(u.c, TSL_DCLIENT_REPLY_MS, &p, it, NULL) == TSL_OK && !t.quiet)
            fprintf(stderr, "tensile run: reconnected to the daemon to report the end\n");
    }
    /* the device's memory goes back before the daemon hears of the end */
    tsl_job_free(u.job);
    u.job = NULL;
    tsl_backend_free(u.b);
    u.b = NULL;
    if (stop_reason[0] && rc == 0) {
        char why[1200];
        snprintf(why, sizeof why, "stopped at iteration %lld: %s", (long long)it, stop_reason);
        if (tsl_dclient_connected(u.c)) tsl_dclient_failed(u.c, why);
        fprintf(stderr, "tensile run: job %lld %s\n", (long long)job_id, why);
        rc = 1;
    } else if (rc != 0) {
        if (tsl_dclient_connected(u.c)) tsl_dclient_failed(u.c, tsl_last_error());
    } else if (tsl_dclient_connected(u.c)) {
        tsl_dclient_done(u.c, it, checksum, iter_ms, peak_fp);
    }
    if (rc == 0 || stop_reason[0]) {
        char b1[32];
        if (t.json)
            printf("{\"job_id\": %lld, \"name\": \"%s\", \"iterations\": %lld, \"iter_ms\": %.3f, "
                   "\"peak_footprint_bytes\": %zu, \"swaps\": %lld, \"evictions\": %lld, "
                   "\"param_checksum\": \"%016llx\", \"stopped\": %s, \"first_iteration_ms\": "
                   "%.3f, \"latencies\": \"%s\"}\n",
                   (long long)job_id, name, (long long)it, iter_ms, peak_fp,
                   (long long)rs.swaps_out, (long long)rs.evictions,
                   (unsigned long long)checksum, stop_reason[0] ? "true" : "false", first_ms,
                   pred ? "predicted" : "cost_model");
        else
            printf("job %lld %s: %lld iterations, %.1f ms per iteration, peak footprint %s, %lld "
                   "swaps, %lld evictions, parameter checksum %016llx\n",
                   (long long)job_id, name, (long long)it, iter_ms,
                   fmt_bytes(peak_fp, b1, sizeof b1), (long long)rs.swaps_out,
                   (long long)rs.evictions, (unsigned long long)checksum);
    }
out:
    tsl_dplan_free(&u.next);
    tsl_job_free(u.job);
    tsl_backend_free(u.b);
    tsl_shdev_close(u.shdev);
    tsl_dclient_free(u.c);
    tsl_workload_free(w);
    tsl_batcher_free(bt);
    free(x);
    free(y);
    free(lat);
    tsl_predictor_free(pred);
    tsl_graph_free(g);
    tsl_dataset_free(&train);
    return rc;
}
