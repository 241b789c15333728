/*
 * test_verify.c - the plan verifier (src/sched/verify*.c) on hand-made
 * workloads and plans with hand-computed timelines and loads: a valid plan
 * passes; each class of violation, constructed by hand, produces exactly the
 * expected violation(s) with the expected text; a swap-in landing after its
 * op would start, or a recomputation's input still copying, is a planned
 * wait reported with its exact stall (tsl_plan_check), not a violation;
 * the empty plan's peak is the vanilla dry run's on real graphs.
 *
 * The chain workload used by most tests (every op 100 us, copies at 1e8 B/s,
 * so a 2000-byte tensor copies in 20 us):
 *
 *   tensors  in 1000 (input), w 100 (parameter), x 2000, y 3000, z 10,
 *            gy 3000, gx 2000, gw 100
 *   op0 f1   [in]       -> x        0..100
 *   op1 f2   [x, w]     -> y      100..200
 *   op2 f3   [y]        -> z      200..300   workspace 4000
 *   op3 b3   [z, y]     -> gy     300..400   (variant: also reads x)
 *   op4 b2   [gy, x]    -> gx     400..500
 *   op5 bw   [gx, in]   -> gw     500..600
 *   op6 upd  [w, gw]    -> w      600..700   (in place)
 *
 * Vanilla load: 1100 at 0; 3100 (f1); 6100 (f2); 10110 (f3 + workspace);
 * 6110; 9110 (b3); 6100; 8100 (b2); 3100; 3200 (bw); 200; 100. Peak 10110.
 *
 * Plan P1 (valid): swap_out x after f1 (copy 100..120), release x after f2
 * (200), swap_in x 50 us after f3 (350..370) before b2. Load: 4100 at 200,
 * 8110 (f3), 4110, 7110 (b3), 9110 at 350, 6100, 8100, ... Peak 9110.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "tensile/models.h"
#include "tensile/verify.h"
#include "tensile/session.h"

/* ---- building workloads and plans by hand ------------------------------------ */

#define CAP 64

static tsl_workload *wl_new(const char *job) {
    tsl_workload *w = calloc(1, sizeof *w);
    cr_assert(w);
    snprintf(w->job, sizeof w->job, "%s", job);
    w->tensors = calloc(CAP, sizeof *w->tensors);
    w->ops = calloc(CAP, sizeof *w->ops);
    cr_assert(w->tensors && w->ops);
    return w;
}

static int32_t wl_tensor(tsl_workload *w, const char *name, size_t bytes, tsl_tensor_kind k) {
    cr_assert(w->n_tensors < CAP);
    tsl_wl_tensor *t = &w->tensors[w->n_tensors];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->bytes = bytes;
    t->kind = k;
    t->producer = -1;
    return w->n_tensors++;
}

static int32_t *dup_ids(const int32_t *ids, int n) {
    if (n == 0) return NULL;
    int32_t *c = malloc(sizeof *c * (size_t)n);
    cr_assert(c);
    memcpy(c, ids, sizeof *c * (size_t)n);
    return c;
}

#define IDS(...)                                                                                   \
    (const int32_t[]){__VA_ARGS__}, (int)(sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

/* Appends an op of latency `lat` right after the previous one. */
static int32_t wl_op(tsl_workload *w, const char *name, double lat, size_t ws, const int32_t *in,
                     int n_in, const int32_t *out, int n_out) {
    cr_assert(w->n_ops < CAP);
    tsl_wl_op *op = &w->ops[w->n_ops];
    snprintf(op->name, sizeof op->name, "%s", name);
    op->start_us = w->n_ops ? w->ops[w->n_ops - 1].end_us : 0.0;
    op->end_us = op->start_us + lat;
    op->workspace = ws;
    op->in = dup_ids(in, n_in);
    op->n_in = n_in;
    op->out = dup_ids(out, n_out);
    op->n_out = n_out;
    for (int k = 0; k < n_out; k++)
        if (!tsl_kind_is_persistent(w->tensors[out[k]].kind))
            w->tensors[out[k]].producer = w->n_ops;
    w->period_us = op->end_us;
    w->optimizer_begin = w->n_ops + 1;
    return w->n_ops++;
}

enum { IN, W, X, Y, Z, GY, GX, GW };
enum { F1, F2, F3, B3, B2, BW, UPD };

static tsl_workload *chain(const char *job, int b3_reads_x) {
    tsl_workload *w = wl_new(job);
    wl_tensor(w, "in", 1000, TSL_KIND_INPUT);
    wl_tensor(w, "w", 100, TSL_KIND_PARAM);
    wl_tensor(w, "x", 2000, TSL_KIND_ACTIVATION);
    wl_tensor(w, "y", 3000, TSL_KIND_ACTIVATION);
    wl_tensor(w, "z", 10, TSL_KIND_ACTIVATION);
    wl_tensor(w, "gy", 3000, TSL_KIND_GRADIENT);
    wl_tensor(w, "gx", 2000, TSL_KIND_GRADIENT);
    wl_tensor(w, "gw", 100, TSL_KIND_GRADIENT);
    wl_op(w, "f1", 100, 0, IDS(IN), IDS(X));
    wl_op(w, "f2", 100, 0, IDS(X, W), IDS(Y));
    wl_op(w, "f3", 100, 4000, IDS(Y), IDS(Z));
    if (b3_reads_x)
        wl_op(w, "b3", 100, 0, IDS(Z, Y, X), IDS(GY));
    else
        wl_op(w, "b3", 100, 0, IDS(Z, Y), IDS(GY));
    wl_op(w, "b2", 100, 0, IDS(GY, X), IDS(GX));
    wl_op(w, "bw", 100, 0, IDS(GX, IN), IDS(GW));
    wl_op(w, "upd", 100, 0, IDS(W, GW), IDS(W));
    w->optimizer_begin = UPD;
    return w;
}

/* The chain plus op7 "tail" [gw] -> m (10 bytes), 700..800: upd is not the
 * last op, so a swap-out after it can end within the iteration. */
static tsl_workload *chain_tail(const char *job) {
    tsl_workload *w = chain(job, 0);
    int32_t m = wl_tensor(w, "m", 10, TSL_KIND_ACTIVATION);
    wl_op(w, "tail", 100, 0, IDS(GW), IDS(m));
    w->optimizer_begin = UPD;
    return w;
}

static tsl_device_profile profile(int duplex) {
    tsl_device_profile d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "test");
    d.flops = 1e12;
    d.mem_bw = 1e11;
    d.mem_bytes = (size_t)1 << 30;
    d.h2d_bw = d.d2h_bw = 1e8;
    d.duplex = duplex;
    d.launch_us = 0;
    d.copy_latency_us = 0;
    return d;
}

