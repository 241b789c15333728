/* policy_check.c - see policy_check.h. */
#include "policy_check.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "plan_check.h"
#include "random_workload.h"
#include "tensile/models.h"
#include "tensile/ops.h"
#include "tensile/sched_json.h"
#include "tensile/sim.h"
#include "tensile/verify.h"

void pc_result_free(pc_result *r) {
    for (int j = 0; j < r->n; j++) tsl_plan_free(r->p[j]);
    tsl_plan_report_free(&r->rep);
    memset(r, 0, sizeof *r);
}

size_t pc_persistent_bytes(const tsl_workload *w) {
    size_t s = 0;
    for (int32_t t = 0; t < w->n_tensors; t++)
        if (tsl_kind_is_persistent(w->tensors[t].kind)) s += w->tensors[t].bytes;
    return s;
}

tsl_workload *pc_zoo_workload(const char *model, const tsl_device_profile *dev, int adam) {
    return pc_zoo_workload_at(model, dev, adam, 2, strncmp(model, "inception", 9) == 0 ? 75 : 32);
}

tsl_workload *pc_zoo_workload_at(const char *model, const tsl_device_profile *dev, int adam,
                                 int batch, int image) {
    tsl_model_cfg cfg = tsl_model_cfg_default(model);
    cfg.batch = batch;
    cfg.n_classes = 10;
    cfg.image_size = image;
    return pc_zoo_workload_cfg(model, dev, adam, &cfg);
}

tsl_workload *pc_zoo_workload_cfg(const char *model, const tsl_device_profile *dev, int adam,
                                  const tsl_model_cfg *cfgp) {
    tsl_model_cfg cfg = *cfgp;
    tsl_graph *g = tsl_graph_new(model);
    cr_assert(g);
    tsl_tid loss;
    cr_assert_eq(tsl_model_build(g, model, &cfg, &loss), TSL_OK, "%s: %s", model,
                 tsl_last_error());
    tsl_optimizer_cfg o = th_optimizer(adam);
    th_train_graph(g, loss, &o);
    tsl_workload *w;
    cr_assert_eq(tsl_workload_from_graph(g, model, NULL, dev, &w), TSL_OK, "%s: %s", model,
                 tsl_last_error());
    tsl_graph_free(g);
    return w;
}

/* The plans as JSON text (malloc'd), through a temporary file. */
static char *plans_json(tsl_plan **p, int n, tsl_workload **w) {
    char path[256];
    snprintf(path, sizeof path, "%s/tsl_pc_%ld.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (long)getpid());
    cr_assert_eq(tsl_plan_write_json((const tsl_plan *const *)p, n,
                                     (const tsl_workload *const *)w, path),
                 TSL_OK, "%s", tsl_last_error());
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)len + 1);
    cr_assert(s && fread(s, 1, (size_t)len, f) == (size_t)len);
    s[len] = 0;
    fclose(f);
    remove(path);
    return s;
}

/* Each job alone in the simulator, exact latencies: its plan's peak,
 * period and stall. */
static void simulate_alone(tsl_workload *w, tsl_plan *p, const tsl_device_profile *dev,
                           double stall, const char *what, int j) {
    tsl_sim_opts so = {.iterations = 3, .trace_path = NULL, .actual = NULL};
    tsl_sim_result sr;
    cr_assert_eq(tsl_simulate(&w, &p, 1, dev, &so, &sr), TSL_OK, "%s job %d: %s", what, j,
                 tsl_last_error());
    double tol = 1e-6 * p->predicted_period_us + 1e-6;
    cr_assert_eq(sr.job[0].peak, p->predicted_peak, "%s job %d: simulated peak %zu, predicted %zu",
                 what, j, sr.job[0].peak, p->predicted_peak);
    cr_assert(fabs(sr.job[0].iter_us - p->predicted_period_us) <= tol,
              "%s job %d: simulated period %.17g, predicted %.17g", what, j, sr.job[0].iter_us,
              p->predicted_period_us);
    cr_assert(fabs(sr.job[0].stall_us - stall) <= tol,
              "%s job %d: simulated stall %.17g us, planned %.17g us", what, j, sr.job[0].stall_us,
              stall);
    tsl_sim_result_free(&sr);
}

