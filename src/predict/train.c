/*
 * train.c - fitting the predictor (tsl_predictor_train): per op type, a
 * seeded split into training and held-out samples, the normalisation from
 * the training part, three kinds fitted (roofline: one efficiency and a
 * utilisation slope; linear: ridge least squares of the normalised log
 * latency; the MLP, mlp_train.c), each scored on the held-out part (MAPE,
 * R² of the latency) beside the plain cost model, and the kind with the
 * lowest MAPE / 100 + (1 - R²) kept (a dearer kind must win by 0.01; the
 * plain cost model when it beats every fit).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rand.h"
#include "predict/predictor_internal.h"

tsl_pred_train_opts tsl_pred_train_opts_default(void) {
    return (tsl_pred_train_opts){.hidden = 32, .layers = 3, .epochs = 300, .batch = 64,
                                 .lr = 3e-3f, .holdout = 0.2, .seed = 1, .dev = NULL, .only = -1};
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Solves the n x n system a x = b in place (Gaussian elimination with
 * partial pivoting); 0 if singular. */
static int solve(double *a, double *b, int n) {
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(a[r * n + c]) > fabs(a[piv * n + c])) piv = r;
        if (fabs(a[piv * n + c]) < 1e-12) return 0;
        if (piv != c) {
            for (int k = 0; k < n; k++) {
                double t = a[c * n + k];
                a[c * n + k] = a[piv * n + k], a[piv * n + k] = t;
            }
            double t = b[c];
            b[c] = b[piv], b[piv] = t;
        }
        for (int r = c + 1; r < n; r++) {
            double q = a[r * n + c] / a[c * n + c];
            for (int k = c; k < n; k++) a[r * n + k] -= q * a[c * n + k];
            b[r] -= q * b[c];
        }
    }
    for (int r = n - 1; r >= 0; r--) {
        double s = b[r];
        for (int k = r + 1; k < n; k++) s -= a[r * n + k] * b[k];
        b[r] = s / a[r * n + r];
    }
    return 1;
}

/* Ridge least squares y ~ x . w + w0 over n rows of NF normalised inputs. */
static void fit_linear(tsl__pmodel *m, const double *x, const double *y, int n) {
    enum { D = TSL_PRED_NF + 1 };
    double a[D * D] = {0}, b[D] = {0};
    for (int s = 0; s < n; s++) {
        double r[D];
        memcpy(r, x + (size_t)s * TSL_PRED_NF, sizeof(double) * TSL_PRED_NF);
        r[TSL_PRED_NF] = 1;
        for (int i = 0; i < D; i++) {
            b[i] += r[i] * y[s];
            for (int j = 0; j < D; j++) a[i * D + j] += r[i] * r[j];
        }
    }
    for (int i = 0; i < TSL_PRED_NF; i++) a[i * D + i] += 1e-3 * (n > 0 ? n : 1);
    if (!solve(a, b, D)) memset(b, 0, sizeof b);
    memcpy(m->lin, b, sizeof b);
}

/* log(measured / cost model) ~ r0 + r1 * util, least squares. */
static void fit_roofline(const tsl_predictor *p, tsl__pmodel *m, const tsl_op_sample *const *s,
                         int n) {
    double su = 0, sr = 0, suu = 0, sur = 0;
    for (int i = 0; i < n; i++) {
        const double u = s[i]->f[TSL_PRED_NF - 1];
        const double r = log(s[i]->latency_us / tsl__pred_cost_us(p, s[i]->f));
        su += u, sr += r, suu += u * u, sur += u * r;
    }
    const double den = n * suu - su * su;
    m->roof[1] = fabs(den) > 1e-9 ? (n * sur - su * sr) / den : 0;
    m->roof[0] = n ? (sr - m->roof[1] * su) / n : 0;
}

/* MAPE (%) and R² of predictions pr against the samples' latencies. */
static void score(const tsl_op_sample *const *s, const double *pr, int n, double *mape, double *r2) {
    double ape = 0, mean = 0, ss_res = 0, ss_tot = 0;
    for (int i = 0; i < n; i++) mean += s[i]->latency_us / n;
    for (int i = 0; i < n; i++) {
        const double y = s[i]->latency_us;
        ape += fabs(pr[i] - y) / y;
        ss_res += (pr[i] - y) * (pr[i] - y);
        ss_tot += (y - mean) * (y - mean);
    }
    *mape = n ? 100.0 * ape / n : NAN;
    *r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : NAN;
}

