/*
 * cmd_status.c - `tensile status` (every job and the device's memory, from
 * the daemon's STATUS) and `tensile cancel ID`: a client of the daemon.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "tensile/daemon.h"
#include "tensile/ipc.h"

static const char status_help[] =
    "usage: tensile status [--socket PATH] [--json] [--watch [SECONDS]]\n"
    "\n"
    "Shows the daemon's device (capacity; the global load, footprint and peak\n"
    "footprint from the shared ledger) and every job: its model, state, memory\n"
    "region, plan footprint, measured footprint and peak, iterations, time per\n"
    "iteration, EOR (the iteration over its kernels' time), swaps, replans, and\n"
    "why it waits or failed.\n"
    "\n"
    "  --socket PATH        the daemon's socket (default as tensile serve)\n"
    "  --json               the daemon's STATUS as one JSON object: capacity_bytes,\n"
    "                       global {load_bytes, footprint_bytes,\n"
    "                       peak_footprint_bytes}, jobs [{id, model, state,\n"
    "                       region_bytes, footprint_bytes, peak_footprint_bytes,\n"
    "                       iterations_done, param_checksum (done), reason\n"
    "                       (queued, failed), ...}] (docs/PROTOCOL.md)\n"
    "  --watch [SECONDS]    again every SECONDS (default 1) until interrupted\n"
    "\n"
    "Exit status: 0, 1 no daemon or an error, 2 bad arguments.\n";

static const char cancel_help[] =
    "usage: tensile cancel ID [--socket PATH]\n"
    "\n"
    "Cancels job ID: a queued job leaves the queue, a running one is told to\n"
    "stop at its next iteration boundary and gives its memory back.\n"
    "\n"
    "Exit status: 0 cancelled, 1 no daemon, no such job, or an error, 2 bad\n"
    "arguments.\n";

/* A client's connection: HELLO as a client and the WELCOME read. -1 on
 * failure (printed). */
