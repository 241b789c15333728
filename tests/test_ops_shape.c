/*
 * test_ops_shape.c - the shape family: CONCAT and SLICE along axis 1,
 * RESHAPE and tsl_flatten.
 *
 * Gradients against central finite differences in double (th_gradcheck);
 * forwards against hand loops, bit-exact (they only move elements); bits
 * independent of the thread count; float against double; backward
 * structure (one SLICE per input that needs a gradient); builder errors that
 * name the op and the value.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernel.h"
#include "core/graph_internal.h"
#include "gradcheck.h"
#include "helpers.h"
#include "ops/op_def.h"

static const tsl_shape *shape_of(const tsl_graph *g, tsl_tid t) {
    return &tsl_graph_tensor(g, t)->shape;
}

static int shape_is(const tsl_graph *g, tsl_tid t, tsl_shape s) {
    return tsl_shape_eq(shape_of(g, t), &s);
}

/* ---- CONCAT -------------------------------------------------------------------- */

Test(shape, concat_gradcheck_three_inputs) {
    tsl_graph *g = tsl_graph_new("concat_gc");
    tsl_tid xs[3] = {tsl_param(g, "x0", TSL_SHAPE(2, 2, 3, 2), TSL_INIT_NONE),
                     tsl_param(g, "x1", TSL_SHAPE(2, 3, 3, 2), TSL_INIT_NONE),
                     tsl_param(g, "x2", TSL_SHAPE(2, 1, 3, 2), TSL_INIT_NONE)};
    tsl_tid y = tsl_concat(g, "cat", xs, 3);
    cr_assert_neq(y, TSL_NONE, "%s", tsl_last_error());
    cr_assert(shape_is(g, y, TSL_SHAPE(2, 6, 3, 2)));
    double e = th_gradcheck(g, 0, 0, xs, 3, 4, NULL, NULL);
    cr_assert_lt(e, 1e-6, "concat gradcheck error %g", e);
    tsl_graph_free(g);
}

Test(shape, concat_forward_matches_hand_loop) {
    for (int rank = 2; rank <= 4; rank++) {
        tsl_graph *g = tsl_graph_new("concat_fwd");
        const int64_t cs[3] = {3, 1, 4};
        tsl_tid xs[3];
        for (int i = 0; i < 3; i++) {
            int64_t d[4] = {2, cs[i], 3, 5};
            char nm[8] = {'x', (char)('0' + i), 0};
            xs[i] = tsl_input(g, nm, tsl_shape_from(d, rank));
        }
        tsl_tid y = tsl_concat(g, "cat", xs, 3);
        cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
        th_rt *r = th_rt_new(g, TSL_F64);
        for (int i = 0; i < 3; i++) th_rt_fill_tensor(r, xs[i], 10 + (uint64_t)i, -1, 1);
        th_rt_exec(r, 0, 1, 1, 1, 1);
        int64_t inner = rank == 2 ? 1 : rank == 3 ? 3 : 15;
        for (int64_t n = 0; n < 2; n++) {
            int64_t cy = 0;
            for (int i = 0; i < 3; i++)
                for (int64_t c = 0; c < cs[i]; c++, cy++)
                    for (int64_t k = 0; k < inner; k++) {
                        double want = th_rt_get(r, xs[i], (n * cs[i] + c) * inner + k);
                        double got = th_rt_get(r, y, (n * 8 + cy) * inner + k);
                        cr_assert_eq(got, want, "rank %d n %lld input %d c %lld k %lld", rank,
                                     (long long)n, i, (long long)c, (long long)k);
                    }
        }
        th_rt_free(r);
        tsl_graph_free(g);
    }
}

