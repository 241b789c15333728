/*
 * test_optim.c - SGD_UPDATE and ADAM_UPDATE: several steps on small tensors
 * against a straightforward double-precision loop of PyTorch's documented
 * update rules (torch.optim.SGD with dampening 0 and nesterov off,
 * torch.optim.Adam with amsgrad off), run in place (in and out pointers
 * equal) as the graph's update ops are; float against double; determinism
 * across runs and thread counts; the ops tsl_graph_optimizer appends; and a
 * few steps of real training that lower the loss.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernel.h"
#include "gradcheck.h"
#include "helpers.h"

/* A graph with one weight (M,K): logits = x w^T, mean cross-entropy, its
 * backward and the optimizer `cfg`. Returns the graph (finalized) and
 * writes the weight and the index of its update op. */
static tsl_graph *opt_graph(int64_t m, int64_t k, const tsl_optimizer_cfg *cfg, tsl_tid *w,
                            int32_t *upd) {
    tsl_graph *g = tsl_graph_new("opt");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(4, k));
    tsl_tid lab = tsl_label(g, "lab", TSL_SHAPE(4));
    *w = tsl_param(g, "w", TSL_SHAPE(m, k), TSL_INIT_UNIFORM_FANIN);
    tsl_tid logits = tsl_linear(g, "fc", x, *w, TSL_NONE);
    tsl_tid loss = tsl_softmax_xent(g, "loss", logits, lab);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_optimizer(g, cfg), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    *upd = -1;
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++) {
        tsl_op_type ty = tsl_graph_op(g, i)->type;
        if (ty == TSL_OP_SGD_UPDATE || ty == TSL_OP_ADAM_UPDATE) {
            cr_assert_eq(*upd, -1, "more than one update op");
            *upd = i;
        }
    }
    cr_assert_neq(*upd, -1);
    return g;
}

/* The state of one parameter, in double, for the oracle. */
typedef struct ostate {
    double *p, *m, *v;
} ostate;

/* PyTorch's torch.optim.SGD step (dampening 0, nesterov false):
 *   d_p = g + wd*p; if momentum: buf = d_p at the first step, else
 *   buf = momentum*buf + d_p; d_p = buf;  p -= lr*d_p. */
static void oracle_sgd(ostate *s, const double *g, size_t n, const tsl_optimizer_cfg *c, int64_t step) {
    double lr = c->lr, mom = c->momentum, wd = c->weight_decay;
    for (size_t i = 0; i < n; i++) {
        double d = g[i];
        if (wd != 0) d += wd * s->p[i];
        if (mom != 0) {
            s->m[i] = step == 1 ? d : mom * s->m[i] + d;
            d = s->m[i];
        }
        s->p[i] -= lr * d;
    }
}

/* PyTorch's torch.optim.Adam step (amsgrad false), as its single-tensor
 * implementation writes it:
 *   g += wd*p; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
 *   step_size = lr / (1-b1^t); denom = sqrt(v)/sqrt(1-b2^t) + eps;
 *   p -= step_size * m / denom. */
static void oracle_adam(ostate *s, const double *g, size_t n, const tsl_optimizer_cfg *c, int64_t t) {
    double lr = c->lr, b1 = c->beta1, b2 = c->beta2, eps = c->eps, wd = c->weight_decay;
    double bc1 = 1 - pow(b1, (double)t), bc2 = 1 - pow(b2, (double)t);
    for (size_t i = 0; i < n; i++) {
        double gi = g[i] + wd * s->p[i];
        s->m[i] = b1 * s->m[i] + (1 - b1) * gi;
        s->v[i] = b2 * s->v[i] + (1 - b2) * gi * gi;
        double denom = sqrt(s->v[i]) / sqrt(bc2) + eps;
        s->p[i] -= (lr / bc1) * s->m[i] / denom;
    }
}

/* Runs update op `upd` of g in place on buffers of type dt (p, g, states)
 * for `steps` steps with fresh gradients each step, next to the oracle, and
 * returns the largest normalised error of the parameter and the states
 * after the last step. */
