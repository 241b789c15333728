/*
 * bench_tensile.c - TENSILE's tables and figures (seed 004, section V) on
 * the simulator: Table III (one workload: vDNN, Capuchin, TENSILE), Fig. 6
 * (1 to 4 identical workloads together), Table IV (the five models
 * together, launched at random phases, three repetitions), Fig. 7 (batch 4
 * to 64), the memory of one iteration per policy (Table III's models).
 * Tables I and II (cold start) are bench_cold.c's.
 *
 * The paper's setting, as Tensile maps it: batch 16, Adam, the --profile
 * device (a6000, the paper's GPU); vDNN is vDNN-conv (the paper's choice,
 * V-A); Capuchin's budget is TENSILE's footprint ("Extra Setting", V-A),
 * and so are the budgets of the extra rows that take one (AutoSwap, DTR).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench_memcurve.h"
#include "bench_paper.h"

/* The five models of TENSILE's evaluation (V-A "Workloads"). */
static const char *const MODELS[] = {"vgg16", "inception3", "inception4", "resnet50",
                                     "densenet121"};
static const char *const QUICK_MODELS[] = {"vgg16", "resnet50"};

/* A compared method: its label, its policy, whether its budget is
 * TENSILE's footprint, whether the paper's table has it. */
typedef struct method {
    const char *label, *policy;
    int at_tensile, in_paper;
} method;

static const method TABLE3[] = {
    {"vDNN", "vdnn-conv", 0, 1},     {"Capuchin", "capuchin", 1, 1}, {"TENSILE", "tensile", 0, 1},
    {"vDNN-all", "vdnn-all", 0, 0},  {"AutoSwap", "autoswap", 1, 0}, {"DTR", "dtr", 1, 0},
};
#define N_TABLE3 ((int)(sizeof TABLE3 / sizeof *TABLE3))
#define N_PAPER 3 /* the first three of TABLE3: the paper's (Table III, Fig. 6, Table IV) */
#define I_TENSILE 2

static void models(const bp_ctx *c, const char *const **m, int *n) {
    *m = c->quick ? QUICK_MODELS : MODELS;
    *n = c->quick ? 2 : 5;
}

/* One measurement: simulated on J, or with --backend cpu real, of the
 * single job `spec` (bench_real.c). */
static bm_state measure(const bp_ctx *c, bm_jobs *J, const bm_spec *spec, const char *policy,
                        size_t budget, const char *trace, bm_result *r) {
    if (c->cpu && spec) return bp_real_measure(spec, policy, budget, r);
    return bm_measure(J, policy, budget, trace, r);
}

/* Measures every method of TABLE3[0 .. nm) on J (or, with --backend cpu
 * and a spec, for real), TENSILE first (its footprint is the others'
 * budget); r[k] for TABLE3[k]. With `curves` (simulated only), each
 * plan's memory over one iteration goes to c->memcsv, vanilla's first. */
static void measure_methods(bp_ctx *c, bm_jobs *J, const bm_spec *spec, int nm, bm_result *r,
                            const char *curves) {
    char trace[4096];
    snprintf(trace, sizeof trace, "%s/.bench-trace-%ld.json", c->out, (long)getpid());
    const char *tp = curves && c->memcsv && !(c->cpu && spec) ? trace : NULL;
    if (tp) {
        bm_result v;
        if (bm_measure(J, "vanilla", 0, tp, &v) == BM_OK &&
            bm_memory_curve(tp, c->memcsv, curves, "vanilla") < 0)
            c->errors++;
    }
    measure(c, J, spec, TABLE3[I_TENSILE].policy, 0, tp, &r[I_TENSILE]);
    if (tp && bm_has_numbers(&r[I_TENSILE]) &&
        bm_memory_curve(tp, c->memcsv, curves, TABLE3[I_TENSILE].policy) < 0)
        c->errors++;
    size_t budget = bm_has_numbers(&r[I_TENSILE]) ? r[I_TENSILE].planned_fp : 0;
    for (int k = 0; k < nm; k++) {
        if (k == I_TENSILE) continue;
        measure(c, J, spec, TABLE3[k].policy, TABLE3[k].at_tensile ? budget : 0, tp, &r[k]);
        if (tp && bm_has_numbers(&r[k]) &&
            bm_memory_curve(tp, c->memcsv, curves, TABLE3[k].policy) < 0)
            c->errors++;
    }
    if (tp) unlink(tp);
}

/* The job of Table III and Fig. 7: batch b of model m, or with --backend
 * cpu its small real shape (batch 8 in Table III, 32x32; the Inceptions at
 * their smallest image, 75x75). */
