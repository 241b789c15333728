/*
 * test_session.c - the vanilla executor: liveness and the ledger, the dry
 * run against a real run, out-of-memory as an event (clear message, state
 * intact, retry succeeds with identical results), fault injection at every
 * allocation of a step, evaluation leaving the state untouched, and
 * determinism across runs and thread counts.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "runtime/session_internal.h"
#include "tensile/models.h"
#include "tensile/session.h"

#define N 8
#define IN 12

/* x(N,IN) -> linear 16 -> batchnorm -> relu -> linear 5 -> softmax_xent, SGD
 * with its updates at `step`. */
static tsl_graph *small_graph_at(tsl_optimizer_step step) {
    tsl_graph *g = tsl_graph_new("small");
    tsl_tid x = tsl_input(g, "input", TSL_SHAPE(N, IN));
    tsl_tid y = tsl_label(g, "label", TSL_SHAPE(N));
    tsl_tid h = tsl_linear_layer(g, "fc1", x, 16, 1);
    h = tsl_batchnorm(g, "bn1", h, (tsl_bn_attr){.eps = 1e-5f, .momentum = 0.1f});
    h = tsl_relu(g, "relu1", h);
    tsl_tid logits = tsl_linear_layer(g, "fc2", h, 5, 1);
    tsl_tid loss = tsl_softmax_xent(g, "loss", logits, y);
    tsl_optimizer_cfg o = tsl_sgd_default(0.1f);
    o.step = step;
    th_train_graph(g, loss, &o);
    return g;
}

static tsl_graph *small_graph(void) { return small_graph_at(TSL_STEP_IN_BACKWARD); }

static void batch(float *x, int32_t *y, uint64_t seed) {
    th_fill_f32(x, N * IN, seed, -1, 1);
    for (int i = 0; i < N; i++) y[i] = (int32_t)((seed + (uint64_t)i) % 5);
}

static tsl_session *open_session(const tsl_graph *g, size_t cap, tsl_kernel_mode k, int threads) {
    tsl_session_opts o = tsl_session_opts_default();
    o.device_memory = cap;
    o.kernels = k;
    o.nthreads = threads;
    tsl_session *s = NULL;
    cr_assert_eq(tsl_session_new(g, &o, &s), TSL_OK, "%s", tsl_last_error());
    return s;
}

static size_t load_now(tsl_session *s) {
    tsl_alloc_stats st;
    tsl__session_backend(s)->iface->mem_stats(tsl__session_backend(s), &st);
    return st.load;
}

Test(session, trains_and_frees_everything_after_each_step) {
    tsl_graph *g = small_graph();
    tsl_session *s = open_session(g, 1 << 20, TSL_KERNELS_REF, 1);
    size_t persistent = load_now(s);
    cr_assert_eq(persistent, tsl_graph_bytes_of_kind(g, TSL_KIND_PARAM) +
                                 tsl_graph_bytes_of_kind(g, TSL_KIND_BUFFER) +
                                 tsl_graph_bytes_of_kind(g, TSL_KIND_OPT_STATE));
    float x[N * IN];
    int32_t y[N];
    batch(x, y, 3);
    tsl_step_stats st;
    double first = 0;
    for (int i = 0; i < 30; i++) {
        cr_assert_eq(tsl_session_step(s, x, y, &st), TSL_OK, "%s", tsl_last_error());
        cr_assert(isfinite(st.loss));
        if (i == 0) first = st.loss;
        cr_assert_eq(load_now(s), persistent, "step %d leaked %zu bytes", i, load_now(s) - persistent);
        cr_assert_gt(st.peak_load, persistent);
    }
    cr_assert_lt(st.loss, 0.5 * first, "loss %g did not fall from %g on a fixed batch", st.loss, first);
    cr_assert_eq(st.examples, N);
    tsl_session_free(s);
    tsl_graph_free(g);
}

