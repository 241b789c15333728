/*
 * idx.c - reading IDX files (the MNIST family's format), gzipped or not,
 * with strict validation. See io/idx.h for the accepted format.
 *
 * Parsing works on memory buffers or, for files, on the compressed stream
 * read in chunks: a file is refused at its first bytes if it is not gzip
 * (never read whole), and only regular files are read (io/read_file.h: a
 * FIFO or /dev/zero is refused at once). Decompression never holds more
 * than the header declares plus one byte (to detect trailing garbage), a
 * header declaring more than the caller accepts is refused before any
 * payload is inflated, and what follows the payload is counted only up to
 * TRAILING_COUNT_CAP bytes, so a gzip bomb costs neither memory nor much
 * time; the grow-as-you-go buffer never allocates more than the stream
 * produced (times two).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/assert.h"
#include "io/idx.h"
#include "io/read_file.h"
#include "tensile/data.h"

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static const char *expected_magic(int want) {
    switch (want) {
    case TSL__IDX_LABELS: return "0x00000801 (labels)";
    case TSL__IDX_IMAGES: return "0x00000803 (images)";
    default: return "0x00000801 (labels) or 0x00000803 (images)";
    }
}

static const char *idx_type_name(uint8_t t) {
    switch (t) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "unknown type";
    }
}

/* Writes "60000x28x28" into buf. */
static const char *dims_str(char *buf, size_t n, const uint32_t *d, int nd) {
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < nd && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, i ? "x%u" : "%u", (unsigned)d[i]);
    return buf;
}

/* The parsed header of an IDX image. */
typedef struct idx_header {
    int ndim;
    uint32_t dims[3];
    size_t hdr_len;   /* 4 + 4 * ndim */
    uint64_t payload; /* prod(dims): bytes that must follow the header */
} idx_header;

/* Parses and validates the header at the start of buf[0..len), where buf
 * may hold just a prefix of the image (len >= the header is enough).
 * Returns TSL_OK, or TSL_ERR_FORMAT with a message naming `name` and the
 * field at fault (magic, data type, rank, dimension, element count). */
static tsl_status parse_header(const uint8_t *buf, size_t len, const char *name, int want,
                               idx_header *h) {
    memset(h, 0, sizeof *h);
    if (len == 0) return tsl_fail(TSL_ERR_FORMAT, "%s: empty: no IDX header", name);
    if (len < 4)
        return tsl_fail(TSL_ERR_FORMAT, "%s: truncated header: %zu bytes, the magic needs 4",
                        name, len);
    uint32_t magic = be32(buf);
    if (buf[0] != 0 || buf[1] != 0)
        return tsl_fail(TSL_ERR_FORMAT, "%s: bad magic 0x%08x, expected %s", name, magic,
                        expected_magic(want));
    if (buf[2] != 0x08)
        return tsl_fail(TSL_ERR_FORMAT,
                        "%s: bad magic 0x%08x, expected %s: data type 0x%02x (%s), not 0x08 "
                        "(unsigned byte)", name, magic, expected_magic(want), buf[2],
                        idx_type_name(buf[2]));
    int rank = buf[3];
    int rank_ok = want == TSL__IDX_ANY ? (rank == 1 || rank == 3) : rank == want;
    if (!rank_ok)
        return tsl_fail(TSL_ERR_FORMAT, "%s: bad magic 0x%08x, expected %s: rank %d", name,
                        magic, expected_magic(want), rank);
    h->ndim = rank;
    h->hdr_len = 4 + 4 * (size_t)rank;
    if (len < h->hdr_len)
        return tsl_fail(TSL_ERR_FORMAT,
                        "%s: truncated header: %zu bytes, a rank-%d header needs %zu", name, len,
                        rank, h->hdr_len);
    uint64_t count = 1;
    for (int i = 0; i < rank; i++) {
        h->dims[i] = be32(buf + 4 + 4 * i);
        if (h->dims[i] == 0)
            return tsl_fail(TSL_ERR_FORMAT, "%s: dimension %d is 0, dimensions must be positive",
                            name, i);
    }
    for (int i = 0; i < rank; i++) {
        count *= h->dims[i]; /* count <= 2^31 before, dims < 2^32: no overflow */
        if (count > TSL__IDX_MAX_ELEMS) {
            char ds[64];
            return tsl_fail(TSL_ERR_FORMAT,
                            "%s: dimensions %s hold more than 2^31 elements (the limit)", name,
                            dims_str(ds, sizeof ds, h->dims, rank));
        }
    }
    h->payload = count;
    return TSL_OK;
}

