/*
 * test_policy_tensile_budget.c - TENSILE planning to a budget (option
 * `fit`, src/sched/tensile_budget.c; docs/SCHEDULING.md, "Planning to a
 * budget"): where the paper's Algorithm 3 leaves the jobs above the
 * budget, hidden swaps, swaps with planned waits and chained
 * recomputations, the least added time per byte first, until they fit.
 *
 * Each case plans the same job twice at one budget, with `fit 0` (the
 * paper) and with the default `fit 1`, through pc_plan_and_check (the
 * plans verify, their predicted peak, period and stall are the peak
 * analysis's and the simulator's, planning is deterministic), and checks
 * that the budget mode meets a budget the paper's plan does not. Without
 * a budget (the profile's memory) and below the jobs' floor the two are
 * the same plan. A budget-mode plan run by the runtime (virtual clock)
 * ends with vanilla's parameters bit for bit (invariant 5), with the
 * predicted peak, footprint and period.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "plan_gen.h"
#include "policy_check.h"
#include "rt_fixture.h"
#include "tensile/policy_tensile.h"
#include "tensile/sched_json.h"

/* Plans w at `budget` with fit (1) or the paper (0) into r, checked. */
static void plan_tensile(tsl_workload **w, const tsl_device_profile *dev, size_t budget, int fit,
                         pc_result *r, const char *what) {
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.fit = fit;
    to.min_swap_bytes = 0; /* small shapes: every size */
    tsl_plan_opts po = pc_opts("tensile", &to, budget);
    char name[160];
    snprintf(name, sizeof name, "%s (%s)", what, fit ? "fit" : "paper");
    pc_plan_and_check(w, 1, dev, &po, name, r);
}

/* The floor of w (the planner's report of the empty plan). */
static size_t floor_of(tsl_workload *w) {
    tsl_device_profile dev = rtf_cpu_profile();
    tsl_plan_opts po = pc_opts("vanilla", NULL, 0);
    tsl_plan *p = NULL;
    tsl_plan_report rep;
    cr_assert(TH_PLANNED(tsl_plan_jobs(&w, 1, &dev, &po, &p, &rep)), "%s", tsl_last_error());
    size_t f = rep.floor[0];
    tsl_plan_free(p);
    tsl_plan_report_free(&rep);
    return f;
}

/* The sum of the plans' footprints. */
static size_t footprint(const pc_result *r) {
    size_t s = 0;
    for (int j = 0; j < r->n; j++) s += r->p[j]->predicted_footprint;
    return s;
}

/* Fails unless plans a and b hold the same events (their padding is zero:
 * tsl_plan_add). */
static void expect_same_events(const tsl_plan *a, const tsl_plan *b, const char *what) {
    cr_assert_eq(a->n_events, b->n_events, "%s: %d and %d events", what, a->n_events,
                 b->n_events);
    cr_assert_eq(memcmp(a->events, b->events, (size_t)a->n_events * sizeof *a->events), 0,
                 "%s: not the same events", what);
}

/* Fails unless a and b hold the same events and footprints. */
static void expect_same_plan(const pc_result *a, const pc_result *b, const char *what) {
    expect_same_events(a->p[0], b->p[0], what);
    cr_assert_eq(footprint(a), footprint(b), "%s", what);
}

/* Plans w with TENSILE's defaults at `frac` of vanilla's footprint (the
 * report of a plan with no budget) into r, checked; returns the budget. */
static size_t plan_at_fraction(tsl_workload **w, const tsl_device_profile *dev, double frac,
                               const char *what, pc_result *r) {
    tsl_tensile_opts to = tsl_tensile_opts_default();
    pc_result base;
    tsl_plan_opts po = pc_opts("tensile", &to, 0);
    pc_plan_and_check(w, 1, dev, &po, what, &base);
    size_t budget = (size_t)(frac * (double)base.rep.vanilla_footprint[0]);
    pc_result_free(&base);
    char name[160];
    snprintf(name, sizeof name, "%s at %.2f", what, frac);
    po = pc_opts("tensile", &to, budget);
    pc_plan_and_check(w, 1, dev, &po, name, r);
    return budget;
}

/* The count of releases in p that precede an op (planned waits for a
 * swap-out). */
static int preceding_releases(const tsl_plan *p) {
    int n = 0;
    for (int32_t k = 0; k < p->n_events; k++)
        n += p->events[k].type == TSL_EV_RELEASE && p->events[k].precede >= 0;
    return n;
}

/* `tensile frontier`'s job (the model's defaults: its classes and image
 * size; Adam, updates in the backward pass) at `batch`, on profile
 * `profile` (loaded into *dev). */
static tsl_workload *frontier_job(const char *model, int batch, const char *profile,
                                  tsl_device_profile *dev) {
    cr_assert_eq(tsl_profile_load(profile, dev), TSL_OK, "%s", tsl_last_error());
    tsl_model_cfg cfg = tsl_model_cfg_default(model);
    cfg.batch = batch;
    return pc_zoo_workload_cfg(model, dev, 1, &cfg);
}

/* The budget mode on w at `frac` of the way from the lowest budget worth
 * trying (the job's floor) to the
 * paper's own footprint at the profile's memory (what its swaps hide):
 * the paper's plan misses it, the budget mode meets it. Returns the budget
 * mode's chained recomputations. */
