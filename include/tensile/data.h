/*
 * tensile/data.h - datasets: Fashion-MNIST from Debian's gzipped IDX files,
 * and a synthetic source of ImageNet-shaped batches.
 *
 * Images are float32, (N,C,H,W), scaled to [0,1] then normalised with the
 * dataset's mean and standard deviation; labels are int32 class indices.
 *
 * Example usage:
 *
 *   tsl_dataset train;
 *   if (tsl_fashion_mnist_load(NULL, 1, &train) != TSL_OK) die(tsl_last_error());
 *   tsl_batcher *b = tsl_batcher_new(&train, 64, 42, 1);  // batch 64, shuffled
 *   float x[64*1*28*28]; int32_t y[64];
 *   while (tsl_batcher_next(b, x, y)) train_step(x, y);
 */
#ifndef TENSILE_DATA_H
#define TENSILE_DATA_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TSL_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

typedef struct tsl_dataset {
    int64_t n;             /* examples */
    int c, h, w;           /* image shape */
    int n_classes;
    float *images;         /* n*c*h*w, normalised; NULL for a synthetic set */
    int32_t *labels;       /* n; NULL for a synthetic set */
    uint64_t synthetic_seed; /* synthetic sets: examples are generated from it */
} tsl_dataset;

/* Reads one gzipped IDX file (magic 0x00000803 images, 0x00000801 labels).
 * Validates magic, rank, dimensions and the payload length against the
 * header; errors name the file and what is wrong (TSL_ERR_IO / FORMAT).
 * On success *data (malloc'd, caller frees) holds the raw bytes and dims[]
 * the dimensions (*ndim of them). */
tsl_status tsl_idx_read_gz(const char *path, uint8_t **data, int64_t dims[3], int *ndim);

/* Loads the training (train=1, 60000) or test (train=0, 10000) split from
 * `dir` (NULL: TSL_FASHION_MNIST_DIR): images as (N,1,28,28) normalised with
 * the training set's mean and std, labels 0..9. Checks that images and
 * labels agree in count. */
tsl_status tsl_fashion_mnist_load(const char *dir, int train, tsl_dataset *out);

/* A synthetic set of n examples of shape (c,h,w) over n_classes, generated
 * on demand from `seed`: a class-dependent pattern plus noise, so a model can
 * learn it. Allocates nothing large. */
tsl_status tsl_synthetic_dataset(int64_t n, int c, int h, int w, int n_classes,
                                 uint64_t seed, tsl_dataset *out);

/* Copies example i into x (c*h*w floats) and *y. */
void tsl_dataset_get(const tsl_dataset *d, int64_t i, float *x, int32_t *y);

void tsl_dataset_free(tsl_dataset *d); /* frees and zeroes; NULL is fine */

/* Iterates over a dataset in batches of `batch` examples; with shuffle, a
 * new permutation per epoch from (seed, epoch). The last partial batch is
 * dropped so that every batch has the graph's static shape. */
typedef struct tsl_batcher tsl_batcher;
tsl_batcher *tsl_batcher_new(const tsl_dataset *d, int batch, uint64_t seed, int shuffle);
void tsl_batcher_free(tsl_batcher *b);
/* Fills x (batch*c*h*w) and y (batch); returns 0 at the end of an epoch
 * (and rewinds, with a new permutation, for the next call). */
int tsl_batcher_next(tsl_batcher *b, float *x, int32_t *y);
int64_t tsl_batcher_batches_per_epoch(const tsl_batcher *b);

#ifdef __cplusplus
}
#endif
#endif
