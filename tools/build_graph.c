/* build_graph.c - the training graph every command starts from, and the
 * checks of models and output files the commands share. */
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "io/atomic_file.h"

int tool_check_model(const char *cmd, const char *opt, const char *name) {
    const char *const *names = tsl_model_names();
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0) return 1;
    fprintf(stderr, "tensile %s: %s: unknown model '%s' (expected one of:", cmd, opt, name);
    for (int i = 0; names[i]; i++) fprintf(stderr, "%s %s", i ? "," : "", names[i]);
    fprintf(stderr, ")\n");
    return 0;
}

const char *const tool_step_names[] = {"backward", "end", NULL};

tsl_graph *tool_build_training_graph(const char *cmd, const char *model, const tsl_model_cfg *cfg,
                                     const tsl_optimizer_cfg *opt, int *rc) {
    int ignored;
    if (!rc) rc = &ignored;
    tsl_graph *g = tsl_graph_new(model);
    tsl_tid loss;
    if (!g) {
        fprintf(stderr, "tensile %s: out of host memory\n", cmd);
        *rc = 1;
        return NULL;
    }
    tsl_status st = tsl_model_build(g, model, cfg, &loss);
    if (st == TSL_OK) st = tsl_graph_backward(g, loss);
    if (st == TSL_OK) st = tsl_graph_optimizer(g, opt);
    if (st == TSL_OK) st = tsl_graph_finalize(g);
    if (st != TSL_OK) {
        fprintf(stderr, "tensile %s: cannot build %s: %s\n", cmd, model, tsl_last_error());
        /* a configuration the model cannot take is the arguments' fault */
        *rc = st == TSL_ERR_INVALID ? 2 : 1;
        tsl_graph_free(g);
        return NULL;
    }
    return g;
}

int tool_check_output(const char *cmd, const char *opt, const char *path) {
    if (tsl__out_probe(path, "output") == TSL_OK) return 1;
    fprintf(stderr, "tensile %s: %s: %s\n", cmd, opt, tsl_last_error());
    return 0;
}
