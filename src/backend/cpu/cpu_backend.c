/*
 * cpu_backend.c - the CPU device: a fixed-capacity arena (mmap'd, reserved
 * without being touched) managed by the best-fit allocator, and kernel
 * dispatch to the fast (oneDNN / OpenBLAS) or reference kernels.
 *
 * Fast kernels keep per-op state (oneDNN primitives) in a cache keyed by
 * (graph, op index), created on first use and released with the backend.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "backend/kernel.h"
#include "core/assert.h"
#include "tensile/backend.h"

typedef struct op_state {
    const tsl_graph *g;
    int32_t op;
    void *state;
    size_t workspace;
    tsl_op_type type;
} op_state;

typedef struct cpu_ctx {
    uint8_t *base;
    size_t capacity;
    tsl_alloc *alloc;
    tsl_kernel_mode kernels;
    int nthreads;
    op_state *states; /* open addressing on (g, op) */
    size_t n_states, cap_states;
} cpu_ctx;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static const char *cpu_name(tsl_backend *b) {
    cpu_ctx *c = b->context;
    return c->kernels == TSL_KERNELS_FAST ? "cpu (oneDNN + OpenBLAS)" : "cpu (reference kernels)";
}

static tsl_status cpu_alloc(tsl_backend *b, size_t nbytes, void **ptr) {
    cpu_ctx *c = b->context;
    size_t off;
    tsl_status st = tsl_alloc_alloc(c->alloc, nbytes, &off);
    if (st != TSL_OK) return st;
    *ptr = c->base + off;
    return TSL_OK;
}

static void cpu_free(tsl_backend *b, void *ptr) {
    cpu_ctx *c = b->context;
    TSL_ASSERT((uint8_t *)ptr >= c->base && (uint8_t *)ptr < c->base + c->capacity);
    tsl_alloc_release(c->alloc, (size_t)((uint8_t *)ptr - c->base));
}

static void cpu_mem_stats(tsl_backend *b, tsl_alloc_stats *st) {
    cpu_ctx *c = b->context;
    tsl_alloc_get_stats(c->alloc, st);
}

static void cpu_reset_peaks(tsl_backend *b) {
    cpu_ctx *c = b->context;
    tsl_alloc_reset_peaks(c->alloc);
}

static void cpu_fail_alloc_at(tsl_backend *b, uint64_t k) {
    cpu_ctx *c = b->context;
    tsl_alloc_fail_at(c->alloc, k);
}

static size_t hash_key(const tsl_graph *g, int32_t op) {
    uint64_t h = (uint64_t)(uintptr_t)g * 0x9E3779B97F4A7C15ull ^ (uint64_t)op * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h ^ (h >> 29));
}

/* The state slot of (g, op), created empty if absent; NULL if out of memory. */
static op_state *state_slot(cpu_ctx *c, const tsl_graph *g, const tsl_op *op) {
    if (2 * (c->n_states + 1) > c->cap_states) {
        size_t cap = c->cap_states ? 2 * c->cap_states : 1024;
        op_state *ns = calloc(cap, sizeof *ns);
        if (!ns) return NULL;
        for (size_t i = 0; i < c->cap_states; i++) {
            if (!c->states[i].g) continue;
            size_t j = hash_key(c->states[i].g, c->states[i].op) & (cap - 1);
            while (ns[j].g) j = (j + 1) & (cap - 1);
            ns[j] = c->states[i];
        }
        free(c->states);
        c->states = ns;
        c->cap_states = cap;
    }
    size_t j = hash_key(g, op->index) & (c->cap_states - 1);
    while (c->states[j].g) {
        if (c->states[j].g == g && c->states[j].op == op->index) return &c->states[j];
        j = (j + 1) & (c->cap_states - 1);
    }
    c->states[j].g = g;
    c->states[j].op = op->index;
    c->states[j].type = op->type;
    c->states[j].state = NULL;
    c->states[j].workspace = (size_t)-1; /* not prepared */
    c->n_states++;
    return &c->states[j];
}

