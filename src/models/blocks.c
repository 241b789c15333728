/*
 * blocks.c - layer helpers shared by the model families (see blocks.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "core/assert.h"
#include "models/blocks.h"

const char *tsl__mb_fmt(char *buf, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, TSL_NAME_MAX, fmt, ap);
    va_end(ap);
    return buf;
}

int64_t tsl__mb_channels(const tsl__mb *m, tsl_tid x) {
    if (x == TSL_NONE) return 0;
    const tsl_tensor *t = tsl_graph_tensor(m->g, x);
    return t->shape.ndim >= 2 ? t->shape.d[1] : 0;
}

/* Precondition: kernel, stride >= 1, padding >= 0 (bugs otherwise). Shape
 * errors are the conv builder's: the graph fails and TSL_NONE comes back. */
tsl_tid tsl__mb_conv(tsl__mb *m, const char *name, tsl_tid x, int64_t cout, int kh, int kw,
                     int s, int ph, int pw, int bias) {
    TSL_ASSERT(kh >= 1 && kw >= 1 && s >= 1 && ph >= 0 && pw >= 0 && cout >= 1);
    tsl_conv_attr a = tsl_conv_sp(s, 0);
    a.pad_h = ph;
    a.pad_w = pw;
    return tsl_conv2d_layer(m->g, name, x, cout, kh, kw, a, bias);
}

tsl_tid tsl__mb_bn(tsl__mb *m, const char *name, tsl_tid x, float eps) {
    tsl_bn_attr a = {.eps = eps, .momentum = 0.1f};
    return tsl_batchnorm(m->g, name, x, a);
}

tsl_tid tsl__mb_relu(tsl__mb *m, const char *name, tsl_tid x) {
    return tsl_relu(m->g, name, x);
}

/* Names: prefix.conv (weight only), prefix.bn, and the ReLU's output
 * prefix.relu. */
tsl_tid tsl__mb_conv_bn_relu(tsl__mb *m, const char *prefix, tsl_tid x, int64_t cout, int kh,
                             int kw, int s, int ph, int pw, float eps) {
    char nb[TSL_NAME_MAX];
    x = tsl__mb_conv(m, tsl__mb_fmt(nb, "%s.conv", prefix), x, cout, kh, kw, s, ph, pw, 0);
    x = tsl__mb_bn(m, tsl__mb_fmt(nb, "%s.bn", prefix), x, eps);
    return tsl__mb_relu(m, tsl__mb_fmt(nb, "%s.relu", prefix), x);
}

tsl_tid tsl__mb_maxpool(tsl__mb *m, const char *name, tsl_tid x, int k, int s, int p) {
    return tsl_maxpool2d(m->g, name, x, tsl_pool_ksp(k, s, p));
}

tsl_tid tsl__mb_avgpool(tsl__mb *m, const char *name, tsl_tid x, int k, int s, int p,
                        int count_include_pad) {
    tsl_pool_attr a = tsl_pool_ksp(k, s, p);
    a.count_include_pad = count_include_pad;
    return tsl_avgpool2d(m->g, name, x, a);
}

/* splitmix64 finaliser: a bijective mix, so distinct layer numbers give
 * distinct seeds for one cfg->seed. */
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

tsl_tid tsl__mb_dropout(tsl__mb *m, const char *name, tsl_tid x, float p) {
    uint32_t layer = ++m->n_dropout;
    tsl_dropout_attr a = {.p = p,
                          .seed = mix64(m->cfg->seed + 0x9E3779B97F4A7C15ull * (uint64_t)layer)};
    return tsl_dropout(m->g, name, x, a);
}

int tsl__mb_out_size(int in, int k, int s, int p) {
    TSL_ASSERT(k >= 1 && s >= 1 && p >= 0);
    int span = in + 2 * p - k;
    return span < 0 ? 0 : span / s + 1;
}
