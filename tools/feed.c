/* feed.c - see feed.h. */
#include "feed.h"
#include <stdio.h>

int tool_load_data(const char *cmd, int dataset, const tsl_model_cfg *cfg, int64_t train_n,
                   int64_t test_n, uint64_t seed, int batch, tsl_dataset *train, tsl_dataset *test,
                   int *rc) {
    tsl_status st;
    if (dataset == 0) {
        st = tsl_fashion_mnist_load(NULL, 1, train);
        if (st == TSL_OK && test) st = tsl_fashion_mnist_load(NULL, 0, test);
    } else {
        st = tsl_synthetic_dataset(train_n ? train_n : 4096, cfg->in_channels, cfg->image_size,
                                   cfg->image_size, cfg->n_classes, seed, train);
        if (st == TSL_OK && test)
            st = tsl_synthetic_dataset(test_n ? test_n : 1024, cfg->in_channels, cfg->image_size,
                                       cfg->image_size, cfg->n_classes, seed + 1000003, test);
    }
    if (st != TSL_OK) {
        fprintf(stderr, "tensile %s: cannot load data: %s\n", cmd, tsl_last_error());
        *rc = 1;
        tsl_dataset_free(train);
        if (test) tsl_dataset_free(test);
        return 0;
    }
    if (train_n && train_n < train->n) train->n = train_n;
    if (test && test_n && test_n < test->n) test->n = test_n;
    if (train->n < batch) {
        fprintf(stderr, "tensile %s: --batch %d is larger than the training set (%lld examples)\n",
                cmd, batch, (long long)train->n);
        *rc = 2;
        tsl_dataset_free(train);
        if (test) tsl_dataset_free(test);
        return 0;
    }
    return 1;
}

void tool_spread_labels(int32_t *y, int batch, size_t lbl) {
    if (lbl == 1) return;
    for (int i = batch - 1; i >= 0; i--) {
        int32_t v = y[i];
        for (size_t j = 0; j < lbl; j++) y[(size_t)i * lbl + j] = v;
    }
}

int tool_evaluate(tsl_session *s, const tsl_dataset *test, int batch, size_t img, size_t lbl,
                  float *x, int32_t *y, double *acc, int64_t *n_eval) {
    int64_t correct = 0, total = 0;
    tsl_step_stats st;
    for (int64_t first = 0; first < test->n; first += batch) {
        int64_t n = test->n - first < batch ? test->n - first : batch;
        for (int64_t i = 0; i < batch; i++)
            tsl_dataset_get(test, i < n ? first + i : first, x + (size_t)i * img, y + i);
        tool_spread_labels(y, batch, lbl);
        if (tsl_session_eval_partial(s, x, y, n, &st) != TSL_OK) return 0;
        correct += st.correct;
        total += st.examples;
    }
    *acc = total ? (double)correct / (double)total : 0;
    *n_eval = total;
    return 1;
}
