/*
 * test_algos.c - algorithms as a plan decision (docs/SCHEDULING.md,
 * "Algorithms"): a workload's per-op algorithms (tsl_workload_op_algo,
 * tsl_workload_set_alts, tsl_workload_add_algos), a plan's choices
 * (tsl_plan_set_algo), the workload as run (tsl_workload_for_plan), the
 * peak analysis, layout and verifier on the chosen algorithms' latencies
 * and workspaces, and the JSON forms carrying both, bad input named.
 *
 * The chain (every op 100 us, copies at 1e8 B/s; as tests/test_verify.c):
 *
 *   op0 f1 [in] -> x; op1 f2 [x, w] -> y; op2 f3 [y] -> z (workspace 4000,
 *   and two other algorithms: 1 "im2col" 50 us, workspace 9000; 2 "direct"
 *   300 us, no workspace); op3 b3 [z, y] -> gy; op4 b2 [gy, x] -> gx;
 *   op5 bw [gx, in] -> gw; op6 upd [w, gw] -> w (in place).
 *
 * Vanilla load during f3: 6110 + workspace. Peak: 10110 (default, f3),
 * 15110 (im2col, f3), 9110 (direct: b3's 9110 is then the highest).
 * Period: 700 (default), 650 (im2col), 900 (direct).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensile/backend_cpu.h"
#include "tensile/calibrate.h"
#include "tensile/models.h"
#include "tensile/ops.h"
#include "tensile/plan.h"
#include "tensile/sched_json.h"
#include "tensile/sim.h"
#include "tensile/verify.h"
#include "tensile/workload.h"

#define CAP 16

static tsl_workload *wl_new(const char *job) {
    tsl_workload *w = calloc(1, sizeof *w);
    cr_assert(w);
    snprintf(w->job, sizeof w->job, "%s", job);
    w->tensors = calloc(CAP, sizeof *w->tensors);
    w->ops = calloc(CAP, sizeof *w->ops);
    cr_assert(w->tensors && w->ops);
    return w;
}

static void wl_tensor(tsl_workload *w, const char *name, size_t bytes, tsl_tensor_kind k) {
    tsl_wl_tensor *t = &w->tensors[w->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->bytes = bytes;
    t->kind = k;
    t->producer = -1;
}

static int32_t *dup_ids(const int32_t *ids, int n) {
    int32_t *c = malloc(sizeof *c * (size_t)n);
    cr_assert(c);
    memcpy(c, ids, sizeof *c * (size_t)n);
    return c;
}

#define IDS(...)                                                                                   \
    (const int32_t[]){__VA_ARGS__}, (int)(sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

static void wl_op(tsl_workload *w, const char *name, size_t ws, const int32_t *in, int n_in,
                  const int32_t *out, int n_out) {
    tsl_wl_op *op = &w->ops[w->n_ops];
    snprintf(op->name, sizeof op->name, "%s", name);
    op->start_us = w->n_ops ? w->ops[w->n_ops - 1].end_us : 0.0;
    op->end_us = op->start_us + 100.0;
    op->workspace = ws;
    op->in = dup_ids(in, n_in);
    op->n_in = n_in;
    op->out = dup_ids(out, n_out);
    op->n_out = n_out;
    for (int k = 0; k < n_out; k++)
        if (!tsl_kind_is_persistent(w->tensors[out[k]].kind))
            w->tensors[out[k]].producer = w->n_ops;
    w->period_us = op->end_us;
    w->n_ops++;
}

enum { IN, W, X, Y, Z, GY, GX, GW };
enum { F1, F2, F3, B3, B2, BW, UPD };

static const tsl_wl_algo F3_ALTS[2] = {{"im2col", 50.0, 9000}, {"direct", 300.0, 0}};

static tsl_workload *chain(void) {
    tsl_workload *w = wl_new("A");
    wl_tensor(w, "in", 1000, TSL_KIND_INPUT);
    wl_tensor(w, "w", 100, TSL_KIND_PARAM);
    wl_tensor(w, "x", 2000, TSL_KIND_ACTIVATION);
    wl_tensor(w, "y", 3000, TSL_KIND_ACTIVATION);
    wl_tensor(w, "z", 10, TSL_KIND_ACTIVATION);
    wl_tensor(w, "gy", 3000, TSL_KIND_GRADIENT);
    wl_tensor(w, "gx", 2000, TSL_KIND_GRADIENT);
    wl_tensor(w, "gw", 100, TSL_KIND_GRADIENT);
    wl_op(w, "f1", 0, IDS(IN), IDS(X));
    wl_op(w, "f2", 0, IDS(X, W), IDS(Y));
    wl_op(w, "f3", 4000, IDS(Y), IDS(Z));
    wl_op(w, "b3", 0, IDS(Z, Y), IDS(GY));
    wl_op(w, "b2", 0, IDS(GY, X), IDS(GX));
    wl_op(w, "bw", 0, IDS(GX, IN), IDS(GW));
    wl_op(w, "upd", 0, IDS(W, GW), IDS(W));
    w->optimizer_begin = UPD;
    cr_assert_eq(tsl_workload_set_alts(w, F3, F3_ALTS, 2), TSL_OK);
    return w;
}

static tsl_device_profile profile(void) {
    tsl_device_profile d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "test");
    d.flops = 1e12;
    d.mem_bw = 1e11;
    d.mem_bytes = (size_t)1 << 30;
    d.h2d_bw = d.d2h_bw = 1e8;
    d.duplex = 1;
    return d;
}

static tsl_plan *plan_with(int32_t algo) {
    tsl_plan *p = tsl_plan_new("A");
    cr_assert(p);
    cr_assert_eq(tsl_plan_set_algo(p, F3, algo), TSL_OK);
    return p;
}

/* ---- the workload's algorithms ------------------------------------------------ */