static int beats_the_paper(tsl_workload *w, const tsl_device_profile *dev, double frac,
                           const char *what) {
    pc_result base, paper, fit;
    plan_tensile(&w, dev, 0, 0, &base, what);
    size_t lo = base.rep.floor[0];
    cr_assert_lt(lo, footprint(&base), "%s: nothing to save (floor %zu, persistent %zu, paper %zu, vanilla %zu)", what, base.rep.floor[0], pc_persistent_bytes(w), footprint(&base), base.rep.vanilla_footprint[0]);
    size_t budget = lo + (size_t)((double)(footprint(&base) - lo) * frac);
    plan_tensile(&w, dev, budget, 0, &paper, what);
    plan_tensile(&w, dev, budget, 1, &fit, what);
    int ch = pc_chained(w, fit.p[0]);
    printf("%-22s budget %zu (floor %zu, persistent %zu): paper %zu (met %d, %d rc), fit %zu "
           "(met %d, %d swaps, %d rc of which %d chained, %d waits, period %.1f -> %.1f us)\n",
           what, budget, base.rep.floor[0], pc_persistent_bytes(w), footprint(&paper),
           paper.rep.budget_met, paper.rep.recomputes[0], footprint(&fit), fit.rep.budget_met,
           fit.rep.swaps[0], fit.rep.recomputes[0], ch, fit.waits, w->period_us,
           fit.p[0]->predicted_period_us);
    cr_assert(!paper.rep.budget_met, "%s: the paper's plan meets %zu already: no test", what,
              budget);
    cr_assert(fit.rep.budget_met, "%s: the budget mode misses %zu (footprint %zu)", what, budget,
              footprint(&fit));
    cr_assert_leq(footprint(&fit), budget);
    cr_assert_geq(fit.p[0]->predicted_period_us, w->period_us);
    pc_result_free(&base);
    pc_result_free(&paper);
    pc_result_free(&fit);
    return ch;
}

/* cnn at batch 16: the paper's swaps hide what they can; the budget mode
 * goes on (a swap whose swap-in makes compute wait is the cheapest) and
 * meets 0.6 of the way from the floor. */
/* (cnn's updates after the backward pass here and below: with them in the
 * backward, the default, the update of fc1's weight - weight, gradient,
 * momentum - is nearly all of vanilla's peak, and the paper's plan and the
 * floor leave no budget between them for this test) */
Test(tensile_budget, cnn_beats_the_paper, .timeout = 600) {
    tsl_device_profile dev = rtf_cpu_profile();
    tsl_workload *w = pc_zoo_workload_at("cnn", &dev, TH_UPDATES_AFTER, 16, 32);
    beats_the_paper(w, &dev, 0.6, "cnn b16");
    tsl_workload_free(w);
}

/* densenet121 at batch 16, 64x64, on slow copies (100 MB/s: a swap costs
 * more than re-running a few layers): the budget mode meets 0.8 of the
 * way with recomputations chained back to the nearest resident tensors. */
Test(tensile_budget, densenet121_beats_the_paper_with_chains, .timeout = 600) {
    tsl_device_profile dev = rtf_cpu_profile();
    dev.h2d_bw = dev.d2h_bw = 1e8;
    tsl_workload *w = pc_zoo_workload_at("densenet121", &dev, 0, 16, 64);
    int ch = beats_the_paper(w, &dev, 0.8, "densenet121 b16 64px");
    cr_assert_gt(ch, 0, "densenet121: no chained recomputation");
    tsl_workload_free(w);
}

/* densenet121 at the frontier's shape (batch 16, 224x224, Adam, a6000,
 * TENSILE's default options; frontier-runs/densenet121-b16-a6000): at 0.6
 * and 0.5 of vanilla's footprint the budget mode meets the budget with
 * batch norm's outputs among its recomputations (remat.h). At 0.5 the
 * first of its four ways (policy_tensile.c, plan_tensile) stalls above the
 * budget, and a later one meets it with less time than DTR's +22.7 %
 * (issue 12's anchor). */
Test(tensile_budget, densenet121_a6000_batch_norm_four_ways, .timeout = 600) {
    tsl_device_profile dev;
    cr_assert_eq(tsl_profile_load("a6000", &dev), TSL_OK, "%s", tsl_last_error());
    tsl_workload *w = pc_zoo_workload_at("densenet121", &dev, 1, 16, 224);
    const double frac[2] = {0.6, 0.5};
    for (int i = 0; i < 2; i++) {
        pc_result r;
        size_t budget = plan_at_fraction(&w, &dev, frac[i], "densenet121 b16 a6000", &r);
        int multi = pc_multi_output_recomputes(w, r.p[0]);
        double eor = r.p[0]->predicted_period_us / w->period_us;
        printf("densenet121 b16 a6000 at %.1f: footprint %zu of budget %zu (met %d), %d rc of "
               "which %d of batch norm's outputs, EOR %.4f\n", frac[i], footprint(&r), budget,
               r.rep.budget_met, r.rep.recomputes[0], multi, eor);
        cr_assert(r.rep.budget_met, "at %.1f: footprint %zu above %zu", frac[i], footprint(&r),
                  budget);
        cr_assert_gt(multi, 0, "at %.1f: no batch norm output recomputed", frac[i]);
        if (i == 1) cr_assert_lt(eor, 1.227, "at 0.5: EOR %.4f, DTR's anchor 1.227", eor);
        pc_result_free(&r);
    }
    tsl_workload_free(w);
}

/* Chains through tensors read again later (src/sched/drafts.c, back_after):
 * inception3 at the frontier's shape (batch 16, 299x299, Adam, a6000) at
 * 0.5 of vanilla's footprint. A recomputation's chain may regenerate a
 * tensor the plan brings back (or recomputes) for a later read as well,
 * released again after the op it serves. With it the budget mode meets
 * 0.5 within issue 12's +5 %: EOR 1.0484 with this test's 10 classes
 * (1.0510 when a chain had to stop at such a tensor, and no such link). */