static double run_against_oracle(const tsl_optimizer_cfg *cfg, tsl_dtype dt, int steps, int nthreads) {
    tsl_tid w;
    int32_t upd;
    tsl_graph *g = opt_graph(5, 3, cfg, &w, &upd);
    const tsl_op *op = tsl_graph_op(g, upd);
    const size_t n = 15, es = dt == TSL_F64 ? 8 : 4;
    const int n_state = op->n_out - 1;
    /* in place: the outputs are the inputs' buffers */
    cr_assert_eq(op->in[0], op->out[0]);
    for (int s = 0; s < n_state; s++) cr_assert_eq(op->in[2 + s], op->out[1 + s]);
    void *p = calloc(n, es), *gr = calloc(n, es), *st[2] = {calloc(n, es), calloc(n, es)};
    double *pd = calloc(n, 8), *gd = calloc(n, 8);
    ostate o = {calloc(n, 8), calloc(n, 8), calloc(n, 8)};
    th_fill_f64(pd, n, 99, -1, 1);
    for (size_t i = 0; i < n; i++) {
        float f = (float)pd[i]; /* values exact in float and double alike */
        o.p[i] = f;
        if (dt == TSL_F64) ((double *)p)[i] = f;
        else ((float *)p)[i] = f;
    }
    tsl_cpu_set_threads(nthreads);
    for (int64_t t = 1; t <= steps; t++) {
        th_fill_f64(gd, n, 1000 + (uint64_t)t, -2, 2);
        for (size_t i = 0; i < n; i++) {
            float f = (float)gd[i];
            gd[i] = f;
            if (dt == TSL_F64) ((double *)gr)[i] = f;
            else ((float *)gr)[i] = f;
        }
        void *in[4] = {p, gr, st[0], st[1]}, *out[3] = {p, st[0], st[1]};
        tsl_kernel_args a = {.g = g, .op = op, .dtype = dt, .in = in, .out = out, .step = t,
                             .nthreads = nthreads, .training = 1};
        cr_assert_eq(tsl_cpu_ref_kernel(op->type, dt)(&a), TSL_OK, "%s", tsl_last_error());
        if (cfg->kind == TSL_OPT_SGD) oracle_sgd(&o, gd, n, cfg, t);
        else oracle_adam(&o, gd, n, cfg, t);
    }
    double worst = 0;
    double *got = malloc(n * 8);
    void *bufs[3] = {p, st[0], st[1]};
    double *want[3] = {o.p, cfg->kind == TSL_OPT_ADAM || cfg->momentum > 0 ? o.m : NULL, o.v};
    for (int b = 0; b < 1 + n_state; b++) {
        for (size_t i = 0; i < n; i++)
            got[i] = dt == TSL_F64 ? ((double *)bufs[b])[i] : ((float *)bufs[b])[i];
        double e = th_norm_err_f64(got, want[b], n);
        if (e > worst) worst = e;
    }
    /* the parameter moved */
    cr_assert_gt(fabs(o.p[0] - (double)(float)pd[0]), 1e-4);
    free(got);
    free(p); free(gr); free(st[0]); free(st[1]); free(pd); free(gd);
    free(o.p); free(o.m); free(o.v);
    tsl_cpu_set_threads(1);
    tsl_graph_free(g);
    return worst;
}

static tsl_optimizer_cfg sgd(float lr, float mom, float wd) {
    tsl_optimizer_cfg c = tsl_sgd_default(lr);
    c.momentum = mom;
    c.weight_decay = wd;
    return c;
}

static tsl_optimizer_cfg adam(float lr, float wd) {
    tsl_optimizer_cfg c = tsl_adam_default(lr);
    c.weight_decay = wd;
    return c;
}

Test(optim, sgd_against_pytorch_rule) {
    const tsl_optimizer_cfg cfgs[4] = {sgd(0.1f, 0, 0), sgd(0.05f, 0.9f, 0), sgd(0.05f, 0.9f, 0.01f),
                                       sgd(0.2f, 0, 0.1f)};
    for (int i = 0; i < 4; i++) {
        double ed = run_against_oracle(&cfgs[i], TSL_F64, 6, 1);
        double ef = run_against_oracle(&cfgs[i], TSL_F32, 6, 1);
        cr_assert_lt(ed, 1e-14, "sgd case %d (double): normalised error %g", i, ed);
        cr_assert_lt(ef, 2e-6, "sgd case %d (float): normalised error %g", i, ef);
    }
}

