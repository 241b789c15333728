/*
 * dnnl_util.h - plumbing shared by the oneDNN fast kernels (internal).
 *
 * Every oneDNN-backed op keeps one tsl__dnnl_op in its per-op state slot. It
 * is built once by the op family's builder (fast_dnnl_conv.c,
 * fast_dnnl_eltwise.c) from the graph's descriptors: the primitive and the
 * layout reorders around it, their memory objects created with no data,
 * and for each argument the place its pointer comes from at run time (an input, an output, the scratchpad, or the op's extra
 * scratch). Running an op binds the pointers, executes on the calling
 * thread's stream and waits.
 *
 * Workspace layout (one block from the executor, size from prepare):
 *   [0, scratch)                       oneDNN's user-managed scratchpad
 *   [align64(scratch), + extra_bytes)  the op's own scratch: arguments in
 *                                      the layouts the primitive chose
 *
 * Layouts: the graph's tensors are always plain (nchw, oihw) — their sizes
 * in the workload and the ledger are what the device holds. A primitive
 * created with format_any may choose a blocked layout (nChw8c, OIhw8i8o),
 * much faster on AVX2; tsl__dnnl_bind_any then places that argument in the
 * extra scratch, with a reorder from the plain tensor before the primitive
 * (inputs) or to it after (outputs). The reorders run inside the op, so the
 * extra bytes are the op's workspace: planned, ledgered, counted at peaks.
 *
 * A configuration oneDNN does not implement (dnnl_unimplemented while
 * building) is not an error: the op is marked `fallback` and served by the
 * float reference kernel, with the reference's workspace.
 */
#ifndef TSL_BACKEND_CPU_DNNL_UTIL_H
#define TSL_BACKEND_CPU_DNNL_UTIL_H

#include <oneapi/dnnl/dnnl.h>
#include "backend/cpu/kernel.h"

#define TSL__DNNL_MAX_ARGS 10
#define TSL__DNNL_MAX_REORDERS 4 /* per side: before / after the primitive */

/* Where an argument's data pointer comes from when the op runs. */
typedef enum tsl__dnnl_from {
    TSL__FROM_IN = 0,  /* a->in[idx]                     */
    TSL__FROM_OUT,     /* a->out[idx]                    */
    TSL__FROM_SCRATCH, /* start of the workspace         */
    TSL__FROM_EXTRA,   /* the op's extra scratch + idx bytes */
} tsl__dnnl_from;

typedef struct tsl__dnnl_prim {
    dnnl_primitive_t prim; /* NULL: not built */
    int n_args;
    dnnl_exec_arg_t args[TSL__DNNL_MAX_ARGS];
    tsl__dnnl_from from[TSL__DNNL_MAX_ARGS];
    int idx[TSL__DNNL_MAX_ARGS];
    char impl[48];         /* oneDNN's implementation name, for benchmarks */
} tsl__dnnl_prim;

typedef struct tsl__dnnl_op tsl__dnnl_op;

struct tsl__dnnl_op {
    tsl_op_type type;
    int fallback;          /* 1: the reference kernel serves this op */
    int nthreads;          /* OpenMP threads the primitives were created for */
    size_t scratch_bytes;  /* max scratchpad over the primitive and its reorders */
    size_t extra_bytes;
    size_t ref_workspace;  /* fallback only: what the reference needs */
    tsl__dnnl_prim main;   /* the op's primitive */
    /* Layout reorders around it: plain inputs to blocked scratch before,
     * blocked scratch to plain outputs after. */
    tsl__dnnl_prim reorder_in[TSL__DNNL_MAX_REORDERS], reorder_out[TSL__DNNL_MAX_REORDERS];
    int n_reorder_in, n_reorder_out;
    /* An own kernel that serves the op instead of a primitive (NULL: none;
     * see tsl__dnnl_replace), with a workspace of replace_bytes. */
    tsl_status (*replace)(const tsl_kernel_args *a, void *workspace);
    size_t replace_bytes;
    const char *replace_name;
    void *owned;           /* private scratch when run without a workspace */
    size_t owned_bytes;
};

/* A builder fills s (zeroed, type and nthreads set) for op; it returns
 * TSL_OK with s->fallback = 1 when oneDNN does not implement the
 * configuration, TSL_ERR_INTERNAL (message recorded) when oneDNN fails
 * otherwise. Called with OpenMP set to s->nthreads threads. */
typedef tsl_status (*tsl__dnnl_builder)(const tsl_graph *g, const tsl_op *op, tsl__dnnl_op *s);

