/*
 * test_planner.c - the planning policies (src/sched/): TENSILE (peak
 * analysis, swap scheduling, across-iteration swapping, recomputation,
 * Algorithm 3 over several jobs) on hand-made workloads with known
 * answers; the shared accounting with a planned wait; the policy registry,
 * options by name, a policy defined here on the planner kit and
 * registered at run time; job counts sized at run time (40 jobs). The real
 * graphs are in test_planner_graphs.c: this program links the sched layer
 * alone (no backend, no jansson), as the planner is built.
 *
 * Hand-made workloads use a test profile whose copies take bytes / 1000 µs
 * exactly (1 GB/s, no latency) and integer op latencies, so every time in
 * them is exact. Every plan is also checked by the independent verifier.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "helpers.h"
#include "plan_check.h"
#include "sched/kit.h"
#include "tensile/policy.h"
#include "tensile/policy_tensile.h"
#include "tensile/verify.h"

/* ---- hand-made workloads ------------------------------------------------------ */

#define WL_CAP 64

/* An empty workload laid out as tsl_workload_free expects. */
static tsl_workload *wl_new(const char *job) {
    tsl_workload *w = calloc(1, sizeof *w);
    cr_assert(w);
    snprintf(w->job, sizeof w->job, "%s", job);
    w->tensors = calloc(WL_CAP, sizeof *w->tensors);
    w->ops = calloc(WL_CAP, sizeof *w->ops);
    cr_assert(w->tensors && w->ops);
    w->optimizer_begin = -1;
    return w;
}

static int32_t wl_tensor(tsl_workload *w, const char *name, size_t bytes, tsl_tensor_kind k) {
    cr_assert(w->n_tensors < WL_CAP);
    tsl_wl_tensor *t = &w->tensors[w->n_tensors];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->bytes = bytes;
    t->kind = k;
    t->producer = -1;
    return w->n_tensors++;
}

/* Appends an op of latency `lat` µs right after the previous one. */
static int32_t wl_op(tsl_workload *w, const char *name, double lat, size_t ws,
                     const int32_t *in, int n_in, const int32_t *out, int n_out) {
    cr_assert(w->n_ops < WL_CAP);
    int32_t i = w->n_ops;
    tsl_wl_op *op = &w->ops[i];
    snprintf(op->name, sizeof op->name, "%s", name);
    op->start_us = i ? w->ops[i - 1].end_us : 0.0;
    op->end_us = op->start_us + lat;
    op->workspace = ws;
    op->n_in = n_in;
    op->n_out = n_out;
    op->in = n_in ? malloc(sizeof(int32_t) * (size_t)n_in) : NULL;
    op->out = malloc(sizeof(int32_t) * (size_t)n_out);
    if (n_in) memcpy(op->in, in, sizeof(int32_t) * (size_t)n_in);
    memcpy(op->out, out, sizeof(int32_t) * (size_t)n_out);
    for (int j = 0; j < n_out; j++) {
        tsl_wl_tensor *t = &w->tensors[out[j]];
        if (!tsl_kind_is_persistent(t->kind) && t->producer < 0) t->producer = i;
    }
    w->n_ops++;
    w->period_us = op->end_us;
    return i;
}

static void wl_mark_optimizer(tsl_workload *w) { w->optimizer_begin = w->n_ops; }

static tsl_workload *wl_end(tsl_workload *w) {
    if (w->optimizer_begin < 0) w->optimizer_begin = w->n_ops;
    return w;
}

#define IN(...) (int32_t[]){__VA_ARGS__}, (int)(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

/* Copies take bytes / 1000 µs; nothing else matters to the planner. */
static tsl_device_profile test_dev(void) {
    tsl_device_profile d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "test");
    d.flops = 1e12;
    d.mem_bw = 1e11;
    d.mem_bytes = (size_t)1 << 40;
    d.h2d_bw = d.d2h_bw = 1e9;
    d.duplex = 1;
    return d;
}

static void print_plan(const tsl_workload *w, const tsl_plan *p) {
    static const char *ty[] = {"swap_out", "swap_in", "release", "recompute"};
    fprintf(stderr, "plan '%s' (%d events, peak %zu, period %.17g):\n", p->job, p->n_events,
            p->predicted_peak, p->predicted_period_us);
    for (int32_t k = 0; k < p->n_events; k++) {
        const tsl_event *e = &p->events[k];
        fprintf(stderr, "  %-9s %-6s trigger %d delay %.17g precede %d\n", ty[e->type],
                w->tensors[e->tensor].name, e->trigger, e->delay_us, e->precede);
    }
}

/* Index of the first event of type ty on tensor t, or -1. */
static int find_ev(const tsl_plan *p, tsl_event_type ty, int32_t t) {
    for (int32_t k = 0; k < p->n_events; k++)
        if (p->events[k].type == ty && p->events[k].tensor == t) return k;
    return -1;
}

/* ---- the chain where exactly one swap fits -------------------------------------- */

/* x -> a -> (b, h) -> c -> d -> e -> f; a and h are read again by the last
 * op. The vanilla peak is at op3 (t = 60): a b h c d = 105000 bytes. h
 * (45000) is the largest candidate but its swap-out (45 µs from t = 20)
 * cannot end by the peak; a (10000) can: out over [10, 20] after its TGA,
 * released after op1 (its last access before the peak), back in over
 * [120, 130) right before op5 needs it. */
static tsl_workload *chain(const char *job, int32_t *ta, int32_t *th) {
    tsl_workload *w = wl_new(job);
    int32_t x = wl_tensor(w, "x", 1000, TSL_KIND_INPUT);
    int32_t a = wl_tensor(w, "a", 10000, TSL_KIND_ACTIVATION);
    int32_t b = wl_tensor(w, "b", 10000, TSL_KIND_ACTIVATION);
    int32_t h = wl_tensor(w, "h", 45000, TSL_KIND_ACTIVATION);
    int32_t c = wl_tensor(w, "c", 20000, TSL_KIND_ACTIVATION);
    int32_t d = wl_tensor(w, "d", 20000, TSL_KIND_GRADIENT);
    int32_t e = wl_tensor(w, "e", 10000, TSL_KIND_GRADIENT);
    int32_t f = wl_tensor(w, "f", 1000, TSL_KIND_GRADIENT);
    wl_op(w, "op0", 10, 0, IN(x), IN(a));
    wl_op(w, "op1", 10, 0, IN(a), IN(b, h));
    wl_op(w, "op2", 40, 0, IN(b), IN(c));
    wl_op(w, "op3", 40, 0, IN(c, b), IN(d));
    wl_op(w, "op4", 30, 0, IN(d), IN(e));
    wl_op(w, "op5", 10, 0, IN(e, a, h), IN(f));
    if (ta) *ta = a;
    if (th) *th = h;
    return wl_end(w);
}

Test(planner, chain_exactly_one_swap) {
    int32_t a, h;
    tsl_workload *w = chain("chain", &a, &h);
    tsl_device_profile dev = test_dev();
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, NULL, &dev, &pi), TSL_OK);
    cr_assert_eq(pi.peak, 105000u);
    cr_assert_eq(pi.peak_op, 3);
    cr_assert_eq(pi.peak_time_us, 60.0);
    cr_assert_eq(pi.n_resident, 5);
    cr_assert_eq(pi.resident[0], h, "largest first");
    tsl_peak_info_free(&pi);

    tsl_plan *p;
    tsl_plan_report rep;
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.swap_in_slack = 0; /* worked by hand with the paper's placement */
    to.prefetch = 0;
    tsl_plan_opts o = tsl_plan_opts_default();
    o.opts = &to;
    th_plan_checked(&w, 1, &dev, &o, &p, &rep);
    print_plan(w, p);
    cr_assert_eq(p->n_events, 3);
    int so = find_ev(p, TSL_EV_SWAP_OUT, a), rl = find_ev(p, TSL_EV_RELEASE, a),
        si = find_ev(p, TSL_EV_SWAP_IN, a);
    cr_assert(so >= 0 && rl >= 0 && si >= 0, "a is swapped out, released and swapped in");
    /* out right after its TGA (op0 ends at 10) */
    cr_assert_eq(p->events[so].trigger, 0);
    cr_assert_eq(p->events[so].delay_us, 0.0);
    /* released at the end of op1, its last access before the peak */
    cr_assert_eq(p->events[rl].trigger, 1);
    cr_assert_eq(p->events[rl].delay_us, 0.0);
    /* in as late as possible: its copy ends just before op5 starts at 130 */
    const tsl_event *e = &p->events[si];
    cr_assert_eq(e->precede, 5);
    cr_assert_eq(e->trigger, 3, "the last op ending before the start (op3 ends at 100)");
    double issue = w->ops[3].end_us + e->delay_us;
    cr_assert(issue + 10.0 <= 130.0 && issue + 10.0 > 130.0 - 1e-6, "swap-in ends at %.17g",
              issue + 10.0);
    cr_assert_eq(p->predicted_peak, 95000u);
    cr_assert_eq(p->predicted_period_us, 140.0);
    cr_assert_eq(rep.vanilla_peak[0], 105000u);
    cr_assert_eq(rep.swaps[0], 1);
    cr_assert_eq(rep.recomputes[0], 0);
    cr_assert_eq(rep.bytes_d2h[0], 10000u);
    cr_assert_eq(rep.bytes_h2d[0], 10000u);
    cr_assert_gt(rep.iterations, 0);
    cr_assert_geq(rep.planning_ms, 0.0);
    tsl_plan_report_free(&rep);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