static bm_spec job(const bp_ctx *c, const char *m, int b) {
    bm_spec s = {.batch = b, .step = BP_STEP};
    snprintf(s.model, sizeof s.model, "%s", m);
    if (c->cpu) s.image = strncmp(m, "inception", 9) ? BP_REAL_IMAGE : 75;
    return s;
}

static const char *const COLS3[] = {
    "model", "method", "policy", "budget", "vanilla footprint MiB", "planned footprint MiB",
    "MSR", "EOR", "CBR", "paper MSR", "paper EOR", "paper CBR", "TENSILE beats it",
    "MSR load", "swaps", "recomputes", "status"};

/* The figures of a row: metrics, status, footprints, swaps. */
static void figure_cols(bt_table *t, int row, const bm_result *r) {
    bp_set_metrics(t, row, r);
    if (bm_has_numbers(r)) {
        bt_set(t, row, "vanilla footprint MiB", "%.1f", bp_mib(r->vanilla_fp));
        bt_set(t, row, "planned footprint MiB", "%.1f", bp_mib(r->planned_fp));
        bt_set(t, row, "MSR load", "%.4f", r->msr_load);
        bt_set(t, row, "swaps", "%d", r->swaps);
        bt_set(t, row, "recomputes", "%d", r->recomputes);
    }
}

/* The columns of one method's row shared by Table III, Fig. 6, Table IV. */
static void method_row(bt_table *t, int row, const method *m, const bm_result *r,
                       const bm_result *tensile) {
    char v[96];
    bt_set(t, row, "method", "%s", m->label);
    bt_set(t, row, "policy", "%s", m->policy);
    bt_set(t, row, "budget", "%s", m->at_tensile ? "TENSILE's footprint" : "device");
    bt_set(t, row, "TENSILE beats it", "%s",
           m == &TABLE3[I_TENSILE] ? "-" : bp_verdict(tensile, r, v, sizeof v));
    figure_cols(t, row, r);
}

static void table3(bp_ctx *c) {
    bt_table *t = bt_new("tensile_table3", c->cpu ? "TENSILE's Table III: single workload "
                         "(measured on the CPU backend)" : "TENSILE's Table III: single workload "
                         "(simulated)",
                         (int)(sizeof COLS3 / sizeof *COLS3), COLS3);
    const char *const *m;
    int nmod;
    models(c, &m, &nmod);
    for (int i = 0; i < nmod; i++) {
        bp_progress(c, "Table III: %s%s", m[i], c->cpu ? " (real runs)" : "");
        bm_spec s = job(c, m[i], c->cpu ? 8 : 16);
        bm_jobs J = {0};
        if (!c->cpu && bm_jobs_build(&J, &s, 1, c->dev) != 0) {
            c->errors++;
            continue;
        }
        bm_result r[N_TABLE3];
        measure_methods(c, &J, &s, N_TABLE3, r, m[i]);
        for (int k = 0; k < N_TABLE3; k++) {
            int row = bt_row(t);
            bt_set(t, row, "model", "%s", m[i]);
            method_row(t, row, &TABLE3[k], &r[k], &r[I_TENSILE]);
            bp_set_paper(t, row, pn_tensile_table3(m[i], TABLE3[k].policy),
                         TABLE3[k].in_paper ? "-" : "not in the paper's table");
        }
        bm_jobs_free(&J);
    }
    bt_note(t, "Paper: %s.", pn_cite_tensile_t3);
    if (c->cpu)
        bt_note(t, "Measured (--backend cpu): `tensile run` per row, batch 8, %dx%d synthetic "
                "images (the Inceptions 75x75), Adam, copy channels throttled to %g GB/s, %d "
                "iterations; vanilla and the policy side by side; MSR on the allocator's "
                "footprints, EOR on wall-clock medians; the budget of Capuchin, AutoSwap and DTR "
                "is TENSILE's measured footprint (--device-memory); DTR runs online in the runtime. "
                "Wall-clock EORs mean something only on an otherwise idle machine.", BP_REAL_IMAGE,
                BP_REAL_IMAGE, BP_REAL_GBPS, BP_REAL_ITERS);
    else
        bt_note(t, "Tensile: batch 16, Adam, profile %s, the simulator (3 iterations, the last "
                "reported). MSR = 1 - planned footprint / vanilla footprint (footprint: the "
                "plan's layout's extent), EOR = simulated iteration time / vanilla's, CBR = MSR "
                "/ EOR. DTR is its decisions simulated as a plan (the simulator has no online "
                "eviction).", c->dev->name);
    bt_note(t, "Vanilla frees every tensor after its last use (DESIGN.md invariant 3); the "
            "paper's vanilla kept dead tensors, which inflates its MSRs.");
    bt_note(t, "Capuchin, AutoSwap and DTR plan for TENSILE's footprint (the paper's \"Extra "
            "Setting\"); vDNN is vDNN-conv as in the paper; vDNN-all, AutoSwap and DTR are "
            "extra rows. A policy not registered in this build has no numbers.");
    bp_finish(c, t);
}

