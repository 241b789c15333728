/*
 * test_runtime_landing.c - how the real-time runtime learns that a copy
 * ended (src/runtime/swap_executor.c, "Real time"): by a host function the
 * copy's stream runs right after it (the CPU backend's host_func, the
 * default), by polling when no host function could be enqueued (out of
 * host memory), or by one watcher thread per channel on a backend without
 * host_func. Each way, TENSILE's plan on cnn (batch 16, budget halfway
 * between the persistent tensors and vanilla's peak, channels throttled so
 * that copies are in flight while kernels run) trains to vanilla's
 * parameters bit for bit (invariant 5), its swap-ins run, and the session
 * closes with nothing in flight. The backend is the session's own with its
 * function table replaced by a copy in which host_func fails every k-th
 * call, or is NULL.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <string.h>

#include "helpers.h"
#include "rt_fixture.h"
#include "runtime/session_internal.h"

#define ITERS RTF_ITERS

/* The table the session's backend gets: the CPU backend's, host_func
 * wrapped (fail_every 0: never fails; -1: no host_func at all). */
static struct tsl_backend_i g_iface;
static const struct tsl_backend_i *g_real;
static atomic_int g_calls, g_failed;
static int g_fail_every;

static tsl_status flaky_host_func(tsl_backend *b, tsl_stream stream, void (*fn)(void *), void *arg) {
    int k = atomic_fetch_add(&g_calls, 1) + 1;
    if (g_fail_every > 0 && k % g_fail_every == 0) {
        atomic_fetch_add(&g_failed, 1);
        return tsl_fail(TSL_ERR_OOM, "injected: out of host memory for a host function");
    }
    return g_real->host_func(b, stream, fn, arg);
}

static void case_make(rtf_case *c) {
    tsl_model_cfg cfg = tsl_model_cfg_default("cnn");
    cfg.batch = 16;
    rtf_make(c, "cnn", &cfg, TH_UPDATES_AFTER);
    for (int k = 0; k < ITERS; k++) {
        th_fill_f32(c->x[k], c->nx, 501 + (uint64_t)k, -1, 1);
        for (int i = 0; i < cfg.batch; i++) c->y[k][i] = (i * 7 + k) % 10;
    }
    rtf_reference(c);
}

/* ITERS steps of c under plan p in real time, the backend's host_func as
 * fail_every says; returns the runtime's statistics after them. */
static tsl_runtime_stats run_with(const rtf_case *c, const tsl_plan *p, int fail_every,
                                  const char *what) {
    tsl_session_opts so = th_session_opts();
    so.device_memory = 2 * c->ref_fp + ((size_t)16 << 20);
    so.nthreads = 2;
    so.pcie_gbps = 0.5;
    tsl_session *s;
    cr_assert_eq(tsl_session_new(c->g, &so, &s), TSL_OK, "%s", tsl_last_error());
    tsl_backend *b = tsl__session_backend(s);
    cr_assert_not_null(b->iface->host_func, "the CPU backend has host_func");
    g_real = b->iface;
    g_iface = *b->iface;
    g_iface.host_func = fail_every < 0 ? NULL : flaky_host_func;
    g_fail_every = fail_every;
    atomic_store(&g_calls, 0);
    atomic_store(&g_failed, 0);
    b->iface = &g_iface;
    tsl_runtime_opts ro = tsl_runtime_opts_default();
    ro.profile = c->dev;
    cr_assert_eq(tsl_session_attach_runtime(s, &ro, c->w), TSL_OK, "%s: %s", what, tsl_last_error());
    cr_assert_eq(tsl_session_set_plan(s, p), TSL_OK, "%s: %s", what, tsl_last_error());
    for (int k = 0; k < ITERS; k++)
        cr_assert_eq(tsl_session_step(s, c->x[k], c->y[k], NULL), TSL_OK, "%s: step %d: %s", what,
                     k + 1, tsl_last_error());
    uint64_t ck = tsl_session_param_checksum(s);
    cr_assert_eq(ck, c->ref, "%s: parameters %016llx, vanilla's %016llx", what,
                 (unsigned long long)ck, (unsigned long long)c->ref);
    tsl_runtime_stats rs;
    tsl_session_runtime_stats(s, &rs);
    tsl_session_free(s); /* every copy landed first (tsl__se_stop), or this frees in use */
    return rs;
}

/* The plan's swap-ins. */
static int32_t planned_swap_ins(const tsl_plan *p) {
    int32_t n = 0;
    for (int32_t k = 0; k < p->n_events; k++) n += p->events[k].type == TSL_EV_SWAP_IN;
    return n;
}

Test(landing, host_functions_polling_and_watchers_train_alike, .timeout = 600) {
    rtf_case c;
    case_make(&c);
    tsl_plan *p = rtf_tensile_plan(&c, c.persistent + (c.ref_peak - c.persistent) / 2);
    cr_assert_gt(planned_swap_ins(p), 0, "the plan swaps (else nothing is tested)");

    tsl_runtime_stats rs = run_with(&c, p, 0, "host functions");
    cr_assert_gt(atomic_load(&g_calls), 0, "copies were landed by host functions");
    cr_assert_eq(atomic_load(&g_failed), 0);
    cr_assert_gt(rs.swaps_in, 0, "copies ran");

    rs = run_with(&c, p, 3, "every third host function refused");
    cr_assert_gt(atomic_load(&g_failed), 0, "the polled path was taken");
    cr_assert_gt(rs.swaps_in, 0);

    rs = run_with(&c, p, 1, "every host function refused");
    cr_assert_gt(atomic_load(&g_failed), 0);
    cr_assert_gt(rs.swaps_in, 0);

    rs = run_with(&c, p, -1, "no host_func: watcher threads");
    cr_assert_eq(atomic_load(&g_calls), 0, "no host function asked for");
    cr_assert_gt(rs.swaps_in, 0);
    tsl_plan_free(p);
    rtf_free(&c);
}
