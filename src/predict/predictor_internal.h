/*
 * predictor_internal.h - the predictor's storage, shared by its files:
 * predictor.c (inference), train.c (fitting and choice), mlp_train.c (the
 * MLP trained through Tensile's graph), predictor_file.c (save and load).
 */
#ifndef TSL_PREDICT_PREDICTOR_INTERNAL_H
#define TSL_PREDICT_PREDICTOR_INTERNAL_H
#include <stdint.h>
#include "tensile/predict.h"

#define TSL__PRED_MAX_LAYERS 5   /* hidden layers + the output layer */
#define TSL__PRED_MAX_HIDDEN 256

/* One op type's model. Inputs are normalised x = (f - mu) / sd; the MLP and
 * the linear fit predict y = (log(us) - ymu) / ysd. */
typedef struct tsl__pmodel {
    int present;
    tsl_pred_kind kind;
    double mu[TSL_PRED_NF], sd[TSL_PRED_NF];
    double ymu, ysd;
    /* MLP: n_layers dense layers, ReLU between them; layer l maps width[l]
     * inputs to width[l+1] outputs, w[l] transposed: (in, out), element
     * [i * out + o] is the weight of input i in output o (so that inference
     * runs along contiguous rows; the file holds them row-major (out, in)),
     * b[l] (out). */
    int n_layers;
    int width[TSL__PRED_MAX_LAYERS + 1];
    double *w[TSL__PRED_MAX_LAYERS], *b[TSL__PRED_MAX_LAYERS];
    /* linear: y = lin[0..NF) . x + lin[NF] */
    double lin[TSL_PRED_NF + 1];
    /* roofline: us = cost(f) * exp(roof[0] + roof[1] * util) */
    double roof[2];
} tsl__pmodel;

struct tsl_predictor {
    double flops, mem_bw, launch_us; /* the roofline's cost model (a device profile's) */
    tsl__pmodel m[TSL_OP_COUNT];
};

void tsl__pmodel_clear(tsl__pmodel *m);  /* frees the MLP's arrays, zeroes */
/* Normalised inputs of raw features f. */
void tsl__pmodel_norm(const tsl__pmodel *m, const double *f, double *x);
/* The cost model's µs from raw features (FLOPs and bytes are features 8, 9). */
double tsl__pred_cost_us(const tsl_predictor *p, const double *f);
/* The prediction of kind k of model m (µs), whatever m->kind. */
double tsl__pmodel_us(const tsl_predictor *p, const tsl__pmodel *m, tsl_pred_kind k,
                      const double *f);

/* Trains m's MLP (m->mu, sd, ymu, ysd set) on n normalised inputs x (n x
 * NF) and targets y with a graph of Tensile's own ops: linear layers and
 * ReLUs, MSE, autodiff's backward and Adam's updates, run on a CPU
 * backend op by op. Sets m->n_layers, width, w, b. TSL_ERR_OOM, or a
 * kernel's error. */
tsl_status tsl__mlp_train(tsl__pmodel *m, const double *x, const double *y, int n,
                          const tsl_pred_train_opts *o);
#endif