Test(tensile_budget, inception3_a6000_chains_through_tensors_read_again, .timeout = 600) {
    tsl_device_profile dev;
    cr_assert_eq(tsl_profile_load("a6000", &dev), TSL_OK, "%s", tsl_last_error());
    tsl_workload *w = pc_zoo_workload_at("inception3", &dev, 1, 16, 299);
    pc_result r;
    size_t budget = plan_at_fraction(&w, &dev, 0.5, "inception3 b16 a6000", &r);
    int rereads = pc_chained_rereads(w, r.p[0]);
    double eor = r.p[0]->predicted_period_us / w->period_us;
    printf("inception3 b16 a6000 at 0.5: footprint %zu of budget %zu (met %d), %d rc, %d "
           "chained, %d through tensors read again, EOR %.4f\n", footprint(&r), budget,
           r.rep.budget_met, r.rep.recomputes[0], pc_chained(w, r.p[0]), rereads, eor);
    cr_assert(r.rep.budget_met, "footprint %zu above %zu", footprint(&r), budget);
    cr_assert_gt(rereads, 0, "no chain through a tensor read again");
    cr_assert_leq(eor, 1.05, "EOR %.4f above 1.05", eor);
    pc_result_free(&r);
    tsl_workload_free(w);
}

/* Without a budget (the profile's memory) and below the floor the budget
 * mode plans exactly as the paper; below the floor the error says so. */
Test(tensile_budget, paper_unchanged_without_a_budget_and_below_the_floor) {
    tsl_device_profile dev = rtf_cpu_profile();
    tsl_workload *w = pc_zoo_workload_at("cnn", &dev, 0, 16, 32);
    size_t budgets[2] = {0, 1};
    for (int i = 0; i < 2; i++) {
        pc_result a, b;
        plan_tensile(&w, &dev, budgets[i], 0, &a, "cnn");
        plan_tensile(&w, &dev, budgets[i], 1, &b, "cnn");
        expect_same_plan(&a, &b, budgets[i] ? "below the floor" : "no budget");
        pc_result_free(&a);
        pc_result_free(&b);
    }
    /* the floor: the report's, and the error below it */
    tsl_tensile_opts to = tsl_tensile_opts_default();
    tsl_plan_opts po = pc_opts("tensile", &to, 1);
    tsl_plan *p = NULL;
    tsl_plan_report rep;
    cr_assert_eq(tsl_plan_jobs(&w, 1, &dev, &po, &p, &rep), TSL_ERR_BUDGET);
    cr_assert(strstr(tsl_last_error(), "below the floor"), "%s", tsl_last_error());
    cr_assert_gt(rep.floor[0], 0);
    cr_assert_lt(rep.floor[0], rep.vanilla_peak[0]);
    /* no op's inputs, outputs and workspace exceed it */
    for (int32_t i = 0; i < w->n_ops; i++) {
        size_t s = w->ops[i].workspace;
        for (int k = 0; k < w->ops[i].n_out; k++) s += w->tensors[w->ops[i].out[k]].bytes;
        cr_assert_leq(s, rep.floor[0], "op %d", i);
    }
    tsl_plan_free(p);
    tsl_plan_report_free(&rep);
    tsl_workload_free(w);
}

/* A named budget gets no more of the paper's swaps than it needs: resnet18
 * at batch 24, 40 px, on the rough CPU profile (the real runs' shape).
 * With no budget (the profile's memory) the plan is the paper's, every
 * swap the channels hide; with a budget half way between that plan's
 * footprint and vanilla's, the plan meets it with fewer swaps, the same
 * simulated time (hidden swaps cost none) and says it spared them; with a
 * budget above vanilla's footprint it is empty. The paper's plan (fit 0)
 * at the named budget is the one with no budget. */
Test(tensile_budget, a_named_budget_gets_just_the_swaps_it_needs, .timeout = 600) {
    tsl_device_profile dev = tsl_profile_cpu_rough();
    dev.h2d_bw = dev.d2h_bw = 2e9;
    dev.mem_bytes = (size_t)1 << 30;
    tsl_workload *w = pc_zoo_workload_at("resnet18", &dev, 0, 24, 40);
    pc_result all, half, paper, above;
    plan_tensile(&w, &dev, 0, 1, &all, "resnet18, no budget");
    size_t vanilla = all.rep.vanilla_footprint[0], b = (footprint(&all) + vanilla) / 2;
    plan_tensile(&w, &dev, b, 1, &half, "resnet18, half way");
    printf("resnet18 b24 40px: no budget %zu bytes, %d swaps; budget %zu: %zu bytes, %d swaps "
           "(vanilla %zu)\n", footprint(&all), all.rep.swaps[0], b, footprint(&half),
           half.rep.swaps[0], vanilla);
    cr_assert_gt(all.rep.swaps[0], 0);
    cr_assert_not(all.rep.spared);
    cr_assert(half.rep.budget_met, "footprint %zu above %zu", footprint(&half), b);
    cr_assert_gt(footprint(&half), footprint(&all));
    cr_assert_gt(half.rep.swaps[0], 0);
    cr_assert_lt(half.rep.swaps[0], all.rep.swaps[0]);
    cr_assert_eq(half.rep.spared, 1);
    cr_assert_eq(half.p[0]->predicted_period_us, all.p[0]->predicted_period_us);
    plan_tensile(&w, &dev, b, 0, &paper, "resnet18, half way, the paper");
    cr_assert_eq(paper.rep.swaps[0], all.rep.swaps[0]);
    cr_assert_eq(footprint(&paper), footprint(&all));
    plan_tensile(&w, &dev, vanilla, 1, &above, "resnet18 at vanilla's footprint");
    cr_assert(above.rep.budget_met);
    cr_assert_eq(above.p[0]->n_events, 0, "%d events", above.p[0]->n_events);
    pc_result_free(&all);
    pc_result_free(&half);
    pc_result_free(&paper);
    pc_result_free(&above);
    tsl_workload_free(w);
}

/* A budget the budget mode cannot meet leaves its least memory: it says
 * so (least_memory), and a lower budget - down to the floor - plans
 * exactly the same events (every state its rounds passed through was above
 * the budget, so above a lower one too, and nothing else they do depends
 * on the budget), which is why the planner then tries no lower budget for
 * the layout's overhead. cnn at batch 16: a budget just above its floor,
 * then the floor itself. A budget it meets does not say so. */