/* Plans once (checked by th_plan_checked) into r. */
static void plan_once(tsl_workload **w, int n, const tsl_device_profile *dev, const tsl_plan_opts *po,
                      pc_result *r) {
    memset(r, 0, sizeof *r);
    r->n = n;
    th_plan_checked(w, n, dev, po, r->p, &r->rep);
}

tsl_plan_opts pc_opts(const char *policy, const void *opts, size_t budget) {
    tsl_plan_opts po = tsl_plan_opts_default();
    po.policy = tsl_policy_find(policy);
    cr_assert_not_null(po.policy, "%s", tsl_last_error());
    po.opts = opts;
    po.budget = budget;
    return po;
}

void pc_plan_and_check(tsl_workload **w, int n, const tsl_device_profile *dev,
                       const tsl_plan_opts *po, const char *what, pc_result *r) {
    cr_assert(n >= 1 && n <= PC_MAXJ);
    plan_once(w, n, dev, po, r);
    /* the verifier's report: no violation, the planned waits counted */
    tsl_verify_report vr;
    cr_assert_eq(tsl_plan_check((const tsl_workload *const *)w, (const tsl_plan *const *)r->p, n,
                                dev, &vr),
                 TSL_OK, "%s: %s", what, tsl_last_error());
    r->waits = vr.n_waits;
    r->stall_us = 0;
    for (int j = 0; j < n; j++) {
        r->stall_us += vr.stall_us[j];
        cr_assert_eq(r->rep.waits[j] > 0, vr.stall_us[j] > 0, "%s job %d", what, j);
        cr_assert(fabs(r->rep.stall_us[j] - vr.stall_us[j]) <= 1e-6 * (1 + vr.stall_us[j]),
                  "%s job %d: reported stall %g, verified %g", what, j, r->rep.stall_us[j],
                  vr.stall_us[j]);
    }
    for (int j = 0; j < n; j++) simulate_alone(w[j], r->p[j], dev, vr.stall_us[j], what, j);
    tsl_verify_report_free(&vr);
    if (n > 1) {
        tsl_sim_opts so = {.iterations = 3, .trace_path = NULL, .actual = NULL};
        tsl_sim_result sr;
        cr_assert_eq(tsl_simulate(w, r->p, n, dev, &so, &sr), TSL_OK, "%s: %d jobs together: %s",
                     what, n, tsl_last_error());
        tsl_sim_result_free(&sr);
    }
    /* determinism: the same inputs, the same plans, byte for byte */
    pc_result again;
    plan_once(w, n, dev, po, &again);
    char *a = plans_json(r->p, n, w), *b = plans_json(again.p, n, w);
    cr_assert(strcmp(a, b) == 0, "%s: planning twice gives other plans", what);
    free(a);
    free(b);
    pc_result_free(&again);
}

tsl_device_profile pc_exact_profile(void) {
    tsl_device_profile d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "exact");
    d.flops = 1e12;
    d.mem_bw = 1e11;
    d.mem_bytes = (size_t)1 << 30;
    d.h2d_bw = d.d2h_bw = 1e9;
    d.duplex = 1;
    return d;
}

void pc_expect_events(const tsl_plan *p, const tsl_event *want, int n, const char *what) {
    int ok = p->n_events == n;
    for (int i = 0; ok && i < n; i++) {
        const tsl_event *a = &p->events[i], *b = &want[i];
        ok = a->type == b->type && a->tensor == b->tensor && a->trigger == b->trigger &&
             a->delay_us == b->delay_us && a->precede == b->precede;
    }
    if (!ok) {
        fprintf(stderr, "%s: %d events (expected %d):\n", what, p->n_events, n);
        for (int i = 0; i < p->n_events; i++)
            fprintf(stderr, "  got  type %d t%d trigger %d delay %.17g precede %d\n",
                    p->events[i].type, p->events[i].tensor, p->events[i].trigger,
                    p->events[i].delay_us, p->events[i].precede);
        for (int i = 0; i < n; i++)
            fprintf(stderr, "  want type %d t%d trigger %d delay %.17g precede %d\n", want[i].type,
                    want[i].tensor, want[i].trigger, want[i].delay_us, want[i].precede);
    }
    cr_assert(ok, "%s: the events differ from the expected ones (see stderr)", what);
}

