/*
 * bench_cold.c - TENSILE's Tables I and II (seed 004, section V-B): the
 * cold start, where a job's first plan is made from predicted latencies
 * (the latency predictor, tensile/predict.h) and the update then replans
 * from the measured ones.
 *
 * --backend sim, at the paper's shapes (its five models at batch 16, Adam;
 * --quick: resnet18 at batch 4, 32 px), on this machine's CPU device with
 * its copy channels at BP_REAL_GBPS:
 *   - the latencies the simulation takes as the truth are measured once:
 *     two vanilla iterations on the CPU backend (one kernel thread, the
 *     first left out: tsl_job_latency_medians);
 *   - TENSILE_cs: the plan made from the predictor's latencies (at the
 *     utilisation measured just before), verified on that timeline and
 *     simulated where the measured latencies hold: a mispredicted copy
 *     makes compute wait;
 *   - TENSILE_up: the plan made from the measured latencies (what the
 *     update's EWMA converges to), simulated alike;
 *   - Table II: the cold-start plan's simulated iteration is the first
 *     iteration (the simulator has no cold caches), and the prediction's
 *     time is measured. Capuchin's passive mode (evict on out-of-memory)
 *     has no simulation: its rows are real runs only.
 * --backend cpu, for real at issue 9's small shapes: `tensile run
 * --cold-start` (this program again) with the device sized to the
 * cold-start plan's footprint + 1 %, and Capuchin in that device (the
 * paper's "Extra Setting": its budget is TENSILE's footprint), its first
 * iteration in passive mode; every ratio against vanilla trained in the
 * same process.
 *
 * Without a predictor file (profiles/predictor.tsp, or --predictor) the
 * tables say how to make one and hold no number.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_paper.h"
#include "commands.h"
#include "tensile/job.h"
#include "tensile/predict.h"
#include "tensile/session.h"

/* The paper's five models (V-A), and the reduced set. */
static const char *const MODELS[] = {"vgg16", "inception3", "inception4", "resnet50",
                                     "densenet121"};
/* The real runs' shapes (issue 9's: small enough for two cores). */
static const bm_spec REAL[] = {{"resnet18", 24, 40, 0, BP_STEP}, {"vgg11", 16, 32, 0, BP_STEP},
                               {"densenet121", 7, 48, 0, BP_STEP}};
#define REAL_ITERS 10    /* iterations of a real run */
#define REAL_CS_ITERS 4  /* the update after this many */
#define MEASURE_ITERS 2  /* vanilla iterations measured for the simulation's truth */

static const char *const COLS1[] = {"model", "phase", "MSR", "EOR", "CBR", "paper MSR",
                                    "paper EOR", "paper CBR", "planned footprint MiB",
                                    "swaps", "recomputes", "status"};
static const char *const COLS2[] = {"model", "method", "first-iteration EOR", "prediction ms",
                                    "prediction EOR", "paper EOR", "paper prediction s",
                                    "paper prediction EOR", "status"};

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The predictor of c (its path into used), or NULL with the reason in why. */
static tsl_predictor *load_predictor(const bp_ctx *c, char *used, size_t cap, char *why,
                                     size_t wcap) {
    if (c->predictor) snprintf(used, cap, "%s", c->predictor);
    else tsl_predictor_default_path(used, cap);
    tsl_predictor *p = NULL;
    if (tsl_predictor_load(used, &p) == TSL_OK) return p;
    snprintf(why, wcap, "no predictor: %.200s (make one with `tensile profile`, "
             "docs/PREDICTOR.md, or give --predictor FILE)", tsl_last_error());
    return NULL;
}

/* A row of each table saying why there are no numbers. */
static void no_numbers(bt_table *t1, bt_table *t2, const char *model, const char *why) {
    int r = bt_row(t1);
    bt_set(t1, r, "model", "%s", model);
    bt_set(t1, r, "status", "%s", why);
    r = bt_row(t2);
    bt_set(t2, r, "model", "%s", model);
    bt_set(t2, r, "status", "%s", why);
}

/* Table I's row of one phase. */
static void phase_row(bt_table *t, const char *model, const char *label, const char *phase,
                      const bm_result *m) {
    int r = bt_row(t);
    bt_set(t, r, "model", "%s", model);
    bt_set(t, r, "phase", "%s", label);
    bp_set_metrics(t, r, m);
    bp_set_paper(t, r, pn_tensile_table1(model, phase), "-");
    if (bm_has_numbers(m)) {
        bt_set(t, r, "planned footprint MiB", "%.1f", bp_mib(m->planned_fp));
        bt_set(t, r, "swaps", "%d", m->swaps);
        bt_set(t, r, "recomputes", "%d", m->recomputes);
    }
}

