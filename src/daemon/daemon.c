/*
 * daemon.c - the Global Controller's loop (tensile/daemon.h): the socket,
 * the shared device, the poll loop over the connections, and the timers
 * (jobs silent past their timeout, processes being reclaimed).
 *
 * Everything runs on the calling thread; no handler blocks on a peer (a
 * send has a timeout, after which that connection is closed).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon_internal.h"

tsl_daemon_opts tsl_daemon_opts_default(void) {
    tsl_daemon_opts o;
    memset(&o, 0, sizeof o);
    o.profile = tsl_profile_cpu_rough();
    o.job_timeout_s = 60;
    o.max_jobs = 16;
    return o;
}

double tsl__d_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void tsl__d_log(tsl__daemon *d, const char *fmt, ...) {
    char when[40];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(d->log, "%s.%03ldZ tensiled: ", when, ts.tv_nsec / 1000000);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(d->log, fmt, ap);
    va_end(ap);
    fputc('\n', d->log);
    fflush(d->log);
}

tsl__jobx *tsl__d_x(tsl__daemon *d, const tsl__djob *j) {
    for (int i = 0; i < d->n_x; i++)
        if (d->x[i].id == j->id) return &d->x[i];
    if (d->n_x == d->cap_x) {
        int cap = d->cap_x ? 2 * d->cap_x : 16;
        tsl__jobx *a = realloc(d->x, (size_t)cap * sizeof *a);
        if (!a) return NULL;
        d->x = a;
        d->cap_x = cap;
    }
    tsl__jobx *x = &d->x[d->n_x++];
    memset(x, 0, sizeof *x);
    x->id = j->id;
    x->slot = -1;
    x->conn = -1;
    x->last_ms = tsl__d_now();
    return x;
}

static tsl_status check_opts(const tsl_daemon_opts *o) {
    if (o->capacity == 0)
        return tsl_fail(TSL_ERR_INVALID, "daemon: the device's capacity is 0 (--device-memory)");
    if (!(o->job_timeout_s > 0) || o->job_timeout_s > 86400)
        return tsl_fail(TSL_ERR_INVALID, "daemon: job timeout %g s outside (0, 86400]",
                        o->job_timeout_s);
    if (o->max_jobs < 1 || o->max_jobs > TSL_SHDEV_MAX_SLOTS)
        return tsl_fail(TSL_ERR_INVALID, "daemon: max jobs %d outside 1..%d", o->max_jobs,
                        TSL_SHDEV_MAX_SLOTS);
    if (!(o->pcie_gbps >= 0) || o->pcie_gbps > 1e6)
        return tsl_fail(TSL_ERR_INVALID, "daemon: pcie_gbps %g outside [0, 1e6]", o->pcie_gbps);
    return TSL_OK;
}

/* The shared device's tag from the socket path (FNV-1a): one device per
 * socket, found again by a restarted daemon on the same socket. */
static void tag_of(const char *path, char *tag, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (const char *c = path; *c; c++) h = (h ^ (uint8_t)*c) * 1099511628211ull;
    snprintf(tag, n, "d%016llx", (unsigned long long)h);
}

/* Jobs a crashed daemon left on the device: their regions are reserved
 * until they resume or their processes are gone. */
static void adopt(tsl__daemon *d) {
    if (!tsl_shdev_adopted(d->dev)) return;
    tsl_shdev_info *in = malloc(sizeof *in);
    if (!in) return;
    tsl_shdev_read(d->dev, in);
    int n = 0;
    for (int s = 0; s < d->o.max_jobs; s++)
        if (in->slot[s].in_use) {
            d->ms.reserved += in->slot[s].region_bytes;
            n++;
        }
    tsl__d_log(d, "adopted the device %s with %d job%s still on it (%zu bytes reserved until "
                  "they resume)",
               d->shm, n, n == 1 ? "" : "s", d->ms.reserved);
    free(in);
}

/* Slots of the device no job of this daemon holds: a job of a previous
 * daemon that never resumed. Reclaimed once its process is gone. */
static void reap_orphans(tsl__daemon *d) {
    if (d->ms.reserved == 0) return;
    tsl_shdev_info *in = malloc(sizeof *in);
    if (!in) return;
    tsl_shdev_read(d->dev, in);
    for (int s = 0; s < d->o.max_jobs; s++) {
        if (!in->slot[s].in_use) continue;
        int ours = 0;
        for (int i = 0; i < d->n_x && !ours; i++) ours = d->x[i].slot == s;
        if (ours) continue;
        pid_t pid = (pid_t)in->slot[s].pid;
        if (pid > 0 && (kill(pid, 0) == 0 || errno == EPERM)) continue;
        if (tsl_shdev_reclaim(d->dev, s) == TSL_OK) {
            size_t r = in->slot[s].region_bytes;
            d->ms.reserved = d->ms.reserved > r ? d->ms.reserved - r : 0;
            tsl__d_log(d, "slot %d: job %llu of the previous daemon is gone (pid %d): its %zu "
                          "bytes reclaimed",
                       s, (unsigned long long)in->slot[s].job_id, (int)pid, r);
            tsl__d_reschedule(d, "departure");
        }
    }
    free(in);
}