/* Fig. 6 and Table IV under --backend cpu. */
static const char SIM_ONLY[] = "Simulated even with --backend cpu: real runs of several jobs "
                               "are the daemon's (bench/daemon_runs.py, issue 10).";

static const char *const COLS6[] = {
    "model", "workloads", "method", "policy", "budget", "vanilla footprint MiB",
    "planned footprint MiB", "MSR", "EOR", "CBR", "paper MSR", "paper EOR", "paper CBR",
    "TENSILE beats it", "MSR load", "swaps", "recomputes", "status"};

static void fig6(bp_ctx *c) {
    bt_table *t = bt_new("tensile_fig6", "TENSILE's Fig. 6: 1 to 4 identical workloads together "
                         "(simulated)", (int)(sizeof COLS6 / sizeof *COLS6), COLS6);
    const char *const *m;
    int nmod, maxn = c->quick ? 2 : 4;
    models(c, &m, &nmod);
    if (c->quick) nmod = 1;
    for (int i = 0; i < nmod; i++)
        for (int n = 1; n <= maxn; n++) {
            bp_progress(c, "Fig. 6: %s x %d", m[i], n);
            bm_spec s[4];
            memset(s, 0, sizeof s);
            for (int j = 0; j < n; j++) {
                snprintf(s[j].model, sizeof s[j].model, "%s", m[i]);
                s[j].batch = 16;
                s[j].step = BP_STEP;
            }
            bm_jobs J;
            if (bm_jobs_build(&J, s, n, c->dev) != 0) {
                c->errors++;
                continue;
            }
            bm_result r[N_PAPER];
            measure_methods(c, &J, NULL, N_PAPER, r, NULL);
            for (int k = 0; k < N_PAPER; k++) {
                int row = bt_row(t);
                bt_set(t, row, "model", "%s", m[i]);
                bt_set(t, row, "workloads", "%d", n);
                method_row(t, row, &TABLE3[k], &r[k], &r[I_TENSILE]);
                bp_set_paper(t, row, NULL, "figure only");
            }
            bm_jobs_free(&J);
        }
    bt_note(t, "Paper: %s.", pn_cite_tensile_f6);
    if (c->cpu) bt_note(t, "%s", SIM_ONLY);
    bt_note(t, "Tensile: n identical jobs (batch 16) planned together and simulated together, "
            "every job starting at 0 (launched simultaneously), sharing one compute resource "
            "and the two copy channels; MSR on the sum of the footprints, EOR on the sum of "
            "the iteration times, each against vanilla jobs on the same shared device. "
            "Capuchin's budget: TENSILE's footprints summed.");
    bp_finish(c, t);
}

/* r += x for averaging (numbers only); counts in *n. */
static void accumulate(bm_result *sum, const bm_result *x, int *n) {
    if (!bm_has_numbers(x)) {
        if (*n == 0) *sum = *x; /* keep the state and its words */
        return;
    }
    if (*n == 0) *sum = *x;
    else {
        sum->msr += x->msr;
        sum->msr_load += x->msr_load;
        sum->eor += x->eor;
        sum->cbr += x->cbr;
        if (x->state == BM_BUDGET_UNMET) { /* unmet in any repetition: unmet */
            sum->state = x->state;
            snprintf(sum->why, sizeof sum->why, "%s", x->why);
        }
    }
    (*n)++;
}

static void divide(bm_result *s, int n) {
    if (n < 2) return;
    s->msr /= n;
    s->msr_load /= n;
    s->eor /= n;
    s->cbr /= n;
}

static const char *const COLS4[] = {
    "jobs", "method", "policy", "budget", "vanilla footprint MiB", "planned footprint MiB",
    "MSR", "EOR", "CBR", "paper MSR", "paper EOR", "paper CBR", "TENSILE beats it",
    "MSR load", "swaps", "recomputes", "EOR per repetition", "status"};

