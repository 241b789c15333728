/*
 * bgload.c - see bgload.h.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "predict/bgload.h"

#define BUF_FLOATS (1u << 19) /* 2 MiB: past the L2 of most machines */

struct tsl__bgload {
    atomic_int stop;
    int k;
    pthread_t th[64];
    float *buf[64];
};

static void *spin(void *arg) {
    void **a = arg;
    tsl__bgload *b = a[0];
    float *x = a[1];
    free(arg);
    while (!atomic_load_explicit(&b->stop, memory_order_relaxed))
        for (unsigned i = 0; i < BUF_FLOATS; i++) x[i] = x[i] * 0.999f + 1.0f;
    return NULL;
}

tsl_status tsl__bgload_start(int k, tsl__bgload **out) {
    *out = NULL;
    if (k < 0 || k > 64) return tsl_fail(TSL_ERR_INVALID, "background load: %d threads (0..64)", k);
    tsl__bgload *b = calloc(1, sizeof *b);
    if (!b) return tsl_fail(TSL_ERR_OOM, "background load: out of host memory");
    atomic_init(&b->stop, 0);
    for (int i = 0; i < k; i++) {
        b->buf[i] = calloc(BUF_FLOATS, sizeof(float));
        void **a = malloc(2 * sizeof *a);
        if (!b->buf[i] || !a) {
            free(a);
            free(b->buf[i]);
            b->buf[i] = NULL;
            tsl__bgload_stop(b);
            return tsl_fail(TSL_ERR_OOM, "background load: out of host memory for thread %d", i);
        }
        a[0] = b, a[1] = b->buf[i];
        if (pthread_create(&b->th[i], NULL, spin, a) != 0) {
            free(a);
            free(b->buf[i]);
            b->buf[i] = NULL;
            tsl__bgload_stop(b);
            return tsl_fail(TSL_ERR_OOM, "background load: cannot start thread %d", i);
        }
        b->k = i + 1;
    }
    *out = b;
    return TSL_OK;
}

void tsl__bgload_stop(tsl__bgload *b) {
    if (!b) return;
    atomic_store(&b->stop, 1);
    for (int i = 0; i < b->k; i++) pthread_join(b->th[i], NULL);
    for (int i = 0; i < 64; i++) free(b->buf[i]);
    free(b);
}
