/*
 * inception3.c - torchvision's Inception3 (Szegedy et al. 2015, "Rethinking
 * the Inception Architecture") with aux_logits=False and transform_input
 * off. Every convolution is a BasicConv2d: conv without bias + batch norm
 * (eps 0.001) + ReLU. Average pools in the branches are 3x3 stride 1 pad 1
 * with count_include_pad = 1 (PyTorch's default, as torchvision calls
 * F.avg_pool2d). Head: global average pool, dropout 0.5, fc.
 *
 * Parameter names are torchvision's: Conv2d_1a_3x3.conv.weight,
 * Mixed_5b.branch1x1.bn.weight, ..., fc.weight.
 */
#include "models/blocks.h"

#define I3_EPS 0.001f

/* BasicConv2d named "<block>.<branch>" with kernel kh x kw. */
static tsl_tid bc(tsl__mb *m, const char *block, const char *branch, tsl_tid x, int64_t cout,
                  int kh, int kw, int s, int ph, int pw) {
    char nb[TSL_NAME_MAX];
    if (block) tsl__mb_fmt(nb, "%s.%s", block, branch);
    else tsl__mb_fmt(nb, "%s", branch);
    return tsl__mb_conv_bn_relu(m, nb, x, cout, kh, kw, s, ph, pw, I3_EPS);
}

/* The 3x3/1/1 average pool feeding a branch_pool conv. */
static tsl_tid avg3(tsl__mb *m, const char *block, tsl_tid x) {
    char nb[TSL_NAME_MAX];
    return tsl__mb_avgpool(m, tsl__mb_fmt(nb, "%s.avg_pool", block), x, 3, 1, 1, 1);
}

static tsl_tid cat(tsl__mb *m, const char *block, const tsl_tid *xs, int n) {
    char nb[TSL_NAME_MAX];
    return tsl_concat(m->g, tsl__mb_fmt(nb, "%s.cat", block), xs, n);
}

/* InceptionA: 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | avg-1x1; 224 + pool_features. */
static tsl_tid inc_a(tsl__mb *m, const char *b, tsl_tid x, int64_t pool_features) {
    tsl_tid y[4];
    y[0] = bc(m, b, "branch1x1", x, 64, 1, 1, 1, 0, 0);
    y[1] = bc(m, b, "branch5x5_1", x, 48, 1, 1, 1, 0, 0);
    y[1] = bc(m, b, "branch5x5_2", y[1], 64, 5, 5, 1, 2, 2);
    y[2] = bc(m, b, "branch3x3dbl_1", x, 64, 1, 1, 1, 0, 0);
    y[2] = bc(m, b, "branch3x3dbl_2", y[2], 96, 3, 3, 1, 1, 1);
    y[2] = bc(m, b, "branch3x3dbl_3", y[2], 96, 3, 3, 1, 1, 1);
    y[3] = bc(m, b, "branch_pool", avg3(m, b, x), pool_features, 1, 1, 1, 0, 0);
    return cat(m, b, y, 4);
}

/* InceptionB (grid reduction 35 -> 17): 3x3/2 | 1x1-3x3-3x3/2 | maxpool/2. */
static tsl_tid inc_b(tsl__mb *m, const char *b, tsl_tid x) {
    char nb[TSL_NAME_MAX];
    tsl_tid y[3];
    y[0] = bc(m, b, "branch3x3", x, 384, 3, 3, 2, 0, 0);
    y[1] = bc(m, b, "branch3x3dbl_1", x, 64, 1, 1, 1, 0, 0);
    y[1] = bc(m, b, "branch3x3dbl_2", y[1], 96, 3, 3, 1, 1, 1);
    y[1] = bc(m, b, "branch3x3dbl_3", y[1], 96, 3, 3, 2, 0, 0);
    y[2] = tsl__mb_maxpool(m, tsl__mb_fmt(nb, "%s.max_pool", b), x, 3, 2, 0);
    return cat(m, b, y, 3);
}