/* The smallest tensor swapped: a (10000 bytes) is the one swap that fits
 * in the chain; a floor above it leaves the plan empty, a floor at it
 * keeps the swap; the default floor is the smaller of one copy latency's
 * bytes (20 µs x 1 GB/s = 20000) and a thousandth of the vanilla peak
 * (105 bytes), so a is swapped. */
Test(planner, min_swap_bytes_keeps_small_tensors_resident) {
    tsl_device_profile dev = test_dev();
    dev.copy_latency_us = 20;
    double floors[] = {10001, 10000, -1};
    int swaps[] = {0, 1, 1};
    for (int i = 0; i < 3; i++) {
        int32_t a;
        tsl_workload *w = chain("chain", &a, NULL);
        tsl_plan *p;
        tsl_plan_report rep;
        tsl_tensile_opts to = tsl_tensile_opts_default();
        cr_assert_eq(to.min_swap_bytes, -1.0, "the default floor");
        to.min_swap_bytes = floors[i];
        tsl_plan_opts o = tsl_plan_opts_default();
        o.opts = &to;
        th_plan_checked(&w, 1, &dev, &o, &p, &rep);
        cr_assert_eq(rep.swaps[0], swaps[i], "floor %g: %d swaps", floors[i], rep.swaps[0]);
        cr_assert_eq(find_ev(p, TSL_EV_SWAP_OUT, a) >= 0, swaps[i] == 1);
        tsl_plan_report_free(&rep);
        tsl_plan_free(p);
        tsl_workload_free(w);
    }
    /* the latency floor alone: 5000 bytes below a thousandth of the peak */
    tsl_workload *w = wl_new("small");
    int32_t x = wl_tensor(w, "x", 1000, TSL_KIND_INPUT);
    int32_t big = wl_tensor(w, "big", 9000000, TSL_KIND_ACTIVATION);
    int32_t small = wl_tensor(w, "small", 4000, TSL_KIND_ACTIVATION);
    int32_t y = wl_tensor(w, "y", 9000000, TSL_KIND_ACTIVATION);
    int32_t z = wl_tensor(w, "z", 1000, TSL_KIND_GRADIENT);
    int32_t u = wl_tensor(w, "u", 1000, TSL_KIND_GRADIENT);
    wl_op(w, "op0", 10, 0, IN(x), IN(small));
    wl_op(w, "op1", 1000, 0, IN(x), IN(big));
    wl_op(w, "op2", 100000, 0, IN(big), IN(y)); /* the peak: big, y and small */
    wl_op(w, "op3", 100, 0, IN(y), IN(z));
    wl_op(w, "op4", 10, 0, IN(z, small), IN(u));
    w = wl_end(w);
    dev.copy_latency_us = 5; /* 5000 bytes; a thousandth of the peak is 18004 */
    tsl_plan *p;
    tsl_plan_report rep;
    tsl_plan_opts o = tsl_plan_opts_default();
    th_plan_checked(&w, 1, &dev, &o, &p, &rep);
    cr_assert_eq(find_ev(p, TSL_EV_SWAP_OUT, small), -1, "4000 bytes: below one copy latency");
    tsl_plan_report_free(&rep);
    tsl_plan_free(p);
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.min_swap_bytes = 0; /* the paper: any size */
    o.opts = &to;
    th_plan_checked(&w, 1, &dev, &o, &p, &rep);
    cr_assert_geq(find_ev(p, TSL_EV_SWAP_OUT, small), 0, "with no floor it is swapped");
    tsl_plan_report_free(&rep);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

/* Prefetching (tensile_opts.prefetch, src/sched/prefetch.c) on the chain:
 * a goes out over [10, 20), is released after op1 (t = 20), and comes back
 * for op5 (t = 130). Without prefetching its copy ends at 130; with it, the
 * copy starts as soon as a's place in the layout is free (not before 20),
 * in idle channel time: strictly earlier, the same footprint and layout,
 * the plan still verified, the peak load no higher than vanilla's. */
Test(planner, prefetch_moves_a_swap_in_into_its_free_place) {
    tsl_device_profile dev = test_dev();
    double issue[2];
    size_t footprint[2], peak[2];
    for (int pf = 0; pf < 2; pf++) {
        int32_t a;
        tsl_workload *w = chain("chain", &a, NULL);
        tsl_plan *p;
        tsl_plan_report rep;
        tsl_tensile_opts to = tsl_tensile_opts_default();
        to.prefetch = pf;
        tsl_plan_opts o = tsl_plan_opts_default();
        o.opts = &to;
        o.layout_align = 1;
        th_plan_checked(&w, 1, &dev, &o, &p, &rep);
        print_plan(w, p);
        int si = find_ev(p, TSL_EV_SWAP_IN, a);
        cr_assert_geq(si, 0);
        const tsl_event *e = &p->events[si];
        issue[pf] = (e->trigger < 0 ? 0.0 : w->ops[e->trigger].end_us) + e->delay_us;
        cr_assert_eq(e->precede, 5);
        footprint[pf] = p->predicted_footprint;
        peak[pf] = p->predicted_peak;
        tsl_plan_report_free(&rep);
        tsl_plan_free(p);
        tsl_workload_free(w);
    }
    cr_assert(issue[0] + 10.0 > 130.0 - 1e-6, "as late as possible: in over [%g, %g)", issue[0],
              issue[0] + 10.0);
    cr_assert_lt(issue[1], issue[0], "prefetched: issued at %g, before %g", issue[1], issue[0]);
    cr_assert_geq(issue[1], 20.0, "not before a's release at 20 (issued at %g)", issue[1]);
    /* its place shares bytes with a block that dies when op3 ends */
    cr_assert_eq(issue[1], 100.0, "issued at %g", issue[1]);
    cr_assert_eq(footprint[1], footprint[0], "the same footprint");
    cr_assert_geq(peak[1], peak[0], "the load may only rise");
}

/* ---- across iterations ----------------------------------------------------------- */

/* P (40000) is first read by op2 (late in the forward) and updated by op5;
 * the optimizer phase ends with an update that needs a 100000-byte
 * workspace, which makes the peak (at op7, t = 145). P can only leave
 * after its update: out over [95, 135] after op5, released, absent at the
 * start of the next iteration, and back in before op2 (copy over [20, 60)). */
static tsl_workload *across(int32_t *tp) {
    tsl_workload *w = wl_new("across");
    int32_t x = wl_tensor(w, "x", 1000, TSL_KIND_INPUT);
    int32_t P = wl_tensor(w, "P", 40000, TSL_KIND_PARAM);
    int32_t Q = wl_tensor(w, "Q", 2000, TSL_KIND_PARAM);
    int32_t R = wl_tensor(w, "R", 1000, TSL_KIND_PARAM);
    int32_t y = wl_tensor(w, "y", 5000, TSL_KIND_ACTIVATION);
    int32_t z = wl_tensor(w, "z", 5000, TSL_KIND_ACTIVATION);
    int32_t l = wl_tensor(w, "l", 1000, TSL_KIND_ACTIVATION);
    int32_t gP = wl_tensor(w, "gP", 40000, TSL_KIND_GRADIENT);
    int32_t gQ = wl_tensor(w, "gQ", 2000, TSL_KIND_GRADIENT);
    int32_t gR = wl_tensor(w, "gR", 1000, TSL_KIND_GRADIENT);
    wl_op(w, "f0", 10, 0, IN(x, Q, R), IN(y));
    wl_op(w, "f1", 50, 0, IN(y), IN(z));
    wl_op(w, "f2", 10, 0, IN(z, P), IN(l));
    wl_op(w, "b2", 10, 0, IN(l, z), IN(gP, gR));
    wl_op(w, "b0", 10, 0, IN(y), IN(gQ));
    wl_mark_optimizer(w);
    wl_op(w, "upd_P", 5, 0, IN(P, gP), IN(P));
    wl_op(w, "upd_Q", 50, 0, IN(Q, gQ), IN(Q));
    wl_op(w, "upd_R", 5, 100000, IN(R, gR), IN(R));
    *tp = P;
    return wl_end(w);
}

Test(planner, across_iteration_updated_parameter) {
    int32_t P;
    tsl_workload *w = across(&P);
    tsl_device_profile dev = test_dev();
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, NULL, &dev, &pi), TSL_OK);
    cr_assert_eq(pi.peak, 144000u, "P Q R gR + the workspace");
    cr_assert_eq(pi.peak_op, 7);
    cr_assert_geq(pi.peak_op, w->optimizer_begin, "the peak is in the optimizer phase");
    tsl_peak_info_free(&pi);

    tsl_plan *p;
    tsl_plan_report rep;
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.prefetch = 0; /* the paper's placement: in as late as possible */
    tsl_plan_opts o = tsl_plan_opts_default();
    o.opts = &to;
    th_plan_checked(&w, 1, &dev, &o, &p, &rep);
    print_plan(w, p);
    cr_assert_eq(p->n_events, 3);
    int so = find_ev(p, TSL_EV_SWAP_OUT, P), rl = find_ev(p, TSL_EV_RELEASE, P),
        si = find_ev(p, TSL_EV_SWAP_IN, P);
    cr_assert(so >= 0 && rl >= 0 && si >= 0);
    cr_assert_eq(p->events[so].trigger, 5, "out after the update");
    cr_assert_eq(p->events[so].delay_us, 0.0);
    cr_assert_geq(p->events[rl].trigger, 5, "released after the last access");
    cr_assert_eq(p->events[si].precede, 2, "in before the first read of the next iteration");
    cr_assert_eq(p->events[si].trigger, 0, "triggered within the iteration");
    double end = w->ops[0].end_us + p->events[si].delay_us + 40.0;
    cr_assert(end <= w->ops[2].start_us && end > w->ops[2].start_us - 1e-6);
    /* the optimizer-phase peak fell by P's bytes */
    cr_assert_eq(p->predicted_peak, 104000u);
    cr_assert(tsl_peak_analysis(w, p, &dev, &pi) == TSL_OK);
    cr_assert_eq(pi.peak_op, 7);
    tsl_peak_info_free(&pi);
    tsl_plan_report_free(&rep);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