static tsl_event SO(int32_t t, int32_t trig, double d) {
    return (tsl_event){TSL_EV_SWAP_OUT, t, trig, d, -1};
}
static tsl_event REL(int32_t t, int32_t trig) {
    return (tsl_event){TSL_EV_RELEASE, t, trig, 0.0, -1};
}
static tsl_event SI(int32_t t, int32_t trig, double d, int32_t prec) {
    return (tsl_event){TSL_EV_SWAP_IN, t, trig, d, prec};
}
static tsl_event RC(int32_t t, int32_t prec) {
    return (tsl_event){TSL_EV_RECOMPUTE, t, -1, 0.0, prec};
}

static tsl_plan *plan_of(const char *job, size_t peak, double period, const tsl_event *ev, int n) {
    tsl_plan *p = tsl_plan_new(job);
    cr_assert(p);
    for (int i = 0; i < n; i++) cr_assert_eq(tsl_plan_add(p, ev[i]), TSL_OK);
    p->predicted_peak = peak;
    p->predicted_period_us = period;
    return p;
}

#define PLAN(job, peak, period, ...)                                                               \
    plan_of(job, peak, period, (const tsl_event[]){__VA_ARGS__},                                   \
            (int)(sizeof((const tsl_event[]){__VA_ARGS__}) / sizeof(tsl_event)))

/* The valid plan P1 of the file comment, events 0..2, then `extra`. */
static tsl_plan *p1(const char *job, size_t peak, double period) {
    return PLAN(job, peak, period, SO(X, F1, 0), REL(X, F2), SI(X, F3, 50, B2));
}

/* Verifies jobs and checks that exactly `n_exp` violations come back, the
 * i-th equal to exp[i] (or, where exp[i] starts with '~', containing the
 * rest). Prints every violation on a mismatch. */
static void expect_jobs(const tsl_workload *const *w, const tsl_plan *const *p, int n_jobs,
                        const tsl_device_profile *d, int n_exp, const char *const *exp) {
    tsl_violation *v = (tsl_violation *)&v;
    int n = -1;
    tsl_status st = tsl_plan_verify_jobs(w, p, n_jobs, d, &v, &n);
    int ok =
        n == n_exp && (n == 0 ? st == TSL_OK && v == NULL : st == TSL_ERR_INVALID && v != NULL);
    for (int i = 0; ok && i < n; i++)
        ok = exp[i][0] == '~' ? strstr(v[i].what, exp[i] + 1) != NULL
                              : strcmp(v[i].what, exp[i]) == 0;
    if (!ok) {
        fprintf(stderr, "verify: status %d, %d violations (expected %d):\n", (int)st, n, n_exp);
        for (int i = 0; i < n; i++) fprintf(stderr, "  got [%d] %s\n", i, v[i].what);
        for (int i = 0; i < n_exp; i++) fprintf(stderr, "  exp [%d] %s\n", i, exp[i]);
    }
    free(n > 0 ? v : NULL);
    cr_assert(ok, "violations differ from the expected ones (see stderr)");
}

static void expect1(const tsl_workload *w, const tsl_plan *p, const tsl_device_profile *d,
                    int n_exp, const char *const *exp) {
    expect_jobs(&w, &p, 1, d, n_exp, exp);
}

#define EXPECT(w, p, d, ...)                                                                       \
    expect1(w, p, d, (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(char *)),                \
            (const char *[]){__VA_ARGS__})
#define EXPECT_VALID(w, p, d) expect1(w, p, d, 0, NULL)

/* The verifier's report of plan p of w alone (valid: TSL_OK asserted). */
static tsl_verify_report report1(const tsl_workload *w, const tsl_plan *p,
                                 const tsl_device_profile *d) {
    tsl_verify_report r;
    cr_assert_eq(tsl_plan_check(&w, &p, 1, d, &r), TSL_OK, "%s", tsl_last_error());
    return r;
}

/* ---- valid plans ----------------------------------------------------------------------- */