static int alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

/* The timers: silent running jobs, processes being reclaimed. */
static void tick(tsl__daemon *d) {
    double now = tsl__d_now();
    for (int i = 0; i < d->ms.n; i++) {
        tsl__djob *j = d->ms.jobs[i];
        tsl__jobx *x = tsl__d_x(d, j);
        if (!x) continue;
        int active = j->state == TSL__DJ_RUNNING || j->state == TSL__DJ_ADMITTED;
        int queued = j->state == TSL__DJ_QUEUED;
        if (!active && !queued) continue;
        if (x->kill_ms > 0 || x->conn < 0) {
            /* its connection is gone: reclaimed once its process is */
            if (!alive(x->pid)) {
                tsl__d_job_gone(d, j, x->kill_ms > 0 ? "timed out" : "its process ended");
            } else if (x->kill_ms == 0 && now - x->last_ms > 5000) {
                tsl__d_log(d, "job %lld (pid %d): its connection closed 5 s ago and it still "
                              "runs: killed",
                           (long long)j->id, (int)x->pid);
                kill(x->pid, SIGKILL);
                x->kill_ms = now;
            }
            continue;
        }
        if (j->state == TSL__DJ_RUNNING && now - x->last_ms > 1e3 * d->o.job_timeout_s) {
            tsl__d_log(d, "job %lld (pid %d) has not reported for %.0f s (timeout %g s): killed, "
                          "its memory reclaimed",
                       (long long)j->id, (int)x->pid, (now - x->last_ms) * 1e-3,
                       d->o.job_timeout_s);
            if (x->conn >= 0) {
                tsl_msg_send_error(d->conns[x->conn].fd, TSL_MSG_ERR_TIMEOUT,
                                   "no report within the job timeout", 1000);
                tsl__d_close(d, x->conn);
            }
            kill(x->pid, SIGKILL);
            x->kill_ms = now;
        }
    }
    reap_orphans(d);
}

/* Accepts every waiting connection. */
static void accept_all(tsl__daemon *d) {
    for (;;) {
        int fd;
        pid_t pid;
        tsl_status st = tsl_ipc_accept(d->lfd, &fd, &pid);
        if (st != TSL_OK) {
            tsl__d_log(d, "%s", tsl_last_error());
            if (errno == EMFILE || errno == ENFILE) return;
            continue;
        }
        if (fd < 0) return;
        int c = -1;
        for (int i = 0; i < d->n_conns && c < 0; i++)
            if (d->conns[i].fd < 0) c = i;
        if (c < 0) {
            tsl__conn *a = realloc(d->conns, ((size_t)d->n_conns + 1) * sizeof *a);
            if (!a) {
                close(fd);
                tsl__d_log(d, "out of host memory for a connection");
                return;
            }
            d->conns = a;
            c = d->n_conns++;
        }
        tsl__conn *k = &d->conns[c];
        memset(k, 0, sizeof *k);
        k->fd = fd;
        k->pid = pid;
        k->since_ms = tsl__d_now();
        k->r = tsl_msg_reader_new();
        tsl_conv_init(&k->conv, TSL_CONV_DAEMON);
        if (!k->r) {
            close(fd);
            k->fd = -1;
        }
    }
}

/* Reads and handles what connection c has sent. */
static void serve(tsl__daemon *d, int c) {
    for (;;) {
        tsl__conn *k = &d->conns[c];
        if (k->fd < 0) return;
        tsl_msg m = {0};
        tsl_status st = tsl_msg_reader_read(k->r, k->fd, &m);
        if (st == TSL_OK && m.type == TSL_MSG_NONE) return;
        tsl_msg_err code = tsl_msg_reader_err(k->r);
        if (st == TSL_OK && (st = tsl_conv_received(&k->conv, &m)) != TSL_OK)
            code = TSL_MSG_ERR_OUT_OF_ORDER;
        if (st != TSL_OK) {
            if (code != TSL_MSG_ERR_NONE) {
                tsl__d_log(d, "connection from pid %d: %s: ERROR sent, connection closed",
                           (int)k->pid, tsl_last_error());
                tsl_msg_send_error(k->fd, code, tsl_last_error(), 1000);
            }
            tsl_msg_free(&m);
            tsl__d_close(d, c);
            return;
        }
        int keep = tsl__d_handle(d, c, &m);
        tsl_msg_free(&m);
        if (keep < 0) {
            tsl__d_close(d, c);
            return;
        }
    }
}

