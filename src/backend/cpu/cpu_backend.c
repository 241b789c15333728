/*
 * cpu_backend.c - the CPU device: a fixed-capacity arena (mmap'd, reserved
 * without being touched) managed by the best-fit allocator, and kernel
 * dispatch to the fast (oneDNN / OpenBLAS) or reference kernels.
 *
 * Fast kernels keep per-op state (oneDNN primitives) in a cache keyed by
 * (graph, op index), created on first use and released with the backend.
 *
 * Asynchronous copies go through the copy engine (copy_engine.c): two
 * channel threads, started with the backend and joined when it is destroyed.
 * The arena allocator is guarded by a mutex, so that another thread (the
 * Swap Executor) may allocate and free device memory concurrently with the
 * executor's thread; kernels and their state cache are not, and are run
 * from one thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "backend/cpu/copy_engine.h"
#include "backend/cpu/kernel.h"
#include "core/assert.h"
#include "tensile/backend_cpu.h"

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
    pthread_mutex_t alloc_mu; /* guards alloc */
    tsl__copy_engine *copies;
    tsl_kernel_mode kernels;
    int nthreads;
    op_state *states; /* open addressing on (g, op) */
    size_t n_states, cap_states;
} cpu_ctx;

static double now_ms(void) { return tsl_backend_now_ms(); }

static const char *cpu_name(tsl_backend *b) {
    cpu_ctx *c = b->context;
    return c->kernels == TSL_KERNELS_FAST ? "cpu (oneDNN + OpenBLAS)" : "cpu (reference kernels)";
}

/* The allocator calls below take the arena's lock; the error message of a
 * failed allocation is recorded on the calling thread, as usual. */
static tsl_status cpu_alloc(tsl_backend *b, size_t nbytes, void **ptr) {
    cpu_ctx *c = b->context;
    size_t off;
    pthread_mutex_lock(&c->alloc_mu);
    tsl_status st = tsl_alloc_alloc(c->alloc, nbytes, &off);
    pthread_mutex_unlock(&c->alloc_mu);
    if (st != TSL_OK) return st;
    *ptr = c->base + off;
    return TSL_OK;
}

static void cpu_free(tsl_backend *b, void *ptr) {
    cpu_ctx *c = b->context;
    TSL_ASSERT((uint8_t *)ptr >= c->base && (uint8_t *)ptr < c->base + c->capacity);
    pthread_mutex_lock(&c->alloc_mu);
    tsl_alloc_release(c->alloc, (size_t)((uint8_t *)ptr - c->base));
    pthread_mutex_unlock(&c->alloc_mu);
}

static void cpu_mem_stats(tsl_backend *b, tsl_alloc_stats *st) {
    cpu_ctx *c = b->context;
    pthread_mutex_lock(&c->alloc_mu);
    tsl_alloc_get_stats(c->alloc, st);
    pthread_mutex_unlock(&c->alloc_mu);
}

static void cpu_reset_peaks(tsl_backend *b) {
    cpu_ctx *c = b->context;
    pthread_mutex_lock(&c->alloc_mu);
    tsl_alloc_reset_peaks(c->alloc);
    pthread_mutex_unlock(&c->alloc_mu);
}

static void cpu_fail_alloc_at(tsl_backend *b, uint64_t k) {
    cpu_ctx *c = b->context;
    pthread_mutex_lock(&c->alloc_mu);
    tsl_alloc_fail_at(c->alloc, k);
    pthread_mutex_unlock(&c->alloc_mu);
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

/* The kernel that runs op: a fast kernel (prepared on first use; its state
 * and workspace kept per op) or the reference kernel. */
static tsl_status pick_kernel(cpu_ctx *c, const tsl_graph *g, const tsl_op *op, tsl_kernel_fn *fn,
                              void ***state, size_t *ws) {
    const tsl_fast_kernel *fk = c->kernels == TSL_KERNELS_FAST ? tsl_cpu_fast_kernel(op->type) : NULL;
    *state = NULL;
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
        *fn = fk->run;
        *state = &s->state;
        *ws = s->workspace;
    } else {
        *fn = tsl_cpu_ref_kernel(op->type, TSL_F32);
        *ws = tsl_op_workspace(g, op);
    }
    return TSL_OK;
}

static tsl_status cpu_op_workspace(tsl_backend *b, const tsl_graph *g, const tsl_op *op, size_t *bytes) {
    tsl_kernel_fn fn;
    void **state;
    *bytes = 0;
    return pick_kernel(b->context, g, op, &fn, &state, bytes);
}

