/*
 * cnn.c - a LeNet-like network for Fashion-MNIST sized inputs:
 * conv 5x5 32 pad 2 -> ReLU -> maxpool 2 -> conv 5x5 64 pad 2 -> ReLU ->
 * maxpool 2 -> flatten -> linear 512 -> ReLU -> linear classes, with biases.
 * Parameters conv1, conv2, fc1, fc2. No published count.
 */
#include "models/blocks.h"

/* The two 2x2 pools need S >= 4 (then the map is 1x1). */
int tsl__min_image_cnn(void) { return 4; }

/* x: (N,C,S,S) -> logits (N,classes). TSL_NONE once the graph failed. */
tsl_tid tsl__model_cnn(tsl__mb *m, tsl_tid x, int variant) {
    (void)variant;
    tsl_graph *g = m->g;
    x = tsl__mb_conv(m, "conv1", x, 32, 5, 5, 1, 2, 2, 1);        // (N,32,S,S)
    x = tsl__mb_maxpool(m, "pool1", tsl__mb_relu(m, "relu1", x), 2, 2, 0); // (N,32,S/2,S/2)
    x = tsl__mb_conv(m, "conv2", x, 64, 5, 5, 1, 2, 2, 1);
    x = tsl__mb_maxpool(m, "pool2", tsl__mb_relu(m, "relu2", x), 2, 2, 0); // (N,64,S/4,S/4)
    x = tsl_flatten(g, "flatten", x);
    x = tsl_relu(g, "relu3", tsl_linear_layer(g, "fc1", x, 512, 1));
    return tsl_linear_layer(g, "fc2", x, m->cfg->n_classes, 1);  // (N, classes)
}
