/*
 * tensile/daemon.h - several training jobs on one device (docs/DAEMON.md):
 * the daemon (`tensile serve`, the paper's Global Controller and Memory
 * Scheduler) and what a job process does to be one of its jobs (the
 * daemon layer).
 *
 * The daemon owns the device: a CPU device shared by processes
 * (tensile/shdev.h) of a given capacity, whose copy channels every job
 * shares chunk by chunk. Jobs connect over a Unix socket (docs/PROTOCOL.md),
 * register their workloads and are admitted when the jobs planned together
 * with them fit the device; each then runs in a region of the device sized
 * to its plan's footprint, reports its latencies every iteration, and takes
 * the new plans the daemon makes on every arrival, departure and drift at
 * its iteration boundaries. A job that cannot fit waits in a queue, told
 * why. A job that dies, or stops reporting, is reclaimed; one that
 * outlives the daemon keeps its last plan and reconnects to the next
 * daemon on the same socket, which recovers it (RESUME).
 *
 * Example usage (the daemon):
 *
 *   tsl_daemon_opts o = tsl_daemon_opts_default();
 *   o.capacity = 4ull << 30;
 *   o.pcie_gbps = 12;
 *   o.stop = &stop_flag;                 // set by SIGINT / SIGTERM handlers
 *   if (tsl_daemon_run(&o) != TSL_OK) die(tsl_last_error());
 *
 * and a job process: see tsl_dclient below, and tools/run_connected.c.
 */
#ifndef TENSILE_DAEMON_H
#define TENSILE_DAEMON_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "tensile/plan.h"
#include "tensile/policy.h"
#include "tensile/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the daemon ------------------------------------------------------------------ */

typedef struct tsl_daemon_opts {
    const char *socket_path;   /* NULL: tsl_ipc_default_path */
    size_t capacity;           /* the device's memory, bytes (> 0) */
    tsl_device_profile profile; /* the device as the planner sees it (copy bandwidths,
                                   latency, FLOP rate); its copy bandwidths are set to
                                   pcie_gbps when that is > 0 */
    double pcie_gbps;          /* the shared channels' throttle, GB/s (0: unthrottled) */
    const tsl_policy *policy;  /* NULL: tensile */
    double job_timeout_s;      /* a running job silent this long is reclaimed (default 60) */
    int max_jobs;              /* jobs admitted at once: the device's slots (default 16) */
    int no_queue;              /* 1: no admission control - a job that does not fit when it
                                  arrives fails at once, as a job on a GPU shared without a
                                  scheduler dies of out-of-memory (for comparisons); default
                                  0: it waits in the queue */
    const char *shm_tag;       /* the device's shared-memory name tag; NULL: derived from the
                                  socket path */
    FILE *log;                 /* one line per event (NULL: stderr) */
    volatile sig_atomic_t *stop; /* the loop ends when it becomes non-zero (NULL: never) */
    int keep_device;           /* 1: leave the shared device's name on exit (a daemon to be
                                  restarted while jobs run); default 0: removed when no job
                                  holds it */
} tsl_daemon_opts;

tsl_daemon_opts tsl_daemon_opts_default(void);

/* Runs the daemon until *o->stop is set or a client asks it to shut down:
 * listens on the socket (refusing to start where a daemon already serves),
 * creates (or adopts, after a crash) the shared device, serves jobs and
 * clients. Jobs still running when it ends keep running on their last plan
 * and reconnect to the next daemon. TSL_OK, or TSL_ERR_INVALID (options,
 * named), TSL_ERR_IO (the socket, the device). */
tsl_status tsl_daemon_run(const tsl_daemon_opts *o);

/* ---- a job process's side -------------------------------------------------------- */

/* A job's connection to the daemon. */
typedef struct tsl_dclient tsl_dclient;

/* What the daemon said in its WELCOME. */
typedef struct tsl_dclient_device {
    size_t capacity;           /* the device's bytes */
    double pcie_gbps;          /* its channels' rate */
    tsl_device_profile profile; /* the device as the daemon plans it */
    char shm[80];              /* the shared device's name (tsl_shdev_open) */
    double job_timeout_s;
} tsl_dclient_device;

/* A plan from the daemon (a PLAN message), parsed against the job's
 * workload. The plan and the workload it was made from are the receiver's
 * (tsl_dplan_free). */
typedef struct tsl_dplan {
    int64_t job_id, seq;
    int slot;
    size_t region;             /* bytes the job may hold once the plan is in force */
    double share;              /* the share of the channels it was made for */
    char reason[16];           /* "admitted", "arrival", "departure", "drift", "resume" */
    tsl_plan *plan;
    tsl_workload *w;           /* the job's workload with the latencies it was made from */
} tsl_dplan;

