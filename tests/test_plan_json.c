/*
 * test_plan_json.c - the plan JSON form (src/io/plan_json.c): the round trip
 * write -> read is exact (events in order, doubles to the bit) and stable
 * (read -> write gives the same bytes); every malformed input is
 * TSL_ERR_FORMAT with a message naming the file, the field path and the
 * value; the writer refuses plans the reader would reject.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "tensile/sched_json.h"

#define CAP 32

/* Workload "job": in (input), w (parameter), x (activation); f1 [in] -> x,
 * f2 [x, w] -> y, upd [w, y] -> w. */
static tsl_workload *small(const char *job) {
    tsl_workload *w = calloc(1, sizeof *w);
    cr_assert(w);
    snprintf(w->job, sizeof w->job, "%s", job);
    w->tensors = calloc(CAP, sizeof *w->tensors);
    w->ops = calloc(CAP, sizeof *w->ops);
    const char *tn[] = {"in", "w", "x", "y"};
    tsl_tensor_kind tk[] = {TSL_KIND_INPUT, TSL_KIND_PARAM, TSL_KIND_ACTIVATION,
                            TSL_KIND_ACTIVATION};
    for (int i = 0; i < 4; i++) {
        snprintf(w->tensors[i].name, TSL_NAME_MAX, "%s", tn[i]);
        w->tensors[i].bytes = 1000 * (size_t)(i + 1);
        w->tensors[i].kind = tk[i];
        w->tensors[i].producer = -1;
    }
    w->n_tensors = 4;
    const char *on[] = {"f1", "f2", "upd"};
    int32_t ins[3][2] = {{0, -1}, {2, 1}, {1, 3}}, outs[3] = {2, 3, 1};
    for (int i = 0; i < 3; i++) {
        tsl_wl_op *op = &w->ops[i];
        snprintf(op->name, TSL_NAME_MAX, "%s", on[i]);
        op->start_us = 10.0 * i;
        op->end_us = 10.0 * (i + 1);
        op->n_in = ins[i][1] < 0 ? 1 : 2;
        op->in = malloc(sizeof(int32_t) * 2);
        memcpy(op->in, ins[i], sizeof(int32_t) * 2);
        op->n_out = 1;
        op->out = malloc(sizeof(int32_t));
        op->out[0] = outs[i];
    }
    w->tensors[2].producer = 0;
    w->tensors[3].producer = 1;
    w->ops[1].workspace = 512;
    w->n_ops = 3;
    w->optimizer_begin = 2;
    w->period_us = 30;
    return w;
}

static tsl_plan *plan_a(void) {
    tsl_plan *p = tsl_plan_new("A");
    tsl_event ev[] = {
        {TSL_EV_SWAP_OUT, 2, 0, 0.1, -1},      {TSL_EV_RELEASE, 2, 0, 0.0, -1},
        {TSL_EV_SWAP_IN, 2, -1, 1.0 / 3.0, 1}, {TSL_EV_RECOMPUTE, 3, -1, 0.0, 2},
        {TSL_EV_SWAP_OUT, 1, -1, 5e-324, -1},  {TSL_EV_SWAP_IN, 1, 1, 1e11 + 0.5, 2},
        {TSL_EV_RELEASE, 1, -1, 0.0, -1},      {TSL_EV_SWAP_OUT, 0, -1, 123456.78901234567, -1},
        {TSL_EV_RELEASE, 3, 1, 2.5, 2}, /* preceding upd: a planned wait for a swap-out */
    };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
        cr_assert_eq(tsl_plan_add(p, ev[i]), TSL_OK);
    p->predicted_peak = ((size_t)1 << 56) - 3;
    p->predicted_period_us = 29.999999999999996;
    /* a layout (not a valid one: the reader takes it as written, the
     * verifier judges it); f2 gets a workspace in small() */
    static const tsl_plan_block lay[] = {
        {-1, 1, 0, 512, 4096}, {-1, 1, 1, 512, 1u << 20}, {0, -1, 0, 1000, 0},
        {2, -1, 0, 3000, 1024}, {2, -1, 1, 3000, 8192},
    };
    p->blocks = malloc(sizeof lay);
    memcpy(p->blocks, lay, sizeof lay);
    p->n_blocks = 5;
    p->layout_align = 256;
    p->predicted_footprint = (1u << 20) + 512;
    return p;
}

