/*
 * tensile/models.h - the model zoo.
 *
 * Each builder adds the forward pass and the loss of one model to an empty
 * graph: an INPUT named "input" (N,C,H,W), a LABEL named "label" (N) (for
 * unet: (N,H,W), per-pixel classes), and returns the scalar loss. Parameter
 * names follow torchvision's where a torchvision model exists
 * ("layer1.0.conv1.weight"), so that counts and checkpoints can be compared.
 *
 * Example usage:
 *
 *   tsl_model_cfg cfg = tsl_model_cfg_default("resnet50");  // 224, 3, 1000
 *   cfg.batch = 16;
 *   tsl_graph *g = tsl_graph_new("resnet50");
 *   tsl_tid loss;
 *   if (tsl_model_build(g, "resnet50", &cfg, &loss) != TSL_OK) die(tsl_last_error());
 *   tsl_graph_backward(g, loss); ...
 */
#ifndef TENSILE_MODELS_H
#define TENSILE_MODELS_H

#include "tensile/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsl_model_cfg {
    int batch;
    int image_size;     /* H = W */
    int in_channels;
    int n_classes;
    uint64_t seed;      /* dropout masks */
} tsl_model_cfg;

/* The model's customary shape: 224x224x3 and 1000 classes (299 for the
 * Inceptions; 28x28x1 and 10 classes for mlp and cnn), batch 16. Unknown
 * names get the 224 defaults. */
tsl_model_cfg tsl_model_cfg_default(const char *model);

/* Builds `model` into g. Errors: unknown model (the message lists the known
 * ones), or a configuration the model cannot take (an image too small for
 * its downsampling), naming the field and value. */
tsl_status tsl_model_build(tsl_graph *g, const char *model, const tsl_model_cfg *cfg,
                           tsl_tid *loss);

/* NULL-terminated list of the model names, in a fixed order. */
const char *const *tsl_model_names(void);

/* Published parameter count at the default shape (ImageNet size, 1000
 * classes), or -1 where there is no published figure (mlp, cnn). */
int64_t tsl_model_published_params(const char *model);

#ifdef __cplusplus
}
#endif
#endif
