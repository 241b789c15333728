/*
 * test_data.c - datasets (tensile/data.h): the real Fashion-MNIST files
 * checked against an independent decode with zlib's gzread, malformed IDX
 * files made here in a temporary folder (each rejected with the right status
 * and a message naming the file and the field), the synthetic set and the
 * batcher.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "helpers.h"
#include "io/idx.h"
#include "tensile/data.h"

#define FM_MEAN 0.2860
#define FM_STD 0.3530

/* ---- independent decode of the real files ------------------------------------------ */

/* Reads a whole gzip file with gzread (an implementation independent of
 * src/io/idx.c); returns the bytes and their count. */
static uint8_t *gz_slurp(const char *path, size_t *len) {
    gzFile f = gzopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    size_t cap = 1 << 20, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (n == cap) buf = realloc(buf, cap *= 2);
        int got = gzread(f, buf + n, (unsigned)(cap - n));
        cr_assert(got >= 0, "gzread %s", path);
        if (got == 0) break;
        n += (size_t)got;
    }
    gzclose(f);
    *len = n;
    return buf;
}

/* First 16 labels of each split, read with `zcat FILE | xxd` by hand. */
static const int train_labels16[16] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5, 0, 9, 5, 5, 7, 9};
static const int test_labels16[16] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7, 4, 5, 7, 3, 4, 1};

static void check_split(int train) {
    const char *split = train ? "train" : "t10k";
    const int64_t want_n = train ? 60000 : 10000;
    tsl_dataset d;
    tsl_status st = tsl_fashion_mnist_load(NULL, train, &d);
    cr_assert_eq(st, TSL_OK, "load %s: %s", split, tsl_last_error());
    cr_assert_eq(d.n, want_n);
    cr_assert(d.c == 1 && d.h == 28 && d.w == 28 && d.n_classes == 10);
    const int *l16 = train ? train_labels16 : test_labels16;
    for (int i = 0; i < 16; i++) cr_assert_eq(d.labels[i], l16[i], "%s label %d", split, i);
    cr_assert_eq(d.labels[0], 9); /* the ankle boot */

    /* every label and pixel against the independent decode */
    char path[512];
    size_t ilen, llen;
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", TSL_FASHION_MNIST_DIR, split);
    uint8_t *raw_i = gz_slurp(path, &ilen);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", TSL_FASHION_MNIST_DIR, split);
    uint8_t *raw_l = gz_slurp(path, &llen);
    cr_assert_eq(ilen, 16 + (size_t)want_n * 784);
    cr_assert_eq(llen, 8 + (size_t)want_n);
    int64_t counts[10] = {0};
    double max_err = 0, sum = 0, sum2 = 0;
    for (int64_t i = 0; i < want_n; i++) {
        cr_assert_eq(d.labels[i], raw_l[8 + i], "%s label %lld", split, (long long)i);
        cr_assert(d.labels[i] >= 0 && d.labels[i] < 10);
        counts[d.labels[i]]++;
    }
    for (int64_t k = 0; k < want_n * 784; k++) {
        double p = raw_i[16 + k] / 255.0;
        double e = fabs(d.images[k] - (p - FM_MEAN) / FM_STD);
        if (e > max_err) max_err = e;
        sum += p;
        sum2 += p * p;
    }
    double mean = sum / (double)(want_n * 784);
    double sd = sqrt(sum2 / (double)(want_n * 784) - mean * mean);
    cr_assert(max_err < 1e-5, "%s: normalised pixels off by %g", split, max_err);
    for (int c = 0; c < 10; c++)
        cr_assert_eq(counts[c], want_n / 10, "%s: class %d has %lld examples", split, c,
                     (long long)counts[c]);
    /* the stated statistics are the training set's */
    double tol = train ? 0.0005 : 0.005;
    cr_assert(fabs(mean - FM_MEAN) < tol && fabs(sd - FM_STD) < tol,
              "%s: pixel mean %.5f std %.5f, stated 0.2860 0.3530", split, mean, sd);
    printf("fashion-mnist %s: %lld examples, pixel mean %.5f std %.5f, max normalisation error "
           "%.2g\n", split, (long long)d.n, mean, sd, max_err);
    free(raw_i);
    free(raw_l);
    tsl_dataset_free(&d);
    cr_assert_null(d.images);
    cr_assert_eq(d.n, 0);
}