/* Checks that exactly h->payload bytes follow the header; `have` is what
 * follows it, `more` tells that even more follows (have is a lower bound). */
static tsl_status check_payload(const idx_header *h, size_t have, int more, const char *name) {
    char ds[64];
    dims_str(ds, sizeof ds, h->dims, h->ndim);
    if (have < h->payload)
        return tsl_fail(TSL_ERR_FORMAT,
                        "%s: truncated payload: %zu bytes after the header, dimensions %s need "
                        "%llu", name, have, ds, (unsigned long long)h->payload);
    if (have > h->payload || more)
        return tsl_fail(TSL_ERR_FORMAT,
                        "%s: trailing garbage: %s%llu bytes after the payload of %llu bytes "
                        "(dimensions %s)", name, more ? "more than " : "",
                        (unsigned long long)(have - h->payload), (unsigned long long)h->payload, ds);
    return TSL_OK;
}

static void set_dims(const idx_header *h, int64_t dims[3], int *ndim) {
    for (int i = 0; i < 3; i++) dims[i] = i < h->ndim ? (int64_t)h->dims[i] : 0;
    *ndim = h->ndim;
}

/* Contract: see io/idx.h. */
tsl_status tsl__idx_parse(const uint8_t *buf, size_t len, const char *name, int want,
                          uint8_t **data, int64_t dims[3], int *ndim) {
    TSL_ASSERT(data && dims && ndim && (buf || len == 0));
    *data = NULL;
    if (!name) name = "(buffer)";
    idx_header h;
    tsl_status st = parse_header(buf, len, name, want, &h);
    if (st != TSL_OK) return st;
    st = check_payload(&h, len - h.hdr_len, 0, name);
    if (st != TSL_OK) return st;
    uint8_t *out = malloc((size_t)h.payload);
    if (!out)
        return tsl_fail(TSL_ERR_OOM, "%s: host out of memory for %llu payload bytes", name,
                        (unsigned long long)h.payload);
    memcpy(out, buf + h.hdr_len, (size_t)h.payload);
    *data = out;
    set_dims(&h, dims, ndim);
    return TSL_OK;
}

/* ---- gzip ---------------------------------------------------------------------- */

/* Bytes after the declared payload that are counted for the message of
 * "trailing garbage" before it says "more than". */
#define TRAILING_COUNT_CAP ((size_t)1 << 20)
/* Compressed bytes read from a file at a time. */
#define FILE_CHUNK ((size_t)1 << 16)

/* State of one inflation: the zlib stream, the input still to feed (a
 * buffer, refilled from `file` when there is one), and the growing output
 * buffer. */
typedef struct gz_state {
    z_stream zs;
    const uint8_t *in;
    size_t in_left;  /* input bytes not yet handed to zlib */
    FILE *file;      /* NULL: the input is the buffer alone */
    uint64_t file_size;
    uint8_t *chunk;  /* FILE_CHUNK bytes for reads from file */
    int file_eof;    /* file has no more bytes */
    int read_errno;  /* a read from file failed (errno, or EIO) */
    uint8_t *out;
    size_t out_len, out_cap;
    int ended;       /* the last gzip member ended and no input is left */
} gz_state;

/* Hands zlib up to UINT_MAX more input bytes when it has none, reading the
 * next chunk of the file when the buffer is used up. */