/* ---- recomputation --------------------------------------------------------------- */

/* No copy fits (a 1 B/s link), and the budget is below the vanilla peak.
 * At the peak (op4, t = 145: x a b c d e = 106000) a (30000 B, producer
 * latency 30: MSPS 1000) and b (20000 B, latency 5: MSPS 4000) can both be
 * recomputed (x, a are alive until the end); b is chosen: released after
 * op2, gone over [135, 155), regenerated before op5. The peak becomes the
 * op2 point (x a b c = 91000), under the budget, so nothing else is done. */
Test(planner, recompute_max_msps) {
    tsl_workload *w = wl_new("rc");
    int32_t x = wl_tensor(w, "x", 1000, TSL_KIND_INPUT);
    int32_t a = wl_tensor(w, "a", 30000, TSL_KIND_ACTIVATION);
    int32_t b = wl_tensor(w, "b", 20000, TSL_KIND_ACTIVATION);
    int32_t c = wl_tensor(w, "c", 40000, TSL_KIND_ACTIVATION);
    int32_t d = wl_tensor(w, "d", 10000, TSL_KIND_ACTIVATION);
    int32_t e = wl_tensor(w, "e", 5000, TSL_KIND_GRADIENT);
    int32_t f = wl_tensor(w, "f", 5000, TSL_KIND_GRADIENT);
    int32_t g = wl_tensor(w, "g", 1000, TSL_KIND_GRADIENT);
    wl_op(w, "f0", 30, 0, IN(x), IN(a));
    wl_op(w, "f1", 5, 0, IN(a), IN(b));
    wl_op(w, "f2", 100, 0, IN(b), IN(c));
    wl_op(w, "f3", 10, 0, IN(c), IN(d));
    wl_op(w, "g3", 10, 0, IN(d, c), IN(e));
    wl_op(w, "g2", 10, 0, IN(e, b), IN(f));
    wl_op(w, "g1", 10, 0, IN(f, a, x), IN(g));
    wl_end(w);
    tsl_device_profile dev = test_dev();
    dev.h2d_bw = dev.d2h_bw = 1.0;
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, NULL, &dev, &pi), TSL_OK);
    cr_assert_eq(pi.peak, 106000u);
    cr_assert_eq(pi.peak_op, 4);
    tsl_peak_info_free(&pi);

    tsl_plan *p;
    tsl_plan_report rep;
    tsl_tensile_opts to = tsl_tensile_opts_default();
    tsl_plan_opts o = tsl_plan_opts_default();
    o.opts = &to;
    o.budget = 95000;
    th_plan_checked(&w, 1, &dev, &o, &p, &rep);
    print_plan(w, p);
    cr_assert_eq(rep.swaps[0], 0);
    cr_assert_eq(rep.recomputes[0], 1);
    cr_assert_eq(p->n_events, 2);
    int rc = find_ev(p, TSL_EV_RECOMPUTE, b), rl = find_ev(p, TSL_EV_RELEASE, b);
    cr_assert(rc >= 0 && rl >= 0, "b (MSPS 4000) is recomputed, not a (MSPS 1000, larger)");
    cr_assert_eq(p->events[rc].precede, 5, "right before its next read");
    cr_assert_eq(p->events[rc].trigger, -1);
    cr_assert_eq(p->events[rl].trigger, 2, "released after its access before the peak");
    cr_assert_eq(p->predicted_period_us, w->period_us + 5.0, "the period grows by f1's latency");
    cr_assert_eq(p->predicted_peak, 91000u);
    cr_assert_leq(p->predicted_peak, o.budget);
    /* with recomputation switched off nothing can be done */
    tsl_plan_free(p);
    tsl_plan_report_free(&rep);
    to.recompute = 0;
    th_plan_checked(&w, 1, &dev, &o, &p, &rep);
    cr_assert_eq(p->n_events, 0);
    cr_assert_eq(p->predicted_peak, 106000u);
    tsl_plan_report_free(&rep);
    tsl_plan_free(p);
    (void)a;
    tsl_workload_free(w);
}

/* ---- two jobs, one channel ------------------------------------------------------- */

/* a1 and a2 are swappable in this job (the peak is at op4, t = 130). */
static tsl_workload *wide(const char *job) {
    tsl_workload *w = wl_new(job);
    int32_t x = wl_tensor(w, "x", 1000, TSL_KIND_INPUT);
    int32_t a1 = wl_tensor(w, "a1", 10000, TSL_KIND_ACTIVATION);
    int32_t a2 = wl_tensor(w, "a2", 8000, TSL_KIND_ACTIVATION);
    int32_t a3 = wl_tensor(w, "a3", 6000, TSL_KIND_ACTIVATION);
    int32_t c = wl_tensor(w, "c", 50000, TSL_KIND_ACTIVATION);
    int32_t d = wl_tensor(w, "d", 1000, TSL_KIND_GRADIENT);
    int32_t e = wl_tensor(w, "e", 1000, TSL_KIND_GRADIENT);
    int32_t h = wl_tensor(w, "h", 1000, TSL_KIND_GRADIENT);
    wl_op(w, "f0", 10, 0, IN(x), IN(a1));
    wl_op(w, "f1", 10, 0, IN(a1), IN(a2));
    wl_op(w, "f2", 10, 0, IN(a2), IN(a3));
    wl_op(w, "f3", 100, 0, IN(a3), IN(c));
    wl_op(w, "g3", 10, 0, IN(c, a3), IN(d));
    wl_op(w, "g2", 10, 0, IN(d, a2), IN(e));
    wl_op(w, "g1", 10, 0, IN(e, a1), IN(h));
    return wl_end(w);
}

Test(planner, two_jobs_share_the_channels) {
    tsl_workload *w[2] = {wide("wide"), chain("chain", NULL, NULL)};
    tsl_device_profile dev = test_dev();
    tsl_plan *p[2];
    tsl_plan_report rep;
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.swap_in_slack = 0; /* worked by hand with the paper's placement */
    to.prefetch = 0;
    tsl_plan_opts o = tsl_plan_opts_default();
    o.opts = &to;
    th_plan_checked(w, 2, &dev, &o, p, &rep);
    print_plan(w[0], p[0]);
    print_plan(w[1], p[1]);
    cr_assert_eq(rep.swaps[0], 2, "a1 and a2");
    cr_assert_eq(rep.swaps[1], 1, "a");
    cr_assert(th_channels_disjoint(w, p, 2, &dev, 0), "device-to-host bookings overlap");
    cr_assert(th_channels_disjoint(w, p, 2, &dev, 1), "host-to-device bookings overlap");
    /* both jobs want the D2H channel over [10, 20]: one of them waits */
    int s0 = find_ev(p[0], TSL_EV_SWAP_OUT, 1), s1 = find_ev(p[1], TSL_EV_SWAP_OUT, 1);
    cr_assert(s0 >= 0 && s1 >= 0);
    double i0 = w[0]->ops[p[0]->events[s0].trigger].end_us + p[0]->events[s0].delay_us;
    double i1 = w[1]->ops[p[1]->events[s1].trigger].end_us + p[1]->events[s1].delay_us;
    cr_assert(i0 != i1, "both swap-outs issued at %g", i0);
    for (int j = 0; j < 2; j++) tsl_plan_free(p[j]);
    tsl_plan_report_free(&rep);

    /* job 0 may hold at most half of the swapped tensors */
    double rates[2] = {0.5, 1.0};
    to.max_swap_rate = (tsl_per_job){.n = 2, .v = rates};
    th_plan_checked(w, 2, &dev, &o, p, &rep);
    cr_assert_eq(rep.swaps[1], 1);
    cr_assert_eq(rep.swaps[0], 1, "limited from 2 to 1 by the max swapping rate");
    cr_assert_leq(rep.swaps[0], 0.5 * (rep.swaps[0] + rep.swaps[1]));
    cr_assert(th_channels_disjoint(w, p, 2, &dev, 0) && th_channels_disjoint(w, p, 2, &dev, 1));
    for (int j = 0; j < 2; j++) tsl_plan_free(p[j]);
    tsl_plan_report_free(&rep);

    /* rate 0: job 0 is never swapped */
    rates[0] = 0.0;
    th_plan_checked(w, 2, &dev, &o, p, &rep);
    cr_assert_eq(rep.swaps[0], 0);
    cr_assert_eq(p[0]->n_events, 0);
    for (int j = 0; j < 2; j++) tsl_plan_free(p[j]);
    tsl_plan_report_free(&rep);

    /* a profile with one shared channel: the two directions never overlap */
    dev.duplex = 0;
    o = tsl_plan_opts_default();
    th_plan_checked(w, 2, &dev, &o, p, &rep);
    double s[256], e[256];
    int m = 0;
    for (int j = 0; j < 2; j++)
        for (int32_t k = 0; k < p[j]->n_events; k++) {
            const tsl_event *ev = &p[j]->events[k];
            if (ev->type != TSL_EV_SWAP_OUT && ev->type != TSL_EV_SWAP_IN) continue;
            cr_assert_lt(m, 256);
            s[m] = (ev->trigger < 0 ? 0.0 : w[j]->ops[ev->trigger].end_us) + ev->delay_us;
            e[m] = s[m] + tsl_copy_us(&dev, w[j]->tensors[ev->tensor].bytes,
                                      ev->type == TSL_EV_SWAP_IN);
            m++;
        }
    cr_assert_gt(m, 0);
    for (int i = 0; i < m; i++)
        for (int k = i + 1; k < m; k++)
            cr_assert(!(s[i] < e[k] && s[k] < e[i]), "shared channel: [%g,%g) and [%g,%g)", s[i],
                      e[i], s[k], e[k]);
    tsl_plan_report_free(&rep);
    for (int j = 0; j < 2; j++) {
        tsl_plan_free(p[j]);
        tsl_workload_free(w[j]);
    }
}

