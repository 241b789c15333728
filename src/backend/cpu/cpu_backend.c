/*
 * cpu_backend.c - the CPU device (tensile/backend.h, backend_cpu.h): a
 * fixed-capacity arena (mmap'd, reserved without being touched) managed by
 * the best-fit allocator; kernel dispatch to the fast (oneDNN, own loops) or
 * reference kernels; the three streams and their events (streams.c).
 *
 * Fast kernels keep per-op state (oneDNN primitives) in a cache keyed by
 * (graph, op index), created on first use (op_workspace or launch_op, on
 * the enqueueing thread) and released with the backend. Each entry is a
 * block of its own, so that the state slot a kernel on the compute thread
 * writes stays put while the table grows.
 *
 * The arena allocator is guarded by a mutex, so that other threads (the
 * Swap Executor) may allocate and free device memory concurrently. The
 * mutex also guards the arena's capacity (tsl_cpu_backend_set_capacity):
 * the whole reservation is mapped at creation, so a change of capacity
 * moves nothing.
 *
 * On a shared device (tensile/shdev.h) the backend is a job: it attaches
 * to its slot at creation and detaches when freed (publishing zeros), and
 * after every successful allocation and free it publishes its allocator's
 * load and footprint into its slot, still under the arena's mutex - so one
 * thread at a time publishes for a slot, in the order of the changes. The
 * allocator itself knows nothing of this. The arena is reserved at the
 * device's capacity; its capacity is the job's arena, at most its region.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernel.h"
#include "backend/cpu/shdev_block.h"
#include "backend/cpu/streams.h"
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
    size_t reserve;           /* bytes mapped at base (never changes) */
    size_t capacity;          /* the arena's capacity (alloc_mu) */
    tsl_alloc *alloc;
    pthread_mutex_t alloc_mu; /* guards alloc, capacity, the slot's publications */
    tsl__streams *streams;
    tsl_cpu_backend_opts o;
    op_state **states; /* open addressing on (g, op); each entry its own block */
    size_t n_states, cap_states;
} cpu_ctx;

static const char *cpu_name(tsl_backend *b) {
    cpu_ctx *c = b->context;
    return c->o.kernels == TSL_KERNELS_FAST ? "cpu (oneDNN)" : "cpu (reference kernels)";
}

/* A shared device's job publishes its ledger after each change (under
 * alloc_mu); a private device has nothing to do. */
static void publish(cpu_ctx *c) {
    if (!c->o.shdev) return;
    tsl_alloc_stats st;
    tsl_alloc_get_stats(c->alloc, &st);
    tsl__shdev_publish(c->o.shdev, c->o.shdev_slot, st.load, st.footprint);
}

/* The allocator calls below take the arena's lock; the error message of a
 * failed allocation is recorded on the calling thread, as usual. */
static tsl_status cpu_alloc(tsl_backend *b, size_t nbytes, void **ptr) {
    cpu_ctx *c = b->context;
    size_t off;
    pthread_mutex_lock(&c->alloc_mu);
    tsl_status st = tsl_alloc_alloc(c->alloc, nbytes, &off);
    if (st == TSL_OK) publish(c);
    pthread_mutex_unlock(&c->alloc_mu);
    if (st != TSL_OK) return st;
    *ptr = c->base + off;
    return TSL_OK;
}

static tsl_status cpu_alloc_at(tsl_backend *b, size_t offset, size_t nbytes, void **ptr) {
    cpu_ctx *c = b->context;
    pthread_mutex_lock(&c->alloc_mu);
    tsl_status st = tsl_alloc_alloc_at(c->alloc, offset, nbytes);
    if (st == TSL_OK) publish(c);
    pthread_mutex_unlock(&c->alloc_mu);
    if (st != TSL_OK) return st;
    *ptr = c->base + offset;
    return TSL_OK;
}

static void cpu_free(tsl_backend *b, void *ptr) {
    cpu_ctx *c = b->context;
    TSL_ASSERT((uint8_t *)ptr >= c->base && (uint8_t *)ptr < c->base + c->reserve);
    pthread_mutex_lock(&c->alloc_mu);
    tsl_alloc_release(c->alloc, (size_t)((uint8_t *)ptr - c->base));
    publish(c);
    pthread_mutex_unlock(&c->alloc_mu);
}

static void cpu_mem_stats(tsl_backend *b, tsl_alloc_stats *st) {
    cpu_ctx *c = b->context;
    pthread_mutex_lock(&c->alloc_mu);
    tsl_alloc_get_stats(c->alloc, st);
    pthread_mutex_unlock(&c->alloc_mu);
}