static tsl_status check_opts(const tsl_pred_train_opts *o) {
    if (o->hidden < 1 || o->hidden > TSL__PRED_MAX_HIDDEN)
        return tsl_fail(TSL_ERR_INVALID, "predictor: hidden = %d, must be in [1, %d]", o->hidden,
                        TSL__PRED_MAX_HIDDEN);
    if (o->layers < 1 || o->layers > TSL__PRED_MAX_LAYERS - 1)
        return tsl_fail(TSL_ERR_INVALID, "predictor: layers = %d, must be in [1, %d]", o->layers,
                        TSL__PRED_MAX_LAYERS - 1);
    if (o->epochs < 0 || o->epochs > 1000000 || o->batch < 1 || o->batch > 65536)
        return tsl_fail(TSL_ERR_INVALID, "predictor: epochs = %d (0..1000000), batch = %d (1..65536)",
                        o->epochs, o->batch);
    if (!(o->lr > 0 && o->lr < 10))
        return tsl_fail(TSL_ERR_INVALID, "predictor: lr = %g, must be in (0, 10)", (double)o->lr);
    if (!(o->holdout >= 0 && o->holdout < 1))
        return tsl_fail(TSL_ERR_INVALID, "predictor: holdout = %g, must be in [0, 1)", o->holdout);
    if (o->only < -1 || o->only >= TSL_PRED_KINDS)
        return tsl_fail(TSL_ERR_INVALID, "predictor: only = %d, must be -1 or a kind", o->only);
    return TSL_OK;
}

/* What the choice minimises: MAPE / 100 + (1 - R²) on the held-out
 * samples. The relative error counts the many small ops, R² (on the
 * latency itself) the few large ones that make most of an iteration's
 * time; a kind good at one and blind to the other (the cost model on
 * convolutions: MAPE 60 %, R² 0) loses to one fair at both. NaN: worst. */
static double error_score(const tsl_pred_accuracy *a, int k) {
    double m = a->mape[k], r = a->r2[k];
    if (!isfinite(m)) return 1e300;
    return m / 100.0 + (isfinite(r) ? (r < 1 ? 1 - r : 0) : 1);
}