/* Table II's paper columns for (model, method). */
static void paper_first(bt_table *t, int r, const char *model, const char *method) {
    const pn_first_iter *p = pn_tensile_table2(model, method);
    if (!p) {
        bt_set(t, r, "paper EOR", "-");
        return;
    }
    bt_set(t, r, "paper EOR", "%.4f", p->eor);
    if (p->predict_s >= 0) bt_set(t, r, "paper prediction s", "%.4f", p->predict_s);
    else bt_set(t, r, "paper prediction s", "-");
    if (p->predict_eor >= 0) bt_set(t, r, "paper prediction EOR", "%.4f", p->predict_eor);
    else bt_set(t, r, "paper prediction EOR", "-");
}

/* One job of workload w (taken over) on dev. 0, or -1 (w freed, message). */
static int one_job(bm_jobs *J, tsl_workload *w, const tsl_device_profile *dev) {
    memset(J, 0, sizeof *J);
    J->w = calloc(1, sizeof *J->w);
    J->offset_us = calloc(1, sizeof *J->offset_us);
    if (!J->w || !J->offset_us) {
        fprintf(stderr, "tensile bench: out of host memory\n");
        tsl_workload_free(w);
        bm_jobs_free(J);
        return -1;
    }
    J->n = 1;
    J->w[0] = w;
    J->dev = dev;
    return 0;
}

/* Measures g's per-op latencies (µs, n_ops) over MEASURE_ITERS vanilla
 * iterations on the CPU backend with synthetic data; 0, or -1 with why. */
static int measure_latencies(const tsl_graph *g, const tsl_model_cfg *cfg, double *us,
                             char *why, size_t wcap) {
    tsl_mem_report dry;
    if (tsl_graph_dry_run(g, SIZE_MAX / 4, &dry) != TSL_OK) {
        snprintf(why, wcap, "failed: dry run: %.200s", tsl_last_error());
        return -1;
    }
    tsl_session_opts so = tsl_session_opts_default();
    so.device_memory = dry.peak_footprint + dry.peak_footprint / 2 + ((size_t)256 << 20);
    tsl_session *s = NULL;
    if (tsl_session_new(g, &so, &s) != TSL_OK) {
        snprintf(why, wcap, "failed: session: %.200s", tsl_last_error());
        return -1;
    }
    int32_t n_ops = tsl_graph_n_ops(g);
    size_t img = (size_t)cfg->in_channels * (size_t)cfg->image_size * (size_t)cfg->image_size;
    float *x = malloc(sizeof *x * img * (size_t)cfg->batch);
    int32_t *y = malloc(sizeof *y * (size_t)cfg->batch);
    double *ms = malloc(sizeof *ms * (size_t)n_ops * MEASURE_ITERS);
    int ok = x && y && ms;
    if (!ok) snprintf(why, wcap, "failed: out of host memory");
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; ok && i < img * (size_t)cfg->batch; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((r >> 40) & 0xffff) / 65536.0f - 0.5f;
    }
    for (int i = 0; ok && i < cfg->batch; i++) y[i] = i % cfg->n_classes;
    for (int it = 0; ok && it < MEASURE_ITERS; it++) {
        tsl_step_stats st;
        if (tsl_session_step(s, x, y, &st) != TSL_OK) {
            snprintf(why, wcap, "failed: vanilla iteration: %.200s", tsl_last_error());
            ok = 0;
        }
        for (int32_t i = 0; ok && i < n_ops; i++)
            ms[(size_t)it * (size_t)n_ops + (size_t)i] = tsl_session_op_ms(s, i);
    }
    if (ok && tsl_job_latency_medians(ms, MEASURE_ITERS, n_ops, us) != TSL_OK) {
        snprintf(why, wcap, "failed: %.200s", tsl_last_error());
        ok = 0;
    }
    free(x);
    free(y);
    free(ms);
    tsl_session_free(s);
    return ok ? 0 : -1;
}

