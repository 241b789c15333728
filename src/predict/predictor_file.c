/*
 * predictor_file.c - the predictor file (docs/PREDICTOR.md), text, version 1:
 *
 *   tensile-predictor 1
 *   features 12
 *   cost_model FLOPS MEM_BW LAUNCH_US         the roofline's device figures
 *   model OP KIND LAYERS                      one block per op type:
 *   mu F0 .. F11                              normalisation of the features
 *   sd F0 .. F11                              (every sd > 0)
 *   target YMU YSD                            of log(µs) (YSD > 0)
 *   linear W0 .. W11 B
 *   roofline R0 R1
 *   widths W0 .. WLAYERS                      (LAYERS 0: no MLP; else W0 = 12,
 *                                              WLAYERS = 1, each in 1..256)
 *   w L V ...   b L V ...                     layer L's weights (out x in,
 *                                              row-major) and biases, at most
 *                                              32 values a line, in order
 *   end                                       after the last block
 *
 * KIND is roofline, linear or mlp (mlp needs LAYERS > 0). Every number is
 * finite; an op type appears once; anything missing, extra, out of order
 * or out of range is refused naming the file, the line, the field and
 * the value.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"
#include "io/read_file.h"
#include "predict/predictor_internal.h"
#include "predict/text_lines.h"
#include "tensile/ops.h"

#define MAX_FILE ((size_t)64 << 20)
#define PER_LINE 32

static void put_vals(FILE *f, const char *tag, int l, const double *v, size_t n) {
    for (size_t i = 0; i < n; i += PER_LINE) {
        fprintf(f, "%s %d", tag, l);
        for (size_t k = i; k < n && k < i + PER_LINE; k++) fprintf(f, " %.17g", v[k]);
        fputc('\n', f);
    }
}

tsl_status tsl_predictor_save(const tsl_predictor *p, const char *path) {
    tsl__out *o;
    tsl_status st = tsl__out_open(path, "predictor", &o);
    if (st != TSL_OK) return st;
    FILE *f = tsl__out_stream(o);
    fprintf(f, "tensile-predictor 1\nfeatures %d\ncost_model %.17g %.17g %.17g\n", TSL_PRED_NF,
            p->flops, p->mem_bw, p->launch_us);
    for (int t = 0; t < TSL_OP_COUNT; t++) {
        const tsl__pmodel *m = &p->m[t];
        if (!m->present) continue;
        fprintf(f, "model %s %s %d\nmu", tsl_op_type_name((tsl_op_type)t),
                tsl_pred_kind_name(m->kind), m->n_layers);
        for (int k = 0; k < TSL_PRED_NF; k++) fprintf(f, " %.17g", m->mu[k]);
        fputs("\nsd", f);
        for (int k = 0; k < TSL_PRED_NF; k++) fprintf(f, " %.17g", m->sd[k]);
        fprintf(f, "\ntarget %.17g %.17g\nlinear", m->ymu, m->ysd);
        for (int k = 0; k <= TSL_PRED_NF; k++) fprintf(f, " %.17g", m->lin[k]);
        fprintf(f, "\nroofline %.17g %.17g\nwidths", m->roof[0], m->roof[1]);
        for (int l = 0; l <= m->n_layers && m->n_layers; l++) fprintf(f, " %d", m->width[l]);
        fputc('\n', f);
        for (int l = 0; l < m->n_layers; l++) {
            const size_t ni = (size_t)m->width[l], no = (size_t)m->width[l + 1];
            double *rm = malloc(sizeof *rm * ni * no); /* the file's row-major (out, in) */
            if (!rm) {
                tsl__out_abort(o);
                return tsl_fail(TSL_ERR_OOM, "%s: out of host memory", path);
            }
            for (size_t q = 0; q < no; q++)
                for (size_t i = 0; i < ni; i++) rm[q * ni + i] = m->w[l][i * no + q];
            put_vals(f, "w", l, rm, ni * no);
            free(rm);
            put_vals(f, "b", l, m->b[l], (size_t)m->width[l + 1]);
        }
    }
    fputs("end\n", f);
    return tsl__out_commit(o);
}

/* The next line, which must start with `tag` (TSL_ERR_FORMAT otherwise,
 * "expected TAG, found ..." or "ends before TAG"). */
static tsl_status expect(tsl__tl *t, const char *tag) {
    int r = tsl__tl_next(t);
    if (r < 0) return TSL_ERR_FORMAT;
    if (r == 0) return tsl__tl_fail(t, "the file ends where a '%s' line was expected", tag);
    if (strcmp(t->f[0], tag))
        return tsl__tl_fail(t, "expected a '%s' line, found '%.40s'", tag, t->f[0]);
    return TSL_OK;
}