static size_t cpu_free_run(tsl_backend *b, void *ptr) {
    cpu_ctx *c = b->context;
    TSL_ASSERT((uint8_t *)ptr >= c->base && (uint8_t *)ptr < c->base + c->reserve);
    pthread_mutex_lock(&c->alloc_mu);
    size_t run = tsl_alloc_free_run(c->alloc, (size_t)((uint8_t *)ptr - c->base));
    pthread_mutex_unlock(&c->alloc_mu);
    return run;
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
        op_state **ns = calloc(cap, sizeof *ns);
        if (!ns) return NULL;
        for (size_t i = 0; i < c->cap_states; i++) {
            if (!c->states[i]) continue;
            size_t j = hash_key(c->states[i]->g, c->states[i]->op) & (cap - 1);
            while (ns[j]) j = (j + 1) & (cap - 1);
            ns[j] = c->states[i];
        }
        free(c->states);
        c->states = ns;
        c->cap_states = cap;
    }
    size_t j = hash_key(g, op->index) & (c->cap_states - 1);
    while (c->states[j]) {
        if (c->states[j]->g == g && c->states[j]->op == op->index) return c->states[j];
        j = (j + 1) & (c->cap_states - 1);
    }
    op_state *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->g = g;
    st->op = op->index;
    st->type = op->type;
    st->workspace = (size_t)-1; /* not prepared */
    c->states[j] = st;
    c->n_states++;
    return st;
}

/* The kernel that runs op: a fast kernel (prepared on first use; its state
 * and workspace kept per op) or the reference kernel. */
