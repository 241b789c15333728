/*
 * cmd_run.c - `tensile run`: train a model with the vanilla executor and
 * with a policy (the plan of a policy of the registry - TENSILE's by
 * default - run by the runtime, or vanilla alone) on the same data, and
 * report both side by side: peak load, footprint, iteration time,
 * MSR, EOR, CBR, the swaps and recomputations done, passive swap-ins,
 * evictions, stall time, replans, and whether the final parameters are
 * bitwise identical (DESIGN.md invariant 5).
 *
 * The policy's run: the kernel times of vanilla's first WARMUP iterations
 * (per-op medians, the first iteration left out when there are several)
 * are the latency table of the workload, and each op's workspace is the
 * scratch its kernel really takes on this backend; the device profile is
 * this machine's (profiles/cpu-local.json from `tensile calibrate`, else
 * rough CPU figures) with its copy bandwidth set to --pcie-gbps; the
 * planner plans within --device-memory, the plan is verified, simulated
 * (the predicted MSR and EOR) and run by the runtime in a session of
 * exactly --device-memory. From then on the two runs alternate, one
 * iteration each, so that the machine's load hits both alike; each run's
 * time is the median over that side-by-side stretch.
 *
 * Capuchin's run starts in passive mode: its first iteration under
 * vanilla's plan (tensors evicted on out-of-memory, least recently used
 * first), its plan made from that iteration's kernel times and followed
 * from the second (docs/SCHEDULING.md, "Capuchin").
 *
 * A budget below what vanilla needs: vanilla is tried in it first and
 * refused (its out-of-memory message is printed); its figures then come
 * from a run on a device large enough, so that MSR and EOR still compare
 * against vanilla. With --eval, a run whose device cannot hold the
 * evaluation pass (evaluation is vanilla, not scheduled) is evaluated with
 * its trained parameters copied to a device large enough, and says so.
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "feed.h"
#include "progress.h"
#include "run_cold.h"
#include "tensile/backend.h"
#include "tensile/data.h"
#include "tensile/job.h"
#include "policy_args.h"
#include "tensile/policy.h"
#include "tensile/sched_json.h"
#include "tensile/session.h"
#include "tensile/sim.h"

static const char help[] =
    "usage: tensile run --model M --batch B [--image-size S] [--dataset fashion-mnist|synthetic]\n"
    "                   --policy NAME [--OPTION VALUE]... [--device-memory SIZE] [--pcie-gbps G]\n"
    "                   [--iterations N] [--trace out.json] [--json] [more options]\n"
    "\n"
    "Trains the model with the vanilla executor (every tensor freed after its\n"
    "last use) and with the policy on the same batches, and prints both: peak\n"
    "load and footprint (the allocator's ledger), iteration time, MSR = 1 -\n"
    "footprint/vanilla footprint (MSR load: the same on the peak load), EOR =\n"
    "iteration time/vanilla's, CBR = MSR/EOR, the planned MSR (against vanilla\n"
    "laid out too, as tensile plan reports it; vanilla's online allocator holds\n"
    "more than its load, so the measured MSR is larger) and the plan's footprint\n"
    "against vanilla as measured, the planned and simulated MSR load and EOR,\n"
    "the swaps and recomputations done,\n"
    "passive swap-ins, evictions, stall time, replans, and whether the final\n"
    "parameters are bitwise identical. The policy plans from the kernel times\n"
    "of vanilla's first 3 iterations; then the two runs alternate, one\n"
    "iteration each, and each run's time is its median over that stretch.\n"
    "capuchin runs its first iteration in passive mode (no plan; tensors\n"
    "evicted on out-of-memory, least recently used first) and plans from the\n"
    "kernel times that iteration measured. dtr runs online in the runtime\n"
    "(no plan: tensors dropped on out-of-memory by DTR's heuristic and\n"
    "regenerated when read); its planned figures are DTR's decisions\n"
    "simulated over one iteration (tensile plan --policy dtr).\n"
    "\n"
    "  --model M            a model of the zoo (tensile info --help lists them)\n"
    "  --batch B            batch size (default 64)\n"
    "  --dataset D          fashion-mnist (default) or synthetic\n"
    "  --image-size S       synthetic data only: image size (default: the model's)\n"
    "  --policy NAME        a planning policy of the registry (below; default\n"
    "                       tensile): its plan is verified and run by the\n"
    "                       runtime; vanilla: the vanilla executor alone\n"
    "  --OPTION VALUE       an option of the policy (below), e.g. --swap-in-slack\n"
    "                       0.25 for tensile, --evaluations 10 for autoswap\n"
    "  --device-memory SIZE the device budget, e.g. 24MiB, or P% of vanilla's peak\n"
    "                       load (dry run), e.g. 60%, or plan[+P%]: the footprint\n"
    "                       of the plan made with no budget (plus P %), a device\n"
    "                       sized to the plan; default: room for vanilla.\n"
    "                       Vanilla is run in a SIZE or P% budget and refused\n"
    "                       if it does not fit; the policy's run goes down to the\n"
    "                       op floor (one op's working set): where the plan\n"
    "                       misses the device the runtime evicts on demand\n"
    "  --pcie-gbps G        throttle each copy channel to G GB/s, at least 0.001\n"
    "                       (default 0: unthrottled, the profile's copy bandwidth\n"
    "                       is planned with); a run the plan predicts to last over\n"
    "                       a minute says so before it starts\n"
    "  --iterations N       training iterations per run (default 20)\n"
    "  --epochs E           instead of --iterations: E passes over the training set\n"
    "  --eval               also report test accuracy after each run\n"
    "  --profile P          device profile to plan with (default cpu-local if\n"
    "                       `tensile calibrate` wrote it, else rough CPU figures)\n"
    "  --optimizer O        sgd (momentum 0.9, default) or adam\n"
    "  --optimizer-step S   backward (default): each parameter's update right after\n"
    "                       its gradient is complete; end: every update after the\n"
    "                       backward pass (the seed papers' optimizer phase)\n"
    "  --lr X               learning rate (default 0.02 for sgd, 0.001 for adam)\n"
    "  --cold-start         plan the first iteration from predicted op latencies\n"
    "                       (--predictor, made by tensile profile), not from\n"
    "                       vanilla's kernel times; after --cold-start-iters\n"
    "                       iterations the plan is updated from the measured\n"
    "                       latencies (EWMA); reports both phases (MSR, EOR, CBR)\n"
    "                       and the first iteration's time against vanilla's\n"
    "  --predictor FILE     the predictor (default profiles/predictor.tsp)\n"
    "  --cold-start-iters K iterations under the predicted plan (default 5)\n"
    "  --utilisation U      the machine's load by other work the prediction assumes,\n"
    "                       in [0, 1] (default: measured over 200 ms as the job opens)\n"
    "  --online-placement   ignore the plan's layout: every block from the online\n"
    "                       best-fit allocator, as before layouts (for comparison)\n"
    "  --threads T          kernel threads of both runs (default: the online CPUs,\n"
    "                       less one for the copy channels with a planned policy)\n"
    "  --seed S             initialisation, shuffling and dropout seed (default 42)\n"
    "  --train-examples N   use only the first N training examples (at most 2^31)\n"
    "  --test-examples N    use only the first N test examples (at most 2^31)\n"
    "  --trace FILE         Chrome trace of the policy's run (compute, both copy\n"
    "                       channels, memory), in the simulator's format; its\n"
    "                       path is checked before the run\n"
    "  --quiet              no progress display\n"
    "  --json               one JSON object on stdout\n"
    "\n"
    "Exit status: 0 done, 1 error (a write error on stdout or --trace included),\n"
    "2 bad arguments (a --profile that cannot be read or is malformed included),\n"
    "3 the policy's run does not fit in --device-memory (below the op floor, or\n"
    "out of device memory; vanilla refused under a budget below its peak is\n"
    "reported, not an error, when the policy plans), 4 the final parameters\n"
    "differ from vanilla's, 130 / 143 interrupted by SIGINT / SIGTERM.\n";

/* Vanilla iterations run alone first: their kernel times (the first left
 * out when there are several) are the latency table of the policy's plan. */
#define WARMUP 3