Test(shape, concat_backward_slices_only_inputs_needing_gradient) {
    tsl_graph *g = tsl_graph_new("concat_bwd");
    tsl_tid xs[3] = {tsl_param(g, "x0", TSL_SHAPE(2, 2, 3), TSL_INIT_NONE),
                     tsl_input(g, "data", TSL_SHAPE(2, 5, 3)),
                     tsl_param(g, "x2", TSL_SHAPE(2, 4, 3), TSL_INIT_NONE)};
    tsl_concat(g, "cat", xs, 3);
    tsl_tid dy = tsl_input(g, "dy", TSL_SHAPE(2, 11, 3));
    tsl_op op = *tsl_graph_op(g, 0);
    tsl_tid og[1] = {dy}, ig[3] = {TSL_NONE, TSL_NONE, TSL_NONE};
    tsl__graph_set_backward(g, 1, NULL, 0); /* wanted = requires_grad */
    tsl__op_def(TSL_OP_CONCAT)->backward(g, &op, og, ig);
    tsl__graph_set_backward(g, 0, NULL, 0);
    cr_assert_eq(tsl_graph_status(g), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_n_ops(g), 3, "one SLICE per param input, none for the data");
    cr_assert_eq(ig[1], TSL_NONE);
    const int64_t want_off[2] = {0, 7}, want_cnt[2] = {2, 4};
    const tsl_tid want_x[2] = {xs[0], xs[2]};
    const tsl_tid got_g[2] = {ig[0], ig[2]};
    for (int k = 0; k < 2; k++) {
        const tsl_op *s = tsl_graph_op(g, 1 + k);
        cr_assert_eq(s->type, TSL_OP_SLICE);
        cr_assert_eq(s->in[0], dy);
        cr_assert_eq(s->out[0], got_g[k]);
        cr_assert_eq(s->attr.slice.offset, want_off[k]);
        cr_assert_eq(s->attr.slice.count, want_cnt[k]);
        cr_assert(tsl_shape_eq(shape_of(g, got_g[k]), shape_of(g, want_x[k])));
    }
    cr_assert_str_eq(tsl_graph_tensor(g, ig[2])->name, "cat.dx2");
    tsl_graph_free(g);
}

Test(shape, concat_of_256_inputs_and_of_one) {
    tsl_graph *g = tsl_graph_new("concat256");
    tsl_tid xs[256];
    for (int i = 0; i < 256; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", i);
        xs[i] = tsl_input(g, nm, TSL_SHAPE(2, 1 + i % 3, 2));
    }
    tsl_tid y = tsl_concat(g, "cat", xs, 256);
    tsl_tid y1 = tsl_concat(g, "cat1", xs, 1);
    cr_assert_neq(y, TSL_NONE, "%s", tsl_last_error());
    cr_assert_neq(y1, TSL_NONE, "%s", tsl_last_error());
    int64_t c = 0;
    for (int i = 0; i < 256; i++) c += 1 + i % 3;
    cr_assert_eq(shape_of(g, y)->d[1], c);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK);
    th_rt *r = th_rt_new(g, TSL_F32);
    for (int i = 0; i < 256; i++) th_rt_fill_tensor(r, xs[i], (uint64_t)i, -1, 1);
    th_rt_exec(r, 0, 2, 1, 1, 1);
    /* last input's last element lands at the end of each batch row */
    int64_t cl = 1 + 255 % 3;
    cr_assert_eq(th_rt_get(r, y, 2 * c * 2 - 1), th_rt_get(r, xs[255], 2 * cl * 2 - 1));
    cr_assert_eq(memcmp(r->buf[y1], r->buf[xs[0]], tsl_graph_tensor(g, xs[0])->nbytes), 0);
    th_rt_free(r);
    tsl_graph_free(g);
}

/* ---- SLICE, RESHAPE, FLATTEN ---------------------------------------------------------- */

Test(shape, slice_forward_matches_hand_loop) {
    tsl_graph *g = tsl_graph_new("slice");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(3, 7, 2, 3));
    tsl_tid y = tsl_slice(g, "sl", x, (tsl_slice_attr){.offset = 2, .count = 4});
    cr_assert_neq(y, TSL_NONE, "%s", tsl_last_error());
    cr_assert(shape_is(g, y, TSL_SHAPE(3, 4, 2, 3)));
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK);
    th_rt *r = th_rt_new(g, TSL_F64);
    th_rt_fill_tensor(r, x, 3, -1, 1);
    th_rt_exec(r, 0, 1, 1, 1, 1);
    for (int64_t n = 0; n < 3; n++)
        for (int64_t c = 0; c < 4; c++)
            for (int64_t k = 0; k < 6; k++)
                cr_assert_eq(th_rt_get(r, y, (n * 4 + c) * 6 + k),
                             th_rt_get(r, x, (n * 7 + c + 2) * 6 + k));
    th_rt_free(r);
    tsl_graph_free(g);
}

