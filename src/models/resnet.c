/*
 * resnet.c - ResNet-18 (BasicBlock, [2,2,2,2]) and ResNet-50 (Bottleneck,
 * [3,4,6,3]) as torchvision builds them (v1.5: a bottleneck's stride sits on
 * its 3x3 conv). Convolutions have no bias and are followed by batch norm
 * (eps 1e-5, momentum 0.1); stem conv 7x7/2 + max pool 3x3/2 pad 1; global
 * average pool; fc. A block's shortcut is a 1x1 conv + BN ("downsample.0",
 * "downsample.1") when the stride or the channel count changes.
 *
 * Parameter names are torchvision's: conv1, bn1, layer<L>.<B>.conv<k>,
 * layer<L>.<B>.bn<k>, layer<L>.<B>.downsample.{0,1}, fc.
 */
#include "core/assert.h"
#include "models/blocks.h"

#define RESNET_BN_EPS 1e-5f

/* The network downsamples by 32. Its paddings would keep a 1x1 map even for
 * smaller images, but then whole stages see a single pixel; the zoo takes the
 * total stride, 32, as the smallest image. */
int tsl__min_image_resnet(void) { return 32; }

/* conv (no bias) + BN named prefix.conv<k> / prefix.bn<k>. */
static tsl_tid conv_bn(tsl__mb *m, const char *prefix, int k, tsl_tid x, int64_t cout, int ks,
                       int stride) {
    char nb[TSL_NAME_MAX];
    x = tsl__mb_conv(m, tsl__mb_fmt(nb, "%s.conv%d", prefix, k), x, cout, ks, ks, stride,
                     ks / 2, ks / 2, 0);
    return tsl__mb_bn(m, tsl__mb_fmt(nb, "%s.bn%d", prefix, k), x, RESNET_BN_EPS);
}

/* The shortcut of a block: x itself, or 1x1 conv (stride) + BN. */
static tsl_tid shortcut(tsl__mb *m, const char *prefix, tsl_tid x, int64_t cout, int stride) {
    if (stride == 1 && tsl__mb_channels(m, x) == cout) return x;
    char nb[TSL_NAME_MAX];
    x = tsl__mb_conv(m, tsl__mb_fmt(nb, "%s.downsample.0", prefix), x, cout, 1, 1, stride, 0, 0,
                     0);
    return tsl__mb_bn(m, tsl__mb_fmt(nb, "%s.downsample.1", prefix), x, RESNET_BN_EPS);
}

/* relu(residual + shortcut), the block's output. */
static tsl_tid join(tsl__mb *m, const char *prefix, tsl_tid r, tsl_tid sc) {
    char nb[TSL_NAME_MAX];
    tsl_tid y = tsl_add(m->g, tsl__mb_fmt(nb, "%s.add", prefix), r, sc);
    return tsl__mb_relu(m, tsl__mb_fmt(nb, "%s.relu", prefix), y);
}

/* BasicBlock: 3x3 (stride) -> BN -> ReLU -> 3x3 -> BN, + shortcut, ReLU. */
static tsl_tid basic_block(tsl__mb *m, const char *prefix, tsl_tid x, int64_t planes, int stride) {
    char nb[TSL_NAME_MAX];
    tsl_tid r = conv_bn(m, prefix, 1, x, planes, 3, stride);
    r = tsl__mb_relu(m, tsl__mb_fmt(nb, "%s.relu1", prefix), r);
    r = conv_bn(m, prefix, 2, r, planes, 3, 1);
    return join(m, prefix, r, shortcut(m, prefix, x, planes, stride));
}

/* Bottleneck (v1.5): 1x1 -> 3x3 (stride) -> 1x1 (4*planes), BN after each. */
static tsl_tid bottleneck(tsl__mb *m, const char *prefix, tsl_tid x, int64_t planes, int stride) {
    char nb[TSL_NAME_MAX];
    tsl_tid r = conv_bn(m, prefix, 1, x, planes, 1, 1);
    r = tsl__mb_relu(m, tsl__mb_fmt(nb, "%s.relu1", prefix), r);
    r = conv_bn(m, prefix, 2, r, planes, 3, stride);
    r = tsl__mb_relu(m, tsl__mb_fmt(nb, "%s.relu2", prefix), r);
    r = conv_bn(m, prefix, 3, r, 4 * planes, 1, 1);
    return join(m, prefix, r, shortcut(m, prefix, x, 4 * planes, stride));
}

/* x: (N,C,S,S) -> logits (N,classes). depth 18, 34 (basic blocks), 50 or
 * 101 (bottlenecks); a bug otherwise. TSL_NONE once the graph failed. */
tsl_tid tsl__model_resnet(tsl__mb *m, tsl_tid x, int depth) {
    static const int blocks18[4] = {2, 2, 2, 2}, blocks34[4] = {3, 4, 6, 3},
                     blocks101[4] = {3, 4, 23, 3};
    TSL_ASSERT(depth == 18 || depth == 34 || depth == 50 || depth == 101);
    const int *blocks = depth == 18 ? blocks18 : depth == 101 ? blocks101 : blocks34;
    int basic = depth == 18 || depth == 34; /* blocks50 is blocks34 */
    char nb[TSL_NAME_MAX];
    x = tsl__mb_conv(m, "conv1", x, 64, 7, 7, 2, 3, 3, 0);       // (N,64,S/2,S/2)
    x = tsl__mb_relu(m, "relu", tsl__mb_bn(m, "bn1", x, RESNET_BN_EPS));
    x = tsl__mb_maxpool(m, "maxpool", x, 3, 2, 1);              // (N,64,S/4,S/4)
    for (int l = 0; l < 4; l++) {
        int64_t planes = 64 << l;
        for (int b = 0; b < blocks[l]; b++) {
            int stride = (l > 0 && b == 0) ? 2 : 1;
            tsl__mb_fmt(nb, "layer%d.%d", l + 1, b);
            x = basic ? basic_block(m, nb, x, planes, stride)
                      : bottleneck(m, nb, x, planes, stride);
        }
    }
    x = tsl_global_avgpool(m->g, "avgpool", x);                 // (N, 512 or 2048)
    return tsl_linear_layer(m->g, "fc", x, m->cfg->n_classes, 1);
}