/* Both tables' rows of one model, simulated (see the file's comment). */
static void sim_model(bp_ctx *c, bt_table *t1, bt_table *t2, const tsl_predictor *p,
                      const char *model, int batch, int image) {
    char why[320] = "";
    tsl_model_cfg cfg = tsl_model_cfg_default(model);
    cfg.batch = batch;
    if (image) cfg.image_size = image;
    tsl_optimizer_cfg opt = tsl_adam_default(1e-3f);
    opt.step = BP_STEP;
    tsl_graph *g = tool_build_training_graph("bench", model, &cfg, &opt, NULL);
    if (!g) {
        no_numbers(t1, t2, model, "failed: the model could not be built (above)");
        c->errors++;
        return;
    }
    int32_t n_ops = tsl_graph_n_ops(g);
    double *meas = malloc(sizeof *meas * (size_t)n_ops), *pred = malloc(sizeof *pred * (size_t)n_ops);
    tsl_device_profile dev;
    bm_jobs T = {0}, P = {0};
    int ok = meas && pred;
    if (!ok) snprintf(why, sizeof why, "failed: out of host memory");
    if (ok && tsl_job_default_profile(NULL, BP_REAL_GBPS, (size_t)1 << 40, &dev) != TSL_OK) {
        snprintf(why, sizeof why, "failed: the CPU profile: %.200s", tsl_last_error());
        ok = 0;
    }
    bp_progress(c, "Tables I and II: %s at batch %d: measuring %d vanilla iterations", model,
                batch, MEASURE_ITERS);
    if (ok) ok = measure_latencies(g, &cfg, meas, why, sizeof why) == 0;
    double util = 0, predict_ms = 0, sum_meas = 0, sum_pred = 0;
    if (ok) {
        util = tsl_cpu_utilisation(200);
        if (util < 0) util = 0;
        double t0 = now_ms();
        tsl_predictor_latencies(p, g, util, &dev, pred);
        predict_ms = now_ms() - t0;
        for (int32_t i = 0; i < n_ops; i++) {
            sum_meas += meas[i];
            sum_pred += pred[i];
        }
        char name[96];
        snprintf(name, sizeof name, "%s:%d", model, batch);
        tsl_latency_table tm = {n_ops, meas}, tp = {n_ops, pred};
        tsl_workload *wm = NULL, *wp = NULL;
        if (tsl_workload_from_graph(g, name, &tm, &dev, &wm) != TSL_OK ||
            tsl_workload_from_graph(g, name, &tp, &dev, &wp) != TSL_OK) {
            snprintf(why, sizeof why, "failed: workload: %.200s", tsl_last_error());
            tsl_workload_free(wm);
            tsl_workload_free(wp);
            ok = 0;
        } else ok = one_job(&T, wm, &dev) == 0 && one_job(&P, wp, &dev) == 0;
    }
    if (!ok) {
        no_numbers(t1, t2, model, why[0] ? why : "failed (above)");
        c->errors++;
    } else {
        bm_result cs, up;
        bm_measure_from(&T, &P, "tensile", 0, NULL, &cs);
        bm_measure(&T, "tensile", 0, NULL, &up);
        phase_row(t1, model, "TENSILE_cs", "tensile_cs", &cs);
        phase_row(t1, model, "TENSILE_up", "tensile_up", &up);
        int r = bt_row(t2);
        bt_set(t2, r, "model", "%s", model);
        bt_set(t2, r, "method", "TENSILE");
        if (bm_has_numbers(&cs)) {
            bt_set(t2, r, "first-iteration EOR", "%.4f", cs.eor);
            bt_set(t2, r, "prediction EOR", "%.5f", predict_ms * 1e3 / cs.vanilla_iter_us);
        }
        bt_set(t2, r, "prediction ms", "%.3f", predict_ms);
        paper_first(t2, r, model, "tensile");
        bt_set(t2, r, "status", "%s; predicted iteration %.0f ms, measured %.0f ms (utilisation "
               "%.2f)", bm_state_text(&cs), sum_pred / 1e3, sum_meas / 1e3, util);
        r = bt_row(t2);
        bt_set(t2, r, "model", "%s", model);
        bt_set(t2, r, "method", "Capuchin (passive mode)");
        paper_first(t2, r, model, "capuchin");
        bt_set(t2, r, "status", "real runs only (--backend cpu): the simulator has no eviction on "
               "out-of-memory");
    }
    bm_jobs_free(&T);
    bm_jobs_free(&P);
    free(meas);
    free(pred);
    tsl_graph_free(g);
}