Test(session, dry_run_predicts_the_measured_peak_exactly) {
    tsl_graph *g = small_graph();
    tsl_mem_report r;
    cr_assert_eq(tsl_graph_dry_run(g, 1 << 20, &r), TSL_OK);
    tsl_session *s = open_session(g, 1 << 20, TSL_KERNELS_REF, 1);
    float x[N * IN];
    int32_t y[N];
    batch(x, y, 5);
    tsl_step_stats st;
    cr_assert_eq(tsl_session_step(s, x, y, &st), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(st.peak_load, r.peak_load, "measured %zu, dry run %zu", st.peak_load, r.peak_load);
    cr_assert_eq(st.peak_footprint, r.peak_footprint);
    tsl_session_free(s);
    tsl_graph_free(g);
}

Test(session, dry_run_matches_a_real_cnn_step) {
    tsl_model_cfg cfg = tsl_model_cfg_default("cnn");
    cfg.batch = 4;
    tsl_graph *g = tsl_graph_new("cnn");
    tsl_tid loss;
    cr_assert_eq(tsl_model_build(g, "cnn", &cfg, &loss), TSL_OK, "%s", tsl_last_error());
    tsl_optimizer_cfg o = tsl_adam_default(1e-3f);
    th_train_graph(g, loss, &o);
    tsl_mem_report r;
    cr_assert_eq(tsl_graph_dry_run(g, (size_t)1 << 30, &r), TSL_OK);
    tsl_session *s = open_session(g, (size_t)1 << 30, TSL_KERNELS_REF, 2);
    size_t n = (size_t)cfg.batch * cfg.in_channels * cfg.image_size * cfg.image_size;
    float *x = malloc(n * sizeof *x);
    int32_t y[4] = {1, 2, 3, 4};
    th_fill_f32(x, n, 9, -1, 1);
    tsl_step_stats st;
    cr_assert_eq(tsl_session_step(s, x, y, &st), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(st.peak_load, r.peak_load, "measured %zu, dry run %zu", st.peak_load, r.peak_load);
    free(x);
    tsl_session_free(s);
    tsl_graph_free(g);
}

Test(session, out_of_memory_is_an_event_with_a_clear_message) {
    tsl_graph *g = small_graph();
    tsl_mem_report r;
    cr_assert_eq(tsl_graph_dry_run(g, 1 << 20, &r), TSL_OK);
    /* Room for the persistent tensors but not for the step's peak. */
    size_t cap = r.persistent_bytes + (r.peak_load - r.persistent_bytes) / 2 + 4096;
    tsl_session *s = open_session(g, cap, TSL_KERNELS_REF, 1);
    size_t persistent = load_now(s);
    uint64_t before = tsl_session_param_checksum(s);
    float x[N * IN];
    int32_t y[N];
    batch(x, y, 7);
    for (int rep = 0; rep < 2; rep++) {
        tsl_status st = tsl_session_step(s, x, y, NULL);
        cr_assert_eq(st, TSL_ERR_OOM);
        const char *m = tsl_last_error();
        cr_assert(strstr(m, "device out of memory at op"), "message: %s", m);
        cr_assert(strstr(m, "cannot allocate"), "message: %s", m);
        cr_assert(strstr(m, "largest free block"), "message: %s", m);
        char capstr[64];
        snprintf(capstr, sizeof capstr, "of %zu bytes, largest", cap & ~(size_t)255); /* arena rounded to the alignment */
        cr_assert(strstr(m, capstr), "message must name the capacity %zu: %s", cap, m);
        cr_assert_eq(load_now(s), persistent, "a failed step must free what it allocated");
        cr_assert_eq(tsl_session_param_checksum(s), before, "a failed step must not change parameters");
        cr_assert_eq(tsl_session_steps(s), 0);
    }
    tsl_session_free(s);
    /* Persistent tensors that do not fit at all. */
    tsl_session_opts o = tsl_session_opts_default();
    o.device_memory = 1024;
    tsl_session *s2 = NULL;
    cr_assert_eq(tsl_session_new(g, &o, &s2), TSL_ERR_OOM);
    cr_assert_null(s2);
    cr_assert(strstr(tsl_last_error(), "session start"), "%s", tsl_last_error());
    tsl_graph_free(g);
}

/* A fault injected at each allocation of the second of three steps, then
 * that step run again and the third: the parameters must end as a run
 * without faults ends wherever the failed step left them untouched. With
 * the updates after the backward pass that is every fault; with them in
 * the backward pass (the default) a fault after the step's first update
 * must say so (its updates stay applied) and is not run again. Returns the
 * faults of each kind. */
static void faults_then_retry(tsl_optimizer_step step, int *retried, int *after_updates) {
    tsl_graph *g = small_graph_at(step);
    float x[3][N * IN];
    int32_t y[3][N];
    for (int i = 0; i < 3; i++) batch(x[i], y[i], 11 + (uint64_t)i);
    tsl_session *ref = open_session(g, 1 << 20, TSL_KERNELS_REF, 1);
    tsl_alloc_stats a0, a1;
    for (int i = 0; i < 3; i++) {
        tsl__session_backend(ref)->iface->mem_stats(tsl__session_backend(ref), &a0);
        cr_assert_eq(tsl_session_step(ref, x[i], y[i], NULL), TSL_OK);
        tsl__session_backend(ref)->iface->mem_stats(tsl__session_backend(ref), &a1);
    }
    uint64_t allocs_per_step = a1.n_allocs - a0.n_allocs;
    cr_assert_gt(allocs_per_step, 10);
    uint64_t want = tsl_session_param_checksum(ref);
    *retried = *after_updates = 0;
    for (uint64_t k = 1; k <= allocs_per_step; k++) {
        tsl_session *s = open_session(g, 1 << 20, TSL_KERNELS_REF, 1);
        cr_assert_eq(tsl_session_step(s, x[0], y[0], NULL), TSL_OK);
        uint64_t before = tsl_session_param_checksum(s);
        tsl__session_backend(s)->iface->fail_alloc_at(tsl__session_backend(s), k);
        cr_assert_eq(tsl_session_step(s, x[1], y[1], NULL), TSL_ERR_OOM, "k=%llu", (unsigned long long)k);
        if (strstr(tsl_last_error(), "stay applied")) { /* updates had run: no retry */
            cr_assert_eq(step, TSL_STEP_IN_BACKWARD, "k=%llu: %s", (unsigned long long)k,
                         tsl_last_error());
            cr_assert_neq(tsl_session_param_checksum(s), before, "k=%llu: no update had run: %s",
                          (unsigned long long)k, tsl_last_error());
            ++*after_updates;
            tsl_session_free(s);
            continue;
        }
        cr_assert_eq(tsl_session_param_checksum(s), before, "k=%llu: a failed step changed the "
                     "parameters without saying so: %s", (unsigned long long)k, tsl_last_error());
        ++*retried;
        cr_assert_eq(tsl_session_step(s, x[1], y[1], NULL), TSL_OK, "retry after k=%llu: %s",
                     (unsigned long long)k, tsl_last_error());
        cr_assert_eq(tsl_session_step(s, x[2], y[2], NULL), TSL_OK);
        cr_assert_eq(tsl_session_param_checksum(s), want, "fault at allocation %llu changed the result",
                     (unsigned long long)k);
        tsl_session_free(s);
    }
    tsl_session_free(ref);
    tsl_graph_free(g);
}

Test(session, fault_at_every_allocation_then_retry_gives_identical_parameters) {
    int retried, after;
    faults_then_retry(TSL_STEP_AFTER_BACKWARD, &retried, &after);
    cr_assert_eq(after, 0);
    cr_assert_gt(retried, 10);
    /* updates in the backward: the faults before the first update retry
     * exactly, the later ones say the updates stay applied */
    faults_then_retry(TSL_STEP_IN_BACKWARD, &retried, &after);
    cr_assert_gt(retried, 0);
    cr_assert_gt(after, 0);
}

Test(session, eval_changes_nothing_and_reads_back) {
    tsl_graph *g = small_graph();
    tsl_session *s = open_session(g, 1 << 20, TSL_KERNELS_FAST, 1);
    float x[N * IN];
    int32_t y[N];
    batch(x, y, 13);
    cr_assert_eq(tsl_session_step(s, x, y, NULL), TSL_OK, "%s", tsl_last_error());
    tsl_tid rv = tsl_graph_find(g, "bn1.running_var");
    cr_assert_neq(rv, TSL_NONE);
    float before[16], after[16];
    cr_assert_eq(tsl_session_read(s, rv, before), TSL_OK);
    uint64_t ck = tsl_session_param_checksum(s);
    tsl_step_stats st;
    cr_assert_eq(tsl_session_eval(s, x, y, &st), TSL_OK, "%s", tsl_last_error());
    cr_assert(isfinite(st.loss));
    cr_assert_eq(tsl_session_read(s, rv, after), TSL_OK);
    cr_assert_eq(memcmp(before, after, sizeof before), 0, "eval changed the running statistics");
    cr_assert_eq(tsl_session_param_checksum(s), ck, "eval changed the parameters");
    cr_assert_eq(tsl_session_steps(s), 1);
    /* write then read a parameter */
    tsl_tid w = tsl_graph_find(g, "fc2.bias");
    float v[5] = {1, 2, 3, 4, 5}, back[5];
    cr_assert_eq(tsl_session_write(s, w, v), TSL_OK);
    cr_assert_eq(tsl_session_read(s, w, back), TSL_OK);
    cr_assert_eq(memcmp(v, back, sizeof v), 0);
    /* an activation is not resident between steps */
    tsl_tid act = tsl_graph_find(g, "relu1");
    cr_assert_neq(act, TSL_NONE);
    cr_assert_eq(tsl_session_read(s, act, back), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "relu1"), "%s", tsl_last_error());
    tsl_session_free(s);
    tsl_graph_free(g);
}

Test(session, same_bits_across_runs_and_thread_counts) {
    tsl_graph *g = small_graph();
    float x[N * IN];
    int32_t y[N];
    batch(x, y, 17);
    uint64_t ck[3];
    int threads[3] = {1, 1, 2};
    for (int r = 0; r < 3; r++) {
        tsl_session *s = open_session(g, 1 << 20, TSL_KERNELS_REF, threads[r]);
        for (int i = 0; i < 4; i++) cr_assert_eq(tsl_session_step(s, x, y, NULL), TSL_OK);
        ck[r] = tsl_session_param_checksum(s);
        tsl_session_free(s);
    }
    cr_assert_eq(ck[0], ck[1], "two runs differ");
    cr_assert_eq(ck[0], ck[2], "1 and 2 threads differ with the reference kernels");
    tsl_graph_free(g);
}

/* opts.init for the initial-values test: fc1.weight gets 0.5 + its index,
 * every other tensor what the session would give it (tsl_init_value), and
 * fc2.bias fails the opening when ctx says so. */
typedef struct init_probe {
    int calls, fail;
    tsl_tid last;
} init_probe;

static tsl_status probe_init(void *ctx, const tsl_graph *g, tsl_tid t, float *dst) {
    init_probe *p = ctx;
    cr_assert(t > p->last, "tensor %d initialised after %d: not in id order", t, p->last);
    p->last = t;
    p->calls++;
    const tsl_tensor *tt = tsl_graph_tensor(g, t);
    cr_assert(tsl_kind_is_persistent(tt->kind), "%s is not persistent", tt->name);
    if (!strcmp(tt->name, "fc2.bias") && p->fail) return tsl_fail(TSL_ERR_INVALID, "probe: no fc2.bias");
    if (!strcmp(tt->name, "fc1.weight")) {
        for (int64_t i = 0; i < tsl_shape_numel(&tt->shape); i++) dst[i] = 0.5f + (float)i;
        return TSL_OK;
    }
    tsl_init_value(g, t, 42, dst);
    return TSL_OK;
}

Test(session, initial_values_from_the_caller) {
    tsl_graph *g = small_graph();
    tsl_session_opts o = tsl_session_opts_default();
    o.device_memory = 1 << 20;
    int persistent = 0;
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(g); t++)
        persistent += tsl_kind_is_persistent(tsl_graph_tensor(g, t)->kind);
    /* the seeded values: tsl_init_value is what a session gives */
    tsl_session *plain;
    cr_assert_eq(tsl_session_new(g, &o, &plain), TSL_OK, "%s", tsl_last_error());
    tsl_tid w1 = tsl_graph_find(g, "fc1.weight"), b1 = tsl_graph_find(g, "fc1.bias");
    float got[16 * IN], want[16 * IN];
    cr_assert_eq(tsl_session_read(plain, w1, got), TSL_OK);
    tsl_init_value(g, w1, 42, want);
    cr_assert_eq(memcmp(got, want, sizeof got), 0, "tsl_init_value differs from the session's");
    cr_assert_eq(tsl_session_read(plain, b1, got), TSL_OK);
    tsl_init_value(g, b1, 42, want);
    cr_assert_eq(memcmp(got, want, 16 * sizeof *got), 0);
    /* the caller's values */
    init_probe p = {.last = -1};
    o.init = probe_init;
    o.init_ctx = &p;
    tsl_session *s;
    cr_assert_eq(tsl_session_new(g, &o, &s), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(p.calls, persistent, "%d calls for %d persistent tensors", p.calls, persistent);
    cr_assert_eq(tsl_session_read(s, w1, got), TSL_OK);
    for (int i = 0; i < 16 * IN; i++) cr_assert_eq(got[i], 0.5f + (float)i, "fc1.weight[%d] = %g", i, got[i]);
    cr_assert_eq(tsl_session_read(s, b1, got), TSL_OK);
    cr_assert_eq(memcmp(got, want, 16 * sizeof *got), 0, "fc1.bias not from the seed");
    cr_assert_neq(tsl_session_param_checksum(s), tsl_session_param_checksum(plain));
    tsl_session_free(s);
    tsl_session_free(plain);
    /* an initialiser that fails fails the opening with its message */
    p = (init_probe){.last = -1, .fail = 1};
    s = (tsl_session *)&p;
    cr_assert_eq(tsl_session_new(g, &o, &s), TSL_ERR_INVALID);
    cr_assert_null(s);
    cr_assert(strstr(tsl_last_error(), "probe: no fc2.bias"), "%s", tsl_last_error());
    tsl_graph_free(g);
}
