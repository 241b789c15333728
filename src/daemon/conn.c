/*
 * conn.c - the daemon's connections (daemon_internal.h): sending through a
 * connection's conversation, closing one.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon_internal.h"

#define SEND_MS 2000 /* a peer that does not take a message in 2 s is dropped */

int tsl__d_send(tsl__daemon *d, int c, tsl_msg *m) {
    tsl__conn *k = &d->conns[c];
    if (k->fd < 0) return -1;
    tsl_status st = tsl_conv_sending(&k->conv, m);
    if (st == TSL_OK) st = tsl_msg_send(k->fd, m, SEND_MS);
    if (st != TSL_OK) {
        tsl__d_log(d, "connection from pid %d: cannot send %s: %s; connection closed", (int)k->pid,
                   tsl_msg_type_name(m->type), tsl_last_error());
        tsl__d_close(d, c);
        return -1;
    }
    return 0;
}

void tsl__d_close(tsl__daemon *d, int c) {
    tsl__conn *k = &d->conns[c];
    if (k->fd < 0) return;
    close(k->fd);
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