/* ---- the vanilla policy, errors ------------------------------------------------------ */

/* Channel shares (tsl_plan_opts.channel_share): each job plans its copies
 * on channels of its own at its share of the bandwidth. Each plan is then
 * the plan of that job alone on its share (the jobs no longer meet on the
 * channels), valid against that profile; shares out of range or summing
 * past 1 are refused. */
Test(planner, channel_shares_plan_each_job_on_its_share) {
    tsl_workload *w[2] = {wide("wide"), chain("chain", NULL, NULL)};
    tsl_device_profile dev = test_dev();
    dev.h2d_bw = dev.d2h_bw = 4e9; /* copies fast enough to fit at half the bandwidth */
    double share[2] = {0.5, 0.5};
    tsl_plan_opts o = tsl_plan_opts_default();
    o.channel_share = share;
    tsl_plan *p[2];
    tsl_plan_report rep;
    cr_assert_eq(tsl_plan_jobs(w, 2, &dev, &o, p, &rep), TSL_OK, "%s", tsl_last_error());
    int swaps = 0;
    for (int j = 0; j < 2; j++) {
        tsl_device_profile dj = tsl_profile_channel_share(&dev, share[j]);
        cr_assert_eq(dj.h2d_bw, 2e9);
        tsl_plan *alone;
        tsl_plan_report ra;
        tsl_plan_opts oa = tsl_plan_opts_default();
        th_plan_checked(&w[j], 1, &dj, &oa, &alone, &ra);
        print_plan(w[j], p[j]);
        cr_assert_eq(p[j]->n_events, alone->n_events, "job %d", j);
        for (int32_t k = 0; k < alone->n_events; k++) {
            const tsl_event *a = &p[j]->events[k], *b = &alone->events[k];
            cr_assert(a->type == b->type && a->tensor == b->tensor && a->trigger == b->trigger &&
                          a->delay_us == b->delay_us && a->precede == b->precede,
                      "job %d event %d differs from planning it alone on its share", j, k);
        }
        cr_assert_eq(p[j]->predicted_footprint, alone->predicted_footprint);
        swaps += rep.swaps[j];
        tsl_plan_report_free(&ra);
        tsl_plan_free(alone);
        tsl_plan_free(p[j]);
    }
    cr_assert_gt(swaps, 0, "the case swaps");
    tsl_plan_report_free(&rep);
    double bad[3][2] = {{0.0, 0.5}, {1.5, 0.1}, {0.6, 0.6}};
    const char *why[3] = {"channel_share[0] = 0", "channel_share[0] = 1.5", "sum to 1.2"};
    for (int i = 0; i < 3; i++) {
        o.channel_share = bad[i];
        cr_assert_eq(tsl_plan_jobs(w, 2, &dev, &o, p, &rep), TSL_ERR_INVALID);
        cr_assert(strstr(tsl_last_error(), why[i]), "%s", tsl_last_error());
    }
    for (int j = 0; j < 2; j++) tsl_workload_free(w[j]);
}

Test(planner, vanilla_policy_gives_empty_plans) {
    tsl_workload *w = chain("chain", NULL, NULL);
    tsl_device_profile dev = test_dev();
    tsl_plan_opts o = tsl_plan_opts_default();
    o.policy = tsl_policy_find("vanilla");
    cr_assert_not_null(o.policy, "%s", tsl_last_error());
    tsl_plan *p;
    tsl_plan_report rep;
    th_plan_checked(&w, 1, &dev, &o, &p, &rep);
    cr_assert_eq(p->n_events, 0);
    cr_assert_eq(p->predicted_peak, 105000u);
    cr_assert_eq(rep.vanilla_peak[0], 105000u);
    cr_assert_eq(rep.iterations, 0);
    cr_assert_str_eq(p->job, "chain");
    tsl_plan_report_free(&rep);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(planner, bad_arguments_are_reported) {
    tsl_workload *w = chain("chain", NULL, NULL);
    tsl_device_profile dev = test_dev();
    tsl_plan *p[17];
    tsl_plan_report rep;
    cr_assert_eq(tsl_plan_jobs(&w, 0, &dev, NULL, p, &rep), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "n_jobs 0"), "%s", tsl_last_error());
    /* job counts are sized at run time: 17 jobs plan (a test below plans 40) */
    tsl_workload *many[17];
    for (int i = 0; i < 17; i++) many[i] = w;
    cr_assert(TH_PLANNED(tsl_plan_jobs(many, 17, &dev, NULL, p, &rep)), "%s", tsl_last_error());
    cr_assert_eq(rep.n_jobs, 17);
    for (int i = 0; i < 17; i++) tsl_plan_free(p[i]);
    tsl_plan_report_free(&rep);
    tsl_workload *none = NULL;
    cr_assert_eq(tsl_plan_jobs(&none, 1, &dev, NULL, p, &rep), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "workload 0 is NULL"), "%s", tsl_last_error());
    tsl_tensile_opts to = tsl_tensile_opts_default();
    double rate = 1.5;
    to.max_swap_rate = (tsl_per_job){.n = 1, .v = &rate};
    tsl_plan_opts o = tsl_plan_opts_default();
    o.opts = &to;
    cr_assert_eq(tsl_plan_jobs(&w, 1, &dev, &o, p, &rep), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "max_swap_rate[0] = 1.5"), "%s", tsl_last_error());
    tsl_device_profile bad = dev;
    bad.h2d_bw = 0;
    cr_assert_eq(tsl_plan_jobs(&w, 1, &bad, NULL, p, &rep), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "h2d_bw 0"), "%s", tsl_last_error());
    w->ops[2].in[0] = 99;
    cr_assert_eq(tsl_plan_jobs(&w, 1, &dev, NULL, p, &rep), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "op 2 ('op2')") && strstr(tsl_last_error(), "99"), "%s",
              tsl_last_error());
    w->ops[2].in[0] = 2;

    /* the peak analysis checks events */
    tsl_plan *q = tsl_plan_new("chain");
    cr_assert_eq(tsl_plan_add(q, (tsl_event){TSL_EV_RELEASE, 42, 1, 0.0, -1}), TSL_OK);
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, q, &dev, &pi), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "event 0: tensor 42"), "%s", tsl_last_error());
    q->events[0] = (tsl_event){TSL_EV_SWAP_IN, 1, 2, -1.0, 4};
    cr_assert_eq(tsl_peak_analysis(w, q, &dev, &pi), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "delay_us -1"), "%s", tsl_last_error());
    q->events[0] = (tsl_event){TSL_EV_SWAP_IN, 1, 2, 0.0, 6};
    cr_assert_eq(tsl_peak_analysis(w, q, &dev, &pi), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "precede 6"), "%s", tsl_last_error());
    q->events[0] = (tsl_event){TSL_EV_RECOMPUTE, 0, -1, 0.0, 1};
    cr_assert_eq(tsl_peak_analysis(w, q, &dev, &pi), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "no producer"), "%s", tsl_last_error());
    tsl_plan_free(q);
    tsl_workload_free(w);
}

/* ---- the shared accounting ---------------------------------------------------------- */

