/*
 * mlp.c - a three-layer perceptron: flatten -> 512 -> ReLU -> 256 -> ReLU ->
 * classes. Parameters fc1, fc2, fc3 (weight and bias). No published count.
 */
#include "models/blocks.h"

/* Any image of at least one pixel: the input is only flattened. */
int tsl__min_image_mlp(void) { return 1; }

/* x: (N,C,S,S) -> logits (N,classes). TSL_NONE once the graph failed. */
tsl_tid tsl__model_mlp(tsl__mb *m, tsl_tid x, int variant) {
    (void)variant;
    tsl_graph *g = m->g;
    x = tsl_flatten(g, "flatten", x);                        // (N, C*S*S)
    x = tsl_relu(g, "relu1", tsl_linear_layer(g, "fc1", x, 512, 1));
    x = tsl_relu(g, "relu2", tsl_linear_layer(g, "fc2", x, 256, 1));
    return tsl_linear_layer(g, "fc3", x, m->cfg->n_classes, 1); // (N, classes)
}