Test(data, fashion_mnist_train, .timeout = 60) { check_split(1); }
Test(data, fashion_mnist_test, .timeout = 60) { check_split(0); }

Test(data, idx_read_gz_public_api, .timeout = 60) {
    uint8_t *data;
    int64_t dims[3];
    int nd;
    tsl_status st = tsl_idx_read_gz(TSL_FASHION_MNIST_DIR "/t10k-labels-idx1-ubyte.gz", &data,
                                    dims, &nd);
    cr_assert_eq(st, TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(nd, 1);
    cr_assert_eq(dims[0], 10000);
    cr_assert_eq(data[0], 9);
    free(data);
    st = tsl_idx_read_gz(TSL_FASHION_MNIST_DIR "/t10k-images-idx3-ubyte.gz", &data, dims, &nd);
    cr_assert_eq(st, TSL_OK, "%s", tsl_last_error());
    cr_assert(nd == 3 && dims[0] == 10000 && dims[1] == 28 && dims[2] == 28);
    free(data);
}

/* ---- malformed files made here ---------------------------------------------------- */

static char tmpdir[256];

static void make_tmpdir(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tsl_test_data_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

/* An IDX image: magic bytes m[4], dims (count nd), then `payload` bytes
 * (pixel k is k*7 mod 256), then `extra` garbage bytes. */
static uint8_t *make_idx(const uint8_t m[4], const uint32_t *dims, int nd, size_t payload,
                         size_t extra, size_t *len) {
    *len = 4 + 4 * (size_t)nd + payload + extra;
    uint8_t *b = malloc(*len ? *len : 1);
    memcpy(b, m, 4);
    for (int i = 0; i < nd; i++) {
        b[4 + 4 * i] = (uint8_t)(dims[i] >> 24);
        b[5 + 4 * i] = (uint8_t)(dims[i] >> 16);
        b[6 + 4 * i] = (uint8_t)(dims[i] >> 8);
        b[7 + 4 * i] = (uint8_t)dims[i];
    }
    for (size_t k = 0; k < payload + extra; k++) b[4 + 4 * nd + k] = (uint8_t)(k * 7);
    return b;
}

static void write_gz(const char *path, const uint8_t *b, size_t len) {
    gzFile f = gzopen(path, "wb");
    cr_assert_not_null(f);
    if (len) cr_assert_eq(gzwrite(f, b, (unsigned)len), (int)len);
    cr_assert_eq(gzclose(f), Z_OK);
}

static void write_raw(const char *path, const uint8_t *b, size_t len) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    if (len) cr_assert_eq(fwrite(b, 1, len, f), len);
    fclose(f);
}

static uint8_t *read_raw(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*len + 1);
    cr_assert_eq(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

/* Reads `path` with tsl_idx_read_gz and expects `want`, with a message
 * holding the path and every one of the NULL-terminated needles. */
static void expect_reject(const char *path, tsl_status want, const char *const *needles) {
    uint8_t *data = (uint8_t *)1;
    int64_t dims[3];
    int nd;
    tsl_clear_error();
    tsl_status st = tsl_idx_read_gz(path, &data, dims, &nd);
    const char *msg = tsl_last_error();
    cr_assert_eq(st, want, "%s: status %s, expected %s (%s)", path, tsl_status_str(st),
                 tsl_status_str(want), msg);
    cr_assert_null(data, "%s: data left set on failure", path);
    cr_assert(strstr(msg, path), "message does not name the file: %s", msg);
    for (int i = 0; needles[i]; i++)
        cr_assert(strstr(msg, needles[i]), "message lacks \"%s\": %s", needles[i], msg);
}

#define REJECT(path, st, ...) expect_reject(path, st, (const char *const[]){__VA_ARGS__, NULL})

static const uint8_t M_IMAGES[4] = {0, 0, 8, 3}, M_LABELS[4] = {0, 0, 8, 1};

Test(data, idx_bad_files, .init = make_tmpdir, .fini = remove_tmpdir) {
    char p[512];
    size_t len;
    uint8_t *b;
    const uint32_t d3[3] = {2, 28, 28};

    /* bad magic: the message of the brief, expected kind named */
    snprintf(p, sizeof p, "%s/bad-magic.gz", tmpdir);
    b = make_idx((const uint8_t[4]){0, 0, 9, 2}, d3, 2, 0, 0, &len);
    write_gz(p, b, len);
    free(b);
    REJECT(p, TSL_ERR_FORMAT, "bad magic 0x00000902", "data type 0x09");
    b = make_idx((const uint8_t[4]){0x12, 0x34, 8, 3}, d3, 3, 2 * 784, 0, &len);
    write_gz(p, b, len);
    free(b);
    REJECT(p, TSL_ERR_FORMAT, "bad magic 0x12340803", "expected 0x00000801 (labels) or 0x00000803");

    /* wrong rank */
    snprintf(p, sizeof p, "%s/rank2.gz", tmpdir);
    b = make_idx((const uint8_t[4]){0, 0, 8, 2}, d3, 2, 56, 0, &len);
    write_gz(p, b, len);
    free(b);
    REJECT(p, TSL_ERR_FORMAT, "bad magic 0x00000802, expected", "rank 2");

    /* data type other than unsigned byte */
    snprintf(p, sizeof p, "%s/float.gz", tmpdir);
    b = make_idx((const uint8_t[4]){0, 0, 0x0D, 3}, d3, 3, 4 * 2 * 784, 0, &len);
    write_gz(p, b, len);
    free(b);
    REJECT(p, TSL_ERR_FORMAT, "data type 0x0d (float32)");

    /* truncated payload and trailing bytes */
    snprintf(p, sizeof p, "%s/short.gz", tmpdir);
    b = make_idx(M_IMAGES, d3, 3, 1000, 0, &len);
    write_gz(p, b, len);
    free(b);
    REJECT(p, TSL_ERR_FORMAT, "truncated payload", "1000 bytes", "2x28x28", "1568");
    snprintf(p, sizeof p, "%s/long.gz", tmpdir);
    b = make_idx(M_IMAGES, d3, 3, 2 * 784, 5, &len);
    write_gz(p, b, len);
    free(b);
    REJECT(p, TSL_ERR_FORMAT, "trailing garbage", "5 bytes after the payload of 1568");
    /* much trailing data: counted exactly, though never held in memory */
    b = make_idx(M_LABELS, (const uint32_t[1]){3}, 1, 3, 300000, &len);
    write_gz(p, b, len);
    free(b);
    REJECT(p, TSL_ERR_FORMAT, "trailing garbage", "300000 bytes after the payload of 3 bytes");

    /* truncated header */
    snprintf(p, sizeof p, "%s/header.gz", tmpdir);
    write_gz(p, (const uint8_t[]){0, 0, 8, 3, 0, 0, 0, 2, 0, 0}, 10);
    REJECT(p, TSL_ERR_FORMAT, "truncated header", "10 bytes", "needs 16");
    write_gz(p, (const uint8_t[]){0, 0}, 2);
    REJECT(p, TSL_ERR_FORMAT, "truncated header", "magic");

    /* not gzip, empty, empty gzip stream, nonexistent */
    snprintf(p, sizeof p, "%s/plain.gz", tmpdir);
    b = make_idx(M_LABELS, (const uint32_t[1]){4}, 1, 4, 0, &len);
    write_raw(p, b, len);
    free(b);
    REJECT(p, TSL_ERR_FORMAT, "not gzip", "0x00 0x00");
    snprintf(p, sizeof p, "%s/empty.gz", tmpdir);
    write_raw(p, NULL, 0);
    REJECT(p, TSL_ERR_FORMAT, "empty file");
    write_gz(p, NULL, 0);
    REJECT(p, TSL_ERR_FORMAT, "empty", "header");
    snprintf(p, sizeof p, "%s/no-such-file.gz", tmpdir);
    REJECT(p, TSL_ERR_IO, "cannot open", "No such file");
    REJECT(tmpdir, TSL_ERR_IO, "cannot read");

    /* dimensions: product beyond 2^31, a zero dimension */
    snprintf(p, sizeof p, "%s/huge.gz", tmpdir);
    b = make_idx(M_IMAGES, (const uint32_t[3]){65536, 65536, 65536}, 3, 100, 0, &len);
    write_gz(p, b, len);
    free(b);
    REJECT(p, TSL_ERR_FORMAT, "dimensions 65536x65536x65536", "2^31");
    b = make_idx(M_IMAGES, (const uint32_t[3]){0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, 3, 0, 0,
                 &len);
    write_gz(p, b, len);
    free(b);
    REJECT(p, TSL_ERR_FORMAT, "2^31");
    b = make_idx(M_IMAGES, (const uint32_t[3]){2, 0, 28}, 3, 0, 0, &len);
    write_gz(p, b, len);
    free(b);
    REJECT(p, TSL_ERR_FORMAT, "dimension 1 is 0");

    /* gzip damage: cut in the middle, a flipped byte, garbage after the stream */
    snprintf(p, sizeof p, "%s/ok.gz", tmpdir);
    b = make_idx(M_IMAGES, d3, 3, 2 * 784, 0, &len);
    write_gz(p, b, len);
    free(b);
    uint8_t *gz = read_raw(p, &len);
    snprintf(p, sizeof p, "%s/cut.gz", tmpdir);
    write_raw(p, gz, len / 2);
    REJECT(p, TSL_ERR_FORMAT, "gzip stream truncated");
    write_raw(p, gz, len - 3); /* inside the CRC/size trailer */
    REJECT(p, TSL_ERR_FORMAT, "gzip stream truncated");
    snprintf(p, sizeof p, "%s/flip.gz", tmpdir);
    gz[len - 6] ^= 0x55; /* the CRC */
    write_raw(p, gz, len);
    REJECT(p, TSL_ERR_FORMAT, "corrupt gzip stream");
    gz[len - 6] ^= 0x55;
    gz[len] = 0x42;
    snprintf(p, sizeof p, "%s/after.gz", tmpdir);
    write_raw(p, gz, len + 1);
    REJECT(p, TSL_ERR_FORMAT, "1 bytes after the end of the gzip stream");
    free(gz);
}

/* A valid file split into two gzip members reads like the whole. */
Test(data, idx_concatenated_members, .init = make_tmpdir, .fini = remove_tmpdir) {
    char p[512], q[512];
    size_t len, l1, l2;
    uint8_t *b = make_idx(M_IMAGES, (const uint32_t[3]){3, 5, 7}, 3, 105, 0, &len);
    snprintf(p, sizeof p, "%s/a.gz", tmpdir);
    snprintf(q, sizeof q, "%s/b.gz", tmpdir);
    write_gz(p, b, 40);
    write_gz(q, b + 40, len - 40);
    uint8_t *g1 = read_raw(p, &l1), *g2 = read_raw(q, &l2);
    g1 = realloc(g1, l1 + l2);
    memcpy(g1 + l1, g2, l2);
    snprintf(p, sizeof p, "%s/two.gz", tmpdir);
    write_raw(p, g1, l1 + l2);
    uint8_t *data;
    int64_t dims[3];
    int nd;
    cr_assert_eq(tsl_idx_read_gz(p, &data, dims, &nd), TSL_OK, "%s", tsl_last_error());
    cr_assert(nd == 3 && dims[0] == 3 && dims[1] == 5 && dims[2] == 7);
    cr_assert(memcmp(data, b + 16, 105) == 0);
    free(data);
    free(g1);
    free(g2);
    free(b);
}

/* The in-memory parser: exact dims and payload; rejections name the buffer. */
Test(data, idx_parse_in_memory) {
    size_t len;
    uint8_t *b = make_idx(M_LABELS, (const uint32_t[1]){300}, 1, 300, 0, &len);
    uint8_t *data;
    int64_t dims[3];
    int nd;
    cr_assert_eq(tsl__idx_parse(b, len, "mem", TSL__IDX_LABELS, &data, dims, &nd), TSL_OK);
    cr_assert(nd == 1 && dims[0] == 300 && dims[1] == 0);
    cr_assert(memcmp(data, b + 8, 300) == 0);
    free(data);
    cr_assert_eq(tsl__idx_parse(b, len, "mem", TSL__IDX_IMAGES, &data, dims, &nd), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "mem: bad magic 0x00000801, expected 0x00000803 (images): rank 1"),
              "%s", tsl_last_error());
    cr_assert_eq(tsl__idx_parse(b, len - 1, "mem", TSL__IDX_ANY, &data, dims, &nd), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "truncated payload: 299 bytes"), "%s", tsl_last_error());
    cr_assert_eq(tsl__idx_parse(b, 0, "mem", TSL__IDX_ANY, &data, dims, &nd), TSL_ERR_FORMAT);
    free(b);
    /* exactly 2^31 elements pass the header check (then the length check fails) */
    b = make_idx(M_IMAGES, (const uint32_t[3]){1u << 31, 1, 1}, 3, 0, 0, &len);
    cr_assert_eq(tsl__idx_parse(b, len, "mem", TSL__IDX_ANY, &data, dims, &nd), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "truncated payload"), "%s", tsl_last_error());
    free(b);
    b = make_idx(M_IMAGES, (const uint32_t[3]){(1u << 31) + 1, 1, 1}, 3, 0, 0, &len);
    cr_assert_eq(tsl__idx_parse(b, len, "mem", TSL__IDX_ANY, &data, dims, &nd), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "2^31"), "%s", tsl_last_error());
    free(b);
}