/* The load after every allocation (the sweep's check points) of chain()
 * under plan p. */
static int64_t profile_of(const tsl_workload *w, const tsl_plan *p, const tsl_device_profile *dev,
                          double *time, size_t *load) {
    tsl__activity act;
    tsl__timeline tl;
    cr_assert_eq(tsl__activity_build(w, &act), TSL_OK);
    cr_assert_eq(tsl__timeline_build(w, p, dev, &tl), TSL_OK);
    tsl__effect *eff;
    int32_t ne;
    uint8_t ab[WL_CAP], res[WL_CAP];
    cr_assert_eq(tsl__effects_build(w, &act, &tl, p, dev, &eff, &ne, ab), TSL_OK);
    tsl__profile pf = {time, load, 0, 32};
    tsl__sweep sw;
    tsl__sweep_run(w, &act, &tl, eff, ne, ab, res, -1, &sw, &pf);
    free(eff);
    tsl__timeline_free(&tl);
    tsl__activity_free(&act);
    return pf.n;
}

/* A swap pair, a recomputation, and the across-iteration rule, by hand. */
Test(planner, peak_analysis_by_hand) {
    int32_t a, h;
    tsl_workload *w = chain("chain", &a, &h);
    tsl_device_profile dev = test_dev();
    /* h (45000 B, 45 us per copy) out from op1's end (20) over [20, 65);
     * released after op2 (60): the release waits for the copy, h is gone
     * at 65; in from op2's end + 25 (85) over [85, 130) for op5. */
    tsl_plan *p = tsl_plan_new("chain");
    tsl_plan_add(p, (tsl_event){TSL_EV_SWAP_OUT, h, 1, 0.0, -1});
    tsl_plan_add(p, (tsl_event){TSL_EV_RELEASE, h, 2, 0.0, -1});
    tsl_plan_add(p, (tsl_event){TSL_EV_SWAP_IN, h, 2, 25.0, 5});
    double tm[32];
    size_t ld[32];
    int64_t n = profile_of(w, p, &dev, tm, ld);
    /* data load (x); op0 (+a); op1 at 10 (x freed, +b +h); op2 at 20 (+c);
     * op3 at 60 (+d, h still there); the swap-in at 85 (h freed at 65);
     * op4 at 100 (b, c freed, +e); op5 at 130 (d freed, +f) */
    const double et[8] = {0, 0, 10, 20, 60, 85, 100, 130};
    const size_t el[8] = {1000, 11000, 65000, 85000, 105000, 105000, 85000, 66000};
    cr_assert_eq(n, 8);
    for (int k = 0; k < 8; k++)
        cr_assert(tm[k] == et[k] && ld[k] == el[k], "check point %d: %g us %zu B, expected %g %zu",
                  k, tm[k], ld[k], et[k], el[k]);
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK);
    cr_assert_eq(pi.peak, 105000u);
    cr_assert_eq(pi.peak_time_us, 60.0, "the first time the peak is reached");
    cr_assert_eq(pi.peak_op, 3);
    cr_assert_eq(pi.last_input_op, 2, "op2 read b, still resident at 60");
    tsl_peak_info_free(&pi);
    /* the swap-out issued at time 0 instead ends at 45: h is freed at the
     * release (60) and back at 85, during op3: the peak is the swap-in */
    p->events[0].trigger = -1;
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK);
    cr_assert_eq(pi.peak, 105000u);
    cr_assert_eq(pi.peak_time_us, 85.0);
    cr_assert_eq(pi.peak_op, 3);
    tsl_peak_info_free(&pi);
    /* a swap-in at op3's end (100) allocates before op4's outputs (the
     * events due at a time point come before the position of positive
     * duration starting then: docs/SCHEDULING.md): a d h, then e */
    p->events[2].trigger = 3;
    p->events[2].delay_us = 0.0;
    n = profile_of(w, p, &dev, tm, ld);
    cr_assert_eq(n, 8);
    cr_assert(tm[5] == 100 && ld[5] == 75000 && tm[6] == 100 && ld[6] == 85000,
              "the swap-in then op4 at 100: %g %zu, %g %zu", tm[5], ld[5], tm[6], ld[6]);
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK);
    cr_assert_eq(pi.peak, 85000u);
    cr_assert_eq(pi.peak_time_us, 20.0);
    tsl_peak_info_free(&pi);
    tsl_plan_free(p);

    /* a recomputation of c (producer op2, 40 us) before op3: op3 and later
     * move by 40 us; c is released after op2 and allocated again at 60 */
    p = tsl_plan_new("chain");
    tsl_plan_add(p, (tsl_event){TSL_EV_RELEASE, 4, 2, 0.0, -1});
    tsl_plan_add(p, (tsl_event){TSL_EV_RECOMPUTE, 4, -1, 0.0, 3});
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK);
    cr_assert_eq(pi.period_us, 180.0);
    cr_assert_eq(pi.peak, 105000u);
    cr_assert_eq(pi.peak_time_us, 100.0, "op3 starts at 60 + 40");
    cr_assert_eq(pi.peak_op, 3);
    tsl_peak_info_free(&pi);
    tsl_plan_free(p);
    tsl_workload_free(w);

    /* across iterations: P released after its update with no swap-in after
     * it is absent at time 0; the swap-in brings it back */
    int32_t P;
    w = across(&P);
    p = tsl_plan_new("across");
    tsl_plan_add(p, (tsl_event){TSL_EV_SWAP_OUT, P, 5, 0.0, -1});
    tsl_plan_add(p, (tsl_event){TSL_EV_RELEASE, P, 5, 0.0, -1});
    tsl_plan_add(p, (tsl_event){TSL_EV_SWAP_IN, P, -1, 0.0, 2});
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK);
    /* the release waits for the copy [95, 135): gone before op7 at 145 */
    cr_assert_eq(pi.peak, 104000u);
    tsl_peak_info_free(&pi);
    /* load at time 0: Q R x (P absent) + y allocated by op0 -> 9000; with
     * the swap-in at 0 P is back at once */
    tsl__activity act;
    tsl__timeline tl;
    cr_assert_eq(tsl__activity_build(w, &act), TSL_OK);
    cr_assert_eq(tsl__timeline_build(w, p, &dev, &tl), TSL_OK);
    tsl__effect *eff;
    int32_t ne;
    uint8_t ab[WL_CAP], res[WL_CAP];
    cr_assert_eq(tsl__effects_build(w, &act, &tl, p, &dev, &eff, &ne, ab), TSL_OK);
    cr_assert_eq(ab[P], 1, "P absent at time 0");
    cr_assert_eq(ab[1 + 1], 0, "Q resident");
    tsl__sweep sw;
    tsl__sweep_run(w, &act, &tl, eff, ne, ab, res, 0, &sw, NULL); /* the data load */
    cr_assert_eq(res[P], 0);
    cr_assert_eq(sw.peak, 4000u, "x Q R");
    free(eff);
    tsl__timeline_free(&tl);
    tsl__activity_free(&act);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(planner, channel_queries) {
    tsl__chan c = {0};
    tsl__timeline tl = {0};
    double e[1] = {1000.0}, s[1] = {0.0};
    tl.n_ops = 1;
    tl.s = s;
    tl.e = e;
    tsl__canon_ctx cx = {.tl = &tl};
    cr_assert_eq(tsl__chan_earliest(&c, 5, 10, 100, tsl__canon_tl, &cx), 5.0);
    cr_assert_eq(tsl__chan_latest(&c, 0, 10, 100, tsl__canon_tl, &cx), 90.0);
    cr_assert_eq(tsl__chan_book(&c, 10, 20), TSL_OK);
    cr_assert_eq(tsl__chan_book(&c, 30, 50), TSL_OK);
    cr_assert_eq(tsl__chan_book(&c, 0, 5), TSL_OK);
    cr_assert_eq(c.n, 3);
    cr_assert(c.s[0] == 0 && c.s[1] == 10 && c.s[2] == 30, "sorted");
    /* earliest start >= 2 of length 8: [5, 10) is too short (5), [20, 30) fits */
    cr_assert_eq(tsl__chan_earliest(&c, 2, 8, 100, tsl__canon_tl, &cx), 20.0);
    cr_assert_eq(tsl__chan_earliest(&c, 2, 5, 100, tsl__canon_tl, &cx), 5.0);
    cr_assert_eq(tsl__chan_earliest(&c, 2, 25, 100, tsl__canon_tl, &cx), 50.0);
    cr_assert_eq(tsl__chan_earliest(&c, 2, 25, 74, tsl__canon_tl, &cx), -1.0, "deadline");
    /* latest start of length 8 ending by 45: [20, 28) */
    cr_assert_eq(tsl__chan_latest(&c, 0, 8, 45, tsl__canon_tl, &cx), 22.0);
    cr_assert_eq(tsl__chan_latest(&c, 0, 8, 60, tsl__canon_tl, &cx), 52.0);
    cr_assert_eq(tsl__chan_latest(&c, 23, 8, 45, tsl__canon_tl, &cx), -1.0, "lower bound");
    cr_assert_eq(tsl__chan_latest(&c, 0, 11, 30, tsl__canon_tl, &cx), -1.0, "no gap of 11");
    cr_assert(tsl__chan_is_free(&c, 20, 30));
    cr_assert(!tsl__chan_is_free(&c, 19, 21));
    tsl__chan_unbook(&c, 10, 20);
    cr_assert_eq(tsl__chan_latest(&c, 0, 11, 30, tsl__canon_tl, &cx), 19.0);
    tsl__chan_free(&c);
}