Test(tensile_budget, an_unmet_budget_is_the_least_memory) {
    tsl_device_profile dev = rtf_cpu_profile();
    tsl_workload *w = pc_zoo_workload_at("cnn", &dev, 0, 16, 32);
    size_t fl = floor_of(w), b = fl + (fl >> 10);
    pc_result hi, lo, met;
    plan_tensile(&w, &dev, b, 1, &hi, "cnn just above its floor");
    printf("cnn b16: floor %zu, budget %zu: peak %zu, footprint %zu (met %d)\n", fl, b,
           hi.p[0]->predicted_peak, footprint(&hi), hi.rep.budget_met);
    cr_assert_not(hi.rep.budget_met, "cnn meets %zu: no test", b);
    cr_assert_gt(hi.p[0]->predicted_peak, b);
    cr_assert_eq(hi.rep.least_memory, 1);
    plan_tensile(&w, &dev, fl, 1, &lo, "cnn at its floor");
    cr_assert_eq(lo.rep.least_memory, 1);
    expect_same_plan(&lo, &hi, "the floor and just above it");
    plan_tensile(&w, &dev, footprint(&hi) + (footprint(&hi) >> 2), 1, &met, "cnn, met");
    cr_assert(met.rep.budget_met);
    cr_assert_eq(met.rep.least_memory, 0);
    pc_result_free(&hi);
    pc_result_free(&lo);
    pc_result_free(&met);
    tsl_workload_free(w);
}

/* What a runs_bitwise case asks its plan to hold (flags). */
enum {
    WANT_RC_OR_WAIT = 1,  /* a recomputation or a planned wait */
    WANT_CLEAN = 2,       /* a clean drop */
    WANT_REREADS = 4,     /* a chain through a tensor read again later (pc_chained_rereads) */
    WANT_MET_ACROSS = 8,  /* the budget met, with swaps across the boundary (pc_across_swaps) */
    WANT_EARLY = 32,      /* a recomputation before an earlier one reading it (pc_early_recomputes) */
};

/* Runs plan p of case c (verified, laid out) by the runtime in the virtual
 * clock: vanilla's parameters bit for bit, each iteration at p's predicted
 * peak, footprint and period. */
static void run_bitwise(const rtf_case *c, const tsl_plan *p, const char *model) {
    rtf_run o;
    rtf_run_plan(c, p, 1, 0, "tensile fit", &o);
    cr_assert_eq(o.checksum, c->ref, "%s: parameters %016llx differ from vanilla's %016llx", model,
                 (unsigned long long)o.checksum, (unsigned long long)c->ref);
    for (int k = 0; k < RTF_ITERS; k++) {
        cr_assert_eq(o.peak[k], p->predicted_peak, "%s: iteration %d peak %zu, predicted %zu",
                     model, k + 1, o.peak[k], p->predicted_peak);
        cr_assert_eq(o.fp[k], p->predicted_footprint, "%s: iteration %d footprint", model, k + 1);
        double ms = p->predicted_period_us * 1e-3;
        cr_assert(o.ms[k] >= ms - 1e-9 * ms - 1e-9 && o.ms[k] <= ms + 1e-9 * ms + 1e-9,
                  "%s: iteration %d lasted %.9f ms, the plan's period is %.9f ms", model, k + 1,
                  o.ms[k], ms);
    }
}

/* Plan p of case c with event k replaced by e, sorted and laid out again,
 * if the verifier accepts it (its predicted figures filled), else NULL. */
static tsl_plan *variant(const rtf_case *c, const tsl_plan *p, int32_t k, tsl_event e) {
    tsl_plan *x = tsl_plan_new(p->job);
    cr_assert_not_null(x);
    for (int32_t m = 0; m < p->n_events; m++)
        cr_assert_eq(tsl_plan_add(x, m == k ? e : p->events[m]), TSL_OK);
    tsl_plan_sort(x);
    if (tsl_plan_layout(c->w, x, &c->dev, 0) == TSL_OK &&
        pg_finish_and_verify(c->w, x, &c->dev, NULL, 0))
        return x;
    tsl_plan_free(x);
    return NULL;
}

/* Proposes a replacement for event *e of case c's plan: 1 with *e set, or
 * 0 if the event is not a candidate. */
typedef int (*propose_fn)(const rtf_case *c, tsl_event *e);

/* The first variant of p, in event order, that `propose` makes and the
 * verifier accepts (with must_wait, only one whose period is longer than
 * p's), or NULL; *tried counts the proposals. */
static tsl_plan *first_variant(const rtf_case *c, const tsl_plan *p, propose_fn propose,
                               int must_wait, int *tried) {
    *tried = 0;
    for (int32_t k = 0; k < p->n_events; k++) {
        tsl_event e = p->events[k];
        if (!propose(c, &e)) continue;
        ++*tried;
        tsl_plan *q = variant(c, p, k, e);
        if (q && (!must_wait || q->predicted_period_us > p->predicted_period_us)) return q;
        tsl_plan_free(q);
    }
    return NULL;
}

/* TENSILE's budget-mode plan of case c (every swap size) at `frac` of the
 * way from the floor to the paper's footprint at the profile's memory
 * (*budget), verified. */
static tsl_plan *budget_mode_plan(const rtf_case *c, double frac, size_t *budget) {
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.min_swap_bytes = 0;
    to.fit = 0;
    tsl_plan *base = rtf_policy_plan(c, "tensile", &to, 0);
    size_t lo = floor_of(c->w);
    cr_assert_lt(lo, base->predicted_footprint, "%s: nothing to save", c->model);
    *budget = lo + (size_t)((double)(base->predicted_footprint - lo) * frac);
    tsl_plan_free(base);
    to.fit = 1;
    return rtf_policy_plan(c, "tensile", &to, *budget);
}