tsl_workload *pc_conv_chain(void) {
    rw_builder *b = rw_build_begin("chain");
    struct { const char *n; size_t b; tsl_tensor_kind k; } t[] = {
        {"in", 1000, TSL_KIND_INPUT},      {"w1", 100, TSL_KIND_PARAM},
        {"w2", 100, TSL_KIND_PARAM},       {"w3", 100, TSL_KIND_PARAM},
        {"c1", 30000, TSL_KIND_ACTIVATION}, {"c2", 8000, TSL_KIND_ACTIVATION},
        {"p2", 4000, TSL_KIND_ACTIVATION}, {"c3", 1000, TSL_KIND_ACTIVATION},
        {"L", 10, TSL_KIND_ACTIVATION},    {"g3", 1000, TSL_KIND_GRADIENT},
        {"gp2", 40000, TSL_KIND_GRADIENT}, {"dw3", 100, TSL_KIND_GRADIENT},
        {"g2", 1000, TSL_KIND_GRADIENT},   {"g1", 1000, TSL_KIND_GRADIENT},
        {"dw2", 100, TSL_KIND_GRADIENT},   {"dw1", 100, TSL_KIND_GRADIENT},
    };
    for (int i = 0; i < (int)(sizeof t / sizeof t[0]); i++)
        cr_assert_eq(rw_build_tensor(b, t[i].n, t[i].b, t[i].k), i);
    PC_OP(b, "conv1", PC_L2(CH_IN, CH_W1), PC_L1(CH_C1));
    PC_OP(b, "conv2", PC_L2(CH_C1, CH_W2), PC_L1(CH_C2));
    PC_OP(b, "pool2", PC_L1(CH_C2), PC_L1(CH_P2));
    PC_OP(b, "conv3", PC_L2(CH_P2, CH_W3), PC_L1(CH_C3));
    PC_OP(b, "loss", PC_L1(CH_C3), PC_L1(CH_LO));
    PC_OP(b, "loss.dlogits", PC_L1(CH_LO), PC_L1(CH_G3));
    PC_OP(b, "conv3.bwd_data", PC_L2(CH_G3, CH_W3), PC_L1(CH_GP2));
    PC_OP(b, "conv3.bwd_filter", PC_L2(CH_G3, CH_P2), PC_L1(CH_DW3));
    PC_OP(b, "pool2.bwd", PC_L2(CH_GP2, CH_C2), PC_L1(CH_G2));
    PC_OP(b, "conv2.bwd_data", PC_L2(CH_G2, CH_W2), PC_L1(CH_G1));
    PC_OP(b, "conv2.bwd_filter", PC_L2(CH_G2, CH_C1), PC_L1(CH_DW2));
    PC_OP(b, "conv1.bwd_filter", PC_L2(CH_G1, CH_IN), PC_L1(CH_DW1));
    rw_build_mark_optimizer(b);
    PC_OP(b, "w1.sgd", PC_L2(CH_W1, CH_DW1), PC_L1(CH_W1));
    PC_OP(b, "w2.sgd", PC_L2(CH_W2, CH_DW2), PC_L1(CH_W2));
    PC_OP(b, "w3.sgd", PC_L2(CH_W3, CH_DW3), PC_L1(CH_W3));
    tsl_workload *w = rw_build_end(b);
    cr_assert_not_null(w);
    char why[256];
    cr_assert_eq(rw_check(w, why, sizeof why), 0, "%s", why);
    return w;
}

size_t pc_half_way(tsl_workload **w, int n, const tsl_device_profile *dev) {
    size_t pers = 0, van = 0;
    for (int j = 0; j < n; j++) {
        tsl_peak_info pi;
        cr_assert_eq(tsl_peak_analysis(w[j], NULL, dev, &pi), TSL_OK);
        van += pi.peak;
        pers += pc_persistent_bytes(w[j]);
        tsl_peak_info_free(&pi);
    }
    return pers + (van - pers) / 2;
}

int pc_multi_output_recomputes(const tsl_workload *w, const tsl_plan *p) {
    int n = 0;
    for (int32_t k = 0; k < p->n_events; k++)
        if (p->events[k].type == TSL_EV_RECOMPUTE &&
            w->ops[w->tensors[p->events[k].tensor].producer].n_out > 1)
            n++;
    return n;
}