Test(planner, anchors_reproduce_their_time) {
    /* times that are not sums of nice numbers */
    double s[3] = {0.0, 0.1, 0.30000000000000004}, e[3] = {0.1, 0.30000000000000004, 1.7};
    tsl__timeline tl = {.n_ops = 3, .s = s, .e = e};
    uint64_t st = 7;
    for (int i = 0; i < 1000; i++) {
        double x = th_uniform(&st, 0.0, 2.0);
        int32_t tr;
        double d;
        double c = tsl__anchor(&tl, x, 1, &tr, &d);
        cr_assert(c >= x && c == tsl__issue(&tl, tr, d) && d >= 0);
        cr_assert(tr == -1 || e[tr] <= x);
        c = tsl__anchor(&tl, x, 0, &tr, &d);
        cr_assert(c <= x && c == tsl__issue(&tl, tr, d) && d >= 0);
    }
}

Test(planner, plan_sort_is_a_total_order) {
    tsl_plan *a = tsl_plan_new("j"), *b = tsl_plan_new("j");
    tsl_event ev[5] = {{TSL_EV_SWAP_IN, 3, 2, 1.5, 7}, {TSL_EV_SWAP_OUT, 3, 2, 1.5, -1},
                       {TSL_EV_RELEASE, 1, -1, 0.0, -1}, {TSL_EV_RECOMPUTE, 2, -1, 0.0, 4},
                       {TSL_EV_SWAP_OUT, 0, 2, 0.5, -1}};
    for (int i = 0; i < 5; i++) tsl_plan_add(a, ev[i]);
    for (int i = 4; i >= 0; i--) tsl_plan_add(b, ev[i]);
    tsl_plan_sort(a);
    tsl_plan_sort(b);
    cr_assert_eq(memcmp(a->events, b->events, 5 * sizeof *a->events), 0);
    cr_assert_eq(a->events[0].type, TSL_EV_RELEASE);   /* trigger -1 first, type order */
    cr_assert_eq(a->events[1].type, TSL_EV_RECOMPUTE);
    cr_assert_eq(a->events[2].delay_us, 0.5);
    cr_assert_eq(a->events[3].type, TSL_EV_SWAP_OUT);
    cr_assert_eq(a->events[4].type, TSL_EV_SWAP_IN);
    tsl_plan_free(a);
    tsl_plan_free(b);
}

/* ---- planned waits in the shared accounting ------------------------------------------ */

/* The chain with h swapped out after op1 (copy [20, 65)), released after
 * op2 (at 65), and swapped in 10 us after op3 ends (copy [110, 155)) for
 * op5, which would start at 130: op5 waits 25 us and runs over [155, 165].
 * The peak does not move (105000 at op3, t = 60); the load around the wait:
 * a d e = 40000 at op4 (100), + h = 85000 at 110, d freed at 130 (65000),
 * + f = 66000 as op5 starts at 155. */
Test(planner, peak_analysis_with_a_planned_wait) {
    int32_t a, h;
    tsl_workload *w = chain("chain", &a, &h);
    tsl_device_profile dev = test_dev();
    tsl_plan *p = tsl_plan_new("chain");
    tsl_plan_add(p, (tsl_event){TSL_EV_SWAP_OUT, h, 1, 0.0, -1});
    tsl_plan_add(p, (tsl_event){TSL_EV_RELEASE, h, 2, 0.0, -1});
    tsl_plan_add(p, (tsl_event){TSL_EV_SWAP_IN, h, 3, 10.0, 5});
    tsl__timeline tl;
    cr_assert_eq(tsl__timeline_build(w, p, &dev, &tl), TSL_OK);
    cr_assert_eq(tl.n_wait, 1);
    cr_assert_eq(tl.wait[0].op, 5);
    cr_assert_eq(tl.wait[0].rc, -1);
    cr_assert_eq(tl.wait[0].event, 2);
    cr_assert_eq(tl.wait[0].at, 130.0);
    cr_assert_eq(tl.wait[0].stall, 25.0);
    cr_assert(tl.s[4] == 100.0 && tl.e[4] == 130.0, "op4 is not moved");
    cr_assert(tl.s[5] == 155.0 && tl.e[5] == 165.0, "op5 over [%g, %g]", tl.s[5], tl.e[5]);
    cr_assert_eq(tl.period, 165.0);
    tsl__timeline_free(&tl);
    double tm[32];
    size_t ld[32];
    int64_t n = profile_of(w, p, &dev, tm, ld);
    const double et[8] = {0, 0, 10, 20, 60, 100, 110, 155};
    const size_t el[8] = {1000, 11000, 65000, 85000, 105000, 40000, 85000, 66000};
    cr_assert_eq(n, 8);
    for (int k = 0; k < 8; k++)
        cr_assert(tm[k] == et[k] && ld[k] == el[k], "check point %d: %g us %zu B, expected %g %zu",
                  k, tm[k], ld[k], et[k], el[k]);
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK);
    cr_assert_eq(pi.peak, 105000u);
    cr_assert_eq(pi.period_us, 165.0);
    cr_assert_eq(pi.n_waits, 1);
    cr_assert_eq(pi.stall_us, 25.0);
    tsl_peak_info_free(&pi);
    /* a copy landing 1e-7 us late is on time (the doc's tolerance): issued
     * 25 + 1e-7 us after op2 (60), it lands at 130 + 1e-7 */
    p->events[2].trigger = 2;
    p->events[2].delay_us = 25.0 + 1e-7;
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK);
    cr_assert_eq(pi.n_waits, 0);
    cr_assert_eq(pi.period_us, 140.0);
    tsl_peak_info_free(&pi);
    /* a swap-in issued after its op would start is not waited for */
    p->events[2].trigger = 4;
    p->events[2].delay_us = 1.0;
    cr_assert_eq(tsl_peak_analysis(w, p, &dev, &pi), TSL_OK);
    cr_assert_eq(pi.n_waits, 0);
    cr_assert_eq(pi.period_us, 140.0);
    tsl_peak_info_free(&pi);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

/* ---- policies: the registry, options, a policy defined outside the library ------------ */

Test(policy, registry_lists_and_finds_the_built_in_policies) {
    cr_assert_geq(tsl_policy_count(), 2);
    cr_assert_str_eq(tsl_policy_at(0)->name, "vanilla");
    cr_assert_str_eq(tsl_policy_at(1)->name, "tensile");
    cr_assert_null(tsl_policy_at(-1));
    cr_assert_null(tsl_policy_at(tsl_policy_count()));
    const tsl_policy *t = tsl_policy_find("tensile");
    cr_assert_not_null(t);
    cr_assert_eq(t, tsl_policy_at(1));
    cr_assert_eq(t->n_options, 7); /* ... max-iterations, fit */
    cr_assert_null(tsl_policy_find("tensil"));
    cr_assert(strstr(tsl_last_error(), "unknown policy 'tensil' (known: vanilla, tensile"), "%s",
              tsl_last_error());
    /* the built-in tables pass the checks a registered policy passes */
    static tsl_policy again[2];
    for (int i = 0; i < 2; i++) {
        again[i] = *tsl_policy_at(i);
        again[i].name = i ? "tensile-again" : "vanilla-again";
        cr_assert_eq(tsl_policy_register(&again[i]), TSL_OK, "%s", tsl_last_error());
    }
    /* the defaults of tsl_tensile_opts are its descriptors' */
    tsl_tensile_opts d = tsl_tensile_opts_default();
    cr_assert(d.max_swap_rate.n == 0 && d.max_swap_rate.all == 1.0 && d.swap_in_slack == 0.0 &&
              d.recompute == 1 && d.max_iterations == 10000);
    cr_assert_eq(tsl_policy_opts_check(t, &d, 3), TSL_OK);
}