/* The slowest copy throttle: 1 MB/s. Below it a few MiB of swaps take
 * hours (at 1e-6 GB/s the cnn's 74 MiB took about 21 h). */
#define MIN_PCIE_GBPS 0.001

/* A run predicted to take longer than this says so before it starts. */
#define LONG_RUN_S 60.0

typedef struct run_opts {
    const char *model, *trace, *profile;
    int dataset; /* 0 fashion-mnist, 1 synthetic */
    int batch, image, optimizer, threads, json, quiet, eval, epochs;
    int step; /* --optimizer-step: a tsl_optimizer_step */
    const char *policy;   /* the policy's name */
    int planned;          /* the policy plans (not vanilla): the runtime runs its plan */
    tsl_policy_opts *popts; /* the policy and its options (owned) */
    int threads_default; /* no --threads given */
    int online_placement; /* --online-placement: ignore the plan's layout */
    int64_t iterations, train_n, test_n;
    size_t budget;       /* 0: none */
    double budget_pct;   /* > 0: percent of vanilla's peak load */
    int budget_plan;      /* --device-memory plan[+P%]: the plan's predicted footprint */
    double budget_plan_pct; /* ... plus this percentage */
    double pcie_gbps, lr;
    uint64_t seed;
    int cold_start;        /* --cold-start: the first plan from predicted latencies */
    const char *predictor; /* --predictor FILE (NULL: the default file) */
    int64_t cs_iters;      /* --cold-start-iters: the update's iteration (0: not given) */
    double util;           /* --utilisation (< 0: measured when the job opens) */
} run_opts;

/* What one run measured. */
typedef struct run_result {
    int ok;                  /* completed */
    int refused;             /* out of device memory */
    char error[512];
    size_t peak_load, peak_fp;
    double iter_ms;          /* median */
    double kernel_ms;        /* the kernels' own time in those iterations, median */
    uint64_t checksum;
    double accuracy;         /* test accuracy (with --eval) */
    int64_t n_eval;
    int eval_elsewhere;      /* evaluated on a device of `roomy` bytes (see evaluate_copy) */
    tsl_job_stats js;        /* the policy's run: the job's runtime and replans */
} run_result;

/* Everything both runs share: graph, data, buffers. */
typedef struct run_env {
    const run_opts *o;
    tsl_graph *g;
    tsl_model_cfg cfg;
    tsl_dataset train, test;
    size_t img, lbl;
    float *x;
    int32_t *y;
} run_env;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int64_t n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The default kernel thread count: every online CPU, less one when the
 * runtime's copy channels run beside the kernels (a planned policy), so
 * that the channels have a core of their own, as a GPU's copy engines do:
 * a kernel thread preempted by a copy stalls the kernel's other threads,
 * which wait for it (OpenMP), and the kernels then take several times
 * their time (docs/RESULTS.md, "Threads"). At least one. Both runs of
 * `tensile run` use the same count, so EOR compares like with like. */
static int default_threads(int planned) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1) cpus = 1;
    if (planned && cpus > 1) cpus--;
    return cpus > 1024 ? 1024 : (int)cpus;
}

static void parse(int argc, char **argv, run_opts *t) {
    tsl_args a = {.cmd = "run", .argc = argc, .argv = argv};
    static const char *const datasets[] = {"fashion-mnist", "synthetic", NULL};
    static const char *const optims[] = {"sgd", "adam", NULL};
    *t = (run_opts){.batch = 64, .policy = "tensile", .threads = 0, .lr = -1, .seed = 42,
                    .iterations = 20, .util = -1};
    policy_pairs pairs = policy_pairs_new(&a, argc);
    int have_iter = 0;
    for (const char *o; (o = args_next(&a));) {
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(help, stdout);
            print_policies();
            exit(0);
        } else if (!strcmp(o, "--model")) t->model = args_value(&a, o);
        else if (!strcmp(o, "--batch")) t->batch = (int)args_int(&a, o, 1, 1 << 20);
        else if (!strcmp(o, "--dataset")) t->dataset = args_choice(&a, o, datasets);
        else if (!strcmp(o, "--image-size")) t->image = (int)args_int(&a, o, 1, 4096);
        else if (!strcmp(o, "--policy")) t->policy = args_value(&a, o);
        else if (!strcmp(o, "--device-memory")) {
            const char *v = args_value(&a, o);
            size_t len = strlen(v);
            if (!strncmp(v, "plan", 4)) { /* plan, plan+P%: the plan's own footprint */
                t->budget_plan = 1;
                t->budget_plan_pct = 0;
                if (v[4] && (v[4] != '+' || args_parse_percent(v + 5, &t->budget_plan_pct) != 0))
                    args_die(&a, "--device-memory: '%s': after 'plan' comes nothing or +P%% "
                                 "(e.g. plan+1%%)", v);
                t->budget = 0;
                t->budget_pct = 0;
            } else if (len > 1 && v[len - 1] == '%') {
                if (args_parse_percent(v, &t->budget_pct) != 0)
                    args_die(&a, "--device-memory: '%s' is not a percentage in (0, 1000]%%", v);
                t->budget = 0;
                t->budget_plan = 0;
            } else {
                if (args_parse_size(v, &t->budget) != 0 || t->budget == 0)
                    args_die(&a, "--device-memory: '%s' is not a positive size (e.g. 24MiB, 1.5G) "
                                 "or a percentage of vanilla's peak load (e.g. 60%%)", v);
                t->budget_pct = 0;
                t->budget_plan = 0;
            }
        } else if (!strcmp(o, "--pcie-gbps")) {
            t->pcie_gbps = args_double(&a, o, 0, 1e4);
            if (t->pcie_gbps > 0 && t->pcie_gbps < MIN_PCIE_GBPS)
                args_die(&a, "--pcie-gbps: %g GB/s is below the floor of %g GB/s (1 MB/s): its "
                         "copies would take hours (0 leaves the channels unthrottled)",
                         t->pcie_gbps, MIN_PCIE_GBPS);
        }
        else if (!strcmp(o, "--iterations")) {
            t->iterations = args_int(&a, o, 1, 100000000);
            have_iter = 1;
        } else if (!strcmp(o, "--epochs")) t->epochs = (int)args_int(&a, o, 1, 100000);
        else if (!strcmp(o, "--eval")) t->eval = 1;
        else if (!strcmp(o, "--profile")) t->profile = args_value(&a, o);
        else if (!strcmp(o, "--optimizer")) t->optimizer = args_choice(&a, o, optims);
        else if (!strcmp(o, "--optimizer-step")) t->step = args_choice(&a, o, tool_step_names);
        else if (!strcmp(o, "--lr")) t->lr = args_double(&a, o, 1e-12, 1e3);
        else if (!strcmp(o, "--threads")) t->threads = (int)args_int(&a, o, 1, 1024);
        else if (!strcmp(o, "--seed")) t->seed = (uint64_t)args_int(&a, o, 0, INT64_MAX);
        else if (!strcmp(o, "--train-examples")) t->train_n = args_int(&a, o, 1, TOOL_MAX_EXAMPLES);
        else if (!strcmp(o, "--test-examples")) t->test_n = args_int(&a, o, 1, TOOL_MAX_EXAMPLES);
        else if (!strcmp(o, "--trace")) t->trace = args_value(&a, o);
        else if (!strcmp(o, "--quiet")) t->quiet = 1;
        else if (!strcmp(o, "--online-placement")) t->online_placement = 1;
        else if (!strcmp(o, "--cold-start")) t->cold_start = 1;
        else if (!strcmp(o, "--predictor")) t->predictor = args_value(&a, o);
        else if (!strcmp(o, "--cold-start-iters")) t->cs_iters = args_int(&a, o, 1, 100000000);
        else if (!strcmp(o, "--utilisation")) t->util = args_double(&a, o, 0, 1);
        else if (!strcmp(o, "--json")) t->json = 1;
        else if (!strncmp(o, "--", 2) && o[2]) /* the policy's (checked below) */
            policy_pairs_add(&a, &pairs, o + 2, args_value(&a, o));
        else args_die(&a, "unknown option '%s'", o);
    }
    t->popts = policy_pairs_apply(&a, &pairs, t->policy);
    policy_opts_check_jobs(&a, t->popts, 1);
    t->planned = strcmp(t->policy, "vanilla") != 0;
    if (!t->model) args_die(&a, "--model is required");
    if (have_iter && t->epochs) args_die(&a, "give --iterations or --epochs, not both");
    if (t->image && t->dataset == 0)
        args_die(&a, "--image-size applies to --dataset synthetic only (Fashion-MNIST is 28x28)");
    if (t->trace && !t->planned)
        args_die(&a, "--trace records the runtime's run: it needs a planned policy (not vanilla)");
    if (t->budget_plan && !t->planned)
        args_die(&a, "--device-memory plan sizes the device to the policy's plan: it needs a "
                     "planned policy (not vanilla)");
    if (t->cold_start && !t->planned)
        args_die(&a, "--cold-start plans the first iteration from predicted latencies: it needs "
                     "a planned policy (not vanilla)");
    if ((t->predictor || t->cs_iters || t->util >= 0) && !t->cold_start)
        args_die(&a, "--predictor, --cold-start-iters and --utilisation go with --cold-start");
    if (t->predictor && !t->predictor[0]) args_die(&a, "--predictor: empty file name");
    if (t->trace && !tool_check_output("run", "--trace", t->trace)) exit(2);
    if (t->lr < 0) t->lr = t->optimizer ? 1e-3 : 0.02;
    if (!t->threads) {
        t->threads = default_threads(t->planned);
        t->threads_default = 1;
    }
}

