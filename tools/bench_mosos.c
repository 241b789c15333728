/*
 * bench_mosos.c - MO-SOS's Fig. 4 (seed 003, section 3.2): the time of a
 * training step as the memory ratio (budget / vanilla footprint) falls
 * from 0.8 to 0.4, for vgg19 (batch 144, 227 px) and unet (batch 120, 256
 * px) on the tesla-p40 profile, comparing Checkmate-Auto (policy
 * checkmate), STR-Auto (str) and MO-SOS (mosos), with TENSILE and Capuchin
 * as extra rows. --quick: vgg19 at batch 16, 224 px, unet at batch 4,
 * ratios 0.8 and 0.6.
 */
#include <stdio.h>

#include "bench_paper.h"

void bp_mosos_figure(bp_ctx *c) {
    static const char *const POL[] = {"checkmate", "str", "mosos", "tensile", "capuchin"};
    static const char *const LAB[] = {"Checkmate-Auto", "STR-Auto", "MO-SOS", "TENSILE (extra)",
                                      "Capuchin (extra)"};
    static const double R[] = {0.8, 0.7, 0.6, 0.5, 0.4}, QR[] = {0.8, 0.6};
    static const bm_spec FULL[] = {{"vgg19", 144, 227, 0, BP_STEP},
                                   {"unet", 120, 256, 0, BP_STEP}};
    static const bm_spec QUICK[] = {{"vgg19", 16, 224, 0, BP_STEP},
                                    {"unet", 4, 256, 0, BP_STEP}};
    static const bm_spec REAL[] = {{"vgg19", 8, BP_REAL_IMAGE, 0, BP_STEP},
                                   {"unet", 2, 64, 0, BP_STEP}};
    tsl_device_profile dev;
    if (bp_profile("tesla-p40", &dev)) {
        c->errors++;
        return;
    }
    const double *ratio = c->quick ? QR : R;
    int nr = c->quick ? 2 : 5;
    bt_table *t = bp_sweep_table("mosos_fig4", c->cpu ? "MO-SOS's Fig. 4: time of a training "
                                 "step (ms, measured) against the memory ratio"
                                 : "MO-SOS's Fig. 4: time of a training step (ms, simulated) "
                                 "against the memory ratio", ratio, nr);
    for (int i = 0; i < 2; i++) {
        const bm_spec *s = c->cpu ? &REAL[i] : c->quick ? &QUICK[i] : &FULL[i];
        char label[96];
        snprintf(label, sizeof label, "%s b%d %dpx", s->model, s->batch, s->image);
        bp_progress(c, "MO-SOS Fig. 4: %s%s", label, c->cpu ? " (real runs)" : "");
        if (c->cpu) {
            bp_sweep(c, t, label, NULL, s, POL, LAB, 5, ratio, nr, 1);
            continue;
        }
        bm_jobs J;
        if (bm_jobs_build(&J, s, 1, &dev) != 0) {
            c->errors++;
            continue;
        }
        bp_sweep(c, t, label, &J, NULL, POL, LAB, 5, ratio, nr, 1);
        bm_jobs_free(&J);
    }
    bt_note(t, "Paper: %s. The paper's numbers per point are in its figure only; %s.",
            pn_cite_mosos_f4, pn_mosos_text);
    if (c->cpu)
        bt_note(t, "Measured (--backend cpu): `tensile run` per cell at the small shapes named, "
                "synthetic data, Adam, copy channels throttled to %g GB/s, %d iterations, vanilla "
                "side by side; memory ratio = device memory / vanilla's measured footprint; each "
                "cell the median step time (ms). The notes below are the simulation's.",
                BP_REAL_GBPS, BP_REAL_ITERS);
    bt_note(t, "Tensile: Adam, profile tesla-p40, simulated; memory ratio = footprint budget / "
            "vanilla footprint; each cell the simulated time of a step (ms) of the policy's plan "
            "for that budget, \"unmet (MSR x)\" when its best plan saves only x, \"n/a\" when "
            "the policy is not in this build. The convolutions' default algorithm is their "
            "fastest here (docs/SCHEDULING.md, \"Algorithms\"), so MO-SOS has no speed to buy "
            "with freed memory and the -Auto baselines are checkmate and str.");
    bp_finish(c, t);
}