static void gz_feed(gz_state *g) {
    if (g->zs.avail_in > 0) return;
    if (g->in_left == 0 && g->file && !g->file_eof && !g->read_errno) {
        size_t got = fread(g->chunk, 1, FILE_CHUNK, g->file);
        if (got == 0) {
            if (ferror(g->file)) g->read_errno = errno ? errno : EIO;
            else g->file_eof = 1;
        }
        g->in = g->chunk;
        g->in_left = got;
    }
    if (g->in_left == 0) return;
    size_t n = g->in_left < UINT_MAX ? g->in_left : UINT_MAX;
    g->zs.next_in = (Bytef *)(uintptr_t)g->in;
    g->zs.avail_in = (uInt)n;
    g->in += n;
    g->in_left -= n;
}

/* Makes at least two input bytes available to zlib if the input holds
 * them (the magic of a next gzip member may straddle two file chunks). */
static void gz_ensure2(gz_state *g) {
    gz_feed(g);
    if (g->zs.avail_in != 1 || g->in_left || !g->file || g->file_eof || g->read_errno) return;
    g->chunk[0] = g->zs.next_in[0];
    size_t got = fread(g->chunk + 1, 1, FILE_CHUNK - 1, g->file);
    if (got == 0) {
        if (ferror(g->file)) g->read_errno = errno ? errno : EIO;
        else g->file_eof = 1;
    }
    g->zs.next_in = g->chunk;
    g->zs.avail_in = (uInt)(1 + got);
}

/* The input bytes zlib has not consumed: in the buffers and, for a file,
 * still in the file. */
static size_t gz_unread(const gz_state *g) {
    size_t n = (size_t)g->zs.avail_in + g->in_left;
    if (g->file) {
        off_t at = ftello(g->file);
        if (at >= 0 && (uint64_t)at < g->file_size) n += (size_t)(g->file_size - (uint64_t)at);
    }
    return n;
}

/* 1 once every input byte was handed to zlib and no more can come. */
static int gz_input_done(const gz_state *g) {
    return g->zs.avail_in == 0 && g->in_left == 0 &&
           (!g->file || g->file_eof || g->read_errno);
}

/* Inflates into g->out (grown geometrically, never beyond `limit` bytes)
 * until out_len reaches `limit` or the last gzip member ends; concatenated
 * members are followed. Returns TSL_OK, or TSL_ERR_FORMAT (corrupt,
 * truncated, garbage after the stream), TSL_ERR_OOM or TSL_ERR_INTERNAL
 * with a message naming `name`. */
static tsl_status gz_inflate_to(gz_state *g, size_t limit, const char *name) {
    while (!g->ended && g->out_len < limit) {
        if (g->out_cap < limit && g->out_len == g->out_cap) {
            size_t cap = g->out_cap ? 2 * g->out_cap : 65536;
            if (cap > limit || cap < g->out_cap) cap = limit;
            uint8_t *nb = realloc(g->out, cap);
            if (!nb)
                return tsl_fail(TSL_ERR_OOM, "%s: host out of memory for %zu decompressed bytes",
                                name, cap);
            g->out = nb;
            g->out_cap = cap;
        }
        gz_feed(g);
        size_t room = (limit < g->out_cap ? limit : g->out_cap) - g->out_len;
        if (room > UINT_MAX) room = UINT_MAX;
        g->zs.next_out = g->out + g->out_len;
        g->zs.avail_out = (uInt)room;
        int ret = inflate(&g->zs, Z_NO_FLUSH);
        g->out_len += room - g->zs.avail_out;
        if (ret == Z_STREAM_END) {
            gz_ensure2(g);
            if (g->read_errno) {
                return tsl_fail(TSL_ERR_IO, "%s: cannot read: %s", name, strerror(g->read_errno));
            } else if (g->zs.avail_in == 0) {
                g->ended = 1;
            } else if (g->zs.avail_in >= 2 && g->zs.next_in[0] == 0x1f && g->zs.next_in[1] == 0x8b) {
                if (inflateReset(&g->zs) != Z_OK) /* another gzip member follows */
                    return tsl_fail(TSL_ERR_INTERNAL, "%s: zlib inflateReset failed", name);
            } else {
                return tsl_fail(TSL_ERR_FORMAT,
                                "%s: trailing garbage: %zu bytes after the end of the gzip stream "
                                "are not a gzip member", name, gz_unread(g));
            }
        } else if (g->read_errno) {
            return tsl_fail(TSL_ERR_IO, "%s: cannot read: %s", name, strerror(g->read_errno));
        } else if (ret == Z_BUF_ERROR || (ret == Z_OK && gz_input_done(g) && g->zs.avail_out > 0)) {
            /* no progress possible: all input consumed before the end */
            return tsl_fail(TSL_ERR_FORMAT,
                            "%s: gzip stream truncated: input ends after %zu decompressed bytes",
                            name, g->out_len);
        } else if (ret == Z_MEM_ERROR) {
            return tsl_fail(TSL_ERR_OOM, "%s: zlib out of memory", name);
        } else if (ret != Z_OK) {
            return tsl_fail(TSL_ERR_FORMAT, "%s: corrupt gzip stream: %s", name,
                            g->zs.msg ? g->zs.msg : "inflate error");
        }
    }
    return TSL_OK;
}

