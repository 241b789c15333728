/*
 * io/atomic_file.h - output files written whole or not at all (internal).
 *
 * Every writer of the io layer (profiles, workloads, plans, Chrome traces)
 * writes through these: the bytes go to a temporary file PATH.tmp.PID.N in
 * the destination's folder, which is flushed, synced, closed and renamed
 * over PATH only if every step succeeded. A full disk, a write error or an
 * abandoned write leaves PATH as it was (absent or the old file) and no
 * temporary file behind. A destination that exists and is not a regular
 * file (/dev/stdout, /dev/null, a FIFO with a reader) is written directly,
 * its errors checked the same way; a FIFO without a reader is refused at
 * once rather than waited on. A symbolic link to a file has the file it
 * points to replaced, the link kept.
 *
 * Example usage:
 *
 *   tsl__out *o;
 *   if ((st = tsl__out_open("plan.json", "plan", &o)) != TSL_OK) return st;
 *   fputs("{...}", tsl__out_stream(o));
 *   return tsl__out_commit(o);   // TSL_ERR_IO naming plan.json if any write failed
 */
#ifndef TSL_IO_ATOMIC_FILE_H
#define TSL_IO_ATOMIC_FILE_H

#include <stdio.h>
#include "tensile/status.h"

typedef struct tsl__out tsl__out;

/* Starts writing `path` (a `what`, e.g. "plan", in messages). *out is set
 * only on success. TSL_ERR_IO "PATH: cannot write WHAT: REASON" if the
 * temporary file cannot be created (folder missing or not writable, path a
 * folder, a FIFO without a reader), TSL_ERR_OOM. */
tsl_status tsl__out_open(const char *path, const char *what, tsl__out **out);

/* The stream to write to; valid until commit or abort. */
FILE *tsl__out_stream(tsl__out *o);

/* Finishes: flushes, fsyncs and closes the temporary file and renames it
 * over the destination. Any error since open (the stream's error flag, a
 * failed flush, sync, close or rename) is TSL_ERR_IO naming the path and
 * the system's reason; the temporary file is then removed and the
 * destination left as it was. Frees o in every case. */
tsl_status tsl__out_commit(tsl__out *o);

/* Abandons the write: closes and removes the temporary file, leaves the
 * destination as it was, frees o. NULL is a no-op. */
void tsl__out_abort(tsl__out *o);

/* Whether `path` could be written, checked before long work so that a bad
 * output path fails at once: creates and removes the temporary file (for a
 * non-regular destination, opens it for writing without blocking). TSL_OK,
 * or TSL_ERR_IO as tsl__out_open. Writes nothing to the destination. */
tsl_status tsl__out_probe(const char *path, const char *what);

/* Removes the temporary files of every write still open. Only calls
 * unlink(2): safe in a signal handler (SIGINT, SIGTERM), which then leaves
 * no partial file behind. */
void tsl__out_remove_pending(void);
#endif