tsl_status tsl__dnnl_build_conv(const tsl_graph *g, const tsl_op *op, tsl__dnnl_op *s);
tsl_status tsl__dnnl_build_conv_bwd_data(const tsl_graph *g, const tsl_op *op, tsl__dnnl_op *s);
tsl_status tsl__dnnl_build_conv_bwd_filter(const tsl_graph *g, const tsl_op *op,
                                           tsl__dnnl_op *s);
tsl_status tsl__dnnl_build_conv_transpose(const tsl_graph *g, const tsl_op *op,
                                          tsl__dnnl_op *s);
tsl_status tsl__dnnl_build_relu(const tsl_graph *g, const tsl_op *op, tsl__dnnl_op *s);
tsl_status tsl__dnnl_build_relu_bwd(const tsl_graph *g, const tsl_op *op, tsl__dnnl_op *s);

/* ---- helpers for builders (fast_dnnl.c) ---------------------------------- */

/* The process's CPU engine, created on first use (pthread_once); NULL if
 * oneDNN could not create it (the message is then recorded). */
dnnl_engine_t tsl__dnnl_engine(void);

/* TSL_OK for dnnl_success; otherwise records "oneDNN <what> failed for op
 * '<name>' (<type>): <status>" and returns TSL_ERR_INTERNAL. */
tsl_status tsl__dnnl_check(dnnl_status_t st, const tsl_op *op, const char *what);

/* For descriptor and primitive-descriptor creation: TSL_OK on success; on
 * dnnl_unimplemented or dnnl_invalid_arguments (a configuration oneDNN does
 * not take) sets s->fallback and returns TSL_OK; otherwise records the
 * error and returns TSL_ERR_INTERNAL. Builders stop when the result is not
 * TSL_OK or s->fallback is set. */
tsl_status tsl__dnnl_soft(dnnl_status_t st, tsl__dnnl_op *s, const tsl_op *op, const char *what);

/* A plain memory descriptor of ndims dims with format tag `tag`, f32.
 * Returns the oneDNN status. */
dnnl_status_t tsl__dnnl_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                           dnnl_format_tag_t tag);

/* Creates the op's primitive from a primitive descriptor that was
 * created with tsl__dnnl_attr() (user scratchpad), sizes its scratchpad and
 * appends the scratchpad argument. The caller still owns pd. */
tsl_status tsl__dnnl_finish(tsl__dnnl_op *s, const_dnnl_primitive_desc_t pd,
                            const tsl_op *op);

/* Appends argument `arg` (DNNL_ARG_...) of memory descriptor md to the
 * op's primitive, bound at run time to (from, idx). */
tsl_status tsl__dnnl_bind(tsl__dnnl_op *s, int arg, const dnnl_memory_desc_t *md,
                          tsl__dnnl_from from, int idx, const tsl_op *op);

/* Appends argument `arg` of the op's primitive, bound to the plain
 * tensor (from, idx) of descriptor `plain`, where the primitive descriptor
 * chose the layout `chosen` (a query of a format_any descriptor; NULL or
 * equal to plain: bound directly, as tsl__dnnl_bind). Otherwise the argument
 * gets a buffer of `chosen`'s size in the op's extra scratch and a reorder:
 * plain -> buffer before the primitive for an input (from TSL__FROM_IN),
 * buffer -> plain after it for an output (TSL__FROM_OUT). A reorder
 * oneDNN does not implement, or a buffer whose offset would pass INT_MAX,
 * marks the op `fallback` (the reference kernel serves it) and returns
 * TSL_OK (what the builder makes after it is dropped with the rest). */
tsl_status tsl__dnnl_bind_any(tsl__dnnl_op *s, int arg, const dnnl_memory_desc_t *plain,
                              const dnnl_memory_desc_t *chosen, tsl__dnnl_from from, int idx,
                              const tsl_op *op);

/* Makes the op run `fn` (an own float kernel, named `name` for
 * benchmarks) with a workspace of `bytes` instead of a primitive (none may
 * be built yet). For shapes where oneDNN's choice is known to be
 * slow (fast_wgrad_gemm.c). */
void tsl__dnnl_replace(tsl__dnnl_op *s, tsl_status (*fn)(const tsl_kernel_args *, void *),
                       size_t bytes, const char *name);

/* Creates a primitive descriptor for op_desc with a user-scratchpad attribute
 * (hint may be NULL). Returns the raw oneDNN status so that the builder can
 * tell dnnl_unimplemented from real failures. */
dnnl_status_t tsl__dnnl_pd(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t op_desc,
                           const_dnnl_primitive_desc_t hint);

/* Implementation name of a prepared fast-kernel state's primitive ("ref"
 * for a fallback op, the own kernel's name for a replaced one). For
 * benchmarks. */
const char *tsl__dnnl_impl_name(const void *state);
#endif