Test(optim, adam_against_pytorch_rule) {
    const tsl_optimizer_cfg cfgs[3] = {adam(1e-3f, 0), adam(1e-2f, 0.01f), adam(0.1f, 0)};
    for (int i = 0; i < 3; i++) {
        double ed = run_against_oracle(&cfgs[i], TSL_F64, 7, 1);
        double ef = run_against_oracle(&cfgs[i], TSL_F32, 7, 1);
        cr_assert_lt(ed, 1e-13, "adam case %d (double): normalised error %g", i, ed);
        cr_assert_lt(ef, 2e-6, "adam case %d (float): normalised error %g", i, ef);
    }
}

Test(optim, adam_rejects_step_zero) {
    tsl_optimizer_cfg c = adam(1e-3f, 0);
    tsl_tid w;
    int32_t upd;
    tsl_graph *g = opt_graph(2, 2, &c, &w, &upd);
    double buf[4][4] = {{0}};
    void *in[4] = {buf[0], buf[1], buf[2], buf[3]}, *out[3] = {buf[0], buf[2], buf[3]};
    tsl_kernel_args a = {.g = g, .op = tsl_graph_op(g, upd), .dtype = TSL_F64, .in = in, .out = out,
                         .step = 0, .nthreads = 1, .training = 1};
    cr_assert_eq(tsl_cpu_ref_kernel(TSL_OP_ADAM_UPDATE, TSL_F64)(&a), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "w.adam") && strstr(tsl_last_error(), "step = 0"), "%s",
              tsl_last_error());
    tsl_graph_free(g);
}

/* The ops and states tsl_graph_optimizer creates, their FLOPs and names. */
Test(optim, update_ops_and_states) {
    tsl_optimizer_cfg cs[3] = {sgd(0.1f, 0.9f, 0), sgd(0.1f, 0, 0), adam(1e-3f, 0)};
    const int n_in[3] = {3, 2, 4}, n_out[3] = {2, 1, 3};
    const char *state[3] = {"w.momentum", NULL, "w.adam_v"};
    const double flops[3] = {6 * 15, 4 * 15, 16 * 15};
    for (int i = 0; i < 3; i++) {
        tsl_tid w;
        int32_t upd;
        tsl_graph *g = opt_graph(5, 3, &cs[i], &w, &upd);
        const tsl_op *op = tsl_graph_op(g, upd);
        cr_assert(op->n_in == n_in[i] && op->n_out == n_out[i], "case %d: %d in, %d out", i, op->n_in, op->n_out);
        cr_assert_eq(op->in[0], w);
        cr_assert_eq(op->in[1], tsl_graph_tensor(g, w)->grad);
        if (state[i]) {
            tsl_tid s = tsl_graph_find(g, state[i]);
            cr_assert_neq(s, TSL_NONE, "%s", state[i]);
            cr_assert_eq(tsl_graph_tensor(g, s)->kind, TSL_KIND_OPT_STATE);
        }
        cr_assert_eq(tsl_op_flops(g, op), flops[i]);
        tsl_graph_free(g);
    }
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_SGD_UPDATE), "sgd_update");
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_ADAM_UPDATE), "adam_update");
}

/* Large tensors (past the parallel threshold): 1 and 2 threads, and twice
 * with 1, give the same bits; float agrees with double. */
