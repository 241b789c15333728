/*
 * vgg.c - VGG 11, 16 and 19 as torchvision builds them without batch norm
 * (configurations A, D and E of Simonyan and Zisserman): 3x3 convolutions
 * with bias and padding 1, each followed by a ReLU, 2x2 max pools, then the
 * classifier Linear(512*s*s, 4096) -> ReLU -> Dropout(0.5) ->
 * Linear(4096, 4096) -> ReLU -> Dropout(0.5) -> Linear(4096, classes).
 *
 * Parameter names are torchvision's: features.<i>.weight where i counts the
 * conv, ReLU and pool modules of the Sequential, classifier.0/3/6.
 *
 * Input size: torchvision puts an adaptive 7x7 average pool before the
 * classifier. At 224 the feature map is already 7x7 and that pool is the
 * identity, so it is left out; at other sizes S the classifier reads the
 * flattened 512 x (S/32) x (S/32) map directly (s = floor(S/32), no adaptive
 * pool), so the first linear layer's size follows the image.
 */
#include "core/assert.h"
#include "models/blocks.h"

#define VGG_POOL (-1)

/* Layer tables: output channels of each conv, VGG_POOL for a 2x2 max pool. */
static const int cfg_a[] = {64, VGG_POOL, 128, VGG_POOL, 256, 256, VGG_POOL, 512, 512, VGG_POOL,
                            512, 512, VGG_POOL};
static const int cfg_b[] = {64, 64, VGG_POOL, 128, 128, VGG_POOL, 256, 256, VGG_POOL,
                            512, 512, VGG_POOL, 512, 512, VGG_POOL};
static const int cfg_d[] = {64, 64, VGG_POOL, 128, 128, VGG_POOL, 256, 256, 256, VGG_POOL,
                            512, 512, 512, VGG_POOL, 512, 512, 512, VGG_POOL};
static const int cfg_e[] = {64, 64, VGG_POOL, 128, 128, VGG_POOL, 256, 256, 256, 256, VGG_POOL,
                            512, 512, 512, 512, VGG_POOL, 512, 512, 512, 512, VGG_POOL};

/* Five 2x2 pools without padding: S >= 32 keeps a 1x1 map. */
int tsl__min_image_vgg(void) { return 32; }

/* x: (N,C,S,S) -> logits (N,classes). depth is 11, 13, 16 or 19 (a bug
 * otherwise). TSL_NONE once the graph failed. */
tsl_tid tsl__model_vgg(tsl__mb *m, tsl_tid x, int depth) {
    const int *cfg;
    int n;
    switch (depth) {
    case 11: cfg = cfg_a; n = (int)(sizeof cfg_a / sizeof *cfg_a); break;
    case 13: cfg = cfg_b; n = (int)(sizeof cfg_b / sizeof *cfg_b); break;
    case 16: cfg = cfg_d; n = (int)(sizeof cfg_d / sizeof *cfg_d); break;
    case 19: cfg = cfg_e; n = (int)(sizeof cfg_e / sizeof *cfg_e); break;
    default: TSL_ASSERT(!"vgg depth must be 11, 13, 16 or 19"); return TSL_NONE;
    }
    tsl_graph *g = m->g;
    char nb[TSL_NAME_MAX];
    int idx = 0; /* module index inside torchvision's `features` Sequential */
    for (int i = 0; i < n; i++) {
        if (cfg[i] == VGG_POOL) {
            x = tsl__mb_maxpool(m, tsl__mb_fmt(nb, "features.%d", idx++), x, 2, 2, 0);
            continue;
        }
        x = tsl__mb_conv(m, tsl__mb_fmt(nb, "features.%d", idx++), x, cfg[i], 3, 3, 1, 1, 1, 1);
        x = tsl__mb_relu(m, tsl__mb_fmt(nb, "features.%d", idx++), x);
    }
    x = tsl_flatten(g, "flatten", x);                            // (N, 512*s*s)
    x = tsl_linear_layer(g, "classifier.0", x, 4096, 1);
    x = tsl__mb_relu(m, "classifier.1", x);
    x = tsl__mb_dropout(m, "classifier.2", x, 0.5f);
    x = tsl_linear_layer(g, "classifier.3", x, 4096, 1);
    x = tsl__mb_relu(m, "classifier.4", x);
    x = tsl__mb_dropout(m, "classifier.5", x, 0.5f);
    return tsl_linear_layer(g, "classifier.6", x, m->cfg->n_classes, 1); // (N, classes)
}
