/* build_graph.c - the training graph every command starts from. */
#include <stdio.h>
#include <string.h>
#include "commands.h"

int tool_check_model(const char *cmd, const char *name) {
    const char *const *names = tsl_model_names();
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0) return 1;
    fprintf(stderr, "tensile %s: --model: unknown model '%s' (expected one of:", cmd, name);
    for (int i = 0; names[i]; i++) fprintf(stderr, "%s %s", i ? "," : "", names[i]);
    fprintf(stderr, ")\n");
    return 0;
}

tsl_graph *tool_build_training_graph(const char *cmd, const char *model, const tsl_model_cfg *cfg,
                                     const tsl_optimizer_cfg *opt) {
    tsl_graph *g = tsl_graph_new(model);
    tsl_tid loss;
    if (!g) {
        fprintf(stderr, "tensile %s: out of host memory\n", cmd);
        return NULL;
    }
    if (tsl_model_build(g, model, cfg, &loss) != TSL_OK || tsl_graph_backward(g, loss) != TSL_OK ||
        tsl_graph_optimizer(g, opt) != TSL_OK || tsl_graph_finalize(g) != TSL_OK) {
        fprintf(stderr, "tensile %s: cannot build %s: %s\n", cmd, model, tsl_last_error());
        tsl_graph_free(g);
        return NULL;
    }
    return g;
}
