/*
 * fuzz_plan_json.c - libFuzzer harness for the plan JSON reader and writer
 * (src/io/plan_json.c) and, on every plan it accepts, the verifier
 * (src/sched/verify*.c).
 *
 * Each input is parsed as the plans of two fixed jobs: "A" (a training-like
 * chain: in, w, x, y, z, gy, gx, gw; ops f1 f2 f3 b3 b2 bw upd) and "B" (in,
 * w, a, b, c, d, e; ops p q r s t); A's f3 has two other algorithms, so
 * that plans may choose them ("algos"). A failure must be TSL_ERR_FORMAT (or
 * TSL_ERR_OOM) with a message naming the input, and must leave the output
 * untouched. A success must give plans whose events are in range and of the
 * documented shape; the verifier must then return TSL_OK with no violation
 * or TSL_ERR_INVALID with every violation a non-empty message, the same
 * twice over, jobs together and each alone (tsl_plan_check reporting the
 * same violations and only well-formed planned waits); and the plans must survive
 * write -> read exactly, a second write giving the same bytes. The input's
 * length picks the device: duplex when even, one shared channel when odd.
 * Anything else aborts, which libFuzzer reports as a crash.
 *
 * Built with the libraries of the line below (and what they link) by
 * scripts/fuzz.sh with libFuzzer, and by the suite as fuzz_plan_json_replay over
 * fuzz/corpus/fuzz_plan_json (CMakeLists.txt reads the same line).
 * fuzz-link: tsl_io
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tensile/sched_json.h"
#include "tensile/verify.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_plan_json: check failed at line %d: %s\n", __LINE__, #cond);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* ---- the two fixed workloads ------------------------------------------------------ */

typedef struct opdef {
    const char *name;
    double lat;
    size_t ws;
    int n_in, n_out;
    int32_t in[3], out[1];
} opdef;

static tsl_workload *make(const char *job, const char *const *tn, const size_t *tb,
                          const tsl_tensor_kind *tk, int nt, const opdef *od, int no) {
    tsl_workload *w = calloc(1, sizeof *w);
    CHECK(w);
    snprintf(w->job, sizeof w->job, "%s", job);
    w->tensors = calloc((size_t)nt, sizeof *w->tensors);
    w->ops = calloc((size_t)no, sizeof *w->ops);
    CHECK(w->tensors && w->ops);
    for (int i = 0; i < nt; i++) {
        snprintf(w->tensors[i].name, TSL_NAME_MAX, "%s", tn[i]);
        w->tensors[i].bytes = tb[i];
        w->tensors[i].kind = tk[i];
        w->tensors[i].producer = -1;
    }
    double t = 0;
    for (int i = 0; i < no; i++) {
        tsl_wl_op *op = &w->ops[i];
        snprintf(op->name, TSL_NAME_MAX, "%s", od[i].name);
        op->start_us = t;
        t += od[i].lat;
        op->end_us = t;
        op->workspace = od[i].ws;
        op->n_in = od[i].n_in;
        op->n_out = od[i].n_out;
        op->in = malloc(sizeof(int32_t) * 3);
        op->out = malloc(sizeof(int32_t));
        CHECK(op->in && op->out);
        memcpy(op->in, od[i].in, sizeof(int32_t) * 3);
        op->out[0] = od[i].out[0];
        if (!tsl_kind_is_persistent(w->tensors[op->out[0]].kind))
            w->tensors[op->out[0]].producer = i;
    }
    w->n_tensors = nt;
    w->n_ops = no;
    w->optimizer_begin = no;
    w->period_us = t;
    return w;
}

static tsl_workload *job_a(void) {
    static const char *const tn[] = {"in", "w", "x", "y", "z", "gy", "gx", "gw"};
    static const size_t tb[] = {1000, 100, 2000, 3000, 10, 3000, 2000, 100};
    static const tsl_tensor_kind tk[] = {
        TSL_KIND_INPUT,      TSL_KIND_PARAM,    TSL_KIND_ACTIVATION, TSL_KIND_ACTIVATION,
        TSL_KIND_ACTIVATION, TSL_KIND_GRADIENT, TSL_KIND_GRADIENT,   TSL_KIND_GRADIENT};
    static const opdef od[] = {
        {"f1", 100, 0, 1, 1, {0}, {2}},     {"f2", 100, 0, 2, 1, {2, 1}, {3}},
        {"f3", 100, 4000, 1, 1, {3}, {4}},  {"b3", 100, 0, 2, 1, {4, 3}, {5}},
        {"b2", 100, 0, 2, 1, {5, 2}, {6}},  {"bw", 100, 0, 2, 1, {6, 0}, {7}},
        {"upd", 100, 0, 2, 1, {1, 7}, {1}},
    };
    tsl_workload *w = make("A", tn, tb, tk, 8, od, 7);
    w->optimizer_begin = 6;
    /* f3 has two other algorithms (docs/SCHEDULING.md, "Algorithms") */
    static const tsl_wl_algo alts[2] = {{"im2col", 50, 9000}, {"direct", 300, 0}};
    CHECK(tsl_workload_set_alts(w, 2, alts, 2) == TSL_OK);
    return w;
}