static char tmpdir[64];

static void make_tmpdir(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tsl_plan_json_XXXXXX");
    cr_assert(mkdtemp(tmpdir));
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void expect_same_plan(const tsl_plan *a, const tsl_plan *b) {
    cr_assert_str_eq(a->job, b->job);
    cr_assert_eq(a->n_events, b->n_events);
    cr_assert_eq(a->predicted_peak, b->predicted_peak);
    cr_assert(memcmp(&a->predicted_period_us, &b->predicted_period_us, sizeof(double)) == 0,
              "period %.17g != %.17g", a->predicted_period_us, b->predicted_period_us);
    cr_assert_eq(a->n_blocks, b->n_blocks);
    cr_assert_eq(a->layout_align, b->layout_align);
    cr_assert_eq(a->predicted_footprint, b->predicted_footprint);
    for (int32_t k = 0; k < a->n_blocks; k++)
        cr_assert(a->blocks[k].tensor == b->blocks[k].tensor &&
                      a->blocks[k].op == b->blocks[k].op && a->blocks[k].seq == b->blocks[k].seq &&
                      a->blocks[k].bytes == b->blocks[k].bytes &&
                      a->blocks[k].offset == b->blocks[k].offset,
                  "block %d differs", k); /* field by field: the padding is not data */
    for (int32_t k = 0; k < a->n_events; k++) {
        const tsl_event *x = &a->events[k], *y = &b->events[k];
        cr_assert(x->type == y->type && x->tensor == y->tensor && x->trigger == y->trigger &&
                      x->precede == y->precede &&
                      memcmp(&x->delay_us, &y->delay_us, sizeof(double)) == 0,
                  "event %d differs: (%d %d %d %.17g %d) vs (%d %d %d %.17g %d)", k, x->type,
                  x->tensor, x->trigger, x->delay_us, x->precede, y->type, y->tensor, y->trigger,
                  y->delay_us, y->precede);
    }
}

Test(plan_json, round_trip_is_exact_and_stable) {
    make_tmpdir();
    tsl_workload *wa = small("A"), *wb = small("B");
    tsl_plan *pa = plan_a(), *pb = tsl_plan_new("B");
    pb->predicted_peak = 0;
    pb->predicted_period_us = 0;
    const tsl_plan *ps[2] = {pa, pb};
    const tsl_workload *ws[2] = {wa, wb};
    char p1[128], p2[128];
    snprintf(p1, sizeof p1, "%s/a.json", tmpdir);
    snprintf(p2, sizeof p2, "%s/b.json", tmpdir);
    cr_assert_eq(tsl_plan_write_json(ps, 2, ws, p1), TSL_OK, "%s", tsl_last_error());
    /* read back with the workloads in the other order: jobs match by name */
    const tsl_workload *rev[2] = {wb, wa};
    tsl_plan *back[2] = {NULL, NULL};
    cr_assert_eq(tsl_plan_read_json(p1, rev, 2, back), TSL_OK, "%s", tsl_last_error());
    expect_same_plan(pa, back[1]);
    expect_same_plan(pb, back[0]);
    /* written again (from what was read), the bytes are the same */
    const tsl_plan *ps2[2] = {back[1], back[0]};
    cr_assert_eq(tsl_plan_write_json(ps2, 2, ws, p2), TSL_OK, "%s", tsl_last_error());
    size_t n1, n2;
    char *t1 = slurp(p1, &n1), *t2 = slurp(p2, &n2);
    cr_assert(n1 == n2 && memcmp(t1, t2, n1) == 0, "second write differs:\n%s\n---\n%s", t1, t2);
    /* the text is the documented form */
    cr_assert(strstr(t1, "{\"type\": \"recompute\", \"tensor\": \"y\", \"precede\": \"upd\"}"),
              "%s", t1);
    cr_assert(strstr(t1, "{\"type\": \"release\", \"tensor\": \"x\", \"trigger\": \"f1\"}"), "%s",
              t1);
    cr_assert(strstr(t1, "{\"type\": \"swap_in\", \"tensor\": \"x\", \"trigger\": \"start\", "
                         "\"delay_us\": 0.3333333333333333, \"precede\": \"f2\"}"),
              "%s", t1);
    cr_assert(strstr(t1, "\"predicted_peak_bytes\": 72057594037927933"), "%s", t1);
    cr_assert(strstr(t1, "\"predicted_footprint_bytes\": 1049088, \"layout_alignment\": 256"),
              "%s", t1);
    cr_assert(strstr(t1, "{\"workspace\": \"f2\", \"run\": 1, \"offset\": 1048576}"), "%s", t1);
    cr_assert(strstr(t1, "{\"tensor\": \"x\", \"residency\": 1, \"offset\": 8192}"), "%s", t1);
    /* parsing the text directly gives the same */
    tsl_plan *again[2];
    cr_assert_eq(tsl_plan_parse_json(t1, n1, "mem", ws, 2, again), TSL_OK, "%s", tsl_last_error());
    expect_same_plan(pa, again[0]);
    /* the text for a message is the file's, byte for byte */
    char *t3;
    size_t n3;
    cr_assert_eq(tsl_plan_to_text(ps, 2, ws, &t3, &n3), TSL_OK, "%s", tsl_last_error());
    cr_assert(n3 == n1 && memcmp(t3, t1, n1) == 0 && t3[n3] == '\0', "to_text differs");
    free(t3);
    /* and likewise the workload's */
    cr_assert_eq(tsl_workload_write_json(wa, p2), TSL_OK, "%s", tsl_last_error());
    free(t2);
    t2 = slurp(p2, &n2);
    cr_assert_eq(tsl_workload_to_text(wa, &t3, &n3), TSL_OK, "%s", tsl_last_error());
    cr_assert(n3 == n2 && memcmp(t3, t2, n2) == 0, "workload to_text differs");
    tsl_workload *wr = NULL;
    cr_assert_eq(tsl_workload_parse_json(t3, n3, "mem", &wr), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(wr->n_ops, wa->n_ops);
    cr_assert_eq(wr->ops[1].workspace, wa->ops[1].workspace);
    tsl_workload_free(wr);
    free(t3);
    /* a profile's text parses back to the same values, bit for bit */
    tsl_device_profile d;
    cr_assert_eq(tsl_profile_load("a6000", &d), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_profile_to_text(&d, "sent by a daemon", &t3, &n3), TSL_OK, "%s",
                 tsl_last_error());
    tsl_device_profile e;
    cr_assert_eq(tsl_profile_parse_json(t3, n3, "WELCOME", &e), TSL_OK, "%s", tsl_last_error());
    cr_assert(memcmp(&d, &e, sizeof d) == 0 || (strcmp(d.name, e.name) == 0 &&
              d.flops == e.flops && d.h2d_bw == e.h2d_bw && d.mem_bytes == e.mem_bytes &&
              d.copy_latency_us == e.copy_latency_us && d.duplex == e.duplex));
    cr_assert_eq(tsl_profile_parse_json("{}", 2, "WELCOME", &e), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "WELCOME"), "%s", tsl_last_error());
    free(t3);
    free(t1);
    free(t2);
    for (int i = 0; i < 2; i++) {
        tsl_plan_free(back[i]);
        tsl_plan_free(again[i]);
    }
    tsl_plan_free(pa);
    tsl_plan_free(pb);
    tsl_workload_free(wa);
    tsl_workload_free(wb);
    unlink(p1);
    unlink(p2);
    rmdir(tmpdir);
}

Test(plan_json, minus_zero_and_integers_read_as_zero_and_reals) {
    tsl_workload *w = small("A");
    const tsl_workload *ws[1] = {w};
    const char *txt =
        "{\"jobs\": [{\"job\": \"A\", \"predicted_peak_bytes\": 5, \"predicted_period_us\": 30,"
        " \"events\": [{\"type\": \"swap_out\", \"tensor\": \"x\", \"trigger\": \"f1\","
        " \"delay_us\": -0.0}]}]}";
    tsl_plan *p[1];
    cr_assert_eq(tsl_plan_parse_json(txt, strlen(txt), "t.json", ws, 1, p), TSL_OK, "%s",
                 tsl_last_error());
    cr_assert(p[0]->events[0].delay_us == 0.0 && !signbit(p[0]->events[0].delay_us));
    cr_assert(p[0]->predicted_period_us == 30.0);
    cr_assert_eq(p[0]->events[0].precede, -1);
    tsl_plan_free(p[0]);
    tsl_workload_free(w);
}

/* ---- malformed inputs --------------------------------------------------------------- */

typedef struct bad_case {
    const char *events; /* the events array of job A, or NULL to use `whole` */
    const char *whole; /* the whole text */
    const char *expect; /* substring of the message */
} bad_case;

#define HEAD                                                                                       \
    "{\"jobs\": [{\"job\": \"A\", \"predicted_peak_bytes\": 5, \"predicted_period_us\": 30, "      \
    "\"events\": "
#define TAIL                                                                                       \
    "}, {\"job\": \"B\", \"predicted_peak_bytes\": 5, \"predicted_period_us\": 30, \"events\": "   \
    "[]}]}"

Test(plan_json, every_malformed_case_names_file_field_and_value) {
    static const bad_case cases[] = {
        {NULL, "{\"jobs\": [", "p.json:1:10: not valid JSON"},
        {NULL, "[]", "p.json: root: expected an object, got an array []"},
        {NULL, "{}", "p.json: root: missing field 'jobs'"},
        {NULL, "{\"jobs\": [], \"x\": 1}", "p.json: root: unknown field 'x'"},
        {NULL, "{\"jobs\": {}}", "p.json: jobs: expected an array, got an object {}"},
        {NULL, "{\"jobs\": [{\"job\": \"A\"}]}", "p.json: jobs: 1 jobs, but 2 workloads are given"},
        {NULL, "{\"jobs\": [{\"job\": \"A\", \"a\": 1}, {\"job\": \"A\"}]}",
         "p.json: jobs[0]: missing field 'predicted_peak_bytes'"},
        {NULL, "{\"jobs\": [3, {}]}", "p.json: jobs[0]: expected an object, got an integer 3"},
        {NULL, "{\"jobs\": [{}, {}]}", "p.json: jobs[0].job: missing"},
        {NULL, "{\"jobs\": [{\"job\": 7}, {}]}",
         "p.json: jobs[0].job: expected a string, got an integer 7"},
        {NULL, "{\"jobs\": [{\"job\": \"Q\"}, {}]}", "p.json: jobs[0].job: unknown job 'Q'"},
        {NULL,
         HEAD "[]}, {\"job\": \"A\", \"predicted_peak_bytes\": 5, \"predicted_period_us\": 30, "
              "\"events\": []}]}",
         "p.json: jobs[1].job: duplicate job 'A' (also jobs[0])"},
        {NULL,
         "{\"jobs\": [{\"job\": \"A\", \"predicted_peak_bytes\": 5, \"predicted_period_us\": 30}, "
         "{}]}",
         "p.json: jobs[0]: missing field 'events'"},
        {NULL,
         "{\"jobs\": [{\"job\": \"A\", \"predicted_peak_bytes\": -5, \"predicted_period_us\": 30, "
         "\"events\": []}, {}]}",
         "p.json: jobs[0].predicted_peak_bytes: -5 is negative"},
        {NULL,
         "{\"jobs\": [{\"job\": \"A\", \"predicted_peak_bytes\": 72057594037927937, "
         "\"predicted_period_us\": 30, \"events\": []}, {}]}",
         "p.json: jobs[0].predicted_peak_bytes: 72057594037927937 is absurd"},
        {NULL,
         "{\"jobs\": [{\"job\": \"A\", \"predicted_peak_bytes\": \"12\", \"predicted_period_us\": "
         "30, \"events\": []}, {}]}",
         "p.json: jobs[0].predicted_peak_bytes: expected an integer, got a string \"12\""},
        {NULL,
         "{\"jobs\": [{\"job\": \"A\", \"predicted_peak_bytes\": 1.5, \"predicted_period_us\": 30, "
         "\"events\": []}, {}]}",
         "p.json: jobs[0].predicted_peak_bytes: expected an integer, got a number 1.5"},
        {NULL,
         "{\"jobs\": [{\"job\": \"A\", \"predicted_peak_bytes\": 5, \"predicted_period_us\": -1, "
         "\"events\": []}, {}]}",
         "p.json: jobs[0].predicted_period_us: -1 is negative"},
        {NULL,
         "{\"jobs\": [{\"job\": \"A\", \"predicted_peak_bytes\": 5, \"predicted_period_us\": "
         "1e300, \"events\": []}, {}]}",
         "p.json: jobs[0].predicted_period_us: 1e+300 us is absurd (limit 1e+12 us)"},
        {NULL,
         "{\"jobs\": [{\"job\": \"A\", \"predicted_peak_bytes\": 5, \"predicted_period_us\": "
         "1e999, \"events\": []}, {}]}",
         "p.json:1:"},
        {NULL,
         "{\"jobs\": [{\"job\": \"A\", \"predicted_peak_bytes\": 5, \"predicted_period_us\": 30, "
         "\"events\": 1}, {}]}",
         "p.json: jobs[0].events: expected an array, got an integer 1"},
        {NULL, "{\"jobs\": [{\"job\": \"A\", \"job\": \"B\"}]}", "duplicate object key"},
        {"[3]", NULL, "p.json: jobs[0].events[0]: expected an object, got an integer 3"},
        {"[{}]", NULL, "p.json: jobs[0].events[0].type: missing"},
        {"[{\"type\": \"swap\"}]", NULL,
         "p.json: jobs[0].events[0].type: 'swap' is not an event type (expected swap_out, swap_in, "
         "release or recompute)"},
        {"[{\"type\": 2}]", NULL,
         "p.json: jobs[0].events[0].type: expected a string, got an integer 2"},
        {"[{\"type\": \"release\", \"tensor\": \"x\"}]", NULL,
         "p.json: jobs[0].events[0]: missing field 'trigger' (for a release)"},
        {"[{\"type\": \"swap_out\", \"tensor\": \"nope\", \"trigger\": \"f1\", \"delay_us\": 0}]",
         NULL, "p.json: jobs[0].events[0].tensor: unknown tensor \"nope\" in job 'A'"},
        {"[{\"type\": \"swap_out\", \"tensor\": \"\", \"trigger\": \"f1\", \"delay_us\": 0}]", NULL,
         "p.json: jobs[0].events[0].tensor: \"\" has 0 characters (expected 1 to 95)"},
        {"[{\"type\": \"swap_out\", \"tensor\": \"x\", \"trigger\": \"nope\", \"delay_us\": 0}]",
         NULL, "p.json: jobs[0].events[0].trigger: unknown op \"nope\" in job 'A'"},
        {"[{\"type\": \"swap_out\", \"tensor\": \"x\", \"trigger\": 0, \"delay_us\": 0}]", NULL,
         "p.json: jobs[0].events[0].trigger: expected a string, got an integer 0"},
        {"[{\"type\": \"swap_out\", \"tensor\": \"x\", \"trigger\": \"start\", \"delay_us\": 0}]",
         NULL,
         "p.json: jobs[0].events[0].trigger: 'start' is not allowed for a swap_out of 'x' "
         "(activation)"},
        {"[{\"type\": \"release\", \"tensor\": \"y\", \"trigger\": \"start\"}]", NULL,
         "p.json: jobs[0].events[0].trigger: 'start' is not allowed for a release of 'y' "
         "(activation)"},
        {"[{\"type\": \"swap_out\", \"tensor\": \"x\", \"trigger\": \"f1\", \"delay_us\": -1}]",
         NULL, "p.json: jobs[0].events[0].delay_us: -1 is negative"},
        {"[{\"type\": \"swap_out\", \"tensor\": \"x\", \"trigger\": \"f1\", \"delay_us\": 2e12}]",
         NULL, "p.json: jobs[0].events[0].delay_us: 2000000000000 us is absurd (limit 1e+12 us)"},
        {"[{\"type\": \"swap_out\", \"tensor\": \"x\", \"trigger\": \"f1\", \"delay_us\": \"0\"}]",
         NULL, "p.json: jobs[0].events[0].delay_us: expected a number, got a string \"0\""},
        {"[{\"type\": \"swap_out\", \"tensor\": \"x\", \"trigger\": \"f1\", \"delay_us\": null}]",
         NULL, "p.json: jobs[0].events[0].delay_us: expected a number, got null null"},
        {"[{\"type\": \"swap_out\", \"tensor\": \"x\", \"trigger\": \"f1\"}]", NULL,
         "p.json: jobs[0].events[0]: missing field 'delay_us' (for a swap_out)"},
        {"[{\"type\": \"swap_in\", \"tensor\": \"x\", \"trigger\": \"f1\", \"delay_us\": 0}]", NULL,
         "p.json: jobs[0].events[0]: missing field 'precede' (for a swap_in)"},
        {"[{\"type\": \"recompute\", \"tensor\": \"x\"}]", NULL,
         "p.json: jobs[0].events[0]: missing field 'precede' (for a recompute)"},
        {"[{\"type\": \"swap_out\", \"tensor\": \"x\", \"trigger\": \"f1\", \"delay_us\": 0, "
         "\"precede\": \"f2\"}]",
         NULL, "p.json: jobs[0].events[0]: field 'precede' is not allowed (for a swap_out)"},
        {"[{\"type\": \"release\", \"tensor\": \"x\", \"trigger\": \"f1\", \"precede\": \"f2\"}]",
         NULL,
         "p.json: jobs[0].events[0]: missing field 'delay_us' (for a release that precedes an op)"},
        {"[{\"type\": \"release\", \"tensor\": \"x\", \"trigger\": \"f1\", \"delay_us\": 0}]", NULL,
         "p.json: jobs[0].events[0]: missing field 'precede' (for a release that precedes an op)"},
        {"[{\"type\": \"release\", \"tensor\": \"x\", \"trigger\": \"f1\", \"delay_us\": 0, "
         "\"precede\": \"f2\", \"color\": 1}]",
         NULL, "p.json: jobs[0].events[0]: unknown field 'color' (for a release that precedes an op)"},
        {"[{\"type\": \"recompute\", \"tensor\": \"x\", \"trigger\": \"f1\", \"precede\": \"f2\"}]",
         NULL, "p.json: jobs[0].events[0]: field 'trigger' is not allowed (for a recompute)"},
        {"[{\"type\": \"recompute\", \"tensor\": \"x\", \"precede\": \"f2\", \"color\": 1}]", NULL,
         "p.json: jobs[0].events[0]: unknown field 'color' (for a recompute)"},
        /* the layout: all three fields or none, each block named and placed */
        {"[], \"layout\": []", NULL, "p.json: jobs[0]: missing field 'predicted_footprint_bytes'"},
        {"[], \"predicted_footprint_bytes\": 5, \"layout_alignment\": 100, \"layout\": []", NULL,
         "p.json: jobs[0].layout_alignment: 100 is not a power of two"},
        {"[], \"predicted_footprint_bytes\": 5, \"layout_alignment\": 256, \"layout\": [{\"tensor\": \"zz\", \"residency\": 0, \"offset\": 0}]", NULL,
         "p.json: jobs[0].layout[0].tensor: 'zz' is no tensor of job 'A'"},
        {"[], \"predicted_footprint_bytes\": 5, \"layout_alignment\": 256, \"layout\": [{\"workspace\": \"f1\", \"run\": 0, \"offset\": 0}]", NULL,
         "p.json: jobs[0].layout[0].workspace: op 'f1' has no workspace"},
        {"[], \"predicted_footprint_bytes\": 5, \"layout_alignment\": 256, \"layout\": [{\"tensor\": \"x\", \"residency\": -1, \"offset\": 0}]", NULL,
         "p.json: jobs[0].layout[0].residency: -1 is negative"},
        {"[], \"predicted_footprint_bytes\": 5, \"layout_alignment\": 256, \"layout\": [{\"tensor\": \"x\", \"residency\": 0, \"offset\": 0, \"size\": 3}]", NULL,
         "p.json: jobs[0].layout[0]: unknown field 'size'"},
        {"[], \"predicted_footprint_bytes\": 5, \"layout_alignment\": 256, \"layout\": [{\"tensor\": \"x\", \"residency\": 0, \"offset\": 0}, "
         "{\"tensor\": \"x\", \"residency\": 0, \"offset\": 512}]",
         NULL, "p.json: jobs[0].layout: two blocks for tensor 'x' residency 0"},
        {"[{\"type\": \"swap_in\", \"tensor\": \"x\", \"trigger\": \"f1\", \"delay_us\": 0, "
         "\"precede\": \"start\"}]",
         NULL,
         "p.json: jobs[0].events[0].precede: 'start' is not an op (only a trigger may be 'start')"},
        {"[{\"type\": \"recompute\", \"tensor\": \"y\", \"precede\": \"zz\"}]", NULL,
         "p.json: jobs[0].events[0].precede: unknown op \"zz\" in job 'A'"},
        {"[{\"type\": \"swap_out\", \"tensor\": \"x\", \"trigger\": \"f1\", \"delay_us\": 0}, "
         "{\"type\": \"swap_in\", \"tensor\": \"x\", \"trigger\": \"f1\", \"delay_us\": 0, "
         "\"precede\": 5}]",
         NULL, "p.json: jobs[0].events[1].precede: expected a string, got an integer 5"},
    };
    tsl_workload *wa = small("A"), *wb = small("B");
    const tsl_workload *ws[2] = {wa, wb};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[2048];
        if (cases[i].events)
            snprintf(text, sizeof text, HEAD "%s" TAIL, cases[i].events);
        else
            snprintf(text, sizeof text, "%s", cases[i].whole);
        tsl_plan *out[2] = {(tsl_plan *)&out, (tsl_plan *)&out};
        tsl_clear_error();
        tsl_status st = tsl_plan_parse_json(text, strlen(text), "p.json", ws, 2, out);
        cr_assert_eq(st, TSL_ERR_FORMAT, "case %zu (%s): status %d, message '%s'", i, text, (int)st,
                     tsl_last_error());
        cr_assert(strstr(tsl_last_error(), cases[i].expect),
                  "case %zu: message\n  '%s'\nlacks\n  '%s'", i, tsl_last_error(), cases[i].expect);
        cr_assert(out[0] == (tsl_plan *)&out && out[1] == (tsl_plan *)&out,
                  "case %zu: output written", i);
    }
    /* the valid text the cases are made from parses */
    char ok[512];
    snprintf(ok, sizeof ok, HEAD "[]" TAIL);
    tsl_plan *out[2];
    cr_assert_eq(tsl_plan_parse_json(ok, strlen(ok), "p.json", ws, 2, out), TSL_OK, "%s",
                 tsl_last_error());
    tsl_plan_free(out[0]);
    tsl_plan_free(out[1]);
    tsl_workload_free(wa);
    tsl_workload_free(wb);
}

