/*
 * ipc/ipc_internal.h - what the files of the ipc layer share (internal):
 * building a message from a va_list, printable text, the monotonic clock
 * and the wait for a socket to become ready (the deadlines of
 * tsl_msg_send, tsl_msg_recv and tsl_ipc_connect).
 */
#ifndef TSL_IPC_INTERNAL_H
#define TSL_IPC_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "tensile/ipc.h"

#define TSL__IPC_TEXT_MAX 1024 /* bytes of a free-text field: a message, a reason */

/* Copies src[0..len) into dst (n >= 1 bytes, NUL-terminated) as printable
 * UTF-8: each byte that does not begin a valid UTF-8 sequence becomes '?',
 * each control character (below 0x20, 0x7f) ' '; cut at a character
 * boundary to at most n - 1 bytes. Returns the bytes written. */
size_t tsl__ipc_clean(char *dst, size_t n, const char *src, size_t len);

/* tsl_msg_pack with a va_list (which it consumes). */
tsl_status tsl__msg_vpack(tsl_msg *out, tsl_msg_type type, const char *fmt, va_list ap);

/* CLOCK_MONOTONIC in ms. */
int64_t tsl__ipc_now_ms(void);

/* Waits until fd is ready for `events` (POLLIN, POLLOUT) or the monotonic
 * clock reaches deadline_ms, resuming after EINTR: 1 when ready (or in
 * error or hung up: the next call on fd says which), 0 at the deadline,
 * -1 with errno set when poll fails. */
int tsl__ipc_wait(int fd, short events, int64_t deadline_ms);
#endif
