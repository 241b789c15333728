/*
 * fuzz_workload_json.c - libFuzzer harness for the workload JSON reader and
 * writer (src/io/workload_json.c).
 *
 * Each input is parsed as a workload. A failure must be TSL_ERR_FORMAT (or
 * TSL_ERR_OOM) with a message that names the input, and must leave *out
 * untouched. A success must satisfy everything the planner relies on
 * (unique names, contiguous times from 0, period = end of the last op,
 * every computed tensor generated once before it is read, producers
 * consistent, indices in range), and must survive write -> read exactly,
 * with a second write giving the same bytes. Anything else aborts, which
 * libFuzzer reports as a crash.
 *
 * Built with the libraries of the line below (and what they link) by
 * scripts/fuzz.sh with libFuzzer, and by the suite as fuzz_workload_json_replay over
 * fuzz/corpus/fuzz_workload_json (CMakeLists.txt reads the same line).
 * fuzz-link: tsl_io
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tensile/sched_json.h"

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "fuzz_workload_json: check failed at line %d: %s\n", __LINE__, \
                    #cond);                                                            \
            abort();                                                                   \
        }                                                                              \
    } while (0)

static int is_data(tsl_tensor_kind k) { return k == TSL_KIND_INPUT || k == TSL_KIND_LABEL; }

/* Everything an accepted workload guarantees. */
static void check_valid(const tsl_workload *w) {
    CHECK(w->job[0] != '\0' && strlen(w->job) < sizeof w->job);
    CHECK(w->n_tensors >= 0 && w->n_ops >= 0);
    CHECK(w->optimizer_begin >= 0 && w->optimizer_begin <= w->n_ops);
    int quadratic = w->n_tensors <= 2000 && w->n_ops <= 2000;
    for (int32_t t = 0; t < w->n_tensors; t++) {
        const tsl_wl_tensor *x = &w->tensors[t];
        CHECK(x->name[0] != '\0' && strlen(x->name) < TSL_NAME_MAX);
        CHECK((unsigned)x->kind < TSL_KIND_COUNT);
        CHECK(x->producer >= -1 && x->producer < w->n_ops);
        if (is_data(x->kind) || tsl_kind_is_persistent(x->kind)) CHECK(x->producer == -1);
        for (int32_t u = 0; quadratic && u < t; u++) CHECK(strcmp(w->tensors[u].name, x->name) != 0);
    }
    double end = 0.0;
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_wl_op *op = &w->ops[i];
        CHECK(op->name[0] != '\0' && strcmp(op->name, "start") != 0);
        for (int32_t k = 0; quadratic && k < i; k++) CHECK(strcmp(w->ops[k].name, op->name) != 0);
        CHECK(op->start_us == end);
        CHECK(op->end_us >= op->start_us);
        end = op->end_us;
        CHECK(op->n_out >= 1);
        for (int j = 0; j < op->n_in; j++) {
            CHECK(op->in[j] >= 0 && op->in[j] < w->n_tensors);
            const tsl_wl_tensor *x = &w->tensors[op->in[j]];
            if (!is_data(x->kind) && !tsl_kind_is_persistent(x->kind))
                CHECK(x->producer >= 0 && x->producer < i);
        }
        for (int j = 0; j < op->n_out; j++) {
            CHECK(op->out[j] >= 0 && op->out[j] < w->n_tensors);
            const tsl_wl_tensor *x = &w->tensors[op->out[j]];
            CHECK(!is_data(x->kind));
            if (!tsl_kind_is_persistent(x->kind)) CHECK(x->producer == i);
            for (int k = 0; k < j; k++) CHECK(op->out[k] != op->out[j]);
        }
    }
    CHECK(w->period_us == end);
    for (int32_t i = 0; i < w->n_ops; i++) { /* other algorithms: named, unique, timed */
        const tsl_wl_op *op = &w->ops[i];
        CHECK(op->n_alts >= 0 && op->n_alts < TSL_ALGO_MAX && (op->n_alts == 0) == !op->alts);
        for (int32_t k = 0; k < op->n_alts; k++) {
            size_t len = strnlen(op->alts[k].name, TSL_ALGO_NAME_MAX);
            CHECK(len > 0 && len < TSL_ALGO_NAME_MAX && strcmp(op->alts[k].name, "default"));
            CHECK(isfinite(op->alts[k].us) && op->alts[k].us >= 0);
            for (int32_t q = 0; q < k; q++) CHECK(strcmp(op->alts[q].name, op->alts[k].name));
        }
    }
}