/* Counts the bytes the stream still produces beyond what g->out holds,
 * following further members, up to `cap` (then returns cap + 1 at most).
 * A corrupt or truncated rest ends the count: the file is rejected anyway,
 * the count only makes the message exact. */
static size_t gz_count_rest(gz_state *g, size_t cap) {
    uint8_t scratch[4096];
    size_t n = 0;
    while (!g->ended && n <= cap) {
        gz_feed(g);
        g->zs.next_out = scratch;
        g->zs.avail_out = sizeof scratch;
        int ret = inflate(&g->zs, Z_NO_FLUSH);
        n += sizeof scratch - g->zs.avail_out;
        if (ret == Z_STREAM_END) {
            gz_ensure2(g);
            if (g->zs.avail_in < 2 || g->zs.next_in[0] != 0x1f || g->zs.next_in[1] != 0x8b ||
                inflateReset(&g->zs) != Z_OK)
                break;
        } else if (ret != Z_OK || (g->zs.avail_out > 0 && gz_input_done(g))) {
            break;
        }
    }
    return n;
}

/* Inflates g's stream (whose first bytes were checked to be gzip) into an
 * IDX image and parses it: the header first, refused if it declares more
 * than max_payload bytes, then exactly what it declares + 1. Ends g's zlib
 * stream; on success *data holds the payload. */
static tsl_status inflate_idx(gz_state *g, const char *name, int want, uint64_t max_payload,
                              uint8_t **data, int64_t dims[3], int *ndim) {
    if (inflateInit2(&g->zs, 16 + MAX_WBITS) != Z_OK) /* 16: gzip wrapper only */
        return tsl_fail(TSL_ERR_INTERNAL, "%s: zlib inflateInit2 failed", name);
    /* the header first (at most 16 bytes), then exactly what it declares + 1 */
    idx_header h;
    tsl_status st = gz_inflate_to(g, 16, name);
    if (st == TSL_OK) st = parse_header(g->out, g->out_len, name, want, &h);
    if (st == TSL_OK && h.payload > max_payload) {
        char ds[64];
        st = tsl_fail(TSL_ERR_FORMAT,
                      "%s: dimensions %s hold %llu bytes, more than the %llu this reader "
                      "accepts", name, dims_str(ds, sizeof ds, h.dims, h.ndim),
                      (unsigned long long)h.payload, (unsigned long long)max_payload);
    }
    if (st == TSL_OK && g->out_len <= h.hdr_len + h.payload)
        st = gz_inflate_to(g, (size_t)(h.hdr_len + h.payload + 1), name);
    if (st == TSL_OK) {
        /* fewer bytes than declared only if the stream ended; more means
         * garbage, and "more than" if the stream goes on beyond what we count */
        size_t have = g->out_len - h.hdr_len, rest = 0;
        if (have > h.payload && !g->ended) rest = gz_count_rest(g, TRAILING_COUNT_CAP);
        if (g->read_errno)
            st = tsl_fail(TSL_ERR_IO, "%s: cannot read: %s", name, strerror(g->read_errno));
        else
            st = check_payload(&h, have + (rest > TRAILING_COUNT_CAP ? TRAILING_COUNT_CAP : rest),
                               rest > TRAILING_COUNT_CAP, name);
    }
    inflateEnd(&g->zs);
    if (st != TSL_OK) {
        free(g->out);
        g->out = NULL;
        return st;
    }
    memmove(g->out, g->out + h.hdr_len, (size_t)h.payload);
    uint8_t *shrunk = realloc(g->out, (size_t)h.payload);
    *data = shrunk ? shrunk : g->out;
    g->out = NULL;
    set_dims(&h, dims, ndim);
    return TSL_OK;
}