/* Invariant 5: a budget-mode plan (swaps with planned waits, chained
 * recomputations) run by the runtime in the virtual clock ends with
 * vanilla's parameters bit for bit, each iteration at the predicted peak,
 * footprint and period. The budget: `frac` of the way from the floor to
 * the paper's footprint at the profile's memory; bw: the copy bandwidth
 * (0: the profile's). */
static void runs_bitwise(const char *model, int flags, int batch, double bw, double frac,
                         int want) {
    rtf_case c;
    rtf_zoo_case_at(&c, model, flags, batch, 32);
    if (bw > 0) c.dev.h2d_bw = c.dev.d2h_bw = bw;
    size_t budget;
    tsl_plan *p = budget_mode_plan(&c, frac, &budget);
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(c.w, p, &c.dev, &pi), TSL_OK, "%s", tsl_last_error());
    int rc = 0;
    for (int32_t k = 0; k < p->n_events; k++) rc += p->events[k].type == TSL_EV_RECOMPUTE;
    int clean = pc_clean_drops(c.w, p);
    int rereads = pc_chained_rereads(c.w, p);
    if (want & WANT_CLEAN) cr_assert_gt(clean, 0, "%s: no clean drop", model);
    if (want & WANT_REREADS)
        cr_assert_gt(rereads, 0, "%s: no chain through a tensor read again later", model);
    if (want & WANT_MET_ACROSS) {
        cr_assert_leq(p->predicted_footprint, budget, "%s: footprint %zu above the budget %zu",
                      model, p->predicted_footprint, budget);
        cr_assert_gt(pc_across_swaps(c.w, p), 0, "%s: no swap across the boundary", model);
    }
    if (want & WANT_EARLY)
        cr_assert_gt(pc_early_recomputes(c.w, p), 0,
                     "%s: no recomputation before an earlier one reading it", model);
    if (want & WANT_RC_OR_WAIT)
        cr_assert_gt(rc + pi.n_waits, 0, "%s: neither a recomputation nor a wait", model);
    run_bitwise(&c, p, model);
    printf("%-12s tensile fit at %zu: %d events, %d recomputations (%d chained, %d early, %d "
           "converted), %d waits, %d clean drops, %d links through tensors read again, "
           "footprint %zu, identical to vanilla %016llx\n", model, budget, p->n_events, rc,
           pc_chained(c.w, p), pc_early_recomputes(c.w, p), pc_converted(p), pi.n_waits, clean,
           rereads, p->predicted_footprint, (unsigned long long)c.ref);
    tsl_peak_info_free(&pi);
    tsl_plan_free(p);
    rtf_free(&c);
}

Test(tensile_budget_runs, cnn_bitwise_identical, .timeout = 600) {
    runs_bitwise("cnn", TH_UPDATES_AFTER, 16, 0, 0.5, WANT_RC_OR_WAIT);
}
Test(tensile_budget_runs, densenet121_bitwise_identical, .timeout = 600) {
    if (th_quick())
        cr_skip_test("densenet121's chains run in the release build only (TSL_TEST_QUICK: the "
                     "sanitizer builds run cnn's plan above)");
    runs_bitwise("densenet121", 0, 4, 1e8, 0.8, WANT_REREADS | WANT_EARLY);
}
/* Clean drops (docs/SCHEDULING.md): densenet121 at batch 2 with Adam, the
 * budget 0.6 of the way from the floor: the budget mode's plan releases
 * parameters between their forward and backward reads with no swap-out
 * (their host copies are the ones they came back from at the iteration's
 * start); the runtime runs it as planned, its first iteration (parked
 * parameters) included, and ends on vanilla's parameters. */
Test(tensile_budget_runs, clean_drops_bitwise_identical, .timeout = 600) {
    if (th_quick())
        cr_skip_test("densenet121's clean drops run in the release build only (TSL_TEST_QUICK: "
                     "the sanitizer builds run the simulator's and the verifier's small cases, "
                     "test_simulator.c, test_verify.c)");
    runs_bitwise("densenet121", TH_ADAM, 2, 0, 0.6, WANT_CLEAN);
}

/* The wider ways (docs/SCHEDULING.md, "Planning to a budget"): vgg11 at
 * batch 4 with SGD, 0.7 of the way from the floor, which the four ways
 * before them miss; the wider ways' plan meets it with parameters and
 * momenta swapped across the iteration's boundary, and the runtime runs it
 * bit for bit. */
Test(tensile_budget_runs, wider_ways_bitwise_identical, .timeout = 600) {
    if (th_quick())
        cr_skip_test("vgg11's plan runs in the release build only (TSL_TEST_QUICK: the "
                     "sanitizer builds run cnn's plan above)");
    runs_bitwise("vgg11", 0, 4, 0, 0.7, WANT_MET_ACROSS);
}

/* The runtime fixture's resnet50 (batch 2, Adam, 32 px) into *c and
 * TENSILE's budget-mode plan of it at 0.85 of the way (*budget) - the
 * plan the constructed forms below start from; the release build only
 * (TSL_TEST_QUICK: the sanitizer builds run cnn's plan above). */
static tsl_plan *resnet50_b2_plan(rtf_case *c, size_t *budget) {
    if (th_quick()) cr_skip_test("resnet50's plan runs in the release build only");
    rtf_zoo_case_at(c, "resnet50", TH_ADAM, 2, 32);
    return budget_mode_plan(c, 0.85, budget);
}

/* A swap-in of an activation becomes its recomputation before the same op. */
static int swap_in_to_recompute(const rtf_case *c, tsl_event *e) {
    if (e->type != TSL_EV_SWAP_IN || c->w->tensors[e->tensor].producer < 0) return 0;
    *e = (tsl_event){TSL_EV_RECOMPUTE, e->tensor, -1, 0.0, e->precede};
    return 1;
}

