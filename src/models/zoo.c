/*
 * zoo.c - the model table: names, default configurations, published
 * parameter counts, configuration checks and tsl_model_build.
 *
 * Default configurations (tsl_model_cfg_default): batch 16, seed 0 and
 *   mlp, cnn          28x28x1, 10 classes (Fashion-MNIST)
 *   inception3/4      299x299x3, 1000 classes
 *   unet              256x256x3, 2 classes (a binary segmentation; its
 *                     published count is for the paper's 1 input channel
 *                     and 2 classes, see tsl_model_published_params)
 *   everything else   224x224x3, 1000 classes (unknown names too)
 *
 * Published counts are for 1000 classes, 3 input channels at ImageNet size
 * (the count does not depend on the size for these models, except VGG whose
 * first classifier layer reads 512*(S/32)^2 features: 224 gives torchvision's
 * 512*7*7). unet: 1 input channel, 2 classes.
 */
#include <stdio.h>
#include <string.h>

#include "core/assert.h"
#include "models/blocks.h"

/* The names, in the fixed order of tsl_model_names; zoo[i] describes
 * names[i]. */
static const char *const names[] = {"mlp",        "cnn",        "vgg11",      "vgg16",
                                    "vgg19",      "resnet18",   "resnet50",   "inception3",
                                    "inception4", "densenet121", "unet",      "vgg13",
                                    "resnet34",   "resnet101",  NULL};

typedef struct zoo_entry {
    tsl_tid (*build)(tsl__mb *m, tsl_tid x, int variant);
    int variant;
    int (*min_image)(void);
    int image_multiple; /* the side must be a multiple of this (unet: 16) */
    int per_pixel;      /* label (N,H,W) and per-pixel loss */
    int64_t published;  /* -1: none */
    int def_image, def_channels, def_classes;
} zoo_entry;

static const zoo_entry zoo[] = {
    /* mlp */ {tsl__model_mlp, 0, tsl__min_image_mlp, 1, 0, -1, 28, 1, 10},
    /* cnn */ {tsl__model_cnn, 0, tsl__min_image_cnn, 1, 0, -1, 28, 1, 10},
    /* vgg11 */ {tsl__model_vgg, 11, tsl__min_image_vgg, 1, 0, 132863336, 224, 3, 1000},
    /* vgg16 */ {tsl__model_vgg, 16, tsl__min_image_vgg, 1, 0, 138357544, 224, 3, 1000},
    /* vgg19 */ {tsl__model_vgg, 19, tsl__min_image_vgg, 1, 0, 143667240, 224, 3, 1000},
    /* resnet18 */ {tsl__model_resnet, 18, tsl__min_image_resnet, 1, 0, 11689512, 224, 3, 1000},
    /* resnet50 */ {tsl__model_resnet, 50, tsl__min_image_resnet, 1, 0, 25557032, 224, 3, 1000},
    /* inception3: torchvision Inception3 without the auxiliary head */
    {tsl__model_inception3, 0, tsl__min_image_inception3, 1, 0, 23834568, 299, 3, 1000},
    /* inception4: timm inception_v4 */
    {tsl__model_inception4, 0, tsl__min_image_inception4, 1, 0, 42679816, 299, 3, 1000},
    /* densenet121 */ {tsl__model_densenet, 121, tsl__min_image_densenet, 1, 0, 7978856, 224, 3,
                       1000},
    /* unet: derived from the architecture in unet.c (1 input channel, 2
     * classes): 31,030,658. The figure often quoted for padded
     * re-implementations, 31,031,685, is 1,027 higher and matches no
     * variant of this network; tests/test_models.c shows the derivation. */
    {tsl__model_unet, 0, tsl__min_image_unet, 16, 1, 31030658, 256, 3, 2},
    /* vgg13, resnet34, resnet101: SmartPool's and AutoSwap's Tables I and
     * II (issue 11); appended so that the older models keep their places */
    /* vgg13 */ {tsl__model_vgg, 13, tsl__min_image_vgg, 1, 0, 133047848, 224, 3, 1000},
    /* resnet34 */ {tsl__model_resnet, 34, tsl__min_image_resnet, 1, 0, 21797672, 224, 3, 1000},
    /* resnet101 */ {tsl__model_resnet, 101, tsl__min_image_resnet, 1, 0, 44549160, 224, 3,
                     1000},
};
#define ZOO_N ((int)(sizeof zoo / sizeof *zoo))
_Static_assert(sizeof names / sizeof *names == sizeof zoo / sizeof *zoo + 1,
               "one zoo entry per model name");

/* Index of `model` in names[], -1 if unknown or NULL. */
static int find(const char *model) {
    if (!model) return -1;
    for (int i = 0; i < ZOO_N; i++)
        if (strcmp(names[i], model) == 0) return i;
    return -1;
}

const char *const *tsl_model_names(void) { return names; }

tsl_model_cfg tsl_model_cfg_default(const char *model) {
    tsl_model_cfg c = {.batch = 16, .image_size = 224, .in_channels = 3, .n_classes = 1000,
                       .seed = 0};
    int i = find(model);
    if (i >= 0) {
        const zoo_entry *e = &zoo[i];
        c.image_size = e->def_image;
        c.in_channels = e->def_channels;
        c.n_classes = e->def_classes;
    }
    return c;
}