Test(shape, reshape_gradcheck_and_backward_reshapes_back) {
    tsl_graph *g = tsl_graph_new("reshape_gc");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(2, 3, 4), TSL_INIT_NONE);
    tsl_tid y = tsl_reshape(g, "rs", x, TSL_SHAPE(6, 2, 2));
    cr_assert_neq(y, TSL_NONE, "%s", tsl_last_error());
    tsl_tid xs[1] = {x};
    double e = th_gradcheck(g, 0, 0, xs, 1, 8, NULL, NULL);
    cr_assert_lt(e, 1e-6, "reshape gradcheck error %g", e);
    const tsl_op *bw = tsl_graph_op(g, 1);
    cr_assert_eq(bw->type, TSL_OP_RESHAPE);
    cr_assert(shape_is(g, bw->out[0], TSL_SHAPE(2, 3, 4)));
    tsl_graph_free(g);
}

Test(shape, flatten_and_reshape_copy_elements) {
    tsl_graph *g = tsl_graph_new("flatten");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(4, 3, 5, 2));
    tsl_tid f = tsl_flatten(g, "flat", x);
    tsl_tid s = tsl_reshape(g, "scalar_like", tsl_input(g, "one", TSL_SHAPE(1, 1)),
                            tsl_shape_from(NULL, 0));
    tsl_tid v = tsl_flatten(g, "vec", tsl_input(g, "v", TSL_SHAPE(7)));
    cr_assert_neq(f, TSL_NONE, "%s", tsl_last_error());
    cr_assert_neq(s, TSL_NONE, "%s", tsl_last_error());
    cr_assert(shape_is(g, f, TSL_SHAPE(4, 30)));
    cr_assert(shape_is(g, v, TSL_SHAPE(7, 1)));
    cr_assert_eq(shape_of(g, s)->ndim, 0);
    cr_assert_eq(tsl_graph_op(g, 0)->type, TSL_OP_RESHAPE);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK);
    th_rt *r = th_rt_new(g, TSL_F32);
    th_rt_fill_tensor(r, x, 5, -1, 1);
    th_rt_exec(r, 0, 1, 1, 1, 1);
    cr_assert_neq(r->buf[f], r->buf[x]);
    cr_assert_eq(memcmp(r->buf[f], r->buf[x], tsl_graph_tensor(g, x)->nbytes), 0);
    th_rt_free(r);
    tsl_graph_free(g);
}

/* ---- threads, precision, registration ---------------------------------------------- */

/* concat of two large inputs, a slice of it, a reshape of that. */
static tsl_graph *family_graph(tsl_tid ins[2]) {
    tsl_graph *g = tsl_graph_new("shape_family");
    ins[0] = tsl_input(g, "a", TSL_SHAPE(8, 48, 32, 32));
    ins[1] = tsl_input(g, "b", TSL_SHAPE(8, 16, 32, 32));
    tsl_tid c = tsl_concat(g, "cat", ins, 2);
    tsl_tid s = tsl_slice(g, "sl", c, (tsl_slice_attr){.offset = 40, .count = 20});
    tsl_flatten(g, "flat", s);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    return g;
}

Test(shape, same_bits_with_1_and_2_threads_and_f32_equals_f64) {
    tsl_tid ins[2];
    tsl_graph *g = family_graph(ins);
    th_rt *r1 = th_rt_new(g, TSL_F32), *r2 = th_rt_new(g, TSL_F32), *r64 = th_rt_new(g, TSL_F64);
    for (int i = 0; i < 2; i++) {
        th_rt_fill_tensor(r1, ins[i], 50 + (uint64_t)i, -1, 1);
        th_rt_fill_tensor(r2, ins[i], 50 + (uint64_t)i, -1, 1);
        th_rt_fill_tensor(r64, ins[i], 50 + (uint64_t)i, -1, 1);
    }
    th_rt_exec(r1, 0, tsl_graph_n_ops(g), 1, 1, 1);
    th_rt_exec(r2, 0, tsl_graph_n_ops(g), 1, 1, 2);
    th_rt_exec(r64, 0, tsl_graph_n_ops(g), 1, 1, 2);
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++) {
        tsl_tid t = tsl_graph_op(g, i)->out[0];
        cr_assert_eq(memcmp(r1->buf[t], r2->buf[t], tsl_graph_tensor(g, t)->nbytes), 0,
                     "op %d differs between 1 and 2 threads", i);
        for (int64_t k = 0; k < th_numel(g, t); k++)
            if (th_rt_get(r1, t, k) != th_rt_get(r64, t, k))
                cr_assert_fail("op %d element %lld: f32 %.9g f64 %.9g", i, (long long)k,
                               th_rt_get(r1, t, k), th_rt_get(r64, t, k));
    }
    th_rt_free(r1);
    th_rt_free(r2);
    th_rt_free(r64);
    tsl_graph_free(g);
}

