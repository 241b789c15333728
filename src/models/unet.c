/*
 * unet.c - U-Net (Ronneberger, Fischer and Brox 2015) with padding 1, so
 * every 3x3 convolution keeps the size and the output map equals the input
 * (the paper's unpadded network crops its skips instead). Five levels of
 * 64-128-256-512-1024 channels, each two 3x3 conv (with bias, no batch norm)
 * + ReLU; 2x2 max pools going down; going up a 2x2 stride-2 transposed conv
 * (with bias) halving the channels, concatenated after the skip of the same
 * level ([skip, up] on the channel axis), then two 3x3 conv + ReLU; a final
 * 1x1 conv to the classes. The loss is a per-pixel softmax cross-entropy
 * against a (N,H,W) label.
 *
 * torchvision has no U-Net, so the names are the zoo's own: enc<l>.conv<k>
 * (l = 1..5, 5 the bottom), up<l>.weight/.bias (the transposed conv that
 * lands on level l), dec<l>.conv<k>, outc.
 *
 * The image side must be a multiple of 16 (four pools, and each transposed
 * conv must double back to exactly the skip's size).
 */
#include "models/blocks.h"

#define UNET_LEVELS 5

/* Smallest side: 16 (bottom map 1x1). Sides must also be multiples of 16. */
int tsl__min_image_unet(void) { return 16; }

/* Two 3x3 conv (pad 1, bias) + ReLU named prefix.conv1, prefix.conv2. */
static tsl_tid double_conv(tsl__mb *m, const char *prefix, tsl_tid x, int64_t c) {
    char nb[TSL_NAME_MAX];
    x = tsl__mb_conv(m, tsl__mb_fmt(nb, "%s.conv1", prefix), x, c, 3, 3, 1, 1, 1, 1);
    x = tsl__mb_relu(m, tsl__mb_fmt(nb, "%s.relu1", prefix), x);
    x = tsl__mb_conv(m, tsl__mb_fmt(nb, "%s.conv2", prefix), x, c, 3, 3, 1, 1, 1, 1);
    return tsl__mb_relu(m, tsl__mb_fmt(nb, "%s.relu2", prefix), x);
}

/* 2x2 stride-2 transposed conv cin -> cout with params prefix.weight
 * (Cin,Cout,2,2) KAIMING_NORMAL and prefix.bias ZERO: doubles H and W. */
static tsl_tid up_conv(tsl__mb *m, const char *prefix, tsl_tid x, int64_t cout) {
    char nb[TSL_NAME_MAX];
    int64_t cin = tsl__mb_channels(m, x);
    if (cin <= 0) return TSL_NONE;
    tsl_tid w = tsl_param(m->g, tsl__mb_fmt(nb, "%s.weight", prefix), TSL_SHAPE(cin, cout, 2, 2),
                          TSL_INIT_KAIMING_NORMAL);
    tsl_tid b = tsl_param(m->g, tsl__mb_fmt(nb, "%s.bias", prefix), TSL_SHAPE(cout), TSL_INIT_ZERO);
    return tsl_conv2d_transpose(m->g, prefix, x, w, b, tsl_conv_sp(2, 0));
}

/* x: (N,C,S,S), S a multiple of 16 (checked by the zoo) -> logits
 * (N,classes,S,S). TSL_NONE once the graph failed. */
tsl_tid tsl__model_unet(tsl__mb *m, tsl_tid x, int variant) {
    (void)variant;
    char nb[TSL_NAME_MAX], pb[TSL_NAME_MAX];
    tsl_tid skip[UNET_LEVELS];
    for (int l = 1; l <= UNET_LEVELS; l++) {                   // level l: 64 << (l-1) channels
        if (l > 1) x = tsl__mb_maxpool(m, tsl__mb_fmt(nb, "pool%d", l - 1), x, 2, 2, 0);
        x = double_conv(m, tsl__mb_fmt(pb, "enc%d", l), x, 64 << (l - 1)); // (N,c,S/2^(l-1),..)
        skip[l - 1] = x;
    }
    for (int l = UNET_LEVELS - 1; l >= 1; l--) {
        int64_t c = 64 << (l - 1);
        tsl_tid u = up_conv(m, tsl__mb_fmt(pb, "up%d", l), x, c);  // (N,c,2h,2w)
        tsl_tid parts[2] = {skip[l - 1], u};
        x = tsl_concat(m->g, tsl__mb_fmt(nb, "cat%d", l), parts, 2); // (N,2c,..)
        x = double_conv(m, tsl__mb_fmt(pb, "dec%d", l), x, c);
    }
    return tsl__mb_conv(m, "outc", x, m->cfg->n_classes, 1, 1, 1, 0, 0, 1); // (N,K,S,S)
}