Test(policy, options_set_by_name) {
    const tsl_policy *t = tsl_policy_find("tensile");
    tsl_policy_opts *o;
    cr_assert_eq(tsl_policy_opts_new(t, &o), TSL_OK);
    cr_assert_eq(tsl_policy_opts_policy(o), t);
    const tsl_tensile_opts *v = tsl_policy_opts_values(o);
    cr_assert_eq(tsl_policy_opts_set(o, "swap-in-slack", "0.25"), TSL_OK);
    cr_assert_eq(v->swap_in_slack, 0.25);
    cr_assert_eq(tsl_policy_opts_set(o, "recompute", "no"), TSL_OK);
    cr_assert_eq(v->recompute, 0);
    cr_assert_eq(tsl_policy_opts_set(o, "max-iterations", "7"), TSL_OK);
    cr_assert_eq(v->max_iterations, 7);
    cr_assert_eq(tsl_policy_opts_set(o, "max-swap-rate", "0.5"), TSL_OK);
    cr_assert(v->max_swap_rate.n == 0 && v->max_swap_rate.all == 0.5);
    cr_assert_eq(tsl_policy_opts_set(o, "max-swap-rate", "0.5,1,0.25"), TSL_OK);
    cr_assert_eq(v->max_swap_rate.n, 3);
    cr_assert(v->max_swap_rate.v[0] == 0.5 && v->max_swap_rate.v[1] == 1.0 &&
              v->max_swap_rate.v[2] == 0.25);
    cr_assert_eq(tsl_per_job_at(&v->max_swap_rate, 2), 0.25);
    cr_assert_eq(tsl_policy_opts_check(t, v, 3), TSL_OK);
    /* three values for two jobs */
    cr_assert_eq(tsl_policy_opts_check(t, v, 2), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "policy 'tensile': option max-swap-rate: max_swap_rate has 3 "
                                       "values for 2 jobs"),
              "%s", tsl_last_error());
    /* errors name the policy, the option and the value; nothing changes */
    cr_assert_eq(tsl_policy_opts_set(o, "swap-in-slack", "fast"), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "policy 'tensile': option swap-in-slack: 'fast' is not a "
                                       "number"),
              "%s", tsl_last_error());
    cr_assert_eq(tsl_policy_opts_set(o, "swap-in-slack", "11"), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "swap_in_slack = 11 outside [0, 10]"), "%s",
              tsl_last_error());
    cr_assert_eq(v->swap_in_slack, 0.25);
    cr_assert_eq(tsl_policy_opts_set(o, "max-swap-rate", "0.5,1.5"), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "max_swap_rate[1] = 1.5 outside [0, 1]"), "%s",
              tsl_last_error());
    cr_assert_eq(v->max_swap_rate.n, 3);
    cr_assert_eq(tsl_policy_opts_set(o, "max-swap-rate", "0.5,,1"), TSL_ERR_INVALID);
    cr_assert_eq(tsl_policy_opts_set(o, "max-iterations", "2.5"), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "'2.5' is not an integer"), "%s", tsl_last_error());
    cr_assert_eq(tsl_policy_opts_set(o, "recompute", "maybe"), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "'maybe' is not a boolean"), "%s", tsl_last_error());
    cr_assert_eq(tsl_policy_opts_set(o, "budget", "1"), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "policy 'tensile' has no option 'budget' (its options: "
                                       "max-swap-rate, swap-in-slack, min-swap-bytes, recompute, "
                                       "prefetch, max-iterations, fit)"),
              "%s", tsl_last_error());
    tsl_policy_opts_free(o);
    /* vanilla has none */
    cr_assert_eq(tsl_policy_opts_new(tsl_policy_find("vanilla"), &o), TSL_OK);
    cr_assert_null(tsl_policy_opts_values(o));
    cr_assert_eq(tsl_policy_opts_set(o, "recompute", "0"), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "policy 'vanilla' has no option 'recompute' (its options: "
                                       "none)"),
              "%s", tsl_last_error());
    tsl_policy_opts_free(o);
}

/* A policy of this test's own, built on the planner kit: for each job, the
 * largest activation of at least `min-bytes` bytes whose swap fits on the
 * channels is swapped out after its generation and back in before its
 * next read, over its longest gap. Adding it is this definition and one
 * tsl_policy_register call. */
typedef struct largest_opts {
    int min_bytes;
} largest_opts;

static const tsl_policy_option LARGEST_OPTIONS[] = {
    {"min-bytes", "only activations at least this large", TSL_OPT_INT, 0, 1e9, 1,
     offsetof(largest_opts, min_bytes)},
};

/* The longest gap of tensor t in J (index into act.acc of the access
 * before it, the next one reading t), or -1. */
static int32_t longest_gap(const tsl__pjob *J, int32_t t) {
    const tsl__activity *a = &J->act;
    int32_t best = -1;
    double len = -1;
    for (int32_t k = a->acc_off[t]; k + 1 < a->acc_off[t + 1]; k++) {
        double g = J->tl.s[a->acc[k + 1].op] - J->tl.e[a->acc[k].op];
        if (a->acc[k + 1].reads && g > len) {
            best = k;
            len = g;
        }
    }
    return best;
}

/* Drafts and commits the swap of t over its longest gap; 1 if it fits. */
static int swap_largest(tsl__kit *K, tsl__pjob *J, int32_t t) {
    int32_t k = longest_gap(J, t);
    if (k < 0) return 0;
    int32_t u = J->act.acc[k].op, v = J->act.acc[k + 1].op;
    tsl__swap_draft d = {.tensor = t, .gap = k};
    double gen_end = J->tl.e[J->w->tensors[t].producer];
    double rel = tsl__place_swap_out(K, J, t, gen_end, u, J->tl.s[v], &d);
    if (rel < 0 || !tsl__place_swap_in(K, J, rel, J->tl.s[v], v, &d)) return 0;
    return tsl__commit_swap(K, J, &d);
}

static tsl_status plan_largest(const tsl_plan_request *rq, tsl_plan **plans, int *iterations) {
    const largest_opts *o = rq->opts;
    tsl__kit K;
    tsl_status st = tsl__kit_init(&K, rq, plans);
    if (st != TSL_OK) return st;
    for (int j = 0; j < K.n_jobs && K.status == TSL_OK; j++) {
        tsl__pjob *J = &K.jobs[j];
        int32_t nt = J->w->n_tensors, order[WL_CAP];
        cr_assert_leq(nt, WL_CAP);
        for (int32_t t = 0; t < nt; t++) order[t] = t;
        cr_assert_eq(tsl__sort_by_size(J->w, order, nt), TSL_OK);
        for (int32_t i = 0; i < nt; i++) {
            int32_t t = order[i];
            if (J->act.persistent[t] || J->act.data[t] || J->w->tensors[t].producer < 0 ||
                J->w->tensors[t].bytes < (size_t)o->min_bytes)
                continue;
            if (swap_largest(&K, J, t)) {
                (*iterations)++;
                break;
            }
        }
    }
    st = K.status;
    tsl__kit_free(&K);
    return st;
}

static const tsl_policy LARGEST = {
    "largest-swap", "swaps the largest activation of each job that fits (a test policy)",
    sizeof(largest_opts), LARGEST_OPTIONS, 1, plan_largest, NULL,
};

/* chain: h (45000) goes out over [20, 65) and back over [85, 130) for op5;
 * wide: c (50000) cannot go (its gap is empty), a1 (10000) goes out over
 * [10, 20) and back over [140, 150) for g1. */
Test(policy, a_policy_defined_here_registers_plans_and_verifies) {
    cr_assert_eq(tsl_policy_register(&LARGEST), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_policy_register(&LARGEST), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "the name 'largest-swap' is taken"), "%s", tsl_last_error());
    const tsl_policy *pol = tsl_policy_find("largest-swap");
    cr_assert_eq(pol, &LARGEST);
    cr_assert_eq(tsl_policy_at(tsl_policy_count() - 1), &LARGEST);
    int32_t h;
    tsl_workload *w[2] = {chain("chain", NULL, &h), wide("wide")};
    tsl_device_profile dev = test_dev();
    tsl_plan_opts o = tsl_plan_opts_default();
    o.policy = pol; /* its defaults: any size */
    tsl_plan *p[2];
    tsl_plan_report rep;
    th_plan_checked(w, 2, &dev, &o, p, &rep);
    print_plan(w[0], p[0]);
    print_plan(w[1], p[1]);
    cr_assert_eq(rep.iterations, 2);
    cr_assert(rep.swaps[0] == 1 && rep.swaps[1] == 1);
    cr_assert(find_ev(p[0], TSL_EV_SWAP_IN, h) >= 0, "chain: h is swapped");
    cr_assert(find_ev(p[1], TSL_EV_SWAP_IN, 1) >= 0, "wide: a1 is swapped");
    cr_assert_eq(p[1]->predicted_peak, rep.vanilla_peak[1] - 10000, "a1 is gone at the peak");
    cr_assert(th_channels_disjoint(w, p, 2, &dev, 0) && th_channels_disjoint(w, p, 2, &dev, 1));
    for (int j = 0; j < 2; j++) tsl_plan_free(p[j]);
    tsl_plan_report_free(&rep);
    /* its option by name: nothing of chain or wide is that large */
    tsl_policy_opts *po;
    cr_assert_eq(tsl_policy_opts_new(pol, &po), TSL_OK);
    cr_assert_eq(tsl_policy_opts_set(po, "min-bytes", "60000"), TSL_OK);
    o.opts = tsl_policy_opts_values(po);
    th_plan_checked(w, 2, &dev, &o, p, &rep);
    cr_assert(p[0]->n_events == 0 && p[1]->n_events == 0);
    for (int j = 0; j < 2; j++) tsl_plan_free(p[j]);
    tsl_plan_report_free(&rep);
    cr_assert_eq(tsl_policy_opts_set(po, "min-bytes", "-1"), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "policy 'largest-swap': option min-bytes: min_bytes = -1 "
                                       "outside [0, 1e+09]"),
              "%s", tsl_last_error());
    tsl_policy_opts_free(po);
    tsl_workload_free(w[0]);
    tsl_workload_free(w[1]);
}