static double jnum(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

/* Table I's row of one phase of a real run's report (its "phases" member). */
static void real_phase_row(bt_table *t, const char *model, const char *label, const char *phase,
                           json_t *ph, const char *none) {
    int r = bt_row(t);
    bt_set(t, r, "model", "%s", model);
    bt_set(t, r, "phase", "%s", label);
    bp_set_paper(t, r, pn_tensile_table1(model, phase), "-");
    if (!ph || json_integer_value(json_object_get(ph, "iterations")) <= 0) {
        bt_set(t, r, "status", "%s", none);
        return;
    }
    bt_set(t, r, "MSR", "%.4f", jnum(ph, "msr"));
    bt_set(t, r, "EOR", "%.4f", jnum(ph, "eor"));
    bt_set(t, r, "CBR", "%.4f", jnum(ph, "cbr"));
    bt_set(t, r, "status", "ok (measured, %lld iterations)",
           (long long)json_integer_value(json_object_get(ph, "iterations")));
}

/* Both tables' rows of one model, for real (see the file's comment). */
static void real_model(bp_ctx *c, bt_table *t1, bt_table *t2, const char *pred_path,
                       const bm_spec *s) {
    char batch[16], image[16], gbps[16], iters[16], csi[16], mem[32];
    snprintf(batch, sizeof batch, "%d", s->batch);
    snprintf(image, sizeof image, "%d", s->image);
    snprintf(gbps, sizeof gbps, "%g", BP_REAL_GBPS);
    snprintf(iters, sizeof iters, "%d", c->quick ? REAL_CS_ITERS + 2 : REAL_ITERS);
    snprintf(csi, sizeof csi, "%d", REAL_CS_ITERS);
    char label[128];
    snprintf(label, sizeof label, "%.63s b%d %dpx", s->model, s->batch, s->image);
    bp_progress(c, "Tables I and II: %s (real runs: TENSILE cold start, Capuchin)", label);
    char *argv[40] = {"tensile", "run", "--model", (char *)s->model, "--batch", batch,
                      "--image-size", image, "--dataset", "synthetic", "--pcie-gbps", gbps,
                      "--iterations", iters, "--device-memory", "plan+1%", "--cold-start",
                      "--cold-start-iters", csi, "--predictor", (char *)pred_path,
                      "--optimizer-step", (char *)tool_step_names[BP_STEP], "--json",
                      "--quiet", NULL};
    int rc;
    json_t *j = bp_run_json(argv, &rc);
    if (!j || !json_is_true(json_object_get(j, "identical"))) {
        char why[160];
        snprintf(why, sizeof why, "failed: tensile run --cold-start %s (exit %d)",
                 j ? "ended with parameters unlike vanilla's" : "gave no report", rc);
        no_numbers(t1, t2, label, why);
        c->errors++;
        json_decref(j);
        return;
    }
    json_t *ph = json_object_get(j, "phases");
    int r = bt_row(t1);
    bt_set(t1, r, "model", "%s", label);
    bt_set(t1, r, "phase", "TENSILE (whole run)");
    bt_set(t1, r, "MSR", "%.4f", jnum(j, "msr"));
    bt_set(t1, r, "EOR", "%.4f", jnum(j, "eor"));
    bt_set(t1, r, "CBR", "%.4f", jnum(j, "cbr"));
    bp_set_paper(t1, r, pn_tensile_table1(s->model, "tensile"), "-");
    bt_set(t1, r, "status", "ok (measured; bitwise identical to vanilla)");
    real_phase_row(t1, label, "TENSILE_cs", "tensile_cs", json_object_get(ph, "cs"), "-");
    const char *reason = json_string_value(json_object_get(j, "update_reason"));
    char none[260];
    snprintf(none, sizeof none, "no updated phase: %.220s", reason ? reason : "no update");
    real_phase_row(t1, label, "TENSILE_up", "tensile_up", json_object_get(ph, "up"), none);

    r = bt_row(t2);
    double van_first = jnum(j, "vanilla_first_iteration_ms");
    bt_set(t2, r, "model", "%s", label);
    bt_set(t2, r, "method", "TENSILE");
    bt_set(t2, r, "first-iteration EOR", "%.4f", jnum(j, "first_iteration_eor"));
    bt_set(t2, r, "prediction ms", "%.3f", jnum(j, "predict_ms"));
    if (van_first > 0) bt_set(t2, r, "prediction EOR", "%.5f", jnum(j, "predict_ms") / van_first);
    paper_first(t2, r, s->model, "tensile");
    bt_set(t2, r, "status", "ok (measured: %.1f ms against vanilla's first %.1f ms)",
           jnum(j, "first_iteration_ms"), van_first);

    /* Capuchin in TENSILE's device: its passive first iteration */
    snprintf(mem, sizeof mem, "%lld",
             (long long)json_integer_value(json_object_get(j, "device_memory_bytes")));
    json_decref(j);
    char *cargv[40] = {"tensile", "run", "--model", (char *)s->model, "--batch", batch,
                       "--image-size", image, "--dataset", "synthetic", "--pcie-gbps", gbps,
                       "--iterations", "2", "--policy", "capuchin", "--device-memory", mem,
                       "--optimizer-step", (char *)tool_step_names[BP_STEP], "--json",
                      "--quiet", NULL};
    j = bp_run_json(cargv, &rc);
    json_t *pa = j ? json_object_get(json_object_get(j, "scheduled"), "passive_iteration") : NULL;
    json_t *vi = j ? json_object_get(json_object_get(j, "vanilla"), "iteration_ms") : NULL;
    r = bt_row(t2);
    bt_set(t2, r, "model", "%s", label);
    bt_set(t2, r, "method", "Capuchin (passive mode)");
    paper_first(t2, r, s->model, "capuchin");
    if (!pa || json_array_size(vi) < 1) {
        bt_set(t2, r, "status", "failed: tensile run --policy capuchin in %s bytes gave no passive "
               "iteration (exit %d)", mem, rc);
        c->errors++;
    } else {
        double v0 = json_number_value(json_array_get(vi, 0));
        bt_set(t2, r, "first-iteration EOR", "%.4f", jnum(pa, "iter_ms") / v0);
        bt_set(t2, r, "prediction ms", "-");
        bt_set(t2, r, "prediction EOR", "-");
        bt_set(t2, r, "status", "ok (measured: %.1f ms against vanilla's first %.1f ms; %lld "
               "evictions in %s bytes)", jnum(pa, "iter_ms"), v0,
               (long long)json_integer_value(json_object_get(pa, "evictions")), mem);
    }
    json_decref(j);
}

void bp_cold_tables(bp_ctx *c) {
    bt_table *t1 = bt_new("tensile_table1", "TENSILE's Table I: each phase's performance (cold "
                          "start, then the update)", 12, COLS1);
    bt_table *t2 = bt_new("tensile_table2", "TENSILE's Table II: the first iteration's time "
                          "cost", 9, COLS2);
    char used[1024], why[320];
    tsl_predictor *p = load_predictor(c, used, sizeof used, why, sizeof why);
    if (!p) {
        no_numbers(t1, t2, "(all)", why);
    } else if (c->cpu) {
        int n = c->quick ? 1 : (int)(sizeof REAL / sizeof *REAL);
        for (int i = 0; i < n; i++) real_model(c, t1, t2, used, &REAL[i]);
    } else if (c->quick) {
        sim_model(c, t1, t2, p, "resnet18", 4, 32);
    } else {
        for (int i = 0; i < (int)(sizeof MODELS / sizeof *MODELS); i++)
            sim_model(c, t1, t2, p, MODELS[i], 16, 0);
    }
    tsl_predictor_free(p);
    const char *how = c->cpu
        ? "Tensile: real runs on the CPU backend (`tensile run --cold-start`, synthetic data, "
          "one kernel thread, copy channels at 2 GB/s, the device sized to the cold-start plan's "
          "footprint + 1 %), the update after 4 iterations; MSR on the allocator's footprints; "
          "EOR against vanilla trained in the same process; Capuchin in the same device, its "
          "first iteration in passive mode against vanilla's first"
        : "Tensile: simulated on this machine's CPU device (copy channels at 2 GB/s) at the "
          "paper's shapes (batch 16, Adam; --quick: resnet18 at batch 4, 32 px): the latencies "
          "taken as the truth measured once (two vanilla iterations on the CPU backend, one "
          "kernel thread, the second kept); TENSILE_cs is the plan made from the predictor's "
          "latencies, simulated where the measured ones hold; TENSILE_up the plan made from the "
          "measured latencies (where the update's EWMA converges). A plan's footprint does not "
          "depend on the latencies it meets, so MSR differs between the phases only where the "
          "plans differ";
    bt_note(t1, "Paper: %s.", pn_cite_tensile_t1);
    bt_note(t1, "%s. Predictor: %s.", how, p ? used : "none");
    bt_note(t2, "Paper: %s.", pn_cite_tensile_t2);
    bt_note(t2, "%s. Prediction EOR: the prediction's time over vanilla's iteration.%s", how,
            c->cpu ? "" : " In the simulation the first iteration is the cold-start plan's "
                          "iteration (Table I's TENSILE_cs EOR): no caches are cold there");
    bp_finish(c, t1);
    bp_finish(c, t2);
}