/* A swap-in turned into a recomputation (the wider ways,
 * docs/SCHEDULING.md): the swap-out and the release stay, the host copy
 * goes unread, and the recomputation runs where the swap-in was. The
 * budget mode makes such plans at the frontier's shapes (inception3 at
 * batch 16 at 0.3, above) but at none of the runtime fixture's small ones
 * (a probe over resnet50, densenet121, resnet18, vgg11 and cnn at batches
 * 2-4, SGD and Adam, 0.05-0.95 of the way from the floor; inception3 at 75
 * px). So the form is made here as commit_convert makes it: in the plan of
 * resnet50 at batch 2 with Adam (0.85 of the way from the floor), the first
 * swap-in of an activation that the verifier accepts as a recomputation in
 * its place (no chain needed), laid out again. The runtime ends on
 * vanilla's parameters bit for bit, at the predicted peak, footprint and
 * period. */
Test(tensile_budget_runs, converted_swap_in_bitwise_identical, .timeout = 600) {
    rtf_case c;
    size_t budget;
    int tried;
    tsl_plan *p = resnet50_b2_plan(&c, &budget);
    tsl_plan *q = first_variant(&c, p, swap_in_to_recompute, 0, &tried);
    cr_assert_not_null(q, "no swap-in of the %d tried turns into a valid recomputation", tried);
    cr_assert_eq(pc_converted(q), 1, "the constructed plan converts %d swap-ins", pc_converted(q));
    cr_assert_eq(pc_converted(p), 0, "the planned one converts already: no need to construct");
    run_bitwise(&c, q, "resnet50");
    printf("resnet50 b2 adam at %zu: a swap-in turned into a recomputation (%d tried), %d events, "
           "footprint %zu, identical to vanilla %016llx\n", budget, tried, q->n_events,
           q->predicted_footprint, (unsigned long long)c.ref);
    tsl_plan_free(q);
    tsl_plan_free(p);
    rtf_free(&c);
}

/* A release is made to precede the op after its trigger. */
static int release_precedes_next(const rtf_case *c, tsl_event *e) {
    if (e->type != TSL_EV_RELEASE || e->trigger < 0 || e->trigger + 1 >= c->w->n_ops) return 0;
    e->precede = e->trigger + 1;
    return 1;
}

/* A planned wait for a swap-out (docs/SCHEDULING.md, "Planned waits"): in
 * resnet50's plan (batch 2, Adam, 0.85 of the way) a release that waits
 * for its swap-out is made to precede the op after its trigger, which then
 * starts when the copy ends. The plan is verified with the longer period,
 * and the runtime (virtual clock) runs it bit for bit at the predicted
 * peak, footprint and period. */
Test(tensile_budget_runs, swap_out_wait_bitwise_identical, .timeout = 600) {
    rtf_case c;
    size_t budget;
    int tried;
    tsl_plan *p = resnet50_b2_plan(&c, &budget);
    /* the first such release that makes the op wait (a longer period) */
    tsl_plan *q = first_variant(&c, p, release_precedes_next, 1, &tried);
    cr_assert_not_null(q, "no release of the %d tried makes its next op wait", tried);
    run_bitwise(&c, q, "resnet50");
    /* in real time (channels throttled to 2 GB/s, so that the copy is
     * slow): the executor issues the release, and its swap-out, early and
     * waits for it; the parameters are vanilla's, the footprint the plan's */
    rtf_run o;
    rtf_run_plan(&c, q, 0, 2.0, "swap-out wait, real time", &o);
    cr_assert_eq(o.checksum, c.ref, "real time: parameters %016llx differ from vanilla's %016llx",
                 (unsigned long long)o.checksum, (unsigned long long)c.ref);
    for (int k = 0; k < RTF_ITERS; k++)
        cr_assert_leq(o.fp[k], q->predicted_footprint, "real time: iteration %d footprint %zu",
                      k + 1, o.fp[k]);
    printf("resnet50 b2 adam at %zu: a release made to precede the next op (%d tried): period "
           "%.1f -> %.1f us, footprint %zu -> %zu, identical to vanilla %016llx\n",
           budget, tried, p->predicted_period_us, q->predicted_period_us, p->predicted_footprint,
           q->predicted_footprint, (unsigned long long)c.ref);
    tsl_plan_free(q);
    tsl_plan_free(p);
    rtf_free(&c);
}

/* The wider ways (docs/SCHEDULING.md, "Planning to a budget"): vgg16 at
 * batch 16 (`tensile frontier`'s shape: 1000 classes, 224 px, Adam) on
 * the a6000 profile at 0.7 of vanilla's footprint peaks at classifier.0's
 * weight gradient, fc6's Adam moments resident with no access before
 * their update, and the four ways stop at MSR 0.274; resnet50 at 0.3,
 * where they stop at MSR 0.634. Both are met only with swaps across the
 * boundary the four ways do not offer. inception3 at 0.3 is met only by
 * the fourth wider way, swaps across the boundary and swap-ins turned into
 * recomputations together (each alone: unmet, MSR 0.677). */
Test(tensile_budget, wider_ways_meet_vgg16_at_0_7_and_resnet50_at_0_3, .timeout = 600) {
    static const struct {
        const char *model;
        double frac;
    } CASES[] = {{"vgg16", 0.7}, {"resnet50", 0.3}, {"inception3", 0.3}};
    for (int i = 0; i < 3; i++) {
        tsl_device_profile dev;
        tsl_workload *w = frontier_job(CASES[i].model, 16, "a6000", &dev);
        pc_result r;
        char what[64];
        snprintf(what, sizeof what, "%s b16 a6000", CASES[i].model);
        size_t budget = plan_at_fraction(&w, &dev, CASES[i].frac, what, &r);
        int across = pc_across_swaps(w, r.p[0]);
        printf("%s at %.2f: footprint %zu of budget %zu (met %d), %d swaps across the boundary, "
               "EOR %.4f\n", what, CASES[i].frac, footprint(&r), budget, r.rep.budget_met, across,
               r.p[0]->predicted_period_us / w->period_us);
        cr_assert(r.rep.budget_met, "%s: footprint %zu above %zu", what, footprint(&r), budget);
        cr_assert_gt(across, 0, "%s: no swap across the boundary", what);
        if (i == 2) {
            cr_assert_gt(pc_converted(r.p[0]), 0, "%s: no swap-in turned into a recomputation",
                         what);
            /* the footprint rounds plan again at a lower load budget, which
             * the fourth wider way misses and the last resort meets: its
             * plan must not displace the fourth way's, whose footprint
             * fits (EOR 1.1313 against 1.4965) */
            cr_assert_eq(preceding_releases(r.p[0]), 0, "%s: the last resort's plan was kept",
                         what);
        }
        pc_result_free(&r);
        tsl_workload_free(w);
    }
}