Test(plan_json, read_errors_name_the_path) {
    tsl_workload *w = small("A");
    const tsl_workload *ws[1] = {w};
    tsl_plan *p[1];
    cr_assert_eq(tsl_plan_read_json("/nonexistent/plan.json", ws, 1, p), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "/nonexistent/plan.json: cannot open plan"), "%s",
              tsl_last_error());
    tsl_workload_free(w);
}

Test(plan_json, writer_refuses_what_the_reader_would_reject) {
    tsl_workload *w = small("A");
    const tsl_workload *ws[1] = {w};
    struct {
        tsl_event e;
        const char *expect;
    } cases[] = {
        {{TSL_EV_SWAP_OUT, 9, 0, 0.0, -1}, "events[0].tensor: index 9 out of range [0, 4)"},
        {{TSL_EV_SWAP_OUT, 2, 3, 0.0, -1}, "events[0].trigger: op index 3 out of range [-1, 3)"},
        {{TSL_EV_SWAP_OUT, 2, 0, -1.0, -1},
         "events[0].delay_us: -1 is negative, not finite or absurd"},
        {{TSL_EV_SWAP_OUT, 2, 0, NAN, -1}, "events[0].delay_us: nan is negative"},
        {{TSL_EV_SWAP_OUT, 2, 0, 0.0, 1}, "events[0].precede: 1: a swap_out has no precede (-1)"},
        {{TSL_EV_SWAP_IN, 2, 0, 0.0, -1},
         "events[0].precede: op index -1 out of range [0, 3) for a swap_in"},
        {{TSL_EV_RELEASE, 2, 0, 1.0, -1},
         "events[0].delay_us: 1: a release acts at its trigger's end (delay 0) unless it "
         "precedes an op"},
        {{TSL_EV_RELEASE, 2, 0, 0.0, 3},
         "events[0].precede: op index 3 out of range [0, 3) for a release"},
        {{TSL_EV_RECOMPUTE, 3, 1, 0.0, 2},
         "events[0].trigger: a recompute runs right before its precede op"},
        {{TSL_EV_SWAP_OUT, 2, -1, 0.0, -1},
         "events[0].trigger: 'start' is not allowed for a swap_out of 'x'"},
        {{(tsl_event_type)7, 2, 0, 0.0, -1}, "events[0].type: 7 is not an event type"},
    };
    char path[] = "/tmp/tsl_plan_json_w_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tsl_plan *p = tsl_plan_new("A");
        cr_assert_eq(tsl_plan_add(p, cases[i].e), TSL_OK);
        const tsl_plan *ps[1] = {p};
        tsl_status st = tsl_plan_write_json(ps, 1, ws, path);
        cr_assert_eq(st, TSL_ERR_INVALID, "case %zu: status %d", i, (int)st);
        cr_assert(strstr(tsl_last_error(), cases[i].expect), "case %zu: '%s' lacks '%s'", i,
                  tsl_last_error(), cases[i].expect);
        tsl_plan_free(p);
    }
    /* a plan for another job, an unwritable path */
    tsl_plan *p = tsl_plan_new("B");
    const tsl_plan *ps[1] = {p};
    cr_assert_eq(tsl_plan_write_json(ps, 1, ws, path), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "plans[0] is for job 'B' but its workload is job 'A'"), "%s",
              tsl_last_error());
    snprintf(p->job, sizeof p->job, "A");
    cr_assert_eq(tsl_plan_write_json(ps, 1, ws, "/nonexistent/dir/p.json"), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "/nonexistent/dir/p.json: cannot write plan"), "%s",
              tsl_last_error());
    /* two workloads of one job name cannot be told apart */
    tsl_workload *w2 = small("A");
    const tsl_workload *ws2[2] = {w, w2};
    const tsl_plan *ps2[2] = {p, p};
    cr_assert_eq(tsl_plan_write_json(ps2, 2, ws2, path), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "workloads 0 and 1 are both job 'A'"), "%s",
              tsl_last_error());
    tsl_plan_free(p);
    tsl_workload_free(w);
    tsl_workload_free(w2);
    unlink(path);
}
