/*
 * calibrate_algos.c - measuring each algorithm of each op of a graph on a
 * backend (tensile/calibrate.h, tsl_calibrate_algos): the latencies a
 * workload's algorithm menu carries (tsl_workload_add_algos).
 */
#include <stdlib.h>
#include <string.h>

#include "core/graph_internal.h"
#include "tensile/backend.h"
#include "tensile/calibrate.h"
#include "tensile/ops.h"

#define MAX_IN 64  /* inputs of an op measured here */
#define MAX_OUT 16 /* outputs */

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Frees the blocks of blk[0..n). */
static void free_blocks(tsl_backend *b, void **blk, int n) {
    for (int k = 0; k < n; k++)
        if (blk[k]) b->iface->free(b, blk[k]);
}

/* Blocks for op's distinct tensors (inputs filled with `pat`, host buffer of
 * `npat` bytes, grown as needed), in[] and out[] pointing at them. */
static tsl_status place(const tsl_graph *g, const tsl_op *op, tsl_backend *b, void **blk,
                        int *nblk, void **in, void **out, float **pat, size_t *npat) {
    tsl_tid ids[MAX_IN + MAX_OUT];
    int n = 0;
    for (int side = 0; side < 2; side++) {
        int cnt = side ? op->n_out : op->n_in;
        for (int j = 0; j < cnt; j++) {
            tsl_tid t = side ? op->out[j] : op->in[j];
            int k = 0;
            while (k < n && ids[k] != t) k++;
            if (k == n) {
                const tsl_tensor *d = tsl_graph_tensor(g, t);
                size_t bytes = d->nbytes ? d->nbytes : 1;
                blk[n] = NULL;
                ids[n++] = t;
                *nblk = n;
                tsl_status st = b->iface->alloc(b, bytes, &blk[k]);
                if (st != TSL_OK)
                    return tsl_fail(TSL_ERR_OOM, "calibrate algorithms: op '%s': no room for "
                                    "'%s' (%zu bytes)", op->name, d->name, bytes);
                if (bytes > *npat) {
                    float *np = realloc(*pat, bytes);
                    if (!np) return tsl_fail(TSL_ERR_OOM, "calibrate algorithms: host memory");
                    for (size_t e = *npat / sizeof(float); e < bytes / sizeof(float); e++)
                        np[e] = (float)((int)(e % 17) - 8) * 0.0625f;
                    *pat = np;
                    *npat = bytes;
                }
                if ((st = tsl_backend_upload(b, blk[k], *pat, bytes)) != TSL_OK) return st;
            }
            (side ? out : in)[j] = blk[k];
        }
    }
    return TSL_OK;
}

tsl_status tsl_calibrate_algos(const tsl_graph *g, tsl_backend *b, int repeats, double *us) {
    if (!g || !b || !us)
        return tsl_fail(TSL_ERR_INVALID, "calibrate algorithms: graph, backend or table is NULL");
    if (!tsl__graph_finalized(g))
        return tsl_fail(TSL_ERR_INVALID, "calibrate algorithms: graph '%s' is not finalized",
                        tsl_graph_name(g));
    if (repeats < 1 || repeats > 1000)
        return tsl_fail(TSL_ERR_INVALID, "calibrate algorithms: repeats %d not in [1, 1000]",
                        repeats);
    if (!b->iface->op_algo_workspace)
        return tsl_fail(TSL_ERR_INVALID, "calibrate algorithms: backend '%s' runs defaults only",
                        b->iface->name(b));
    int32_t no = tsl_graph_n_ops(g);
    for (size_t e = 0; e < (size_t)no * TSL_ALGO_MAX; e++) us[e] = -1.0;
    double *t = malloc(sizeof *t * (size_t)repeats);
    float *pat = NULL;
    size_t npat = 0;
    tsl_status st = t ? TSL_OK : tsl_fail(TSL_ERR_OOM, "calibrate algorithms: host memory");
    for (int32_t i = 0; i < no && st == TSL_OK; i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        int na = tsl_op_n_algos(op);
        if (na < 2) continue;
        void *blk[MAX_IN + MAX_OUT], *in[MAX_IN], *out[MAX_OUT];
        int nblk = 0;
        if (op->n_in > MAX_IN || op->n_out > MAX_OUT)
            st = tsl_fail(TSL_ERR_INVALID, "calibrate algorithms: op '%s' has %d inputs, %d "
                          "outputs", op->name, op->n_in, op->n_out);
        if (st == TSL_OK) st = place(g, op, b, blk, &nblk, in, out, &pat, &npat);
        for (int k = 0; k < na && st == TSL_OK; k++) {
            tsl_run_ctx ctx = {.step = 1, .training = 1, .algo = k};
            for (int r = -1; r < repeats && st == TSL_OK; r++) {
                double ms = 0.0;
                st = tsl_backend_run_op(b, g, op, in, out, &ctx, &ms);
                if (r >= 0) t[r] = ms * 1e3;
            }
            if (st != TSL_OK) break;
            qsort(t, (size_t)repeats, sizeof *t, cmp_d);
            us[(size_t)i * TSL_ALGO_MAX + (size_t)k] =
                repeats % 2 ? t[repeats / 2] : 0.5 * (t[repeats / 2 - 1] + t[repeats / 2]);
        }
        free_blocks(b, blk, nblk);
    }
    free(t);
    free(pat);
    return st;
}
