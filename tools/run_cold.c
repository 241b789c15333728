/*
 * run_cold.c - see run_cold.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_cold.h"

tsl_predictor *cold_load(const char *path, char *used, size_t cap) {
    char def[1024];
    if (!path) {
        tsl_predictor_default_path(def, sizeof def);
        path = def;
    }
    snprintf(used, cap, "%s", path);
    tsl_predictor *p;
    if (tsl_predictor_load(path, &p) == TSL_OK) return p;
    fprintf(stderr, "tensile run: --predictor: %s\n", tsl_last_error());
    if (path == def && access(path, F_OK) != 0)
        fprintf(stderr, "tensile run: --cold-start plans from predicted latencies: make the "
                        "predictor with 'tensile profile' (docs/PREDICTOR.md), or give "
                        "--predictor FILE\n");
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void phase(const double *ms, const size_t *fp, int64_t first, int64_t n, cold_phase *p) {
    memset(p, 0, sizeof *p);
    p->first = first;
    p->n = n;
    if (n <= 0) return;
    int64_t from = first == 0 && n > 1 ? 1 : first; /* the run's cold first iteration out */
    int64_t k = first + n - from;
    double *v = malloc(sizeof *v * (size_t)k);
    if (v) {
        memcpy(v, ms + from, sizeof *v * (size_t)k);
        qsort(v, (size_t)k, sizeof *v, cmp_double);
        p->iter_ms = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
        free(v);
    }
    for (int64_t i = first; i < first + n; i++)
        if (fp[i] > p->footprint) p->footprint = fp[i];
}

void cold_phases(const double *ms, const size_t *fp, const int64_t *installs, int64_t n,
                 cold_report *r) {
    int64_t cs = 0;
    while (cs < n && installs[cs] == installs[0]) cs++;
    phase(ms, fp, 0, cs, &r->cs);
    phase(ms, fp, cs, n - cs, &r->up);
    r->first_ms = n > 0 ? ms[0] : 0;
}

static void ratios(cold_phase *p, double van_ms, size_t van_fp) {
    if (p->n <= 0) return;
    p->msr = van_fp ? 1.0 - (double)p->footprint / (double)van_fp : 0;
    p->eor = van_ms > 0 ? p->iter_ms / van_ms : 0;
    p->cbr = p->eor > 0 ? p->msr / p->eor : 0;
}

void cold_finish(cold_report *r, double van_iter_ms, size_t van_fp, double van_first_ms) {
    ratios(&r->cs, van_iter_ms, van_fp);
    ratios(&r->up, van_iter_ms, van_fp);
    r->vanilla_first_ms = van_first_ms;
    r->first_eor = van_first_ms > 0 ? r->first_ms / van_first_ms : 0;
    r->first_eor_with_predict = van_first_ms > 0 ? (r->first_ms + r->predict_ms) / van_first_ms : 0;
}

void cold_print(const cold_report *r) {
    printf("cold start: first plan from predicted latencies (%s, utilisation %.2f, %.3f ms to "
           "predict)\n",
           r->predictor, r->utilisation, r->predict_ms);
    printf("%-24s %10s %10s %8s %8s %8s\n", "phase", "iterations", "iter ms", "MSR", "EOR", "CBR");
    const cold_phase *ph[2] = {&r->cs, &r->up};
    const char *names[2] = {"TENSILE_cs (predicted)", "TENSILE_up (updated)"};
    for (int i = 0; i < 2; i++) {
        if (ph[i]->n <= 0) {
            printf("%-24s %10s\n", names[i], "none");
            continue;
        }
        printf("%-24s %4lld-%-5lld %10.2f %8.4f %8.4f %8.4f\n", names[i],
               (long long)ph[i]->first + 1, (long long)(ph[i]->first + ph[i]->n), ph[i]->iter_ms,
               ph[i]->msr, ph[i]->eor, ph[i]->cbr);
    }
    printf("first iteration: %.2f ms vs vanilla's first %.2f ms: EOR %.4f (%.4f with the "
           "prediction's time)\n",
           r->first_ms, r->vanilla_first_ms, r->first_eor, r->first_eor_with_predict);
    if (r->updated)
        printf("update: %s\n", r->update_reason);
}

static json_t *phase_json(const cold_phase *p) {
    json_t *o = json_object();
    json_object_set_new(o, "msr", json_real(p->msr));
    json_object_set_new(o, "eor", json_real(p->eor));
    json_object_set_new(o, "cbr", json_real(p->cbr));
    json_object_set_new(o, "iterations", json_integer(p->n));
    json_object_set_new(o, "first_iteration", json_integer(p->first + 1));
    json_object_set_new(o, "iter_ms", json_real(p->iter_ms));
    json_object_set_new(o, "footprint_bytes", json_integer((json_int_t)p->footprint));
    return o;
}

void cold_json(const cold_report *r, json_t *o) {
    json_object_set_new(o, "predictor", json_string(r->predictor));
    json_object_set_new(o, "predict_ms", json_real(r->predict_ms));
    json_object_set_new(o, "utilisation", json_real(r->utilisation));
    json_object_set_new(o, "first_iteration_ms", json_real(r->first_ms));
    json_object_set_new(o, "vanilla_first_iteration_ms", json_real(r->vanilla_first_ms));
    json_object_set_new(o, "first_iteration_eor", json_real(r->first_eor));
    json_object_set_new(o, "first_iteration_eor_with_prediction", json_real(r->first_eor_with_predict));
    json_object_set_new(o, "update_iteration", json_integer(r->updated_at));
    json_object_set_new(o, "updated", json_boolean(r->updated > 0));
    json_object_set_new(o, "update_reason", json_string(r->update_reason));
    json_t *ph = json_object();
    json_object_set_new(ph, "cs", phase_json(&r->cs));
    json_object_set_new(ph, "up", phase_json(&r->up));
    json_object_set_new(o, "phases", ph);
}