/* ---- the Fashion-MNIST loader on files made here -------------------------------------------- */

/* Writes a split of n images (rows x cols) and nl labels into tmpdir; label
 * i is i % 10 except that label `bad_at` (if >= 0) is 10. */
static void write_split(int n, int rows, int cols, int nl, int bad_at) {
    char p[512];
    size_t len;
    uint8_t *b = make_idx(M_IMAGES, (const uint32_t[3]){(uint32_t)n, (uint32_t)rows, (uint32_t)cols},
                          3, (size_t)n * rows * cols, 0, &len);
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", tmpdir);
    write_gz(p, b, len);
    free(b);
    b = make_idx(M_LABELS, (const uint32_t[1]){(uint32_t)nl}, 1, (size_t)nl, 0, &len);
    for (int i = 0; i < nl; i++) b[8 + i] = (uint8_t)(i == bad_at ? 10 : i % 10);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte.gz", tmpdir);
    write_gz(p, b, len);
    free(b);
}

static void expect_load_error(tsl_status want, const char *n1, const char *n2) {
    tsl_dataset d;
    d.n = 77;
    tsl_status st = tsl_fashion_mnist_load(tmpdir, 1, &d);
    const char *msg = tsl_last_error();
    cr_assert_eq(st, want, "status %s: %s", tsl_status_str(st), msg);
    cr_assert(d.n == 0 && d.images == NULL && d.labels == NULL, "*out not zeroed on failure");
    cr_assert(strstr(msg, n1), "message lacks \"%s\": %s", n1, msg);
    if (n2) cr_assert(strstr(msg, n2), "message lacks \"%s\": %s", n2, msg);
}