static tsl_workload *job_b(void) {
    static const char *const tn[] = {"in", "w", "a", "b", "c", "d", "e"};
    static const size_t tb[] = {1000, 100, 1000, 2000, 100, 100, 100};
    static const tsl_tensor_kind tk[] = {
        TSL_KIND_INPUT,      TSL_KIND_PARAM,      TSL_KIND_ACTIVATION, TSL_KIND_ACTIVATION,
        TSL_KIND_ACTIVATION, TSL_KIND_ACTIVATION, TSL_KIND_ACTIVATION};
    static const opdef od[] = {
        {"p", 100, 500, 2, 1, {0, 1}, {2}},  {"q", 100, 0, 2, 1, {2, 1}, {3}},
        {"r", 100, 1000, 1, 1, {3}, {4}},    {"s", 100, 0, 2, 1, {4, 2}, {5}},
        {"t", 100, 0, 3, 1, {5, 3, 0}, {6}},
    };
    return make("B", tn, tb, tk, 7, od, 5);
}

/* ---- checks ---------------------------------------------------------------------------- */

static void check_plan(const tsl_workload *w, const tsl_plan *p) {
    CHECK(strcmp(p->job, w->job) == 0);
    CHECK(p->n_events >= 0 && (p->n_events == 0 || p->events));
    CHECK(isfinite(p->predicted_period_us) && p->predicted_period_us >= 0);
    for (int32_t k = 0; k < p->n_events; k++) {
        const tsl_event *e = &p->events[k];
        CHECK((int)e->type >= 0 && (int)e->type <= (int)TSL_EV_RECOMPUTE);
        CHECK(e->tensor >= 0 && e->tensor < w->n_tensors);
        CHECK(e->trigger >= -1 && e->trigger < w->n_ops);
        CHECK(isfinite(e->delay_us) && e->delay_us >= 0 && !signbit(e->delay_us));
        int prec = e->type == TSL_EV_SWAP_IN || e->type == TSL_EV_RECOMPUTE;
        if (e->type == TSL_EV_RELEASE) /* a precede (a wait for its swap-out) and a delay, or neither */
            CHECK(e->precede == -1 ? e->delay_us == 0 : e->precede >= 0 && e->precede < w->n_ops);
        else
            CHECK(prec ? e->precede >= 0 && e->precede < w->n_ops : e->precede == -1);
        if (e->type == TSL_EV_RECOMPUTE) CHECK(e->trigger == -1 && e->delay_us == 0);
    }
    CHECK(p->n_algos >= 0 && (p->n_algos == 0) == (p->algos == NULL));
    for (int32_t x = 0; x < p->n_algos; x++) { /* sorted, distinct, algorithms the op has */
        CHECK(p->algos[x].op >= 0 && p->algos[x].op < w->n_ops);
        CHECK(x == 0 || p->algos[x].op > p->algos[x - 1].op);
        CHECK(p->algos[x].algo >= 1 && p->algos[x].algo < tsl_workload_op_n_algos(w, p->algos[x].op));
    }
}

static void check_same(const tsl_plan *a, const tsl_plan *b) {
    CHECK(strcmp(a->job, b->job) == 0 && a->n_events == b->n_events);
    CHECK(a->predicted_peak == b->predicted_peak);
    CHECK(memcmp(&a->predicted_period_us, &b->predicted_period_us, sizeof(double)) == 0);
    CHECK(a->n_algos == b->n_algos);
    for (int32_t x = 0; x < a->n_algos; x++)
        CHECK(a->algos[x].op == b->algos[x].op && a->algos[x].algo == b->algos[x].algo);
    for (int32_t k = 0; k < a->n_events; k++) {
        const tsl_event *x = &a->events[k], *y = &b->events[k];
        CHECK(x->type == y->type && x->tensor == y->tensor && x->trigger == y->trigger &&
              x->precede == y->precede && memcmp(&x->delay_us, &y->delay_us, sizeof(double)) == 0);
    }
}

/* The verifier's whole answer agrees with tsl_plan_verify_jobs's (status
 * st, violations v[0..nv)) and its planned waits are well formed. */