/* Loads the data; returns 0 with *rc the exit status on failure. */
static int load_data(run_env *e, int *rc) {
    const run_opts *t = e->o;
    return tool_load_data("run", t->dataset, &e->cfg, t->train_n, t->test_n, t->seed, t->batch,
                          &e->train, t->eval ? &e->test : NULL, rc);
}

/* The session options of every run: capacity, threads, seed, and the copy
 * streams' throttle. */
static tsl_session_opts session_opts(const run_opts *t, size_t capacity) {
    tsl_session_opts so = tsl_session_opts_default();
    so.device_memory = capacity;
    so.nthreads = t->threads;
    so.seed = t->seed;
    so.pcie_gbps = t->pcie_gbps;
    return so;
}

/* Test accuracy over every test example (the last batch padded and counted
 * for its real examples only). Returns 0 and records the error on failure. */
static int evaluate(run_env *e, tsl_session *s, run_result *r) {
    if (!tool_evaluate(s, &e->test, e->o->batch, e->img, e->lbl, e->x, e->y, &r->accuracy, &r->n_eval)) {
        snprintf(r->error, sizeof r->error, "evaluation: %s", tsl_last_error());
        return 0;
    }
    return 1;
}

/* Evaluation when the session's own device cannot hold it (a budget below
 * the forward pass: the runtime schedules training steps, evaluation is a
 * vanilla pass): the trained persistent tensors (parameters, running
 * statistics) are copied into a session of `capacity` bytes and evaluated
 * there. Returns 0 and records the error on failure. */
static int evaluate_copy(run_env *e, tsl_session *s, size_t capacity, run_result *r) {
    tsl_session_opts so = session_opts(e->o, capacity);
    tsl_session *v;
    if (tsl_session_new(e->g, &so, &v) != TSL_OK) {
        snprintf(r->error, sizeof r->error, "evaluation: %s", tsl_last_error());
        return 0;
    }
    int ok = 1;
    void *buf = NULL;
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(e->g) && ok; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(e->g, t);
        if (!tsl_kind_is_persistent(tt->kind)) continue;
        void *nb = realloc(buf, tt->nbytes ? tt->nbytes : 1);
        ok = nb && tsl_session_read(s, t, nb) == TSL_OK && tsl_session_write(v, t, nb) == TSL_OK;
        buf = nb ? nb : buf;
        if (!ok) snprintf(r->error, sizeof r->error, "evaluation: copying '%s': %s", tt->name,
                          nb ? tsl_last_error() : "out of host memory");
    }
    free(buf);
    if (ok) ok = evaluate(e, v, r);
    tsl_session_free(v);
    r->eval_elsewhere = ok;
    return ok;
}

/* One run's training loop: a session, its own batcher (every run sees the
 * same batches), and its iteration times. */
typedef struct runner {
    tsl_session *s;
    tsl_job *job;          /* the policy's run: the job owning s */
    tsl_batcher *b;
    int64_t n, done;       /* iterations to run, run so far */
    double *ms;            /* per iteration: wall time */
    double *kms;           /* per iteration: the kernels' own time */
    size_t *fp;            /* per iteration: peak footprint */
    int64_t *installs;     /* per iteration: plans in force after it (a job's run) */
    double *lat;           /* per iteration, per op: kernel ms (vanilla runs; may be NULL) */
    int64_t lat_rows;      /* iterations lat has room for (the first ones) */
    run_result *r;
} runner;

/* Opens a run for n iterations: a session of `capacity` bytes, or with
 * `jo` the job those options describe; with `lat` the kernel times of its
 * first WARMUP iterations are recorded. Returns 0 with r->error (and
 * r->refused for out of memory) set on failure. */
static int runner_open_job(run_env *e, runner *u, size_t capacity, int64_t n, double *lat,
                           const tsl_job_opts *jo, tsl_job *made, run_result *r);
static int runner_open(run_env *e, runner *u, size_t capacity, int64_t n, double *lat,
                       const tsl_job_opts *jo, run_result *r) {
    return runner_open_job(e, u, capacity, n, lat, jo, NULL, r);
}

/* runner_open, or with `made` (not NULL) that job, made by the caller (and
 * owned by the runner from now on, on failure too). */
static int runner_open_job(run_env *e, runner *u, size_t capacity, int64_t n, double *lat,
                           const tsl_job_opts *jo, tsl_job *made, run_result *r) {
    memset(u, 0, sizeof *u);
    memset(r, 0, sizeof *r);
    u->r = r;
    u->n = n;
    u->lat = lat;
    u->lat_rows = WARMUP;
    tsl_session_opts so = session_opts(e->o, capacity);
    tsl_status st = made ? (u->job = made, TSL_OK)
                    : jo ? tsl_job_new(e->g, jo, &u->job)
                         : tsl_session_new(e->g, &so, &u->s);
    if (st != TSL_OK) {
        snprintf(r->error, sizeof r->error, "%s", tsl_last_error());
        r->refused = st == TSL_ERR_OOM;
        u->s = NULL;
        u->job = NULL;
        return 0;
    }
    if (u->job) u->s = tsl_job_session(u->job);
    u->b = tsl_batcher_new(&e->train, e->o->batch, e->o->seed, 1);
    if (!u->b) {
        snprintf(r->error, sizeof r->error, "%s", tsl_last_error());
        return 0;
    }
    u->ms = malloc(sizeof *u->ms * (size_t)n);
    u->kms = malloc(sizeof *u->kms * (size_t)n);
    u->fp = malloc(sizeof *u->fp * (size_t)n);
    u->installs = malloc(sizeof *u->installs * (size_t)n);
    if (!u->ms || !u->kms || !u->fp || !u->installs) {
        snprintf(r->error, sizeof r->error, "out of host memory for the times of %lld iterations",
                 (long long)n);
        return 0;
    }
    return 1;
}

static void runner_close(runner *u) {
    if (u->job) tsl_job_free(u->job);
    else tsl_session_free(u->s);
    tsl_batcher_free(u->b);
    free(u->ms);
    free(u->kms);
    free(u->fp);
    free(u->installs);
    memset(u, 0, sizeof *u);
}

/* One training iteration on the next batch. Returns 0 with r->error (and
 * r->refused) set on failure. */
