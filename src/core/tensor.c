/* tensor.c - dtype, kind and shape helpers. */
#include <stdio.h>
#include <string.h>
#include "core/assert.h"
#include "tensile/tensor.h"

size_t tsl_dtype_size(tsl_dtype dt) {
    switch (dt) {
    case TSL_F32: return 4;
    case TSL_F16: return 2;
    case TSL_BF16: return 2;
    case TSL_I32: return 4;
    case TSL_F64: return 8;
    default: break;
    }
    TSL_ASSERT(!"bad dtype");
    return 0;
}

const char *tsl_dtype_name(tsl_dtype dt) {
    static const char *n[] = {"f32", "f16", "bf16", "i32", "f64"};
    return (unsigned)dt < TSL_DTYPE_COUNT ? n[dt] : "?";
}

const char *tsl_kind_name(tsl_tensor_kind k) {
    static const char *n[] = {"input",      "label",    "parameter", "buffer",
                              "activation", "gradient", "optimizer_state", "workspace"};
    return (unsigned)k < TSL_KIND_COUNT ? n[k] : "?";
}

int tsl_kind_is_persistent(tsl_tensor_kind k) {
    return k == TSL_KIND_PARAM || k == TSL_KIND_BUFFER || k == TSL_KIND_OPT_STATE;
}

tsl_shape tsl_shape_from(const int64_t *d, int ndim) {
    TSL_ASSERT(ndim >= 0 && ndim <= TSL_MAX_DIMS);
    tsl_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = ndim;
    for (int i = 0; i < ndim; i++) s.d[i] = d[i];
    return s;
}

int64_t tsl_shape_numel(const tsl_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) n *= s->d[i];
    return n;
}

int tsl_shape_numel_checked(const tsl_shape *s, int64_t *out) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) {
        if (s->d[i] < 0 || __builtin_mul_overflow(n, s->d[i], &n)) {
            *out = INT64_MAX;
            return 0;
        }
    }
    *out = n;
    return 1;
}

int tsl_shape_eq(const tsl_shape *a, const tsl_shape *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->d[i] != b->d[i]) return 0;
    return 1;
}

char *tsl_shape_str(const tsl_shape *s, char *buf, size_t len) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, len - o, "(");
    for (int i = 0; i < s->ndim && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, i ? ",%lld" : "%lld", (long long)s->d[i]);
    if (o < len) snprintf(buf + o, len - o, ")");
    return buf;
}