Test(data, fashion_mnist_loader_checks, .init = make_tmpdir, .fini = remove_tmpdir) {
    /* a valid small split loads, normalised exactly as stated */
    write_split(5, 28, 28, 5, -1);
    tsl_dataset d;
    cr_assert_eq(tsl_fashion_mnist_load(tmpdir, 1, &d), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(d.n, 5);
    for (int k = 0; k < 5 * 784; k++) {
        double want = ((uint8_t)(k * 7) / 255.0 - FM_MEAN) / FM_STD;
        cr_assert(fabs(d.images[k] - want) < 1e-5, "pixel %d: %g vs %g", k, d.images[k], want);
    }
    for (int i = 0; i < 5; i++) cr_assert_eq(d.labels[i], i);
    float x[784];
    int32_t y;
    tsl_dataset_get(&d, 3, x, &y);
    cr_assert_eq(y, 3);
    cr_assert(memcmp(x, d.images + 3 * 784, sizeof x) == 0);
    tsl_dataset_free(&d);

    write_split(5, 28, 28, 5, 3);
    expect_load_error(TSL_ERR_FORMAT, "train-labels-idx1-ubyte.gz: label 3 is 10", NULL);
    write_split(5, 28, 28, 4, -1);
    expect_load_error(TSL_ERR_FORMAT, "train-images-idx3-ubyte.gz holds 5 images",
                      "train-labels-idx1-ubyte.gz holds 4 labels");
    write_split(5, 27, 28, 5, -1);
    expect_load_error(TSL_ERR_FORMAT, "train-images-idx3-ubyte.gz: pictures are 27x28", "28x28");
    /* a labels file where images are expected: the kind is named */
    char a[512], b[512];
    write_split(5, 28, 28, 5, -1);
    snprintf(a, sizeof a, "%s/train-labels-idx1-ubyte.gz", tmpdir);
    snprintf(b, sizeof b, "%s/train-images-idx3-ubyte.gz", tmpdir);
    cr_assert_eq(rename(a, b), 0);
    expect_load_error(TSL_ERR_FORMAT,
                      "train-images-idx3-ubyte.gz: bad magic 0x00000801, expected 0x00000803 "
                      "(images): rank 1", NULL);
    cr_assert_eq(unlink(b), 0);
    expect_load_error(TSL_ERR_IO, "train-images-idx3-ubyte.gz: cannot open", NULL);
    tsl_dataset t;
    cr_assert_eq(tsl_fashion_mnist_load(tmpdir, 0, &t), TSL_ERR_IO); /* no t10k files here */
    cr_assert(strstr(tsl_last_error(), "t10k-images-idx3-ubyte.gz"), "%s", tsl_last_error());
}

/* ---- synthetic ---------------------------------------------------------------------------- */

Test(data, synthetic_deterministic_and_seeded) {
    const int c = 3, h = 32, w = 32, chw = 3 * 32 * 32;
    tsl_dataset a, b, s2, big;
    cr_assert_eq(tsl_synthetic_dataset(1000, c, h, w, 10, 42, &a), TSL_OK);
    cr_assert_eq(tsl_synthetic_dataset(1000, c, h, w, 10, 42, &b), TSL_OK);
    cr_assert_eq(tsl_synthetic_dataset(1000, c, h, w, 10, 43, &s2), TSL_OK);
    cr_assert_eq(tsl_synthetic_dataset(5000, c, h, w, 10, 42, &big), TSL_OK);
    cr_assert(a.images == NULL && a.labels == NULL && a.n == 1000 && a.n_classes == 10);
    float *x = malloc(4 * chw * sizeof *x);
    int64_t counts[10] = {0}, label_diffs = 0;
    double maxabs = 0, sum = 0, sum2 = 0;
    for (int64_t i = 0; i < 1000; i++) {
        int32_t y0, y1, y2, y3;
        tsl_dataset_get(&a, i, x, &y0);
        tsl_dataset_get(&b, i, x + chw, &y1);
        tsl_dataset_get(&big, i, x + 2 * chw, &y3); /* depends on (seed, i) only */
        tsl_dataset_get(&s2, i, x + 3 * chw, &y2);
        cr_assert(memcmp(x, x + chw, chw * sizeof *x) == 0 && y0 == y1, "example %lld differs "
                  "between two sets of the same seed", (long long)i);
        cr_assert(memcmp(x, x + 2 * chw, chw * sizeof *x) == 0 && y0 == y3);
        int same = 0;
        for (int k = 0; k < chw; k++) same += x[k] == x[3 * chw + k];
        cr_assert(same < chw / 100, "example %lld: %d of %d values equal across seeds",
                  (long long)i, same, chw);
        label_diffs += y0 != y2;
        cr_assert(y0 >= 0 && y0 < 10);
        counts[y0]++;
        for (int k = 0; k < chw; k++) {
            cr_assert(isfinite(x[k]), "example %lld value %d not finite", (long long)i, k);
            if (fabs(x[k]) > maxabs) maxabs = fabs(x[k]);
            sum += x[k];
            sum2 += (double)x[k] * x[k];
        }
    }
    for (int k = 0; k < 10; k++) cr_assert_eq(counts[k], 100, "class %d: %lld", k, (long long)counts[k]);
    cr_assert(label_diffs > 0, "labels identical across seeds");
    double mean = sum / (1000.0 * chw), sd = sqrt(sum2 / (1000.0 * chw) - mean * mean);
    cr_assert(maxabs < 4.0 && fabs(mean) < 0.05 && sd > 0.6 && sd < 1.2,
              "value range: max |x| %g, mean %g, std %g", maxabs, mean, sd);
    printf("synthetic: mean %.4f std %.4f max |x| %.3f\n", mean, sd, maxabs);
    /* n not a multiple of the classes: counts differ by at most one */
    tsl_dataset o;
    cr_assert_eq(tsl_synthetic_dataset(1003, 1, 4, 4, 7, 9, &o), TSL_OK);
    int64_t oc[7] = {0};
    for (int64_t i = 0; i < 1003; i++) {
        int32_t y;
        tsl_dataset_get(&o, i, x, &y);
        oc[y]++;
    }
    for (int k = 0; k < 7; k++) cr_assert(oc[k] == 143 || oc[k] == 144, "class %d: %lld", k, (long long)oc[k]);
    free(x);
    tsl_dataset_free(&a); /* nothing to free; zeroes */
    cr_assert_eq(a.n, 0);
}

/* The pattern is learnable, and the same task for every seed (a test set
 * is a set with another seed): a nearest-class-mean classifier fitted on
 * 500 examples of seed 5 labels 500 examples of seed 6 far above chance. */
Test(data, synthetic_learnable) {
    const int c = 3, h = 16, w = 16, chw = c * h * w, K = 10;
    tsl_dataset d, e;
    cr_assert_eq(tsl_synthetic_dataset(500, c, h, w, K, 5, &d), TSL_OK);
    cr_assert_eq(tsl_synthetic_dataset(500, c, h, w, K, 6, &e), TSL_OK);
    double *mean = calloc((size_t)K * chw, sizeof *mean);
    int cnt[10] = {0};
    float *x = malloc(chw * sizeof *x);
    for (int64_t i = 0; i < 500; i++) {
        int32_t y;
        tsl_dataset_get(&d, i, x, &y);
        cnt[y]++;
        for (int k = 0; k < chw; k++) mean[y * chw + k] += x[k];
    }
    for (int y = 0; y < K; y++)
        for (int k = 0; k < chw; k++) mean[y * chw + k] /= cnt[y];
    int correct = 0;
    for (int64_t i = 0; i < 500; i++) {
        int32_t y;
        tsl_dataset_get(&e, i, x, &y);
        int best = -1;
        double bd = INFINITY;
        for (int m = 0; m < K; m++) {
            double dist = 0;
            for (int k = 0; k < chw; k++) dist += (x[k] - mean[m * chw + k]) * (x[k] - mean[m * chw + k]);
            if (dist < bd) {
                bd = dist;
                best = m;
            }
        }
        correct += best == y;
    }
    printf("synthetic: nearest-class-mean accuracy %.1f%% on another seed's examples\n", correct / 5.0);
    cr_assert(correct >= 450, "nearest-class-mean accuracy %d/500", correct);
    free(mean);
    free(x);
}

Test(data, synthetic_rejects_bad_arguments) {
    tsl_dataset d;
    cr_assert_eq(tsl_synthetic_dataset(0, 3, 8, 8, 10, 1, &d), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "n = 0"), "%s", tsl_last_error());
    cr_assert_eq(tsl_synthetic_dataset(10, 3, 0, 8, 10, 1, &d), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "(3,0,8)"), "%s", tsl_last_error());
    cr_assert_eq(tsl_synthetic_dataset(10, 3, 8, 8, 0, 1, &d), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "n_classes = 0"), "%s", tsl_last_error());
    cr_assert_eq(tsl_synthetic_dataset(10, 65536, 65536, 2, 10, 1, &d), TSL_ERR_INVALID);
}

