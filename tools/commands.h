/* commands.h - the tensile subcommands and what they share. */
#ifndef TSL_TOOLS_COMMANDS_H
#define TSL_TOOLS_COMMANDS_H
#include "tensile/ops.h"
#include "tensile/models.h"

int cmd_info(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_run(int argc, char **argv);

/* Builds model + loss + backward + optimizer and finalizes. On error prints
 * "tensile CMD: ..." with the library's message and returns NULL. */
tsl_graph *tool_build_training_graph(const char *cmd, const char *model, const tsl_model_cfg *cfg,
                                     const tsl_optimizer_cfg *opt);

/* 1 if `name` is a known model; else prints the list and returns 0. */
int tool_check_model(const char *cmd, const char *name);
#endif
