/*
 * main.c - the tensile command: dispatch to subcommands, global help.
 */
#include <stdio.h>
#include <string.h>
#include "commands.h"

static const char usage[] =
    "usage: tensile COMMAND [OPTIONS]\n"
    "\n"
    "Tensile trains deep-learning models in a fixed device-memory budget and\n"
    "schedules tensor swapping and recomputation so that several jobs share\n"
    "one GPU.\n"
    "\n"
    "commands:\n"
    "  info    build a model's training graph and report its size and vanilla\n"
    "          peak memory, without allocating (a dry run)\n"
    "  train   train a model on Fashion-MNIST or synthetic data\n"
    "  calibrate\n"
    "          measure this machine's CPU backend and write it as a device profile\n"
    "  plan    plan swapping and recomputation for one or several jobs on a\n"
    "          device profile (TENSILE), verify and simulate the plans\n"
    "  run     train with the vanilla executor and with a policy (TENSILE's plan\n"
    "          run by the runtime) on the same data; compare memory, time, results\n"
    "\n"
    "'tensile COMMAND --help' describes each command's options.\n";

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("tensile 0.1.0\n");
        return 0;
    }
    if (strcmp(argv[1], "info") == 0) return cmd_info(argc - 2, argv + 2);
    if (strcmp(argv[1], "train") == 0) return cmd_train(argc - 2, argv + 2);
    if (strcmp(argv[1], "calibrate") == 0) return cmd_calibrate(argc - 2, argv + 2);
    if (strcmp(argv[1], "plan") == 0) return cmd_plan(argc - 2, argv + 2);
    if (strcmp(argv[1], "run") == 0) return cmd_run(argc - 2, argv + 2);
    fprintf(stderr, "tensile: unknown command '%s'\n\n%s", argv[1], usage);
    return 2;
}