/* n numbers from fields 1.. of the current line (exactly n + 1 fields). */
static tsl_status nums(tsl__tl *t, const char *tag, double *v, int n) {
    if (tsl__tl_count(t, n + 1, tag)) return TSL_ERR_FORMAT;
    for (int i = 0; i < n; i++) {
        char fld[32];
        snprintf(fld, sizeof fld, "%s[%d]", tag, i);
        if (tsl__tl_num(t, 1 + i, fld, &v[i])) return TSL_ERR_FORMAT;
    }
    return TSL_OK;
}

/* Reads lines "TAG L v..." until n values of layer l are read. */
static tsl_status vals(tsl__tl *t, const char *tag, int l, double *v, size_t n) {
    size_t got = 0;
    while (got < n) {
        if (expect(t, tag)) return TSL_ERR_FORMAT;
        long ll;
        if (tsl__tl_int(t, 1, "layer", 0, TSL__PRED_MAX_LAYERS, &ll)) return TSL_ERR_FORMAT;
        if (ll != l) return tsl__tl_fail(t, "field 'layer' has value %ld, expected %d", ll, l);
        size_t k = (size_t)t->n - 2;
        if (k == 0 || k > PER_LINE || k > n - got)
            return tsl__tl_fail(t, "a '%s' line of layer %d holds %zu values; %zu remain to be read "
                                   "(at most %d a line)",
                                tag, l, k, n - got, PER_LINE);
        for (size_t i = 0; i < k; i++) {
            char fld[48];
            snprintf(fld, sizeof fld, "%s[%d][%zu]", tag, l, got + i);
            if (tsl__tl_num(t, 2 + (int)i, fld, &v[got + i])) return TSL_ERR_FORMAT;
        }
        got += k;
    }
    return TSL_OK;
}

static tsl_status parse_model(tsl__tl *t, tsl_predictor *p) {
    tsl_op_type ty;
    if (tsl__tl_count(t, 4, "model")) return TSL_ERR_FORMAT;
    if (!tsl__op_type_by_name(t->f[1], &ty))
        return tsl__tl_fail(t, "field 'op' has value '%.40s', not an op type", t->f[1]);
    tsl__pmodel *m = &p->m[ty];
    if (m->present) return tsl__tl_fail(t, "field 'op': a second model of '%s'", t->f[1]);
    int kind = -1;
    for (int k = 0; k < TSL_PRED_KINDS; k++)
        if (!strcmp(t->f[2], tsl_pred_kind_name((tsl_pred_kind)k))) kind = k;
    if (kind < 0)
        return tsl__tl_fail(t, "field 'kind' has value '%.40s', not roofline, linear or mlp", t->f[2]);
    long nl;
    if (tsl__tl_int(t, 3, "layers", 0, TSL__PRED_MAX_LAYERS, &nl)) return TSL_ERR_FORMAT;
    if (kind == TSL_PRED_MLP && nl == 0)
        return tsl__tl_fail(t, "field 'layers' has value 0, but kind mlp needs layers");
    m->present = 1;
    m->kind = (tsl_pred_kind)kind;
    if (expect(t, "mu") || nums(t, "mu", m->mu, TSL_PRED_NF)) return TSL_ERR_FORMAT;
    if (expect(t, "sd") || nums(t, "sd", m->sd, TSL_PRED_NF)) return TSL_ERR_FORMAT;
    for (int k = 0; k < TSL_PRED_NF; k++)
        if (!(m->sd[k] > 0)) return tsl__tl_fail(t, "field 'sd[%d]' has value %.17g, must be > 0", k, m->sd[k]);
    double y[2];
    if (expect(t, "target") || nums(t, "target", y, 2)) return TSL_ERR_FORMAT;
    if (!(y[1] > 0)) return tsl__tl_fail(t, "field 'target[1]' (ysd) has value %.17g, must be > 0", y[1]);
    m->ymu = y[0], m->ysd = y[1];
    if (expect(t, "linear") || nums(t, "linear", m->lin, TSL_PRED_NF + 1)) return TSL_ERR_FORMAT;
    if (expect(t, "roofline") || nums(t, "roofline", m->roof, 2)) return TSL_ERR_FORMAT;
    if (expect(t, "widths") || tsl__tl_count(t, nl ? (int)nl + 2 : 1, "widths")) return TSL_ERR_FORMAT;
    for (int l = 0; nl && l <= nl; l++) {
        long w;
        char fld[32];
        snprintf(fld, sizeof fld, "widths[%d]", l);
        if (tsl__tl_int(t, 1 + l, fld, 1, TSL__PRED_MAX_HIDDEN, &w)) return TSL_ERR_FORMAT;
        if ((l == 0 && w != TSL_PRED_NF) || (l == nl && w != 1))
            return tsl__tl_fail(t, "field '%s' has value %ld, expected %d", fld, w,
                                l == 0 ? TSL_PRED_NF : 1);
        m->width[l] = (int)w;
    }
    m->n_layers = (int)nl;
    for (int l = 0; l < nl; l++) {
        const size_t nw = (size_t)m->width[l + 1] * (size_t)m->width[l];
        m->w[l] = malloc(sizeof(double) * nw);
        m->b[l] = malloc(sizeof(double) * (size_t)m->width[l + 1]);
        if (!m->w[l] || !m->b[l]) return tsl_fail(TSL_ERR_OOM, "%s: out of host memory", t->name);
        if (vals(t, "w", l, m->w[l], nw) || vals(t, "b", l, m->b[l], (size_t)m->width[l + 1]))
            return TSL_ERR_FORMAT;
        double *tr = malloc(sizeof *tr * nw); /* row-major (out, in) -> (in, out) */
        if (!tr) return tsl_fail(TSL_ERR_OOM, "%s: out of host memory", t->name);
        const size_t ni = (size_t)m->width[l], no = (size_t)m->width[l + 1];
        for (size_t q = 0; q < no; q++)
            for (size_t i = 0; i < ni; i++) tr[i * no + q] = m->w[l][q * ni + i];
        free(m->w[l]);
        m->w[l] = tr;
    }
    return TSL_OK;
}

