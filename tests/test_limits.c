/*
 * test_limits.c - sizes and inputs that cannot exist are refused with a
 * message, never wrapped, crashed on or spent memory on (issue 15):
 * tensor shapes whose element count or byte size overflows, a graph above
 * 1 EiB, models built from such configurations, a batcher over more
 * examples than the host can index, and IDX files refused before they are
 * read or inflated (not gzip, a header above the reader's bound, a gzip
 * bomb after the payload, a FIFO), with a gzip member boundary on a read
 * chunk's edge still read exactly.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "io/idx.h"
#include "tensile/data.h"
#include "tensile/graph.h"
#include "tensile/models.h"
#include "tensile/ops.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- shapes and graphs -------------------------------------------------------------- */

Test(limits, shapes_that_overflow_are_refused) {
    int64_t n;
    tsl_shape huge = TSL_SHAPE(1 << 20, 51731, 18441, 18441), small = TSL_SHAPE(3, 4, 5);
    cr_assert(tsl_shape_numel_checked(&huge, &n) == 0 && n == INT64_MAX);
    cr_assert(tsl_shape_numel_checked(&small, &n) == 1 && n == 60);
    tsl_graph *g = tsl_graph_new("g");
    /* the mlp case of the issue: 9e15 parameters once wrapped to 4.3 M */
    tsl_tid x = tsl_input(g, "input", TSL_SHAPE(1048576, 51731, 18441, 18441));
    cr_assert_eq(x, TSL_NONE);
    cr_assert_eq(tsl_graph_status(g), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "tensor 'input'") &&
                  strstr(tsl_last_error(), "(1048576,51731,18441,18441)") &&
                  strstr(tsl_last_error(), "more than a tensor may take"),
              "%s", tsl_last_error());
    tsl_graph_free(g);
    /* an element count inside int64 but a byte size above 64 PiB */
    g = tsl_graph_new("g");
    cr_assert_eq(tsl_input(g, "x", TSL_SHAPE((int64_t)1 << 55)), TSL_NONE);
    tsl_graph_free(g);
    /* a reshape target that overflows */
    g = tsl_graph_new("g");
    x = tsl_input(g, "x", TSL_SHAPE(4, 4));
    cr_assert_eq(tsl_reshape(g, "r", x, TSL_SHAPE(INT64_MAX, 4)), TSL_NONE);
    cr_assert(strstr(tsl_last_error(), "reshape 'r'") && strstr(tsl_last_error(), "more than"),
              "%s", tsl_last_error());
    tsl_graph_free(g);
}

Test(limits, a_graph_above_one_eib_is_refused) {
    tsl_graph *g = tsl_graph_new("g");
    char name[32];
    int made = 0;
    for (int i = 0; i < 40; i++) { /* 32 tensors of 2^55 bytes are 2^60 */
        snprintf(name, sizeof name, "t%d", i);
        if (tsl_input(g, name, TSL_SHAPE((int64_t)1 << 53)) == TSL_NONE) break;
        made++;
    }
    cr_assert_eq(made, 32);
    cr_assert(strstr(tsl_last_error(), "tensor 't32'") && strstr(tsl_last_error(), "1 EiB"), "%s",
              tsl_last_error());
    tsl_graph_free(g);
}

Test(limits, models_of_impossible_sizes_fail_with_a_message) {
    tsl_model_cfg cfg = tsl_model_cfg_default("mlp");
    cfg.batch = 1048576;
    cfg.in_channels = 65536;
    cfg.image_size = 32768;
    tsl_graph *g = tsl_graph_new("mlp");
    tsl_tid loss;
    cr_assert_eq(tsl_model_build(g, "mlp", &cfg, &loss), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "tensor 'input'"), "%s", tsl_last_error());
    tsl_graph_free(g);
}

/* ---- the batcher ---------------------------------------------------------------------- */

Test(limits, a_batcher_over_too_many_examples_is_refused) {
    tsl_dataset d;
    cr_assert_eq(tsl_synthetic_dataset(INT64_MAX, 1, 2, 2, 3, 1, &d), TSL_OK);
    cr_assert_null(tsl_batcher_new(&d, 32, 1, 1));
    cr_assert(strstr(tsl_last_error(), "batcher") && strstr(tsl_last_error(), "9223372036854775807"),
              "%s", tsl_last_error());
}

/* ---- IDX files ------------------------------------------------------------------------ */

static char dir[128];

