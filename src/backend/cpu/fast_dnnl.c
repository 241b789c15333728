/*
 * fast_dnnl.c - the oneDNN fast kernels: one engine for the process, one
 * stream per calling thread, and the generic prepare / run / release that
 * every oneDNN-backed op shares (see dnnl_util.h). The op-specific
 * primitives are built in fast_dnnl_conv.c and fast_dnnl_eltwise.c
 * (pooling and batch norm are own loops: fast_pool.c, fast_bnorm.c).
 *
 * Determinism: a primitive is created for the thread count given to prepare
 * and always executed with exactly that many OpenMP threads, so the same
 * inputs give the same bits (oneDNN's work split depends on the count).
 */
#include <limits.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl_debug.h>

#include "backend/cpu/dnnl_util.h"
#include "core/assert.h"

/* ---- engine and streams ------------------------------------------------- */

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;
static dnnl_status_t engine_status = dnnl_success;
static pthread_key_t stream_key;

static void stream_free(void *p) { dnnl_stream_destroy((dnnl_stream_t)p); }

static void engine_init(void) {
    engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0);
    if (engine_status != dnnl_success) engine = NULL;
    if (pthread_key_create(&stream_key, stream_free) != 0) {
        if (engine) dnnl_engine_destroy(engine);
        engine = NULL;
        engine_status = dnnl_out_of_memory;
    }
}

dnnl_engine_t tsl__dnnl_engine(void) {
    pthread_once(&engine_once, engine_init);
    if (!engine)
        tsl_fail(TSL_ERR_INTERNAL, "oneDNN: cannot create the CPU engine: %s",
                 dnnl_status2str(engine_status));
    return engine;
}

/* The calling thread's stream, created on its first use and destroyed when
 * the thread exits. NULL (message recorded) if oneDNN cannot create it. */
static dnnl_stream_t thread_stream(void) {
    if (!tsl__dnnl_engine()) return NULL;
    dnnl_stream_t s = pthread_getspecific(stream_key);
    if (s) return s;
    dnnl_status_t st = dnnl_stream_create(&s, engine, dnnl_stream_default_flags);
    if (st != dnnl_success) {
        tsl_fail(TSL_ERR_INTERNAL, "oneDNN: cannot create a stream: %s", dnnl_status2str(st));
        return NULL;
    }
    if (pthread_setspecific(stream_key, s) != 0) {
        dnnl_stream_destroy(s);
        tsl_fail(TSL_ERR_OOM, "oneDNN: out of host memory for the thread's stream");
        return NULL;
    }
    return s;
}

/* ---- helpers for builders ------------------------------------------------ */

tsl_status tsl__dnnl_check(dnnl_status_t st, const tsl_op *op, const char *what) {
    if (st == dnnl_success) return TSL_OK;
    return tsl_fail(TSL_ERR_INTERNAL, "oneDNN %s failed for op '%s' (%s): %s", what, op->name,
                    tsl_op_type_name(op->type), dnnl_status2str(st));
}

tsl_status tsl__dnnl_soft(dnnl_status_t st, tsl__dnnl_op *s, const tsl_op *op, const char *what) {
    if (st == dnnl_unimplemented || st == dnnl_invalid_arguments) {
        s->fallback = 1;
        return TSL_OK;
    }
    return tsl__dnnl_check(st, op, what);
}

dnnl_status_t tsl__dnnl_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                           dnnl_format_tag_t tag) {
    dnnl_dims_t d;
    for (int i = 0; i < ndims; i++) d[i] = dims[i];
    return dnnl_memory_desc_init_by_tag(md, ndims, d, dnnl_f32, tag);
}

dnnl_status_t tsl__dnnl_pd(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t op_desc,
                           const_dnnl_primitive_desc_t hint) {
    dnnl_primitive_attr_t attr;
    dnnl_status_t st = dnnl_primitive_attr_create(&attr);
    if (st != dnnl_success) return st;
    st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, op_desc, attr, engine, hint);
    dnnl_primitive_attr_destroy(attr);
    return st;
}

/* Appends an argument to primitive p (see tsl__dnnl_bind). */
static tsl_status bind_prim(tsl__dnnl_prim *p, int arg, const dnnl_memory_desc_t *md,
                            tsl__dnnl_from from, int idx, const tsl_op *op) {
    TSL_ASSERT(p->n_args < TSL__DNNL_MAX_ARGS);
    dnnl_memory_t m;
    tsl_status st = tsl__dnnl_check(dnnl_memory_create(&m, md, engine, DNNL_MEMORY_NONE), op,
                                    "memory creation");
    if (st != TSL_OK) return st;
    p->args[p->n_args].arg = arg;
    p->args[p->n_args].memory = m;
    p->from[p->n_args] = from;
    p->idx[p->n_args] = idx;
    p->n_args++;
    return TSL_OK;
}

