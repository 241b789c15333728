/*
 * tensile/predict.h - cold start: predicting every op's latency before a job
 * has run one iteration (paper IV-A), so that its first plan needs no
 * vanilla warm-up.
 *
 *   tsl_profile_ops         runs each op type, forward and backward, over a
 *                           grid of shapes and parameters under levels of
 *                           concurrent background load: samples
 *   tsl_op_features         the paper's features of one op: input
 *                           dimensions, op parameters, device utilisation
 *   tsl_predictor_train     per op type, the most accurate of an MLP
 *                           trained with Tensile's own graph, autodiff and
 *                           Adam (log-latency target, normalised features),
 *                           a log-linear fit and a roofline with a fitted
 *                           efficiency, chosen on held-out samples
 *   tsl_predictor_latencies every op of a graph in µs (ops of a type never
 *                           profiled: the device profile's cost model)
 *
 * Files (docs/PREDICTOR.md): samples are a versioned text table
 * ("tensile-op-samples 1"), a predictor a versioned text file
 * ("tensile-predictor 1"); loading checks every field and names the file,
 * the line, the field and the value at fault.
 *
 * Example usage:
 *
 *   tsl_oprof_opts po = tsl_oprof_opts_default();
 *   po.minutes = 0.5;
 *   tsl_op_sample *s; size_t n;
 *   if (tsl_profile_ops(&po, &s, &n) != TSL_OK) die(tsl_last_error());
 *   tsl_predictor *p;
 *   tsl_pred_train_opts to = tsl_pred_train_opts_default();
 *   if (tsl_predictor_train(s, n, &to, &p, NULL) != TSL_OK) die(tsl_last_error());
 *   tsl_predictor_save(p, "profiles/predictor.tsp");
 *   double *us = malloc(sizeof *us * tsl_graph_n_ops(g));
 *   tsl_predictor_latencies(p, g, 0.0, &dev, us);   // the first plan's latencies
 *   tsl_predictor_free(p); free(s);
 */
#ifndef TENSILE_PREDICT_H
#define TENSILE_PREDICT_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/graph.h"
#include "tensile/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- features -------------------------------------------------------------- */

/* Features of one op execution, in this order (dimensions as log(1 + d)):
 *  0 N, 1 C, 2 H, 3 W of the first input (missing dims 0)
 *  4 the first output's axis-1 size (channels, features)
 *  5 kernel size, 6 stride, 7 padding (conv: the weight's KH and attrs;
 *    pool: the window; otherwise 0)
 *  8 log(1 + FLOPs), 9 log(1 + bytes read + written)
 * 10 the number of inputs
 * 11 device utilisation by other work, in [0, 1] */
#define TSL_PRED_NF 12

/* Writes op's features (graph g finalized or not) at utilisation util
 * (clamped to [0, 1]) into f[TSL_PRED_NF]. */
void tsl_op_features(const tsl_graph *g, const tsl_op *op, double util, double f[TSL_PRED_NF]);

/* The machine's CPUs' busy fraction over the next window_ms milliseconds
 * (1..10000), from /proc/stat, in [0, 1]: the utilisation by other work a
 * job on the CPU backend sees before it starts. -1 where /proc/stat cannot
 * be read. Sleeps for the window. */
double tsl_cpu_utilisation(int window_ms);

/* One measured execution. */
typedef struct tsl_op_sample {
    tsl_op_type type;
    double f[TSL_PRED_NF];
    double latency_us;   /* > 0 */
} tsl_op_sample;

/* ---- the samples file --------------------------------------------------------- */

/* Writes n samples to path atomically (a temporary file renamed), with a
 * free-text `source` line (may be NULL). TSL_ERR_IO naming the path. */
tsl_status tsl_samples_save(const char *path, const tsl_op_sample *s, size_t n, const char *source);
/* Reads a samples file (at most 256 MiB, at most 10 million samples).
 * *out (malloc'd, the caller frees it) and *n. TSL_ERR_IO when it cannot be
 * read; TSL_ERR_FORMAT naming the file, the line, the field and the value
 * at fault. */
tsl_status tsl_samples_load(const char *path, tsl_op_sample **out, size_t *n);
/* The same from memory: `name` is what messages call it. */
tsl_status tsl_samples_parse(const char *text, size_t len, const char *name, tsl_op_sample **out,
                             size_t *n);

/* ---- profiling ---------------------------------------------------------------- */

typedef struct tsl_oprof_opts {
    double minutes;      /* time budget, > 0 (default 2); the grid is walked in a seeded
                            random order until it ends or the time is up */
    int nthreads;        /* kernel threads of the probes (default 1, a job's default) */
    int max_load;        /* background load levels 0..max_load busy threads (default: the
                            online CPUs less one, at least 1) */
    int repeats;         /* timed runs per probe; each op keeps its median (default 3) */
    int small;           /* 1: a tiny grid of small shapes (tests; default 0) */
    uint64_t seed;       /* the order of the grid (default 1) */
    /* Called after each probe with the fraction done and what ran; may be NULL. */
    void (*progress)(double done, const char *what, void *user);
    void *user;
} tsl_oprof_opts;