static int runner_step(run_env *e, runner *u) {
    const run_opts *t = e->o;
    run_result *r = u->r;
    if (!tsl_batcher_next(u->b, e->x, e->y)) tsl_batcher_next(u->b, e->x, e->y); /* next epoch */
    tool_spread_labels(e->y, t->batch, e->lbl);
    tsl_step_stats st;
    if (tsl_session_step(u->s, e->x, e->y, &st) != TSL_OK) {
        snprintf(r->error, sizeof r->error, "iteration %lld: %s", (long long)u->done + 1, tsl_last_error());
        r->refused = strstr(r->error, "out of memory") != NULL;
        return 0;
    }
    if (!isfinite(st.loss)) {
        snprintf(r->error, sizeof r->error, "the loss diverged (%g) at iteration %lld; try a smaller --lr",
                 st.loss, (long long)u->done + 1);
        return 0;
    }
    u->ms[u->done] = st.ms;
    u->kms[u->done] = st.kernel_ms;
    u->fp[u->done] = st.peak_footprint;
    u->installs[u->done] = u->job ? tsl_job_plans_installed(u->job) : 0;
    if (st.peak_load > r->peak_load) r->peak_load = st.peak_load;
    if (st.peak_footprint > r->peak_fp) r->peak_fp = st.peak_footprint;
    int32_t n_ops = tsl_graph_n_ops(e->g);
    if (u->lat && u->done < u->lat_rows)
        for (int32_t i = 0; i < n_ops; i++)
            u->lat[(size_t)u->done * (size_t)n_ops + (size_t)i] = tsl_session_op_ms(u->s, i);
    u->done++;
    return 1;
}

/* The run's iteration time: the median over iterations [first, last) (the
 * stretch run side by side with the other run), else over all but the
 * first (it builds the kernels' primitives and touches the arena's pages). */
static void runner_time(runner *u, int64_t first, int64_t last) {
    if (last - first < 1) {
        first = u->done > 1 ? 1 : 0;
        last = u->done;
    }
    u->r->iter_ms = last > first ? median(u->ms + first, last - first) : 0;
    u->r->kernel_ms = last > first ? median(u->kms + first, last - first) : 0;
}

/* The checksum and (with --eval) the test accuracy at the end of a run;
 * evaluation that does not fit in the session's device is done in a copy
 * of `roomy` bytes. Returns 0 with r->error set on failure. */
static int runner_finish(run_env *e, runner *u, size_t roomy) {
    run_result *r = u->r;
    r->checksum = tsl_session_param_checksum(u->s);
    if (!e->o->eval || evaluate(e, u->s, r)) return 1;
    return strstr(r->error, "out of memory") && evaluate_copy(e, u->s, roomy, r);
}

/* What the planner and the simulator predict for the plan. */
typedef struct prediction {
    size_t vanilla_peak, planned_peak;
    size_t vanilla_footprint, planned_footprint; /* the layouts' extents */
    int budget_met;
    double sim_iter_us, sim_vanilla_iter_us;
    size_t sim_peak, sim_vanilla_peak;
    int swaps, recomputes;
    double planning_ms;
} prediction;

/* The simulator's figures for the job's plan and for the empty plan, on
 * the job's profile. Returns 0 with a message printed on failure. */
static int predict(tsl_job *job, prediction *pr) {
    tsl_job_stats js;
    tsl_job_get_stats(job, &js);
    tsl_workload *w = (tsl_workload *)tsl_job_workload(job);
    tsl_plan *plan = (tsl_plan *)tsl_job_plan(job), *empty = tsl_plan_new(w->job);
    tsl_sim_opts so = {.iterations = 3};
    tsl_sim_result sim = {0}, vsim = {0};
    int ok = empty && tsl_simulate(&w, &plan, 1, tsl_job_profile(job), &so, &sim) == TSL_OK &&
             tsl_simulate(&w, &empty, 1, tsl_job_profile(job), &so, &vsim) == TSL_OK;
    tsl_plan_free(empty);
    if (!ok) {
        fprintf(stderr, "tensile run: simulation failed: %s\n", tsl_last_error());
        tsl_sim_result_free(&sim);
        return 0;
    }
    pr->vanilla_peak = js.vanilla_peak;
    pr->planned_peak = js.planned_peak;
    pr->vanilla_footprint = js.vanilla_footprint;
    pr->planned_footprint = js.planned_footprint;
    pr->budget_met = js.budget_met;
    pr->swaps = js.swaps;
    pr->recomputes = js.recomputes;
    pr->planning_ms = js.planning_ms;
    pr->sim_iter_us = sim.job[0].iter_us;
    pr->sim_vanilla_iter_us = vsim.job[0].iter_us;
    pr->sim_peak = sim.job[0].peak;
    pr->sim_vanilla_peak = vsim.job[0].peak;
    tsl_sim_result_free(&sim);
    tsl_sim_result_free(&vsim);
    return 1;
}

/* 1 if the policy's run starts in passive mode: Capuchin (docs/SCHEDULING.md,
 * "Capuchin"). */
static int passive_first(const run_opts *t) { return !strcmp(t->policy, "capuchin"); }

/* 1 if the policy runs online in the runtime, under vanilla's plan: DTR
 * (tsl_runtime_opts.remat; docs/SCHEDULING.md, "DTR"). */
static int online_dtr(const run_opts *t) { return !strcmp(t->policy, "dtr"); }

/* Capuchin's eviction on out-of-memory (tsl_evict_fn; user: the graph): a
 * dead tensor first, else the least recently used - the latest access
 * before op `pos`, a tensor not accessed yet in this iteration counting
 * its last access of the previous one (ties: the larger, then the lower
 * id). */
static int evict_lru(void *user, int32_t pos, const tsl_evict_candidate *cand, int n) {
    const tsl_graph *g = user;
    int32_t n_ops = tsl_graph_n_ops(g);
    int best = -1;
    int64_t best_last = 0;
    for (int i = 0; i < n; i++) {
        int na;
        const tsl_access *a = tsl_graph_accesses(g, cand[i].tensor, &na);
        int64_t last = INT64_MIN; /* dead: first */
        if (cand[i].next_use != INT32_MAX) {
            int64_t before = INT64_MIN, any = -1;
            for (int k = 0; k < na; k++) {
                if (a[k].op < pos && a[k].op > before) before = a[k].op;
                if (a[k].op > any) any = a[k].op;
            }
            last = before != INT64_MIN ? before : any - n_ops;
        }
        if (best < 0 || last < best_last ||
            (last == best_last && (cand[i].bytes > cand[best].bytes ||
                                   (cand[i].bytes == cand[best].bytes &&
                                    cand[i].tensor < cand[best].tensor)))) {
            best = i;
            best_last = last;
        }
    }
    return best;
}

/* The policy's plan for u's job made from kernel times lat_us (NULL: those
 * u's session measured last), within `budget`, and the planner's and the
 * simulator's figures for it into *pr; with `install`, set to take effect
 * at the next iteration. Capuchin after its passive iteration (the job's
 * first, run under vanilla's plan: tensors evicted on out-of-memory); DTR's
 * decisions simulated as a plan, the prediction of its online run. Returns
 * 0 with a message printed on failure. */
static int passive_plan(run_env *e, runner *u, size_t capacity, size_t budget, const double *lat_us,
                        int install, prediction *pr) {
    const run_opts *t = e->o;
    int32_t n_ops = tsl_graph_n_ops(e->g);
    double *us = malloc(sizeof *us * ((size_t)n_ops + 1));
    if (!us) {
        fprintf(stderr, "tensile run: out of host memory\n");
        return 0;
    }
    for (int32_t i = 0; i < n_ops; i++) us[i] = lat_us ? lat_us[i] : 1e3 * tsl_session_op_ms(u->s, i);
    tsl_job_opts jo = tsl_job_opts_default();
    jo.name = tsl_job_workload(u->job)->job;
    jo.session = session_opts(t, capacity);
    jo.latency_us = us;
    jo.device_profile = tsl_job_profile(u->job);
    tsl_plan_opts po = tsl_plan_opts_default();
    po.policy = tsl_policy_opts_policy(t->popts);
    po.budget = budget;
    po.opts = tsl_policy_opts_values(t->popts);
    tsl_device_profile dev = *tsl_job_profile(u->job);
    tsl_workload *w = NULL;
    tsl_plan *p = NULL;
    tsl_plan_report rep;
    memset(&rep, 0, sizeof rep);
    tsl_status st = tsl_job_workload_new(e->g, &jo, &dev, &w);
    free(us);
    int met = 1;
    if (st == TSL_OK) {
        st = tsl_plan_jobs(&w, 1, &dev, &po, &p, &rep);
        if (st == TSL_ERR_BUDGET) { /* reported, as for any policy */
            st = TSL_OK;
            met = 0;
        }
    }
    if (st == TSL_OK) {
        pr->vanilla_peak = rep.vanilla_peak[0];
        pr->planned_peak = rep.planned_peak[0];
        pr->vanilla_footprint = rep.vanilla_footprint[0];
        pr->planned_footprint = rep.planned_footprint[0];
        pr->budget_met = met;
        pr->swaps = rep.swaps[0];
        pr->recomputes = rep.recomputes[0];
        pr->planning_ms = rep.planning_ms;
        tsl_sim_opts so = {.iterations = 3};
        tsl_sim_result sim = {0}, vsim = {0};
        tsl_plan *empty = tsl_plan_new(w->job);
        st = empty ? tsl_simulate(&w, &p, 1, &dev, &so, &sim) : TSL_ERR_OOM;
        if (st == TSL_OK) st = tsl_simulate(&w, &empty, 1, &dev, &so, &vsim);
        if (st == TSL_OK) {
            pr->sim_iter_us = sim.job[0].iter_us;
            pr->sim_vanilla_iter_us = vsim.job[0].iter_us;
            pr->sim_peak = sim.job[0].peak;
            pr->sim_vanilla_peak = vsim.job[0].peak;
        }
        tsl_sim_result_free(&sim);
        tsl_sim_result_free(&vsim);
        tsl_plan_free(empty);
    }
    if (st == TSL_OK && install) {
        st = tsl_job_set_plan(u->job, w, p, NULL);
        w = NULL;
        p = NULL;
    }
    tsl_plan_report_free(&rep);
    tsl_workload_free(w);
    tsl_plan_free(p);
    if (st != TSL_OK) {
        fprintf(stderr, "tensile run: %s: planning%s: %s\n", t->policy,
                install ? " after the passive iteration" : "", tsl_last_error());
        return 0;
    }
    return 1;
}

