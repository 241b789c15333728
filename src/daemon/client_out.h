/*
 * client_out.h - a job's messages to the daemon, queued (client.c).
 *
 * The daemon is one thread: while it plans (seconds on a loaded machine) it
 * reads nothing, and a job that reports every iteration fills its socket.
 * A job must neither wait for the daemon nor take a slow one for a dead
 * one. So what a job sends goes through this queue: each message is
 * appended whole, and the socket takes what it can, never blocking unless
 * the caller asks to wait. A REPORT is a snapshot that the next one makes
 * stale: a REPORT still wholly unsent at the queue's tail is replaced by
 * the next REPORT, so a daemon that catches up reads the newest figures,
 * and a job that runs ahead queues one report, not hundreds. A message is
 * never cut: the bytes of one that has begun to go all go first.
 */
#ifndef TSL_DAEMON_CLIENT_OUT_H
#define TSL_DAEMON_CLIENT_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "tensile/status.h"

/* Unsent bytes beyond this mean the daemon reads nothing: the connection
 * is given up (TSL_ERR_IO). */
#define TSL__OUTQ_MAX ((size_t)64 << 20)

typedef struct tsl__outq {
    uint8_t *buf;     /* messages, encoded, back to back */
    size_t len;       /* bytes in buf */
    size_t off;       /* bytes of buf the socket has taken */
    size_t report_at; /* where a REPORT none of whose bytes has gone begins, at the tail;
                         SIZE_MAX: none */
} tsl__outq;

/* An empty queue (also frees what q held). */
void tsl__outq_reset(tsl__outq *q);

/* Appends the encoded message b[0..n) (copied). `replaceable`: a REPORT,
 * which replaces a REPORT still wholly unsent at the tail. TSL_ERR_OOM;
 * TSL_ERR_IO when the queue would pass TSL__OUTQ_MAX (nothing appended). */
tsl_status tsl__outq_put(tsl__outq *q, const uint8_t *b, size_t n, int replaceable);

/* Writes queued bytes to socket fd: with timeout_ms 0 what the socket
 * takes now; otherwise all of them within timeout_ms, waiting for room
 * (tsl_ipc_write). TSL_OK (with timeout 0, bytes may remain);
 * TSL_ERR_TIMEOUT, TSL_ERR_IO (the peer closed, the system's reason). After an error part of a message may have gone: the caller
 * must close the connection. */
tsl_status tsl__outq_flush(tsl__outq *q, int fd, int timeout_ms);

/* Bytes queued and not yet taken by the socket. */
size_t tsl__outq_pending(const tsl__outq *q);

#endif