static void check_report(const tsl_workload *const *w, const tsl_plan *const *p, int n,
                         const tsl_device_profile *dev, tsl_status st, const tsl_violation *v,
                         int nv) {
    tsl_verify_report r;
    CHECK(tsl_plan_check(w, p, n, dev, &r) == st && r.n_violations == nv);
    for (int i = 0; i < nv; i++) CHECK(strcmp(r.violations[i].what, v[i].what) == 0);
    for (int i = 0; i < r.n_waits; i++) {
        const tsl_planned_wait *x = &r.waits[i];
        CHECK(x->job >= 0 && x->job < n && x->stall_us > 1e-6 && x->what[0]);
        CHECK(x->op >= 0 && x->op < w[x->job]->n_ops && x->event >= 0 &&
              x->event < p[x->job]->n_events);
        /* a swap-in, or a release preceding the op (its first position) */
        const tsl_event *e = &p[x->job]->events[x->event];
        CHECK(e->type == TSL_EV_SWAP_IN ||
              (e->type == TSL_EV_RELEASE && e->precede == x->op && e->trigger < x->op));
    }
    tsl_verify_report_free(&r);
}

/* Verifies and checks the result's shape; returns a hash of the messages. */
static uint64_t verify(const tsl_workload *const *w, const tsl_plan *const *p, int n,
                       const tsl_device_profile *dev) {
    tsl_violation *v = (tsl_violation *)&v;
    int nv = -1;
    tsl_status st = tsl_plan_verify_jobs(w, p, n, dev, &v, &nv);
    uint64_t h = 1469598103934665603ull;
    if (st == TSL_OK) {
        CHECK(nv == 0 && v == NULL);
        check_report(w, p, n, dev, st, v, nv);
        return h;
    }
    CHECK(st == TSL_ERR_INVALID && nv > 0 && v != NULL && tsl_last_error()[0]);
    for (int i = 0; i < nv; i++) {
        size_t len = strnlen(v[i].what, sizeof v[i].what);
        CHECK(len > 0 && len < sizeof v[i].what);
        for (size_t c = 0; c < len; c++) h = (h ^ (uint8_t)v[i].what[c]) * 1099511628211ull;
    }
    check_report(w, p, n, dev, st, v, nv);
    free(v);
    return h;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    CHECK(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    CHECK(b && fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static tsl_workload *wa, *wb;
    static char tmp[2][64];
    if (!wa) {
        wa = job_a();
        wb = job_b();
        for (int i = 0; i < 2; i++)
            snprintf(tmp[i], sizeof tmp[i], "/tmp/fuzz_plan_json.%d.%d.json", (int)getpid(), i);
    }
    const tsl_workload *ws[2] = {wa, wb};
    tsl_device_profile dev;
    memset(&dev, 0, sizeof dev);
    snprintf(dev.name, sizeof dev.name, "fuzz");
    dev.flops = 1e12;
    dev.mem_bw = 1e11;
    dev.mem_bytes = (size_t)1 << 30;
    dev.h2d_bw = 1e8;
    dev.d2h_bw = 2e8;
    dev.duplex = (size & 1) == 0;
    dev.copy_latency_us = 1.5;

    tsl_plan *plans[2] = {(tsl_plan *)&plans, (tsl_plan *)&plans};
    tsl_clear_error();
    tsl_status st = tsl_plan_parse_json((const char *)data, size, "fuzz", ws, 2, plans);
    if (st != TSL_OK) {
        CHECK(st == TSL_ERR_FORMAT || st == TSL_ERR_OOM);
        CHECK(strncmp(tsl_last_error(), "fuzz", 4) == 0);
        CHECK(plans[0] == (tsl_plan *)&plans && plans[1] == (tsl_plan *)&plans);
        return 0;
    }
    check_plan(wa, plans[0]);
    check_plan(wb, plans[1]);

    /* the verifier: deterministic, well-formed answers, jobs together and alone */
    const tsl_plan *ps[2] = {plans[0], plans[1]};
    uint64_t h1 = verify(ws, ps, 2, &dev), h2 = verify(ws, ps, 2, &dev);
    CHECK(h1 == h2);
    (void)verify(&ws[0], &ps[0], 1, &dev);
    (void)verify(&ws[1], &ps[1], 1, &dev);

    /* write -> read exactly; a second write gives the same bytes */
    CHECK(tsl_plan_write_json(ps, 2, ws, tmp[0]) == TSL_OK);
    tsl_plan *back[2] = {NULL, NULL};
    CHECK(tsl_plan_read_json(tmp[0], ws, 2, back) == TSL_OK);
    check_same(plans[0], back[0]);
    check_same(plans[1], back[1]);
    const tsl_plan *bs[2] = {back[0], back[1]};
    CHECK(tsl_plan_write_json(bs, 2, ws, tmp[1]) == TSL_OK);
    size_t n0, n1;
    char *t0 = slurp(tmp[0], &n0), *t1 = slurp(tmp[1], &n1);
    CHECK(n0 == n1 && memcmp(t0, t1, n0) == 0);
    free(t0);
    free(t1);
    unlink(tmp[0]);
    unlink(tmp[1]);
    for (int i = 0; i < 2; i++) {
        tsl_plan_free(plans[i]);
        tsl_plan_free(back[i]);
    }
    return 0;
}