static void check_same(const tsl_workload *a, const tsl_workload *b) {
    CHECK(strcmp(a->job, b->job) == 0);
    CHECK(a->n_tensors == b->n_tensors && a->n_ops == b->n_ops);
    CHECK(a->optimizer_begin == b->optimizer_begin);
    CHECK(memcmp(&a->period_us, &b->period_us, sizeof(double)) == 0);
    for (int32_t t = 0; t < a->n_tensors; t++) {
        CHECK(strcmp(a->tensors[t].name, b->tensors[t].name) == 0);
        CHECK(a->tensors[t].bytes == b->tensors[t].bytes);
        CHECK(a->tensors[t].kind == b->tensors[t].kind);
        CHECK(a->tensors[t].producer == b->tensors[t].producer);
    }
    for (int32_t i = 0; i < a->n_ops; i++) {
        const tsl_wl_op *x = &a->ops[i], *y = &b->ops[i];
        CHECK(strcmp(x->name, y->name) == 0);
        CHECK(memcmp(&x->start_us, &y->start_us, sizeof(double)) == 0);
        CHECK(memcmp(&x->end_us, &y->end_us, sizeof(double)) == 0);
        CHECK(x->workspace == y->workspace);
        CHECK(x->n_in == y->n_in && x->n_out == y->n_out);
        CHECK(x->n_in == 0 || memcmp(x->in, y->in, sizeof(int32_t) * (size_t)x->n_in) == 0);
        CHECK(memcmp(x->out, y->out, sizeof(int32_t) * (size_t)x->n_out) == 0);
        CHECK(x->n_alts == y->n_alts);
        for (int32_t k = 0; k < x->n_alts; k++) {
            CHECK(strcmp(x->alts[k].name, y->alts[k].name) == 0);
            CHECK(memcmp(&x->alts[k].us, &y->alts[k].us, sizeof(double)) == 0);
            CHECK(x->alts[k].workspace == y->alts[k].workspace);
        }
    }
}

/* The whole content of a file (malloc'd), its length in *n. */
static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    CHECK(f);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long len = ftell(f);
    CHECK(len >= 0 && fseek(f, 0, SEEK_SET) == 0);
    char *b = malloc((size_t)len + 1);
    CHECK(b);
    CHECK(fread(b, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* Two scratch files of this process, created once. */
static const char *scratch(int k) {
    static char path[2][64];
    if (!path[k][0]) {
        snprintf(path[k], sizeof path[k], "/tmp/fuzz_workload_json_%d_%d.json", (int)getpid(), k);
    }
    return path[k];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tsl_workload *w = (tsl_workload *)&w; /* must stay untouched on failure */
    tsl_workload *const sentinel = w;
    tsl_status st = tsl_workload_parse_json((const char *)data, size, "fuzz.json", &w);
    if (st != TSL_OK) {
        CHECK(st == TSL_ERR_FORMAT || st == TSL_ERR_OOM);
        CHECK(w == sentinel);
        CHECK(strncmp(tsl_last_error(), "fuzz.json", 9) == 0);
        return 0;
    }
    check_valid(w);
    /* write -> read is exact, and a second write gives the same bytes */
    CHECK(tsl_workload_write_json(w, scratch(0)) == TSL_OK);
    tsl_workload *r = NULL;
    st = tsl_workload_read_json(scratch(0), &r);
    if (st != TSL_OK) fprintf(stderr, "re-read failed: %s\n", tsl_last_error());
    CHECK(st == TSL_OK);
    check_same(w, r);
    CHECK(tsl_workload_write_json(r, scratch(1)) == TSL_OK);
    size_t n0, n1;
    char *b0 = slurp(scratch(0), &n0), *b1 = slurp(scratch(1), &n1);
    CHECK(n0 == n1 && memcmp(b0, b1, n0) == 0);
    free(b0);
    free(b1);
    unlink(scratch(0));
    unlink(scratch(1));
    tsl_workload_free(w);
    tsl_workload_free(r);
    return 0;
}
