/*
 * conn.c - the daemon's connections (daemon_internal.h): sending through a
 * connection's conversation, closing one.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon_internal.h"

/* Mutes connection c after a failure to send to it. */
static void mute(tsl__daemon *d, int c, const char *what, const char *why) {
    tsl__conn *k = &d->conns[c];
    tsl__d_log(d, "connection from pid %d: cannot send %s: %s; nothing more is sent to it",
               (int)k->pid, what, why);
    k->mute = 1;
    free(k->out);
    k->out = NULL;
    k->out_len = k->out_off = 0;
}

void tsl__d_flush(tsl__daemon *d, int c) {
    tsl__conn *k = &d->conns[c];
    if (k->fd < 0 || k->mute || k->out_off == k->out_len) return;
    if (tsl_ipc_write(k->fd, k->out, k->out_len, &k->out_off, -1, "what was queued") != TSL_OK) {
        mute(d, c, "its messages", tsl_last_error());
        return;
    }
    if (k->out_off == k->out_len) {
        free(k->out);
        k->out = NULL;
        k->out_len = k->out_off = 0;
    }
}

int tsl__d_send(tsl__daemon *d, int c, tsl_msg *m) {
    tsl__conn *k = &d->conns[c];
    if (k->fd < 0 || k->mute) return -1;
    uint8_t *buf = NULL;
    size_t len = 0;
    tsl_status st = tsl_conv_sending(&k->conv, m);
    if (st == TSL_OK) st = tsl_msg_encode(m, &buf, &len);
    if (st != TSL_OK) {
        tsl__d_log(d, "connection from pid %d: cannot send %s: %s", (int)k->pid,
                   tsl_msg_type_name(m->type), tsl_last_error());
        return -1;
    }
    size_t queued = k->out_len - k->out_off;
    if (queued + len > TSL__D_OUT_MAX) {
        free(buf);
        mute(d, c, tsl_msg_type_name(m->type), "it leaves more than 64 MiB unread");
        return -1;
    }
    uint8_t *nb = realloc(k->out, k->out_len + len);
    if (!nb) {
        free(buf);
        mute(d, c, tsl_msg_type_name(m->type), "out of host memory");
        return -1;
    }
    memcpy(nb + k->out_len, buf, len);
    free(buf);
    k->out = nb;
    k->out_len += len;
    tsl__d_flush(d, c);
    return k->mute ? -1 : 0;
}

void tsl__d_close(tsl__daemon *d, int c) {
    tsl__conn *k = &d->conns[c];
    if (k->fd < 0) return;
    close(k->fd);
    free(k->out);
    k->out = NULL;
    k->out_len = k->out_off = 0;
    k->mute = 0;
    tsl_msg_reader_free(k->r);
    k->r = NULL;
    k->fd = -1;
    if (k->job) {
        tsl__djob *j = tsl__ms_find(&d->ms, k->job);
        tsl__jobx *x = j ? tsl__d_x(d, j) : NULL;
        if (x && x->conn == c) {
            x->conn = -1;
            x->last_ms = tsl__d_now(); /* the timers check its process from now on */
        }
    }
    k->job = 0;
}