/* The last op of w that reads or writes tensor t (-1: none). */
static int32_t last_access(const tsl_workload *w, int32_t t) {
    int32_t last = -1;
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_wl_op *o = &w->ops[i];
        for (int q = 0; q < o->n_in; q++) last = o->in[q] == t ? i : last;
        for (int q = 0; q < o->n_out; q++) last = o->out[q] == t ? i : last;
    }
    return last;
}

int pc_across_swaps(const tsl_workload *w, const tsl_plan *p) {
    int n = 0;
    for (int32_t k = 0; k < p->n_events; k++) {
        const tsl_event *e = &p->events[k];
        n += e->type == TSL_EV_RELEASE && tsl_kind_is_persistent(w->tensors[e->tensor].kind) &&
             e->trigger >= last_access(w, e->tensor);
    }
    return n;
}

int pc_converted(const tsl_plan *p) {
    int n = 0;
    for (int32_t k = 0; k < p->n_events; k++) {
        if (p->events[k].type != TSL_EV_RECOMPUTE) continue;
        int32_t t = p->events[k].tensor, outs = 0, ins = 0, first = 1;
        for (int32_t m = 0; m < p->n_events; m++) {
            if (p->events[m].tensor != t) continue;
            outs += p->events[m].type == TSL_EV_SWAP_OUT;
            ins += p->events[m].type == TSL_EV_SWAP_IN;
            if (p->events[m].type == TSL_EV_RECOMPUTE && m < k) first = 0;
        }
        n += first && ins < outs; /* each tensor once */
    }
    return n;
}

/* 1 if op `op` of w reads tensor t. */
static int op_reads(const tsl_workload *w, int32_t op, int32_t t) {
    for (int i = 0; i < w->ops[op].n_in; i++)
        if (w->ops[op].in[i] == t) return 1;
    return 0;
}

int pc_early_recomputes(const tsl_workload *w, const tsl_plan *p) {
    int n = 0;
    for (int32_t k = 0; k < p->n_events; k++) {
        const tsl_event *e = &p->events[k];
        if (e->type != TSL_EV_RECOMPUTE || op_reads(w, e->precede, e->tensor)) continue;
        int chained = 0; /* a chain member is released after the op it precedes */
        for (int32_t m = 0; m < p->n_events && !chained; m++)
            chained = p->events[m].type == TSL_EV_RELEASE && p->events[m].tensor == e->tensor &&
                      p->events[m].trigger == e->precede;
        n += !chained;
    }
    return n;
}

int pc_clean_drops(const tsl_workload *w, const tsl_plan *p) {
    int n = 0;
    for (int32_t k = 0; k < p->n_events; k++) {
        const tsl_event *e = &p->events[k];
        int32_t t = e->tensor;
        if (e->type != TSL_EV_RELEASE || !tsl_kind_is_persistent(w->tensors[t].kind)) continue;
        /* after its last access: across the boundary */
        if (e->trigger >= last_access(w, t)) continue;
        int out_before = 0;
        for (int32_t m = 0; m < p->n_events; m++)
            out_before |= p->events[m].type == TSL_EV_SWAP_OUT && p->events[m].tensor == t &&
                          p->events[m].trigger <= e->trigger;
        n += !out_before;
    }
    return n;
}


int pc_chained(const tsl_workload *w, const tsl_plan *p) {
    int n = 0;
    for (int32_t k = 0; k < p->n_events; k++) {
        const tsl_event *e = &p->events[k];
        n += e->type == TSL_EV_RECOMPUTE && !op_reads(w, e->precede, e->tensor);
    }
    return n;
}

int pc_chained_rereads(const tsl_workload *w, const tsl_plan *p) {
    int n = 0;
    for (int32_t k = 0; k < p->n_events; k++) {
        const tsl_event *e = &p->events[k];
        if (e->type != TSL_EV_RECOMPUTE || op_reads(w, e->precede, e->tensor)) continue;
        int later = 0;
        for (int32_t op = e->precede + 1; op < w->n_ops && !later; op++)
            later = op_reads(w, op, e->tensor);
        n += later;
    }
    return n;
}
