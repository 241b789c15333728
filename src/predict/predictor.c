/*
 * predictor.c - the predictor's inference (tensile/predict.h): per op type
 * one model of three kinds, evaluated in plain C in double (a resnet50
 * iteration's few thousand ops take well under a millisecond).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predict/predictor_internal.h"
#include "tensile/ops.h"
#include "tensile/workload.h"

const char *tsl_pred_kind_name(tsl_pred_kind k) {
    static const char *const names[TSL_PRED_KINDS] = {"roofline", "linear", "mlp"};
    return (unsigned)k < TSL_PRED_KINDS ? names[k] : "unknown";
}

void tsl__pmodel_clear(tsl__pmodel *m) {
    for (int l = 0; l < TSL__PRED_MAX_LAYERS; l++) {
        free(m->w[l]);
        free(m->b[l]);
    }
    memset(m, 0, sizeof *m);
}

void tsl_predictor_free(tsl_predictor *p) {
    if (!p) return;
    for (int t = 0; t < TSL_OP_COUNT; t++) tsl__pmodel_clear(&p->m[t]);
    free(p);
}

void tsl__pmodel_norm(const tsl__pmodel *m, const double *f, double *x) {
    for (int k = 0; k < TSL_PRED_NF; k++) x[k] = (f[k] - m->mu[k]) / m->sd[k];
}

double tsl__pred_cost_us(const tsl_predictor *p, const double *f) {
    const double flops = expm1(f[8]), bytes = expm1(f[9]);
    const double c = flops / p->flops, mem = bytes / p->mem_bw;
    return (c > mem ? c : mem) * 1e6 + p->launch_us;
}

/* A log-latency prediction back to µs, kept within [1 ns, 1000 s]. */
static double from_log(double lg) {
    if (lg < log(1e-3)) lg = log(1e-3);
    if (lg > log(1e9)) lg = log(1e9);
    return exp(lg);
}

double tsl__pmodel_us(const tsl_predictor *p, const tsl__pmodel *m, tsl_pred_kind k,
                      const double *f) {
    double x[TSL_PRED_NF];
    tsl__pmodel_norm(m, f, x);
    switch (k) {
    case TSL_PRED_ROOFLINE: {
        const double c = tsl__pred_cost_us(p, f);
        return from_log((c > 0 && isfinite(c) ? log(c) : log(1e9)) + m->roof[0] +
                        m->roof[1] * f[TSL_PRED_NF - 1]);
    }
    case TSL_PRED_LINEAR: {
        double y = m->lin[TSL_PRED_NF];
        for (int i = 0; i < TSL_PRED_NF; i++) y += m->lin[i] * x[i];
        return from_log(m->ymu + m->ysd * y);
    }
    case TSL_PRED_MLP: {
        double a[TSL__PRED_MAX_HIDDEN], b[TSL__PRED_MAX_HIDDEN];
        memcpy(a, x, sizeof x);
        for (int l = 0; l < m->n_layers; l++) {
            const int ni = m->width[l], no = m->width[l + 1];
            for (int o = 0; o < no; o++) b[o] = m->b[l][o];
            for (int i = 0; i < ni; i++) { /* along contiguous rows of w (in, out) */
                const double ai = a[i], *w = m->w[l] + (size_t)i * (size_t)no;
                for (int o = 0; o < no; o++) b[o] += w[o] * ai;
            }
            if (l + 1 < m->n_layers)
                for (int o = 0; o < no; o++) b[o] = b[o] < 0 ? 0 : b[o];
            memcpy(a, b, sizeof(double) * (size_t)no);
        }
        return from_log(m->ymu + m->ysd * a[0]);
    }
    default:
        return -1;
    }
}

double tsl_predictor_us(const tsl_predictor *p, tsl_op_type t, const double f[TSL_PRED_NF]) {
    if ((unsigned)t >= TSL_OP_COUNT || !p->m[t].present) return -1;
    return tsl__pmodel_us(p, &p->m[t], p->m[t].kind, f);
}

int tsl_predictor_has(const tsl_predictor *p, tsl_op_type t, tsl_pred_kind *kind) {
    if ((unsigned)t >= TSL_OP_COUNT || !p->m[t].present) return 0;
    if (kind) *kind = p->m[t].kind;
    return 1;
}

void tsl_predictor_latencies(const tsl_predictor *p, const tsl_graph *g, double util,
                             const tsl_device_profile *dev, double *us) {
    tsl_device_profile rough = tsl_profile_cpu_rough();
    if (!dev) dev = &rough;
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        double f[TSL_PRED_NF], v = -1;
        if (p && p->m[op->type].present) {
            tsl_op_features(g, op, util, f);
            v = tsl_predictor_us(p, op->type, f);
        }
        us[i] = v > 0 ? v : tsl_cost_model_us(g, op, dev);
    }
}

void tsl_predictor_default_path(char *buf, size_t cap) {
    const char *env = getenv("TSL_PROFILE_DIR"), *src = getenv("TSL_SOURCE_DIR");
    if (env && env[0]) snprintf(buf, cap, "%s/predictor.tsp", env);
    else if (src && src[0]) snprintf(buf, cap, "%s/profiles/predictor.tsp", src);
    else snprintf(buf, cap, "profiles/predictor.tsp");
}