/* A recomputation before the first recomputation of the plan that reads
 * its tensor (docs/SCHEDULING.md, the chain rule): resnet50 at batch 184
 * on the V100 profile, MONeT's shape, at 0.40 of vanilla's footprint.
 * Recomputing a block's output released it after its forward read, and a
 * chain already planned for an op before its back access had stopped at
 * it as a resident input: the commit was undone (125 of the 671 commits
 * at 0.33). Run before that chain, the recomputation serves both, and the
 * budget mode meets 0.40 at or below MONeT's +9.3 % (before: 1.1312 by
 * the wider ways; unmet before those). */
Test(tensile_budget, resnet50_v100_at_monet_0_40, .timeout = 600) {
    if (th_quick())
        cr_skip_test("resnet50 at batch 184 plans in the release build only (TSL_TEST_QUICK)");
    tsl_device_profile dev;
    tsl_workload *w = frontier_job("resnet50", 184, "v100", &dev);
    pc_result r;
    size_t budget = plan_at_fraction(&w, &dev, 0.40, "resnet50 b184 v100", &r);
    double eor = r.p[0]->predicted_period_us / w->period_us;
    int early = pc_early_recomputes(w, r.p[0]);
    printf("resnet50 b184 v100 at 0.40: footprint %zu of budget %zu (met %d), %d recomputations "
           "(%d early), EOR %.4f\n", footprint(&r), budget, r.rep.budget_met,
           r.rep.recomputes[0], early, eor);
    cr_assert(r.rep.budget_met, "footprint %zu above %zu", footprint(&r), budget);
    cr_assert_gt(early, 0, "no recomputation before an earlier one reading its tensor");
    cr_assert_leq(eor, 1.09, "EOR %.4f above the target 1.09 (MONeT's +9.3 %%)", eor);
    pc_result_free(&r);
    tsl_workload_free(w);
}

/* tsl_plan_request.missed: the footprint rounds lower the budget, and a
 * way that missed a higher budget would plan the same again, so TENSILE
 * skips it. resnet50 at batch 16 on the a6000 at 0.3 of vanilla's
 * footprint (the four ways miss it, a wider way meets it), then at the
 * lower budget the footprint rounds ask for: the plan with the skips is
 * the plan without them. */
Test(tensile_budget, ways_that_missed_a_higher_budget_are_skipped, .timeout = 600) {
    if (th_quick())
        cr_skip_test("resnet50 at batch 16 plans nine ways: the release build only");
    tsl_device_profile dev;
    tsl_workload *w = frontier_job("resnet50", 16, "a6000", &dev);
    const tsl_policy *pol = tsl_policy_find("tensile");
    cr_assert_not_null(pol);
    tsl_tensile_opts to = tsl_tensile_opts_default();
    const tsl_device_profile *jd = &dev;
    uint32_t missed = 0;
    tsl_plan_request rq = {.w = &w, .n_jobs = 1, .dev = &dev, .job_dev = &jd,
                           .shared_channels = 1, .budget = 500605670, .just_enough = 1,
                           .opts = &to, .missed = &missed};
    /* 0.3, then the footprint rounds' next budget with the memo and
     * without; then 0.2, which no way meets (the first way, put off, is
     * planned last and kept), with the memo and without */
    const size_t budget[5] = {500605670, 483761158, 483761158, 333737113, 333737113};
    tsl_plan *p[5];
    int it[5] = {0};
    for (int k = 0; k < 5; k++) {
        p[k] = tsl_plan_new(w->job);
        cr_assert_not_null(p[k]);
        rq.budget = budget[k];
        rq.missed = k == 2 || k == 4 ? NULL : &missed;
        cr_assert_eq(pol->plan(&rq, &p[k], &it[k]), TSL_OK, "%s", tsl_last_error());
        tsl_plan_sort(p[k]);
        if (k == 0) {
            cr_assert_neq(missed, 0, "no way missed 0.3: no test");
            /* the first way's bit (policy_tensile.c: after the eight others) */
            cr_assert(missed & (1u << 8), "the first way missed 0.3 unrecorded: %#x", missed);
        }
    }
    printf("resnet50 b16 a6000: ways that missed 0.3 or 0.2: %#x; at the lower budget %d events "
           "with them skipped, %d without; at 0.2 %d and %d; iterations %d, %d, %d, %d\n",
           missed, p[1]->n_events, p[2]->n_events, p[3]->n_events, p[4]->n_events, it[1], it[2],
           it[3], it[4]);
    for (int k = 1; k < 5; k += 2) {
        char what[64];
        snprintf(what, sizeof what, "the skips at %zu bytes", budget[k]);
        expect_same_events(p[k], p[k + 1], what);
        cr_assert_lt(it[k], it[k + 1], "nothing skipped at %zu bytes", budget[k]);
    }
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, p[3], &dev, &pi), TSL_OK, "%s", tsl_last_error());
    cr_assert_gt(pi.peak, budget[3], "0.2 met: the first way put off is not tested");
    tsl_peak_info_free(&pi);
    /* the first way put off and planned after another that misses with
     * higher peaks (single-output recomputations with every swap size, way
     * 2, at 0.3: 730 MB against its 676 MB) is kept, as when it comes
     * first: every other way's bit set but that one's, with the first way's
     * bit (bit 8) and without */
    tsl_plan *q[2];
    for (int k = 0; k < 2; k++) {
        uint32_t preset = (k ? 0x1ffu : 0xffu) & ~(1u << 2);
        q[k] = tsl_plan_new(w->job);
        cr_assert_not_null(q[k]);
        rq.budget = budget[0];
        rq.missed = &preset;
        cr_assert_eq(pol->plan(&rq, &q[k], &it[0]), TSL_OK, "%s", tsl_last_error());
        tsl_plan_sort(q[k]);
    }
    expect_same_events(q[0], q[1], "the first way put off");
    for (int k = 0; k < 2; k++) tsl_plan_free(q[k]);
    for (int k = 0; k < 5; k++) tsl_plan_free(p[k]);
    tsl_workload_free(w);
}

