/*
 * cmd_submit.c - `tensile submit`: starts a job process under the daemon
 * (`tensile run --connect` in the background, its own session, its output
 * in a log file) and returns its id once the daemon has given it one.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "tensile/ipc.h"

static const char help[] =
    "usage: tensile submit --model M --batch B [--iterations N | --epochs E] [--dataset ...]\n"
    "                      [--max-swap-rate R] [--socket PATH] [--log FILE] [run options]\n"
    "\n"
    "Starts one training job under the daemon (tensile serve) in the\n"
    "background and prints its id once the daemon has registered it (queued or\n"
    "admitted). The job is 'tensile run --connect' with the same options (see\n"
    "tensile run --connect --help); its output goes to --log. tensile status\n"
    "follows it; tensile cancel ID stops it.\n"
    "\n"
    "  --log FILE           the job's output (default: job-PID.log beside the\n"
    "                       daemon's socket)\n"
    "  --wait-timeout S     how long to wait for the daemon to register the job\n"
    "                       (default 120 s: a large model's graph takes a while)\n"
    "\n"
    "Exit status: 0 submitted, 1 the job could not start (its log says why), 2\n"
    "bad arguments.\n";

int cmd_submit(int argc, char **argv) {
    tsl_args a = {.cmd = "submit", .argc = argc, .argv = argv};
    const char *log = NULL, *socket = NULL;
    double wait_s = 120;
    /* our own options out, the rest handed to run --connect */
    char **args = calloc((size_t)argc + 8, sizeof *args);
    if (!args) {
        fprintf(stderr, "tensile submit: out of host memory\n");
        return 1;
    }
    int n = 0;
    static char self[4096];
    ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
    if (l <= 0) {
        fprintf(stderr, "tensile submit: cannot find this program: %s\n", strerror(errno));
        free(args);
        return 1;
    }
    self[l] = '\0';
    args[n++] = self;
    args[n++] = "run";
    args[n++] = "--connect";
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(help, stdout);
            free(args);
            exit(0);
        }
        if (!strcmp(argv[i], "--log") && i + 1 < argc) log = argv[++i];
        else if (!strcmp(argv[i], "--wait-timeout") && i + 1 < argc) {
            a.i = i + 1;
            wait_s = args_double(&a, "--wait-timeout", 1, 86400);
            i++;
        } else {
            if (!strcmp(argv[i], "--socket") && i + 1 < argc) socket = argv[i + 1];
            if (!strcmp(argv[i], "--id-fd") || !strcmp(argv[i], "--json"))
                args_die(&a, "%s is the job's own business (see its log)", argv[i]);
            args[n++] = argv[i];
        }
    }
    char path[108], logpath[256];
    if (socket) snprintf(path, sizeof path, "%s", socket);
    else if (tsl_ipc_default_path(path, sizeof path) != TSL_OK) {
        fprintf(stderr, "tensile submit: %s\n", tsl_last_error());
        free(args);
        return 1;
    }
    int p[2];
    if (pipe(p) != 0) {
        fprintf(stderr, "tensile submit: pipe: %s\n", strerror(errno));
        free(args);
        return 1;
    }
    char fdarg[16];
    snprintf(fdarg, sizeof fdarg, "%d", p[1]);
    args[n++] = "--id-fd";
    args[n++] = fdarg;
    args[n] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "tensile submit: fork: %s\n", strerror(errno));
        free(args);
        return 1;
    }
    if (log) snprintf(logpath, sizeof logpath, "%s", log);
    else {
        snprintf(logpath, sizeof logpath, "%s", path);
        char *slash = strrchr(logpath, '/');
        size_t off = slash ? (size_t)(slash + 1 - logpath) : 0;
        snprintf(logpath + off, sizeof logpath - off, "job-%d.log", (int)(pid ? pid : getpid()));
    }
    if (pid == 0) {
        close(p[0]);
        setsid();
        int out = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        int nul = open("/dev/null", O_RDONLY);
        if (out < 0) _exit(126);
        if (nul >= 0) dup2(nul, 0);
        dup2(out, 1);
        dup2(out, 2);
        execv(self, args);
        fprintf(stderr, "tensile submit: exec %s: %s\n", self, strerror(errno));
        _exit(127);
    }
    close(p[1]);
    free(args);
    char buf[64] = "";
    size_t got = 0;
    struct pollfd pf = {p[0], POLLIN, 0};
    int waited = 0;
    while (got < sizeof buf - 1 && waited < (int)(wait_s * 10)) {
        int r = poll(&pf, 1, 100);
        if (r > 0) {
            ssize_t k = read(p[0], buf + got, sizeof buf - 1 - got);
            if (k <= 0) break;
            got += (size_t)k;
            if (memchr(buf, '\n', got)) break;
        } else if (r == 0) {
            waited++;
        }
    }
    close(p[0]);
    buf[got] = '\0';
    long long id = atoll(buf);
    if (id <= 0) {
        int status;
        int ended = waitpid(pid, &status, WNOHANG) == pid;
        fprintf(stderr, "tensile submit: the job (pid %d) %s without an id from the daemon; its "
                        "log %s says why:\n",
                (int)pid, ended ? "ended" : "is still waiting", logpath);
        FILE *f = fopen(logpath, "r");
        if (f) {
            char line[512];
            while (fgets(line, sizeof line, f)) fprintf(stderr, "  %s", line);
            fclose(f);
        }
        return 1;
    }
    printf("job %lld submitted (pid %d, log %s)\n", id, (int)pid, logpath);
    return 0;
}
