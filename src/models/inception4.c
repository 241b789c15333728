/*
 * inception4.c - Inception-v4 (Szegedy et al. 2016, "Inception-v4,
 * Inception-ResNet and the Impact of Residual Connections") as timm's
 * inception_v4 builds it: every convolution is conv without bias + batch
 * norm (eps 0.001) + ReLU; stem (three convs, Mixed3a, Mixed4a, Mixed5a),
 * 4x Inception-A, Reduction-A, 7x Inception-B, Reduction-B, 3x Inception-C,
 * global average pool and the linear head `last_linear` (timm's default
 * drop rate is 0, so there is no dropout). Branch average pools are 3x3
 * stride 1 pad 1 with count_include_pad = 0, as timm.
 *
 * Parameter names are timm's: features.<i>.<branch>[.<j>].conv.weight,
 * ...bn.weight, last_linear.weight, with i the index in timm's `features`
 * Sequential (0-2 stem convs, 3 Mixed3a, 4 Mixed4a, 5 Mixed5a, 6-9 A,
 * 10 Reduction-A, 11-17 B, 18 Reduction-B, 19-21 C).
 */
#include "models/blocks.h"

#define I4_EPS 0.001f

/* Conv+BN+ReLU named "features.<blk>.<path>" (path may be NULL). */
static tsl_tid bc(tsl__mb *m, int blk, const char *path, tsl_tid x, int64_t cout, int kh, int kw,
                  int s, int ph, int pw) {
    char nb[TSL_NAME_MAX];
    if (path) tsl__mb_fmt(nb, "features.%d.%s", blk, path);
    else tsl__mb_fmt(nb, "features.%d", blk);
    return tsl__mb_conv_bn_relu(m, nb, x, cout, kh, kw, s, ph, pw, I4_EPS);
}

static tsl_tid cat(tsl__mb *m, int blk, const tsl_tid *xs, int n) {
    char nb[TSL_NAME_MAX];
    return tsl_concat(m->g, tsl__mb_fmt(nb, "features.%d.cat", blk), xs, n);
}

static tsl_tid maxpool(tsl__mb *m, int blk, const char *what, tsl_tid x) {
    char nb[TSL_NAME_MAX];
    return tsl__mb_maxpool(m, tsl__mb_fmt(nb, "features.%d.%s", blk, what), x, 3, 2, 0);
}

/* The branch3 pool: index 0 of timm's branch3 Sequential. */
static tsl_tid avgpool(tsl__mb *m, int blk, tsl_tid x) {
    char nb[TSL_NAME_MAX];
    return tsl__mb_avgpool(m, tsl__mb_fmt(nb, "features.%d.branch3.0", blk), x, 3, 1, 1, 0);
}

/* Stem, 3 -> 384 channels, 299 -> 35. */
static tsl_tid stem(tsl__mb *m, tsl_tid x) {
    tsl_tid y[2];
    x = bc(m, 0, NULL, x, 32, 3, 3, 2, 0, 0);                  // (N,32,149,149)
    x = bc(m, 1, NULL, x, 32, 3, 3, 1, 0, 0);                  // (N,32,147,147)
    x = bc(m, 2, NULL, x, 64, 3, 3, 1, 1, 1);                  // (N,64,147,147)
    /* Mixed3a: maxpool | conv 3x3/2 */
    y[0] = maxpool(m, 3, "maxpool", x);
    y[1] = bc(m, 3, "conv", x, 96, 3, 3, 2, 0, 0);
    x = cat(m, 3, y, 2);                                       // (N,160,73,73)
    /* Mixed4a: 1x1-3x3 | 1x1-1x7-7x1-3x3 */
    y[0] = bc(m, 4, "branch0.0", x, 64, 1, 1, 1, 0, 0);
    y[0] = bc(m, 4, "branch0.1", y[0], 96, 3, 3, 1, 0, 0);
    y[1] = bc(m, 4, "branch1.0", x, 64, 1, 1, 1, 0, 0);
    y[1] = bc(m, 4, "branch1.1", y[1], 64, 1, 7, 1, 0, 3);
    y[1] = bc(m, 4, "branch1.2", y[1], 64, 7, 1, 1, 3, 0);
    y[1] = bc(m, 4, "branch1.3", y[1], 96, 3, 3, 1, 0, 0);
    x = cat(m, 4, y, 2);                                       // (N,192,71,71)
    /* Mixed5a: conv 3x3/2 | maxpool */
    y[0] = bc(m, 5, "conv", x, 192, 3, 3, 2, 0, 0);
    y[1] = maxpool(m, 5, "maxpool", x);
    return cat(m, 5, y, 2);                                    // (N,384,35,35)
}