tsl_status tsl_daemon_run(const tsl_daemon_opts *o) {
    tsl_status st = check_opts(o);
    if (st != TSL_OK) return st;
    tsl__daemon D, *d = &D;
    memset(d, 0, sizeof *d);
    d->o = *o;
    d->log = o->log ? o->log : stderr;
    d->lfd = -1;
    d->t0_ms = tsl__d_now();
    if (o->socket_path) {
        if (strlen(o->socket_path) >= sizeof d->path)
            return tsl_fail(TSL_ERR_INVALID, "daemon: socket path '%s' is too long",
                            o->socket_path);
        snprintf(d->path, sizeof d->path, "%s", o->socket_path);
    } else if ((st = tsl_ipc_default_path(d->path, sizeof d->path)) != TSL_OK) {
        return st;
    }
    tsl_device_profile prof = o->profile;
    if (o->pcie_gbps > 0) prof.h2d_bw = prof.d2h_bw = o->pcie_gbps * 1e9;
    prof.mem_bytes = o->capacity;
    char tag[40];
    if (o->shm_tag) snprintf(tag, sizeof tag, "%s", o->shm_tag);
    else tag_of(d->path, tag, sizeof tag);
    /* the socket first: a second daemon is refused before it touches the
     * device */
    if ((st = tsl_ipc_listen(d->path, &d->lfd)) != TSL_OK) return st;
    int fl = fcntl(d->lfd, F_GETFL);
    if (fl < 0 || fcntl(d->lfd, F_SETFL, fl | O_NONBLOCK) < 0) { /* accept never blocks */
        tsl_ipc_unlisten(d->lfd, d->path);
        return tsl_fail(TSL_ERR_IO, "daemon: %s: cannot make the socket non-blocking: %s",
                        d->path, strerror(errno));
    }
    st = tsl_shdev_name(d->shm, sizeof d->shm, tag);
    if (st == TSL_OK)
        st = tsl_shdev_create(d->shm, o->capacity, o->pcie_gbps, o->max_jobs, &d->dev);
    if (st != TSL_OK) {
        tsl_ipc_unlisten(d->lfd, d->path);
        return st;
    }
    tsl__ms_init(&d->ms, &prof, o->capacity, o->policy);
    d->ms.no_queue = o->no_queue;
    char cap[32];
    snprintf(cap, sizeof cap, "%.1f MiB", (double)o->capacity / 1048576.0);
    tsl__d_log(d, "serving %s: device %s of %s (%zu bytes), channels %s, policy %s, %s, job "
                  "timeout %g s, pid %d",
               d->path, d->shm, cap, o->capacity,
               o->pcie_gbps > 0 ? "throttled" : "unthrottled",
               o->policy ? o->policy->name : "tensile",
               o->no_queue ? "no admission control" : "a queue for jobs that do not fit",
               o->job_timeout_s, (int)getpid());
    adopt(d);
    struct pollfd *pf = NULL;
    while (!(o->stop && *o->stop) && !d->shutdown) {
        struct pollfd *npf = realloc(pf, ((size_t)d->n_conns + 1) * sizeof *npf);
        if (!npf) {
            tsl__d_log(d, "out of host memory: stopping");
            break;
        }
        pf = npf;
        pf[0] = (struct pollfd){d->lfd, POLLIN, 0};
        for (int i = 0; i < d->n_conns; i++) {
            const tsl__conn *k = &d->conns[i];
            short ev = POLLIN;
            if (!k->mute && k->out_off < k->out_len) ev |= POLLOUT;
            pf[i + 1] = (struct pollfd){k->fd, ev, 0};
        }
        int n = poll(pf, (nfds_t)d->n_conns + 1, 200);
        if (n < 0 && errno != EINTR) {
            tsl__d_log(d, "poll: %s: stopping", strerror(errno));
            break;
        }
        if (n > 0) {
            int n_before = d->n_conns;
            for (int i = 0; i < n_before; i++) {
                if (pf[i + 1].fd >= 0 && (pf[i + 1].revents & POLLOUT)) tsl__d_flush(d, i);
                if (pf[i + 1].fd >= 0 && (pf[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
                    serve(d, i);
            }
            if (pf[0].revents & POLLIN) accept_all(d);
        }
        tick(d);
    }
    free(pf);
    int held = 0;
    for (int i = 0; i < d->ms.n; i++)
        held += d->ms.jobs[i]->state == TSL__DJ_RUNNING || d->ms.jobs[i]->state == TSL__DJ_ADMITTED;
    tsl__d_log(d, "stopping: %d job%s still running keep their plans and reconnect to the next "
                  "daemon",
               held, held == 1 ? "" : "s");
    for (int i = 0; i < d->n_conns; i++)
        if (d->conns[i].fd >= 0) tsl__d_close(d, i);
    tsl_ipc_unlisten(d->lfd, d->path);
    if (held == 0 && d->ms.reserved == 0 && !o->keep_device) tsl_shdev_unlink(d->shm);
    tsl_shdev_close(d->dev);
    tsl__ms_free(&d->ms);
    free(d->x);
    free(d->conns);
    return TSL_OK;
}
