/*
 * fuzz_args.c - libFuzzer harness for the command line's value parsers
 * (tools/args.c, tools/job_list.c): sizes (--device-memory, --budget),
 * percentages (--device-memory 60%), integers (--batch, --train-examples)
 * and --jobs lists.
 *
 * The input, cut at its first NUL and at 4096 bytes, is given to every
 * parser. A size must be below the 4 EiB bound and, for plain digits, be
 * exactly their value; a percentage must lie in (0, 1000]; an integer in
 * the range asked and print back to what was parsed; a --jobs list must
 * give jobs of valid names, batches and image sizes that, written back as
 * "model:batch[:image],...", parse to the same jobs. A refusal must leave
 * the output (or the job list) untouched and, for --jobs, give a message.
 * Anything else aborts, which libFuzzer reports as a crash.
 *
 * Built with the libraries of the line below (and what they link) by
 * scripts/fuzz.sh with libFuzzer, and by the suite as fuzz_args_replay over
 * fuzz/corpus/fuzz_args (CMakeLists.txt reads the same line).
 * fuzz-link: tsl_cli
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "job_list.h"

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "fuzz_args: check failed at line %d: %s\n", __LINE__, #cond); \
            abort();                                                               \
        }                                                                          \
    } while (0)

static void check_size(const char *s) {
    size_t v = 12345;
    if (args_parse_size(s, &v) != 0) {
        CHECK(v == 12345);
        return;
    }
    CHECK(v < TSL_ARGS_MAX_SIZE);
    size_t n = strlen(s), digits = strspn(s, "0123456789");
    if (n > 0 && digits == n && n <= 18) CHECK(v == strtoull(s, NULL, 10));
    char buf[32];
    fmt_bytes(v, buf, sizeof buf);
    CHECK(buf[0] != '\0' && strlen(buf) < sizeof buf - 1);
}

static void check_percent(const char *s) {
    double p = -7;
    if (args_parse_percent(s, &p) != 0) {
        CHECK(p == -7);
        return;
    }
    CHECK(p > 0 && p <= 1000);
    CHECK(strlen(s) >= 2 && s[strlen(s) - 1] == '%');
}

static void check_int(const char *s, int64_t lo, int64_t hi) {
    int64_t v = 42;
    int rc = args_parse_int(s, lo, hi, &v);
    CHECK(rc == 0 || rc == -1 || rc == -2);
    if (rc != 0) {
        CHECK(v == 42);
        return;
    }
    CHECK(v >= lo && v <= hi);
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    int64_t w = 0;
    CHECK(args_parse_int(buf, lo, hi, &w) == 0 && w == v);
}

static int valid_model(const char *m) {
    size_t n = strlen(m);
    if (n == 0 || n > 63) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((m[i] >= 'a' && m[i] <= 'z') || (m[i] >= 'A' && m[i] <= 'Z') ||
              (m[i] >= '0' && m[i] <= '9') || m[i] == '-' || m[i] == '_'))
            return 0;
    return 1;
}

static void check_jobs(const char *s) {
    job_list l = {0};
    /* one job already there: a refusal must keep it, a success append */
    job_spec *first = job_list_add(&l);
    CHECK(first);
    snprintf(first->model, sizeof first->model, "keep");
    first->batch = 7;
    char err[400] = "";
    if (job_list_parse(s, &l, err, sizeof err) != 0) {
        CHECK(l.n == 1 && !strcmp(l.v[0].model, "keep") && l.v[0].batch == 7);
        CHECK(err[0] != '\0' && strlen(err) < sizeof err);
        job_list_free(&l);
        return;
    }
    CHECK(l.n >= 2);
    size_t cap = (size_t)l.n * 96 + 1, at = 0;
    char *again = malloc(cap);
    CHECK(again);
    again[0] = '\0';
    for (int i = 1; i < l.n; i++) {
        const job_spec *j = &l.v[i];
        CHECK(valid_model(j->model));
        CHECK(j->batch >= 1 && j->batch <= JOB_MAX_BATCH);
        CHECK(j->image == 0 || (j->image >= 1 && j->image <= JOB_MAX_IMAGE));
        CHECK(j->workload_path == NULL);
        at += (size_t)snprintf(again + at, cap - at, j->image ? "%s%s:%d:%d" : "%s%s:%d",
                               i > 1 ? "," : "", j->model, j->batch, j->image);
        CHECK(at < cap);
    }
    job_list m = {0};
    CHECK(job_list_parse(again, &m, err, sizeof err) == 0);
    CHECK(m.n == l.n - 1);
    for (int i = 0; i < m.n; i++)
        CHECK(!strcmp(m.v[i].model, l.v[i + 1].model) && m.v[i].batch == l.v[i + 1].batch &&
              m.v[i].image == l.v[i + 1].image);
    free(again);
    job_list_free(&m);
    job_list_free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char s[4097];
    size_t n = size < sizeof s - 1 ? size : sizeof s - 1;
    memcpy(s, data, n);
    s[n] = '\0';
    check_size(s);
    check_percent(s);
    check_int(s, 1, JOB_MAX_BATCH);
    check_int(s, INT64_MIN, INT64_MAX);
    check_int(s, 0, 0);
    check_jobs(s);
    return 0;
}
