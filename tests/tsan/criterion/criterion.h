/*
 * tests/tsan/criterion/criterion.h - a minimal stand-in for Criterion's
 * <criterion/criterion.h>, used ONLY by the ThreadSanitizer build
 * (cmake -DTSL_TSAN=ON, `make tsan`).
 *
 * Why: Criterion (2.4) cannot run under ThreadSanitizer. Its BoxFort
 * sandbox maps an "inheritable arena" at a random address in
 * [0x2000'0000'0000, 0x6000'0000'0000), nearly all of which TSan reserves
 * for its shadow and meta memory, so start-up fails ("Could not initialize
 * inheritable arena") and, the times it succeeds, the runner crashes
 * (Criterion issue #274). The TSan build therefore compiles the runtime's
 * test files, unchanged, against this header and tests/tsan/runner.c.
 *
 * Semantics kept from Criterion: each Test runs in its own forked process
 * (the parent stays single-threaded, so fork is safe under TSan); a failed
 * cr_assert ends the test; cr_expect records a failure and goes on;
 * .signal, .exit_code, .timeout (seconds), .init, .fini, .disabled;
 * cr_skip_test. Assertion messages print the expression and the optional
 * printf-style message; values are not printed (give a message).
 */
#ifndef TSL_TESTS_TSAN_CRITERION_H
#define TSL_TESTS_TSAN_CRITERION_H

#include <math.h>
#include <stddef.h>
#include <string.h>

typedef struct th_cr_test {
    const char *suite, *name;
    void (*fn)(void);
    void (*init)(void);
    void (*fini)(void);
    int signal;       /* expected terminating signal (0: none) */
    int exit_code;    /* expected exit status (default 0) */
    double timeout;   /* seconds, 0: none */
    int disabled;
    const char *description;
} th_cr_test;

void th_cr_register(const th_cr_test *t);
/* Prints where and what failed; fatal: ends the test process. */
void th_cr_fail(int fatal, const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void th_cr_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define TH_CR_CAT_(a, b) a##b
#define TH_CR_CAT(a, b) TH_CR_CAT_(a, b)
#define TH_CR_ID(S, N, what) TH_CR_CAT(th_cr_##S##_##N, _##what)

/* (Parameter names differ from the member names they initialise.) */
#define Test(S, N, ...)                                                                      \
    static void TH_CR_ID(S, N, impl)(void);                                                  \
    static const th_cr_test TH_CR_ID(S, N, desc) = {                                         \
        .suite = #S, .name = #N, .fn = TH_CR_ID(S, N, impl), __VA_ARGS__};                   \
    __attribute__((constructor)) static void TH_CR_ID(S, N, reg)(void) {                     \
        th_cr_register(&TH_CR_ID(S, N, desc));                                               \
    }                                                                                        \
    static void TH_CR_ID(S, N, impl)(void)

/* The message arguments are optional: " " __VA_ARGS__ makes the format a
 * literal either way (never empty, so -Wformat-zero-length stays quiet). */
#define TH_CR_CHECK(fatal, cond, text, ...)                                                  \
    do {                                                                                     \
        if (!(cond)) th_cr_fail(fatal, __FILE__, __LINE__, text, " " __VA_ARGS__);           \
    } while (0)

#define cr_assert(cond, ...) TH_CR_CHECK(1, cond, #cond, __VA_ARGS__)
#define cr_expect(cond, ...) TH_CR_CHECK(0, cond, #cond, __VA_ARGS__)
#define cr_assert_fail(...) th_cr_fail(1, __FILE__, __LINE__, "cr_assert_fail", " " __VA_ARGS__)
#define cr_skip_test(...) th_cr_skip(" " __VA_ARGS__)

#define TH_CR_CMP(fatal, a, op, b, ...) TH_CR_CHECK(fatal, (a)op(b), #a " " #op " " #b, __VA_ARGS__)
#define cr_assert_eq(a, b, ...) TH_CR_CMP(1, a, ==, b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) TH_CR_CMP(1, a, !=, b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) TH_CR_CMP(1, a, <, b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) TH_CR_CMP(1, a, <=, b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) TH_CR_CMP(1, a, >, b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) TH_CR_CMP(1, a, >=, b, __VA_ARGS__)
#define cr_expect_eq(a, b, ...) TH_CR_CMP(0, a, ==, b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...) TH_CR_CMP(0, a, !=, b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...) TH_CR_CMP(0, a, <, b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...) TH_CR_CMP(0, a, <=, b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...) TH_CR_CMP(0, a, >, b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...) TH_CR_CMP(0, a, >=, b, __VA_ARGS__)
/* informational lines go to stdout, as Criterion's --verbose prints them */
#define cr_log_info(...) (printf(__VA_ARGS__), printf("\n"))
#define cr_assert_null(p, ...) TH_CR_CHECK(1, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) TH_CR_CHECK(1, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) TH_CR_CHECK(1, strcmp((a), (b)) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...) TH_CR_CHECK(1, strcmp((a), (b)) != 0, #a " differs from " #b, __VA_ARGS__)
#define cr_assert_float_eq(a, b, eps, ...)                                                   \
    TH_CR_CHECK(1, fabs((double)(a) - (double)(b)) <= (double)(eps), #a " ~= " #b, __VA_ARGS__)

#endif
