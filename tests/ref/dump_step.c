/*
 * dump_step.c - one training step of a zoo model, written out for an
 * independent framework to recompute: every parameter and buffer, the
 * batch, the dropout masks, the loss and every parameter's gradient, with a
 * JSON manifest.
 *
 *   tsl_dump_step MODEL BATCH IMAGE CHANNELS CLASSES OUTDIR [f32|f64]
 *
 * f32 (the default): the step runs on the CPU backend with the fast
 * kernels, in float. f64: every op runs with its double-precision reference
 * kernel (tsl_cpu_ref_kernel(type, TSL_F64)), the oracle the op tests use:
 * the graph is the model's own (its descriptors say f32; kernel.h lets the
 * oracle run any graph in double), every float tensor is held in double.
 * Either way every tensor is kept (no liveness: this checks numerics, not
 * memory), the initial values are the same floats (the parameters' and the
 * batch's initial values are generated in float, then widened), and the
 * files hold the run's element type, named in the manifest's "dtype".
 *
 * Manifest: model, dtype, batch, image_size, in_channels, n_classes, loss,
 * input_shape, label_shape; params: one entry
 * per parameter and buffer in creation order (name, kind, shape, file;
 * grad_file for a parameter; initial_file for a buffer, whose "file" holds
 * its value after the step: batch-norm running statistics are updated in
 * place); dropout: one entry per DROPOUT op (name, p, shape, file), its mask
 * output (0 or 1/(1-p)), so that a reference can apply the same masks.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernel.h"
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

/* Bytes of tensor t when float tensors hold elements of es bytes. */
static size_t run_bytes(const tsl_graph *g, tsl_tid t, size_t es) {
    const tsl_tensor *tt = tsl_graph_tensor(g, t);
    return (size_t)tsl_shape_numel(&tt->shape) * (tt->dtype == TSL_I32 ? 4 : es);
}

/* Stores float v as element i of a buffer of the run's element type. */
static void put(void *p, int64_t i, int f64, float v) {
    if (f64) ((double *)p)[i] = v;
    else ((float *)p)[i] = v;
}

/* Every op of g in order with the double reference kernels. */
static int run_f64(const tsl_graph *g, void **buf, int nthreads) {
    tsl_cpu_set_threads(nthreads);
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        void *in[256], *out[16];
        for (int j = 0; j < op->n_in; j++) in[j] = buf[op->in[j]];
        for (int j = 0; j < op->n_out; j++) out[j] = buf[op->out[j]];
        size_t ws = tsl_op_workspace(g, op);
        void *w = ws ? calloc(1, ws) : NULL;
        tsl_kernel_args a = {.g = g, .op = op, .dtype = TSL_F64, .in = in, .out = out,
                             .workspace = w, .workspace_bytes = ws, .step = 1,
                             .nthreads = nthreads, .training = 1, .state = NULL};
        tsl_status st = tsl_cpu_ref_kernel(op->type, TSL_F64)(&a);
        free(w);
        if (st != TSL_OK) {
            fprintf(stderr, "dump_step: op %s: %s\n", op->name, tsl_last_error());
            return 0;
        }
    }
    return 1;
}