tsl_status tsl__dnnl_bind(tsl__dnnl_op *s, int arg, const dnnl_memory_desc_t *md,
                          tsl__dnnl_from from, int idx, const tsl_op *op) {
    return bind_prim(&s->main, arg, md, from, idx, op);
}

/* Creates p's primitive from pd and appends its scratchpad argument, if
 * any (see tsl__dnnl_finish). */
static tsl_status finish_prim(tsl__dnnl_op *s, tsl__dnnl_prim *p, const_dnnl_primitive_desc_t pd,
                              const tsl_op *op) {
    tsl_status st = tsl__dnnl_check(dnnl_primitive_create(&p->prim, pd), op, "primitive creation");
    if (st != TSL_OK) {
        p->prim = NULL;
        return st;
    }
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
        snprintf(p->impl, sizeof p->impl, "%s", impl);
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t bytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
    if (bytes == 0) return TSL_OK;
    if (bytes > s->scratch_bytes) s->scratch_bytes = bytes;
    return bind_prim(p, DNNL_ARG_SCRATCHPAD, smd, TSL__FROM_SCRATCH, 0, op);
}

tsl_status tsl__dnnl_finish(tsl__dnnl_op *s, const_dnnl_primitive_desc_t pd, const tsl_op *op) {
    return finish_prim(s, &s->main, pd, op);
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

tsl_status tsl__dnnl_bind_any(tsl__dnnl_op *s, int arg, const dnnl_memory_desc_t *plain,
                              const dnnl_memory_desc_t *chosen, tsl__dnnl_from from, int idx,
                              const tsl_op *op) {
    if (!chosen || dnnl_memory_desc_equal(plain, chosen))
        return tsl__dnnl_bind(s, arg, plain, from, idx, op);
    TSL_ASSERT(from == TSL__FROM_IN || from == TSL__FROM_OUT);
    int input = from == TSL__FROM_IN;
    int *n = input ? &s->n_reorder_in : &s->n_reorder_out;
    TSL_ASSERT(*n < TSL__DNNL_MAX_REORDERS);
    tsl__dnnl_prim *r = input ? &s->reorder_in[*n] : &s->reorder_out[*n];
    size_t off = align64(s->extra_bytes);
    if (off + dnnl_memory_desc_get_size(chosen) > (size_t)INT_MAX) { /* offsets are ints */
        s->fallback = 1; /* a tensor of gigabytes: the reference kernel serves the op */
        return TSL_OK;
    }
    const dnnl_memory_desc_t *from_md = input ? plain : chosen, *to_md = input ? chosen : plain;
    dnnl_primitive_attr_t attr;
    tsl_status st = tsl__dnnl_check(dnnl_primitive_attr_create(&attr), op, "reorder attribute");
    if (st != TSL_OK) return st;
    dnnl_primitive_desc_t pd;
    dnnl_status_t ds = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (ds == dnnl_success)
        ds = dnnl_reorder_primitive_desc_create(&pd, from_md, engine, to_md, engine, attr);
    dnnl_primitive_attr_destroy(attr);
    st = tsl__dnnl_soft(ds, s, op, "layout reorder");
    if (st != TSL_OK || s->fallback) return st;
    (*n)++; /* counted now so that drop_prims frees what is made below */
    st = finish_prim(s, r, pd, op);
    dnnl_primitive_desc_destroy(pd);
    if (st == TSL_OK)
        st = bind_prim(r, DNNL_ARG_FROM, from_md, input ? from : TSL__FROM_EXTRA,
                       input ? idx : (int)off, op);
    if (st == TSL_OK)
        st = bind_prim(r, DNNL_ARG_TO, to_md, input ? TSL__FROM_EXTRA : from,
                       input ? (int)off : idx, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, arg, chosen, TSL__FROM_EXTRA, (int)off, op);
    if (st == TSL_OK) s->extra_bytes = off + dnnl_memory_desc_get_size(chosen);
    return st;
}

const char *tsl__dnnl_impl_name(const void *state) {
    const tsl__dnnl_op *s = state;
    if (!s) return "";
    if (s->fallback) return "ref";
    if (s->replace) return s->replace_name;
    return s->main.prim ? s->main.impl : "";
}

/* ---- generic prepare / run / release ------------------------------------- */

static size_t workspace_of(const tsl__dnnl_op *s) {
    if (s->fallback) return s->ref_workspace;
    if (s->replace) return s->replace_bytes;
    if (!s->extra_bytes) return s->scratch_bytes;
    return align64(s->scratch_bytes) + s->extra_bytes;
}

static tsl__dnnl_builder builder_of(tsl_op_type t) {
    switch (t) {
    case TSL_OP_CONV2D: return tsl__dnnl_build_conv;
    case TSL_OP_CONV2D_BWD_DATA: return tsl__dnnl_build_conv_bwd_data;
    case TSL_OP_CONV2D_BWD_FILTER: return tsl__dnnl_build_conv_bwd_filter;
    case TSL_OP_CONV2D_TRANSPOSE: return tsl__dnnl_build_conv_transpose;
    case TSL_OP_RELU: return tsl__dnnl_build_relu;
    case TSL_OP_RELU_BWD: return tsl__dnnl_build_relu_bwd;
    default: return NULL;
    }
}

/* Destroys p's primitive and memory objects and zeroes it. */
static void drop_prim(tsl__dnnl_prim *p) {
    for (int i = 0; i < p->n_args; i++) dnnl_memory_destroy(p->args[i].memory);
    if (p->prim) dnnl_primitive_destroy(p->prim);
    memset(p, 0, sizeof *p);
}

/* Destroys the op's primitive and reorders (the sizes are kept). */
static void drop_prims(tsl__dnnl_op *s) {
    drop_prim(&s->main);
    for (int k = 0; k < s->n_reorder_in; k++) drop_prim(&s->reorder_in[k]);
    for (int k = 0; k < s->n_reorder_out; k++) drop_prim(&s->reorder_out[k]);
    s->n_reorder_in = s->n_reorder_out = 0;
}

void tsl__dnnl_replace(tsl__dnnl_op *s, tsl_status (*fn)(const tsl_kernel_args *, void *),
                       size_t bytes, const char *name) {
    TSL_ASSERT(!s->main.prim && !s->n_reorder_in && !s->n_reorder_out);
    s->replace = fn;
    s->replace_bytes = bytes;
    s->replace_name = name;
}

/* release for every oneDNN op: frees what prepare (or a state-less run)
 * built, and the private scratch. NULL is fine. */
static void dnnl_release(void *state) {
    tsl__dnnl_op *s = state;
    if (!s) return;
    drop_prims(s);
    free(s->owned);
    free(s);
}

/* prepare for every oneDNN op: builds the primitives for `nthreads` OpenMP
 * threads and reports the workspace (scratchpad + extra, or the reference
 * kernel's needs for a fallback op). On failure *state is left NULL and the
 * error (TSL_ERR_OOM or TSL_ERR_INTERNAL) is returned with its message. */
static tsl_status dnnl_prepare(const tsl_graph *g, const tsl_op *op, int nthreads, void **state,
                               size_t *workspace_bytes) {
    TSL_ASSERT(nthreads >= 1);
    tsl__dnnl_builder build = builder_of(op->type);
    TSL_ASSERT(build != NULL);
    if (!tsl__dnnl_engine()) return TSL_ERR_INTERNAL;
    tsl__dnnl_op *s = calloc(1, sizeof *s);
    if (!s) return tsl_fail(TSL_ERR_OOM, "oneDNN: out of host memory for op '%s'", op->name);
    s->type = op->type;
    s->nthreads = nthreads;
    int prev = tsl__omp_threads(nthreads);
    tsl_status st = build(g, op, s);
    tsl__omp_threads(prev);
    if (st != TSL_OK) {
        dnnl_release(s);
        return st;
    }
    if (s->fallback) { /* drop whatever the builder made before giving up */
        drop_prims(s);
        s->scratch_bytes = s->extra_bytes = 0;
        s->ref_workspace = tsl_op_workspace(g, op);
    }
    *state = s;
    *workspace_bytes = workspace_of(s);
    return TSL_OK;
}

/* The workspace block the op uses: the executor's when large enough (it is
 * when prepare was called), else a private one kept in the state. NULL only
 * if out of host memory (message recorded). */
static void *workspace_block(tsl__dnnl_op *s, const tsl_kernel_args *a, size_t need) {
    if (need == 0) return NULL;
    if (a->workspace && a->workspace_bytes >= need) return a->workspace;
    if (s->owned_bytes < need) {
        void *p = realloc(s->owned, need);
        if (!p) {
            tsl_fail(TSL_ERR_OOM, "oneDNN: out of host memory for %zu bytes of scratch (op '%s')",
                     need, a->op->name);
            return NULL;
        }
        s->owned = p;
        s->owned_bytes = need;
    }
    return s->owned;
}

/* Binds every argument of p to its pointer (an input, an output, the
 * scratchpad at ws, or extra + offset), executes p on `stream` and waits. */
static tsl_status exec_prim(const tsl__dnnl_prim *p, const tsl_kernel_args *a, void *ws,
                            void *extra, dnnl_stream_t stream) {
    for (int i = 0; i < p->n_args; i++) {
        void *ptr = NULL;
        switch (p->from[i]) {
        case TSL__FROM_IN: ptr = a->in[p->idx[i]]; break;
        case TSL__FROM_OUT: ptr = a->out[p->idx[i]]; break;
        case TSL__FROM_SCRATCH: ptr = ws; break;
        case TSL__FROM_EXTRA: ptr = (char *)extra + p->idx[i]; break;
        }
        tsl_status st = tsl__dnnl_check(dnnl_memory_set_data_handle(p->args[i].memory, ptr),
                                        a->op, "binding a buffer");
        if (st != TSL_OK) return st;
    }
    dnnl_status_t ds = dnnl_primitive_execute(p->prim, stream, p->n_args, p->args);
    if (ds == dnnl_success) ds = dnnl_stream_wait(stream);
    return tsl__dnnl_check(ds, a->op, "execution");
}

/* Runs a prepared op: the reference kernel for a fallback op, the own
 * kernel of a replaced one; otherwise the input reorders, the primitive and
 * the output reorders, each bound to its pointers, executed on the calling
 * thread's stream with s->nthreads OpenMP threads (restored afterwards) and
 * waited for. Returns TSL_OK, or
 * TSL_ERR_OOM (no scratch) / TSL_ERR_INTERNAL (oneDNN failed) with the
 * message recorded; outputs are then unspecified. */
static tsl_status run_prepared(tsl__dnnl_op *s, const tsl_kernel_args *a) {
    size_t need = workspace_of(s);
    void *ws = workspace_block(s, a, need);
    if (need && !ws) return TSL_ERR_OOM;
    if (s->fallback) {
        tsl_kernel_args r = *a;
        r.workspace = ws;
        r.workspace_bytes = need;
        r.state = NULL;
        return tsl_cpu_ref_kernel(a->op->type, TSL_F32)(&r);
    }
    if (s->replace) return s->replace(a, ws);
    void *extra = s->extra_bytes ? (char *)ws + align64(s->scratch_bytes) : NULL;
    TSL_ASSERT(s->main.prim != NULL);
    dnnl_stream_t stream = thread_stream();
    if (!stream) return TSL_ERR_INTERNAL;
    int prev = tsl__omp_threads(s->nthreads);
    tsl_status st = TSL_OK;
    for (int k = 0; k < s->n_reorder_in && st == TSL_OK; k++)
        st = exec_prim(&s->reorder_in[k], a, ws, extra, stream);
    if (st == TSL_OK) st = exec_prim(&s->main, a, ws, extra, stream);
    for (int k = 0; k < s->n_reorder_out && st == TSL_OK; k++)
        st = exec_prim(&s->reorder_out[k], a, ws, extra, stream);
    tsl__omp_threads(prev);
    return st;
}

/* run for every oneDNN op. Float64 runs (the oracle) go to the reference
 * kernel. Without a prepared state the state is built here (kept in
 * *a->state when there is a slot, else freed after the run), with a private
 * workspace. Runs with the thread count the state was prepared for. */
static tsl_status dnnl_run(const tsl_kernel_args *a) {
    if (a->dtype != TSL_F32) return tsl_cpu_ref_kernel(a->op->type, a->dtype)(a);
    tsl__dnnl_op *s = a->state ? *a->state : NULL;
    int temporary = 0;
    if (!s) {
        void *ns = NULL;
        size_t w;
        tsl_status st = dnnl_prepare(a->g, a->op, tsl__kernel_threads(a), &ns, &w);
        if (st != TSL_OK) return st;
        s = ns;
        if (a->state) *a->state = s;
        else temporary = 1;
    }
    TSL_ASSERT(s->type == a->op->type);
    tsl_status st = run_prepared(s, a);
    if (temporary) dnnl_release(s);
    return st;
}

void tsl__fast_register_dnnl(tsl_fast_kernel table[TSL_OP_COUNT]) {
    static const tsl_op_type ops[] = {
        TSL_OP_CONV2D,    TSL_OP_CONV2D_BWD_DATA, TSL_OP_CONV2D_BWD_FILTER,
        TSL_OP_CONV2D_TRANSPOSE, TSL_OP_RELU, TSL_OP_RELU_BWD,
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        table[ops[i]].run = dnnl_run;
        table[ops[i]].prepare = dnnl_prepare;
        table[ops[i]].release = dnnl_release;
    }
}
