/*
 * cmd_serve.c - `tensile serve` (also run as `tensiled`): the daemon, the
 * Global Controller and Memory Scheduler of one device (tensile/daemon.h).
 * In the background by default (the command returns once the daemon
 * listens, its log in a file), or in the foreground with --foreground (log
 * on stderr). `tensile serve --stop` asks a running daemon to end.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "tensile/daemon.h"
#include "tensile/ipc.h"
#include "tensile/job.h"
#include "tensile/policy.h"
#include "tensile/sched_json.h"

static const char help[] =
    "usage: tensile serve --device-memory SIZE [--socket PATH] [--pcie-gbps G] [--profile P]\n"
    "                     [--policy tensile|vanilla] [--admission queue|none]\n"
    "                     [--job-timeout S] [--max-jobs N]\n"
    "                     [--foreground] [--log FILE]\n"
    "       tensile serve --stop [--socket PATH]\n"
    "\n"
    "Starts the daemon of one device (also installed as tensiled): the Global\n"
    "Controller and Memory Scheduler of the TENSILE paper. Jobs submitted to it\n"
    "(tensile submit, tensile run --connect) are planned together and each runs\n"
    "in a region of the device sized to its plan; a job that does not fit waits\n"
    "in a queue, told why; plans are remade on every arrival, departure and\n"
    "latency drift. tensile status shows the device and every job.\n"
    "\n"
    "  --device-memory SIZE the device's memory shared by the jobs, e.g. 4GiB\n"
    "  --socket PATH        where it listens (default: $XDG_RUNTIME_DIR/tensile/\n"
    "                       tensiled.sock, else /tmp/tensile-UID/tensiled.sock);\n"
    "                       mode 0600, only this user's processes are served\n"
    "  --pcie-gbps G        throttle the device's two copy channels, shared by\n"
    "                       every job, to G GB/s (default 0: unthrottled)\n"
    "  --profile P          device profile the plans are made with (default\n"
    "                       cpu-local if tensile calibrate wrote it, else rough)\n"
    "  --policy P           tensile (default) or vanilla (no swapping: jobs are\n"
    "                       admitted at their vanilla footprints)\n"
    "  --admission A        queue (default): a job that does not fit waits until\n"
    "                       memory frees; none: it fails at once with out of\n"
    "                       memory, as on a GPU shared with no scheduler (to\n"
    "                       compare against)\n"
    "  --job-timeout S      a running job silent this long is killed and its\n"
    "                       memory reclaimed (default 60)\n"
    "  --max-jobs N         jobs running at once, at most 64 (default 16)\n"
    "  --foreground         run here, logging to stderr (default: in the\n"
    "                       background, logging to --log)\n"
    "  --log FILE           the background daemon's log (default: tensiled.log\n"
    "                       beside the socket)\n"
    "  --stop               ask the daemon at --socket to end; its jobs keep\n"
    "                       running and reconnect to the next daemon\n"
    "\n"
    "Exit status: 0 started (or stopped), 1 error (a daemon already serves the\n"
    "socket, the device cannot be made), 2 bad arguments.\n";

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig) {
    (void)sig;
    stop_flag = 1;
}

typedef struct serve_opts {
    const char *socket, *profile, *log;
    size_t capacity;
    double pcie_gbps, timeout;
    int policy, admission, max_jobs, foreground, stop;
} serve_opts;

static void parse(int argc, char **argv, serve_opts *t) {
    tsl_args a = {.cmd = "serve", .argc = argc, .argv = argv};
    static const char *const policies[] = {"tensile", "vanilla", NULL};
    static const char *const admissions[] = {"queue", "none", NULL};
    *t = (serve_opts){.timeout = 60, .max_jobs = 16};
    for (const char *o; (o = args_next(&a));) {
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(help, stdout);
            exit(0);
        } else if (!strcmp(o, "--device-memory")) t->capacity = args_size(&a, o);
        else if (!strcmp(o, "--socket")) t->socket = args_value(&a, o);
        else if (!strcmp(o, "--pcie-gbps")) t->pcie_gbps = args_double(&a, o, 0, 1e4);
        else if (!strcmp(o, "--profile")) t->profile = args_value(&a, o);
        else if (!strcmp(o, "--policy")) t->policy = args_choice(&a, o, policies);
        else if (!strcmp(o, "--admission")) t->admission = args_choice(&a, o, admissions);
        else if (!strcmp(o, "--job-timeout")) t->timeout = args_double(&a, o, 0.1, 86400);
        else if (!strcmp(o, "--max-jobs")) t->max_jobs = (int)args_int(&a, o, 1, 64);
        else if (!strcmp(o, "--foreground")) t->foreground = 1;
        else if (!strcmp(o, "--log")) t->log = args_value(&a, o);
        else if (!strcmp(o, "--stop")) t->stop = 1;
        else args_die(&a, "unknown option '%s'", o);
    }
    if (!t->stop && t->capacity == 0) args_die(&a, "--device-memory is required");
    if (t->pcie_gbps > 0 && t->pcie_gbps < 0.001)
        args_die(&a, "--pcie-gbps: %g GB/s is below the floor of 0.001 GB/s", t->pcie_gbps);
}

/* Sends SHUTDOWN to the daemon at path. */
static int stop_daemon(const char *path) {
    int fd;
    tsl_status st = tsl_ipc_connect(path, 2000, &fd);
    if (st == TSL_OK)
        st = tsl_msg_sendf(fd, 2000, TSL_MSG_HELLO, "{s:s, s:I, s:s}", "role", "client", "pid",
                           (json_int_t)getpid(), "client", "tensile 0.1.0");
    tsl_msg m = {0};
    if (st == TSL_OK) st = tsl_msg_recv(fd, 2000, &m, NULL); /* WELCOME */
    tsl_msg_free(&m);
    if (st == TSL_OK) st = tsl_msg_sendf(fd, 2000, TSL_MSG_SHUTDOWN, "{}");
    if (st == TSL_OK) st = tsl_msg_recv(fd, 5000, &m, NULL); /* OK */
    tsl_msg_free(&m);
    if (fd >= 0) close(fd);
    if (st != TSL_OK) {
        fprintf(stderr, "tensile serve --stop: %s\n", tsl_last_error());
        return 1;
    }
    printf("the daemon at %s is stopping\n", path);
    return 0;
}

