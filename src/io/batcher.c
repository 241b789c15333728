/*
 * batcher.c - iteration over a dataset in fixed-size batches.
 *
 * With shuffle, epoch e visits the examples in a Fisher-Yates permutation
 * drawn from a splitmix64 stream seeded by (seed, e), so the order of any
 * epoch is reproducible on its own; without shuffle, in index order. The
 * last partial batch is dropped: every batch has the graph's static shape.
 */
#include <stdlib.h>

#include "core/assert.h"
#include "tensile/data.h"

struct tsl_batcher {
    const tsl_dataset *d;
    int batch;
    uint64_t seed;
    int shuffle;
    int64_t epoch;    /* current epoch, from 0 */
    int64_t next;     /* next batch of this epoch */
    int64_t n_batches;
    int64_t *perm;    /* d->n example indices in this epoch's order */
};

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform integer in [0, bound), bound >= 1, without modulo bias
 * (Lemire's multiply-and-reject). */
static uint64_t below(uint64_t *s, uint64_t bound) {
    for (;;) {
        unsigned __int128 m = (unsigned __int128)splitmix64(s) * bound;
        uint64_t lo = (uint64_t)m;
        if (lo >= bound || lo >= (0 - bound) % bound) return (uint64_t)(m >> 64);
    }
}

/* Fills b->perm with the order of epoch b->epoch. */
static void make_order(tsl_batcher *b) {
    int64_t n = b->d->n;
    for (int64_t i = 0; i < n; i++) b->perm[i] = i;
    if (!b->shuffle) return;
    uint64_t s = b->seed ^ splitmix64(&(uint64_t){(uint64_t)b->epoch * 0xD1B54A32D192ED03ull + 1});
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)below(&s, (uint64_t)i + 1);
        int64_t t = b->perm[i];
        b->perm[i] = b->perm[j];
        b->perm[j] = t;
    }
}

/* Contract: d outlives the batcher. Returns NULL with a message
 * (TSL_ERR_INVALID) if batch < 1 or batch > d->n (no full batch), or
 * (TSL_ERR_OOM) if the host is out of memory for the permutation. */
tsl_batcher *tsl_batcher_new(const tsl_dataset *d, int batch, uint64_t seed, int shuffle) {
    TSL_ASSERT(d);
    if (batch < 1 || batch > d->n) {
        tsl_fail(TSL_ERR_INVALID, "batcher: batch %d must be in 1..%lld (the dataset's size)",
                 batch, (long long)d->n);
        return NULL;
    }
    /* the shuffle order: 8 bytes per example, checked before it wraps */
    if ((uint64_t)d->n > SIZE_MAX / sizeof(int64_t)) {
        tsl_fail(TSL_ERR_OOM, "batcher: %lld examples need an order of %.3g bytes, more than the "
                 "host can address", (long long)d->n, (double)d->n * sizeof(int64_t));
        return NULL;
    }
    tsl_batcher *b = calloc(1, sizeof *b);
    int64_t *perm = malloc((size_t)d->n * sizeof *perm);
    if (!b || !perm) {
        free(b);
        free(perm);
        tsl_fail(TSL_ERR_OOM, "batcher: host out of memory for the order of %lld examples "
                 "(%.3g bytes)", (long long)d->n, (double)d->n * sizeof(int64_t));
        return NULL;
    }
    b->d = d;
    b->batch = batch;
    b->seed = seed;
    b->shuffle = shuffle;
    b->n_batches = d->n / batch;
    b->perm = perm;
    make_order(b);
    return b;
}

void tsl_batcher_free(tsl_batcher *b) {
    if (!b) return;
    free(b->perm);
    free(b);
}

/* Contract: x holds batch*c*h*w floats, y batch ints. Returns 1 with the
 * next batch, or 0 at the end of the epoch, having moved to the next epoch
 * (new order); the next call then returns its first batch. */
int tsl_batcher_next(tsl_batcher *b, float *x, int32_t *y) {
    TSL_ASSERT(b && x && y);
    if (b->next == b->n_batches) {
        b->epoch++;
        b->next = 0;
        make_order(b);
        return 0;
    }
    const tsl_dataset *d = b->d;
    size_t chw = (size_t)d->c * (size_t)d->h * (size_t)d->w;
    const int64_t *idx = b->perm + b->next * b->batch;
    for (int k = 0; k < b->batch; k++) // x: (B,C,H,W)
        tsl_dataset_get(d, idx[k], x + (size_t)k * chw, y + k);
    b->next++;
    return 1;
}

int64_t tsl_batcher_batches_per_epoch(const tsl_batcher *b) {
    TSL_ASSERT(b);
    return b->n_batches;
}
