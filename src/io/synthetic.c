/*
 * synthetic.c - a synthetic, learnable dataset generated on demand, and the
 * dataset accessors shared by every kind of set (tsl_dataset_get, _free).
 *
 * Example i of a set with seed s is a function of (s, i) alone:
 *   label  y = (i + o_s) mod K, o_s a seed-dependent offset (classes balanced)
 *   image  x[c,r,q] = a * sin(2 pi f_y (u cos t_y + v sin t_y) + p_{y,c} + j)
 *                     + 0.5 * noise
 * with u = q/w - 1/2, v = r/h - 1/2 (q the column, r the row), a class-
 * dependent orientation t_y, spatial frequency f_y (1 to 3 cycles per image)
 * and per-channel phase p_{y,c}; a per-example amplitude a in [0.8, 1.2] and
 * phase jitter j in [-0.3, 0.3]; noise approximately N(0,1) from a
 * splitmix64 stream seeded by (s, i). A row costs two sin/cos: the columns
 * advance by a rotation, so an example costs O(c*h*w) and allocates nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "tensile/data.h"

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *s) { return mix64(*s += 0x9E3779B97F4A7C15ull); }

static double unit(uint64_t *s) { return (double)(splitmix64(s) >> 11) * 0x1.0p-53; }

static double frac(double x) { return x - floor(x); }

/* Offset of the labels, so that two seeds give different label sequences. */
static int64_t label_offset(const tsl_dataset *d) {
    return (int64_t)(mix64(d->synthetic_seed ^ 0x1AB31ull) % (uint64_t)d->n_classes);
}

/* Generates synthetic example i into x (c*h*w floats) and *y. */
static void synthetic_get(const tsl_dataset *d, int64_t i, float *x, int32_t *y) {
    const double two_pi = 6.283185307179586;
    int64_t k = (i + label_offset(d)) % d->n_classes;
    *y = (int32_t)k;
    /* class parameters: low-discrepancy sequences spread them apart */
    double theta = 3.141592653589793 * frac((double)k * 0.6180339887498949);
    double freq = 1.0 + 2.0 * frac((double)k * 0.7548776662466927 + 0.25);
    /* example parameters */
    uint64_t s = mix64(d->synthetic_seed * 0x9E3779B97F4A7C15ull ^ mix64((uint64_t)i + 1));
    double amp = 0.8 + 0.4 * unit(&s);
    double jitter = 0.6 * (unit(&s) - 0.5);
    double wu = two_pi * freq * cos(theta), wv = two_pi * freq * sin(theta);
    double step = wu / d->w; /* angle added per column */
    double cs = cos(step), sn = sin(step);
    for (int c = 0; c < d->c; c++) {
        double phase = two_pi * frac((double)k * 0.5698402909980532 + (double)c / 3.0) + jitter;
        for (int r = 0; r < d->h; r++) {
            double v = (double)r / d->h - 0.5;
            double ang = -0.5 * wu + wv * v + phase; /* at column 0: u = -1/2 */
            double sa = sin(ang), ca = cos(ang);
            float *row = x + ((int64_t)c * d->h + r) * d->w; // (C,H,W)
            for (int q = 0; q < d->w; q++) {
                uint64_t z = splitmix64(&s);
                /* four 16-bit uniforms: Irwin-Hall(4), mean 2, variance 1/3 */
                double sum = (double)((z & 0xFFFF) + ((z >> 16) & 0xFFFF) + ((z >> 32) & 0xFFFF) +
                                      (z >> 48)) * (1.0 / 65536.0);
                double noise = (sum - 2.0) * 1.7320508075688772;
                row[q] = (float)(amp * sa + 0.5 * noise);
                double ns = sa * cs + ca * sn; /* rotate by one column */
                ca = ca * cs - sa * sn;
                sa = ns;
            }
        }
    }
}

/* Contract: see tensile/data.h. n >= 1, c, h, w >= 1 with c*h*w <= 2^31,
 * n_classes >= 1, else TSL_ERR_INVALID naming the argument; *out is zeroed
 * on failure. */
tsl_status tsl_synthetic_dataset(int64_t n, int c, int h, int w, int n_classes, uint64_t seed,
                                 tsl_dataset *out) {
    TSL_ASSERT(out);
    memset(out, 0, sizeof *out);
    if (n < 1) return tsl_fail(TSL_ERR_INVALID, "synthetic dataset: n = %lld, must be >= 1", (long long)n);
    if (c < 1 || h < 1 || w < 1 || (int64_t)c * h * w > ((int64_t)1 << 31))
        return tsl_fail(TSL_ERR_INVALID,
                        "synthetic dataset: shape (c,h,w) = (%d,%d,%d): each must be >= 1 and "
                        "c*h*w <= 2^31", c, h, w);
    if (n_classes < 1)
        return tsl_fail(TSL_ERR_INVALID, "synthetic dataset: n_classes = %d, must be >= 1",
                        n_classes);
    out->n = n;
    out->c = c;
    out->h = h;
    out->w = w;
    out->n_classes = n_classes;
    out->synthetic_seed = seed;
    return TSL_OK;
}

/* Contract: 0 <= i < d->n (TSL_ASSERT); x holds c*h*w floats. */
void tsl_dataset_get(const tsl_dataset *d, int64_t i, float *x, int32_t *y) {
    TSL_ASSERT(d && x && y && i >= 0 && i < d->n);
    if (!d->images) {
        synthetic_get(d, i, x, y);
        return;
    }
    TSL_ASSERT(d->labels);
    size_t chw = (size_t)d->c * (size_t)d->h * (size_t)d->w;
    memcpy(x, d->images + (size_t)i * chw, chw * sizeof *x);
    *y = d->labels[i];
}

void tsl_dataset_free(tsl_dataset *d) {
    if (!d) return;
    free(d->images);
    free(d->labels);
    memset(d, 0, sizeof *d);
}