Test(optim, same_bits_across_threads_and_float_vs_double) {
    const int64_t m = th_quick() ? 260 : 400, k = 300;
    const size_t n = (size_t)(m * k);
    tsl_optimizer_cfg cs[2] = {sgd(0.05f, 0.9f, 0.01f), adam(1e-2f, 0.01f)};
    for (int c = 0; c < 2; c++) {
        tsl_tid w;
        int32_t upd;
        tsl_graph *g = opt_graph(m, k, &cs[c], &w, &upd);
        const tsl_op *op = tsl_graph_op(g, upd);
        double *res[2][3] = {{0}}; /* [dtype][run] parameter after 3 steps, as double */
        for (int d = 0; d < 2; d++) {
            tsl_dtype dt = d ? TSL_F64 : TSL_F32;
            size_t es = d ? 8 : 4;
            const int threads[3] = {1, 1, 2};
            void *bits[3];
            for (int r = 0; r < 3; r++) {
                void *b[4];
                for (int j = 0; j < 4; j++) b[j] = calloc(n, es);
                double *tmp = malloc(n * 8);
                th_fill_f64(tmp, n, 5, -1, 1);
                for (size_t i = 0; i < n; i++) {
                    if (d) ((double *)b[0])[i] = (float)tmp[i];
                    else ((float *)b[0])[i] = (float)tmp[i];
                }
                tsl_cpu_set_threads(threads[r]);
                for (int64_t t = 1; t <= 3; t++) {
                    th_fill_f64(tmp, n, 77 + (uint64_t)t, -1, 1);
                    for (size_t i = 0; i < n; i++) {
                        if (d) ((double *)b[1])[i] = (float)tmp[i];
                        else ((float *)b[1])[i] = (float)tmp[i];
                    }
                    void *in[4] = {b[0], b[1], b[2], b[3]}, *out[3] = {b[0], b[2], b[3]};
                    tsl_kernel_args a = {.g = g, .op = op, .dtype = dt, .in = in, .out = out, .step = t,
                                         .nthreads = threads[r], .training = 1};
                    cr_assert_eq(tsl_cpu_ref_kernel(op->type, dt)(&a), TSL_OK);
                }
                res[d][r] = malloc(n * 8);
                for (size_t i = 0; i < n; i++)
                    res[d][r][i] = d ? ((double *)b[0])[i] : ((float *)b[0])[i];
                bits[r] = b[0];
                for (int j = 1; j < 4; j++) free(b[j]);
                free(tmp);
            }
            cr_assert_eq(memcmp(bits[0], bits[1], n * es), 0, "case %d %s: differs between runs", c,
                         tsl_dtype_name(dt));
            cr_assert_eq(memcmp(bits[0], bits[2], n * es), 0, "case %d %s: differs with 2 threads", c,
                         tsl_dtype_name(dt));
            for (int r = 0; r < 3; r++) free(bits[r]);
        }
        double e = th_norm_err_f64(res[0][0], res[1][0], n);
        cr_assert_lt(e, 1e-6, "case %d: float vs double normalised error %g", c, e);
        for (int d = 0; d < 2; d++)
            for (int r = 0; r < 3; r++) free(res[d][r]);
        tsl_graph_free(g);
    }
    tsl_cpu_set_threads(1);
}

/* Whole iterations (forward, backward, update) with the double reference
 * kernels on one fixed batch: the loss falls, for SGD and for Adam. */
Test(optim, training_lowers_the_loss) {
    tsl_optimizer_cfg cs[2] = {sgd(0.5f, 0.9f, 0), adam(0.05f, 0)};
    for (int c = 0; c < 2; c++) {
        tsl_tid w;
        int32_t upd;
        tsl_graph *g = opt_graph(3, 6, &cs[c], &w, &upd);
        th_f64 *r = th_f64_new(g);
        th_fill_f64(th_f64_buf(r, tsl_graph_find(g, "x")), 24, 3, -1, 1);
        th_fill_f64(th_f64_buf(r, w), 18, 4, -0.3, 0.3);
        int32_t *lab = th_f64_buf(r, tsl_graph_find(g, "lab"));
        for (int i = 0; i < 4; i++) lab[i] = i % 3;
        const double *loss = th_f64_buf(r, tsl_graph_loss(g));
        double first = 0, last = 0;
        for (int64_t t = 1; t <= 30; t++) {
            th_f64_run(r, 0, tsl_graph_n_ops(g), t, 1);
            if (t == 1) first = *loss;
            last = *loss;
        }
        cr_assert_lt(last, 0.5 * first, "case %d: loss %g after 30 steps, %g at the first", c, last, first);
        th_f64_free(r);
        tsl_graph_free(g);
    }
}
