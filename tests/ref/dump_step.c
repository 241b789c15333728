/*
 * dump_step.c - one training step of a zoo model, written out for an
 * independent framework to recompute: every parameter and buffer, the
 * batch, the loss and every parameter's gradient, with a JSON manifest.
 *
 *   tsl_dump_step MODEL BATCH IMAGE CHANNELS CLASSES OUTDIR
 *
 * The step runs with the fast kernels, every tensor kept (no liveness: this
 * checks numerics, not memory), on the CPU backend's kernel dispatch.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/init.h"
#include "tensile/ops.h"
#include "tensile/backend_cpu.h"
#include "tensile/models.h"

static int write_bin(const char *dir, const char *name, const void *p, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) {
        fprintf(stderr, "dump_step: cannot write %s\n", path);
        if (f) fclose(f);
        return 0;
    }
    fclose(f);
    return 1;
}

static json_t *shape_json(const tsl_shape *s) {
    json_t *a = json_array();
    for (int i = 0; i < s->ndim; i++) json_array_append_new(a, json_integer(s->d[i]));
    return a;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s MODEL BATCH IMAGE CHANNELS CLASSES OUTDIR\n", argv[0]);
        return 2;
    }
    const char *model = argv[1], *dir = argv[6];
    tsl_model_cfg cfg = tsl_model_cfg_default(model);
    cfg.batch = atoi(argv[2]);
    cfg.image_size = atoi(argv[3]);
    cfg.in_channels = atoi(argv[4]);
    cfg.n_classes = atoi(argv[5]);
    tsl_graph *g = tsl_graph_new(model);
    tsl_tid loss;
    if (tsl_model_build(g, model, &cfg, &loss) != TSL_OK || tsl_graph_backward(g, loss) != TSL_OK ||
        tsl_graph_finalize(g) != TSL_OK) {
        fprintf(stderr, "dump_step: %s\n", tsl_last_error());
        return 1;
    }
    int32_t nt = tsl_graph_n_tensors(g);
    void **buf = calloc((size_t)nt, sizeof *buf);
    for (tsl_tid t = 0; t < nt; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        buf[t] = calloc(1, tt->nbytes + 64);
        if (tt->kind == TSL_KIND_PARAM || tt->kind == TSL_KIND_BUFFER)
            tsl__init_tensor(g, t, 1234, buf[t]);
    }
    /* The batch: inputs in [-1,1), labels spread over the classes. */
    tsl_tid x = tsl_graph_find(g, "input"), y = tsl_graph_find(g, "label");
    float *xv = buf[x];
    int64_t nx = tsl_shape_numel(&tsl_graph_tensor(g, x)->shape);
    for (int64_t i = 0; i < nx; i++) xv[i] = (float)(2.0 * tsl__u01(0xABCDull + (uint64_t)i) - 1.0);
    int32_t *yv = buf[y];
    int64_t ny = tsl_shape_numel(&tsl_graph_tensor(g, y)->shape);
    for (int64_t i = 0; i < ny; i++) yv[i] = (int32_t)((i * 7 + 3) % cfg.n_classes);
    /* BN buffers' running variance starts at one (init ONE), mean at zero. */
    tsl_backend *b;
    if (tsl_cpu_backend_new((size_t)1 << 30, TSL_KERNELS_FAST, 2, &b) != TSL_OK) {
        fprintf(stderr, "dump_step: %s\n", tsl_last_error());
        return 1;
    }
    tsl_run_ctx ctx = {.step = 1, .training = 1};
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        void *in[256], *out[16];
        for (int j = 0; j < op->n_in; j++) in[j] = buf[op->in[j]];
        for (int j = 0; j < op->n_out; j++) out[j] = buf[op->out[j]];
        if (b->iface->run_op(b, g, op, in, out, &ctx, NULL) != TSL_OK) {
            fprintf(stderr, "dump_step: op %s: %s\n", op->name, tsl_last_error());
            return 1;
        }
    }
    json_t *m = json_object(), *params = json_array();
    json_object_set_new(m, "model", json_string(model));
    json_object_set_new(m, "loss", json_real(*(float *)buf[loss]));
    json_object_set_new(m, "input_shape", shape_json(&tsl_graph_tensor(g, x)->shape));
    json_object_set_new(m, "label_shape", shape_json(&tsl_graph_tensor(g, y)->shape));
    int ok = write_bin(dir, "input.bin", buf[x], tsl_graph_tensor(g, x)->nbytes) &&
             write_bin(dir, "label.bin", buf[y], tsl_graph_tensor(g, y)->nbytes);
    int k = 0;
    for (tsl_tid t = 0; t < nt && ok; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        if (tt->kind != TSL_KIND_PARAM && tt->kind != TSL_KIND_BUFFER) continue;
        char f[64], gf[64];
        snprintf(f, sizeof f, "p%04d.bin", k);
        snprintf(gf, sizeof gf, "g%04d.bin", k++);
        /* buffers were updated in place by the step: they are dumped after it
         * (the reference recomputes the running statistics from the initial
         * values: mean 0, var 1) */
        json_t *p = json_object();
        json_object_set_new(p, "name", json_string(tt->name));
        json_object_set_new(p, "kind", json_string(tsl_kind_name(tt->kind)));
        json_object_set_new(p, "shape", shape_json(&tt->shape));
        json_object_set_new(p, "file", json_string(f));
        ok &= write_bin(dir, f, buf[t], tt->nbytes);
        if (tt->kind == TSL_KIND_PARAM && tt->grad != TSL_NONE) {
            json_object_set_new(p, "grad_file", json_string(gf));
            ok &= write_bin(dir, gf, buf[tt->grad], tt->nbytes);
        }
        json_array_append_new(params, p);
    }
    json_object_set_new(m, "params", params);
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    if (!ok || json_dump_file(m, path, JSON_INDENT(1)) != 0) {
        fprintf(stderr, "dump_step: cannot write %s\n", path);
        return 1;
    }
    printf("dumped %s: %d tensors, loss %.6f\n", model, k, *(float *)buf[loss]);
    json_decref(m);
    for (tsl_tid t = 0; t < nt; t++) free(buf[t]);
    free(buf);
    tsl_backend_free(b);
    tsl_graph_free(g);
    return 0;
}