static tsl_status cpu_run_op(tsl_backend *b, const tsl_graph *g, const tsl_op *op,
                             void *const *in, void *const *out, const tsl_run_ctx *ctx,
                             double *ms) {
    cpu_ctx *c = b->context;
    const tsl_fast_kernel *fk = c->kernels == TSL_KERNELS_FAST ? tsl_cpu_fast_kernel(op->type) : NULL;
    tsl_kernel_fn fn;
    void **state = NULL;
    size_t ws;
    if (fk && fk->run) {
        op_state *s = state_slot(c, g, op);
        if (!s) return tsl_fail(TSL_ERR_OOM, "cpu backend: out of host memory for kernel state");
        if (s->workspace == (size_t)-1) {
            size_t w = 0;
            if (fk->prepare) {
                tsl_status st = fk->prepare(g, op, c->nthreads, &s->state, &w);
                if (st != TSL_OK) return st;
            }
            s->workspace = w;
        }
        fn = fk->run;
        state = &s->state;
        ws = s->workspace;
    } else {
        fn = tsl_cpu_ref_kernel(op->type, TSL_F32);
        ws = tsl_op_workspace(g, op);
    }
    void *w = NULL;
    if (ws) {
        tsl_status st = cpu_alloc(b, ws, &w);
        if (st != TSL_OK)
            return tsl_fail(TSL_ERR_OOM, "device out of memory: workspace of %zu bytes for op '%s': %s",
                            ws, op->name, tsl_last_error());
    }
    tsl_kernel_args a = {.g = g, .op = op, .dtype = TSL_F32, .in = in, .out = out,
                         .workspace = w, .workspace_bytes = ws, .step = ctx->step,
                         .nthreads = c->nthreads, .training = ctx->training, .state = state};
    double t0 = now_ms();
    tsl_status st = fn(&a);
    if (ms) *ms = now_ms() - t0;
    if (w) cpu_free(b, w);
    return st;
}

static tsl_status cpu_copy(tsl_backend *b, void *dst, const void *src, size_t n) {
    (void)b;
    memcpy(dst, src, n);
    return TSL_OK;
}

static tsl_status cpu_sync(tsl_backend *b) {
    (void)b;
    return TSL_OK;
}

static void cpu_destroy(tsl_backend *b) {
    cpu_ctx *c = b->context;
    for (size_t i = 0; i < c->cap_states; i++) {
        if (!c->states[i].g || !c->states[i].state) continue;
        const tsl_fast_kernel *fk = tsl_cpu_fast_kernel(c->states[i].type);
        if (fk->release) fk->release(c->states[i].state);
    }
    free(c->states);
    tsl_alloc_destroy(c->alloc);
    if (c->base) munmap(c->base, c->capacity);
    free(c);
    free(b);
}

static const struct tsl_backend_i cpu_iface = {
    .name = cpu_name,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .mem_stats = cpu_mem_stats,
    .reset_peaks = cpu_reset_peaks,
    .fail_alloc_at = cpu_fail_alloc_at,
    .run_op = cpu_run_op,
    .copy_to_device = cpu_copy,
    .copy_to_host = cpu_copy,
    .sync = cpu_sync,
    .destroy = cpu_destroy,
};

tsl_status tsl_cpu_backend_new(size_t capacity, tsl_kernel_mode kernels, int nthreads,
                               tsl_backend **out) {
    if (capacity == 0) return tsl_fail(TSL_ERR_INVALID, "device memory must be > 0 bytes");
    if (nthreads < 1) return tsl_fail(TSL_ERR_INVALID, "threads must be >= 1, got %d", nthreads);
    cpu_ctx *c = calloc(1, sizeof *c);
    tsl_backend *b = calloc(1, sizeof *b);
    if (!c || !b) {
        free(c);
        free(b);
        return tsl_fail(TSL_ERR_OOM, "cpu backend: out of host memory");
    }
    void *base = mmap(NULL, capacity, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        free(c);
        free(b);
        return tsl_fail(TSL_ERR_OOM, "cpu backend: cannot reserve a device arena of %zu bytes",
                        capacity);
    }
    c->base = base;
    c->capacity = capacity;
    c->alloc = tsl_alloc_new(capacity, TSL_ALLOC_ALIGN);
    c->kernels = kernels;
    c->nthreads = nthreads;
    if (!c->alloc) {
        munmap(base, capacity);
        free(c);
        free(b);
        return tsl_fail(TSL_ERR_OOM, "cpu backend: out of host memory");
    }
    tsl_cpu_set_threads(nthreads);
    b->iface = &cpu_iface;
    b->context = c;
    *out = b;
    return TSL_OK;
}

void tsl_backend_free(tsl_backend *b) {
    if (b) b->iface->destroy(b);
}