/* Late swap-ins: resnet18 at batch 24, 40 px, SGD, on the rough CPU
 * profile with 2 GB/s channels (bench/frontier_real.py's shape) at 0.30 of
 * vanilla's footprint. Algorithm 3 swaps layer4's 9.4 MB weights in their
 * forward-backward gaps with swap-ins placed after the peaks it saw; the
 * budget mode's later peak, in layer4's backward pass, finds them landed
 * already. Moving such a swap-in after the new peak is a candidate form:
 * with it the budget mode meets 0.30 (before it: stuck at 40119808 bytes,
 * unmet below 0.36). */
Test(tensile_budget, late_swap_ins_meet_resnet18_at_0_3, .timeout = 600) {
    tsl_device_profile dev = tsl_profile_cpu_rough();
    dev.h2d_bw = dev.d2h_bw = 2e9;
    dev.mem_bytes = (size_t)1 << 30;
    tsl_workload *w = pc_zoo_workload_at("resnet18", &dev, 0, 24, 40);
    pc_result r;
    size_t budget = plan_at_fraction(&w, &dev, 0.30, "resnet18 b24 40px", &r);
    printf("resnet18 b24 40px at 0.30: footprint %zu of budget %zu (met %d), %d swaps, EOR %.4f\n",
           footprint(&r), budget, r.rep.budget_met, r.rep.swaps[0],
           r.p[0]->predicted_period_us / w->period_us);
    cr_assert(r.rep.budget_met, "footprint %zu above %zu", footprint(&r), budget);
    cr_assert_leq(footprint(&r), budget);
    pc_result_free(&r);
    tsl_workload_free(w);
}


/* The last resort (docs/SCHEDULING.md, "Planning to a budget"): MONeT's
 * resnet50 shape (batch 184, V100 profile) at 0.33 of vanilla's footprint
 * is missed by every way but the fifth wider one, which lets the op at a
 * peak wait for a swap-out that does not end by it: met, with releases
 * preceding ops in the plan, verified. The first footprint round's plan
 * (EOR 1.173) misses the budget only in its layout; the second round's,
 * at the budget lowered by the layout's overhead, meets it at EOR 1.656;
 * the bisection between them keeps a plan in between that meets it at
 * 1.191 (fails without it). The same shape at 0.4 is met before the wider
 * ways: no release precedes an op there. Where the last resort misses
 * too, its plan is not kept. */
Test(tensile_budget, swap_out_waits_meet_resnet50_v100_at_0_33, .timeout = 600) {
    static const double FRACS[] = {0.4, 0.33};
    for (int i = 0; i < 2; i++) {
        tsl_device_profile dev;
        tsl_workload *w = frontier_job("resnet50", 184, "v100", &dev);
        pc_result r;
        size_t budget = plan_at_fraction(&w, &dev, FRACS[i], "resnet50 b184 v100", &r);
        int waits = preceding_releases(r.p[0]);
        printf("resnet50 b184 v100 at %.2f: footprint %zu of budget %zu (met %d), %d releases "
               "preceding an op, EOR %.4f\n", FRACS[i], footprint(&r), budget, r.rep.budget_met,
               waits, r.p[0]->predicted_period_us / w->period_us);
        cr_assert(r.rep.budget_met, "at %.2f: footprint %zu above %zu", FRACS[i], footprint(&r),
                  budget);
        if (i == 0) cr_assert_eq(waits, 0, "at 0.4: %d releases precede an op", waits);
        else {
            cr_assert_gt(waits, 0, "at 0.33: no release precedes an op");
            double eor = r.p[0]->predicted_period_us / w->period_us;
            cr_assert_lt(eor, 1.25, "at 0.33: EOR %.4f: the rounds' bisection kept no faster plan",
                         eor);
        }
        pc_result_free(&r);
        tsl_workload_free(w);
    }
    /* missed, the last resort's plan is not kept: vgg11 at batch 8, 32 px,
     * 0.6 (its plan had a lower load, 0.4 MB more footprint, EOR 1.368
     * against the kept 1.072) */
    tsl_device_profile dev;
    cr_assert_eq(tsl_profile_load("a6000", &dev), TSL_OK, "%s", tsl_last_error());
    tsl_model_cfg cfg = tsl_model_cfg_default("vgg11");
    cfg.batch = 8;
    cfg.image_size = 32;
    tsl_workload *w = pc_zoo_workload_cfg("vgg11", &dev, 1, &cfg);
    pc_result r;
    plan_at_fraction(&w, &dev, 0.6, "vgg11 b8 32px a6000", &r);
    cr_assert(!r.rep.budget_met, "vgg11 at 0.6 met: nothing tested");
    cr_assert_eq(preceding_releases(r.p[0]), 0, "vgg11 at 0.6: the missed last resort was kept");
    pc_result_free(&r);
    tsl_workload_free(w);
}