void tsl_dplan_free(tsl_dplan *p);

/* Called for every QUEUED message while a job waits (may be NULL). */
typedef void (*tsl_dclient_queued_fn)(void *user, int64_t job_id, const char *reason,
                                      size_t needed, size_t available, int position);

/* How long a client waits for the daemon's reply to a request (the
 * WELCOME, a STATUS). The daemon is one thread and answers between the
 * events it handles; planning every job anew on an arrival takes it
 * seconds on a loaded machine (5 s was once too short for five models on
 * two busy cores), so a slow reply is waited for, not taken for a dead
 * daemon: a dead one closes the socket, which ends the wait at once. */
#define TSL_DCLIENT_REPLY_MS 60000

/* Connects to the daemon at `socket_path` (NULL: the default path) within
 * timeout_ms, says HELLO as a job and reads the WELCOME into *dev (may be
 * NULL). TSL_ERR_IO "no daemon at PATH; start one with 'tensile serve'",
 * TSL_ERR_TIMEOUT, TSL_ERR_FORMAT (a message that does not validate), or the
 * daemon's ERROR as TSL_ERR_INVALID with its text. */
tsl_status tsl_dclient_connect(const char *socket_path, int timeout_ms, tsl_dclient **out,
                               tsl_dclient_device *dev);
void tsl_dclient_free(tsl_dclient *c); /* closes the connection; NULL is fine */

/* Registers the job: its name (1 to 63 characters), model, batch,
 * iterations, max swap rate (its priority, [0, 1]) and workload w (kept by
 * the caller; plans are parsed against it). */
tsl_status tsl_dclient_register(tsl_dclient *c, const char *name, const char *model,
                                int64_t batch, int64_t iterations, double max_swap_rate,
                                const tsl_workload *w);

/* Waits (at most timeout_ms; -1: for ever) for the job's first plan,
 * calling on_queued for each QUEUED; *out on TSL_OK. A STOP is
 * TSL_ERR_INVALID "stopped by the daemon: REASON". */
tsl_status tsl_dclient_wait_plan(tsl_dclient *c, int timeout_ms, tsl_dclient_queued_fn on_queued,
                                 void *user, tsl_dplan *out);

/* Looks, without waiting, for a message from the daemon: *got 1 and *out a
 * new plan (PLAN), *got 2 and `reason` the daemon's STOP (the job should end
 * at its boundary), *got 0 for nothing. TSL_ERR_IO when the daemon is gone
 * (the connection is closed: the job goes on with its last plan and may
 * tsl_dclient_resume). */
tsl_status tsl_dclient_poll(tsl_dclient *c, int *got, tsl_dplan *out, char *reason,
                            size_t reason_len);

/* PLAN_ACK: plan `seq` is in force since iteration `iteration`, the job
 * holding footprint_bytes. */
tsl_status tsl_dclient_ack(tsl_dclient *c, int64_t seq, int64_t iteration, size_t footprint_bytes);

/* The figures of one iteration (a REPORT). */
typedef struct tsl_dclient_report {
    int64_t iteration;
    double iter_ms, kernel_ms, stall_ms;
    const double *latencies_us; /* n_ops estimates (the runtime's EWMA) */
    int32_t n_ops;
    size_t load, footprint, peak_footprint;
    int64_t swaps, evictions, passive_swaps;
} tsl_dclient_report;
tsl_status tsl_dclient_report_send(tsl_dclient *c, const tsl_dclient_report *r);

/* DONE (the job trained to the end) or FAILED (message). */
tsl_status tsl_dclient_done(tsl_dclient *c, int64_t iterations, uint64_t param_checksum,
                            double iter_ms, size_t peak_footprint);
tsl_status tsl_dclient_failed(tsl_dclient *c, const char *message);

/* After the daemon went away: connects to the (next) daemon at the same
 * path within timeout_ms and tells it who the job is and where it runs
 * (RESUME: its registration, its plan in force `p`, its iteration). *dev as
 * tsl_dclient_connect. On success c is connected again; on failure c is
 * unchanged (still disconnected) and may try again later. */
tsl_status tsl_dclient_resume(tsl_dclient *c, int timeout_ms, const tsl_dplan *p,
                              int64_t iteration, tsl_dclient_device *dev);

/* 1 while c has a connection to a daemon. */
int tsl_dclient_connected(const tsl_dclient *c);

#ifdef __cplusplus
}
#endif
#endif