/* InceptionC (17x17, factorised 7x7 with c7 channels inside): 768 out. */
static tsl_tid inc_c(tsl__mb *m, const char *b, tsl_tid x, int64_t c7) {
    tsl_tid y[4];
    y[0] = bc(m, b, "branch1x1", x, 192, 1, 1, 1, 0, 0);
    y[1] = bc(m, b, "branch7x7_1", x, c7, 1, 1, 1, 0, 0);
    y[1] = bc(m, b, "branch7x7_2", y[1], c7, 1, 7, 1, 0, 3);
    y[1] = bc(m, b, "branch7x7_3", y[1], 192, 7, 1, 1, 3, 0);
    y[2] = bc(m, b, "branch7x7dbl_1", x, c7, 1, 1, 1, 0, 0);
    y[2] = bc(m, b, "branch7x7dbl_2", y[2], c7, 7, 1, 1, 3, 0);
    y[2] = bc(m, b, "branch7x7dbl_3", y[2], c7, 1, 7, 1, 0, 3);
    y[2] = bc(m, b, "branch7x7dbl_4", y[2], c7, 7, 1, 1, 3, 0);
    y[2] = bc(m, b, "branch7x7dbl_5", y[2], 192, 1, 7, 1, 0, 3);
    y[3] = bc(m, b, "branch_pool", avg3(m, b, x), 192, 1, 1, 1, 0, 0);
    return cat(m, b, y, 4);
}

/* InceptionD (grid reduction 17 -> 8): 1x1-3x3/2 | 1x1-1x7-7x1-3x3/2 | max. */
static tsl_tid inc_d(tsl__mb *m, const char *b, tsl_tid x) {
    char nb[TSL_NAME_MAX];
    tsl_tid y[3];
    y[0] = bc(m, b, "branch3x3_1", x, 192, 1, 1, 1, 0, 0);
    y[0] = bc(m, b, "branch3x3_2", y[0], 320, 3, 3, 2, 0, 0);
    y[1] = bc(m, b, "branch7x7x3_1", x, 192, 1, 1, 1, 0, 0);
    y[1] = bc(m, b, "branch7x7x3_2", y[1], 192, 1, 7, 1, 0, 3);
    y[1] = bc(m, b, "branch7x7x3_3", y[1], 192, 7, 1, 1, 3, 0);
    y[1] = bc(m, b, "branch7x7x3_4", y[1], 192, 3, 3, 2, 0, 0);
    y[2] = tsl__mb_maxpool(m, tsl__mb_fmt(nb, "%s.max_pool", b), x, 3, 2, 0);
    return cat(m, b, y, 3);
}

/* InceptionE (8x8, expanded filter banks): 320 + 768 + 768 + 192 = 2048.
 * The two 1x3 / 3x1 halves of a branch are concatenated in the same CONCAT
 * as the rest: torchvision's cat of a cat equals one cat of the parts. */
static tsl_tid inc_e(tsl__mb *m, const char *b, tsl_tid x) {
    tsl_tid y[6];
    y[0] = bc(m, b, "branch1x1", x, 320, 1, 1, 1, 0, 0);
    tsl_tid t = bc(m, b, "branch3x3_1", x, 384, 1, 1, 1, 0, 0);
    y[1] = bc(m, b, "branch3x3_2a", t, 384, 1, 3, 1, 0, 1);
    y[2] = bc(m, b, "branch3x3_2b", t, 384, 3, 1, 1, 1, 0);
    t = bc(m, b, "branch3x3dbl_1", x, 448, 1, 1, 1, 0, 0);
    t = bc(m, b, "branch3x3dbl_2", t, 384, 3, 3, 1, 1, 1);
    y[3] = bc(m, b, "branch3x3dbl_3a", t, 384, 1, 3, 1, 0, 1);
    y[4] = bc(m, b, "branch3x3dbl_3b", t, 384, 3, 1, 1, 1, 0);
    y[5] = bc(m, b, "branch_pool", avg3(m, b, x), 192, 1, 1, 1, 0, 0);
    return cat(m, b, y, 6);
}