static void table4(bp_ctx *c) {
    bt_table *t = bt_new("tensile_table4", "TENSILE's Table IV: mixed architectures (simulated)",
                         (int)(sizeof COLS4 / sizeof *COLS4), COLS4);
    const char *const *m;
    int nmod, reps = c->quick ? 1 : 3;
    models(c, &m, &nmod);
    bm_spec s[5];
    memset(s, 0, sizeof s);
    char jobs[256] = "";
    for (int i = 0; i < nmod; i++) {
        snprintf(s[i].model, sizeof s[i].model, "%s", m[i]);
        s[i].batch = 16;
        s[i].step = BP_STEP;
        snprintf(jobs + strlen(jobs), sizeof jobs - strlen(jobs), "%s%s", i ? "+" : "", m[i]);
    }
    bm_jobs J;
    if (bm_jobs_build(&J, s, nmod, c->dev) != 0) {
        c->errors++;
        bt_free(t);
        return;
    }
    bm_result sum[N_PAPER];
    int cnt[N_PAPER] = {0};
    char per[N_PAPER][128];
    memset(per, 0, sizeof per);
    for (int rep = 1; rep <= reps; rep++) {
        bp_progress(c, "Table IV: %s, repetition %d of %d", jobs, rep, reps);
        bm_jobs_phases(&J, (uint64_t)rep);
        bm_result r[N_PAPER];
        measure_methods(c, &J, NULL, N_PAPER, r, NULL);
        for (int k = 0; k < N_PAPER; k++) {
            accumulate(&sum[k], &r[k], &cnt[k]);
            if (bm_has_numbers(&r[k]))
                snprintf(per[k] + strlen(per[k]), sizeof per[k] - strlen(per[k]), "%s%.4f",
                         per[k][0] ? " " : "", r[k].eor);
        }
    }
    for (int k = 0; k < N_PAPER; k++) divide(&sum[k], cnt[k]);
    for (int k = 0; k < N_PAPER; k++) {
        int row = bt_row(t);
        bt_set(t, row, "jobs", "%s", jobs);
        method_row(t, row, &TABLE3[k], &sum[k], &sum[I_TENSILE]);
        bt_set(t, row, "EOR per repetition", "%s", per[k][0] ? per[k] : "-");
        bp_set_paper(t, row, pn_tensile_table4(TABLE3[k].policy), "-");
    }
    bm_jobs_free(&J);
    bt_note(t, "Paper: %s.", pn_cite_tensile_t4);
    if (c->cpu) bt_note(t, "%s", SIM_ONLY);
    bt_note(t, "Tensile: the models (batch 16) as %d jobs planned together; each repetition "
            "simulates them from random phases (seeds 1..%d: every job's first iteration "
            "starts uniform in its period, as jobs launched one by one), FIFO channels, one "
            "compute resource; MSR, EOR and CBR are the means over the repetitions. The plans "
            "are made on the channels' shared time axis (the paper's), so the phases can make "
            "copies late. Real runs of the same experiment under the daemon are issue 10's "
            "(bench/daemon_runs.py, docs/RESULTS.md).", nmod, reps);
    bp_finish(c, t);
}

static const char *const COLS7[] = {"model", "batch", "vanilla footprint MiB",
                                    "planned footprint MiB", "MSR", "EOR", "CBR", "paper MSR",
                                    "paper EOR", "paper CBR", "MSR load", "swaps", "recomputes",
                                    "status"};

static void fig7(bp_ctx *c) {
    bt_table *t = bt_new("tensile_fig7", c->cpu ? "TENSILE's Fig. 7: batch size (measured on "
                         "the CPU backend)" : "TENSILE's Fig. 7: batch size (simulated)",
                         (int)(sizeof COLS7 / sizeof *COLS7), COLS7);
    static const int BATCH[] = {4, 8, 16, 32, 64}, QUICK_BATCH[] = {4, 16},
                     CPU_BATCH[] = {4, 8, 16};
    const char *const *m;
    int nmod, nb = c->quick ? 2 : c->cpu ? 3 : 5;
    models(c, &m, &nmod);
    if (c->quick) nmod = 1;
    for (int i = 0; i < nmod; i++)
        for (int b = 0; b < nb; b++) {
            int batch = c->quick ? QUICK_BATCH[b] : c->cpu ? CPU_BATCH[b] : BATCH[b];
            bp_progress(c, "Fig. 7: %s at batch %d%s", m[i], batch, c->cpu ? " (real run)" : "");
            bm_spec s = job(c, m[i], batch);
            bm_jobs J = {0};
            if (!c->cpu && bm_jobs_build(&J, &s, 1, c->dev) != 0) {
                c->errors++;
                continue;
            }
            bm_result r;
            measure(c, &J, &s, "tensile", 0, NULL, &r);
            int row = bt_row(t);
            bt_set(t, row, "model", "%s", m[i]);
            bt_set(t, row, "batch", "%d", batch);
            figure_cols(t, row, &r);
            bp_set_paper(t, row, NULL, "figure only");
            bm_jobs_free(&J);
        }
    bt_note(t, "Paper: %s.", pn_cite_tensile_f7);
    bt_note(t, "Tensile: TENSILE alone on each model at each batch, as Table III%s.",
            c->cpu ? " (measured: batch 4, 8, 16 at 32x32, as Table III's real runs)" : "");
    bp_finish(c, t);
}

void bp_tensile_tables(bp_ctx *c) {
    table3(c);
    fig6(c);
    table4(c);
    fig7(c);
}
