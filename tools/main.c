/*
 * main.c - the tensile command: dispatch to subcommands, global help, and
 * what every command shares at its end: output that could not be written
 * to stdout (a full disk, a closed pipe) is an error (exit 1, said on
 * stderr), and SIGINT / SIGTERM end the command with a message, exit
 * 130 / 143, and no partial output file left behind.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "io/atomic_file.h"

static const char *command = "tensile"; /* for messages: "tensile plan" */
static char command_buf[64];
static int stdout_checked;

/* Flushes stdout and returns 0 if everything written to it arrived, else
 * prints why on stderr and returns 1. Once only. */
static int check_stdout(void) {
    if (stdout_checked) return 0;
    stdout_checked = 1;
    int bad = ferror(stdout), e = 0;
    if (fflush(stdout) != 0) e = errno;
    if (bad || e) {
        fprintf(stderr, "%s: cannot write standard output: %s\n", command,
                e ? strerror(e) : "a write failed");
        return 1;
    }
    return 0;
}

/* At exit (a command that ended with exit(), such as --help): a lost
 * stdout turns status 0 into 1. */
static void check_stdout_at_exit(void) {
    if (check_stdout()) _exit(1);
}

/* SIGINT, SIGTERM: removes the temporary files of outputs being written,
 * says so, and ends with the signal's own status (128 + signal). Only
 * async-signal-safe calls. */
static void on_signal(int sig) {
    tsl__out_remove_pending();
    const char *what = sig == SIGINT ? ": interrupted (SIGINT)\n" : ": terminated (SIGTERM)\n";
    ssize_t ignored = write(2, command, strlen(command));
    ignored = write(2, what, strlen(what));
    (void)ignored;
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_handlers(const char *cmd) {
    /* Not a terminal: one buffer larger than any help text or report, so
     * that a write that fails does so at the final flush, where its errno
     * is still known (a failure inside stdio's own flushes loses it) */
    static char stdout_buf[1 << 16]; /* (glibc ignores the size without a buffer) */
    if (!isatty(STDOUT_FILENO)) setvbuf(stdout, stdout_buf, _IOFBF, sizeof stdout_buf);
    snprintf(command_buf, sizeof command_buf, "tensile %s", cmd);
    command = command_buf;
    atexit(check_stdout_at_exit);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* The command's status, made 1 if its stdout was lost. */
static int finish(int rc) {
    if (check_stdout() && rc == 0) rc = 1;
    return rc;
}

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
    "          run by the runtime) on the same data; compare memory, time, results;\n"
    "          with --connect, one job under the daemon\n"
    "  serve   the daemon (also tensiled): several jobs planned together on one\n"
    "          device, each in a region sized to its plan, queued when none fits\n"
    "  submit  start a job under the daemon in the background; prints its id\n"
    "  status  the daemon's device and jobs\n"
    "  cancel  stop a queued or running job\n"
    "  bench   bench paper: the seed papers' tables and figures with Tensile's\n"
    "          numbers beside the papers' own (CSV, Markdown, PNG and SVG)\n"
    "  frontier\n"
    "          one job's memory/overhead frontier: every policy's simulated\n"
    "          overhead at budgets falling from vanilla's footprint to the op floor\n"
    "\n"
    "'tensile COMMAND --help' describes each command's options.\n"
    "\n"
    "Exit status: 0 done, 1 error (output that cannot be written, stdout\n"
    "included), 2 bad arguments (with a message naming the option and the\n"
    "value), 3 out of device memory or a plan above the budget, 4 (run) final\n"
    "parameters differ, 130 / 143 interrupted by SIGINT / SIGTERM.\n";

int main(int argc, char **argv) {
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    if (!strcmp(base, "tensiled")) { /* the daemon's own name: tensile serve */
        install_handlers("serve");
        return finish(cmd_serve(argc - 1, argv + 1));
    }
    install_handlers(argc >= 2 && strlen(argv[1]) < 32 && argv[1][0] != '-' ? argv[1] : "");
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        command = "tensile";
        fputs(usage, argc < 2 ? stderr : stdout);
        return finish(argc < 2 ? 2 : 0);
    }
    if (strcmp(argv[1], "--version") == 0) {
        command = "tensile";
        printf("tensile 0.1.0\n");
        return finish(0);
    }
    if (strcmp(argv[1], "info") == 0) return finish(cmd_info(argc - 2, argv + 2));
    if (strcmp(argv[1], "train") == 0) return finish(cmd_train(argc - 2, argv + 2));
    if (strcmp(argv[1], "calibrate") == 0) return finish(cmd_calibrate(argc - 2, argv + 2));
    if (strcmp(argv[1], "profile") == 0) return finish(cmd_profile(argc - 2, argv + 2));
    if (strcmp(argv[1], "plan") == 0) return finish(cmd_plan(argc - 2, argv + 2));
    if (strcmp(argv[1], "run") == 0) return finish(cmd_run(argc - 2, argv + 2));
    if (strcmp(argv[1], "serve") == 0) return finish(cmd_serve(argc - 2, argv + 2));
    if (strcmp(argv[1], "submit") == 0) return finish(cmd_submit(argc - 2, argv + 2));
    if (strcmp(argv[1], "status") == 0) return finish(cmd_status(argc - 2, argv + 2));
    if (strcmp(argv[1], "cancel") == 0) return finish(cmd_cancel(argc - 2, argv + 2));
    if (strcmp(argv[1], "bench") == 0) return finish(cmd_bench(argc - 2, argv + 2));
    if (strcmp(argv[1], "frontier") == 0) return finish(cmd_frontier(argc - 2, argv + 2));
    command = "tensile";
    fprintf(stderr, "tensile: unknown command '%s'\n\n%s", argv[1], usage);
    return 2;
}