/* Inception-A (35x35, 384 -> 384). */
static tsl_tid block_a(tsl__mb *m, int k, tsl_tid x) {
    tsl_tid y[4];
    y[0] = bc(m, k, "branch0", x, 96, 1, 1, 1, 0, 0);
    y[1] = bc(m, k, "branch1.0", x, 64, 1, 1, 1, 0, 0);
    y[1] = bc(m, k, "branch1.1", y[1], 96, 3, 3, 1, 1, 1);
    y[2] = bc(m, k, "branch2.0", x, 64, 1, 1, 1, 0, 0);
    y[2] = bc(m, k, "branch2.1", y[2], 96, 3, 3, 1, 1, 1);
    y[2] = bc(m, k, "branch2.2", y[2], 96, 3, 3, 1, 1, 1);
    y[3] = bc(m, k, "branch3.1", avgpool(m, k, x), 96, 1, 1, 1, 0, 0);
    return cat(m, k, y, 4);
}

/* Reduction-A (35 -> 17, 384 -> 1024). */
static tsl_tid reduction_a(tsl__mb *m, int k, tsl_tid x) {
    tsl_tid y[3];
    y[0] = bc(m, k, "branch0", x, 384, 3, 3, 2, 0, 0);
    y[1] = bc(m, k, "branch1.0", x, 192, 1, 1, 1, 0, 0);
    y[1] = bc(m, k, "branch1.1", y[1], 224, 3, 3, 1, 1, 1);
    y[1] = bc(m, k, "branch1.2", y[1], 256, 3, 3, 2, 0, 0);
    y[2] = maxpool(m, k, "branch2", x);
    return cat(m, k, y, 3);
}

/* Inception-B (17x17, 1024 -> 1024). */
static tsl_tid block_b(tsl__mb *m, int k, tsl_tid x) {
    tsl_tid y[4];
    y[0] = bc(m, k, "branch0", x, 384, 1, 1, 1, 0, 0);
    y[1] = bc(m, k, "branch1.0", x, 192, 1, 1, 1, 0, 0);
    y[1] = bc(m, k, "branch1.1", y[1], 224, 1, 7, 1, 0, 3);
    y[1] = bc(m, k, "branch1.2", y[1], 256, 7, 1, 1, 3, 0);
    y[2] = bc(m, k, "branch2.0", x, 192, 1, 1, 1, 0, 0);
    y[2] = bc(m, k, "branch2.1", y[2], 192, 7, 1, 1, 3, 0);
    y[2] = bc(m, k, "branch2.2", y[2], 224, 1, 7, 1, 0, 3);
    y[2] = bc(m, k, "branch2.3", y[2], 224, 7, 1, 1, 3, 0);
    y[2] = bc(m, k, "branch2.4", y[2], 256, 1, 7, 1, 0, 3);
    y[3] = bc(m, k, "branch3.1", avgpool(m, k, x), 128, 1, 1, 1, 0, 0);
    return cat(m, k, y, 4);
}