/* Fits every kind for one op type's samples s[0..n) and fills acc. */
static tsl_status fit_type(tsl_predictor *p, tsl__pmodel *m, const tsl_op_sample **s, int n,
                           const tsl_pred_train_opts *o, tsl_pred_accuracy *acc) {
    /* seeded split: a sample is held out when its key falls under holdout */
    const tsl_op_sample **tr = malloc(sizeof *tr * (size_t)n), **te = malloc(sizeof *te * (size_t)n);
    double *x = malloc(sizeof *x * (size_t)n * TSL_PRED_NF), *y = malloc(sizeof *y * (size_t)n);
    double *pr = malloc(sizeof *pr * (size_t)n);
    tsl_status st = TSL_OK;
    if (!tr || !te || !x || !y || !pr) {
        st = tsl_fail(TSL_ERR_OOM, "predictor: out of host memory");
        goto done;
    }
    int ntr = 0, nte = 0;
    for (int i = 0; i < n; i++) {
        if (tsl__u01(tsl__mix64(o->seed) + (uint64_t)i) < o->holdout) te[nte++] = s[i];
        else tr[ntr++] = s[i];
    }
    if (ntr < 4) { /* too few to train on: use everything, test on everything */
        ntr = nte = 0;
        for (int i = 0; i < n; i++) tr[ntr++] = te[nte++] = s[i];
    }
    if (nte == 0)
        for (int i = 0; i < ntr; i++) te[nte++] = tr[i];
    acc->n_train = ntr, acc->n_test = nte;
    for (int k = 0; k < TSL_PRED_NF; k++) {
        double mu = 0, v = 0;
        for (int i = 0; i < ntr; i++) mu += tr[i]->f[k] / ntr;
        for (int i = 0; i < ntr; i++) v += (tr[i]->f[k] - mu) * (tr[i]->f[k] - mu) / ntr;
        m->mu[k] = mu;
        m->sd[k] = v > 1e-12 ? sqrt(v) : 1;
    }
    double ymu = 0, yv = 0;
    for (int i = 0; i < ntr; i++) ymu += log(tr[i]->latency_us) / ntr;
    for (int i = 0; i < ntr; i++) yv += (log(tr[i]->latency_us) - ymu) * (log(tr[i]->latency_us) - ymu) / ntr;
    m->ymu = ymu;
    m->ysd = yv > 1e-12 ? sqrt(yv) : 1;
    for (int i = 0; i < ntr; i++) {
        tsl__pmodel_norm(m, tr[i]->f, x + (size_t)i * TSL_PRED_NF);
        y[i] = (log(tr[i]->latency_us) - m->ymu) / m->ysd;
    }
    double t0 = now_ms();
    fit_roofline(p, m, tr, ntr);
    acc->train_ms[TSL_PRED_ROOFLINE] = now_ms() - t0;
    t0 = now_ms();
    fit_linear(m, x, y, ntr);
    acc->train_ms[TSL_PRED_LINEAR] = now_ms() - t0;
    t0 = now_ms();
    if (o->only == -1 || o->only == TSL_PRED_MLP) st = tsl__mlp_train(m, x, y, ntr, o);
    acc->train_ms[TSL_PRED_MLP] = now_ms() - t0;
    if (st != TSL_OK) goto done;
    for (int k = 0; k < TSL_PRED_KINDS; k++) {
        if (k == TSL_PRED_MLP && !m->n_layers) {
            acc->mape[k] = acc->r2[k] = NAN;
            continue;
        }
        for (int i = 0; i < nte; i++) pr[i] = tsl__pmodel_us(p, m, (tsl_pred_kind)k, te[i]->f);
        score(te, pr, nte, &acc->mape[k], &acc->r2[k]);
    }
    for (int i = 0; i < nte; i++) pr[i] = tsl__pred_cost_us(p, te[i]->f);
    score(te, pr, nte, &acc->mape[TSL_PRED_KINDS], &acc->r2[TSL_PRED_KINDS]);
    if (o->only >= 0) m->kind = (tsl_pred_kind)o->only;
    else {
        /* kinds in order of cost: a dearer one must win by 0.01 */
        m->kind = TSL_PRED_ROOFLINE;
        for (int k = 1; k < TSL_PRED_KINDS; k++)
            if (error_score(acc, k) < error_score(acc, m->kind) - 0.01) m->kind = (tsl_pred_kind)k;
        if (error_score(acc, TSL_PRED_KINDS) <= error_score(acc, m->kind)) {
            /* the plain cost model beats every fit (a fit minimises the log
             * error, not the relative one): keep it, as a roofline of
             * efficiency 1 */
            m->kind = TSL_PRED_ROOFLINE;
            m->roof[0] = m->roof[1] = 0;
            acc->cost_model_kept = 1;
        }
    }
    acc->chosen = m->kind;
    m->present = 1;
done:
    free(tr), free(te), free(x), free(y), free(pr);
    return st;
}

tsl_status tsl_predictor_train(const tsl_op_sample *s, size_t n, const tsl_pred_train_opts *o,
                               tsl_predictor **out, tsl_pred_report *rep) {
    *out = NULL;
    tsl_pred_train_opts def = tsl_pred_train_opts_default();
    if (!o) o = &def;
    tsl_status st = check_opts(o);
    if (st != TSL_OK) return st;
    if (n > 10000000u) return tsl_fail(TSL_ERR_INVALID, "predictor: %zu samples (at most 10 million)", n);
    tsl_predictor *p = calloc(1, sizeof *p);
    const tsl_op_sample **by = malloc(sizeof *by * (n ? n : 1));
    if (!p || !by) {
        free(p), free(by);
        return tsl_fail(TSL_ERR_OOM, "predictor: out of host memory");
    }
    tsl_device_profile rough = tsl_profile_cpu_rough();
    const tsl_device_profile *dev = o->dev ? o->dev : &rough;
    p->flops = dev->flops, p->mem_bw = dev->mem_bw, p->launch_us = dev->launch_us;
    if (rep) memset(rep, 0, sizeof *rep);
    int types = 0;
    for (int t = 0; t < TSL_OP_COUNT && st == TSL_OK; t++) {
        int k = 0;
        for (size_t i = 0; i < n; i++)
            if (s[i].type == (tsl_op_type)t && s[i].latency_us > 0) by[k++] = &s[i];
        if (k < 8) continue;
        tsl_pred_accuracy acc = {.type = (tsl_op_type)t};
        st = fit_type(p, &p->m[t], by, k, o, &acc);
        if (st == TSL_OK && rep) rep->acc[rep->n_types++] = acc;
        types++;
    }
    free(by);
    if (st == TSL_OK && types == 0)
        st = tsl_fail(TSL_ERR_INVALID, "predictor: no op type has 8 samples or more (%zu samples)", n);
    if (st != TSL_OK) {
        tsl_predictor_free(p);
        return st;
    }
    *out = p;
    return TSL_OK;
}
