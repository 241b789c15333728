/* commands.h - the tensile subcommands and what they share. */
#ifndef TSL_TOOLS_COMMANDS_H
#define TSL_TOOLS_COMMANDS_H
#include "tensile/ops.h"
#include "tensile/models.h"

int cmd_info(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_run_connected(int argc, char **argv); /* tensile run --connect (run_connected.c) */
int cmd_serve(int argc, char **argv);
int cmd_submit(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_bench(int argc, char **argv);  /* tensile bench paper (cmd_bench.c) */
int cmd_frontier(int argc, char **argv); /* tensile frontier (cmd_frontier.c) */

/* --optimizer-step's values, indexed by tsl_optimizer_step: "backward"
 * (the default: each update right after its gradient is complete) and
 * "end" (every update after the backward pass: the seed papers' optimizer
 * phase); NULL-terminated for args_choice. */
extern const char *const tool_step_names[];

/* Builds model + loss + backward + optimizer and finalizes. On error prints
 * "tensile CMD: ..." with the library's message and returns NULL with
 * *rc the exit status: 2 when the configuration cannot make the model (an
 * image too small, a tensor larger than any device: the arguments are at
 * fault), 1 otherwise (out of host memory); *rc is left alone on success.
 * rc may be NULL. */
tsl_graph *tool_build_training_graph(const char *cmd, const char *model, const tsl_model_cfg *cfg,
                                     const tsl_optimizer_cfg *opt, int *rc);

/* 1 if `name` is a known model; else prints "tensile CMD: OPT: unknown
 * model 'NAME' (expected one of: ...)" and returns 0. */
int tool_check_model(const char *cmd, const char *opt, const char *name);

/* Checks, before the work starts, that output file `path` given with
 * option `opt` can be written (io/atomic_file.h); prints "tensile CMD:
 * OPT: ..." and returns 0 if not. */
int tool_check_output(const char *cmd, const char *opt, const char *path);
#endif
