/*
 * cmd_info.c - `tensile info`: a model's training graph and its vanilla
 * peak memory, computed by a dry run (nothing is allocated).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "tensile/session.h"

static const char help[] =
    "usage: tensile info --model NAME [--batch B] [--image-size S] [--channels C]\n"
    "                    [--classes K] [--optimizer sgd|adam]\n"
    "                    [--optimizer-step backward|end] [--json]\n"
    "\n"
    "Builds the whole training iteration of a model (forward, loss, backward,\n"
    "optimizer update) and reports its parameters, ops, tensors and the peak\n"
    "load of the vanilla executor, which frees every tensor after its last\n"
    "use. Nothing is allocated: the executor is played against the allocator's\n"
    "ledger (a dry run).\n"
    "\n"
    "  --model NAME       mlp, cnn, vgg11, vgg16, vgg19, resnet18, resnet50,\n"
    "                     inception3, inception4, densenet121, unet, vgg13,\n"
    "                     resnet34, resnet101\n"
    "  --batch B          batch size (default 16)\n"
    "  --image-size S     input height and width (default: the model's own,\n"
    "                     224; 299 for the Inceptions; 28 for mlp and cnn)\n"
    "  --channels C       input channels (default: the model's own)\n"
    "  --classes K        classes (default: the model's own)\n"
    "  --optimizer O      sgd (momentum 0.9, the default) or adam\n"
    "  --optimizer-step S backward (default): each update right after its\n"
    "                     gradient is complete; end: all after the backward pass\n"
    "  --json             one JSON object on stdout\n";

int cmd_info(int argc, char **argv) {
    tsl_args a = {.cmd = "info", .argc = argc, .argv = argv};
    const char *model = NULL;
    int batch = 16, image = 0, channels = 0, classes = 0, json = 0, optimizer = 0;
    int step = TSL_STEP_IN_BACKWARD;
    static const char *const opts[] = {"sgd", "adam", NULL};
    for (const char *o; (o = args_next(&a));) {
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (!strcmp(o, "--model")) model = args_value(&a, o);
        else if (!strcmp(o, "--batch")) batch = (int)args_int(&a, o, 1, 1 << 20);
        else if (!strcmp(o, "--image-size")) image = (int)args_int(&a, o, 1, 1 << 16);
        else if (!strcmp(o, "--channels")) channels = (int)args_int(&a, o, 1, 1 << 16);
        else if (!strcmp(o, "--classes")) classes = (int)args_int(&a, o, 1, 1 << 24);
        else if (!strcmp(o, "--optimizer")) optimizer = args_choice(&a, o, opts);
        else if (!strcmp(o, "--optimizer-step")) step = args_choice(&a, o, tool_step_names);
        else if (!strcmp(o, "--json")) json = 1;
        else args_die(&a, "unknown option '%s'", o);
    }
    if (!model) args_die(&a, "--model is required");
    if (!tool_check_model("info", "--model", model)) return 2;
    tsl_model_cfg cfg = tsl_model_cfg_default(model);
    cfg.batch = batch;
    if (image) cfg.image_size = image;
    if (channels) cfg.in_channels = channels;
    if (classes) cfg.n_classes = classes;
    tsl_optimizer_cfg opt = optimizer ? tsl_adam_default(1e-3f) : tsl_sgd_default(0.01f);
    opt.step = (tsl_optimizer_step)step;
    int rc;
    tsl_graph *g = tool_build_training_graph("info", model, &cfg, &opt, &rc);
    if (!g) return rc;
    tsl_mem_report r;
    /* a ledger larger than any graph (TSL_MAX_GRAPH_BYTES): the dry run
     * reports the peak of any model the graph accepts, never runs out */
    if (tsl_graph_dry_run(g, TSL_MAX_GRAPH_BYTES * 2, &r) != TSL_OK) {
        fprintf(stderr, "tensile info: dry run failed: %s\n", tsl_last_error());
        tsl_graph_free(g);
        return 1;
    }
    int64_t params = tsl_graph_param_count(g);
    size_t pbytes = tsl_graph_bytes_of_kind(g, TSL_KIND_PARAM);
    double flops = 0;
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++) flops += tsl_op_flops(g, tsl_graph_op(g, i));
    const char *peak_op = r.peak_op >= 0 ? tsl_graph_op(g, r.peak_op)->name : "-";
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "model", json_string(model));
        json_object_set_new(o, "batch", json_integer(batch));
        json_object_set_new(o, "image_size", json_integer(cfg.image_size));
        json_object_set_new(o, "channels", json_integer(cfg.in_channels));
        json_object_set_new(o, "classes", json_integer(cfg.n_classes));
        json_object_set_new(o, "optimizer", json_string(opts[optimizer]));
        json_object_set_new(o, "optimizer_step", json_string(tool_step_names[step]));
        json_object_set_new(o, "params", json_integer(params));
        json_object_set_new(o, "param_bytes", json_integer((json_int_t)pbytes));
        json_object_set_new(o, "persistent_bytes", json_integer((json_int_t)r.persistent_bytes));
        json_object_set_new(o, "ops", json_integer(tsl_graph_n_ops(g)));
        json_object_set_new(o, "tensors", json_integer(tsl_graph_n_tensors(g)));
        json_object_set_new(o, "flops_per_iteration", json_real(flops));
        json_object_set_new(o, "vanilla_peak_load_bytes", json_integer((json_int_t)r.peak_load));
        json_object_set_new(o, "vanilla_peak_footprint_bytes",
                            json_integer((json_int_t)r.peak_footprint));
        json_object_set_new(o, "peak_op", json_string(peak_op));
        char *s = json_dumps(o, JSON_COMPACT);
        puts(s);
        free(s);
        json_decref(o);
    } else {
        char b1[32], b2[32], b3[32], b4[32];
        printf("model           %s (batch %d, %dx%dx%d, %d classes, %s)\n", model, batch,
               cfg.in_channels, cfg.image_size, cfg.image_size, cfg.n_classes, opts[optimizer]);
        printf("parameters      %lld (%s)\n", (long long)params, fmt_bytes(pbytes, b1, sizeof b1));
        printf("persistent      %s (parameters, buffers, optimizer states)\n",
               fmt_bytes(r.persistent_bytes, b2, sizeof b2));
        printf("graph           %d ops, %d tensors, %.2f GFLOP per iteration\n", tsl_graph_n_ops(g),
               tsl_graph_n_tensors(g), flops * 1e-9);
        printf("vanilla peak    load %s, footprint %s, at op '%s'\n",
               fmt_bytes(r.peak_load, b3, sizeof b3), fmt_bytes(r.peak_footprint, b4, sizeof b4),
               peak_op);
    }
    tsl_graph_free(g);
    return 0;
}