Test(shape, names_flops_backward_entries) {
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_CONCAT), "concat");
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_SLICE), "slice");
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_RESHAPE), "reshape");
    cr_assert_not_null(tsl__op_def(TSL_OP_CONCAT)->backward);
    cr_assert_not_null(tsl__op_def(TSL_OP_RESHAPE)->backward);
    cr_assert_null(tsl__op_def(TSL_OP_SLICE)->backward);
    tsl_tid ins[2];
    tsl_graph *g = family_graph(ins);
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++)
        cr_assert_eq(tsl_op_flops(g, tsl_graph_op(g, i)), 0.0);
    tsl_graph_free(g);
}

/* ---- builder errors ------------------------------------------------------------------ */

#define EXPECT_FAIL(build, ...)                                                          \
    do {                                                                                 \
        tsl_graph *g = tsl_graph_new("err");                                            \
        tsl_tid a4 = tsl_param(g, "a4", TSL_SHAPE(2, 3, 4, 5), TSL_INIT_NONE);          \
        tsl_tid lab = tsl_label(g, "lab", TSL_SHAPE(2, 3));                              \
        (void)a4;                                                                        \
        (void)lab;                                                                       \
        const char *needles[] = {__VA_ARGS__};                                           \
        th_expect_build_fail(g, (build), #build, needles, sizeof needles / sizeof *needles); \
        tsl_graph_free(g);                                                               \
    } while (0)

static tsl_tid two(tsl_graph *g, tsl_tid a, tsl_tid b, const char *name) {
    tsl_tid xs[2] = {a, b};
    return tsl_concat(g, name, xs, 2);
}

Test(shape, builder_errors_name_op_and_value) {
    EXPECT_FAIL(tsl_concat(g, "c0", &a4, 0), "concat 'c0'", "0 inputs", "1..256");
    EXPECT_FAIL(tsl_concat(g, "c257", &a4, 257), "concat 'c257'", "257 inputs");
    EXPECT_FAIL(tsl_concat(g, "cnull", NULL, 2), "concat 'cnull'", "NULL");
    EXPECT_FAIL(two(g, a4, tsl_param(g, "b", TSL_SHAPE(2, 3, 4, 6), TSL_INIT_NONE), "cm"),
                "concat 'cm'", "xs[1] 'b'", "(2,3,4,6)", "(2,3,4,5)");
    EXPECT_FAIL(two(g, a4, tsl_param(g, "b", TSL_SHAPE(2, 3, 20), TSL_INIT_NONE), "cr"),
                "concat 'cr'", "xs[1] 'b'", "(2,3,20)");
    EXPECT_FAIL(two(g, a4, tsl_param(g, "v", TSL_SHAPE(5), TSL_INIT_NONE), "c1"), "concat 'c1'",
                "'v'", "rank 1 < 2");
    EXPECT_FAIL(two(g, lab, lab, "cl"), "concat 'cl'", "'lab'", "i32");
    EXPECT_FAIL(tsl_slice(g, "s1", a4, (tsl_slice_attr){.offset = 2, .count = 2}), "slice 's1'",
                "offset 2, count 2", "'a4'", "<= 3");
    EXPECT_FAIL(tsl_slice(g, "s2", a4, (tsl_slice_attr){.offset = -1, .count = 1}), "slice 's2'",
                "offset -1");
    EXPECT_FAIL(tsl_slice(g, "s3", a4, (tsl_slice_attr){.offset = 0, .count = 0}), "slice 's3'",
                "count 0");
    EXPECT_FAIL(tsl_reshape(g, "r1", a4, TSL_SHAPE(7, 17)), "reshape 'r1'", "(7,17)",
                "119 elements", "120");
    EXPECT_FAIL(tsl_reshape(g, "r2", a4, TSL_SHAPE(-1, 120)), "reshape 'r2'", "dimension 0 = -1");
    EXPECT_FAIL(tsl_flatten(g, "f0", tsl_param(g, "sc", tsl_shape_from(NULL, 0), TSL_INIT_NONE)),
                "flatten 'f0'", "'sc'", "rank 0 < 1");
}
