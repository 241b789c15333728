/*
 * daemon_internal.h - the Global Controller's state (daemon.c, conn.c,
 * handle.c, status.c), beside the Memory Scheduler (ms.h).
 *
 * One thread runs everything: a poll loop over the listening socket and
 * every connection, with timers for silent jobs and dying processes. A
 * job's connection carries its id; a job's figures (what it reported) and
 * its place on the shared device (slot, pid) live in its tsl__jobx, beside
 * the scheduler's tsl__djob.
 */
#ifndef TSL_DAEMON_INTERNAL_H
#define TSL_DAEMON_INTERNAL_H

#include <stdio.h>
#include <sys/types.h>

#include "daemon/ms.h"
#include "tensile/daemon.h"
#include "tensile/ipc.h"
#include "tensile/shdev.h"

/* What the controller keeps of a job beside the scheduler's record. */
typedef struct tsl__jobx {
    int64_t id;
    pid_t pid;
    int slot;                /* its slot of the shared device, -1 */
    int conn;                /* its connection's index, -1 when it has none */
    double last_ms;          /* the time of its last message */
    double kill_ms;          /* > 0: SIGKILLed then; reclaimed once it is gone */
    /* its figures */
    int64_t iterations_done;
    double iter_ms, kernel_ms, stall_ms;
    size_t load, footprint, peak_footprint;
    int64_t swaps, evictions, passive_swaps;
    char checksum[17];
} tsl__jobx;

/* One connection. */
typedef struct tsl__conn {
    int fd;                  /* -1: a free entry */
    pid_t pid;               /* the peer (SO_PEERCRED) */
    tsl_msg_reader *r;
    tsl_conv conv;
    int64_t job;             /* the job it speaks for (a job's connection), 0 */
    int mute;                /* a send failed: nothing more is sent, but what the peer sent
                                before it went (a DONE) is still read, up to its end */
    uint8_t *out;            /* bytes queued for the peer, written as its socket takes them
                                (never a blocking send: a job reads between iterations) */
    size_t out_len, out_off;
    double since_ms;
} tsl__conn;

typedef struct tsl__daemon {
    tsl_daemon_opts o;
    tsl__ms ms;
    tsl__jobx *x;            /* per job, indexed like ms.jobs */
    int n_x, cap_x;
    tsl_shdev *dev;
    char shm[80];
    char path[108];
    int lfd;
    tsl__conn *conns;
    int n_conns;
    FILE *log;
    int shutdown;            /* a client asked the daemon to end */
    double t0_ms;
    double drift_hold_ms;    /* no replanning for drift before this (tsl__d_now): planning,
                                which blocks the loop, takes at most a fifth of its time */
} tsl__daemon;

/* Milliseconds on the monotonic clock. */
double tsl__d_now(void);

/* Writes one line to the log: time, then the formatted text. */
void tsl__d_log(tsl__daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The controller's record of scheduler job j (grown to match ms.jobs). */
tsl__jobx *tsl__d_x(tsl__daemon *d, const tsl__djob *j);

/* handle.c: one validated message from connection c. Returns 0 to keep
 * the connection, -1 to close it (after an ERROR was sent, or the end). */
int tsl__d_handle(tsl__daemon *d, int c, const tsl_msg *m);
/* handle.c: sends every plan that may go now (regions raised first). */
void tsl__d_dispatch(tsl__daemon *d);
/* handle.c: job j's process is gone (or is to be dropped): its slot
 * reclaimed (or the reclaim retried later), it ended FAILED with `why`,
 * the others replanned, the queue tried. */
void tsl__d_job_gone(tsl__daemon *d, tsl__djob *j, const char *why);
/* handle.c: after a change that frees memory or adds a job: replans,
 * admits the queue's head while it fits, dispatches. */
void tsl__d_reschedule(tsl__daemon *d, const char *why);

/* status.c: the STATUS message's body (a new reference), NULL if out of
 * memory. */
json_t *tsl__d_status(tsl__daemon *d);

/* conn.c: closes connection c (its job, if any, keeps running: a job
 * whose connection closes without DONE or FAILED is checked for life). */
void tsl__d_close(tsl__daemon *d, int c);
/* conn.c: sends m on connection c through its conversation: queued and
 * written as far as the socket takes it now (the rest when it can take
 * more: tsl__d_flush). Returns 0, or -1 when the peer is gone or has left
 * more than TSL__D_OUT_MAX bytes unread (the connection is then muted). */
int tsl__d_send(tsl__daemon *d, int c, tsl_msg *m);
/* conn.c: writes what connection c has queued, as far as its socket takes
 * it. */
void tsl__d_flush(tsl__daemon *d, int c);
#define TSL__D_OUT_MAX ((size_t)64 << 20)

#endif