/* Every op of g in order on the CPU backend with the fast kernels. */
static int run_f32(const tsl_graph *g, void **buf, int nthreads) {
    tsl_backend *b;
    if (tsl_cpu_backend_new((size_t)1 << 30, TSL_KERNELS_FAST, nthreads, &b) != TSL_OK) {
        fprintf(stderr, "dump_step: %s\n", tsl_last_error());
        return 0;
    }
    tsl_run_ctx ctx = {.step = 1, .training = 1};
    int ok = 1;
    for (int32_t i = 0; i < tsl_graph_n_ops(g) && ok; i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        void *in[256], *out[16];
        for (int j = 0; j < op->n_in; j++) in[j] = buf[op->in[j]];
        for (int j = 0; j < op->n_out; j++) out[j] = buf[op->out[j]];
        if (tsl_backend_run_op(b, g, op, in, out, &ctx, NULL) != TSL_OK) {
            fprintf(stderr, "dump_step: op %s: %s\n", op->name, tsl_last_error());
            ok = 0;
        }
    }
    tsl_backend_free(b);
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: %s MODEL BATCH IMAGE CHANNELS CLASSES OUTDIR [f32|f64]\n", argv[0]);
        return 2;
    }
    const char *model = argv[1], *dir = argv[6];
    const char *dts = argc == 8 ? argv[7] : "f32";
    if (strcmp(dts, "f32") != 0 && strcmp(dts, "f64") != 0) {
        fprintf(stderr, "dump_step: element type '%s' must be f32 or f64\n", dts);
        return 2;
    }
    const int f64 = strcmp(dts, "f64") == 0;
    const size_t es = f64 ? 8 : 4;
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
    void **init = calloc((size_t)nt, sizeof *init); /* buffers' initial values */
    for (tsl_tid t = 0; t < nt; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        size_t nb = run_bytes(g, t, es);
        buf[t] = calloc(1, nb + 64);
        if (!buf[t]) {
            fprintf(stderr, "dump_step: out of host memory for '%s'\n", tt->name);
            return 1;
        }
        if (tt->kind != TSL_KIND_PARAM && tt->kind != TSL_KIND_BUFFER) continue;
        int64_t n = tsl_shape_numel(&tt->shape);
        float *v = malloc((size_t)n * sizeof *v + 64);
        tsl_init_value(g, t, 1234, v);
        for (int64_t i = 0; i < n; i++) put(buf[t], i, f64, v[i]);
        free(v);
        if (tt->kind == TSL_KIND_BUFFER) {
            init[t] = malloc(nb);
            memcpy(init[t], buf[t], nb);
        }
    }
    /* The batch: inputs in [-1,1), labels spread over the classes. */
    tsl_tid x = tsl_graph_find(g, "input"), y = tsl_graph_find(g, "label");
    int64_t nx = tsl_shape_numel(&tsl_graph_tensor(g, x)->shape);
    for (int64_t i = 0; i < nx; i++)
        put(buf[x], i, f64, (float)(2.0 * tsl__u01(0xABCDull + (uint64_t)i) - 1.0));
    int32_t *yv = buf[y];
    int64_t ny = tsl_shape_numel(&tsl_graph_tensor(g, y)->shape);
    for (int64_t i = 0; i < ny; i++) yv[i] = (int32_t)((i * 7 + 3) % cfg.n_classes);
    /* BN buffers' running variance starts at one (init ONE), mean at zero. */
    if (!(f64 ? run_f64(g, buf, 2) : run_f32(g, buf, 2))) return 1;
    const double lossv = f64 ? *(double *)buf[loss] : (double)*(float *)buf[loss];

    json_t *m = json_object(), *params = json_array(), *drops = json_array();
    json_object_set_new(m, "model", json_string(model));
    json_object_set_new(m, "dtype", json_string(dts));
    json_object_set_new(m, "batch", json_integer(cfg.batch));
    json_object_set_new(m, "image_size", json_integer(cfg.image_size));
    json_object_set_new(m, "in_channels", json_integer(cfg.in_channels));
    json_object_set_new(m, "n_classes", json_integer(cfg.n_classes));
    json_object_set_new(m, "loss", json_real(lossv));
    json_object_set_new(m, "input_shape", shape_json(&tsl_graph_tensor(g, x)->shape));
    json_object_set_new(m, "label_shape", shape_json(&tsl_graph_tensor(g, y)->shape));
    int ok = write_bin(dir, "input.bin", buf[x], run_bytes(g, x, es)) &&
             write_bin(dir, "label.bin", buf[y], run_bytes(g, y, es));
    int k = 0;
    for (tsl_tid t = 0; t < nt && ok; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        if (tt->kind != TSL_KIND_PARAM && tt->kind != TSL_KIND_BUFFER) continue;
        char f[64], gf[64], inf[64];
        snprintf(f, sizeof f, "p%04d.bin", k);
        snprintf(gf, sizeof gf, "g%04d.bin", k);
        snprintf(inf, sizeof inf, "i%04d.bin", k++);
        json_t *p = json_object();
        json_object_set_new(p, "name", json_string(tt->name));
        json_object_set_new(p, "kind", json_string(tsl_kind_name(tt->kind)));
        json_object_set_new(p, "shape", shape_json(&tt->shape));
        json_object_set_new(p, "file", json_string(f));
        ok &= write_bin(dir, f, buf[t], run_bytes(g, t, es));
        if (tt->kind == TSL_KIND_PARAM && tt->grad != TSL_NONE) {
            json_object_set_new(p, "grad_file", json_string(gf));
            ok &= write_bin(dir, gf, buf[tt->grad], run_bytes(g, t, es));
        }
        if (tt->kind == TSL_KIND_BUFFER) {
            json_object_set_new(p, "initial_file", json_string(inf));
            ok &= write_bin(dir, inf, init[t], run_bytes(g, t, es));
        }
        json_array_append_new(params, p);
    }
    int nd = 0;
    for (int32_t i = 0; i < tsl_graph_n_ops(g) && ok; i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        if (op->type != TSL_OP_DROPOUT) continue;
        char f[64];
        snprintf(f, sizeof f, "d%04d.bin", nd++);
        json_t *d = json_object();
        json_object_set_new(d, "name", json_string(op->name));
        json_object_set_new(d, "p", json_real(op->attr.dropout.p));
        json_object_set_new(d, "shape", shape_json(&tsl_graph_tensor(g, op->out[1])->shape));
        json_object_set_new(d, "file", json_string(f));
        ok &= write_bin(dir, f, buf[op->out[1]], run_bytes(g, op->out[1], es));
        json_array_append_new(drops, d);
    }
    json_object_set_new(m, "params", params);
    json_object_set_new(m, "dropout", drops);
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    if (!ok || json_dump_file(m, path, JSON_INDENT(1) | JSON_REAL_PRECISION(17)) != 0) {
        fprintf(stderr, "dump_step: cannot write %s\n", path);
        return 1;
    }
    printf("dumped %s (%s): %d tensors, %d dropout masks, loss %.10f\n", model, dts, k, nd, lossv);
    json_decref(m);
    for (tsl_tid t = 0; t < nt; t++) {
        free(buf[t]);
        free(init[t]);
    }
    free(buf);
    free(init);
    tsl_graph_free(g);
    return 0;
}