/* Spatial chain of the unpadded stride-2 stages: 1a (3/2), 2a (3), pool
 * (3/2), 4a (3), pool (3/2), Mixed_6a (3/2), Mixed_7a (3/2). 1 if every map
 * is non-empty. */
static int fits(int s) {
    s = tsl__mb_out_size(s, 3, 2, 0);  /* Conv2d_1a_3x3 */
    s = tsl__mb_out_size(s, 3, 1, 0);  /* Conv2d_2a_3x3 */
    s = tsl__mb_out_size(s, 3, 2, 0);  /* maxpool1 */
    s = tsl__mb_out_size(s, 3, 1, 0);  /* Conv2d_4a_3x3 */
    s = tsl__mb_out_size(s, 3, 2, 0);  /* maxpool2 */
    s = tsl__mb_out_size(s, 3, 2, 0);  /* Mixed_6a */
    s = tsl__mb_out_size(s, 3, 2, 0);  /* Mixed_7a */
    return s >= 1;
}

/* 75 (75 -> 37 -> 35 -> 17 -> 15 -> 7 -> 3 -> 1), torchvision's minimum. */
int tsl__min_image_inception3(void) {
    int s = 1;
    while (!fits(s)) s++;
    return s;
}

/* x: (N,C,S,S) -> logits (N,classes). TSL_NONE once the graph failed. */
tsl_tid tsl__model_inception3(tsl__mb *m, tsl_tid x, int variant) {
    (void)variant;
    x = bc(m, NULL, "Conv2d_1a_3x3", x, 32, 3, 3, 2, 0, 0);    // (N,32,149,149) at 299
    x = bc(m, NULL, "Conv2d_2a_3x3", x, 32, 3, 3, 1, 0, 0);    // (N,32,147,147)
    x = bc(m, NULL, "Conv2d_2b_3x3", x, 64, 3, 3, 1, 1, 1);    // (N,64,147,147)
    x = tsl__mb_maxpool(m, "maxpool1", x, 3, 2, 0);            // (N,64,73,73)
    x = bc(m, NULL, "Conv2d_3b_1x1", x, 80, 1, 1, 1, 0, 0);    // (N,80,73,73)
    x = bc(m, NULL, "Conv2d_4a_3x3", x, 192, 3, 3, 1, 0, 0);   // (N,192,71,71)
    x = tsl__mb_maxpool(m, "maxpool2", x, 3, 2, 0);            // (N,192,35,35)
    x = inc_a(m, "Mixed_5b", x, 32);                           // (N,256,35,35)
    x = inc_a(m, "Mixed_5c", x, 64);                           // (N,288,35,35)
    x = inc_a(m, "Mixed_5d", x, 64);                           // (N,288,35,35)
    x = inc_b(m, "Mixed_6a", x);                               // (N,768,17,17)
    x = inc_c(m, "Mixed_6b", x, 128);
    x = inc_c(m, "Mixed_6c", x, 160);
    x = inc_c(m, "Mixed_6d", x, 160);
    x = inc_c(m, "Mixed_6e", x, 192);                          // (N,768,17,17)
    x = inc_d(m, "Mixed_7a", x);                               // (N,1280,8,8)
    x = inc_e(m, "Mixed_7b", x);                               // (N,2048,8,8)
    x = inc_e(m, "Mixed_7c", x);                               // (N,2048,8,8)
    x = tsl_global_avgpool(m->g, "avgpool", x);                // (N,2048)
    x = tsl__mb_dropout(m, "dropout", x, 0.5f);
    return tsl_linear_layer(m->g, "fc", x, m->cfg->n_classes, 1);
}