/* Waits until a daemon answers at path (the background one came up) or
 * the child `pid` ended; 1 if it answers. */
static int wait_listening(const char *path, pid_t pid) {
    for (int i = 0; i < 600; i++) {
        int fd;
        if (tsl_ipc_connect(path, 200, &fd) == TSL_OK) {
            close(fd);
            return 1;
        }
        tsl_clear_error();
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) return 0;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

int cmd_serve(int argc, char **argv) {
    serve_opts t;
    parse(argc, argv, &t);
    char path[108];
    if (t.socket) snprintf(path, sizeof path, "%s", t.socket);
    else if (tsl_ipc_default_path(path, sizeof path) != TSL_OK) {
        fprintf(stderr, "tensile serve: %s\n", tsl_last_error());
        return 1;
    }
    if (t.stop) return stop_daemon(path);
    tsl_daemon_opts o = tsl_daemon_opts_default();
    o.socket_path = path;
    o.capacity = t.capacity;
    o.pcie_gbps = t.pcie_gbps;
    o.job_timeout_s = t.timeout;
    o.max_jobs = t.max_jobs;
    o.no_queue = t.admission == 1;
    o.policy = tsl_policy_find(t.policy ? "vanilla" : "tensile");
    if (tsl_job_default_profile(t.profile, t.pcie_gbps, t.capacity, &o.profile) != TSL_OK) {
        fprintf(stderr, "tensile serve: --profile: %s\n", tsl_last_error());
        return 2;
    }
    o.stop = &stop_flag;
    char logpath[200];
    FILE *log = NULL;
    if (!t.foreground) {
        if (t.log) snprintf(logpath, sizeof logpath, "%s", t.log);
        else {
            snprintf(logpath, sizeof logpath, "%s", path);
            char *slash = strrchr(logpath, '/');
            snprintf(slash ? slash + 1 : logpath, sizeof logpath - (size_t)(slash ? slash + 1 - logpath : 0),
                     "tensiled.log");
        }
        log = fopen(logpath, "a");
        if (!log) {
            fprintf(stderr, "tensile serve: --log: cannot open %s: %s\n", logpath, strerror(errno));
            return 1;
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "tensile serve: fork: %s\n", strerror(errno));
            return 1;
        }
        if (pid > 0) { /* the command: back once the daemon listens */
            fclose(log);
            if (!wait_listening(path, pid)) {
                fprintf(stderr, "tensile serve: the daemon did not start; its log %s says why\n",
                        logpath);
                return 1;
            }
            printf("tensiled (pid %d) serves %s; log %s\n", (int)pid, path, logpath);
            return 0;
        }
        setsid();
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 0);
            dup2(nul, 1);
            dup2(fileno(log), 2);
            if (nul > 2) close(nul);
        }
        o.log = log;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    tsl_status st = tsl_daemon_run(&o);
    if (st != TSL_OK) {
        fprintf(o.log ? o.log : stderr, "tensile serve: %s\n", tsl_last_error());
        if (log) fclose(log);
        return 1;
    }
    if (log) fclose(log);
    if (!t.foreground) _exit(0);
    return 0;
}
