/* init.c - see init.h. */
#include <math.h>
#include <string.h>
#include "core/assert.h"
#include "runtime/init.h"

static int64_t fan_in_of(const tsl_graph *g, const tsl_tensor *t) {
    if (t->shape.ndim == 1 && t->init == TSL_INIT_UNIFORM_FANIN) {
        size_t len = strlen(t->name);
        if (len > 5 && strcmp(t->name + len - 5, ".bias") == 0) {
            char w[TSL_NAME_MAX];
            memcpy(w, t->name, len - 5);
            strcpy(w + len - 5, ".weight");
            tsl_tid wt = tsl_graph_find(g, w);
            if (wt != TSL_NONE) t = tsl_graph_tensor(g, wt);
        }
    }
    int64_t n = tsl_shape_numel(&t->shape);
    return t->shape.ndim >= 1 ? n / t->shape.d[0] : 1;
}

void tsl_init_value(const tsl_graph *g, tsl_tid t, uint64_t seed, float *dst) {
    const tsl_tensor *tt = tsl_graph_tensor(g, t);
    TSL_ASSERT(tt->dtype == TSL_F32);
    int64_t n = tsl_shape_numel(&tt->shape);
    uint64_t base = tsl__mix64(seed ^ tsl__mix64((uint64_t)t * 0xD1B54A32D192ED03ull));
    double fan = (double)fan_in_of(g, tt);
    switch (tt->init) {
    case TSL_INIT_NONE:
    case TSL_INIT_ZERO:
        memset(dst, 0, (size_t)n * sizeof *dst);
        break;
    case TSL_INIT_ONE:
        for (int64_t i = 0; i < n; i++) dst[i] = 1.0f;
        break;
    case TSL_INIT_KAIMING_NORMAL: {
        double sd = sqrt(2.0 / fan);
        for (int64_t i = 0; i < n; i++) { /* Box-Muller on two keyed uniforms */
            double u1 = tsl__u01(base + 2 * (uint64_t)i), u2 = tsl__u01(base + 2 * (uint64_t)i + 1);
            double r = sqrt(-2.0 * log(1.0 - u1));
            dst[i] = (float)(sd * r * cos(2.0 * M_PI * u2));
        }
        break;
    }
    case TSL_INIT_UNIFORM_FANIN: {
        double bound = 1.0 / sqrt(fan);
        for (int64_t i = 0; i < n; i++)
            dst[i] = (float)(bound * (2.0 * tsl__u01(base + (uint64_t)i) - 1.0));
        break;
    }
    }
}