/* ---- batcher -------------------------------------------------------------------------------- */

/* A set whose example i is the single value i with label i. */
static tsl_dataset index_set(int64_t n) {
    tsl_dataset d = {.n = n, .c = 1, .h = 1, .w = 1, .n_classes = (int)n};
    d.images = malloc((size_t)n * sizeof *d.images);
    d.labels = malloc((size_t)n * sizeof *d.labels);
    for (int64_t i = 0; i < n; i++) {
        d.images[i] = (float)i;
        d.labels[i] = (int32_t)i;
    }
    return d;
}

/* Runs one epoch; writes the visiting order into order[] and returns how
 * many examples were visited. */
static int64_t run_epoch(tsl_batcher *b, int batch, int64_t *order) {
    float x[64];
    int32_t y[64];
    int64_t seen = 0;
    while (tsl_batcher_next(b, x, y)) {
        for (int k = 0; k < batch; k++) {
            cr_assert_eq((int32_t)x[k], y[k], "image and label out of step");
            order[seen++] = y[k];
        }
    }
    return seen;
}

Test(data, batcher_epochs) {
    tsl_dataset d = index_set(100);
    tsl_batcher *b = tsl_batcher_new(&d, 10, 42, 1), *b2 = tsl_batcher_new(&d, 10, 42, 1),
                *b3 = tsl_batcher_new(&d, 10, 43, 1), *b4 = tsl_batcher_new(&d, 10, 42, 0);
    cr_assert(b && b2 && b3 && b4);
    cr_assert_eq(tsl_batcher_batches_per_epoch(b), 10);
    int64_t o[3][100], o2[100], o3[100], o4[100];
    for (int e = 0; e < 3; e++) {
        cr_assert_eq(run_epoch(b, 10, o[e]), 100);
        cr_assert_eq(run_epoch(b2, 10, o2), 100);
        cr_assert_eq(run_epoch(b3, 10, o3), 100);
        cr_assert_eq(run_epoch(b4, 10, o4), 100);
        int seen[100] = {0};
        for (int i = 0; i < 100; i++) seen[o[e][i]]++;
        for (int i = 0; i < 100; i++)
            cr_assert_eq(seen[i], 1, "epoch %d: example %d seen %d times", e, i, seen[i]);
        cr_assert(memcmp(o[e], o2, sizeof o2) == 0, "epoch %d: same seed, different order", e);
        cr_assert(memcmp(o[e], o3, sizeof o3) != 0, "epoch %d: seeds 42 and 43 agree", e);
        for (int i = 0; i < 100; i++) cr_assert_eq(o4[i], i, "unshuffled order");
    }
    cr_assert(memcmp(o[0], o[1], sizeof o[0]) != 0 && memcmp(o[1], o[2], sizeof o[0]) != 0,
              "the order does not change across epochs");
    tsl_batcher_free(b);
    tsl_batcher_free(b2);
    tsl_batcher_free(b3);
    tsl_batcher_free(b4);

    /* 103 examples in batches of 10: 10 batches, 3 dropped, none twice */
    tsl_dataset_free(&d);
    d = index_set(103);
    b = tsl_batcher_new(&d, 10, 1, 1);
    cr_assert_eq(tsl_batcher_batches_per_epoch(b), 10);
    int64_t ord[110];
    for (int e = 0; e < 4; e++) {
        cr_assert_eq(run_epoch(b, 10, ord), 100);
        int seen[103] = {0};
        for (int i = 0; i < 100; i++) cr_assert_eq(seen[ord[i]]++, 0, "example %lld twice", (long long)ord[i]);
    }
    tsl_batcher_free(b);
    cr_assert_null(tsl_batcher_new(&d, 0, 1, 1));
    cr_assert(strstr(tsl_last_error(), "batch 0"), "%s", tsl_last_error());
    cr_assert_null(tsl_batcher_new(&d, 104, 1, 1));
    tsl_batcher_free(NULL);
    tsl_dataset_free(&d);
}