static void make_dir(void) {
    snprintf(dir, sizeof dir, "/tmp/tsl_test_limits_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void) {
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* The header of an IDX image of rank nd. */
static size_t idx_header(uint8_t *b, const uint32_t *dims, int nd) {
    b[0] = b[1] = 0;
    b[2] = 8;
    b[3] = (uint8_t)nd;
    for (int i = 0; i < nd; i++)
        for (int k = 0; k < 4; k++) b[4 + 4 * i + k] = (uint8_t)(dims[i] >> (24 - 8 * k));
    return 4 + 4 * (size_t)nd;
}

/* One gzip member of buf[0..len) at `level`, appended to file f; returns
 * its compressed size. */
static size_t gz_member(FILE *f, const uint8_t *buf, size_t len, int level) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    cr_assert_eq(deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&zs, (uLong)len) + 64;
    uint8_t *out = malloc(cap);
    zs.next_in = (Bytef *)(uintptr_t)buf;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    cr_assert_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
    size_t n = cap - zs.avail_out;
    deflateEnd(&zs);
    if (f) cr_assert_eq(fwrite(out, 1, n, f), n);
    free(out);
    return n;
}

static void expect_refused(const char *path, uint64_t max, tsl_status want, const char *needle) {
    uint8_t *data = (uint8_t *)1;
    int64_t dims[3];
    int nd;
    double t0 = now_s();
    tsl_status st = tsl__idx_read_gz_max(path, TSL__IDX_ANY, max, &data, dims, &nd);
    cr_assert_eq(st, want, "%s: %s", path, tsl_last_error());
    cr_assert_null(data);
    cr_assert(strstr(tsl_last_error(), path) && strstr(tsl_last_error(), needle),
              "message lacks \"%s\": %s", needle, tsl_last_error());
    cr_assert(now_s() - t0 < 2.0, "%s took %.1f s", path, now_s() - t0);
}

Test(limits, idx_files_are_refused_before_they_are_read, .init = make_dir, .fini = remove_dir,
     .timeout = 60) {
    char p[200];
    /* not gzip, 64 MiB (sparse): refused at its first bytes */
    snprintf(p, sizeof p, "%s/plain.gz", dir);
    FILE *f = fopen(p, "wb");
    fputs("PK", f);
    cr_assert_eq(ftruncate(fileno(f), (off_t)64 << 20), 0);
    fclose(f);
    expect_refused(p, TSL__IDX_MAX_ELEMS, TSL_ERR_FORMAT, "not gzip: the file starts with 0x50 0x4b");
    /* a header above the reader's bound: refused before its payload is inflated */
    uint8_t hdr[16];
    size_t hl = idx_header(hdr, (const uint32_t[3]){1000000, 28, 28}, 3);
    snprintf(p, sizeof p, "%s/many.gz", dir);
    f = fopen(p, "wb");
    gz_member(f, hdr, hl, 6);
    fclose(f);
    expect_refused(p, 1000, TSL_ERR_FORMAT, "hold 784000000 bytes, more than the 1000");
    /* a file far larger than a gzip stream of the bound */
    f = fopen(p, "ab");
    cr_assert_eq(ftruncate(fileno(f), (off_t)3 << 20), 0);
    fclose(f);
    expect_refused(p, 1000, TSL_ERR_IO, "larger than the limit");
    /* a bomb: 10 labels, then 64 MiB of zeros in one member */
    snprintf(p, sizeof p, "%s/bomb.gz", dir);
    size_t big = (size_t)64 << 20;
    uint8_t *bomb = calloc(1, big);
    hl = idx_header(bomb, (const uint32_t[1]){10}, 1);
    f = fopen(p, "wb");
    gz_member(f, bomb, big, 9);
    fclose(f);
    free(bomb);
    expect_refused(p, TSL__IDX_MAX_ELEMS, TSL_ERR_FORMAT,
                   "trailing garbage: more than 104857");
    /* a FIFO: refused at once */
    snprintf(p, sizeof p, "%s/fifo.gz", dir);
    cr_assert_eq(mkfifo(p, 0600), 0);
    expect_refused(p, TSL__IDX_MAX_ELEMS, TSL_ERR_IO, "a FIFO, not a regular file");
    expect_refused("/dev/zero", TSL__IDX_MAX_ELEMS, TSL_ERR_IO, "character device");
}

/* Two gzip members whose boundary falls one byte before the end of the
 * reader's first 64 KiB chunk: the second member's magic straddles two
 * reads and the file still reads exactly. */
Test(limits, idx_member_boundary_on_a_chunk_edge, .init = make_dir, .fini = remove_dir) {
    const size_t chunk = 65536;
    size_t n1 = 0, len = 200000;
    uint8_t *img = malloc(len);
    size_t hl = idx_header(img, (const uint32_t[1]){(uint32_t)(len - 8)}, 1);
    for (size_t k = hl; k < len; k++) img[k] = (uint8_t)(k * 131 + (k >> 7));
    /* stored blocks (level 0): the member's size grows by one per byte */
    for (size_t guess = chunk - 40; guess < chunk; guess++)
        if (gz_member(NULL, img, guess, 0) == chunk - 1) {
            n1 = guess;
            break;
        }
    cr_assert(n1 > 0, "no first member of %zu bytes", chunk - 1);
    char p[200];
    snprintf(p, sizeof p, "%s/edge.gz", dir);
    FILE *f = fopen(p, "wb");
    gz_member(f, img, n1, 0);
    gz_member(f, img + n1, len - n1, 6);
    fclose(f);
    uint8_t *data;
    int64_t dims[3];
    int nd;
    cr_assert_eq(tsl__idx_read_gz(p, TSL__IDX_LABELS, &data, dims, &nd), TSL_OK, "%s",
                 tsl_last_error());
    cr_assert(nd == 1 && dims[0] == (int64_t)(len - 8));
    cr_assert(memcmp(data, img + 8, len - 8) == 0);
    free(data);
    free(img);
}

/* Fashion-MNIST's loader takes at most 2^18 examples per split: a header
 * claiming a million images is refused before any payload is inflated. */
Test(limits, fashion_mnist_bounds_its_files, .init = make_dir, .fini = remove_dir) {
    uint8_t hdr[16];
    size_t hl = idx_header(hdr, (const uint32_t[3]){1000000, 28, 28}, 3);
    char p[200];
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", dir);
    FILE *f = fopen(p, "wb");
    gz_member(f, hdr, hl, 6);
    fclose(f);
    tsl_dataset d;
    cr_assert_eq(tsl_fashion_mnist_load(dir, 1, &d), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "1000000x28x28") &&
                  strstr(tsl_last_error(), "more than the 205520896 this reader accepts"),
              "%s", tsl_last_error());
    cr_assert_eq(d.n, 0);
}