tsl_oprof_opts tsl_oprof_opts_default(void);

/* Runs probe graphs (conv, batch norm, ReLU, pooling, residual add,
 * linear, loss; their backward and Adam's updates) over the grid on the
 * CPU backend's fast kernels with 0..max_load threads of background work
 * beside them (utilisation: the busy threads plus the other processes'
 * load measured with tsl_cpu_utilisation, over the online CPUs, at most 1), and
 * returns every op's samples (*out malloc'd, *n). TSL_ERR_INVALID for bad
 * options (named), TSL_ERR_OOM, or a kernel's error. */
tsl_status tsl_profile_ops(const tsl_oprof_opts *o, tsl_op_sample **out, size_t *n);

/* ---- the predictor ---------------------------------------------------------------- */

typedef enum tsl_pred_kind {
    TSL_PRED_ROOFLINE = 0, /* the cost model's time / a fitted efficiency (median ratio) */
    TSL_PRED_LINEAR,       /* log latency, least squares on the normalised features */
    TSL_PRED_MLP,          /* log latency, the MLP */
    TSL_PRED_KINDS
} tsl_pred_kind;

const char *tsl_pred_kind_name(tsl_pred_kind k);

typedef struct tsl_pred_train_opts {
    int hidden;          /* units per hidden layer (default 32) */
    int layers;          /* hidden layers, 1..4 (default 3: with the output layer, the
                            paper's four-layer MLP) */
    int epochs;          /* passes over the training samples (default 300) */
    int batch;           /* minibatch (default 64) */
    float lr;            /* Adam's learning rate (default 3e-3) */
    double holdout;      /* fraction held out for the choice and the report (default 0.2) */
    uint64_t seed;       /* split, initial weights, shuffling (default 1) */
    const tsl_device_profile *dev; /* the roofline's cost model (NULL: the rough CPU profile) */
    int only;            /* -1: choose the best kind per op type (default); else force a kind */
} tsl_pred_train_opts;

tsl_pred_train_opts tsl_pred_train_opts_default(void);

/* Accuracy on held-out samples of one op type. */
typedef struct tsl_pred_accuracy {
    tsl_op_type type;
    int n_train, n_test;
    double mape[TSL_PRED_KINDS + 1], r2[TSL_PRED_KINDS + 1]; /* per kind; [TSL_PRED_KINDS]:
                                                               the analytic cost model */
    double train_ms[TSL_PRED_KINDS];
    tsl_pred_kind chosen;
    int cost_model_kept;   /* 1: the plain cost model beat every fit, and is kept (as a
                              roofline of efficiency 1) */
} tsl_pred_accuracy;

typedef struct tsl_pred_report {
    int n_types;
    tsl_pred_accuracy acc[TSL_OP_COUNT];
} tsl_pred_report;

typedef struct tsl_predictor tsl_predictor;

/* Trains one model per op type with at least 8 samples: the samples of
 * each type are split (seeded) into training and held-out parts; the
 * three kinds are fitted on the training part and the one with the lowest
 * held-out MAPE / 100 + (1 - R²) is kept (a dearer kind must win by 0.01;
 * the plain cost model, as a roofline of efficiency 1, when it beats them
 * all). *rep (may be NULL) gets the
 * accuracy of every kind and of the cost model. TSL_ERR_INVALID (bad
 * options or no op type with enough samples), TSL_ERR_OOM. */
tsl_status tsl_predictor_train(const tsl_op_sample *s, size_t n, const tsl_pred_train_opts *o,
                               tsl_predictor **out, tsl_pred_report *rep);
void tsl_predictor_free(tsl_predictor *p); /* NULL is fine */

/* The predicted latency in µs of an op of type t with features f (raw, as
 * tsl_op_features), or -1 if t has no model. */
double tsl_predictor_us(const tsl_predictor *p, tsl_op_type t, const double f[TSL_PRED_NF]);
/* 1 if t has a model; *kind (may be NULL) its kind. */
int tsl_predictor_has(const tsl_predictor *p, tsl_op_type t, tsl_pred_kind *kind);

/* us[i] for every op i of finalized g at utilisation util: the model of
 * its type, else dev's cost model (dev NULL: the rough CPU profile). */
void tsl_predictor_latencies(const tsl_predictor *p, const tsl_graph *g, double util,
                             const tsl_device_profile *dev, double *us);

/* Writes p to path atomically. TSL_ERR_IO naming the path. */
tsl_status tsl_predictor_save(const tsl_predictor *p, const char *path);
/* Reads a predictor file (at most 64 MiB): TSL_ERR_IO when it cannot be
 * read, TSL_ERR_FORMAT naming the file, the line, the field and the value
 * at fault (version, op type, kind, sizes, non-finite numbers, counts). */
tsl_status tsl_predictor_load(const char *path, tsl_predictor **out);
tsl_status tsl_predictor_parse(const char *text, size_t len, const char *name,
                               tsl_predictor **out);

/* The default predictor file of this machine: profiles/predictor.tsp under
 * the folder tsl_profile_load searches first (TENSILE_PROFILE_DIR, else
 * ./profiles). Writes at most cap bytes. */
void tsl_predictor_default_path(char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