/* Fisher-Yates must give all n! orders equally often: 4 examples, 24000
 * epochs, chi-square over the 24 permutations (23 degrees of freedom;
 * 60 is far beyond the 0.9999 quantile, 55). */
Test(data, batcher_shuffle_uniform) {
    tsl_dataset d = index_set(4);
    tsl_batcher *b = tsl_batcher_new(&d, 4, 7, 1);
    const int epochs = 24000;
    int hist[256] = {0};
    for (int e = 0; e < epochs; e++) {
        float x[4];
        int32_t y[4];
        cr_assert_eq(tsl_batcher_next(b, x, y), 1);
        cr_assert_eq(tsl_batcher_next(b, x, y), 0);
        hist[y[0] * 64 + y[1] * 16 + y[2] * 4 + y[3]]++;
    }
    double chi2 = 0;
    int distinct = 0;
    for (int k = 0; k < 256; k++) {
        if (!hist[k]) continue;
        distinct++;
        chi2 += (hist[k] - 1000.0) * (hist[k] - 1000.0) / 1000.0;
    }
    cr_assert_eq(distinct, 24, "%d distinct orders of 4 examples", distinct);
    cr_assert(chi2 < 60, "chi-square %g over 24 orders", chi2);
    printf("batcher: chi-square %.1f over the 24 orders of 4 examples (23 dof)\n", chi2);
    tsl_batcher_free(b);
    tsl_dataset_free(&d);
}

/* A synthetic set through the batcher: batches hold the examples of the order. */
Test(data, batcher_synthetic) {
    tsl_dataset d;
    cr_assert_eq(tsl_synthetic_dataset(64, 3, 8, 8, 4, 11, &d), TSL_OK);
    tsl_batcher *b = tsl_batcher_new(&d, 16, 3, 0);
    float *x = malloc(16 * 192 * sizeof *x), *e = malloc(192 * sizeof *e);
    int32_t y[16], ye;
    for (int bi = 0; bi < 4; bi++) {
        cr_assert_eq(tsl_batcher_next(b, x, y), 1);
        for (int k = 0; k < 16; k++) {
            tsl_dataset_get(&d, bi * 16 + k, e, &ye);
            cr_assert(ye == y[k] && memcmp(e, x + k * 192, 192 * sizeof *e) == 0);
        }
    }
    cr_assert_eq(tsl_batcher_next(b, x, y), 0);
    free(x);
    free(e);
    tsl_batcher_free(b);
}
