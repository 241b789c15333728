/*
 * blocks.h - what the model zoo's family files share: the builder context,
 * name formatting, the layer helpers every family uses (conv, batch norm,
 * conv+bn+relu, pools, dropout with derived seeds) and the spatial-size
 * arithmetic the configuration checks use. Not part of the public API.
 *
 * A family builder takes the INPUT tensor (N,C,S,S) and returns the logits,
 * (N,classes) or, for unet, (N,classes,S,S); zoo.c adds the label and the
 * loss. Like the graph builders, the helpers return TSL_NONE once the graph
 * has failed, so a family checks nothing until the end.
 */
#ifndef TSL_MODELS_BLOCKS_H
#define TSL_MODELS_BLOCKS_H

#include <stdint.h>

#include "tensile/models.h"
#include "tensile/ops.h"

/* Builder context of one model. */
typedef struct tsl__mb {
    tsl_graph *g;
    const tsl_model_cfg *cfg;
    uint32_t n_dropout; /* dropout layers built so far: the per-layer counter */
} tsl__mb;

/* printf into buf (TSL_NAME_MAX bytes, truncated); returns buf. */
const char *tsl__mb_fmt(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Channels (dimension 1) of x, 0 if x is TSL_NONE. */
int64_t tsl__mb_channels(const tsl__mb *m, tsl_tid x);

/* Convolution with its own params name.weight (and name.bias when bias):
 * kernel kh x kw, stride s in both directions, padding (ph, pw). */
tsl_tid tsl__mb_conv(tsl__mb *m, const char *name, tsl_tid x, int64_t cout, int kh, int kw,
                     int s, int ph, int pw, int bias);

/* Batch norm name.{weight,bias,running_mean,running_var}, momentum 0.1. */
tsl_tid tsl__mb_bn(tsl__mb *m, const char *name, tsl_tid x, float eps);

tsl_tid tsl__mb_relu(tsl__mb *m, const char *name, tsl_tid x);

/* torchvision's BasicConv2d (Inception v3, and timm's Inception v4 unit):
 * prefix.conv (no bias) -> prefix.bn (eps) -> ReLU. */
tsl_tid tsl__mb_conv_bn_relu(tsl__mb *m, const char *prefix, tsl_tid x, int64_t cout, int kh,
                             int kw, int s, int ph, int pw, float eps);

/* Square pools: kernel k, stride s, padding p. */
tsl_tid tsl__mb_maxpool(tsl__mb *m, const char *name, tsl_tid x, int k, int s, int p);
tsl_tid tsl__mb_avgpool(tsl__mb *m, const char *name, tsl_tid x, int k, int s, int p,
                        int count_include_pad);

/* Dropout with probability p; its seed is derived from cfg->seed and the
 * per-layer counter (the n-th dropout of the model gets mix(seed, n)), so a
 * model's masks depend only on the configuration. */
tsl_tid tsl__mb_dropout(tsl__mb *m, const char *name, tsl_tid x, float p);

/* Output size of a window of k with stride s and padding p over `in`
 * (floor, as PyTorch without ceil mode); 0 when the window does not fit. */
int tsl__mb_out_size(int in, int k, int s, int p);

/* ---- family builders: input (N,C,S,S) -> logits ------------------------- */
tsl_tid tsl__model_mlp(tsl__mb *m, tsl_tid x, int variant);
tsl_tid tsl__model_cnn(tsl__mb *m, tsl_tid x, int variant);
tsl_tid tsl__model_vgg(tsl__mb *m, tsl_tid x, int depth);        /* 11, 13, 16, 19 */
tsl_tid tsl__model_resnet(tsl__mb *m, tsl_tid x, int depth);     /* 18, 34, 50, 101 */
tsl_tid tsl__model_inception3(tsl__mb *m, tsl_tid x, int variant);
tsl_tid tsl__model_inception4(tsl__mb *m, tsl_tid x, int variant);
tsl_tid tsl__model_densenet(tsl__mb *m, tsl_tid x, int depth);   /* 121 */
tsl_tid tsl__model_unet(tsl__mb *m, tsl_tid x, int variant);     /* (N,classes,S,S) */

/* ---- smallest accepted image side, derived in each family file --------- */
int tsl__min_image_mlp(void);
int tsl__min_image_cnn(void);
int tsl__min_image_vgg(void);
int tsl__min_image_resnet(void);
int tsl__min_image_inception3(void);
int tsl__min_image_inception4(void);
int tsl__min_image_densenet(void);
int tsl__min_image_unet(void);
#endif