/* Reduction-B (17 -> 8, 1024 -> 1536). */
static tsl_tid reduction_b(tsl__mb *m, int k, tsl_tid x) {
    tsl_tid y[3];
    y[0] = bc(m, k, "branch0.0", x, 192, 1, 1, 1, 0, 0);
    y[0] = bc(m, k, "branch0.1", y[0], 192, 3, 3, 2, 0, 0);
    y[1] = bc(m, k, "branch1.0", x, 256, 1, 1, 1, 0, 0);
    y[1] = bc(m, k, "branch1.1", y[1], 256, 1, 7, 1, 0, 3);
    y[1] = bc(m, k, "branch1.2", y[1], 320, 7, 1, 1, 3, 0);
    y[1] = bc(m, k, "branch1.3", y[1], 320, 3, 3, 2, 0, 0);
    y[2] = maxpool(m, k, "branch2", x);
    return cat(m, k, y, 3);
}

/* Inception-C (8x8, 1536 -> 1536): the split 1x3 / 3x1 halves join the one
 * CONCAT in timm's channel order (x0, x1a, x1b, x2a, x2b, x3). */
static tsl_tid block_c(tsl__mb *m, int k, tsl_tid x) {
    tsl_tid y[6];
    y[0] = bc(m, k, "branch0", x, 256, 1, 1, 1, 0, 0);
    tsl_tid t = bc(m, k, "branch1_0", x, 384, 1, 1, 1, 0, 0);
    y[1] = bc(m, k, "branch1_1a", t, 256, 1, 3, 1, 0, 1);
    y[2] = bc(m, k, "branch1_1b", t, 256, 3, 1, 1, 1, 0);
    t = bc(m, k, "branch2_0", x, 384, 1, 1, 1, 0, 0);
    t = bc(m, k, "branch2_1", t, 448, 3, 1, 1, 1, 0);
    t = bc(m, k, "branch2_2", t, 512, 1, 3, 1, 0, 1);
    y[3] = bc(m, k, "branch2_3a", t, 256, 1, 3, 1, 0, 1);
    y[4] = bc(m, k, "branch2_3b", t, 256, 3, 1, 1, 1, 0);
    y[5] = bc(m, k, "branch3.1", avgpool(m, k, x), 256, 1, 1, 1, 0, 0);
    return cat(m, k, y, 6);
}

/* Unpadded 3x3 stages of the spatial chain; 1 if every map is non-empty. */
static int fits(int s) {
    s = tsl__mb_out_size(s, 3, 2, 0); /* features.0 */
    s = tsl__mb_out_size(s, 3, 1, 0); /* features.1 */
    s = tsl__mb_out_size(s, 3, 2, 0); /* Mixed3a */
    s = tsl__mb_out_size(s, 3, 1, 0); /* Mixed4a */
    s = tsl__mb_out_size(s, 3, 2, 0); /* Mixed5a */
    s = tsl__mb_out_size(s, 3, 2, 0); /* Reduction-A */
    s = tsl__mb_out_size(s, 3, 2, 0); /* Reduction-B */
    return s >= 1;
}

/* 75 (75 -> 37 -> 35 -> 17 -> 15 -> 7 -> 3 -> 1). */
int tsl__min_image_inception4(void) {
    int s = 1;
    while (!fits(s)) s++;
    return s;
}

/* x: (N,C,S,S) -> logits (N,classes). TSL_NONE once the graph failed. */
tsl_tid tsl__model_inception4(tsl__mb *m, tsl_tid x, int variant) {
    (void)variant;
    x = stem(m, x);                                            // (N,384,35,35) at 299
    int k = 6;
    for (int i = 0; i < 4; i++) x = block_a(m, k++, x);
    x = reduction_a(m, k++, x);                                // (N,1024,17,17)
    for (int i = 0; i < 7; i++) x = block_b(m, k++, x);
    x = reduction_b(m, k++, x);                                // (N,1536,8,8)
    for (int i = 0; i < 3; i++) x = block_c(m, k++, x);
    x = tsl_global_avgpool(m->g, "global_pool", x);            // (N,1536)
    return tsl_linear_layer(m->g, "last_linear", x, m->cfg->n_classes, 1);
}
