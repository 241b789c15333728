/* helpers.c - see helpers.h. */
#include "helpers.h"
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void th_dir_names(const char *dir, char *buf, size_t n) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot read folder %s", dir);
    buf[0] = '\0';
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            strncat(buf, e->d_name, n - strlen(buf) - 2);
            strcat(buf, " ");
        }
    closedir(d);
}

uint64_t th_splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void th_fill_bytes(void *p, size_t n, uint64_t seed) {
    uint8_t *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = th_splitmix64(&seed);
        memcpy(b + i, &v, 8);
    }
    uint64_t v = th_splitmix64(&seed);
    for (; i < n; i++, v >>= 8) b[i] = (uint8_t)v;
}

double th_uniform(uint64_t *state, double lo, double hi) {
    return lo + (hi - lo) * ((double)(th_splitmix64(state) >> 11) * 0x1.0p-53);
}

void th_fill_f32(float *x, size_t n, uint64_t seed, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = (float)th_uniform(&seed, lo, hi);
}

void th_fill_f64(double *x, size_t n, uint64_t seed, double lo, double hi) {
    for (size_t i = 0; i < n; i++) x[i] = th_uniform(&seed, lo, hi);
}

double th_norm_err_f32(const float *a, const float *b, size_t n) {
    double m = 0, s = 1e-30;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > m || d != d) m = d != d ? INFINITY : d;
        if (fabs((double)b[i]) > s) s = fabs((double)b[i]);
    }
    return m / s;
}

double th_norm_err_f64(const double *a, const double *b, size_t n) {
    double m = 0, s = 1e-300;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (d > m || d != d) m = d != d ? INFINITY : d;
        if (fabs(b[i]) > s) s = fabs(b[i]);
    }
    return m / s;
}

int th_quick(void) { return getenv("TSL_TEST_QUICK") != NULL; }

int64_t th_numel(const tsl_graph *g, tsl_tid t) {
    return tsl_shape_numel(&tsl_graph_tensor(g, t)->shape);
}

/* Float-rounded uniform values into float tensor t (see helpers.h). */
void th_expect_build_fail(tsl_graph *g, tsl_tid res, const char *what, const char *const *needles,
                          size_t n) {
    cr_assert_eq(res, TSL_NONE, "%s should fail", what);
    cr_assert_eq(tsl_graph_status(g), TSL_ERR_INVALID);
    const char *msg = tsl_last_error();
    for (size_t k = 0; k < n && needles[k]; k++)
        cr_assert(strstr(msg, needles[k]) != NULL, "message '%s' lacks '%s'", msg, needles[k]);
}

/* See helpers.h. */
tsl_optimizer_cfg th_optimizer(int flags) {
    tsl_optimizer_cfg o = flags & TH_ADAM ? tsl_adam_default(1e-3f) : tsl_sgd_default(0.01f);
    o.step = flags & TH_UPDATES_AFTER ? TSL_STEP_AFTER_BACKWARD : TSL_STEP_IN_BACKWARD;
    return o;
}

void th_train_graph(tsl_graph *g, tsl_tid loss, const tsl_optimizer_cfg *o) {
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_optimizer(g, o), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
}
