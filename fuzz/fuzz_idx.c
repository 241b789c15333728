/*
 * fuzz_idx.c - libFuzzer harness for the IDX reader (src/io/idx.c).
 *
 * Each input is parsed three ways: as a raw IDX image (expecting either
 * kind, labels, images), as a gzip stream, and - a differential check - after
 * gzip-compressing it here, where the result must equal the raw parse's in
 * status, dimensions and payload. A success must describe the input
 * exactly; a failure must leave no data and record a message. Anything else
 * aborts, which libFuzzer reports as a crash.
 *
 * Built with the libraries of the line below (and what they link) by
 * scripts/fuzz.sh with libFuzzer, and by the suite as fuzz_idx_replay over
 * fuzz/corpus/fuzz_idx (CMakeLists.txt reads the same line).
 * fuzz-link: tsl_io
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/idx.h"

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "fuzz_idx: check failed at line %d: %s\n", __LINE__, #cond); \
            abort();                                                            \
        }                                                                       \
    } while (0)

/* Checks one parse result; raw/raw_len is the decompressed image when
 * known (NULL otherwise). */
static void check_result(tsl_status st, const uint8_t *data, const int64_t dims[3], int nd,
                         const uint8_t *raw, size_t raw_len) {
    if (st != TSL_OK) {
        CHECK(data == NULL);
        CHECK(tsl_last_error()[0] != '\0');
        return;
    }
    CHECK(data != NULL);
    CHECK(nd == 1 || nd == 3);
    uint64_t n = 1;
    for (int i = 0; i < nd; i++) {
        CHECK(dims[i] > 0 && dims[i] <= 0xFFFFFFFFll);
        n *= (uint64_t)dims[i];
    }
    CHECK(n <= TSL__IDX_MAX_ELEMS);
    if (raw) {
        CHECK(raw_len == 4 + 4 * (size_t)nd + n);
        CHECK(memcmp(data, raw + 4 + 4 * nd, (size_t)n) == 0);
    }
}

/* gzip-compresses buf; returns a malloc'd stream (NULL if zlib fails). */
static uint8_t *gzip_of(const uint8_t *buf, size_t len, size_t *out_len) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return NULL;
    size_t cap = deflateBound(&zs, (uLong)len) + 32;
    uint8_t *out = malloc(cap);
    if (!out) {
        deflateEnd(&zs);
        return NULL;
    }
    zs.next_in = (Bytef *)(uintptr_t)buf;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    int ret = deflate(&zs, Z_FINISH);
    *out_len = cap - zs.avail_out;
    deflateEnd(&zs);
    if (ret != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const int wants[3] = {TSL__IDX_ANY, TSL__IDX_LABELS, TSL__IDX_IMAGES};
    uint8_t *out;
    int64_t dims[3];
    int nd;
    tsl_status raw_st = TSL_OK;
    int64_t raw_dims[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        out = (uint8_t *)&out; /* must be reset to NULL on failure */
        tsl_status st = tsl__idx_parse(data, size, "fuzz", wants[k], &out, dims, &nd);
        check_result(st, out, dims, nd, data, size);
        if (k == 0) {
            raw_st = st;
            if (st == TSL_OK) memcpy(raw_dims, dims, sizeof dims);
        }
        if (st == TSL_OK) free(out);
    }

    /* the input as a gzip stream */
    out = (uint8_t *)&out;
    tsl_status st = tsl__idx_parse_gz(data, size, "fuzz.gz", TSL__IDX_ANY, &out, dims, &nd);
    check_result(st, out, dims, nd, NULL, 0);
    if (st == TSL_OK) free(out);

    /* differential: gzip(input) parses exactly like the input */
    if (size <= ((size_t)1 << 20)) {
        size_t gz_len;
        uint8_t *gz = gzip_of(data, size, &gz_len);
        if (gz) {
            out = (uint8_t *)&out;
            st = tsl__idx_parse_gz(gz, gz_len, "fuzz.gz", TSL__IDX_ANY, &out, dims, &nd);
            check_result(st, out, dims, nd, data, size);
            CHECK(st == raw_st);
            if (st == TSL_OK) {
                CHECK(memcmp(dims, raw_dims, sizeof dims) == 0);
                free(out);
            }
            free(gz);
        }
    }
    return 0;
}
