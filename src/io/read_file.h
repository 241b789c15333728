/*
 * io/read_file.h - opening and reading the files a user names (internal).
 *
 * Every reader of the io layer (profiles, workloads, plans, IDX datasets)
 * goes through these, so that each refuses at once, with a message naming
 * the path, what it was for and why:
 *   - a path that is not a regular file: a FIFO (which would block until a
 *     writer comes), a character device such as /dev/zero (endless), a
 *     folder, a socket; the open never blocks (O_NONBLOCK, then fstat);
 *   - a file larger than the reader's bound, before reading any of it.
 *
 * Example usage:
 *
 *   char *buf; size_t len;
 *   tsl_status st = tsl__read_regular("w.json", "workload", (size_t)64 << 20, &buf, &len);
 *   if (st != TSL_OK) return st;   // "w.json: cannot read workload: a FIFO, not a regular file"
 */
#ifndef TSL_IO_READ_FILE_H
#define TSL_IO_READ_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "tensile/status.h"

/* Opens `path` for reading if it is a regular file of at most max_bytes
 * bytes; `what` ("profile", "IDX file") names it in messages. On success
 * *f is a blocking stream at the start of the file (the caller fcloses it)
 * and *size the file's size. Otherwise *f is NULL and TSL_ERR_IO is
 * returned with a message "PATH: cannot open WHAT: REASON" (missing,
 * unreadable), "PATH: cannot read WHAT: a FIFO, not a regular file" (FIFO,
 * device, folder, socket) or "PATH: WHAT of N bytes is larger than the
 * limit of M bytes". Never blocks on the open. */
tsl_status tsl__open_regular(const char *path, const char *what, uint64_t max_bytes, FILE **f,
                             uint64_t *size);

/* The whole of regular file `path` (checked as tsl__open_regular does, at
 * most max_bytes bytes) in *buf, malloc'd and NUL-terminated, *len bytes
 * before the NUL; a file that grows past max_bytes while it is read is
 * refused too. On failure *buf is NULL: TSL_ERR_IO (as above, or a read
 * error naming the path) or TSL_ERR_OOM. */
tsl_status tsl__read_regular(const char *path, const char *what, size_t max_bytes, char **buf,
                             size_t *len);
#endif