Test(policy, malformed_policies_are_refused) {
    tsl_policy bad = LARGEST;
    bad.name = "Largest";
    cr_assert_eq(tsl_policy_register(&bad), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "name 'Largest' must be 1 to 63 characters of [a-z0-9-]"),
              "%s", tsl_last_error());
    bad = LARGEST;
    bad.name = "no-plan";
    bad.plan = NULL;
    cr_assert_eq(tsl_policy_register(&bad), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "'no-plan': no plan function"), "%s", tsl_last_error());
    static const tsl_policy_option outside[] = {
        {"far", "past the struct", TSL_OPT_DOUBLE, 0, 1, 0, sizeof(largest_opts)}};
    bad = LARGEST;
    bad.name = "far";
    bad.options = outside;
    cr_assert_eq(tsl_policy_register(&bad), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "option 'far': kind 2 at offset 4 does not fit the options "
                                       "struct (4 bytes)"),
              "%s", tsl_last_error());
    static const tsl_policy_option wrong_default[] = {
        {"min-bytes", "default outside its range", TSL_OPT_INT, 1, 9, 0, 0}};
    bad.name = "wrong-default";
    bad.options = wrong_default;
    cr_assert_eq(tsl_policy_register(&bad), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "option 'min-bytes': default 0 outside [1, 9]"), "%s",
              tsl_last_error());
    static const tsl_policy_option huge[] = {
        {"min-bytes", "beyond an int", TSL_OPT_INT, 0, 1e12, 0, 0}};
    bad.name = "huge";
    bad.options = huge;
    cr_assert_eq(tsl_policy_register(&bad), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "an integer option needs integer bounds"), "%s",
              tsl_last_error());
    cr_assert_null(tsl_policy_find("wrong-default"));
}

/* ---- footprint rounds ----------------------------------------------------------------- */

/* A test policy that plans nothing and counts its calls; with `least` set
 * it says its (empty) plans are its least memory
 * (tsl_plan_request.least_memory). */
static int nothing_calls;
static int nothing_least;
static tsl_status plan_nothing(const tsl_plan_request *rq, tsl_plan **plans, int *iterations) {
    (void)plans;
    (void)iterations;
    nothing_calls++;
    if (nothing_least && rq->least_memory) *rq->least_memory = 1;
    return TSL_OK;
}
static const tsl_policy NOTHING = {
    "plans-nothing", "plans nothing and counts its calls (a test policy)", 0, NULL, 0,
    plan_nothing, NULL,
};

/* A budget the policy misses is planned again, lower by the layout's
 * overhead, unless the policy says its plans are its least memory: one
 * round then. (Without the flag the second round's plans are the first's
 * and the planner stops there: two calls.) */
Test(planner, least_memory_ends_the_footprint_rounds) {
    cr_assert_eq(tsl_policy_register(&NOTHING), TSL_OK, "%s", tsl_last_error());
    tsl_workload *w = chain("chain", NULL, NULL);
    tsl_device_profile dev = test_dev();
    tsl_plan_opts o = tsl_plan_opts_default();
    o.policy = &NOTHING;
    tsl_plan *p = NULL;
    tsl_plan_report rep;
    cr_assert_eq(tsl_plan_jobs(&w, 1, &dev, &o, &p, &rep), TSL_OK, "%s", tsl_last_error());
    size_t vanilla = rep.vanilla_footprint[0];
    cr_assert_gt(vanilla, rep.floor[0]);
    tsl_plan_free(p);
    tsl_plan_report_free(&rep);
    o.budget = vanilla - 1; /* above the floor, below what the policy reaches */
    for (int least = 0; least < 2; least++) {
        nothing_calls = 0;
        nothing_least = least;
        cr_assert_eq(tsl_plan_jobs(&w, 1, &dev, &o, &p, &rep), TSL_ERR_BUDGET);
        cr_assert_eq(nothing_calls, least ? 1 : 2, "least %d: %d calls", least, nothing_calls);
        cr_assert_eq(rep.least_memory, least);
        cr_assert_not(rep.budget_met);
        tsl_plan_free(p);
        tsl_plan_report_free(&rep);
    }
    tsl_workload_free(w);
}

/* A test policy that saves just enough as the lazy planner it is: with
 * just_enough it plans nothing and says it spared (the budget "did not
 * need" more), else it swaps as largest-swap does. */
static int lazy_calls;
static tsl_status plan_lazy(const tsl_plan_request *rq, tsl_plan **plans, int *iterations) {
    lazy_calls++;
    if (rq->just_enough) {
        if (rq->spared) *rq->spared = 1;
        return TSL_OK;
    }
    return plan_largest(rq, plans, iterations);
}
static const tsl_policy LAZY = {
    "lazy-swap", "plans nothing for a named budget, swaps otherwise (a test policy)",
    sizeof(largest_opts), LARGEST_OPTIONS, 1, plan_lazy, NULL,
};

/* Plans that saved just enough for a named budget but miss it in
 * footprint are planned once more saving all the policy can: chain's h
 * goes out (the budget is met), and the report is that round's. With no
 * budget named the policy saves all at once (one call). */
Test(planner, spared_plans_that_miss_the_budget_are_planned_saving_all) {
    cr_assert_eq(tsl_policy_register(&LAZY), TSL_OK, "%s", tsl_last_error());
    int32_t a1 = 1; /* wide's */
    tsl_workload *w = wide("wide");
    tsl_device_profile dev = test_dev();
    tsl_plan_opts o = tsl_plan_opts_default();
    o.policy = &LAZY;
    tsl_plan *p = NULL;
    tsl_plan_report rep;
    lazy_calls = 0;
    cr_assert_eq(tsl_plan_jobs(&w, 1, &dev, &o, &p, &rep), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(lazy_calls, 1, "no budget named: %d calls", lazy_calls);
    cr_assert(find_ev(p, TSL_EV_SWAP_IN, a1) >= 0, "no budget named: a1 is swapped");
    size_t swapped = rep.planned_footprint[0], vanilla = rep.vanilla_footprint[0];
    cr_assert_lt(swapped, vanilla, "footprint %zu, vanilla %zu (peak %zu of %zu)", swapped, vanilla, rep.planned_peak[0], rep.vanilla_peak[0]);
    tsl_plan_free(p);
    tsl_plan_report_free(&rep);
    o.budget = swapped; /* met by the swap, not by nothing */
    lazy_calls = 0;
    cr_assert_eq(tsl_plan_jobs(&w, 1, &dev, &o, &p, &rep), TSL_OK, "%s", tsl_last_error());
    cr_assert_geq(lazy_calls, 2, "%d calls", lazy_calls);
    cr_assert(rep.budget_met);
    cr_assert_not(rep.spared, "the kept round is the one that saved all");
    cr_assert_eq(rep.planned_footprint[0], swapped);
    cr_assert(find_ev(p, TSL_EV_SWAP_IN, a1) >= 0, "a1 is swapped");
    tsl_plan_free(p);
    tsl_plan_report_free(&rep);
    tsl_workload_free(w);
}

/* ---- job counts sized at run time ---------------------------------------------------- */

/* 40 jobs (chains and wide ones alternately) planned together: every
 * per-job array is sized at run time, the per-job option too. */
Test(planner, forty_jobs) {
    enum { N = 40 };
    tsl_workload *w[N];
    double rates[N];
    for (int j = 0; j < N; j++) {
        char name[16];
        snprintf(name, sizeof name, "job%d", j);
        w[j] = j % 2 ? wide(name) : chain(name, NULL, NULL);
        rates[j] = j % 5 == 4 ? 0.0 : 1.0;
    }
    tsl_device_profile dev = test_dev();
    dev.h2d_bw = dev.d2h_bw = 1e11; /* copies short enough for many jobs to swap */
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.max_swap_rate = (tsl_per_job){.n = N, .v = rates};
    tsl_plan_opts o = tsl_plan_opts_default();
    o.opts = &to;
    tsl_plan *p[N];
    tsl_plan_report rep;
    th_plan_checked(w, N, &dev, &o, p, &rep);
    cr_assert_eq(rep.n_jobs, N);
    int swapped = 0;
    for (int j = 0; j < N; j++) {
        if (rates[j] == 0.0) cr_assert_eq(rep.swaps[j], 0, "job %d has rate 0", j);
        swapped += rep.swaps[j] > 0;
        cr_assert_str_eq(p[j]->job, w[j]->job);
    }
    cr_assert_gt(swapped, N / 2, "only %d of %d jobs swap", swapped, N);
    cr_assert(th_channels_disjoint(w, p, N, &dev, 0) && th_channels_disjoint(w, p, N, &dev, 1));
    for (int j = 0; j < N; j++) tsl_plan_free(p[j]);
    tsl_plan_report_free(&rep);
    /* one value per job, for another count of jobs */
    cr_assert_eq(tsl_plan_jobs(w, N - 1, &dev, &o, p, &rep), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "max_swap_rate has 40 values for 39 jobs"), "%s",
              tsl_last_error());
    for (int j = 0; j < N; j++) tsl_workload_free(w[j]);
}