/* The policy's run: a job (tensile/job.h) on a device of `capacity` bytes,
 * its workload from the vanilla latencies with the kernels' real
 * workspaces, planned within `budget`, verified, run by the runtime and
 * replanned on drift. Returns 0 on a setup error (message printed) or with
 * r->refused when the device is below the job's op floor (r->error). */
static int open_planned(run_env *e, runner *u, size_t capacity, size_t budget, const double *lat_us,
                        const tsl_predictor *pred, int64_t n_iter, run_result *r, prediction *pr,
                        tsl_device_profile *dev) {
    const run_opts *t = e->o;
    memset(pr, 0, sizeof *pr);
    char job[64];
    snprintf(job, sizeof job, "%.40s:%d", t->model, t->batch);
    tsl_job_opts jo = tsl_job_opts_default();
    jo.name = job;
    jo.session = session_opts(t, capacity);
    jo.profile = t->profile;
    jo.latency_us = pred ? NULL : lat_us;
    jo.predictor = pred; /* cold start: predicted latencies, then the measured ones take over */
    jo.utilisation = t->util;
    if (pred) jo.replan.update_at = t->cs_iters;
    jo.plan.policy = tsl_policy_opts_policy(t->popts);
    jo.plan.budget = budget;
    jo.plan.opts = tsl_policy_opts_values(t->popts);
    jo.runtime.online_placement = t->online_placement;
    tsl_job *made = NULL;
    if (passive_first(t) || online_dtr(t)) { /* Capuchin: the first iteration under vanilla's
                                                 plan; DTR: every iteration, online */
        if (online_dtr(t)) {
            jo.runtime.remat = 1;
            jo.runtime.online_placement = 1; /* DTR allocates online */
            jo.plan.policy = tsl_policy_find("vanilla"); /* a replan: vanilla's plan again */
        } else {
            jo.runtime.evict = evict_lru;
            jo.runtime.evict_user = e->g;
        }
        tsl_device_profile pdev;
        tsl_workload *w = NULL;
        tsl_plan *p = NULL;
        tsl_plan_opts vo = tsl_plan_opts_default();
        vo.policy = tsl_policy_find("vanilla");
        tsl_status st = tsl_job_default_profile(t->profile, t->pcie_gbps, capacity, &pdev);
        jo.device_profile = &pdev;
        if (st == TSL_OK) st = tsl_job_workload_new(e->g, &jo, &pdev, &w);
        if (st == TSL_OK) {
            st = tsl_plan_jobs(&w, 1, &pdev, &vo, &p, NULL);
            if (st == TSL_ERR_BUDGET) st = TSL_OK; /* vanilla over the device: the passive mode */
        }
        if (st == TSL_OK) {
            st = tsl_job_new_planned(e->g, &jo, w, p, &made);
            w = NULL;
            p = NULL;
        }
        tsl_workload_free(w);
        tsl_plan_free(p);
        if (st != TSL_OK) {
            snprintf(r->error, sizeof r->error, "%s", tsl_last_error());
            r->refused = st == TSL_ERR_OOM;
            if (!r->refused) fprintf(stderr, "tensile run: %s: %s\n", t->policy, r->error);
            return r->refused;
        }
        *dev = *tsl_job_profile(made);
        if (!runner_open_job(e, u, capacity, n_iter, NULL, &jo, made, r)) {
            fprintf(stderr, "tensile run: %s: %s\n", t->policy, r->error);
            runner_close(u);
            return 0;
        }
        if (online_dtr(t) && !passive_plan(e, u, capacity, budget, lat_us, 0, pr)) {
            runner_close(u);
            return 0;
        }
        return 1; /* Capuchin: the prediction comes with the plan (passive_plan) */
    }
    if (!runner_open(e, u, capacity, n_iter, NULL, &jo, r)) {
        int refused = r->refused; /* reported by the caller */
        if (!refused) fprintf(stderr, "tensile run: %s: %s\n", t->policy, r->error);
        runner_close(u);
        return refused;
    }
    *dev = *tsl_job_profile(u->job);
    if (!predict(u->job, pr)) {
        runner_close(u);
        return 0;
    }
    return 1;
}

/* ---- output ------------------------------------------------------------------------ */

static double ratio_or_zero(double a, double b) { return b > 0 ? a / b : 0; }

static json_t *json_run(const run_result *r, int scheduled) {
    json_t *o = json_object();
    char ck[32];
    snprintf(ck, sizeof ck, "%016llx", (unsigned long long)r->checksum);
    json_object_set_new(o, "peak_load_bytes", json_integer((json_int_t)r->peak_load));
    json_object_set_new(o, "footprint_bytes", json_integer((json_int_t)r->peak_fp));
    json_object_set_new(o, "iter_ms", json_real(r->iter_ms));
    json_object_set_new(o, "kernel_ms", json_real(r->kernel_ms));
    json_object_set_new(o, "param_checksum", json_string(ck));
    if (scheduled) {
        const tsl_runtime_stats *s = &r->js.runtime;
        json_object_set_new(o, "swaps", json_integer(s->swaps_out));
        json_object_set_new(o, "recomputes", json_integer(s->recomputes));
        json_object_set_new(o, "passive_swaps", json_integer(s->passive_swaps));
        json_object_set_new(o, "evictions", json_integer(s->evictions));
        json_object_set_new(o, "drops", json_integer(s->drops));
        json_object_set_new(o, "remats", json_integer(s->remats));
        json_object_set_new(o, "displaced", json_integer(s->displaced));
        json_object_set_new(o, "stall_ms", json_real(s->stall_ms));
        json_object_set_new(o, "replans", json_integer(r->js.replans));
        json_object_set_new(o, "swaps_in", json_integer(s->swaps_in));
        json_object_set_new(o, "stalls", json_integer(s->stalls));
        json_object_set_new(o, "bytes_h2d", json_integer((json_int_t)s->bytes_h2d));
        json_object_set_new(o, "bytes_d2h", json_integer((json_int_t)s->bytes_d2h));
        if (r->js.replans)
            json_object_set_new(o, "replan_reason", json_string(r->js.last_replan_reason));
    }
    return o;
}