tsl_status tsl_predictor_parse(const char *text, size_t len, const char *name,
                               tsl_predictor **out) {
    *out = NULL;
    tsl_predictor *p = calloc(1, sizeof *p);
    if (!p) return tsl_fail(TSL_ERR_OOM, "predictor: out of host memory");
    tsl__tl t;
    tsl__tl_init(&t, text, len, name);
    tsl_status st = TSL_OK;
    long v;
    int r = tsl__tl_next(&t);
    double cm[3];
    if (r < 0) st = TSL_ERR_FORMAT;
    else if (r == 0) st = tsl__tl_fail(&t, "empty: expected the header 'tensile-predictor 1'");
    else if (strcmp(t.f[0], "tensile-predictor"))
        st = tsl__tl_fail(&t, "field 'magic' has value '%.40s', expected 'tensile-predictor'", t.f[0]);
    else if (tsl__tl_count(&t, 2, "header") || tsl__tl_int(&t, 1, "version", 0, 1000000, &v))
        st = TSL_ERR_FORMAT;
    else if (v != 1)
        st = tsl__tl_fail(&t, "field 'version' has value %ld; this build reads version 1", v);
    else if (expect(&t, "features") || tsl__tl_count(&t, 2, "features") ||
             tsl__tl_int(&t, 1, "features", 0, 1000, &v))
        st = TSL_ERR_FORMAT;
    else if (v != TSL_PRED_NF)
        st = tsl__tl_fail(&t, "field 'features' has value %ld; this build uses %d", v, TSL_PRED_NF);
    else if (expect(&t, "cost_model") || nums(&t, "cost_model", cm, 3))
        st = TSL_ERR_FORMAT;
    else if (!(cm[0] > 0) || !(cm[1] > 0) || !(cm[2] >= 0))
        st = tsl__tl_fail(&t, "field 'cost_model' has values %g %g %g: FLOPS and MEM_BW must be > 0, "
                              "LAUNCH_US >= 0",
                          cm[0], cm[1], cm[2]);
    if (st == TSL_OK) {
        p->flops = cm[0], p->mem_bw = cm[1], p->launch_us = cm[2];
        int ended = 0;
        while (st == TSL_OK && (r = tsl__tl_next(&t)) > 0) {
            if (ended) st = tsl__tl_fail(&t, "'%.40s' after 'end'", t.f[0]);
            else if (!strcmp(t.f[0], "end")) {
                if (tsl__tl_count(&t, 1, "end")) st = TSL_ERR_FORMAT;
                ended = 1;
            } else if (!strcmp(t.f[0], "model")) st = parse_model(&t, p);
            else st = tsl__tl_fail(&t, "expected a 'model' or 'end' line, found '%.40s'", t.f[0]);
        }
        if (r < 0) st = TSL_ERR_FORMAT;
        if (st == TSL_OK && !ended)
            st = tsl__tl_fail(&t, "the file ends without its 'end' line (truncated?)");
    }
    if (st != TSL_OK) {
        tsl_predictor_free(p);
        return st;
    }
    *out = p;
    return TSL_OK;
}

tsl_status tsl_predictor_load(const char *path, tsl_predictor **out) {
    char *buf;
    size_t len;
    *out = NULL;
    tsl_status st = tsl__read_regular(path, "predictor", MAX_FILE, &buf, &len);
    if (st != TSL_OK) return st;
    st = tsl_predictor_parse(buf, len, path, out);
    free(buf);
    return st;
}