static tsl_status cpu_run_op(tsl_backend *b, const tsl_graph *g, const tsl_op *op,
                             void *const *in, void *const *out, const tsl_run_ctx *ctx,
                             double *ms) {
    cpu_ctx *c = b->context;
    tsl_kernel_fn fn;
    void **state;
    size_t ws;
    tsl_status pst = pick_kernel(c, g, op, &fn, &state, &ws);
    if (pst != TSL_OK) return pst;
    void *w = NULL;
    if (ws) {
        tsl_status st = cpu_alloc(b, ws, &w);
        if (st != TSL_OK) {
            /* tsl_fail rewrites the buffer tsl_last_error() points to: copy first */
            char why[512];
            snprintf(why, sizeof why, "%s", tsl_last_error());
            return tsl_fail(TSL_ERR_OOM, "device out of memory: workspace of %zu bytes for op '%s': %s",
                            ws, op->name, why);
        }
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

/* Kernels run synchronously on the calling thread; only the copy channels
 * can have work in flight. */
static tsl_status cpu_sync(tsl_backend *b) {
    cpu_ctx *c = b->context;
    tsl__copy_engine_drain(c->copies);
    return TSL_OK;
}

/* ---- asynchronous copies: the copy engine's channels --------------------- */

static tsl_status cpu_copy_async(tsl_backend *b, tsl_copy_dir dir, void *dst, const void *src,
                                 size_t n, tsl_copy_event **ev) {
    cpu_ctx *c = b->context;
    return tsl__copy_engine_submit(c->copies, dir, dst, src, n, ev);
}

static int cpu_event_done(tsl_backend *b, tsl_copy_event *ev) {
    (void)b;
    return tsl__copy_event_done(ev);
}

static void cpu_event_wait(tsl_backend *b, tsl_copy_event *ev) {
    (void)b;
    tsl__copy_event_wait(ev);
}

static void cpu_event_times(tsl_backend *b, tsl_copy_event *ev, double *start_ms, double *end_ms) {
    (void)b;
    tsl__copy_event_times(ev, start_ms, end_ms);
}

/* Releasing an event whose transfer is still in flight is a bug (assert). */
static void cpu_event_release(tsl_backend *b, tsl_copy_event *ev) {
    (void)b;
    tsl__copy_event_release(ev);
}

/* Host staging memory: page-aligned heap memory (n 0 is served as 1 byte);
 * NULL when out of host memory. */
static void *cpu_host_alloc(tsl_backend *b, size_t n) {
    (void)b;
    void *p = NULL;
    if (posix_memalign(&p, 4096, n ? n : 1) != 0) return NULL;
    return p;
}

static void cpu_host_free(tsl_backend *b, void *p) {
    (void)b;
    free(p);
}

/* gbps must be finite and >= 0 (assert); 0 = unthrottled. */
static void cpu_set_channel_gbps(tsl_backend *b, double gbps) {
    cpu_ctx *c = b->context;
    tsl__copy_engine_set_gbps(c->copies, gbps);
}

/* Drains and joins the copy channels first (a transfer in flight may read
 * or write the arena), then frees the kernel states, the arena and the
 * allocator. */
static void cpu_destroy(tsl_backend *b) {
    cpu_ctx *c = b->context;
    tsl__copy_engine_free(c->copies);
    for (size_t i = 0; i < c->cap_states; i++) {
        if (!c->states[i].g || !c->states[i].state) continue;
        const tsl_fast_kernel *fk = tsl_cpu_fast_kernel(c->states[i].type);
        if (fk->release) fk->release(c->states[i].state);
    }
    free(c->states);
    tsl_alloc_destroy(c->alloc);
    pthread_mutex_destroy(&c->alloc_mu);
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
    .op_workspace = cpu_op_workspace,
    .copy_to_device = cpu_copy,
    .copy_to_host = cpu_copy,
    .sync = cpu_sync,
    .copy_async = cpu_copy_async,
    .event_done = cpu_event_done,
    .event_wait = cpu_event_wait,
    .event_times = cpu_event_times,
    .event_release = cpu_event_release,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .set_channel_gbps = cpu_set_channel_gbps,
    .destroy = cpu_destroy,
};

/* Consistency of the arena's allocator, checked under its lock. */
int tsl__cpu_backend_check(tsl_backend *b) {
    TSL_ASSERT(b && b->iface == &cpu_iface);
    cpu_ctx *c = b->context;
    pthread_mutex_lock(&c->alloc_mu);
    int ok = tsl_alloc_check(c->alloc);
    pthread_mutex_unlock(&c->alloc_mu);
    return ok;
}

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
    tsl_status st = tsl__copy_engine_new(&c->copies);
    if (st != TSL_OK) {
        tsl_alloc_destroy(c->alloc);
        munmap(base, capacity);
        free(c);
        free(b);
        return st;
    }
    pthread_mutex_init(&c->alloc_mu, NULL);
    tsl_cpu_set_threads(nthreads);
    b->iface = &cpu_iface;
    b->context = c;
    *out = b;
    return TSL_OK;
}

void tsl_backend_free(tsl_backend *b) {
    if (b) b->iface->destroy(b);
}
