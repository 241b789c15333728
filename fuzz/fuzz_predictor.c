/*
 * fuzz_predictor.c - libFuzzer harness for cold start's two file readers
 * (src/predict/predictor_file.c, src/predict/samples.c, over their shared
 * line reader text_lines.c).
 *
 * Each input is parsed as a predictor file and as a samples file. A
 * failure must be TSL_ERR_FORMAT (or TSL_ERR_OOM) with a message that
 * names the input ("fuzz:LINE: ...") and must leave the output NULL /
 * empty. An accepted predictor must give, for every op type it has a
 * model of, a finite positive latency for a few feature vectors (the
 * log-latency is clamped, so no input makes inf or NaN); accepted samples
 * must have positive finite latencies and a utilisation in [0, 1].
 * Anything else aborts, which libFuzzer reports as a crash.
 *
 * Built with the libraries of the line below (and what they link) by
 * scripts/fuzz.sh with libFuzzer, and by the suite as fuzz_predictor_replay
 * over fuzz/corpus/fuzz_predictor (CMakeLists.txt reads the same line).
 * fuzz-link: tsl_predict
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensile/predict.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_predictor: check failed at line %d: %s\n", __LINE__, #cond);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    tsl_predictor *p = (tsl_predictor *)&p;
    tsl_status st = tsl_predictor_parse(text, size, "fuzz", &p);
    if (st == TSL_OK) {
        CHECK(p != NULL);
        for (int t = 0; t < TSL_OP_COUNT; t++) {
            if (!tsl_predictor_has(p, (tsl_op_type)t, NULL)) continue;
            for (int v = 0; v < 3; v++) {
                double f[TSL_PRED_NF];
                for (int k = 0; k < TSL_PRED_NF; k++) f[k] = v == 0 ? 0 : v == 1 ? 3.0 + k : 30.0;
                f[TSL_PRED_NF - 1] = v * 0.5;
                double us = tsl_predictor_us(p, (tsl_op_type)t, f);
                CHECK(isfinite(us) && us > 0);
            }
        }
        tsl_predictor_free(p);
    } else {
        CHECK(st == TSL_ERR_FORMAT || st == TSL_ERR_OOM);
        CHECK(p == NULL);
        CHECK(st == TSL_ERR_OOM || strncmp(tsl_last_error(), "fuzz:", 5) == 0);
    }
    tsl_op_sample *s = (tsl_op_sample *)&s;
    size_t n = 7;
    st = tsl_samples_parse(text, size, "fuzz", &s, &n);
    if (st == TSL_OK) {
        CHECK(n == 0 || s != NULL);
        for (size_t i = 0; i < n; i++) {
            CHECK(isfinite(s[i].latency_us) && s[i].latency_us > 0);
            CHECK((unsigned)s[i].type < TSL_OP_COUNT);
            CHECK(s[i].f[TSL_PRED_NF - 1] >= 0 && s[i].f[TSL_PRED_NF - 1] <= 1);
        }
        free(s);
    } else {
        CHECK(st == TSL_ERR_FORMAT || st == TSL_ERR_OOM);
        CHECK(s == NULL && n == 0);
        CHECK(st == TSL_ERR_OOM || strncmp(tsl_last_error(), "fuzz:", 5) == 0);
    }
    return 0;
}