static int client_connect(const char *cmd, const char *socket) {
    char path[108];
    if (socket) snprintf(path, sizeof path, "%s", socket);
    else if (tsl_ipc_default_path(path, sizeof path) != TSL_OK) {
        fprintf(stderr, "tensile %s: %s\n", cmd, tsl_last_error());
        return -1;
    }
    int fd;
    tsl_status st = tsl_ipc_connect(path, 2000, &fd);
    if (st == TSL_OK)
        st = tsl_msg_sendf(fd, 2000, TSL_MSG_HELLO, "{s:s, s:I, s:s}", "role", "client", "pid",
                           (json_int_t)getpid(), "client", "tensile 0.1.0");
    tsl_msg m = {0};
    if (st == TSL_OK) st = tsl_msg_recv(fd, TSL_DCLIENT_REPLY_MS, &m, NULL);
    tsl_msg_free(&m);
    if (st != TSL_OK) {
        fprintf(stderr, "tensile %s: %s\n", cmd, tsl_last_error());
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

/* One request and its answer (an ERROR becomes a printed failure). */
static int request(const char *cmd, int fd, tsl_msg_type type, json_t *body, tsl_msg *out) {
    tsl_msg m = {type, body};
    tsl_status st = tsl_msg_validate(type, body);
    if (st == TSL_OK) st = tsl_msg_send(fd, &m, 2000);
    tsl_msg_free(&m);
    if (st == TSL_OK) st = tsl_msg_recv(fd, TSL_DCLIENT_REPLY_MS, out, NULL);
    if (st != TSL_OK) {
        fprintf(stderr, "tensile %s: %s\n", cmd, tsl_last_error());
        return 0;
    }
    if (out->type == TSL_MSG_ERROR) {
        fprintf(stderr, "tensile %s: %s\n", cmd, tsl_msg_str(out, "message", "?"));
        tsl_msg_free(out);
        return 0;
    }
    return 1;
}

static double num(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return v ? json_number_value(v) : NAN;
}

static void print_status(json_t *b) {
    char c1[32], c2[32], c3[32], c4[32];
    json_t *g = json_object_get(b, "global");
    printf("device: %s; load %s, footprint %s, peak footprint %s\n",
           fmt_bytes((size_t)num(b, "capacity_bytes"), c1, sizeof c1),
           fmt_bytes((size_t)num(g, "load_bytes"), c2, sizeof c2),
           fmt_bytes((size_t)num(g, "footprint_bytes"), c3, sizeof c3),
           fmt_bytes((size_t)num(g, "peak_footprint_bytes"), c4, sizeof c4));
    json_t *jobs = json_object_get(b, "jobs");
    if (json_array_size(jobs) == 0) {
        printf("no job\n");
        return;
    }
    printf("%4s %-14s %-8s %11s %11s %11s %11s %6s %9s %6s %6s %7s\n", "id", "model", "state",
           "region", "plan", "footprint", "peak", "iter", "ms/iter", "EOR", "swaps", "replans");
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        char b1[32], b2[32], b3[32], b4[32], ms[16] = "-", eor[16] = "-";
        double it = num(j, "iter_ms"), e = num(j, "eor"), pf = num(j, "plan_footprint_bytes");
        if (isfinite(it)) snprintf(ms, sizeof ms, "%.1f", it);
        if (isfinite(e)) snprintf(eor, sizeof eor, "%.3f", e);
        printf("%4lld %-14s %-8s %11s %11s %11s %11s %6lld %9s %6s %6.0f %7.0f\n",
               (long long)num(j, "id"), json_string_value(json_object_get(j, "model")),
               json_string_value(json_object_get(j, "state")),
               fmt_bytes((size_t)num(j, "region_bytes"), b1, sizeof b1),
               isfinite(pf) ? fmt_bytes((size_t)pf, b2, sizeof b2) : "-",
               fmt_bytes((size_t)num(j, "footprint_bytes"), b3, sizeof b3),
               fmt_bytes((size_t)num(j, "peak_footprint_bytes"), b4, sizeof b4),
               (long long)num(j, "iterations_done"), ms, eor,
               isfinite(num(j, "swaps")) ? num(j, "swaps") : 0,
               isfinite(num(j, "replans")) ? num(j, "replans") : 0);
        const char *why = json_string_value(json_object_get(j, "reason"));
        const char *ck = json_string_value(json_object_get(j, "param_checksum"));
        if (why) printf("     %s\n", why);
        if (ck) printf("     parameters %s\n", ck);
    }
}

int cmd_status(int argc, char **argv) {
    tsl_args a = {.cmd = "status", .argc = argc, .argv = argv};
    const char *socket = NULL;
    int json = 0;
    double watch = 0;
    for (const char *o; (o = args_next(&a));) {
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(status_help, stdout);
            exit(0);
        } else if (!strcmp(o, "--socket")) socket = args_value(&a, o);
        else if (!strcmp(o, "--json")) json = 1;
        else if (!strcmp(o, "--watch")) {
            watch = 1;
            if (a.i < a.argc && a.argv[a.i][0] != '-') watch = args_double(&a, o, 0.1, 3600);
        } else args_die(&a, "unknown option '%s'", o);
    }
    int fd = client_connect("status", socket);
    if (fd < 0) return 1;
    int rc = 0;
    for (;;) {
        tsl_msg m = {0};
        if (!request("status", fd, TSL_MSG_STATUS_REQ, json_object(), &m)) {
            rc = 1;
            break;
        }
        if (json) {
            char *text = json_dumps(m.body, JSON_COMPACT);
            if (text) printf("%s\n", text);
            free(text);
        } else {
            if (watch > 0) printf("\n");
            print_status(m.body);
        }
        tsl_msg_free(&m);
        fflush(stdout);
        if (watch <= 0) break;
        struct timespec ts = {(time_t)watch, (long)((watch - floor(watch)) * 1e9)};
        nanosleep(&ts, NULL);
    }
    close(fd);
    return rc;
}

int cmd_cancel(int argc, char **argv) {
    tsl_args a = {.cmd = "cancel", .argc = argc, .argv = argv};
    const char *socket = NULL;
    int64_t id = 0;
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(cancel_help, stdout);
            exit(0);
        }
    if (argc >= 1 && argv[0][0] != '-') {
        if (args_parse_int(argv[0], 1, INT64_MAX, &id) != 0)
            args_die(&a, "'%s' is not a job id (a positive integer)", argv[0]);
        a.i = 1;
    }
    for (const char *o; (o = args_next(&a));) {
        if (!strcmp(o, "--socket")) socket = args_value(&a, o);
        else args_die(&a, "unknown option '%s'", o);
    }
    if (id == 0) args_die(&a, "the job's id is required (tensile status lists them)");
    int fd = client_connect("cancel", socket);
    if (fd < 0) return 1;
    tsl_msg m = {0};
    int ok = request("cancel", fd, TSL_MSG_CANCEL, json_pack("{s:I}", "job_id", (json_int_t)id), &m);
    if (ok) printf("job %lld cancelled\n", (long long)id);
    tsl_msg_free(&m);
    close(fd);
    return ok ? 0 : 1;
}