int64_t tsl_model_published_params(const char *model) {
    int i = find(model);
    return i >= 0 ? zoo[i].published : -1;
}

/* "mlp, cnn, ..." into buf. */
static const char *known_list(char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < ZOO_N && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, i ? ", %s" : "%s", names[i]);
    return buf;
}

/* Upper bounds that keep every tensor's element count far inside int64 and
 * reject garbage values with a message rather than an absurd graph. */
#define ZOO_MAX_BATCH (1 << 20)
#define ZOO_MAX_IMAGE (1 << 15)
#define ZOO_MAX_CHANNELS (1 << 16)
#define ZOO_MAX_CLASSES (1 << 24)

/* Checks cfg against model e. TSL_OK, or TSL_ERR_INVALID with a message
 * naming the model, the field, its value and the accepted range. */
static tsl_status check_cfg(const char *name, const zoo_entry *e, const tsl_model_cfg *cfg) {
    if (cfg->batch < 1 || cfg->batch > ZOO_MAX_BATCH)
        return tsl_fail(TSL_ERR_INVALID, "model '%s': cfg.batch = %d must be in [1, %d]", name,
                        cfg->batch, ZOO_MAX_BATCH);
    if (cfg->in_channels < 1 || cfg->in_channels > ZOO_MAX_CHANNELS)
        return tsl_fail(TSL_ERR_INVALID, "model '%s': cfg.in_channels = %d must be in [1, %d]",
                        name, cfg->in_channels, ZOO_MAX_CHANNELS);
    if (cfg->n_classes < 1 || cfg->n_classes > ZOO_MAX_CLASSES)
        return tsl_fail(TSL_ERR_INVALID, "model '%s': cfg.n_classes = %d must be in [1, %d]",
                        name, cfg->n_classes, ZOO_MAX_CLASSES);
    int min = e->min_image();
    if (cfg->image_size < min)
        return tsl_fail(TSL_ERR_INVALID,
                        "model '%s': cfg.image_size = %d is too small for its downsampling; "
                        "the minimum is %d",
                        name, cfg->image_size, min);
    if (cfg->image_size > ZOO_MAX_IMAGE)
        return tsl_fail(TSL_ERR_INVALID, "model '%s': cfg.image_size = %d exceeds the maximum %d",
                        name, cfg->image_size, ZOO_MAX_IMAGE);
    if (cfg->image_size % e->image_multiple != 0)
        return tsl_fail(TSL_ERR_INVALID,
                        "model '%s': cfg.image_size = %d must be a multiple of %d "
                        "(its pools and transposed convs halve and double the map)",
                        name, cfg->image_size, e->image_multiple);
    return TSL_OK;
}

/* Preconditions: g, cfg and loss are not NULL (bugs otherwise). Errors,
 * each with a message: unknown model (lists the known ones), a graph that is
 * not empty or already failed, a bad configuration (check_cfg), or a
 * builder error (the graph's own message). *loss is TSL_NONE on failure. */
tsl_status tsl_model_build(tsl_graph *g, const char *model, const tsl_model_cfg *cfg,
                           tsl_tid *loss) {
    TSL_ASSERT(g && cfg && loss);
    *loss = TSL_NONE;
    int idx = find(model);
    if (idx < 0) {
        char known[512];
        return tsl_fail(TSL_ERR_INVALID, "unknown model '%s' (known models: %s)",
                        model ? model : "(null)", known_list(known, sizeof known));
    }
    const zoo_entry *e = &zoo[idx];
    const char *name = names[idx];
    tsl_status st = check_cfg(name, e, cfg);
    if (st != TSL_OK) return st;
    if (tsl_graph_status(g) != TSL_OK)
        return tsl_fail(tsl_graph_status(g), "model '%s': graph '%s' has already failed",
                        name, tsl_graph_name(g));
    if (tsl_graph_n_tensors(g) != 0)
        return tsl_fail(TSL_ERR_INVALID,
                        "model '%s': graph '%s' is not empty (%d tensors); build a model into a "
                        "new graph",
                        name, tsl_graph_name(g), (int)tsl_graph_n_tensors(g));

    tsl__mb m = {.g = g, .cfg = cfg, .n_dropout = 0};
    int64_t n = cfg->batch, s = cfg->image_size;
    tsl_tid x = tsl_input(g, "input", TSL_SHAPE(n, cfg->in_channels, s, s)); // (N,C,S,S)
    tsl_tid y = e->per_pixel ? tsl_label(g, "label", TSL_SHAPE(n, s, s))     // (N,S,S)
                             : tsl_label(g, "label", TSL_SHAPE(n));          // (N)
    tsl_tid logits = e->build(&m, x, e->variant);
    tsl_tid l = tsl_softmax_xent(g, "loss", logits, y);
    st = tsl_graph_status(g);
    if (st != TSL_OK) return st; /* the builder recorded the message */
    TSL_ASSERT(l != TSL_NONE);
    *loss = l;
    return TSL_OK;
}
