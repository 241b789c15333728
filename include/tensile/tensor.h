/*
 * tensile/tensor.h - tensor descriptors: dtype, shape, kind, size, name.
 *
 * A descriptor carries no data: data lives wherever a backend placed it. The
 * graph (tensile/graph.h) owns the descriptors; callers read them through
 * tsl_graph_tensor() and never modify them.
 */
#ifndef TENSILE_TENSOR_H
#define TENSILE_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TSL_MAX_DIMS 5
#define TSL_NAME_MAX 96
/* The largest tensor a graph accepts (64 PiB), and the most all of a
 * graph's tensors may take together (1 EiB): sizes beyond them cannot exist
 * on any device, and keeping below them keeps every sum of tensor sizes
 * (loads, peaks, ledgers) far from overflowing 64 bits. A builder asked for
 * more fails with a message naming the tensor, its shape and its size. */
#define TSL_MAX_TENSOR_BYTES ((size_t)1 << 56)
#define TSL_MAX_GRAPH_BYTES ((size_t)1 << 60)

typedef enum tsl_dtype {
    TSL_F32 = 0,
    TSL_F16,  /* reserved: no kernel uses it yet */
    TSL_BF16, /* reserved: no kernel uses it yet */
    TSL_I32,  /* class labels                     */
    TSL_F64,  /* the double-precision oracle used by gradient checks */
    TSL_DTYPE_COUNT
} tsl_dtype;

/* What a tensor is for. Persistent kinds (PARAM, BUFFER, OPT_STATE) live
 * across iterations; the others live from their generating access to their
 * last using access within one iteration. */
typedef enum tsl_tensor_kind {
    TSL_KIND_INPUT = 0,  /* a batch of data, generated at iteration start   */
    TSL_KIND_LABEL,      /* the batch's labels                               */
    TSL_KIND_PARAM,      /* trainable parameter, updated in place            */
    TSL_KIND_BUFFER,     /* persistent non-trainable state (BN running stats)*/
    TSL_KIND_ACTIVATION, /* forward intermediate (incl. saved statistics)    */
    TSL_KIND_GRADIENT,   /* backward intermediate or parameter gradient      */
    TSL_KIND_OPT_STATE,  /* optimizer state: momentum, Adam's m and v        */
    TSL_KIND_WORKSPACE,  /* scratch needed by one op only                    */
    TSL_KIND_COUNT
} tsl_tensor_kind;

typedef struct tsl_shape {
    int ndim;                  /* 0..TSL_MAX_DIMS; 0 is a scalar */
    int64_t d[TSL_MAX_DIMS];   /* row-major, outermost first: (N,C,H,W) */
} tsl_shape;

typedef int32_t tsl_tid; /* tensor id inside one graph; -1 means none */
#define TSL_NONE ((tsl_tid)-1)

/* Parameter and buffer initialisers, applied by the session with a seeded,
 * counter-based generator so that results never depend on thread count. */
typedef enum tsl_init {
    TSL_INIT_NONE = 0,     /* not initialised (computed tensors)            */
    TSL_INIT_ZERO,
    TSL_INIT_ONE,
    TSL_INIT_KAIMING_NORMAL, /* N(0, sqrt(2/fan_in)), fan_in = numel/d[0]   */
    TSL_INIT_UNIFORM_FANIN,  /* U(-1/sqrt(fan_in), 1/sqrt(fan_in))          */
} tsl_init;

typedef struct tsl_tensor {
    tsl_tid id;
    char name[TSL_NAME_MAX];
    tsl_shape shape;
    tsl_dtype dtype;
    tsl_tensor_kind kind;
    size_t nbytes;       /* numel * dtype size, unaligned */
    tsl_init init;
    int requires_grad;   /* a gradient of it is wanted by autodiff */
    tsl_tid grad;        /* its gradient once backward is built, else TSL_NONE */
} tsl_tensor;

size_t tsl_dtype_size(tsl_dtype dt);
const char *tsl_dtype_name(tsl_dtype dt);
const char *tsl_kind_name(tsl_tensor_kind k);

/* 1 for PARAM, BUFFER and OPT_STATE: never freed by liveness. */
int tsl_kind_is_persistent(tsl_tensor_kind k);

/* Build a shape from 1 to 5 dimensions: TSL_SHAPE(N, C, H, W). Every
 * argument is converted to int64_t. A scalar is tsl_shape_from(NULL, 0). */
#define TSL_SHAPE(...)                                                   \
    tsl_shape_from((const int64_t[]){__VA_ARGS__},                       \
                   (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
tsl_shape tsl_shape_from(const int64_t *d, int ndim);
int64_t tsl_shape_numel(const tsl_shape *s);
/* The element count of s in *out, computed with overflow checks: returns 1,
 * or 0 (with *out = INT64_MAX) if a dimension is negative or the product
 * exceeds INT64_MAX. tsl_shape_numel is for shapes of existing tensors,
 * which the graph keeps far below that. */
int tsl_shape_numel_checked(const tsl_shape *s, int64_t *out);
int tsl_shape_eq(const tsl_shape *a, const tsl_shape *b);
/* Writes "(16,3,224,224)" into buf; returns buf. */
char *tsl_shape_str(const tsl_shape *s, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
