/*
 * bench_curves.c - policies against falling budgets: the overhead-against-
 * budget curve of every policy per model (TENSILE's five models at batch
 * 16 on the --profile device), and the sweep MO-SOS's Fig. 4 uses
 * (bench_mosos.c). A budget is a fraction of the vanilla footprint; each
 * policy plans for it (its defaults, tsl_plan_jobs' budget) and a cell
 * holds the simulated EOR (or the iteration time) when the plan meets the
 * budget, "unmet (MSR x)" when the policy cannot save that much, and
 * "n/a" when the policy is not in this build. Each cell is measured in a
 * child process (bm_measure_isolated): a planner or solver that crashes
 * fails its cell, "failed", and the sweep goes on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_paper.h"

/* The column of ratio x: "0.80". */
static void ratio_col(char *buf, size_t n, double x) { snprintf(buf, n, "%.2f", x); }

bt_table *bp_sweep_table(const char *name, const char *title, const double *ratio, int nr) {
    const char **cols = calloc((size_t)nr + 4, sizeof *cols);
    char(*rc)[16] = calloc((size_t)nr, sizeof *rc);
    if (!cols || !rc) {
        fprintf(stderr, "tensile bench: out of host memory\n");
        exit(1);
    }
    cols[0] = "model";
    cols[1] = "method";
    cols[2] = "policy";
    for (int k = 0; k < nr; k++) {
        ratio_col(rc[k], sizeof rc[k], ratio[k]);
        cols[3 + k] = rc[k];
    }
    cols[3 + nr] = "status";
    bt_table *t = bt_new(name, title, nr + 4, cols);
    free(cols);
    free(rc);
    return t;
}

void bp_sweep(bp_ctx *c, bt_table *t, const char *model, bm_jobs *J, const bm_spec *real,
              const char *const *policy, const char *const *label, int np, const double *ratio,
              int nr, int time_ms) {
    bm_result v; /* its footprint may be above the device (MO-SOS's unet): only its size counts */
    if (real) bp_real_measure(real, "vanilla", 0, &v);
    else bm_measure(J, "vanilla", 0, NULL, &v);
    if (!bm_has_numbers(&v)) {
        fprintf(stderr, "tensile bench: %s: vanilla: %s\n", model, bm_state_text(&v));
        c->errors++;
        return;
    }
    for (int p = 0; p < np; p++) {
        int row = bt_row(t);
        if (time_ms) /* the step time without a budget, for scale */
            bt_set(t, row, "model", "%s (vanilla %.2f ms)", model, v.vanilla_iter_us / 1000.0);
        else bt_set(t, row, "model", "%s", model);
        bt_set(t, row, "method", "%s", label[p]);
        bt_set(t, row, "policy", "%s", policy[p]);
        const char *status = "ok";
        for (int k = 0; k < nr; k++) {
            bm_result r;
            size_t budget = bm_budget(ratio[k], v.vanilla_fp);
            if (real) {
                bp_progress(c, "  %s %s at %.2f (real run)", model, policy[p], ratio[k]);
                bp_real_measure(real, policy[p], budget, &r);
            } else bm_measure_isolated(J, policy[p], budget, &r);
            char col[16], text[64];
            ratio_col(col, sizeof col, ratio[k]);
            bt_set(t, row, col, "%s", bm_cell(&r, time_ms, text, sizeof text));
            if (r.state == BM_UNAVAILABLE) status = "not available in this build";
            else if (r.state == BM_FAILED) bt_set(t, row, "status", "%s", bm_state_text(&r));
            if (r.state == BM_UNAVAILABLE) break;
        }
        if (strcmp(bt_get(t, row, "status"), "") == 0) bt_set(t, row, "status", "%s", status);
        if (!strcmp(status, "not available in this build"))
            for (int k = 0; k < nr; k++) {
                char col[16];
                ratio_col(col, sizeof col, ratio[k]);
                bt_set(t, row, col, "n/a");
            }
    }
}

void bp_budget_curves(bp_ctx *c) {
    static const char *const POL[] = {"tensile", "vdnn-conv", "vdnn-all", "capuchin", "autoswap",
                                      "dtr",     "checkmate", "str",      "mosos"};
    static const char *const LAB[] = {"TENSILE", "vDNN-conv", "vDNN-all", "Capuchin", "AutoSwap",
                                      "DTR",     "Checkmate", "STR",      "MO-SOS"};
    static const char *const MODELS[] = {"vgg16", "inception3", "inception4", "resnet50",
                                         "densenet121"};
    static const double R[] = {1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4}, QR[] = {0.9, 0.7};
    const double *ratio = c->quick ? QR : R;
    int nr = c->quick ? 2 : 7, nm = c->quick ? 1 : 5, np = (int)(sizeof POL / sizeof *POL);
    bt_table *t = bp_sweep_table("budget_curves", c->cpu ? "Overhead against budget: measured EOR "
                                 "per policy per model (columns: budget / vanilla footprint)"
                                 : "Overhead against budget: simulated EOR per policy per model "
                                 "(columns: budget / vanilla footprint)", ratio, nr);
    for (int i = 0; i < nm; i++) {
        bp_progress(c, "budget curves: %s%s", MODELS[i], c->cpu ? " (real runs)" : "");
        bm_spec s = {.batch = c->cpu ? 8 : 16, .step = BP_STEP};
        snprintf(s.model, sizeof s.model, "%s", MODELS[i]);
        if (c->cpu) { /* Table III's real shape */
            s.image = strncmp(MODELS[i], "inception", 9) ? BP_REAL_IMAGE : 75;
            bp_sweep(c, t, MODELS[i], NULL, &s, POL, LAB, np, ratio, nr, 0);
            continue;
        }
        bm_jobs J;
        if (bm_jobs_build(&J, &s, 1, c->dev) != 0) {
            c->errors++;
            continue;
        }
        bp_sweep(c, t, MODELS[i], &J, NULL, POL, LAB, np, ratio, nr, 0);
        bm_jobs_free(&J);
    }
    if (c->cpu)
        bt_note(t, "Tensile: measured (--backend cpu): `tensile run` per cell, batch 8, %dx%d "
                "synthetic (the Inceptions 75x75), Adam, copy channels throttled to %g GB/s, %d "
                "iterations, vanilla side by side; each cell the EOR (wall-clock medians) of the "
                "policy's run in a device of that fraction of vanilla's measured footprint; "
                "\"unmet (MSR x)\": its plan saves only x; \"failed\": the run did not fit. DTR "
                "runs online in the runtime. Noisy on a shared machine: compare rows, not digits.",
                BP_REAL_IMAGE, BP_REAL_IMAGE, BP_REAL_GBPS, BP_REAL_ITERS);
    else
        bt_note(t, "Tensile: batch 16, Adam, profile %s, simulated. Each cell: the EOR of the "
                "policy's plan for a footprint budget of that fraction of the vanilla footprint; "
                "\"unmet (MSR x)\": the policy's best plan saves only x; \"n/a\": the policy is "
                "not in this build. Policies without a budget of their own (vDNN) plan the same "
                "at every budget and meet it or not. DTR is its decisions simulated as a plan.",
                c->dev->name);
    bp_finish(c, t);
}
