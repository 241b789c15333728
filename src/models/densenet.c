/*
 * densenet.c - DenseNet-121 as torchvision builds it (growth 32, bn_size 4,
 * blocks 6, 12, 24, 16, 64 initial features, compression 0.5, drop rate 0,
 * batch norm eps 1e-5). Layers are norm -> ReLU -> conv. Stem: conv0 7x7/2,
 * norm0, relu0, pool0 (max 3x3/2 pad 1). Each dense layer reads ONE CONCAT
 * of all the features of its block so far (the block input and every
 * earlier layer's 32 new channels), as torchvision's torch.cat does; the
 * first layer of a block reads the block input directly (a CONCAT of one
 * tensor would only copy it). A transition is norm, ReLU, 1x1 conv halving
 * the channels, 2x2/2 average pool. Head: norm5, ReLU, global average pool,
 * classifier.
 *
 * Parameter names are torchvision's: features.conv0.weight,
 * features.denseblock1.denselayer1.norm1.weight, ...conv1.weight,
 * features.transition1.conv.weight, features.norm5.weight, classifier.
 */
#include <stdio.h>

#include "core/assert.h"
#include "models/blocks.h"

#define DN_EPS 1e-5f
#define DN_GROWTH 32
#define DN_BN_SIZE 4
#define DN_MAX_LAYERS 32

/* Stem (7x7/2 pad 3, max 3x3/2 pad 1) then three 2x2/2 transitions: the
 * last one needs a 2x2 map, so the map after pool0 must be >= 8. */
static int fits(int s) {
    s = tsl__mb_out_size(s, 7, 2, 3); /* conv0 */
    s = tsl__mb_out_size(s, 3, 2, 1); /* pool0 */
    for (int t = 0; t < 3; t++) s = tsl__mb_out_size(s, 2, 2, 0);
    return s >= 1;
}

/* 29: conv0 gives 15, pool0 8, the transitions 4, 2, 1. */
int tsl__min_image_densenet(void) {
    int s = 1;
    while (!fits(s)) s++;
    return s;
}

/* norm -> ReLU -> conv (no bias), names prefix.norm<k>, prefix.conv<k>
 * (k = 0: prefix.norm, prefix.conv as in a transition). */
static tsl_tid norm_relu_conv(tsl__mb *m, const char *prefix, int k, tsl_tid x, int64_t cout,
                              int ks) {
    char nb[TSL_NAME_MAX], kb[8] = "";
    if (k) snprintf(kb, sizeof kb, "%d", k);
    x = tsl__mb_bn(m, tsl__mb_fmt(nb, "%s.norm%s", prefix, kb), x, DN_EPS);
    x = tsl__mb_relu(m, tsl__mb_fmt(nb, "%s.relu%s", prefix, kb), x);
    return tsl__mb_conv(m, tsl__mb_fmt(nb, "%s.conv%s", prefix, kb), x, cout, ks, ks, 1, ks / 2,
                        ks / 2, 0);
}

/* One dense block of n layers on x; returns the CONCAT of x and the n new
 * feature maps (C + 32 n channels). */
static tsl_tid dense_block(tsl__mb *m, int b, tsl_tid x, int n) {
    TSL_ASSERT(n + 1 <= DN_MAX_LAYERS);
    tsl_tid feats[DN_MAX_LAYERS];
    char pre[TSL_NAME_MAX], nb[TSL_NAME_MAX];
    int nf = 0;
    feats[nf++] = x;
    for (int l = 1; l <= n; l++) {
        tsl__mb_fmt(pre, "features.denseblock%d.denselayer%d", b, l);
        tsl_tid in = nf == 1 ? feats[0]
                             : tsl_concat(m->g, tsl__mb_fmt(nb, "%s.cat", pre), feats, nf);
        tsl_tid h = norm_relu_conv(m, pre, 1, in, DN_BN_SIZE * DN_GROWTH, 1); // bottleneck 1x1
        feats[nf++] = norm_relu_conv(m, pre, 2, h, DN_GROWTH, 3);             // (N,32,H,W)
    }
    return tsl_concat(m->g, tsl__mb_fmt(nb, "features.denseblock%d.cat", b), feats, nf);
}

/* x: (N,C,S,S) -> logits (N,classes). depth 121 (a bug otherwise). TSL_NONE
 * once the graph failed. */
tsl_tid tsl__model_densenet(tsl__mb *m, tsl_tid x, int depth) {
    static const int layers[4] = {6, 12, 24, 16};
    TSL_ASSERT(depth == 121);
    char nb[TSL_NAME_MAX];
    x = tsl__mb_conv(m, "features.conv0", x, 64, 7, 7, 2, 3, 3, 0);   // (N,64,S/2,S/2)
    x = tsl__mb_bn(m, "features.norm0", x, DN_EPS);
    x = tsl__mb_relu(m, "features.relu0", x);
    x = tsl__mb_maxpool(m, "features.pool0", x, 3, 2, 1);             // (N,64,S/4,S/4)
    for (int b = 1; b <= 4; b++) {
        x = dense_block(m, b, x, layers[b - 1]);
        if (b == 4) break;
        int64_t c = tsl__mb_channels(m, x) / 2;                       // compression 0.5
        tsl__mb_fmt(nb, "features.transition%d", b);
        x = norm_relu_conv(m, nb, 0, x, c > 0 ? c : 1, 1);
        char pb[TSL_NAME_MAX];
        x = tsl__mb_avgpool(m, tsl__mb_fmt(pb, "%s.pool", nb), x, 2, 2, 0, 1);
    }
    x = tsl__mb_bn(m, "features.norm5", x, DN_EPS);                   // (N,1024,S/32,S/32)
    x = tsl__mb_relu(m, "features.relu5", x);
    x = tsl_global_avgpool(m->g, "avgpool", x);                       // (N,1024)
    return tsl_linear_layer(m->g, "classifier", x, m->cfg->n_classes, 1);
}