/* The message for a stream that does not start as gzip: first[0..n). */
static tsl_status not_gzip(const uint8_t *first, size_t n, const char *name) {
    if (n == 0) return tsl_fail(TSL_ERR_FORMAT, "%s: empty file, expected a gzip stream", name);
    return tsl_fail(TSL_ERR_FORMAT,
                    "%s: not gzip: the file starts with 0x%02x 0x%02x, a gzip stream with "
                    "0x1f 0x8b", name, first[0], n > 1 ? first[1] : 0);
}

/* Contract: see io/idx.h. */
tsl_status tsl__idx_parse_gz(const uint8_t *gz, size_t len, const char *name, int want,
                             uint8_t **data, int64_t dims[3], int *ndim) {
    TSL_ASSERT(data && dims && ndim && (gz || len == 0));
    *data = NULL;
    if (!name) name = "(buffer)";
    if (len < 2 || gz[0] != 0x1f || gz[1] != 0x8b) return not_gzip(gz, len, name);
    gz_state g;
    memset(&g, 0, sizeof g);
    g.in = gz;
    g.in_left = len;
    return inflate_idx(&g, name, want, TSL__IDX_MAX_ELEMS, data, dims, ndim);
}

/* ---- files ---------------------------------------------------------------------- */

/* Contract: see io/idx.h. */
tsl_status tsl__idx_read_gz_max(const char *path, int want, uint64_t max_payload, uint8_t **data,
                                int64_t dims[3], int *ndim) {
    TSL_ASSERT(data && dims && ndim);
    *data = NULL;
    if (!path) return tsl_fail(TSL_ERR_INVALID, "IDX file: path is NULL");
    if (max_payload > TSL__IDX_MAX_ELEMS) max_payload = TSL__IDX_MAX_ELEMS;
    /* a gzip stream of an image of at most max_payload bytes: deflate's
     * stored blocks add 5 bytes per 65535, members 18 bytes or more each;
     * anything much larger is no such stream */
    uint64_t max_file = max_payload + max_payload / 64 + ((uint64_t)1 << 20);
    FILE *f;
    uint64_t size;
    tsl_status st = tsl__open_regular(path, "IDX file", max_file, &f, &size);
    if (st != TSL_OK) return st;
    gz_state g;
    memset(&g, 0, sizeof g);
    g.file = f;
    g.file_size = size;
    g.chunk = malloc(FILE_CHUNK);
    if (!g.chunk) {
        fclose(f);
        return tsl_fail(TSL_ERR_OOM, "%s: host out of memory", path);
    }
    /* the magic first: a file that is not gzip is never read further */
    gz_feed(&g);
    if (g.read_errno) {
        st = tsl_fail(TSL_ERR_IO, "%s: cannot read: %s", path, strerror(g.read_errno));
    } else if (g.zs.avail_in < 2 || g.zs.next_in[0] != 0x1f || g.zs.next_in[1] != 0x8b) {
        st = not_gzip(g.zs.next_in, g.zs.avail_in, path);
    } else {
        st = inflate_idx(&g, path, want, max_payload, data, dims, ndim);
    }
    free(g.chunk);
    fclose(f);
    return st;
}

tsl_status tsl__idx_read_gz(const char *path, int want, uint8_t **data, int64_t dims[3],
                            int *ndim) {
    return tsl__idx_read_gz_max(path, want, TSL__IDX_MAX_ELEMS, data, dims, ndim);
}

/* Contract: see tensile/data.h. */
tsl_status tsl_idx_read_gz(const char *path, uint8_t **data, int64_t dims[3], int *ndim) {
    return tsl__idx_read_gz(path, TSL__IDX_ANY, data, dims, ndim);
}
