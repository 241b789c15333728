/*
 * samples.c - the op-latency samples file (docs/PREDICTOR.md):
 *
 *   tensile-op-samples 1
 *   features 12
 *   # free text (the source line, comments)
 *   OP LATENCY_US F0 ... F11
 *
 * OP an op type's name (tsl_op_type_name), LATENCY_US > 0, the features
 * as tsl_op_features writes them (finite; the utilisation in [0, 1]).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"
#include "io/read_file.h"
#include "predict/text_lines.h"
#include "tensile/ops.h"
#include "tensile/predict.h"

#define MAX_SAMPLES 10000000u
#define MAX_FILE ((size_t)256 << 20)

tsl_status tsl_samples_save(const char *path, const tsl_op_sample *s, size_t n, const char *source) {
    tsl__out *o;
    tsl_status st = tsl__out_open(path, "op samples", &o);
    if (st != TSL_OK) return st;
    FILE *f = tsl__out_stream(o);
    fprintf(f, "tensile-op-samples 1\nfeatures %d\n", TSL_PRED_NF);
    if (source) {
        fputs("# ", f);
        for (const char *c = source; *c; c++) fputc(*c == '\n' ? ' ' : *c, f);
        fputc('\n', f);
    }
    fputs("# op latency_us N C H W Cout kernel stride pad log_flops log_bytes n_in util\n", f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s %.6g", tsl_op_type_name(s[i].type), s[i].latency_us);
        for (int k = 0; k < TSL_PRED_NF; k++) fprintf(f, " %.9g", s[i].f[k]);
        fputc('\n', f);
    }
    return tsl__out_commit(o);
}

tsl_status tsl_samples_parse(const char *text, size_t len, const char *name, tsl_op_sample **out,
                             size_t *n) {
    *out = NULL;
    *n = 0;
    tsl__tl t;
    tsl__tl_init(&t, text, len, name);
    long v;
    int r = tsl__tl_next(&t);
    if (r < 0) return TSL_ERR_FORMAT;
    if (r == 0) return tsl__tl_fail(&t, "empty: expected the header 'tensile-op-samples 1'");
    if (strcmp(t.f[0], "tensile-op-samples"))
        return tsl__tl_fail(&t, "field 'magic' has value '%.40s', expected 'tensile-op-samples'",
                            t.f[0]);
    if (tsl__tl_count(&t, 2, "header") || tsl__tl_int(&t, 1, "version", 0, 1000000, &v))
        return TSL_ERR_FORMAT;
    if (v != 1) return tsl__tl_fail(&t, "field 'version' has value %ld; this build reads version 1", v);
    if ((r = tsl__tl_next(&t)) <= 0) {
        if (r == 0) tsl__tl_fail(&t, "expected 'features %d' after the header", TSL_PRED_NF);
        return TSL_ERR_FORMAT;
    }
    if (strcmp(t.f[0], "features") || tsl__tl_count(&t, 2, "features") ||
        tsl__tl_int(&t, 1, "features", 0, 1000, &v))
        return strcmp(t.f[0], "features")
                   ? tsl__tl_fail(&t, "expected 'features %d', found '%.40s'", TSL_PRED_NF, t.f[0])
                   : TSL_ERR_FORMAT;
    if (v != TSL_PRED_NF)
        return tsl__tl_fail(&t, "field 'features' has value %ld; this build uses %d", v, TSL_PRED_NF);
    size_t cap = 0;
    tsl_op_sample *s = NULL;
    tsl_status st = TSL_OK;
    while ((r = tsl__tl_next(&t)) > 0) {
        tsl_op_sample x;
        if (!tsl__op_type_by_name(t.f[0], &x.type)) {
            st = tsl__tl_fail(&t, "field 'op' has value '%.40s', not an op type", t.f[0]);
            break;
        }
        if ((st = tsl__tl_count(&t, 2 + TSL_PRED_NF, "sample")) != TSL_OK) break;
        if ((st = tsl__tl_num(&t, 1, "latency_us", &x.latency_us)) != TSL_OK) break;
        if (!(x.latency_us > 0)) {
            st = tsl__tl_fail(&t, "field 'latency_us' has value '%.40s', must be > 0", t.f[1]);
            break;
        }
        for (int k = 0; k < TSL_PRED_NF && st == TSL_OK; k++) {
            char fld[16];
            snprintf(fld, sizeof fld, "f%d", k);
            st = tsl__tl_num(&t, 2 + k, fld, &x.f[k]);
        }
        if (st != TSL_OK) break;
        if (x.f[TSL_PRED_NF - 1] < 0 || x.f[TSL_PRED_NF - 1] > 1) {
            st = tsl__tl_fail(&t, "field 'util' has value '%.40s', outside [0, 1]",
                              t.f[1 + TSL_PRED_NF]);
            break;
        }
        if (*n == MAX_SAMPLES) {
            st = tsl__tl_fail(&t, "more than %u samples", MAX_SAMPLES);
            break;
        }
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 256;
            tsl_op_sample *ns = realloc(s, nc * sizeof *ns);
            if (!ns) {
                st = tsl_fail(TSL_ERR_OOM, "%s: out of host memory for %zu samples", t.name, nc);
                break;
            }
            s = ns;
            cap = nc;
        }
        s[(*n)++] = x;
    }
    if (r < 0) st = TSL_ERR_FORMAT;
    if (st != TSL_OK) {
        free(s);
        *n = 0;
        return st;
    }
    *out = s;
    return TSL_OK;
}

tsl_status tsl_samples_load(const char *path, tsl_op_sample **out, size_t *n) {
    char *buf;
    size_t len;
    *out = NULL;
    *n = 0;
    tsl_status st = tsl__read_regular(path, "op samples", MAX_FILE, &buf, &len);
    if (st != TSL_OK) return st;
    st = tsl_samples_parse(buf, len, path, out, n);
    free(buf);
    return st;
}
