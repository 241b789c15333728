/*
 * io/idx.h - IDX parsing on in-memory buffers (internal).
 *
 * The file reader (tsl_idx_read_gz, tensile/data.h) and the fuzz harness
 * (fuzz/fuzz_idx.c) share these functions, so that the fuzzer exercises
 * exactly the code that reads datasets.
 *
 * Accepted format (big-endian): magic 00 00 08 RR, where 08 is "unsigned
 * byte" and RR the rank (1: labels, 3: images), then RR 32-bit dimensions,
 * each > 0, at most TSL__IDX_MAX_ELEMS elements in all, then exactly
 * prod(dims) payload bytes.
 */
#ifndef TSL_IO_IDX_H
#define TSL_IO_IDX_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/status.h"

/* At most 2^31 elements (payload bytes) in one file. */
#define TSL__IDX_MAX_ELEMS ((uint64_t)1 << 31)

/* What the caller expects: either rank, labels (rank 1) or images (rank 3). */
enum { TSL__IDX_ANY = 0, TSL__IDX_LABELS = 1, TSL__IDX_IMAGES = 3 };

/* Parses a decompressed IDX image buf[0..len). `name` (a file name) starts
 * every error message; `want` is TSL__IDX_ANY, _LABELS or _IMAGES. On
 * success *data is a malloc'd copy of the payload (caller frees; it is
 * never empty since every dimension is positive) and dims[0..*ndim) the
 * dimensions.
 * On failure returns TSL_ERR_FORMAT (or TSL_ERR_OOM) with a message naming
 * the file and the field at fault, and leaves *data NULL. */
tsl_status tsl__idx_parse(const uint8_t *buf, size_t len, const char *name, int want,
                          uint8_t **data, int64_t dims[3], int *ndim);

/* The same for a gzip stream gz[0..len) (one or more concatenated
 * members): inflates it, never holding more than the header declares plus
 * one byte, and parses the result. Not-gzip, corrupt and truncated streams
 * are TSL_ERR_FORMAT; a zlib failure is TSL_ERR_INTERNAL. */
tsl_status tsl__idx_parse_gz(const uint8_t *gz, size_t len, const char *name, int want,
                             uint8_t **data, int64_t dims[3], int *ndim);

/* Reads the file at `path` as gzipped IDX, with the checks and results of
 * tsl__idx_parse_gz, streaming: only a regular file is read (a FIFO or a
 * device is refused at once), a file not starting as gzip is refused at
 * its first bytes, one far larger than any gzip stream of max_payload
 * bytes is refused unread, a header declaring more than max_payload bytes
 * (at most TSL__IDX_MAX_ELEMS) is refused before its payload is inflated,
 * and trailing data is counted only up to 1 MiB. A file that cannot be
 * opened or read is TSL_ERR_IO. */
tsl_status tsl__idx_read_gz_max(const char *path, int want, uint64_t max_payload, uint8_t **data,
                                int64_t dims[3], int *ndim);

/* tsl__idx_read_gz_max with max_payload TSL__IDX_MAX_ELEMS. */
tsl_status tsl__idx_read_gz(const char *path, int want, uint8_t **data, int64_t dims[3],
                            int *ndim);
#endif
