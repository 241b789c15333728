/*
 * feed.h - feeding data to a session, shared by `tensile train` and
 * `tensile run`: loading the datasets, per-pixel labels, evaluation over a
 * whole test set.
 */
#ifndef TSL_TOOLS_FEED_H
#define TSL_TOOLS_FEED_H
#include <stddef.h>
#include <stdint.h>
#include "tensile/data.h"
#include "tensile/models.h"
#include "tensile/session.h"

/* The most examples --train-examples and --test-examples take (2^31):
 * Fashion-MNIST has 60000, and a synthetic set's shuffle order takes 8
 * bytes per example. */
#define TOOL_MAX_EXAMPLES ((int64_t)1 << 31)

/* Loads the training set and, if `test` is not NULL, the test set:
 * Fashion-MNIST (dataset 0) or synthetic data shaped by cfg (dataset 1,
 * 4096 / 1024 examples unless train_n / test_n say otherwise). train_n and
 * test_n (0: all) cut the sets. Prints "tensile CMD: ..." and returns 0 on
 * failure with *rc the exit status: 2 for a training set smaller than one
 * batch (the arguments' fault), 1 for data that cannot be loaded; *rc is
 * left alone on success. */
int tool_load_data(const char *cmd, int dataset, const tsl_model_cfg *cfg, int64_t train_n,
                   int64_t test_n, uint64_t seed, int batch, tsl_dataset *train, tsl_dataset *test,
                   int *rc);

/* Per-pixel models (unet) take a label per pixel: each image's class is
 * spread over its pixels (a synthetic segmentation target). y holds `batch`
 * labels, one per example, and room for batch * lbl. */
void tool_spread_labels(int32_t *y, int batch, size_t lbl);

/* Accuracy over every example of `test`: batches of the graph's static
 * size, the last one padded with copies of its first example and counted
 * only for its real examples. x and y hold one batch (img floats and lbl
 * labels per example). Returns 0 on failure (the library's message is
 * kept in tsl_last_error()). */
int tool_evaluate(tsl_session *s, const tsl_dataset *test, int batch, size_t img, size_t lbl,
                  float *x, int32_t *y, double *acc, int64_t *n_eval);
#endif