static tsl_status pick_kernel(cpu_ctx *c, const tsl_graph *g, const tsl_op *op, tsl_kernel_fn *fn,
                              void ***state, size_t *ws) {
    const tsl_fast_kernel *fk = c->o.kernels == TSL_KERNELS_FAST ? tsl_cpu_fast_kernel(op->type) : NULL;
    *state = NULL;
    if (fk && fk->run) {
        op_state *s = state_slot(c, g, op);
        if (!s) return tsl_fail(TSL_ERR_OOM, "cpu backend: out of host memory for kernel state");
        if (s->workspace == (size_t)-1) {
            size_t w = 0;
            if (fk->prepare) {
                tsl_status st = fk->prepare(g, op, c->o.nthreads, &s->state, &w);
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

/* Algorithm algo (>= 1) of op: its kernel and workspace
 * (conv_algos.c); TSL_ERR_INVALID when op has no such algorithm. */
static tsl_status pick_algo(const tsl_graph *g, const tsl_op *op, int algo, tsl_kernel_fn *fn,
                            size_t *ws) {
    if (algo < 0 || algo >= tsl_op_n_algos(op))
        return tsl_fail(TSL_ERR_INVALID, "cpu backend: op '%s' (%s) has no algorithm %d (it has "
                        "%d)", op->name, tsl_op_type_name(op->type), algo, tsl_op_n_algos(op));
    *fn = tsl_cpu_algo_kernel(op->type, algo, TSL_F32);
    *ws = tsl_op_algo_workspace(g, op, algo);
    return TSL_OK;
}

static tsl_status cpu_op_algo_workspace(tsl_backend *b, const tsl_graph *g, const tsl_op *op,
                                        int algo, size_t *bytes) {
    *bytes = 0;
    if (algo == TSL_ALGO_DEFAULT) return cpu_op_workspace(b, g, op, bytes);
    tsl_kernel_fn fn;
    return pick_algo(g, op, algo, &fn, bytes);
}

static tsl_status cpu_launch_op(tsl_backend *b, const tsl_graph *g, const tsl_op *op,
                                void *const *in, void *const *out, void *workspace,
                                const tsl_run_ctx *ctx) {
    cpu_ctx *c = b->context;
    tsl_kernel_fn fn;
    void **state = NULL;
    size_t ws;
    tsl_status st = ctx->algo == TSL_ALGO_DEFAULT ? pick_kernel(c, g, op, &fn, &state, &ws)
                                                 : pick_algo(g, op, ctx->algo, &fn, &ws);
    if (st != TSL_OK) return st;
    if (ws && !workspace)
        return tsl_fail(TSL_ERR_INVALID, "cpu backend: op '%s' needs a workspace of %zu bytes, "
                        "none given (op_workspace)", op->name, ws);
    tsl_kernel_args a = {.g = g, .op = op, .dtype = TSL_F32, .in = in, .out = out,
                         .workspace = ws ? workspace : NULL, .workspace_bytes = ws,
                         .step = ctx->step, .nthreads = c->o.nthreads,
                         .training = ctx->training, .state = state};
    return tsl__streams_kernel(c->streams, fn, &a);
}

static tsl_status cpu_memcpy_async(tsl_backend *b, tsl_stream stream, void *dst, const void *src,
                                   size_t n) {
    cpu_ctx *c = b->context;
    return tsl__streams_copy(c->streams, stream, dst, src, n);
}

static tsl_status cpu_event_record(tsl_backend *b, tsl_stream stream, tsl_dev_event **ev) {
    cpu_ctx *c = b->context;
    return tsl__streams_record(c->streams, stream, ev);
}

static tsl_status cpu_stream_wait(tsl_backend *b, tsl_stream stream, tsl_dev_event *ev) {
    cpu_ctx *c = b->context;
    return tsl__streams_wait(c->streams, stream, ev);
}

static tsl_status cpu_host_func(tsl_backend *b, tsl_stream stream, void (*fn)(void *arg),
                                void *arg) {
    cpu_ctx *c = b->context;
    return tsl__streams_host_func(c->streams, stream, fn, arg);
}

static int cpu_event_query(tsl_backend *b, tsl_dev_event *ev) {
    (void)b;
    return tsl__event_query(ev);
}

static tsl_status cpu_event_sync(tsl_backend *b, tsl_dev_event *ev) {
    cpu_ctx *c = b->context;
    return tsl__event_sync(c->streams, ev);
}

static tsl_status cpu_event_elapsed_ms(tsl_backend *b, tsl_dev_event *from, tsl_dev_event *to,
                                       double *ms) {
    (void)b;
    return tsl__event_elapsed_ms(from, to, ms);
}

static void cpu_event_release(tsl_backend *b, tsl_dev_event *ev) {
    cpu_ctx *c = b->context;
    tsl__event_release(c->streams, ev);
}

static tsl_status cpu_synchronize(tsl_backend *b) {
    cpu_ctx *c = b->context;
    return tsl__streams_sync(c->streams);
}

static void cpu_caps(tsl_backend *b, tsl_backend_caps *caps) {
    cpu_ctx *c = b->context;
    memset(caps, 0, sizeof *caps);
    pthread_mutex_lock(&c->alloc_mu);
    caps->capacity = c->capacity;
    pthread_mutex_unlock(&c->alloc_mu);
    caps->async_compute = c->o.async_compute != 0;
    caps->copy_engines = 2;
    caps->host_addressable = 1;
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

/* Drains and joins the streams first (a kernel or a copy in flight may read
 * or write the arena), then detaches from a shared device's slot, frees the
 * kernel states, the arena and the allocator. */
static void cpu_destroy(tsl_backend *b) {
    cpu_ctx *c = b->context;
    tsl__streams_free(c->streams);
    if (c->o.shdev) tsl__shdev_detach(c->o.shdev, c->o.shdev_slot);
    for (size_t i = 0; i < c->cap_states; i++) {
        op_state *st = c->states[i];
        if (!st) continue;
        const tsl_fast_kernel *fk = tsl_cpu_fast_kernel(st->type);
        if (st->state && fk->release) fk->release(st->state);
        free(st);
    }
    free(c->states);
    tsl_alloc_destroy(c->alloc);
    pthread_mutex_destroy(&c->alloc_mu);
    if (c->base) munmap(c->base, c->reserve);
    free(c);
    free(b);
}

static const struct tsl_backend_i cpu_iface = {
    .name = cpu_name,
    .caps = cpu_caps,
    .alloc = cpu_alloc,
    .alloc_at = cpu_alloc_at,
    .free = cpu_free,
    .mem_stats = cpu_mem_stats,
    .free_run = cpu_free_run,
    .reset_peaks = cpu_reset_peaks,
    .fail_alloc_at = cpu_fail_alloc_at,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .op_workspace = cpu_op_workspace,
    .op_algo_workspace = cpu_op_algo_workspace,
    .launch_op = cpu_launch_op,
    .memcpy_async = cpu_memcpy_async,
    .event_record = cpu_event_record,
    .stream_wait = cpu_stream_wait,
    .event_query = cpu_event_query,
    .event_sync = cpu_event_sync,
    .event_elapsed_ms = cpu_event_elapsed_ms,
    .event_release = cpu_event_release,
    .host_func = cpu_host_func,
    .synchronize = cpu_synchronize,
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

tsl_cpu_backend_opts tsl_cpu_backend_opts_default(size_t capacity) {
    tsl_cpu_backend_opts o;
    memset(&o, 0, sizeof o);
    o.capacity = capacity;
    o.kernels = TSL_KERNELS_FAST;
    o.nthreads = 1;
    return o;
}

static tsl_status check_opts(const tsl_cpu_backend_opts *o) {
    if (o->capacity == 0 && !o->shdev)
        return tsl_fail(TSL_ERR_INVALID, "device memory must be > 0 bytes");
    if (o->nthreads < 1) return tsl_fail(TSL_ERR_INVALID, "threads must be >= 1, got %d", o->nthreads);
    if (o->kernels != TSL_KERNELS_FAST && o->kernels != TSL_KERNELS_REF)
        return tsl_fail(TSL_ERR_INVALID, "cpu backend: kernels %d is neither fast nor reference",
                        (int)o->kernels);
    if (!(o->pcie_gbps >= 0) || !isfinite(o->pcie_gbps))
        return tsl_fail(TSL_ERR_INVALID, "cpu backend: pcie_gbps %g must be finite and >= 0",
                        o->pcie_gbps);
    if (o->shdev && o->pcie_gbps != 0 && o->pcie_gbps != tsl_shdev_pcie_gbps(o->shdev))
        return tsl_fail(TSL_ERR_INVALID, "cpu backend: pcie_gbps %g given for a shared device, "
                        "whose channels run at its own %g GB/s (set by tsl_shdev_create): leave "
                        "it 0", o->pcie_gbps, tsl_shdev_pcie_gbps(o->shdev));
    if (!(o->kernel_delay_us >= 0) || !isfinite(o->kernel_delay_us) || o->kernel_delay_us > 1e6)
        return tsl_fail(TSL_ERR_INVALID, "cpu backend: kernel_delay_us %g outside [0, 1e6]",
                        o->kernel_delay_us);
    return TSL_OK;
}

/* A shared device's job: attaches to its slot; the arena's capacity
 * (o->capacity, 0: the region) is recorded as the slot's arena, within the
 * region; the reservation is the device's capacity. Detached again on
 * failure. */
static tsl_status attach_shared(const tsl_cpu_backend_opts *o, size_t *capacity, size_t *reserve) {
    size_t region;
    tsl_status st = tsl__shdev_attach(o->shdev, o->shdev_slot, &region);
    if (st != TSL_OK) return st;
    *capacity = o->capacity ? o->capacity : region;
    *reserve = tsl_shdev_capacity(o->shdev);
    st = *capacity == 0 ? tsl_fail(TSL_ERR_INVALID, "cpu backend: slot %d has a region of 0 "
                                   "bytes", o->shdev_slot)
                        : tsl__shdev_set_arena(o->shdev, o->shdev_slot, *capacity);
    if (st != TSL_OK) tsl__shdev_detach(o->shdev, o->shdev_slot);
    return st;
}

/* Frees what tsl_cpu_backend_new_opts made before failing (c and b made,
 * c->o and c->reserve set; a MAP_FAILED base and a NULL allocator are
 * skipped) and detaches from a shared device. Returns st. */
static tsl_status undo_new(cpu_ctx *c, tsl_backend *b, void *base, tsl_status st) {
    tsl_alloc_destroy(c->alloc);
    if (base != MAP_FAILED) munmap(base, c->reserve);
    if (c->o.shdev) tsl__shdev_detach(c->o.shdev, c->o.shdev_slot);
    free(c);
    free(b);
    return st;
}

tsl_status tsl_cpu_backend_new_opts(const tsl_cpu_backend_opts *o, tsl_backend **out) {
    tsl_status st = check_opts(o);
    if (st != TSL_OK) return st;
    size_t capacity = o->capacity, reserve = o->capacity;
    if (o->shdev && (st = attach_shared(o, &capacity, &reserve)) != TSL_OK) return st;
    cpu_ctx *c = calloc(1, sizeof *c);
    tsl_backend *b = calloc(1, sizeof *b);
    if (!c || !b) {
        free(c);
        free(b);
        if (o->shdev) tsl__shdev_detach(o->shdev, o->shdev_slot);
        return tsl_fail(TSL_ERR_OOM, "cpu backend: out of host memory");
    }
    c->o = *o;
    c->reserve = reserve;
    c->capacity = capacity;
    void *base = mmap(NULL, reserve, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
        return undo_new(c, b, base, tsl_fail(TSL_ERR_OOM, "cpu backend: cannot reserve a device "
                                             "arena of %zu bytes", reserve));
    c->base = base;
    c->alloc = tsl_alloc_new(capacity, TSL_ALLOC_ALIGN);
    c->o.nthreads = tsl_cpu_usable_threads(o->nthreads); /* what OpenMP can give */
    if (!c->alloc)
        return undo_new(c, b, base, tsl_fail(TSL_ERR_OOM, "cpu backend: out of host memory"));
    tsl__streams_opts so = {.async_compute = o->async_compute,
                            .kernel_delay_us = o->kernel_delay_us, .nthreads = c->o.nthreads,
                            .shdev = o->shdev, .shdev_slot = o->shdev_slot};
    st = tsl__streams_new(&so, &c->streams);
    if (st != TSL_OK) return undo_new(c, b, base, st);
    if (!o->shdev) tsl__streams_set_gbps(c->streams, o->pcie_gbps);
    pthread_mutex_init(&c->alloc_mu, NULL);
    tsl_cpu_set_threads(c->o.nthreads);
    b->iface = &cpu_iface;
    b->context = c;
    *out = b;
    return TSL_OK;
}

tsl_status tsl_cpu_backend_new(size_t capacity, tsl_kernel_mode kernels, int nthreads,
                               tsl_backend **out) {
    tsl_cpu_backend_opts o = tsl_cpu_backend_opts_default(capacity);
    o.kernels = kernels;
    o.nthreads = nthreads;
    return tsl_cpu_backend_new_opts(&o, out);
}

int tsl_backend_is_cpu(const tsl_backend *b) { return b && b->iface == &cpu_iface; }

tsl_status tsl_cpu_backend_set_pcie_gbps(tsl_backend *b, double gbps) {
    if (!tsl_backend_is_cpu(b))
        return tsl_fail(TSL_ERR_INVALID, "set pcie_gbps: backend '%s' is not a CPU backend",
                        b ? b->iface->name(b) : "(null)");
    if (!(gbps >= 0) || !isfinite(gbps))
        return tsl_fail(TSL_ERR_INVALID, "set pcie_gbps: %g must be finite and >= 0", gbps);
    cpu_ctx *c = b->context;
    if (c->o.shdev)
        return tsl_fail(TSL_ERR_INVALID, "set pcie_gbps: the backend is a job on a shared device, "
                        "whose channels run at its %g GB/s", tsl_shdev_pcie_gbps(c->o.shdev));
    tsl__streams_set_gbps(c->streams, gbps);
    c->o.pcie_gbps = gbps;
    return TSL_OK;
}

/* Contract: tensile/backend_cpu.h. Growing a shared job's arena records it
 * in its slot first (refused above the region), then grows the allocator;
 * shrinking shrinks the allocator first (refused above its footprint),
 * then records it: the slot's arena is never below the allocator's
 * capacity. */
tsl_status tsl_cpu_backend_set_capacity(tsl_backend *b, size_t bytes) {
    if (!tsl_backend_is_cpu(b))
        return tsl_fail(TSL_ERR_INVALID, "set capacity: backend '%s' is not a CPU backend",
                        b ? b->iface->name(b) : "(null)");
    cpu_ctx *c = b->context;
    if (bytes == 0 || bytes > c->reserve)
        return tsl_fail(TSL_ERR_INVALID, "set capacity: %zu bytes outside [1, %zu], %s", bytes,
                        c->reserve, c->o.shdev ? "the shared device's capacity"
                                               : "the arena reserved at creation");
    tsl_shdev *dev = c->o.shdev;
    int slot = c->o.shdev_slot;
    pthread_mutex_lock(&c->alloc_mu);
    size_t old = c->capacity;
    tsl_status st = TSL_OK;
    if (dev && bytes > old) st = tsl__shdev_set_arena(dev, slot, bytes);
    if (st == TSL_OK) st = tsl_alloc_set_capacity(c->alloc, bytes);
    if (st == TSL_OK) {
        c->capacity = bytes;
        if (dev && bytes < old) tsl__shdev_set_arena(dev, slot, bytes); /* a shrink: never fails */
    } else if (dev && bytes > old) {
        tsl__shdev_set_arena(dev, slot, old); /* undo the record */
    }
    pthread_mutex_unlock(&c->alloc_mu);
    return st;
}

void tsl_backend_free(tsl_backend *b) {
    if (b) b->iface->destroy(b);
}
