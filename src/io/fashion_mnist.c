/*
 * fashion_mnist.c - the Fashion-MNIST splits from the gzipped IDX files of
 * Debian's dataset-fashion-mnist package, as normalised float images.
 *
 * Pixels p in 0..255 become (p/255 - 0.2860) / 0.3530, the training set's
 * mean and standard deviation on [0,1] pixels, for both splits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "io/idx.h"
#include "tensile/data.h"

#define FMNIST_MEAN 0.2860f
#define FMNIST_STD 0.3530f
#define FMNIST_SIDE 28
#define FMNIST_CLASSES 10
/* At most this many examples per split (the real ones: 60000 and 10000):
 * a header claiming more is refused before its payload is inflated, so a
 * damaged or hostile file cannot make the loader hold gigabytes. */
#define FMNIST_MAX_EXAMPLES ((uint64_t)1 << 18)

/* Contract: see tensile/data.h. On failure *out is zeroed and nothing is
 * leaked; errors name the file at fault: TSL_ERR_IO (missing or unreadable
 * file), TSL_ERR_FORMAT (malformed IDX, pictures not 28x28, a label >= 10,
 * images and labels disagreeing in count), TSL_ERR_OOM. */
tsl_status tsl_fashion_mnist_load(const char *dir, int train, tsl_dataset *out) {
    TSL_ASSERT(out);
    memset(out, 0, sizeof *out);
    if (!dir) dir = TSL_FASHION_MNIST_DIR;
    const char *split = train ? "train" : "t10k";
    char ipath[4096], lpath[4096];
    if (snprintf(ipath, sizeof ipath, "%s/%s-images-idx3-ubyte.gz", dir, split) >= (int)sizeof ipath ||
        snprintf(lpath, sizeof lpath, "%s/%s-labels-idx1-ubyte.gz", dir, split) >= (int)sizeof lpath)
        return tsl_fail(TSL_ERR_INVALID, "fashion-mnist: directory name too long (%zu bytes)",
                        strlen(dir));

    uint8_t *pix = NULL, *lab = NULL;
    int64_t idim[3], ldim[3];
    int ind, lnd;
    tsl_status st = tsl__idx_read_gz_max(ipath, TSL__IDX_IMAGES,
                                         FMNIST_MAX_EXAMPLES * FMNIST_SIDE * FMNIST_SIDE, &pix,
                                         idim, &ind);
    if (st != TSL_OK) return st;
    st = tsl__idx_read_gz_max(lpath, TSL__IDX_LABELS, FMNIST_MAX_EXAMPLES, &lab, ldim, &lnd);
    if (st != TSL_OK) {
        free(pix);
        return st;
    }
    if (idim[1] != FMNIST_SIDE || idim[2] != FMNIST_SIDE) {
        st = tsl_fail(TSL_ERR_FORMAT, "%s: pictures are %lldx%lld, Fashion-MNIST's are 28x28",
                      ipath, (long long)idim[1], (long long)idim[2]);
    } else if (idim[0] != ldim[0]) {
        st = tsl_fail(TSL_ERR_FORMAT, "%s holds %lld images but %s holds %lld labels", ipath,
                      (long long)idim[0], lpath, (long long)ldim[0]);
    } else {
        for (int64_t i = 0; i < ldim[0]; i++)
            if (lab[i] >= FMNIST_CLASSES) {
                st = tsl_fail(TSL_ERR_FORMAT, "%s: label %lld is %u, classes are 0..9", lpath,
                              (long long)i, (unsigned)lab[i]);
                break;
            }
    }
    int64_t n = idim[0], px = (int64_t)FMNIST_SIDE * FMNIST_SIDE;
    float *images = NULL;
    int32_t *labels = NULL;
    if (st == TSL_OK) {
        images = malloc((size_t)(n * px) * sizeof *images);
        labels = malloc((size_t)n * sizeof *labels);
        if (!images || !labels)
            st = tsl_fail(TSL_ERR_OOM, "fashion-mnist: host out of memory for %lld images",
                          (long long)n);
    }
    if (st != TSL_OK) {
        free(images);
        free(labels);
        free(pix);
        free(lab);
        return st;
    }
    /* (N,1,28,28) */
    const float scale = 1.0f / (255.0f * FMNIST_STD), shift = FMNIST_MEAN / FMNIST_STD;
    for (int64_t k = 0; k < n * px; k++) images[k] = (float)pix[k] * scale - shift;
    for (int64_t i = 0; i < n; i++) labels[i] = lab[i];
    free(pix);
    free(lab);
    out->n = n;
    out->c = 1;
    out->h = out->w = FMNIST_SIDE;
    out->n_classes = FMNIST_CLASSES;
    out->images = images;
    out->labels = labels;
    return TSL_OK;
}