Test(algos, op_algorithms_are_the_default_then_the_alternatives) {
    tsl_workload *w = chain();
    cr_assert_eq(tsl_workload_op_n_algos(w, F3), 3);
    cr_assert_eq(tsl_workload_op_n_algos(w, F2), 1);
    tsl_wl_algo a = tsl_workload_op_algo(w, F3, 0);
    cr_assert_str_eq(a.name, "default");
    cr_assert_float_eq(a.us, 100.0, 1e-12);
    cr_assert_eq(a.workspace, 4000);
    a = tsl_workload_op_algo(w, F3, 2);
    cr_assert_str_eq(a.name, "direct");
    cr_assert_float_eq(a.us, 300.0, 1e-12);
    cr_assert_eq(a.workspace, 0);
    tsl_workload *c = tsl_workload_copy(w, NULL); /* the copy carries them */
    cr_assert(c && c->ops[F3].n_alts == 2 && c->ops[F3].alts != w->ops[F3].alts);
    cr_assert_str_eq(c->ops[F3].alts[0].name, "im2col");
    tsl_workload_free(c);
    tsl_workload_free(w);
}

Test(algos, bad_alternatives_are_refused_naming_the_fault) {
    tsl_workload *w = chain();
    static const struct {
        tsl_wl_algo a[2];
        int n;
        const char *msg;
    } cases[] = {
        {{{"default", 1, 0}}, 1, "is named 'default'"},
        {{{"", 1, 0}}, 1, "a name must have 1 to 23 printable characters"},
        {{{"a\tb", 1, 0}}, 1, "a name must have 1 to 23 printable characters"},
        {{{"x", 1, 0}, {"x", 2, 0}}, 2, "algorithms 1 and 2 are both named 'x'"},
        {{{"x", -1, 0}}, 1, "algorithm 1 ('x'): -1 us is not a finite value >= 0"},
        {{{"x", NAN, 0}}, 1, "is not a finite value >= 0"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        cr_assert_eq(tsl_workload_set_alts(w, F2, cases[c].a, cases[c].n), TSL_ERR_INVALID);
        cr_assert(strstr(tsl_last_error(), cases[c].msg), "case %zu: %s", c, tsl_last_error());
        cr_assert(strstr(tsl_last_error(), "op 1 ('f2')"), "%s", tsl_last_error());
        cr_assert_eq(w->ops[F2].n_alts, 0); /* unchanged */
    }
    tsl_wl_algo many[TSL_ALGO_MAX] = {{"a", 1, 0}};
    cr_assert_eq(tsl_workload_set_alts(w, F2, many, TSL_ALGO_MAX), TSL_ERR_INVALID);
    cr_assert_eq(tsl_workload_set_alts(w, 99, many, 1), TSL_ERR_INVALID);
    cr_assert_eq(tsl_workload_set_alts(w, F3, NULL, 0), TSL_OK); /* removes them */
    cr_assert(w->ops[F3].n_alts == 0 && w->ops[F3].alts == NULL);
    tsl_workload_free(w);
}

/* ---- a plan's choices -------------------------------------------------------------- */

Test(algos, plan_choices_stay_sorted_and_zero_removes_one) {
    tsl_plan *p = tsl_plan_new("A");
    cr_assert_eq(tsl_plan_set_algo(p, 5, 2), TSL_OK);
    cr_assert_eq(tsl_plan_set_algo(p, 1, 1), TSL_OK);
    cr_assert_eq(tsl_plan_set_algo(p, 3, 1), TSL_OK);
    cr_assert_eq(tsl_plan_set_algo(p, 3, 2), TSL_OK); /* replaces */
    cr_assert_eq(p->n_algos, 3);
    cr_assert(p->algos[0].op == 1 && p->algos[1].op == 3 && p->algos[2].op == 5);
    cr_assert_eq(tsl_plan_op_algo(p, 3), 2);
    cr_assert_eq(tsl_plan_op_algo(p, 4), 0);
    cr_assert_eq(tsl_plan_op_algo(NULL, 4), 0);
    cr_assert_eq(tsl_plan_set_algo(p, 3, 0), TSL_OK);
    cr_assert(p->n_algos == 2 && p->algos[1].op == 5);
    cr_assert_eq(tsl_plan_set_algo(p, -1, 1), TSL_ERR_INVALID);
    cr_assert_eq(tsl_plan_set_algo(p, 0, TSL_ALGO_MAX), TSL_ERR_INVALID);
    tsl_plan *q = tsl_plan_new("B");
    cr_assert_eq(tsl_plan_copy_algos(q, p), TSL_OK);
    cr_assert(q->n_algos == 2 && q->algos != p->algos && q->algos[0].op == 1);
    cr_assert_eq(tsl_plan_set_algo(p, 1, 0), TSL_OK);
    cr_assert_eq(tsl_plan_set_algo(p, 5, 0), TSL_OK);
    cr_assert(p->n_algos == 0 && p->algos == NULL);
    tsl_plan_free(p);
    tsl_plan_free(q);
}

Test(algos, workload_for_plan_times_the_chosen_algorithm_and_shifts_the_rest) {
    tsl_workload *w = chain(), *r;
    tsl_plan *p = plan_with(TSL_ALGO_IM2COL);
    cr_assert_eq(tsl_workload_for_plan(w, p, &r), TSL_OK);
    cr_assert_float_eq(r->ops[F3].start_us, 200.0, 1e-9);
    cr_assert_float_eq(r->ops[F3].end_us, 250.0, 1e-9);
    cr_assert_eq(r->ops[F3].workspace, 9000);
    cr_assert_float_eq(r->ops[B3].start_us, 250.0, 1e-9);
    cr_assert_float_eq(r->ops[UPD].end_us, 650.0, 1e-9);
    cr_assert_float_eq(r->period_us, 650.0, 1e-9);
    cr_assert(r->ops[F3].n_alts == 0 && r->ops[F3].alts == NULL); /* the choice is made */
    tsl_workload_free(r);
    cr_assert_eq(tsl_plan_set_algo(p, F3, 3), TSL_OK); /* the op has 0..2 */
    cr_assert_eq(tsl_workload_for_plan(w, p, &r), TSL_ERR_INVALID);
    cr_assert(r == NULL);
    cr_assert(strstr(tsl_last_error(), "op 2 ('f3') runs with algorithm 3, but it has 3"),
              "%s", tsl_last_error());
    tsl_plan_free(p);
    p = tsl_plan_new("A");
    cr_assert_eq(tsl_plan_set_algo(p, F2, 1), TSL_OK); /* f2 has one algorithm */
    cr_assert_eq(tsl_workload_for_plan(w, p, &r), TSL_ERR_INVALID);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

/* ---- analysis and verification ---------------------------------------------------- */

Test(algos, peak_and_period_follow_the_chosen_algorithm) {
    tsl_workload *w = chain();
    tsl_device_profile d = profile();
    static const size_t peak[3] = {10110, 15110, 9110};
    static const double period[3] = {700, 650, 900};
    for (int k = 0; k < 3; k++) {
        tsl_plan *p = plan_with(k);
        tsl_peak_info pi;
        cr_assert_eq(tsl_peak_analysis(w, p, &d, &pi), TSL_OK);
        cr_assert_eq(pi.peak, peak[k], "algorithm %d: peak %zu", k, pi.peak);
        cr_assert_float_eq(pi.period_us, period[k], 1e-9, "algorithm %d", k);
        tsl_peak_info_free(&pi);
        p->predicted_peak = peak[k];
        p->predicted_period_us = period[k];
        tsl_violation *v = NULL;
        int n = -1;
        cr_assert_eq(tsl_plan_verify(w, p, &d, &v, &n), TSL_OK, "algorithm %d: %s", k,
                     n > 0 ? v[0].what : tsl_last_error());
        cr_assert_eq(tsl_plan_layout(w, p, &d, 0), TSL_OK);
        int ws_blocks = 0;
        for (int32_t b = 0; b < p->n_blocks; b++)
            if (p->blocks[b].op == F3) {
                ws_blocks++;
                cr_assert_eq(p->blocks[b].bytes, k == 1 ? 9000 : 4000);
            }
        cr_assert_eq(ws_blocks, k == 2 ? 0 : 1, "algorithm %d", k);
        cr_assert_eq(tsl_plan_verify(w, p, &d, &v, &n), TSL_OK, "algorithm %d: %s", k,
                     n > 0 ? v[0].what : tsl_last_error());
        tsl_plan_free(p);
    }
    tsl_workload_free(w);
}

Test(algos, verifier_counts_the_chosen_workspace_and_rejects_unknown_algorithms) {
    tsl_workload *w = chain();
    tsl_device_profile d = profile();
    tsl_plan *p = plan_with(TSL_ALGO_IM2COL);
    p->predicted_peak = 10110; /* the default's figures: wrong under im2col */
    p->predicted_period_us = 700;
    tsl_violation *v = NULL;
    int n = 0;
    cr_assert_eq(tsl_plan_verify(w, p, &d, &v, &n), TSL_ERR_INVALID);
    int saw_peak = 0;
    for (int i = 0; i < n; i++) saw_peak |= strstr(v[i].what, "15110") != NULL;
    cr_assert(n >= 1 && saw_peak, "%d violations, first: %s", n, n ? v[0].what : "");
    free(v);
    p->algos[0].algo = 7; /* written behind tsl_plan_set_algo's back */
    p->predicted_peak = 10110;
    p->predicted_period_us = 700;
    cr_assert_eq(tsl_plan_verify(w, p, &d, &v, &n), TSL_ERR_INVALID);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(v[0].what, "op 'f3' runs with algorithm 7, which it does not have (its "
                                "algorithms: 0 to 2)");
    free(v);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

Test(algos, simulator_runs_the_chosen_algorithm) {
    tsl_workload *w = chain();
    tsl_device_profile d = profile();
    static const size_t peak[3] = {10110, 15110, 9110};
    static const double period[3] = {700, 650, 900};
    for (int k = 0; k < 3; k++) {
        tsl_plan *p = plan_with(k);
        tsl_sim_result r;
        cr_assert_eq(tsl_simulate(&w, &p, 1, &d, NULL, &r), TSL_OK, "%s", tsl_last_error());
        cr_assert_eq(r.job[0].peak, peak[k], "algorithm %d: simulated peak %zu", k, r.job[0].peak);
        cr_assert_float_eq(r.job[0].iter_us, period[k], 1e-9, "algorithm %d: %g us", k,
                           r.job[0].iter_us);
        tsl_sim_result_free(&r);
        tsl_plan_free(p);
    }
    tsl_plan *p = plan_with(1);
    p->algos[0].algo = 5;
    tsl_sim_result r;
    cr_assert_eq(tsl_simulate(&w, &p, 1, &d, NULL, &r), TSL_ERR_INVALID);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

/* ---- JSON ------------------------------------------------------------------------------- */

Test(algos, json_round_trips_carry_the_algorithms_and_the_choices) {
    tsl_workload *w = chain(), *w2 = NULL;
    char *text = NULL, *text2 = NULL;
    size_t len, len2;
    cr_assert_eq(tsl_workload_to_text(w, &text, &len), TSL_OK);
    cr_assert(strstr(text, "\"algos\": [{\"name\": \"im2col\", \"us\": 50"), "%s", text);
    cr_assert_eq(tsl_workload_parse_json(text, len, "w.json", &w2), TSL_OK, "%s",
                 tsl_last_error());
    cr_assert_eq(w2->ops[F3].n_alts, 2);
    cr_assert_eq(w2->ops[F3].alts[0].workspace, 9000);
    cr_assert_float_eq(w2->ops[F3].alts[1].us, 300.0, 0);
    cr_assert_eq(w2->ops[F2].n_alts, 0);
    cr_assert_eq(tsl_workload_to_text(w2, &text2, &len2), TSL_OK);
    cr_assert(len == len2 && memcmp(text, text2, len) == 0, "not stable");
    free(text);
    free(text2);

    tsl_device_profile d = profile();
    tsl_plan *p = plan_with(TSL_ALGO_DIRECT), *q[1] = {NULL};
    cr_assert_eq(tsl_plan_layout(w, p, &d, 0), TSL_OK);
    p->predicted_peak = 9110;
    p->predicted_period_us = 900;
    const tsl_workload *ws[1] = {w2};
    cr_assert_eq(tsl_plan_to_text((const tsl_plan *const *)&p, 1, ws, &text, &len), TSL_OK);
    cr_assert(strstr(text, "\"algos\": [{\"op\": \"f3\", \"algo\": 2}]"), "%s", text);
    cr_assert_eq(tsl_plan_parse_json(text, len, "p.json", ws, 1, q), TSL_OK, "%s",
                 tsl_last_error());
    cr_assert(q[0]->n_algos == 1 && q[0]->algos[0].op == F3 && q[0]->algos[0].algo == 2);
    cr_assert_eq(q[0]->n_blocks, p->n_blocks);
    cr_assert_eq(tsl_plan_to_text((const tsl_plan *const *)q, 1, ws, &text2, &len2), TSL_OK);
    cr_assert(len == len2 && memcmp(text, text2, len) == 0, "not stable");
    free(text);
    free(text2);
    tsl_plan_free(q[0]);
    tsl_plan_free(p);

    p = tsl_plan_new("A"); /* no choice: no field, as before algorithms existed */
    cr_assert_eq(tsl_plan_to_text((const tsl_plan *const *)&p, 1, ws, &text, &len), TSL_OK);
    cr_assert(!strstr(text, "algos"), "%s", text);
    free(text);
    tsl_plan_free(p);
    tsl_workload_free(w2);
    tsl_workload_free(w);
}

/* Replaces the first `from` in text with `to` (a fresh string). */
static char *subst(const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    cr_assert(at, "'%s' not in the text", from);
    size_t n = strlen(text) - strlen(from) + strlen(to);
    char *r = malloc(n + 1);
    cr_assert(r);
    size_t pre = (size_t)(at - text);
    memcpy(r, text, pre);
    strcpy(r + pre, to);
    strcat(r, at + strlen(from));
    return r;
}

Test(algos, bad_json_is_rejected_naming_the_field_and_the_value) {
    tsl_workload *w = chain(), *w2 = (tsl_workload *)&w;
    char *text;
    size_t len;
    cr_assert_eq(tsl_workload_to_text(w, &text, &len), TSL_OK);
    static const char *const wcases[][3] = {
        {"\"us\": 50", "\"us\": -5", "w.json: ops[2].algos[0].us: -5"},
        {"\"us\": 50", "\"us\": \"x\"", "w.json: ops[2].algos[0].us"},
        {"\"name\": \"direct\"", "\"name\": \"im2col\"",
         "w.json: ops[2].algos[1].name: duplicate algorithm name 'im2col'"},
        {"\"name\": \"direct\"", "\"name\": \"default\"", "w.json: ops[2].algos[1].name: 'default'"},
        {"\"workspace\": 9000}", "\"workspace\": -1}", "w.json: ops[2].algos[0].workspace: -1"},
        {"\"workspace\": 9000}", "\"workspace\": 9000, \"z\": 1}",
         "w.json: ops[2].algos[0]: unknown field 'z'"},
        {"\"algos\": [{", "\"algos\": [7, {", "w.json: ops[2].algos[0]: expected an object"},
    };
    for (size_t c = 0; c < sizeof wcases / sizeof wcases[0]; c++) {
        char *bad = subst(text, wcases[c][0], wcases[c][1]);
        cr_assert_eq(tsl_workload_parse_json(bad, strlen(bad), "w.json", &w2), TSL_ERR_FORMAT,
                     "case %zu", c);
        cr_assert(strstr(tsl_last_error(), wcases[c][2]), "case %zu: %s", c, tsl_last_error());
        free(bad);
    }
    free(text);

    tsl_plan *p = plan_with(TSL_ALGO_IM2COL), *q[1];
    const tsl_workload *ws[1] = {w};
    cr_assert_eq(tsl_plan_to_text((const tsl_plan *const *)&p, 1, ws, &text, &len), TSL_OK);
    static const char *const pcases[][3] = {
        {"\"algo\": 1", "\"algo\": 3",
         "p.json: jobs[0].algos[0].algo: 3 is not an algorithm of op 'f3' in job 'A' (it has 3: "
         "0 default, 1 im2col, 2 direct)"},
        {"\"algo\": 1", "\"algo\": -1", "p.json: jobs[0].algos[0].algo: -1 is not an algorithm"},
        {"\"algo\": 1", "\"algo\": 1.5", "p.json: jobs[0].algos[0].algo: expected an integer, got"},
        {"\"op\": \"f3\"", "\"op\": \"nope\"", "p.json: jobs[0].algos[0].op"},
        {"{\"op\": \"f3\", \"algo\": 1}", "{\"op\": \"f3\", \"algo\": 1}, {\"op\": \"f3\", "
                                          "\"algo\": 2}",
         "p.json: jobs[0].algos[1].op: op 'f3' is chosen twice"},
        {"\"algo\": 1}", "\"algo\": 1, \"x\": 0}", "p.json: jobs[0].algos[0]: unknown field 'x'"},
        {"\"algos\": [", "\"algos\": 5, \"zz\": [", "p.json: jobs[0]"},
    };
    for (size_t c = 0; c < sizeof pcases / sizeof pcases[0]; c++) {
        char *bad = subst(text, pcases[c][0], pcases[c][1]);
        q[0] = NULL;
        cr_assert_eq(tsl_plan_parse_json(bad, strlen(bad), "p.json", ws, 1, q), TSL_ERR_FORMAT,
                     "case %zu", c);
        cr_assert(strstr(tsl_last_error(), pcases[c][2]), "case %zu: %s", c, tsl_last_error());
        cr_assert(q[0] == NULL);
        free(bad);
    }
    free(text);
    tsl_plan_free(p);
    tsl_workload_free(w);
}

/* ---- from a graph ------------------------------------------------------------------------ */

Test(algos, add_algos_gives_every_convolution_its_menu) {
    tsl_graph *g = tsl_graph_new("cnn");
    tsl_model_cfg cfg = tsl_model_cfg_default("cnn");
    cfg.batch = 4;
    tsl_tid loss;
    cr_assert_eq(tsl_model_build(g, "cnn", &cfg, &loss), TSL_OK);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK);
    tsl_optimizer_cfg opt = tsl_sgd_default(0.1f);
    cr_assert_eq(tsl_graph_optimizer(g, &opt), TSL_OK);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK);
    tsl_device_profile d = tsl_profile_cpu_rough();
    tsl_workload *w;
    cr_assert_eq(tsl_workload_from_graph(g, "cnn", NULL, &d, &w), TSL_OK);
    for (int32_t i = 0; i < w->n_ops; i++) cr_assert_eq(w->ops[i].n_alts, 0);
    tsl_algo_ratios r = tsl_algo_ratios_default();
    r.ratio[0][TSL_ALGO_DIRECT] = 3.0;
    cr_assert_eq(tsl_workload_add_algos(w, g, NULL, &r), TSL_OK, "%s", tsl_last_error());
    int convs = 0;
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        int menu = tsl_algo_ratio_slot(op->type) >= 0;
        cr_assert_eq(w->ops[i].n_alts, menu ? 2 : 0, "op %s", op->name);
        if (!menu) continue;
        convs += op->type == TSL_OP_CONV2D;
        cr_assert_str_eq(w->ops[i].alts[0].name, "im2col");
        cr_assert_str_eq(w->ops[i].alts[1].name, "direct");
        cr_assert_eq(w->ops[i].alts[0].workspace, tsl_op_algo_workspace(g, op, TSL_ALGO_IM2COL));
        cr_assert_gt(w->ops[i].alts[0].workspace, 0);
        cr_assert_eq(w->ops[i].alts[1].workspace, 0);
        if (op->type == TSL_OP_CONV2D)
            cr_assert_float_eq(w->ops[i].alts[1].us, 3.0 * (w->ops[i].end_us - w->ops[i].start_us),
                               1e-9);
    }
    cr_assert_geq(convs, 2);
    r.ratio[1][TSL_ALGO_IM2COL] = 0.0;
    cr_assert_eq(tsl_workload_add_algos(w, g, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "ratio [1][1] = 0"), "%s", tsl_last_error());
    tsl_workload_free(w);
    tsl_graph_free(g);
}

Test(algos, measured_latencies_fill_the_menu) {
    tsl_graph *g = tsl_graph_new("cnn");
    tsl_model_cfg cfg = tsl_model_cfg_default("cnn");
    cfg.batch = 2;
    tsl_tid loss;
    cr_assert_eq(tsl_model_build(g, "cnn", &cfg, &loss), TSL_OK);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK);
    tsl_backend *b;
    cr_assert_eq(tsl_cpu_backend_new((size_t)1 << 28, TSL_KERNELS_FAST, 1, &b), TSL_OK);
    int32_t no = tsl_graph_n_ops(g);
    double *us = malloc(sizeof *us * (size_t)no * TSL_ALGO_MAX);
    cr_assert_eq(tsl_calibrate_algos(g, b, 0, us), TSL_ERR_INVALID);
    cr_assert_eq(tsl_calibrate_algos(g, b, 1, us), TSL_OK, "%s", tsl_last_error());
    int measured = 0;
    for (int32_t i = 0; i < no; i++) {
        int na = tsl_op_n_algos(tsl_graph_op(g, i));
        for (int k = 0; k < TSL_ALGO_MAX; k++) {
            double v = us[(size_t)i * TSL_ALGO_MAX + (size_t)k];
            if (k < na && na > 1) {
                cr_assert(v >= 0.0, "op %d algorithm %d: %g", i, k, v);
                measured++;
            } else
                cr_assert_eq(v, -1.0, "op %d slot %d: %g", i, k, v);
        }
    }
    cr_assert_geq(measured, 6);
    tsl_device_profile d = tsl_profile_cpu_rough();
    tsl_workload *w;
    cr_assert_eq(tsl_workload_from_graph(g, "cnn", NULL, &d, &w), TSL_OK);
    cr_assert_eq(tsl_workload_add_algos(w, g, us, NULL), TSL_OK, "%s", tsl_last_error());
    for (int32_t i = 0; i < no; i++)
        for (int32_t k = 1; k <= w->ops[i].n_alts; k++)
            cr_assert_eq(w->ops[i].alts[k - 1].us, us[(size_t)i * TSL_ALGO_MAX + (size_t)k]);
    tsl_workload_free(w);
    free(us);
    tsl_backend_free(b);
    tsl_graph_free(g);
}
