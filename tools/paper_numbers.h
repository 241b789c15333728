/*
 * paper_numbers.h - the seed papers' own numbers, transcribed from their
 * text (../shared/seeds/), for `tensile bench paper` to print beside
 * Tensile's. Each table carries its citation (paper, section, table).
 * Figures whose numbers the text does not give (TENSILE's Figs. 6 and 7,
 * MO-SOS's Fig. 4) have no entries: their rows say so, and MO-SOS's
 * averages quoted in its text are in pn_mosos_text.
 *
 * Models are named as in the zoo (tensile info): the paper's VGG-16 is
 * vgg16, DenseNet densenet121, and so on; methods by the policy that
 * implements them ("vdnn-conv" for the TENSILE paper's vDNN, which is
 * vDNN-conv: section V-A, "Baselines").
 */
#ifndef TSL_TOOLS_PAPER_NUMBERS_H
#define TSL_TOOLS_PAPER_NUMBERS_H

/* MSR, EOR, CBR of one method on one model (TENSILE's Tables III, IV). */
typedef struct pn_metrics {
    const char *model;  /* zoo name; "five models" for Table IV */
    const char *method; /* policy name */
    double msr, eor, cbr;
} pn_metrics;

/* SmartPool's Table I and AutoSwap's Table II, per model (batch 100). */
typedef struct pn_smartpool {
    const char *model;            /* zoo name, e.g. "resnet34" */
    double load_mb;               /* memory load (MB) */
    double cnmem_ratio, smartpool_ratio;
    double reduced_mb, reduction_pct; /* Table II: load without overhead, reduction */
} pn_smartpool;

/* TENSILE's Table II: the first iteration's EOR, the prediction's cost (s)
 * and its EOR (-1 where the paper has none: Capuchin). */
typedef struct pn_first_iter {
    const char *model, *method;
    double eor, predict_s, predict_eor;
} pn_first_iter;

extern const char pn_cite_tensile_t1[], pn_cite_tensile_t2[], pn_cite_tensile_t3[], pn_cite_tensile_t4[], pn_cite_tensile_f6[],
    pn_cite_tensile_f7[], pn_cite_smartpool_t1[], pn_cite_autoswap_t2[], pn_cite_mosos_f4[],
    pn_mosos_text[];

/* The row of TENSILE's Table III for (model, method), or NULL. */
const pn_metrics *pn_tensile_table3(const char *model, const char *method);
/* The row of TENSILE's Table I for (model, phase): phase "tensile" (the
 * whole run), "tensile_cs" or "tensile_up"; NULL if none. */
const pn_metrics *pn_tensile_table1(const char *model, const char *phase);
/* The row of TENSILE's Table II for (model, method "tensile" or
 * "capuchin"), or NULL. */
const pn_first_iter *pn_tensile_table2(const char *model, const char *method);
/* The row of TENSILE's Table IV for method, or NULL. */
const pn_metrics *pn_tensile_table4(const char *method);
/* SmartPool's Tables I and II for `model` (resnet18/34/50/101,
 * vgg11/13/16/19), or NULL. */
const pn_smartpool *pn_smartpool_model(const char *model);
/* The eight models of SmartPool's Tables I and II, in the papers' order,
 * NULL-terminated. */
extern const char *const pn_smartpool_models[];
#endif