/* The command once its arguments are parsed; returns the exit status. */
static int run_parsed(run_opts t) {
    if (!tool_check_model("run", "--model", t.model)) return 2;
    {
        /* the profile the plan will use, read before any run: a corrupt
         * calibration must stop the command at once, not after vanilla ran */
        tsl_device_profile probe;
        if (t.planned && tsl_job_default_profile(t.profile, t.pcie_gbps, 1, &probe) != TSL_OK) {
            fprintf(stderr, "tensile run: %s%s\n", t.profile ? "--profile: " : "profile: ",
                    tsl_last_error());
            if (!t.profile)
                fprintf(stderr, "tensile run: run 'tensile calibrate' again, or give --profile\n");
            return t.profile ? 2 : 1;
        }
    }
    run_env e = {.o = &t};
    e.cfg = tsl_model_cfg_default(t.model);
    e.cfg.batch = t.batch;
    e.cfg.seed = t.seed;
    if (t.dataset == 0) {
        e.cfg.in_channels = 1;
        e.cfg.image_size = 28;
        e.cfg.n_classes = 10;
    } else if (t.image) {
        e.cfg.image_size = t.image;
    }
    tsl_optimizer_cfg opt = t.optimizer ? tsl_adam_default((float)t.lr) : tsl_sgd_default((float)t.lr);
    opt.step = (tsl_optimizer_step)t.step;
    int build_rc;
    e.g = tool_build_training_graph("run", t.model, &e.cfg, &opt, &build_rc);
    if (!e.g) return build_rc;
    int rc = 0;
    if (!load_data(&e, &rc)) {
        tsl_graph_free(e.g);
        return rc;
    }
    e.img = (size_t)e.cfg.in_channels * e.cfg.image_size * e.cfg.image_size;
    e.lbl = !strcmp(t.model, "unet") ? (size_t)e.cfg.image_size * e.cfg.image_size : 1;
    e.x = malloc(sizeof *e.x * e.img * (size_t)t.batch);
    e.y = malloc(sizeof *e.y * e.lbl * (size_t)t.batch);
    int32_t n_ops = tsl_graph_n_ops(e.g);
    int64_t n_iter = t.iterations;
    if (t.epochs) {
        tsl_batcher *b = tsl_batcher_new(&e.train, t.batch, t.seed, 1);
        n_iter = (int64_t)t.epochs * (b ? tsl_batcher_batches_per_epoch(b) : 1);
        tsl_batcher_free(b);
    }
    tsl_predictor *pred = NULL; /* --cold-start */
    cold_report cold;
    memset(&cold, 0, sizeof cold);
    if (t.cold_start) {
        if (!t.cs_iters) t.cs_iters = n_iter > 5 ? 5 : n_iter - 1;
        if (t.cs_iters < 1 || t.cs_iters >= n_iter) {
            fprintf(stderr, "tensile run: --cold-start-iters %lld: the update must come before "
                            "the last of the %lld iterations (give more --iterations)\n",
                    (long long)t.cs_iters, (long long)n_iter);
            tsl_dataset_free(&e.train);
            tsl_dataset_free(&e.test);
            tsl_graph_free(e.g);
            return 2;
        }
        pred = cold_load(t.predictor, cold.predictor, sizeof cold.predictor);
        if (!pred) {
            tsl_dataset_free(&e.train);
            tsl_dataset_free(&e.test);
            tsl_graph_free(e.g);
            return t.predictor ? 2 : 1;
        }
    }
    runner V, T; /* the vanilla run and the policy's (closed at `out`) */
    json_t *v_iters = NULL, *t_iters = NULL;
    memset(&V, 0, sizeof V);
    memset(&T, 0, sizeof T);
    double *lat = malloc(sizeof *lat * WARMUP * (size_t)n_ops);
    double *lat_us = malloc(sizeof *lat_us * (size_t)n_ops);
    tsl_mem_report dry;
    if (!e.x || !e.y || !lat || !lat_us) {
        fprintf(stderr, "tensile run: out of host memory\n");
        rc = 1;
        goto out;
    }
    /* room for vanilla: its dry-run footprint is exact (same allocator) */
    if (tsl_graph_dry_run(e.g, SIZE_MAX / 4, &dry) != TSL_OK) {
        fprintf(stderr, "tensile run: %s\n", tsl_last_error());
        rc = 1;
        goto out;
    }
    /* (the dry run counts the reference kernels' workspace; a fast kernel's
     * scratch can be larger, one op at a time: the backend the sessions
     * will use says, from an arena that is reserved, never touched) */
    size_t max_ws = 0;
    {
        tsl_session_opts so = session_opts(&t, 0);
        tsl_backend *probe = NULL;
        tsl_status st = tsl_cpu_backend_new((size_t)1 << 20, so.kernels, so.nthreads, &probe);
        for (int32_t i = 0; i < n_ops && st == TSL_OK; i++) {
            size_t ws;
            st = probe->iface->op_workspace(probe, e.g, tsl_graph_op(e.g, i), &ws);
            if (ws > max_ws) max_ws = ws;
        }
        tsl_backend_free(probe);
        if (st != TSL_OK) {
            fprintf(stderr, "tensile run: kernel workspaces: %s\n", tsl_last_error());
            rc = 1;
            goto out;
        }
    }
    size_t roomy = dry.peak_footprint + (dry.peak_footprint >> 2) + max_ws + ((size_t)16 << 20);
    size_t budget = t.budget_pct > 0 ? (size_t)((double)dry.peak_load * t.budget_pct / 100.0) : t.budget;
    char b1[32], b2[32], b3[32];
    if (t.budget_pct > 0 && budget == 0) {
        /* a percentage that rounds to no memory is no budget at all: refused */
        fprintf(stderr, "tensile run: --device-memory: %g%% of vanilla's peak load (%s, %zu "
                "bytes) is less than 1 byte\ntry 'tensile run --help'\n", t.budget_pct,
                fmt_bytes(dry.peak_load, b1, sizeof b1), dry.peak_load);
        rc = 2;
        goto out;
    }
    if (!t.json || !t.quiet)
        fprintf(stderr, "tensile run: %s, batch %d, %s, %lld iterations, %d threads, budget %s, "
                        "copy channels %s\n",
                t.model, t.batch, t.dataset ? "synthetic" : "fashion-mnist", (long long)n_iter, t.threads,
                budget ? fmt_bytes(budget, b1, sizeof b1) : "none",
                t.pcie_gbps > 0 ? "throttled" : "unthrottled");
    if (t.pcie_gbps > 0 && (!t.json || !t.quiet))
        fprintf(stderr, "tensile run: each copy channel at %g GB/s\n", t.pcie_gbps);
    if (!t.json || !t.quiet) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        fprintf(stderr, "tensile run: threads: %d kernel thread%s (OpenMP)%s, %s on %ld "
                        "online CPU%s (%s)\n",
                t.threads, t.threads == 1 ? "" : "s", t.planned ? " for both runs" : "",
                t.planned ? "the 2 copy channels (host to device, device to host) on threads "
                           "of their own, mostly asleep"
                         : "no copy channels (vanilla)",
                cpus, cpus == 1 ? "" : "s", t.threads_default ? "the default; --threads to change"
                                                              : "--threads");
    }

    /* vanilla, in the budget if there is one: its first iterations alone
     * (the latency table), the rest side by side with the policy's run */
    run_result van, sched;
    char refused_msg[512] = "";
    int vanilla_refused = 0;
    int64_t warm = t.planned ? (n_iter < WARMUP ? n_iter : WARMUP) : n_iter;
    tsl_progress p;
    int vok = runner_open(&e, &V, budget ? budget : roomy, n_iter, lat, NULL, &van);
    if (vok) {
        progress_begin(&p, t.planned ? "vanilla (kernel times)" : "vanilla", warm, t.quiet);
        while (vok && V.done < warm) {
            vok = runner_step(&e, &V);
            progress_update(&p, V.done, NULL);
        }
        progress_end(&p);
    }
    if (!vok && van.refused && budget) {
        vanilla_refused = 1;
        snprintf(refused_msg, sizeof refused_msg, "%s", van.error);
        fprintf(stderr, "vanilla in %s: refused: %s\n", fmt_bytes(budget, b1, sizeof b1), refused_msg);
        runner_close(&V);
        if (!t.planned) {
            rc = 3;
            goto out;
        }
        fprintf(stderr, "vanilla figures below: the same run on a device of %s\n",
                fmt_bytes(roomy, b1, sizeof b1));
        vok = runner_open(&e, &V, roomy, n_iter, lat, NULL, &van);
        progress_begin(&p, "vanilla (kernel times)", warm, t.quiet);
        while (vok && V.done < warm) {
            vok = runner_step(&e, &V);
            progress_update(&p, V.done, NULL);
        }
        progress_end(&p);
    }
    if (!vok) {
        fprintf(stderr, "tensile run: vanilla: %s\n", van.error);
        rc = van.refused ? 3 : 1;
        goto out;
    }

    prediction pr;
    memset(&pr, 0, sizeof pr);
    struct {
        int done;                /* Capuchin's passive first iteration ran */
        double ms;               /* its time */
        tsl_runtime_stats rs;    /* the runtime's counts at its end */
    } passive;
    memset(&passive, 0, sizeof passive);
    char trace_error[600] = "";
    tsl_device_profile dev;
    memset(&dev, 0, sizeof dev);
    int tok = 1;
    if (t.planned) {
        if (!pred && tsl_job_latency_medians(lat, warm, n_ops, lat_us) != TSL_OK) {
            rc = 1;
            goto out;
        }
        if (t.budget_plan && passive_first(&t)) {
            fprintf(stderr, "tensile run: --device-memory plan: %s plans after its passive first "
                            "iteration, in a device of a given size: give SIZE or P%%\n",
                    t.policy);
            rc = 2;
            goto out;
        }
        if (t.budget_plan) { /* the device sized to the plan: planned once with no budget, */
            if (!open_planned(&e, &T, roomy, 0, lat_us, pred, n_iter, &sched, &pr, &dev)) { /* probe */
                rc = 1;
                goto out;
            }
            runner_close(&T); /* planning is deterministic: the same latencies, the same plan */
            double want = (double)pr.planned_footprint * (1.0 + t.budget_plan_pct / 100.0);
            budget = ((size_t)want + TSL_ALLOC_ALIGN - 1) / TSL_ALLOC_ALIGN * TSL_ALLOC_ALIGN;
            if (!t.json || !t.quiet)
                fprintf(stderr, "tensile run: device memory: the plan's footprint %s + %g %% = %s\n",
                        fmt_bytes(pr.planned_footprint, b1, sizeof b1), t.budget_plan_pct,
                        fmt_bytes(budget, b2, sizeof b2));
            memset(&sched, 0, sizeof sched);
        }
        if (!open_planned(&e, &T, budget ? budget : roomy, budget, lat_us, pred, n_iter, &sched, &pr,
                          &dev)) {
            rc = 1;
            goto out;
        }
        tok = T.s != NULL; /* else refused: the device is below the op floor */
        double predicted_s = pr.sim_iter_us * 1e-6 * (double)n_iter;
        if (tok && predicted_s > LONG_RUN_S)
            fprintf(stderr, "tensile run: note: the plan predicts %.3g s per iteration%s, about "
                    "%.0f s (%.1f h) for %lld iterations\n", pr.sim_iter_us * 1e-6,
                    t.pcie_gbps > 0 ? " with the channels throttled" : "", predicted_s,
                    predicted_s / 3600, (long long)n_iter);
        /* side by side: one iteration of the policy's run, one of vanilla */
        char label[96];
        snprintf(label, sizeof label, "%s | vanilla", t.policy);
        progress_begin(&p, label, n_iter, t.quiet);
        while (tok && vok && T.done < n_iter) {
            tok = runner_step(&e, &T);
            if (tok && T.done == 1 && passive_first(&t)) {
                /* Capuchin: that was its passive iteration; its plan now */
                tsl_session_runtime_stats(T.s, &passive.rs);
                passive.ms = T.ms[0];
                passive.done = 1;
                tok = passive_plan(&e, &T, budget ? budget : roomy, budget, NULL, 1, &pr);
                if (!tok) {
                    progress_end(&p);
                    rc = 1;
                    goto out;
                }
            }
            if (tok && V.done < n_iter) vok = runner_step(&e, &V);
            progress_update(&p, T.done, NULL);
        }
        progress_end(&p);
        if (tok && T.job) tsl_job_get_stats(T.job, &sched.js);
        if (tok && pred) {
            cold_phases(T.ms, T.fp, T.installs, T.done, &cold);
            cold.predict_ms = sched.js.predict_ms;
            cold.utilisation = sched.js.utilisation;
            cold.updated = sched.js.updated;
            cold.updated_at = sched.js.updated_at;
            snprintf(cold.update_reason, sizeof cold.update_reason, "%s", sched.js.update_reason);
        }
    }
    /* every iteration's time in order, for --json (runner_time sorts) */
    v_iters = json_array();
    t_iters = json_array();
    for (int64_t i = 0; i < V.done; i++) json_array_append_new(v_iters, json_real(V.ms[i]));
    for (int64_t i = 0; i < T.done; i++) json_array_append_new(t_iters, json_real(T.ms[i]));
    if (vok) {
        runner_time(&V, warm, n_iter);
        vok = runner_finish(&e, &V, roomy);
    }
    if (!vok) {
        fprintf(stderr, "tensile run: vanilla: %s\n", van.error);
        rc = van.refused ? 3 : 1;
        goto out;
    }
    if (t.planned) {
        if (tok) {
            runner_time(&T, 1, n_iter - warm + 1);
            tok = runner_finish(&e, &T, roomy);
        }
        if (tok && t.trace && tsl_session_write_trace(T.s, t.trace) != TSL_OK) {
            /* the results are still printed; the status says the trace is lost */
            snprintf(trace_error, sizeof trace_error, "%s", tsl_last_error());
            rc = 1;
        }
        if (!tok) {
            fprintf(stderr, "tensile run: %s: %s\n", t.policy, sched.error);
            rc = sched.refused ? 3 : 1;
            goto out;
        }
    } else {
        sched = van; /* the policy is vanilla: its run is the baseline */
    }

    /* MSR on the footprint, what the device must hold (the paper's V-A);
     * on the load beside it */
    double msr = 1.0 - ratio_or_zero((double)sched.peak_fp, (double)van.peak_fp);
    double msr_load = 1.0 - ratio_or_zero((double)sched.peak_load, (double)van.peak_load);
    double eor = ratio_or_zero(sched.iter_ms, van.iter_ms);
    double cbr = ratio_or_zero(msr, eor);
    if (pred) cold_finish(&cold, van.iter_ms, van.peak_fp, V.ms[0]);
    /* predicted: the planner's, against vanilla laid out as well (tensile
     * plan's MSR). The measured MSR is against vanilla as its executor
     * holds it, with the online allocator's fragmentation: beside it, the
     * MSR the plan's footprint would have against that same measured
     * vanilla, which is what the runtime answers for */
    double pmsr = t.planned ? 1.0 - ratio_or_zero((double)pr.planned_footprint,
                                                 (double)pr.vanilla_footprint) : 0;
    double held_msr = t.planned ? 1.0 - ratio_or_zero((double)pr.planned_footprint,
                                                     (double)van.peak_fp) : 0;
    double pmsr_load = t.planned ? 1.0 - ratio_or_zero((double)pr.planned_peak,
                                                      (double)pr.vanilla_peak) : 0;
    double peor = t.planned ? ratio_or_zero(pr.sim_iter_us, pr.sim_vanilla_iter_us) : 1;
    /* the simulator's MSR for the same plan (steady-state peaks) */
    double smsr = t.planned ? 1.0 - ratio_or_zero((double)pr.sim_peak, (double)pr.sim_vanilla_peak) : 0;
    int identical = sched.checksum == van.checksum;
    const char *pname = t.policy;
    if (t.json) {
        json_t *o = json_object();
        json_object_set_new(o, "model", json_string(t.model));
        json_object_set_new(o, "batch", json_integer(t.batch));
        json_object_set_new(o, "policy", json_string(pname));
        json_object_set_new(o, "iterations", json_integer(n_iter));
        json_object_set_new(o, "dataset", json_string(t.dataset ? "synthetic" : "fashion-mnist"));
        json_object_set_new(o, "threads", json_integer(t.threads));
        json_object_set_new(o, "device_memory_bytes", json_integer((json_int_t)budget));
        json_object_set_new(o, "pcie_gbps", json_real(t.pcie_gbps));
        json_t *v = json_run(&van, 0), *s = json_run(&sched, 1);
        json_object_set_new(v, "refused", json_boolean(vanilla_refused));
        if (vanilla_refused) json_object_set_new(v, "refused_message", json_string(refused_msg));
        if (t.eval) {
            json_object_set_new(v, "test_accuracy", json_real(van.accuracy));
            json_object_set_new(s, "test_accuracy", json_real(sched.accuracy));
            json_object_set_new(s, "evaluated_outside_budget", json_boolean(sched.eval_elsewhere));
        }
        if (t.planned) {
            json_object_set_new(s, "predicted_peak_bytes", json_integer((json_int_t)pr.planned_peak));
            json_object_set_new(s, "predicted_footprint_bytes",
                                json_integer((json_int_t)pr.planned_footprint));
            json_object_set_new(v, "predicted_footprint_bytes",
                                json_integer((json_int_t)pr.vanilla_footprint));
            /* DTR online: its run in a device of the budget is the test */
            json_object_set_new(o, "budget_met", json_boolean(online_dtr(&t) || pr.budget_met));
        }
        json_object_set_new(v, "iteration_ms", json_incref(v_iters));
        json_object_set_new(s, "iteration_ms", json_incref(t_iters));
        if (passive.done) {
            json_t *pa = json_object();
            json_object_set_new(pa, "iter_ms", json_real(passive.ms));
            json_object_set_new(pa, "evictions", json_integer(passive.rs.evictions));
            json_object_set_new(pa, "passive_swaps", json_integer(passive.rs.passive_swaps));
            json_object_set_new(s, "passive_iteration", pa);
        }
        json_object_set_new(o, "vanilla", v);
        json_object_set_new(o, "scheduled", s);
        json_object_set_new(o, "msr", json_real(msr));
        json_object_set_new(o, "msr_load", json_real(msr_load));
        json_object_set_new(o, "eor", json_real(eor));
        json_object_set_new(o, "cbr", json_real(cbr));
        json_object_set_new(o, "predicted_msr", json_real(pmsr));
        json_object_set_new(o, "predicted_msr_load", json_real(pmsr_load));
        json_object_set_new(o, "predicted_msr_measured_vanilla", json_real(held_msr));
        json_object_set_new(o, "predicted_eor", json_real(peor));
        json_object_set_new(o, "simulated_msr", json_real(smsr));
        json_object_set_new(o, "identical", json_boolean(identical));
        if (pred) cold_json(&cold, o);
        char *str = json_dumps(o, JSON_COMPACT);
        puts(str);
        free(str);
        json_decref(o);
    } else {
        printf("%-22s %18s %18s\n", "", vanilla_refused ? "vanilla (refused)*" : "vanilla", pname);
        printf("%-22s %18s %18s\n", "peak load", fmt_bytes(van.peak_load, b1, sizeof b1),
               fmt_bytes(sched.peak_load, b2, sizeof b2));
        printf("%-22s %18s %18s\n", "footprint", fmt_bytes(van.peak_fp, b1, sizeof b1),
               fmt_bytes(sched.peak_fp, b2, sizeof b2));
        printf("%-22s %15.2f ms %15.2f ms\n", "iteration (median)", van.iter_ms, sched.iter_ms);
        printf("%-22s %15.2f ms %15.2f ms\n", "  of which kernels", van.kernel_ms, sched.kernel_ms);
        if (t.eval)
            printf("%-22s %17.2f%% %16.2f%%%s\n", "test accuracy", 100 * van.accuracy, 100 * sched.accuracy,
                   sched.eval_elsewhere ? "+" : " ");
        printf("%-22s %18.16llx %18.16llx\n", "parameter checksum", (unsigned long long)van.checksum,
               (unsigned long long)sched.checksum);
        if (vanilla_refused)
            printf("* vanilla does not fit in %s (see its message above); its figures are from a "
                   "device of %s\n",
                   fmt_bytes(budget, b1, sizeof b1), fmt_bytes(roomy, b2, sizeof b2));
        if (t.eval && sched.eval_elsewhere)
            printf("+ evaluated with the trained parameters on a device of %s: the budget holds the "
                   "scheduled training, not a vanilla evaluation pass\n",
                   fmt_bytes(roomy, b1, sizeof b1));
        if (t.planned)
            printf("memory saved: %s of vanilla's %s footprint (%.1f %%), at %.3fx vanilla's "
                   "iteration time\n",
                   fmt_bytes(van.peak_fp > sched.peak_fp ? van.peak_fp - sched.peak_fp : 0, b1,
                             sizeof b1),
                   fmt_bytes(van.peak_fp, b2, sizeof b2), 100 * msr, eor);
        printf("MSR %.3f (planned %.3f against vanilla laid out as well; %.3f against vanilla as "
               "measured), MSR on the load %.3f (planned %.3f, simulated %.3f), EOR %.3f "
               "(simulated %.3f), CBR %.3f\n",
               msr, pmsr, held_msr, msr_load, pmsr_load, smsr, eor, peor, cbr);
        if (t.planned) {
            const tsl_runtime_stats *s = &sched.js.runtime;
            char b4[32], b5[32];
            printf("plan%s: %d swaps, %d recomputations per iteration, predicted footprint %s "
                   "(vanilla %s), peak load %s (vanilla %s), planned in %.1f ms on profile '%s'%s\n",
                   online_dtr(&t) ? " (DTR's decisions simulated over one iteration, the prediction "
                                    "of its online run)" : "",
                   pr.swaps, pr.recomputes, fmt_bytes(pr.planned_footprint, b1, sizeof b1),
                   fmt_bytes(pr.vanilla_footprint, b2, sizeof b2),
                   fmt_bytes(pr.planned_peak, b4, sizeof b4), fmt_bytes(pr.vanilla_peak, b5, sizeof b5),
                   pr.planning_ms, dev.name, pr.budget_met ? ""
                   : "; the budget is NOT met: the runtime evicts on demand to stay within the "
                     "device (slower than a plan)");
            printf("done: %lld swap-outs (%s), %lld swap-ins (%s), %lld recomputations, %lld passive "
                   "swap-ins, %lld evictions, %lld drops, %lld rematerialisations, %lld displaced, "
                   "%lld stalls (%.2f ms), %lld replans%s%s\n",
                   (long long)s->swaps_out, fmt_bytes(s->bytes_d2h, b1, sizeof b1), (long long)s->swaps_in,
                   fmt_bytes(s->bytes_h2d, b3, sizeof b3), (long long)s->recomputes,
                   (long long)s->passive_swaps, (long long)s->evictions, (long long)s->drops,
                   (long long)s->remats,
                   (long long)s->displaced, (long long)s->stalls,
                   s->stall_ms, (long long)sched.js.replans, sched.js.replans ? ": " : "",
                   sched.js.replans ? sched.js.last_replan_reason : "");
        }
        if (pred) cold_print(&cold);
        if (passive.done)
            printf("passive mode: the first iteration ran with no plan in %.2f ms (%lld evictions, "
                   "%lld passive swap-ins); the plan above was made from its kernel times and "
                   "followed from the second (its time is left out of the median)\n",
                   passive.ms, (long long)passive.rs.evictions,
                   (long long)passive.rs.passive_swaps);
        printf("final parameters bitwise identical to vanilla's: %s\n", identical ? "yes" : "NO");
    }
    if (trace_error[0]) fprintf(stderr, "tensile run: --trace: %s\n", trace_error);
    if (!identical) {
        fprintf(stderr, "tensile run: the final parameters differ from vanilla's (%016llx, %016llx)\n",
                (unsigned long long)van.checksum, (unsigned long long)sched.checksum);
        rc = 4;
    }
out:
    json_decref(v_iters);
    json_decref(t_iters);
    runner_close(&V);
    runner_close(&T);
    free(lat);
    free(lat_us);
    tsl_predictor_free(pred);
    free(e.x);
    free(e.y);
    tsl_dataset_free(&e.train);
    tsl_dataset_free(&e.test);
    tsl_graph_free(e.g);
    return rc;
}

int cmd_run(int argc, char **argv) {
    for (int i = 0; i < argc; i++) /* under the daemon: run_connected.c */
        if (!strcmp(argv[i], "--connect")) return cmd_run_connected(argc, argv);
    run_opts t;
    parse(argc, argv, &t);
    int rc = run_parsed(t);
    tsl_policy_opts_free(t.popts);
    return rc;
}