Test(verify, empty_plan_of_the_chain_is_valid_with_the_vanilla_peak) {
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p = plan_of("A", 10110, 700, NULL, 0);
    EXPECT_VALID(w, p, &d);
    p->predicted_peak = 10109;
    EXPECT(w, p, &d,
           "predicted_peak_bytes 10109 differs from the peak the events imply, 10110 bytes "
           "(at 200.0 us, as op 'f3' starts)");
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, hand_made_valid_plan_passes) {
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p = p1("A", 9110, 700);
    EXPECT_VALID(w, p, &d);
    /* the same plan sorted, and on a non-duplex device (copies 100..120 and
     * 350..370 never meet) */
    tsl_plan_sort(p);
    EXPECT_VALID(w, p, &d);
    tsl_device_profile nd = profile(0);
    EXPECT_VALID(w, p, &nd);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, release_while_a_swap_out_is_pending_waits_for_it) {
    /* swap_out x issued at 190 (copy until 210); the release after f2 (200)
     * waits until 210, so f3 starts (200) with x still resident: the peak
     * stays 10110, and the plan is valid. */
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p = PLAN("A", 10110, 700, SO(X, F1, 90), REL(X, F2), SI(X, F3, 50, B2));
    EXPECT_VALID(w, p, &d);
    p->predicted_peak = 9110; /* what the peak would be if the release did not wait */
    EXPECT(w, p, &d,
           "predicted_peak_bytes 9110 differs from the peak the events imply, 10110 bytes "
           "(at 200.0 us, as op 'f3' starts)");
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, swap_in_right_when_a_waiting_release_frees_inside_an_op) {
    /* swap_out x issued at 190 (copy until 210, inside f3's run); the
     * release after f2 waits for it and frees x at 210, a completion (step 1
     * of that time point); the swap-in of x issued at 210 (f2 + 10) comes
     * after it (step 3): x is absent then, and the load is back to 10110 */
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p = PLAN("A", 10110, 700, SO(X, F1, 90), REL(X, F2), SI(X, F2, 10, B2));
    EXPECT_VALID(w, p, &d);
    tsl_peak_info pi;
    cr_assert_eq(tsl_peak_analysis(w, p, &d, &pi), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(pi.peak, 10110);
    tsl_peak_info_free(&pi);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, across_iteration_swap_of_a_parameter) {
    /* w is written by upd (600..700) and first read by f2 (100): swap_out
     * after upd (700..701), release after upd (frees at 701), swap_in at the
     * start (0..1) before f2. w is absent at time 0 (periodic rule): the load
     * at time 0 is 1000 + the swap-in's 100 -> same peak 10110. */
    tsl_workload *w = chain_tail("A");
    tsl_device_profile d = profile(1);
    tsl_plan *p = PLAN("A", 10110, 800, SO(W, UPD, 0), REL(W, UPD), SI(W, -1, 0, F2));
    EXPECT_VALID(w, p, &d);
    /* without the swap-in, f2 finds w absent */
    tsl_plan *q = PLAN("A", 10010, 800, SO(W, UPD, 0), REL(W, UPD));
    EXPECT(w, q, &d,
           "event 1 release 'w' (trigger 'upd'): op 'f2' reads the tensor at 100.0 us, but "
           "it is absent from the iteration start (released after its last access) and "
           "nothing brings it back before that read");
    /* swapped out before its update: the host copy is stale at the end of the
     * iteration, so the next iteration's swap-in has nothing to copy */
    tsl_plan *r = PLAN("A", 10110, 800, SO(W, F2, 0), REL(W, UPD), SI(W, -1, 0, F2));
    EXPECT(w, r, &d,
           "event 2 swap_in 'w' (precede 'f2'): there is no host copy of the tensor (no "
           "valid swap-out before the swap-in at 0.0 us, nor after its last write by op "
           "'upd' in the previous iteration)");
    /* when upd is the last op, the swap-out after it outlasts the iteration */
    tsl_workload *w2 = chain("A", 0);
    tsl_plan *e = PLAN("A", 10110, 700, SO(W, UPD, 0), REL(W, UPD), SI(W, -1, 0, F2));
    EXPECT(w2, e, &d,
           "event 0 swap_out 'w' (trigger 'upd'): copy ends at 701.0 us, after the iteration "
           "ends at 700.0 us (the next iteration would wait for it)");
    tsl_plan_free(e);
    tsl_workload_free(w2);
    tsl_plan_free(p);
    tsl_plan_free(q);
    tsl_plan_free(r);
    tsl_workload_free(w);
}

/* ---- one test per violation class ---------------------------------------------------- */

Test(verify, read_of_a_released_tensor) {
    /* variant: b3 (300) also reads x; P1 brings x back only for b2 */
    tsl_workload *w = chain("A", 1);
    tsl_device_profile d = profile(1);
    tsl_plan *p = p1("A", 9110, 700);
    EXPECT(w, p, &d,
           "event 1 release 'x' (trigger 'f2'): op 'b3' reads the tensor at 300.0 us, after "
           "the release freed it at 200.0 us, and no swap-in or recomputation brings it "
           "back before that read");
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, swap_in_before_its_swap_out_ended) {
    /* swap_in issued at 110 while the swap_out copies until 120: x is still
     * resident then (the release waits), so the swap-in brings nothing and b2
     * then reads a released x: two violations */
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p = PLAN("A", 8110, 700, SO(X, F1, 0), REL(X, F2), SI(X, F1, 10, B2));
    EXPECT(w, p, &d,
           "event 2 swap_in 'x' (precede 'b2'): starts at 110.0 us, before its swap-out (event 0 "
           "swap_out 'x' (trigger 'f1')) ends at 120.0 us (the tensor is still resident then)",
           "event 1 release 'x' (trigger 'f2'): op 'b2' reads the tensor at 400.0 us, after the "
           "release freed it at 200.0 us, and no swap-in or recomputation brings it back before "
           "that read");
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, swap_in_ending_after_its_op_starts) {
    /* swap_in 95 us after f3: 395..415, b2 would start at 400: a planned
     * wait (docs/SCHEDULING.md), not a violation. b2 runs over 415..515,
     * bw 515..615, upd 615..715: the period is 715. The peak stays 9110
     * (at 395: in w y z gy + x). */
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p = PLAN("A", 9110, 715, SO(X, F1, 0), REL(X, F2), SI(X, F3, 95, B2));
    EXPECT_VALID(w, p, &d);
    tsl_verify_report r = report1(w, p, &d);
    cr_assert_eq(r.n_violations, 0);
    cr_assert_eq(r.n_waits, 1);
    const tsl_planned_wait *x = &r.waits[0];
    cr_assert(x->job == 0 && x->op == B2 && x->recompute == -1 && x->event == 2 && x->tensor == X);
    cr_assert_eq(x->stall_us, 15.0);
    cr_assert_str_eq(x->what, "op 'b2' waits 15.0 us for event 2 swap_in 'x' (precede 'b2'): it "
                              "would start at 400.0 us, the copy lands at 415.0 us");
    cr_assert(r.n_jobs == 1 && r.peak[0] == 9110 && r.period_us[0] == 715.0 &&
              r.stall_us[0] == 15.0);
    tsl_verify_report_free(&r);
    /* the predicted period must include the stall */
    p->predicted_period_us = 700;
    EXPECT(w, p, &d,
           "predicted_period_us 700.0 differs from the period the events imply, 715.0 us (0 "
           "recomputations adding 0.0 us; 1 planned wait adding 15.0 us)");
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, swap_in_issued_after_its_op_would_start) {
    /* swap_in 5 us after b3 (400): 405..425, but b2 would start at 400,
     * when x is not even being copied: an op waits only for copies under
     * way, so b2 reads a released x */
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p = PLAN("A", 8110, 700, SO(X, F1, 0), REL(X, F2), SI(X, B3, 5, B2));
    EXPECT(w, p, &d,
           "event 2 swap_in 'x' (precede 'b2'): copy ends at 425.0 us, after the op starts at "
           "400.0 us (issued at 405.0 us, after the op would start at 400.0 us: an op waits only "
           "for copies under way then)");
    tsl_plan_free(p);
    tsl_workload_free(w);
}

/* The recomputation-wait workload (every op 100 us, copies 1e8 B/s):
 *   in 10 (input), a 1000, b 2000, c 30, d 40, e 50
 *   op0 f [in] -> a   op1 g [a] -> b   op2 h [b] -> c   op3 k [c] -> d
 *   op4 m [d, b, a] -> e
 * Plan: a out after f (100..110), released after g (200), back 95 us
 * after h (395..405) for m; b released after h (300) and recomputed before
 * m. The recomputation re-runs g, which reads a: it would start at 400 and
 * waits 5 us for the copy; it runs over 405..505, m over 505..605.
 * Load: 1010 (f); 1000 at 100; 3000 (g); 2000 at 200; 2030 (h); 30 at 300;
 * 70 (k); 1070 at 395; 1040 at 400; 3040 (recomputation); 3090 (m) at 505.
 * Peak 3090, period 605. */
enum { W_IN, W_A, W_B, W_C, W_D, W_E };
enum { W_F, W_G, W_H, W_K, W_M };

static tsl_workload *rc_wait_workload(void) {
    tsl_workload *w = wl_new("W");
    wl_tensor(w, "in", 10, TSL_KIND_INPUT);
    wl_tensor(w, "a", 1000, TSL_KIND_ACTIVATION);
    wl_tensor(w, "b", 2000, TSL_KIND_ACTIVATION);
    wl_tensor(w, "c", 30, TSL_KIND_ACTIVATION);
    wl_tensor(w, "d", 40, TSL_KIND_ACTIVATION);
    wl_tensor(w, "e", 50, TSL_KIND_ACTIVATION);
    wl_op(w, "f", 100, 0, IDS(W_IN), IDS(W_A));
    wl_op(w, "g", 100, 0, IDS(W_A), IDS(W_B));
    wl_op(w, "h", 100, 0, IDS(W_B), IDS(W_C));
    wl_op(w, "k", 100, 0, IDS(W_C), IDS(W_D));
    wl_op(w, "m", 100, 0, IDS(W_D, W_B, W_A), IDS(W_E));
    return w;
}

Test(verify, recomputation_waits_for_its_input) {
    tsl_workload *w = rc_wait_workload();
    tsl_device_profile d = profile(1);
    tsl_plan *p = PLAN("W", 3090, 605, SO(W_A, W_F, 0), REL(W_A, W_G), SI(W_A, W_H, 95, W_M),
                       REL(W_B, W_H), RC(W_B, W_M));
    EXPECT_VALID(w, p, &d);
    tsl_verify_report r = report1(w, p, &d);
    cr_assert_eq(r.n_waits, 1);
    const tsl_planned_wait *x = &r.waits[0];
    cr_assert(x->op == W_M && x->recompute == 4 && x->event == 2 && x->tensor == W_A,
              "op %d recompute %d event %d tensor %d", x->op, x->recompute, x->event, x->tensor);
    cr_assert_eq(x->stall_us, 5.0);
    cr_assert_str_eq(x->what, "the recomputation of 'b' (event 4) waits 5.0 us for event 2 swap_in "
                              "'a' (precede 'm'): it would start at 400.0 us, the copy lands at "
                              "405.0 us");
    cr_assert(r.peak[0] == 3090 && r.period_us[0] == 605.0);
    tsl_verify_report_free(&r);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, waits_of_two_jobs_are_reported_per_job) {
    /* A runs P1; B's swap-in lands 15 us late (395..415) and its copies
     * share the channels with A's (100..120 vs B's 130..150, 350..370 vs
     * 395..415): valid together, B waits */
    tsl_workload *a = chain("A", 0), *b = chain("B", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *pa = p1("A", 9110, 700);
    tsl_plan *pb = PLAN("B", 9110, 715, SO(X, F1, 30), REL(X, F2), SI(X, F3, 95, B2));
    const tsl_workload *ws[2] = {a, b};
    const tsl_plan *ps[2] = {pa, pb};
    tsl_verify_report r;
    cr_assert_eq(tsl_plan_check(ws, ps, 2, &d, &r), TSL_OK, "%s", tsl_last_error());
    cr_assert(r.n_waits == 1 && r.waits[0].job == 1 && r.waits[0].stall_us == 15.0);
    cr_assert(strstr(r.waits[0].what, "job 'B': op 'b2' waits 15.0 us"), "%s", r.waits[0].what);
    cr_assert(r.n_jobs == 2 && r.stall_us[0] == 0.0 && r.stall_us[1] == 15.0 &&
              r.period_us[0] == 700.0 && r.period_us[1] == 715.0);
    tsl_verify_report_free(&r);
    /* issued right when b2 would start (400), B's swap-in (400..420) is
     * under way then: b2 waits 20 us and starts at 420; x now comes back
     * after b3 freed y and z, so B's peak is f3's 8110 */
    pb->events[2].delay_us = 100;
    pb->predicted_period_us = 720;
    pb->predicted_peak = 8110;
    cr_assert_eq(tsl_plan_check(ws, ps, 2, &d, &r), TSL_OK, "%s", tsl_last_error());
    cr_assert(r.n_waits == 1 && r.waits[0].stall_us == 20.0, "%g", r.waits[0].stall_us);
    tsl_verify_report_free(&r);
    /* a malformed input fills nothing */
    d.h2d_bw = 0;
    cr_assert_eq(tsl_plan_check(ws, ps, 2, &d, &r), TSL_ERR_INVALID);
    cr_assert(r.n_violations == 0 && r.n_waits == 0 && r.n_jobs == 0 && !r.peak);
    tsl_verify_report_free(&r);
    tsl_plan_free(pa);
    tsl_plan_free(pb);
    tsl_workload_free(a);
    tsl_workload_free(b);
}

Test(verify, release_of_a_never_swapped_tensor_before_its_last_read) {
    /* release x after f2 with no swap-out and no recomputation; b2 reads it */
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p = PLAN("A", 8110, 700, REL(X, F2));
    EXPECT(w, p, &d,
           "event 0 release 'x' (trigger 'f2'): frees the tensor at 200.0 us before its read "
           "by op 'b2' at 400.0 us, but it has no host copy (never swapped out) and is not "
           "recomputed before that read");
    /* a release after the last read is harmless (x dies at b2's end anyway:
     * here the release frees it at the same point, before gx's allocation) */
    tsl_plan *q = PLAN("A", 10110, 700, REL(X, B2));
    EXPECT_VALID(w, q, &d);
    tsl_plan_free(p);
    tsl_plan_free(q);
    tsl_workload_free(w);
}

Test(verify, two_transfers_overlapping_on_one_channel) {
    /* P1 plus a swap-out of `in` at 110..120, while x's copies 100..120 */
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p =
        PLAN("A", 9110, 700, SO(X, F1, 0), REL(X, F2), SI(X, F3, 50, B2), SO(IN, -1, 110));
    EXPECT(w, p, &d,
           "event 3 swap_out 'in' (trigger 'start') copies over [110.0, 120.0) us on the D2H "
           "channel, overlapping event 0 swap_out 'x' (trigger 'f1') over [100.0, 120.0) us");
    /* touching is not overlapping: in's copy at 120..130 */
    p->events[3].delay_us = 120;
    EXPECT_VALID(w, p, &d);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, non_duplex_profile_shares_one_channel) {
    /* P1 plus a swap-out of `in` at 355..365, inside x's swap-in 350..370:
     * fine on a duplex device, an overlap when both directions share one */
    tsl_workload *w = chain("A", 0);
    tsl_device_profile dd = profile(1), nd = profile(0);
    tsl_plan *p = PLAN("A", 9110, 700, SO(X, F1, 0), REL(X, F2), SI(X, F3, 50, B2), SO(IN, F3, 55));
    EXPECT_VALID(w, p, &dd);
    EXPECT(w, p, &nd,
           "event 3 swap_out 'in' (trigger 'f3') copies over [355.0, 365.0) us on the shared "
           "copy channel, overlapping event 2 swap_in 'x' (precede 'b2') over [350.0, 370.0) us");
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, two_jobs_share_the_channels) {
    /* job B's swap-out is shifted (130..150) but its swap-in meets A's
     * (350..370) on the H2D channel; each plan alone is valid */
    tsl_workload *a = chain("A", 0), *b = chain("B", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *pa = p1("A", 9110, 700);
    tsl_plan *pb = PLAN("B", 9110, 700, SO(X, F1, 30), REL(X, F2), SI(X, F3, 50, B2));
    EXPECT_VALID(a, pa, &d);
    EXPECT_VALID(b, pb, &d);
    const tsl_workload *ws[2] = {a, b};
    const tsl_plan *ps[2] = {pa, pb};
    const char *exp[] = {
        "job 'B': event 2 swap_in 'x' (precede 'b2') copies over [350.0, 370.0) us on "
        "the H2D channel, overlapping job 'A' event 2 swap_in 'x' (precede 'b2') over "
        "[350.0, 370.0) us"};
    expect_jobs(ws, ps, 2, &d, 1, exp);
    /* B's swap-in 10 us later still overlaps; 20 us later it does not */
    pb->events[2].delay_us = 60;
    const char *exp2[] = {
        "~job 'B': event 2 swap_in 'x' (precede 'b2') copies over [360.0, 380.0) us"};
    expect_jobs(ws, ps, 2, &d, 1, exp2);
    pb->events[2].delay_us = 70;
    expect_jobs(ws, ps, 2, &d, 0, NULL);
    /* on a non-duplex device, B's swap-out (130..150) is clear of A's 100..120
     * but now every copy shares one channel: still valid */
    tsl_device_profile nd = profile(0);
    expect_jobs(ws, ps, 2, &nd, 0, NULL);
    tsl_plan_free(pa);
    tsl_plan_free(pb);
    tsl_workload_free(a);
    tsl_workload_free(b);
}

/* The recomputation workload (every op 100 us):
 *   in 1000 (input), w 100 (parameter), a 1000, b 2000, c 100, d 100, e 100
 *   op0 p  [in, w] -> a    workspace 500
 *   op1 q  [a, w]  -> b
 *   op2 r  [b]     -> c    workspace 1000
 *   op3 s  [c, a]  -> d
 *   op4 t  [d, b, in] -> e
 * Vanilla: 1100; 2600 (p + ws); 2100; 4100 (q); 5200 (r + ws); 4200; 4300
 * (s); 3200; 3300 (t); 200. Peak 5200. */
enum { R_IN, R_W, R_A, R_B, R_C, R_D, R_E };
enum { OP_P, OP_Q, OP_R, OP_S, OP_T };

static tsl_workload *rc_workload(void) {
    tsl_workload *w = wl_new("R");
    wl_tensor(w, "in", 1000, TSL_KIND_INPUT);
    wl_tensor(w, "w", 100, TSL_KIND_PARAM);
    wl_tensor(w, "a", 1000, TSL_KIND_ACTIVATION);
    wl_tensor(w, "b", 2000, TSL_KIND_ACTIVATION);
    wl_tensor(w, "c", 100, TSL_KIND_ACTIVATION);
    wl_tensor(w, "d", 100, TSL_KIND_ACTIVATION);
    wl_tensor(w, "e", 100, TSL_KIND_ACTIVATION);
    wl_op(w, "p", 100, 500, IDS(R_IN, R_W), IDS(R_A));
    wl_op(w, "q", 100, 0, IDS(R_A, R_W), IDS(R_B));
    wl_op(w, "r", 100, 1000, IDS(R_B), IDS(R_C));
    wl_op(w, "s", 100, 0, IDS(R_C, R_A), IDS(R_D));
    wl_op(w, "t", 100, 0, IDS(R_D, R_B, R_IN), IDS(R_E));
    return w;
}

Test(verify, valid_recomputation_shifts_the_timeline) {
    /* release a after q (200), recompute it before s: p re-runs over 300..400
     * holding its 500-byte workspace, s and t move 100 us later.
     * Load: 1100; 2600; 2100; 4100 (q); 3100 at 200; 4200 (r); 3200 at 300;
     * 4700 (recompute: a + p's workspace); 4200 at 400; 4300 (s); ... Peak 4700,
     * period 600. */
    tsl_workload *w = rc_workload();
    tsl_device_profile d = profile(1);
    tsl_plan *p = PLAN("R", 4700, 600, REL(R_A, OP_Q), RC(R_A, OP_S));
    EXPECT_VALID(w, p, &d);
    p->predicted_period_us = 500;
    EXPECT(w, p, &d,
           "predicted_period_us 500.0 differs from the period the events imply, 600.0 us "
           "(1 recomputation adding 100.0 us)");
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, recompute_with_a_non_resident_input) {
    /* release b after r (300), recompute b before t: q re-runs at 400..500
     * and reads a, which died at s's end (400). Load: ...; 5200 (r + ws);
     * 2200 at 300; 2300 (s); 1200 at 400; 3200 (recompute); 3300 (t). Peak
     * 5200, period 600. */
    tsl_workload *w = rc_workload();
    tsl_device_profile d = profile(1);
    tsl_plan *p = PLAN("R", 5200, 600, REL(R_B, OP_R), RC(R_B, OP_T));
    EXPECT(w, p, &d,
           "event 1 recompute 'b' (precede 't'): input 'a' of its producer 'q' is not resident "
           "at 400.0 us (freed at 400.0 us after its last read by op 's')");
    /* a recomputation of a tensor that is still resident */
    tsl_plan *q = PLAN("R", 5200, 600, RC(R_B, OP_T));
    EXPECT(w, q, &d,
           "~event 0 recompute 'b' (precede 't'): 'b' is still resident at 400.0 us when the "
           "recomputation allocates it",
           "~input 'a' of its producer 'q' is not resident");
    tsl_plan_free(p);
    tsl_plan_free(q);
    tsl_workload_free(w);
}

Test(verify, chained_recomputation_regenerates_a_dead_input_first) {
    /* release b after r (300); before t, recompute a (dead since s's end)
     * and then b from it - t does not read a, the recomputation of b after
     * it does (a chain) - and release a after t. p re-runs over 400..500
     * (with its 500-byte workspace), q over 500..600, t 600..700. Load:
     * ...; 5200 (r + ws); 2200 at 300; 2300 (s); 1200 at 400; 2700 (a +
     * p's workspace); 2200 at 500; 4200 (b); 4300 (t); 200 once t has
     * freed d, b and in and the release a. Peak 5200, period 700. */
    tsl_workload *w = rc_workload();
    tsl_device_profile d = profile(1);
    tsl_plan *p = PLAN("R", 5200, 700, REL(R_B, OP_R), RC(R_A, OP_T), RC(R_B, OP_T),
                       REL(R_A, OP_T));
    EXPECT_VALID(w, p, &d);
    /* without b's recomputation a feeds nothing before t */
    tsl_plan *q = PLAN("R", 5200, 500, REL(R_B, OP_R), RC(R_A, OP_T), REL(R_A, OP_T));
    EXPECT(w, q, &d,
           "event 1 recompute 'a' (precede 't'): op 't' does not read the tensor, nor does a "
           "recomputation after it before that op",
           "~event 2 release 'a' (trigger 't'): the tensor is not resident",
           "~event 0 release 'b' (trigger 'r'): frees the tensor at 300.0 us before its read");
    /* nor does it when it runs after b's: b's recomputation lacks a */
    tsl_plan *r = PLAN("R", 5200, 600, REL(R_B, OP_R), RC(R_B, OP_T), RC(R_A, OP_T),
                       REL(R_A, OP_T));
    EXPECT(w, r, &d,
           "event 2 recompute 'a' (precede 't'): op 't' does not read the tensor, nor does a "
           "recomputation after it before that op",
           "~event 3 release 'a' (trigger 't'): the tensor is not resident",
           "~event 1 recompute 'b' (precede 't'): input 'a' of its producer 'q' is not resident");
    tsl_plan_free(p);
    tsl_plan_free(q);
    tsl_plan_free(r);
    tsl_workload_free(w);
}

Test(verify, wrong_predicted_peak_and_period) {
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p = p1("A", 9000, 710);
    EXPECT(w, p, &d,
           "predicted_peak_bytes 9000 differs from the peak the events imply, 9110 bytes (at 350.0 "
           "us, while op 'b3' runs)",
           "predicted_period_us 710.0 differs from the period the events imply, 700.0 us (0 "
           "recomputations adding 0.0 us)");
    p->predicted_period_us = NAN;
    p->predicted_peak = 9110;
    EXPECT(w, p, &d, "~predicted_period_us nan differs");
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, events_naming_out_of_range_tensors_and_ops) {
    /* P1 plus malformed events; each is reported and left out of the
     * analysis, so the rest still checks out (peak 9110) */
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p = p1("A", 9110, 700);
    tsl_event bad[] = {
        SO(99, F1, 0), /* tensor out of range */
        SO(Y, 7, 0), /* trigger out of range */
        SO(Y, -2, 0), /* trigger out of range */
        SI(X, F3, 10, 7), /* precede out of range */
        SI(X, F3, 10, -1), /* swap-in without precede */
        {TSL_EV_RELEASE, Y, F3, 0.0, F2}, /* a release preceding an op before its trigger */
        SO(Y, F2, -1.0), /* negative delay */
        SO(Y, F2, INFINITY), /* infinite delay */
        {(tsl_event_type)9, X, F1, 0.0, -1}, /* unknown type */
        SI(X, F3, 10, BW), /* bw does not read x */
        RC(W, F2), /* a parameter has no producer */
        RC(IN, F1), /* nor the input */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(tsl_plan_add(p, bad[i]), TSL_OK);
    EXPECT(
        w, p, &d, "event 3 swap_out: tensor index 99 out of range [0, 8)",
        "event 4 swap_out 'y': trigger op index 7 out of range [-1, 7)",
        "event 5 swap_out 'y': trigger op index -2 out of range [-1, 7)",
        "event 6 swap_in 'x': precede op index 7 out of range [0, 7)",
        "event 7 swap_in 'x': precede op index -1 out of range [0, 7)",
        "event 8 release 'y': precede op index 1 out of range (2, 7): a release precedes an op "
        "after its trigger",
        "event 9 swap_out 'y' (trigger 'f2'): delay -1 us is negative or not finite",
        "event 10 swap_out 'y' (trigger 'f2'): delay inf us is negative or not finite",
        "event 11: unknown type 9",
        "event 12 swap_in 'x' (precede 'bw'): op 'bw' does not read the tensor",
        "event 13 recompute 'w' (precede 'f2'): the tensor (kind parameter) has no producer op in "
        "the iteration to re-run",
        "event 14 recompute 'in' (precede 'f1'): the tensor (kind input) has no producer op in the "
        "iteration to re-run");
    tsl_plan_free(p);
    tsl_workload_free(w);
}

/* ---- further rules ------------------------------------------------------------------ */

Test(verify, swap_out_rules) {
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    /* issued during f1, which generates x (x is allocated at 0, complete at 100) */
    tsl_plan *p = PLAN("A", 9110, 700, SO(X, -1, 50), REL(X, F2), SI(X, F3, 50, B2));
    EXPECT(
        w, p, &d,
        "event 0 swap_out 'x' (trigger 'start'): starts at 50.0 us, before op 'f1' "
        "generating its value ends at 100.0 us",
        "event 2 swap_in 'x' (precede 'b2'): there is no host copy of the value op 'f1' generated "
        "(no valid swap-out of it before the swap-in at 350.0 us)");
    /* swap-out of an activation after its last read: it is already freed */
    tsl_plan *q = PLAN("A", 10110, 700, SO(Y, B3, 0));
    EXPECT(w, q, &d,
           "event 0 swap_out 'y' (trigger 'b3'): the tensor is not resident at the swap-out's "
           "issue at 400.0 us (freed at 400.0 us after its last read by op 'b3')");
    /* a copy still running when the tensor dies (y: 3000 bytes, 30 us,
     * issued 80 us into b3 which reads it last) */
    tsl_plan *r = PLAN("A", 10110, 700, SO(Y, F3, 80));
    EXPECT(w, r, &d,
           "event 0 swap_out 'y' (trigger 'f3'): copy ends at 410.0 us, after the tensor is "
           "freed at 400.0 us (end of its last read by op 'b3')");
    /* a copy of w torn by its update (upd writes w from 600; copy 599.5..600.5) */
    tsl_plan *s = PLAN("A", 10110, 700, SO(W, B2, 99.5));
    EXPECT(w, s, &d,
           "event 0 swap_out 'w' (trigger 'b2'): copy ends at 600.5 us, after op 'upd' starts "
           "writing the tensor at 600.0 us");
    /* and one issued during the update */
    s->events[0].trigger = BW;
    EXPECT(
        w, s, &d,
        "event 0 swap_out 'w' (trigger 'bw'): starts at 699.5 us, before op 'upd' "
        "generating its value ends at 700.0 us",
        "event 0 swap_out 'w' (trigger 'bw'): copy ends at 700.5 us, after the iteration ends at "
        "700.0 us (the next iteration would wait for it)");
    tsl_plan_free(p);
    tsl_plan_free(q);
    tsl_plan_free(r);
    tsl_plan_free(s);
    tsl_workload_free(w);
}

Test(verify, release_rules) {
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    /* a double release */
    tsl_plan *p = PLAN("A", 9110, 700, SO(X, F1, 0), REL(X, F2), REL(X, F3), SI(X, F3, 50, B2));
    EXPECT(w, p, &d,
           "event 2 release 'x' (trigger 'f3'): the tensor is not resident when the release "
           "frees it at 300.0 us (freed at 200.0 us by event 1 release 'x' (trigger 'f2'))");
    /* a release waiting for a swap-out frees the tensor in the middle of a
     * read: y (read by f3 and b3) is swapped out at 200..230 and released
     * after f2, so it leaves at 230 while f3 (200..300) reads it; the swap-in
     * 260..290 brings it back for b3. Peak 10110 as f3 starts. */
    tsl_plan *q = PLAN("A", 10110, 700, SO(Y, F2, 0), REL(Y, F2), SI(Y, F2, 60, B3));
    EXPECT(w, q, &d,
           "~event 1 release 'y' (trigger 'f2'): op 'f3' reads 'y' from 200.0 us, after the "
           "release's trigger 'f2' ends at 200.0 us, but before the release frees it at 230.0 us "
           "(it waits for event 0 swap_out 'y' (trigger 'f2'))");
    /* a swap-in triggered by the op it precedes is reported once, by the
     * swap-in (not again as a read of a released tensor by that op): the op
     * cannot wait for a copy that starts after it ends */
    tsl_plan *r = PLAN("A", 8110, 700, SO(X, F1, 0), REL(X, F2), SI(X, B2, 0, B2));
    EXPECT(w, r, &d,
           "event 2 swap_in 'x' (precede 'b2'): triggered by op 'b2', which does not end before "
           "op 'b2' starts (the op would wait for a copy issued only after it ends)");
    tsl_plan_free(r);
    tsl_plan_free(p);
    tsl_plan_free(q);
    tsl_workload_free(w);
}

Test(verify, plan_for_another_job_is_reported) {
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p = p1("B", 9110, 700);
    EXPECT(w, p, &d, "the plan is for job 'B' but the workload is job 'A'");
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, malformed_workload_or_profile_is_an_error_not_a_violation) {
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p = p1("A", 9110, 700);
    tsl_violation *v = NULL;
    int n = -1;
    w->ops[2].in[0] = 42;
    cr_assert_eq(tsl_plan_verify(w, p, &d, &v, &n), TSL_ERR_INVALID);
    cr_assert(n == 0 && v == NULL);
    cr_assert(strstr(tsl_last_error(), "ops[2] ('f3').in: tensor index 42 out of range [0, 8)"),
              "%s", tsl_last_error());
    w->ops[2].in[0] = Y;
    d.h2d_bw = 0;
    cr_assert_eq(tsl_plan_verify(w, p, &d, &v, &n), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "h2d_bw 0"), "%s", tsl_last_error());
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, zero_duration_ops_follow_the_executor_order) {
    /* op z0 takes no time and generates an unread 500-byte tensor: the
     * vanilla executor counts it (allocated, then freed after the op), so
     * the peak at time 100 is 1000 (in) + 2000 (a) + 500 = 3500 */
    tsl_workload *w = wl_new("Z");
    wl_tensor(w, "in", 1000, TSL_KIND_INPUT);
    wl_tensor(w, "a", 2000, TSL_KIND_ACTIVATION);
    wl_tensor(w, "u", 500, TSL_KIND_ACTIVATION);
    wl_tensor(w, "b", 10, TSL_KIND_ACTIVATION);
    wl_op(w, "f", 100, 0, IDS(0), IDS(1));
    wl_op(w, "z0", 0, 0, IDS(1), IDS(2));
    wl_op(w, "g", 100, 0, IDS(1, 0), IDS(3));
    tsl_device_profile d = profile(1);
    tsl_plan *p = plan_of("Z", 3500, 200, NULL, 0);
    EXPECT_VALID(w, p, &d);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(verify, release_preceding_an_op_makes_it_wait_for_the_swap_out) {
    /* swap_out x issued at 190 (copy until 210); the release after f2
     * precedes f3, which would start at 200: f3 waits 10 us for the copy,
     * starts at 210 with x freed (a completion of that time point, before
     * f3's allocations), and every later op moves 10 us: period 710. The
     * swap-in of x (f3's end 310 + 50 = 360, until 380) lands before b2
     * (410). Without the precede, f3 starts with x resident (10110). */
    tsl_workload *w = chain("A", 0);
    tsl_device_profile d = profile(1);
    tsl_plan *p = PLAN("A", 9110, 710, SO(X, F1, 90), ((tsl_event){TSL_EV_RELEASE, X, F2, 0.0, F3}),
                       SI(X, F3, 50, B2));
    EXPECT_VALID(w, p, &d);
    tsl_verify_report r = report1(w, p, &d);
    cr_assert_eq(r.n_waits, 1);
    const tsl_planned_wait *x = &r.waits[0];
    cr_assert(x->op == F3 && x->recompute == -1 && x->tensor == X &&
                  p->events[x->event].type == TSL_EV_RELEASE,
              "op %d recompute %d event %d tensor %d", x->op, x->recompute, x->event, x->tensor);
    cr_assert_eq(x->stall_us, 10.0);
    cr_assert(strstr(x->what, "op 'f3' waits 10.0 us for event 1 release 'x' (trigger 'f2'): it "
                              "would start at 200.0 us, its swap-out ends and it frees the tensor "
                              "at 210.0 us"),
              "%s", x->what);
    cr_assert(r.peak[0] == 9110 && r.period_us[0] == 710.0, "peak %zu period %g", r.peak[0],
              r.period_us[0]);
    tsl_verify_report_free(&r);
    /* issued later (a delay: f2's end + 15 = 215), the release frees at
     * 215, after the copy: f3 waits 15 us */
    for (int32_t k = 0; k < p->n_events; k++)
        if (p->events[k].type == TSL_EV_RELEASE) p->events[k].delay_us = 15.0;
    p->predicted_period_us = 715;
    EXPECT_VALID(w, p, &d);
    /* a delay without a precede, and a precede not after the trigger, are
     * malformed */
    for (int32_t k = 0; k < p->n_events; k++)
        if (p->events[k].type == TSL_EV_RELEASE) p->events[k].precede = -1;
    EXPECT(w, p, &d,
           "~delay 15 us must be 0 (a release acts at the end of its trigger unless it "
           "precedes an op)",
           "predicted_peak_bytes 9110 differs from the peak the events imply, 10110 bytes (at "
           "200.0 us, as op 'f3' starts)",
           "predicted_period_us 715.0 differs from the period the events imply, 700.0 us (0 "
           "recomputations adding 0.0 us)");
    tsl_plan_free(p);
    tsl_workload_free(w);
}
