/*
 * latency.c - per-op latency tables from measured kernel times
 * (tensile/job.h): what a job's first plan is made from when vanilla's
 * iterations were measured.
 */
#include <stdlib.h>
#include <string.h>

#include "tensile/job.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

tsl_status tsl_job_latency_medians(const double *ms, int64_t n_iter, int32_t n_ops, double *us) {
    if (n_iter < 1 || n_ops < 0)
        return tsl_fail(TSL_ERR_INVALID, "latency medians: %lld iterations of %d ops",
                        (long long)n_iter, n_ops);
    int64_t first = n_iter > 1 ? 1 : 0, n = n_iter - first;
    double *col = malloc(sizeof *col * (size_t)n);
    if (!col) return tsl_fail(TSL_ERR_OOM, "latency medians: out of host memory");
    for (int32_t i = 0; i < n_ops; i++) {
        for (int64_t k = 0; k < n; k++) col[k] = ms[(size_t)(first + k) * (size_t)n_ops + (size_t)i];
        qsort(col, (size_t)n, sizeof *col, cmp_double);
        double med = n % 2 ? col[n / 2] : 0.5 * (col[n / 2 - 1] + col[n / 2]);
        us[i] = med * 1e3;
        if (!(us[i] > 0)) us[i] = 0.001;
    }
    free(col);
    return TSL_OK;
}
